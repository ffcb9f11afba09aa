//! The REST API's OpenAPI document (3.1), derived from the handlers' `#[utoipa::path]`
//! annotations and the types they answer with, and served at `/api/v1/openapi.json`.

use std::sync::OnceLock;

use actix_web::HttpResponse;
use actix_web::http::header;
use tessera_engine::TileShape;
use tessera_shared::event_settings::EVENT_FIELDS;
use tessera_shared::spec::field_schema;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::Schema;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::api::{
    cell_lookup, contact_sheet, draft_previews, dzi, event_moderation, event_mosaics, event_photos,
    job_broker, job_options, job_stream, library_tiles, queue_status, result, result_preview,
    sizing, tile_libraries, zoom_tiles,
};

/// The document's description: how errors look and how calls are authorised.
const DESCRIPTION: &str = "Photo mosaics: upload a target image, pick a tile library, follow \
the job, download the mosaic. Errors are JSON: {\"error\": {\"code\", \"message\"}}. A \
state-changing request that carries the tessera_client cookie must send X-Requested-With or a \
same-site Origin. When the server has keys configured (the operator's web.api_key, named keys in \
web.keys), every call needs one: Authorization: Bearer KEY, X-API-Key: KEY, or the \
tessera_session cookie a browser gets by signing in at /signin; a call without it is answered \
401 with code unauthorized and WWW-Authenticate: Bearer, and past five wrong keys a minute from \
one address, 429 too_many_failed_keys. Without a key configured the API is open. A library \
belongs to its uploader (its named key, the operator, or its client id): only the owner and \
the operator replace or delete it, and a private one is hidden from everyone else. A job may ask for adaptive \
tile sizes (adaptive=MIN..MAX, as 8..32): square tiles of several sizes in place of the \
uniform grid, rendered byte for byte as tessera render --adaptive renders them; its cells \
(output.cols, output.rows and the cell lookup) are those of the smallest square.";

#[derive(OpenApi)]
#[openapi(
    info(title = "Tessera", version = "1"),
    paths(
        job_broker::submit,
        draft_previews::create,
        sizing::create,
        job_broker::get,
        job_broker::delete,
        job_broker::cancel,
        crate::api::job_sharing::change,
        result::get,
        zoom_tiles::get,
        dzi::descriptor,
        cell_lookup::get,
        cell_lookup::thumbnail,
        cell_lookup::picture,
        cell_lookup::placements,
        dzi::tile,
        result_preview::get,
        job_stream::events,
        tile_libraries::list,
        tile_libraries::create,
        tile_libraries::get,
        tile_libraries::delete,
        library_tiles::list,
        library_tiles::edit,
        library_tiles::remove,
        contact_sheet::get,
        event_mosaics::create,
        event_mosaics::get,
        event_photos::contribute,
        event_mosaics::decide,
        crate::api::event_photo_pages::list,
        event_moderation::decide_many,
        crate::api::event_boards::board_pdf,
        crate::api::event_boards::take_sheet,
        crate::api::event_boards::list_sheets,
        crate::api::event_boards::reprint_sheet,
        crate::api::event_boards::sheet_keepsakes,
        crate::api::event_boards::fill,
        crate::api::event_boards::make_printer_link,
        crate::api::event_boards::end_printer_link,
        crate::api::event_reviews::give,
        event_photos::erase_mine,
        event_mosaics::withdraw,
        event_mosaics::mosaic,
        crate::api::event_pictures::thumbnail,
        crate::api::event_pictures::qr_code,
        crate::api::event_settings::change,
        crate::api::event_wall::get,
        crate::api::event_wall::make_link,
        crate::api::event_wall::end_link,
        job_options::list,
        queue_status::queues,
        queue_status::system,
        document,
    ),
    components(responses(crate::api_error::ErrorBody)),
    modifiers(&Described),
    security((), ("bearerAuth" = []), ("apiKeyHeader" = []), ("sessionCookie" = [])),
)]
pub struct ApiDoc;

/// Adds what the derive cannot say: the description, the security schemes, and a job
/// submission's fields with the rules between them, from the job specification
/// (`tessera_shared::spec::submission_schema`).
struct Described;

impl Modify for Described {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        doc.info.description = Some(format!("{DESCRIPTION}{}", error_codes()));
        let components = doc.components.get_or_insert_with(Default::default);
        // A job submission is the job specification's fields: described where they are; a
        // sizing request the same, with the photo's size for the photo.
        let submission = tessera_shared::spec::submission_schema();
        insert_schema(&mut components.schemas, "JobSubmission", submission);
        insert_schema(
            &mut components.schemas,
            "EventCreation",
            event_creation_schema(),
        );
        let sizing = tessera_shared::spec::sizing_schema();
        insert_schema(&mut components.schemas, "SizingRequest", sizing);
        insert_schema(
            &mut components.schemas,
            "SettingsChange",
            tessera_shared::events::EventSettings::change_schema(),
        );
        shape_pattern(&mut components.schemas);
        add_params(&mut components.schemas);
        components.add_security_scheme(
            "bearerAuth",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "The operator's key (web.api_key) or a named key (web.keys), when the \
                         server has keys.",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "apiKeyHeader",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-API-Key"))),
        );
        components.add_security_scheme(
            "sessionCookie",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                "tessera_session",
                "Set by signing in at /signin: a random session token, ended by signing out.",
            ))),
        );
    }
}

/// The error codes, each with its meaning, as a section of the document's description.
fn error_codes() -> String {
    let mut out = String::from(
        "\n\n## Error codes\n\nEvery error answer is `{\"error\": {\"code\", \"message\", \"field\"}}`; `field`, when present, names the request's field the error is about.\n\n| code | meaning |\n|---|---|\n",
    );
    for declared in tessera_shared::error_code::CODES {
        out.push_str(&format!(
            "| `{}` | {} |\n",
            declared.code,
            declared.meaning()
        ));
    }
    out
}

/// Puts `schema` in the components as `name`, with its `allOf` and `anyOf` as written (utoipa's
/// object has none of its own).
/// An event's creation: a job submission's fields and rules less `library` (its mosaics use
/// the event's own), with the event's fields.
fn event_creation_schema() -> serde_json::Value {
    let mut schema = tessera_shared::spec::submission_schema();
    let properties = schema["properties"].as_object_mut().expect("properties");
    properties.remove("library");
    properties.insert(
        "name".into(),
        serde_json::json!({"type": "string", "minLength": 1, "maxLength": 100, "pattern": "\\S",
            "description": "What the event is called."}),
    );
    for field in EVENT_FIELDS {
        properties.insert(field.name.into(), field_schema(field));
    }
    // The rules that list the fields a submission may hold list these instead.
    fn rename_fields(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(map) => {
                if let Some(names) = map
                    .get_mut("propertyNames")
                    .and_then(|p| p.get_mut("enum"))
                    .and_then(|e| e.as_array_mut())
                {
                    names.retain(|n| n != "library");
                    names.push("name".into());
                    names.extend(EVENT_FIELDS.iter().map(|f| f.name.into()));
                }
                map.values_mut().for_each(rename_fields);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(rename_fields),
            _ => {}
        }
    }
    rename_fields(&mut schema);
    schema["required"] = serde_json::json!(["image", "name"]);
    schema["description"] = serde_json::Value::from(
        "An event's creation (`multipart/form-data`): the target photo, the event's name and \
         settings, and any job field but `library`, as a job submission takes them.",
    );
    schema
}

fn insert_schema(
    schemas: &mut std::collections::BTreeMap<String, RefOr<Schema>>,
    name: &str,
    mut schema: serde_json::Value,
) {
    let rules: Vec<(String, serde_json::Value)> = ["allOf", "anyOf"]
        .into_iter()
        .filter_map(|key| {
            let rule = schema.as_object_mut()?.remove(key)?;
            Some((key.to_string(), rule))
        })
        .collect();
    match serde_json::from_value::<RefOr<Schema>>(schema) {
        Ok(RefOr::T(Schema::Object(mut object))) => {
            object
                .extensions
                .get_or_insert_with(Default::default)
                .extend(rules);
            schemas.insert(name.to_string(), RefOr::T(Schema::Object(object)));
        }
        Ok(_) | Err(_) => tracing::error!("the {name} schema is not an object"),
    }
}

/// A library's `shape` admits exactly the shapes the server takes ([`TileShape::pattern`]).
fn shape_pattern(schemas: &mut std::collections::BTreeMap<String, RefOr<Schema>>) {
    if let Some(RefOr::T(Schema::Object(upload))) = schemas.get_mut("LibraryUpload")
        && let Some(RefOr::T(Schema::Object(shape))) = upload.properties.get_mut("shape")
    {
        shape.pattern = Some(TileShape::pattern());
    }
}

/// A job's `params` list every option of the job specification, from its declaration.
fn add_params(schemas: &mut std::collections::BTreeMap<String, RefOr<Schema>>) {
    let Some(params) = schemas.get("JobParams") else {
        return;
    };
    let Ok(derived) = serde_json::to_value(params) else {
        return;
    };
    // The derive writes the flattened options as `allOf` with an open object: one object
    // instead, with each option's property.
    let mut json = serde_json::json!({
        "type": "object",
        "description": derived["description"],
        "properties": {},
        "required": [],
    });
    let parts = derived["allOf"].as_array().cloned().unwrap_or_default();
    for part in parts.iter().chain([&derived]) {
        if let Some(properties) = part["properties"].as_object() {
            json["properties"] = properties.clone().into();
            json["required"] = part["required"].clone();
        }
    }
    for field in tessera_shared::spec::FIELDS {
        if crate::job_view::PARAMS_OF_THEIR_OWN.contains(&field.name) {
            continue;
        }
        json["properties"][field.name] = tessera_shared::spec::params_schema(field);
        if let Some(required) = json["required"].as_array_mut() {
            required.push(field.name.into());
        }
    }
    match serde_json::from_value::<RefOr<Schema>>(json) {
        Ok(schema) => {
            schemas.insert("JobParams".to_string(), schema);
        }
        Err(e) => tracing::error!("the job parameters' schema: {e}"),
    }
}

/// The document as JSON, made once.
pub fn document_json() -> &'static str {
    static JSON: OnceLock<String> = OnceLock::new();
    JSON.get_or_init(|| {
        serde_json::to_string_pretty(&ApiDoc::openapi())
            .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    })
}

/// `GET /api/v1/openapi.json`: this document.
#[utoipa::path(
    get,
    path = "/api/v1/openapi.json",
    operation_id = "get_openapi",
    tag = "api",
    responses((status = 200, description = "The OpenAPI document", body = serde_json::Value)),
)]
pub async fn document() -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "application/json"))
        .body(document_json())
}
