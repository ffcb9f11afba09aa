//! The OpenAPI document against the running API: every documented path and method is called at
//! least once (with a valid request, an unknown id, an invalid body, and the conditional and
//! ranged requests the operation documents), every answer's status is one the document lists for
//! that operation, its content type is one the document gives for that status, and every JSON
//! body validates against the schema the document gives for it.
//!
//! The document is hand-written, so the schemas are checked by a small validator for the subset
//! of JSON Schema it uses (see [`validate`]); a keyword the validator does not know fails the
//! test rather than being skipped.

use std::collections::BTreeSet;

use bytes::Bytes;
use reqwest::Method;
use reqwest::header::{CONTENT_TYPE, ETAG, IF_NONE_MATCH, RANGE};
use reqwest::multipart::{Form, Part};
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use uuid::Uuid;

use crate::support::{TestApp, astronaut, fixture, job_form, spawn_app};

/// The routes the server registers under `/api/v1`: the document must name each one.
const ROUTES: [(&str, &str); 14] = [
    ("POST", "/jobs"),
    ("GET", "/jobs/{id}"),
    ("DELETE", "/jobs/{id}"),
    ("GET", "/jobs/{id}/result"),
    ("GET", "/jobs/{id}/events"),
    ("GET", "/jobs/{id}/preview"),
    ("GET", "/jobs/{id}/tiles/{level}/{x}/{y}"),
    ("GET", "/libraries"),
    ("POST", "/libraries"),
    ("GET", "/libraries/{id}"),
    ("GET", "/libraries/{id}/sheet"),
    ("GET", "/queues"),
    ("GET", "/system"),
    ("GET", "/openapi.json"),
];

/// Keywords the validator understands. Annotations are accepted and ignored; anything else in a
/// schema fails the check, so the document cannot rely on a rule that is silently not enforced.
const KEYWORDS: [&str; 26] = [
    "$ref",
    "type",
    "nullable",
    "enum",
    "const",
    "format",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
    "allOf",
    "anyOf",
    "oneOf",
    // Annotations.
    "description",
    "title",
    "default",
    "example",
    "examples",
    "readOnly",
    "deprecated",
];

/// Checks `value` against `schema`, whose `$ref`s point into `doc`, and returns every mismatch
/// as `<JSON path>: <what is wrong>`, the path written from `$` (the body).
///
/// The subset of JSON Schema (OpenAPI 3.0 and 3.1) it knows: `type` (one name or an array of
/// names, `"null"` included), OpenAPI 3.0 `nullable`, `enum`, `const`, `format` `uuid` and
/// `date-time` (other formats are annotations), `minimum`/`maximum`, `minLength`/`maxLength`,
/// `properties`, `required`, `additionalProperties` (a boolean or a schema), `items`,
/// `minItems`/`maxItems`, `allOf`/`anyOf`/`oneOf` and `$ref` to `#/...` pointers.
fn validate(doc: &Value, schema: &Value, value: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    check(doc, schema, value, "$", &mut errors);
    errors
}

fn check(doc: &Value, schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
    let schema = match schema {
        Value::Bool(true) => return,
        Value::Bool(false) => return errors.push(format!("{at}: no value is allowed here")),
        Value::Object(schema) => schema,
        other => return errors.push(format!("{at}: the schema {other} is not an object")),
    };
    for key in schema.keys() {
        if !KEYWORDS.contains(&key.as_str()) {
            errors.push(format!("{at}: schema keyword {key:?} is not supported"));
        }
    }
    if let Some(reference) = schema.get("$ref") {
        match reference
            .as_str()
            .and_then(|r| r.strip_prefix('#'))
            .and_then(|pointer| doc.pointer(pointer))
        {
            Some(target) => check(doc, target, value, at, errors),
            None => errors.push(format!("{at}: $ref {reference} does not resolve")),
        }
    }
    if value.is_null() && schema.get("nullable") == Some(&Value::Bool(true)) {
        return;
    }
    if let Some(types) = schema.get("type") {
        let names: Vec<&str> = match types {
            Value::String(name) => vec![name.as_str()],
            Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
            other => return errors.push(format!("{at}: \"type\" {other} is not a name")),
        };
        if !names.iter().any(|name| has_type(value, name)) {
            return errors.push(format!(
                "{at}: expected {}, found {} ({})",
                names.join(" or "),
                type_name(value),
                excerpt(value)
            ));
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        errors.push(format!(
            "{at}: {} is not one of {}",
            excerpt(value),
            Value::Array(allowed.clone())
        ));
    }
    if let Some(constant) = schema.get("const")
        && constant != value
    {
        errors.push(format!("{at}: {} is not {constant}", excerpt(value)));
    }
    match value {
        Value::String(s) => check_string(schema, s, at, errors),
        Value::Number(n) => {
            let n = n.as_f64().unwrap_or(f64::NAN);
            if let Some(min) = schema.get("minimum").and_then(Value::as_f64)
                && n < min
            {
                errors.push(format!("{at}: {n} is below the minimum {min}"));
            }
            if let Some(max) = schema.get("maximum").and_then(Value::as_f64)
                && n > max
            {
                errors.push(format!("{at}: {n} is above the maximum {max}"));
            }
        }
        Value::Object(fields) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            for name in schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if !fields.contains_key(name) {
                    errors.push(format!("{at}: required field {name:?} is missing"));
                }
            }
            for (name, field) in fields {
                let field_at = field_path(at, name);
                match properties.and_then(|p| p.get(name)) {
                    Some(field_schema) => check(doc, field_schema, field, &field_at, errors),
                    None => match schema.get("additionalProperties") {
                        Some(Value::Bool(false)) => {
                            errors.push(format!("{field_at}: the schema allows no such field"))
                        }
                        Some(extra) => check(doc, extra, field, &field_at, errors),
                        None => {}
                    },
                }
            }
        }
        Value::Array(elements) => {
            let len = elements.len() as u64;
            if let Some(min) = schema.get("minItems").and_then(Value::as_u64)
                && len < min
            {
                errors.push(format!("{at}: {len} items, fewer than {min}"));
            }
            if let Some(max) = schema.get("maxItems").and_then(Value::as_u64)
                && len > max
            {
                errors.push(format!("{at}: {len} items, more than {max}"));
            }
            if let Some(items) = schema.get("items") {
                for (i, element) in elements.iter().enumerate() {
                    check(doc, items, element, &format!("{at}[{i}]"), errors);
                }
            }
        }
        Value::Null | Value::Bool(_) => {}
    }
    if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
        for branch in all {
            check(doc, branch, value, at, errors);
        }
    }
    for (keyword, wanted) in [("anyOf", "at least one"), ("oneOf", "exactly one")] {
        let Some(branches) = schema.get(keyword).and_then(Value::as_array) else {
            continue;
        };
        let outcomes: Vec<Vec<String>> = branches
            .iter()
            .map(|branch| {
                let mut branch_errors = Vec::new();
                check(doc, branch, value, at, &mut branch_errors);
                branch_errors
            })
            .collect();
        let matched = outcomes.iter().filter(|e| e.is_empty()).count();
        let ok = if keyword == "anyOf" {
            matched >= 1
        } else {
            matched == 1
        };
        if !ok {
            let why: Vec<String> = outcomes
                .iter()
                .enumerate()
                .filter(|(_, e)| !e.is_empty())
                .map(|(i, e)| format!("branch {i}: {}", e.join("; ")))
                .collect();
            errors.push(format!(
                "{at}: matches {matched} of the {keyword} branches, not {wanted} [{}]",
                why.join(" | ")
            ));
        }
    }
}

fn check_string(
    schema: &serde_json::Map<String, Value>,
    s: &str,
    at: &str,
    errors: &mut Vec<String>,
) {
    let chars = s.chars().count() as u64;
    if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
        && chars < min
    {
        errors.push(format!("{at}: {chars} characters, fewer than {min}"));
    }
    if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
        && chars > max
    {
        errors.push(format!("{at}: {chars} characters, more than {max}"));
    }
    let well_formed = match schema.get("format").and_then(Value::as_str) {
        Some("uuid") => s.len() == 36 && Uuid::parse_str(s).is_ok(),
        Some("date-time") => OffsetDateTime::parse(s, &Rfc3339).is_ok(),
        _ => true,
    };
    if !well_formed {
        errors.push(format!("{at}: {s:?} is not a {}", schema["format"]));
    }
}

fn has_type(value: &Value, name: &str) -> bool {
    match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        "array" => value.is_array(),
        "object" => value.is_object(),
        _ => false,
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A value short enough for a message.
fn excerpt(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(60) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

fn field_path(at: &str, name: &str) -> String {
    if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        format!("{at}.{name}")
    } else {
        format!("{at}[{name:?}]")
    }
}

/// Follows a `$ref` (to a `#/...` pointer) until it reaches the object itself.
fn resolve<'a>(doc: &'a Value, mut value: &'a Value) -> &'a Value {
    while let Some(reference) = value.get("$ref").and_then(Value::as_str) {
        value = reference
            .strip_prefix('#')
            .and_then(|pointer| doc.pointer(pointer))
            .unwrap_or_else(|| panic!("$ref {reference} does not resolve"));
    }
    value
}

/// One answer as the client saw it.
struct Answer {
    status: u16,
    content_type: Option<String>,
    etag: Option<String>,
    body: Bytes,
}

/// The media type of a Content-Type header: no parameters, lower case.
fn media_type(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

fn is_json(media: &str) -> bool {
    media == "application/json" || media.ends_with("+json")
}

/// Checks one answer of operation `method path` against what the document gives for its status:
/// the status is listed, a body comes with a content type the response names (none when the
/// response names no content), and a JSON body validates against that content's schema.
fn check_answer(doc: &Value, method: &str, path: &str, answer: &Answer) {
    let op_name = format!("{method} {path}");
    let status = answer.status;
    let responses = &doc["paths"][path][method.to_lowercase()]["responses"];
    let listed: Vec<&String> = responses.as_object().unwrap().keys().collect();
    let response = responses.get(status.to_string()).unwrap_or_else(|| {
        panic!("{op_name} answered {status}, which the document does not list ({listed:?})")
    });
    let response = resolve(doc, response);
    let Some(content) = response.get("content").and_then(Value::as_object) else {
        assert!(
            answer.body.is_empty(),
            "{op_name} {status}: the document gives no content, but the answer has {} bytes ({:?})",
            answer.body.len(),
            answer.content_type
        );
        return;
    };
    let content_type = answer
        .content_type
        .as_deref()
        .unwrap_or_else(|| panic!("{op_name} {status}: the answer has no Content-Type"));
    let media = media_type(content_type);
    let documented: Vec<&String> = content.keys().collect();
    let media_object = content.get(&media).unwrap_or_else(|| {
        panic!("{op_name} {status}: content type {media} is not one the document gives ({documented:?})")
    });
    let schema = media_object.get("schema").unwrap_or(&Value::Bool(true));
    let body = &answer.body;
    match media.as_str() {
        json if is_json(json) => {
            let value: Value = serde_json::from_slice(body).unwrap_or_else(|e| {
                panic!("{op_name} {status}: the {media} body does not parse: {e}")
            });
            let errors = validate(doc, schema, &value);
            assert!(
                errors.is_empty(),
                "{op_name} {status} ({media}): the body does not match the document:\n  {}\nbody: {}",
                errors.join("\n  "),
                excerpt_long(&value)
            );
        }
        "image/png" => assert!(
            body.starts_with(b"\x89PNG\r\n\x1a\n"),
            "{op_name} {status}: the image/png body is not a PNG"
        ),
        "image/jpeg" => assert!(
            body.starts_with(&[0xff, 0xd8, 0xff]),
            "{op_name} {status}: the image/jpeg body is not a JPEG"
        ),
        "text/event-stream" => check_events(doc, &op_name, status, body),
        _ => {}
    }
}

fn excerpt_long(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(2000) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// The event stream of a finished job: the document's description says each `job` event carries
/// the job's JSON (the `Job` schema); an `error` event carries an error body (`Error`).
fn check_events(doc: &Value, op_name: &str, status: u16, body: &[u8]) {
    let text = std::str::from_utf8(body).expect("an event stream is UTF-8");
    let mut jobs = 0;
    for event in text.split("\n\n").filter(|e| !e.trim().is_empty()) {
        let mut name = "message";
        let mut data = Vec::new();
        for line in event.lines() {
            if let Some(n) = line.strip_prefix("event:") {
                name = n.trim();
            } else if let Some(d) = line.strip_prefix("data:") {
                data.push(d.strip_prefix(' ').unwrap_or(d));
            }
        }
        if data.is_empty() {
            continue; // A comment (keep-alive).
        }
        let schema = match name {
            "job" => "#/components/schemas/Job",
            "error" => "#/components/schemas/Error",
            other => panic!("{op_name} {status}: an event {other:?} the document does not name"),
        };
        let value: Value = serde_json::from_str(&data.join("\n")).unwrap_or_else(|e| {
            panic!("{op_name} {status}: a {name} event's data does not parse: {e}")
        });
        let errors = validate(doc, &serde_json::json!({ "$ref": schema }), &value);
        assert!(
            errors.is_empty(),
            "{op_name} {status}: a {name} event does not match {schema}:\n  {}",
            errors.join("\n  ")
        );
        jobs += usize::from(name == "job");
    }
    assert!(
        jobs >= 1,
        "{op_name} {status}: the stream carried no job event: {text:?}"
    );
}

fn tile_files() -> Form {
    let dir = fixture("engine/tiles");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".png"))
        .collect();
    names.sort();
    let mut form = Form::new().text("name", "Three tiles");
    for name in names.into_iter().take(3) {
        let bytes = std::fs::read(dir.join(&name)).unwrap();
        form = form.part("files", Part::bytes(bytes).file_name(name));
    }
    form
}

/// Calls one operation with `id` in its path, the given request headers and, for a POST, the
/// body it documents as valid (`valid`) or an invalid one; reads the whole answer.
async fn call(
    app: &TestApp,
    method: &str,
    path: &str,
    id: &str,
    valid: bool,
    headers: &[(reqwest::header::HeaderName, String)],
) -> Answer {
    // Tile (0, 0) of level 0 exists for every mosaic.
    let path = path.replace("{level}/{x}/{y}", "0/0/0");
    let url = app.url(&format!("/api/v1{}", path.replace("{id}", id)));
    let mut req = match method {
        "GET" => app.client.get(url),
        "DELETE" => app.client.delete(url),
        "POST" => {
            let form = match (path.as_str(), valid) {
                ("/jobs", true) => job_form(astronaut()),
                ("/jobs", false) => Form::new()
                    .part(
                        "image",
                        Part::bytes(b"not an image".to_vec()).file_name("x.png"),
                    )
                    .text("library", "emoji"),
                ("/libraries", true) => tile_files(),
                ("/libraries", false) => Form::new().text("name", "empty"),
                other => panic!("no body known for POST {other:?}"),
            };
            app.client.request(Method::POST, url).multipart(form)
        }
        other => panic!("the document names method {other} the test does not call"),
    };
    for (name, value) in headers {
        req = req.header(name, value);
    }
    let res = req.send().await.unwrap();
    let header = |name| {
        res.headers()
            .get(name)
            .map(|v: &reqwest::header::HeaderValue| v.to_str().unwrap().to_string())
    };
    let (content_type, etag) = (header(CONTENT_TYPE), header(ETAG));
    Answer {
        status: res.status().as_u16(),
        content_type,
        etag,
        body: res.bytes().await.unwrap(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_operation_answers_as_documented() {
    let app = spawn_app().await;
    let res = app.get("/api/v1/openapi.json").await;
    assert_eq!(res.status(), 200);
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let doc: Value = res.json().await.unwrap();
    assert_eq!(doc["servers"][0]["url"], "/api/v1");
    let paths = doc["paths"].as_object().expect("paths");

    let documented: BTreeSet<(String, String)> = paths
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .map(move |m| (m.to_uppercase(), path.clone()))
        })
        .collect();
    let routes: BTreeSet<(String, String)> = ROUTES
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    assert_eq!(documented, routes, "the document and the router disagree");

    // A finished job, so its result and events answer 200.
    let job_id = app.submit(job_form(astronaut())).await;
    let finished = app.wait_until_finished(&job_id).await;
    assert_eq!(finished["state"], "done", "{finished}");

    // A finished job of a client that names itself, to be deleted.
    let owner = Uuid::new_v4().to_string();
    let res = app
        .post_job_with(job_form(astronaut()), &[("X-Client-Id", &owner)])
        .await;
    assert_eq!(res.status(), 202);
    let doomed = res.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    app.wait_until_finished(&doomed).await;
    let as_owner = [(
        reqwest::header::HeaderName::from_static("x-client-id"),
        owner,
    )];

    let mut answers_checked = 0;
    let mut json_bodies = 0;
    for (method, path) in &documented {
        let listed = doc["paths"][path.as_str()][method.to_lowercase()]["responses"]
            .as_object()
            .unwrap();
        let (good_id, bad_id) = if path.starts_with("/libraries") {
            ("emoji".to_string(), "no-such-library".to_string())
        } else if method == "DELETE" {
            (doomed.clone(), Uuid::new_v4().to_string())
        } else {
            (job_id.clone(), Uuid::new_v4().to_string())
        };
        let headers: &[_] = if method == "DELETE" { &as_owner } else { &[] };
        let first = call(&app, method, path, &good_id, true, headers).await;
        assert!(
            (200..300).contains(&first.status),
            "{method} {path}: a valid call answered {}",
            first.status
        );
        // Each further call with the status it must bring (None: any the document lists).
        let mut further = Vec::new();
        if path.contains("{id}") {
            further.push((call(&app, method, path, &bad_id, true, headers).await, None));
        }
        if method == "DELETE" {
            let again = call(&app, method, path, &good_id, true, headers).await;
            further.push((again, Some(404)));
            let not_owner = call(&app, method, path, &job_id, true, &[]).await;
            further.push((not_owner, Some(403)));
        }
        if method == "POST" {
            further.push((call(&app, method, path, &good_id, false, &[]).await, None));
        }
        if let Some(etag) = first.etag.clone().filter(|_| listed.contains_key("304")) {
            let headers = [(IF_NONE_MATCH, etag)];
            let answer = call(&app, method, path, &good_id, true, &headers).await;
            further.push((answer, Some(304)));
        }
        if listed.contains_key("206") {
            let headers = [(RANGE, "bytes=0-9".to_string())];
            let answer = call(&app, method, path, &good_id, true, &headers).await;
            further.push((answer, Some(206)));
        }
        if listed.contains_key("416") {
            let headers = [(RANGE, "bytes=1000000000-".to_string())];
            let answer = call(&app, method, path, &good_id, true, &headers).await;
            further.push((answer, Some(416)));
        }
        for (answer, expected) in std::iter::once((first, None)).chain(further) {
            if let Some(expected) = expected {
                assert_eq!(answer.status, expected, "{method} {path}");
            }
            check_answer(&doc, method, path, &answer);
            answers_checked += 1;
            json_bodies += usize::from(
                answer
                    .content_type
                    .as_deref()
                    .is_some_and(|t| is_json(&media_type(t))),
            );
        }
    }
    assert!(
        answers_checked >= ROUTES.len() * 2,
        "{answers_checked} answers checked"
    );
    assert!(
        json_bodies >= ROUTES.len(),
        "{json_bodies} JSON bodies validated"
    );
}

/// The validator itself: it must be able to fail.
mod validator {
    use serde_json::json;

    use super::validate;

    fn doc() -> serde_json::Value {
        json!({
            "components": { "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": { "error": {
                        "type": "object",
                        "required": ["code", "message"],
                        "properties": { "code": { "type": "string" }, "message": { "type": "string" } }
                    } }
                },
                "Thing": {
                    "type": "object",
                    "required": ["id", "state", "size", "tags", "at"],
                    "additionalProperties": false,
                    "properties": {
                        "id": { "type": "string", "format": "uuid" },
                        "state": { "type": "string", "enum": ["queued", "done"] },
                        "size": { "type": "integer", "minimum": 1, "maximum": 10 },
                        "tags": { "type": "array", "items": { "type": "string" } },
                        "at": { "type": "string", "format": "date-time" },
                        "finished_at": { "type": "string", "format": "date-time", "nullable": true },
                        "note": { "type": ["string", "null"] },
                        "either": { "oneOf": [{ "type": "integer" }, { "type": "boolean" }] },
                        "error": { "$ref": "#/components/schemas/Error" }
                    }
                }
            } }
        })
    }

    /// The mismatches of a `Thing`, sorted (field order depends on serde_json's map).
    fn thing(body: serde_json::Value) -> Vec<String> {
        let mut errors = validate(
            &doc(),
            &json!({ "$ref": "#/components/schemas/Thing" }),
            &body,
        );
        errors.sort();
        errors
    }

    fn good() -> serde_json::Value {
        json!({
            "id": "67e55044-10b1-426f-9247-bb680e5fe0c8",
            "state": "done",
            "size": 3,
            "tags": ["a", "b"],
            "at": "2024-05-01T10:00:00Z",
            "finished_at": null,
            "note": null,
            "either": true
        })
    }

    #[test]
    fn accepts_a_body_that_matches() {
        assert_eq!(thing(good()), Vec::<String>::new());
    }

    #[test]
    fn rejects_a_missing_required_field() {
        let mut body = good();
        body.as_object_mut().unwrap().remove("state");
        assert_eq!(thing(body), ["$: required field \"state\" is missing"]);

        let errors = validate(
            &doc(),
            &json!({ "$ref": "#/components/schemas/Error" }),
            &json!({ "error": { "code": "not_found" } }),
        );
        assert_eq!(errors, ["$.error: required field \"message\" is missing"]);
    }

    #[test]
    fn rejects_a_wrong_type() {
        let mut body = good();
        body["size"] = json!("3");
        body["tags"] = json!(["a", 2]);
        body["finished_at"] = json!(7);
        assert_eq!(
            thing(body),
            [
                "$.finished_at: expected string, found integer (7)",
                "$.size: expected integer, found string (\"3\")",
                "$.tags[1]: expected string, found integer (2)",
            ]
        );
        let errors = validate(
            &doc(),
            &json!({ "$ref": "#/components/schemas/Error" }),
            &json!(null),
        );
        assert_eq!(errors, ["$: expected object, found null (null)"]);
    }

    #[test]
    fn rejects_an_unknown_enum_value_a_bad_format_and_a_number_out_of_range() {
        let mut body = good();
        body["state"] = json!("paused");
        body["id"] = json!("not-a-uuid");
        body["at"] = json!("yesterday");
        body["size"] = json!(11);
        assert_eq!(
            thing(body),
            [
                "$.at: \"yesterday\" is not a \"date-time\"",
                "$.id: \"not-a-uuid\" is not a \"uuid\"",
                "$.size: 11 is above the maximum 10",
                "$.state: \"paused\" is not one of [\"queued\",\"done\"]",
            ]
        );
    }

    #[test]
    fn rejects_unknown_fields_when_closed_and_follows_refs_and_one_of() {
        let mut body = good();
        body["extra"] = json!(1);
        body["either"] = json!("x");
        body["error"] = json!({ "error": { "code": 1, "message": "m" } });
        let errors = thing(body);
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(
            errors[0].starts_with("$.either: matches 0 of the oneOf branches"),
            "{errors:?}"
        );
        assert_eq!(
            errors[1],
            "$.error.error.code: expected string, found integer (1)"
        );
        assert_eq!(errors[2], "$.extra: the schema allows no such field");
    }

    #[test]
    fn rejects_a_keyword_it_does_not_enforce() {
        let errors = validate(
            &doc(),
            &json!({ "type": "string", "pattern": "^a" }),
            &json!("b"),
        );
        assert_eq!(errors, ["$: schema keyword \"pattern\" is not supported"]);
    }
}
