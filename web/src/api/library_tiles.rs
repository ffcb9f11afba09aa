//! A library's tiles, one at a time: `GET /api/v1/libraries/{id}/tiles` lists them,
//! `POST /api/v1/libraries/{id}/tiles` adds images (and takes tiles out) and
//! `DELETE /api/v1/libraries/{id}/tiles?name=` takes one out.
//!
//! Each change publishes the library's next version from the one it read, with only the added
//! images decoded: the other tiles are kept as they are. Jobs keep the version they named.

use actix_multipart::Multipart;
use actix_web::{HttpRequest, HttpResponse, web};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use tessera_engine::ImportOptions;
use tessera_shared::error_code::ErrorCode;
use tessera_shared::libraries::{LibraryRecord, Owner, SkippedFile};
use tessera_shared::library_import::{EditReport, LibraryEdit, edit_library_while};

use crate::api::tile_libraries::{
    ChangeableLibrary, Duplicate, VisibleLibrary, changeable, receive, require_index_room, unpack,
    within_budget,
};
use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;
use crate::guards::upload::require_multipart;

/// One tile of a library.
#[derive(Debug, Serialize, ToSchema)]
pub struct TileEntry {
    /// Its name in the library: the file's name (with its folders in an archive).
    pub name: String,
    /// What to call it: its caption, else its name without folders and extension.
    pub caption: String,
}

/// The answer of `GET /api/v1/libraries/{id}/tiles`.
#[derive(Debug, Serialize, ToSchema)]
pub struct TileList {
    pub library: LibraryRecord,
    /// Every tile of the library's current version, in name order.
    pub tiles: Vec<TileEntry>,
}

/// What an edit of a library's tiles did.
#[derive(Debug, Serialize, ToSchema)]
pub struct EditSummary {
    /// Images added (one that replaced a tile of its name counts as added).
    pub added: usize,
    /// Tiles taken out.
    pub removed: usize,
    /// The added files left out, and why.
    pub skipped: Vec<SkippedFile>,
    /// Added images identical to a tile kept: the name dropped and the name kept.
    pub duplicates: Vec<Duplicate>,
    /// How many of the skipped files are not images by their name (their extension).
    pub ignored: usize,
}

/// The answer of an edit: the library's new version and what changed.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = LibraryEdited)]
pub struct Edited {
    pub library: LibraryRecord,
    pub report: EditSummary,
}

// The fields of an edit as the API documents them; the handler streams them to disk.
/// An edit of a library's tiles (`multipart/form-data`): images to add, tiles to take out.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TileEdit {
    /// Images or one .zip to add, prepared as the library's tiles are (its shape and
    /// background). An image with the name of a tile replaces it. An edit that only takes
    /// tiles out may send none.
    #[schema(value_type = Vec<String>, format = Binary, min_items = 1)]
    pub files: Vec<Vec<u8>>,
    /// Tiles to take out, by name, a field each.
    #[schema(required = false)]
    pub remove: Vec<String>,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TileName {
    /// The tile's name, as `GET /api/v1/libraries/{id}/tiles` lists it.
    name: String,
}

/// The tiles of a library.
#[utoipa::path(
    get,
    path = "/api/v1/libraries/{id}/tiles",
    operation_id = "list_library_tiles",
    tag = "libraries",
    params(("id" = String, Path, pattern = r"^[a-z0-9][a-z0-9-]{0,47}$", description = "The library's id")),
    responses(
        (status = 200, description = "The library and its tiles", body = TileList),
        crate::api::error_sets::LookupErrors,
    ),
)]
pub async fn list(
    VisibleLibrary(record): VisibleLibrary,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let library = state.library(&record.reference()).await?;
    let tiles = (0..library.len() as u32)
        .map(|t| TileEntry {
            name: library.name(t).to_string(),
            caption: library.caption(t),
        })
        .collect();
    Ok(HttpResponse::Ok().json(TileList {
        library: record,
        tiles,
    }))
}

/// Add images to a library, and take tiles out, in one new version.
///
/// Only the added images are decoded; they are prepared as the library's tiles were (cropped
/// to its shape, transparent parts over its background). An image with the name of a tile
/// replaces it; one identical to a tile kept is left out, named in the report. Jobs submitted
/// before keep the version they named. Only the library's owner or the operator may edit it
/// (403 not_library_owner); a name to take out that the library lacks is 404 tile_not_found,
/// and taking out every tile is 422 (delete the library instead).
#[utoipa::path(
    post,
    path = "/api/v1/libraries/{id}/tiles",
    operation_id = "edit_library_tiles",
    tag = "libraries",
    params(
        ("id" = String, Path, pattern = r"^[a-z0-9][a-z0-9-]{0,47}$", description = "The library's id"),
        ("X-Client-Id" = Option<Uuid>, Header, nullable = false, description = "The client that owns the library (or its tessera_client cookie)."),
    ),
    request_body(content = TileEdit, content_type = "multipart/form-data"),
    responses(
        (status = 200, description = "Edited: the library's new version and what changed", body = Edited),
        crate::api::error_sets::ChangeErrors,
        crate::api::error_sets::UploadErrors,
        (status = 507, response = crate::api_error::ErrorBody),
    ),
)]
pub async fn edit(
    req: HttpRequest,
    path: web::Path<String>,
    mut payload: Multipart,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    require_multipart(&req, "tiles")?;
    let (record, who) = changeable(&state, &req, &path).await?;
    let (upload, fields, slot) = receive(&req, &mut payload, &state).await?;
    if let Some(other) = fields.library_fields() {
        return Err(ApiError::bad_request(
            ErrorCode::UnknownField,
            format!(
                "an edit of a library's tiles takes files and `remove`, not {other:?}: a library \
                 keeps its name, shape and background"
            ),
        ));
    }
    let remove = fields.remove.clone();
    if upload.count == 0 && remove.is_empty() {
        return Err(ApiError::bad_request(
            ErrorCode::MissingParameter,
            "send images to add, or `remove` with the name of a tile to take out",
        ));
    }
    let add = if upload.count > 0 {
        let images = unpack(&state, &upload).await?;
        let all = state.platform.libraries().list().await?;
        // The added tiles' renditions, of the library's shape, estimated from its record.
        let options = ImportOptions {
            shape: record.tile_shape(),
            ..ImportOptions::default()
        };
        require_index_room(&state, (&all, &record.owner), &options, images).await?;
        Some(upload.files.clone())
    } else {
        None
    };
    drop(slot);
    apply(&req, &state, &record.id, LibraryEdit { add, remove }, &who).await
}

/// Take one tile out of a library, in a new version.
///
/// As `POST /api/v1/libraries/{id}/tiles` with one `remove`: only the owner or the operator.
#[utoipa::path(
    delete,
    path = "/api/v1/libraries/{id}/tiles",
    operation_id = "remove_library_tile",
    tag = "libraries",
    params(
        ("id" = String, Path, pattern = r"^[a-z0-9][a-z0-9-]{0,47}$", description = "The library's id"),
        TileName,
        ("X-Client-Id" = Option<Uuid>, Header, nullable = false, description = "The client that owns the library (or its tessera_client cookie)."),
    ),
    responses(
        (status = 200, description = "Taken out: the library's new version", body = Edited),
        crate::api::error_sets::ChangeErrors,
    ),
)]
pub async fn remove(
    req: HttpRequest,
    library: ChangeableLibrary,
    query: web::Query<TileName>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let ChangeableLibrary { record, who } = library;
    let edit = LibraryEdit {
        add: None,
        remove: vec![query.into_inner().name],
    };
    apply(&req, &state, &record.id, edit, &who).await
}

/// Publishes `edit` of library `id` within an import's budget, and answers the new version
/// with what changed.
async fn apply(
    req: &HttpRequest,
    state: &AppState,
    id: &str,
    edit: LibraryEdit,
    who: &Owner,
) -> ApiResult<HttpResponse> {
    let (library, report) = within_budget(Some(req), state, id, |keep_going| {
        edit_library_while(&state.platform, id, edit, who, move || keep_going.holds())
    })
    .await?;
    Ok(HttpResponse::Ok().json(Edited {
        library,
        report: summary(report),
    }))
}

fn summary(report: EditReport) -> EditSummary {
    EditSummary {
        added: report.added,
        removed: report.removed,
        skipped: report
            .skipped
            .into_iter()
            .map(|(name, reason)| SkippedFile { name, reason })
            .collect(),
        duplicates: report
            .duplicates
            .into_iter()
            .map(|(name, kept)| Duplicate { name, kept })
            .collect(),
        ignored: report.ignored,
    }
}
