//! The OpenAPI document against the running API: every documented path and method is called at
//! least once (with a valid request, an unknown id, an invalid body, and the conditional and
//! ranged requests the operation documents), every answer's status is one the document lists for
//! that operation, its content type is one the document gives for that status, and every JSON
//! body validates against the schema the document gives for it.
//!
//! The document is derived from the handlers and their types (`tessera_web::openapi`); bodies
//! are checked with the `jsonschema` crate.

use std::collections::BTreeSet;

use bytes::Bytes;
use reqwest::Method;
use reqwest::header::{CONTENT_TYPE, ETAG, IF_NONE_MATCH, RANGE};
use reqwest::multipart::{Form, Part};
use serde_json::Value;
use uuid::Uuid;

use crate::support::{TestApp, astronaut, fixture, job_form, spawn_app};

/// The routes the server registers: the document must name each one, with its full path.
const ROUTES: [(&str, &str); 53] = [
    ("POST", "/api/v1/jobs"),
    ("POST", "/api/v1/previews"),
    ("POST", "/api/v1/sizing"),
    ("GET", "/api/v1/jobs/{id}"),
    ("DELETE", "/api/v1/jobs/{id}"),
    ("POST", "/api/v1/jobs/{id}/cancel"),
    ("POST", "/api/v1/jobs/{id}/sharing"),
    ("GET", "/api/v1/jobs/{id}/result"),
    ("GET", "/api/v1/jobs/{id}/events"),
    ("GET", "/api/v1/jobs/{id}/preview"),
    ("GET", "/api/v1/jobs/{id}/tiles/{level}/{x}/{y}"),
    ("GET", "/api/v1/jobs/{id}/dzi"),
    ("GET", "/api/v1/jobs/{id}/cells/{row}/{col}"),
    ("GET", "/api/v1/jobs/{id}/cells/{row}/{col}/thumbnail"),
    ("GET", "/api/v1/jobs/{id}/cells/{row}/{col}/picture"),
    ("GET", "/api/v1/jobs/{id}/placements"),
    ("GET", "/api/v1/jobs/{id}/dzi_files/{level}/{tile}"),
    ("GET", "/api/v1/libraries"),
    ("POST", "/api/v1/libraries"),
    ("GET", "/api/v1/libraries/{id}"),
    ("DELETE", "/api/v1/libraries/{id}"),
    ("GET", "/api/v1/libraries/{id}/sheet"),
    ("GET", "/api/v1/libraries/{id}/tiles"),
    ("POST", "/api/v1/libraries/{id}/tiles"),
    ("DELETE", "/api/v1/libraries/{id}/tiles"),
    ("POST", "/api/v1/events"),
    ("GET", "/api/v1/events/{id}"),
    ("PATCH", "/api/v1/events/{id}"),
    ("GET", "/api/v1/events/{id}/qr"),
    ("GET", "/api/v1/events/{id}/wall"),
    ("POST", "/api/v1/events/{id}/wall"),
    ("DELETE", "/api/v1/events/{id}/wall"),
    ("GET", "/api/v1/events/{id}/photos/{photo}/thumbnail"),
    ("GET", "/api/v1/events/{id}/photos"),
    ("POST", "/api/v1/events/{id}/photos"),
    ("DELETE", "/api/v1/events/{id}/photos"),
    ("GET", "/api/v1/events/{id}/board.pdf"),
    ("POST", "/api/v1/events/{id}/sheets"),
    ("GET", "/api/v1/events/{id}/sheets"),
    ("GET", "/api/v1/events/{id}/sheets/{number}"),
    ("GET", "/api/v1/events/{id}/sheets/{number}/keepsakes"),
    ("POST", "/api/v1/events/{id}/board/fill"),
    ("POST", "/api/v1/events/{id}/printer"),
    ("DELETE", "/api/v1/events/{id}/printer"),
    ("POST", "/api/v1/events/{id}/decisions"),
    ("POST", "/api/v1/events/{id}/photos/{photo}/verdict"),
    ("PATCH", "/api/v1/events/{id}/photos/{photo}"),
    ("DELETE", "/api/v1/events/{id}/photos/{photo}"),
    ("POST", "/api/v1/events/{id}/mosaic"),
    ("GET", "/api/v1/options"),
    ("GET", "/api/v1/queues"),
    ("GET", "/api/v1/system"),
    ("GET", "/api/v1/openapi.json"),
];

/// Checks `value` against `schema`, whose `$ref`s point into `doc`, with the `jsonschema` crate
/// (JSON Schema 2020-12, the dialect of OpenAPI 3.1; formats asserted), and returns every
/// mismatch as `<JSON pointer>: <what is wrong>`.
fn validate(doc: &Value, schema: &Value, value: &Value) -> Vec<String> {
    // The document is the root, so `#/components/...` resolves; the schema to apply is put
    // beside the components and referenced from the root.
    let mut root = doc.clone();
    root["x-checked"] = schema.clone();
    root["$ref"] = Value::from("#/x-checked");
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&root)
        .unwrap_or_else(|e| panic!("the schema does not compile: {e}"));
    validator
        .iter_errors(value)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
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
        "text/event-stream" => check_events(doc, schema, &op_name, status, body),
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

/// The event stream of a finished job, against the schema the document gives for each event
/// (OpenAPI 3.1: `{"event": name, "data": text}`, the data's JSON described by the
/// `contentSchema` of the branch its event name selects).
fn check_events(doc: &Value, schema: &Value, op_name: &str, status: u16, body: &[u8]) {
    let text = std::str::from_utf8(body).expect("an event stream is UTF-8");
    let branches = resolve(doc, schema)["oneOf"]
        .as_array()
        .unwrap_or_else(|| panic!("{op_name} {status}: the event schema has no oneOf"));
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
        let data = data.join("\n");
        let event = serde_json::json!({ "event": name, "data": data });
        let errors = validate(doc, schema, &event);
        assert!(
            errors.is_empty(),
            "{op_name} {status}: a {name} event does not match the document:\n  {}",
            errors.join("\n  ")
        );
        let content_schema = branches
            .iter()
            .find(|b| b["properties"]["event"]["enum"][0] == name)
            .map(|b| &b["properties"]["data"]["contentSchema"])
            .unwrap_or_else(|| panic!("{op_name} {status}: no branch for event {name:?}"));
        let data: Value = serde_json::from_str(&data).unwrap_or_else(|e| {
            panic!("{op_name} {status}: a {name} event's data does not parse: {e}")
        });
        let errors = validate(doc, content_schema, &data);
        assert!(
            errors.is_empty(),
            "{op_name} {status}: a {name} event's data does not match {content_schema}:\n  {}",
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
    let event_settings = path == "/api/v1/events/{id}";
    // Tile (0, 0) of level 0 exists for every mosaic.
    let path = path
        .replace("{level}/{x}/{y}", "0/0/0")
        .replace("{level}/{tile}", "0/0_0.png")
        .replace("{row}/{col}", "1/2")
        .replace("{number}", "1")
        // An event's photo: `id` is EVENT/photos/PHOTO.
        .replace("{id}/photos/{photo}", "{id}");
    let mut url = app.url(&path.replace("{id}", id));
    if method == "DELETE" && path.ends_with("/tiles") {
        // The first of the library's tiles.
        url.push_str(&format!("?name={}", crate::support::tiles(1)[0].0));
    }
    let mut req = match method {
        "GET" => app.client.get(url),
        "DELETE" => app.client.delete(url),
        "POST"
            if path.ends_with("/cancel")
                || path.ends_with("/mosaic")
                || path.ends_with("/sheets")
                || path.ends_with("/printer")
                || path.ends_with("/wall") =>
        {
            app.client.post(url)
        }
        // An event's settings; a job left readable by its id (the rest of the calls read it).
        "PATCH" if event_settings => app.client.patch(url).json(&if valid {
            serde_json::json!({"per_guest": 25})
        } else {
            serde_json::json!({"per_guest": "many"})
        }),
        "POST" if path.ends_with("/verdict") => app.client.post(url).json(&if valid {
            serde_json::json!({"verdict": "approve"})
        } else {
            serde_json::json!({"verdict": "maybe"})
        }),
        "POST" if path.ends_with("/decisions") => app.client.post(url).json(&if valid {
            serde_json::json!({"state": "approved", "every": "waiting"})
        } else {
            serde_json::json!({"state": "maybe"})
        }),
        "POST" if path.ends_with("/board/fill") => app.client.post(url).json(&if valid {
            serde_json::json!({"with": "colour"})
        } else {
            serde_json::json!({"with": "paint"})
        }),
        "POST" if path.ends_with("/sharing") => app.client.post(url).json(&if valid {
            serde_json::json!({"private": false})
        } else {
            serde_json::json!({"private": "maybe"})
        }),
        "PATCH" => app.client.patch(url).json(&serde_json::json!({
            "state": if valid { "approved" } else { "maybe" }
        })),
        "POST" if path == "/api/v1/sizing" => app
            .client
            .post(url)
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(if valid {
                "width=512&height=512&library=emoji&cells=12"
            } else {
                "height=512"
            }),
        "POST" => {
            let form = match (path.as_str(), valid) {
                ("/api/v1/jobs" | "/api/v1/previews", true) => job_form(astronaut()),
                ("/api/v1/jobs" | "/api/v1/previews", false) => Form::new()
                    .part(
                        "image",
                        Part::bytes(b"not an image".to_vec()).file_name("x.png"),
                    )
                    .text("library", "emoji"),
                ("/api/v1/libraries", true) => tile_files(),
                ("/api/v1/libraries", false) => Form::new().text("name", "empty"),
                ("/api/v1/libraries/{id}/tiles", true) => {
                    let (name, bytes) = crate::support::tiles(9).pop().unwrap();
                    Form::new().part("files", Part::bytes(bytes).file_name(name))
                }
                ("/api/v1/libraries/{id}/tiles", false) => {
                    Form::new().text("remove", "no-such.png")
                }
                ("/api/v1/events", true) => Form::new()
                    .text("name", "A party")
                    .part("image", Part::bytes(astronaut()).file_name("party.png")),
                ("/api/v1/events", false) => Form::new().text("name", "No photo"),
                ("/api/v1/events/{id}/photos", true) => {
                    let (name, bytes) = crate::support::tiles(10).pop().unwrap();
                    Form::new().part("files", Part::bytes(bytes).file_name(name))
                }
                ("/api/v1/events/{id}/photos", false) => Form::new().text("files", "not a photo"),
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
    // A job of the same client that stays queued, to be cancelled.
    let held = app.queued_job(owner.parse().unwrap()).await;
    // Libraries of the same client: one to be deleted, one whose tiles are added and taken out.
    for name in ["Doomed tiles", "Growing tiles"] {
        let mut form = Form::new().text("name", name);
        for (name, bytes) in crate::support::tiles(8) {
            form = form.part("files", Part::bytes(bytes).file_name(name));
        }
        assert_eq!(app.post_library_as(form, &owner).await.status(), 201);
    }
    // An event of the same client (a board, for its prints), with two photos waiting: one to
    // be taken out, one approved.
    let event = {
        let form = Form::new()
            .text("name", "A party")
            .text("board_cols", "4")
            .text("board_rows", "3")
            .part("image", Part::bytes(astronaut()).file_name("party.png"));
        let res = app
            .client
            .post(app.url("/api/v1/events"))
            .header("X-Client-Id", &owner)
            .multipart(form)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 201);
        res.json::<Value>().await.unwrap()
    };
    let event_id = event["id"].as_str().unwrap().to_string();
    let token = event["contribute_token"].as_str().unwrap().to_string();
    // Its first row filled and printed, so that sheet 1 prints again.
    app.platform
        .events()
        .fill_free(
            event_id.parse().unwrap(),
            &{
                let record = app.platform.events().get(event_id.parse().unwrap()).await;
                let mut board = record.unwrap().board.unwrap();
                board.rows = 1;
                board
            },
            tessera_shared::events::board::Filling::Colour,
            &[],
        )
        .await
        .unwrap();
    let res = app
        .client
        .post(app.url(&format!("/api/v1/events/{event_id}/sheets")))
        .header("X-Client-Id", &owner)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let mut photos = Vec::new();
    for (name, bytes) in crate::support::tiles(2) {
        let form = Form::new().part("files", Part::bytes(bytes).file_name(name));
        let res = app
            .client
            .post(app.url(&format!("/api/v1/events/{event_id}/photos?token={token}")))
            .header("X-Client-Id", &owner)
            .multipart(form)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 201);
        let sent = res.json::<Value>().await.unwrap();
        photos.push(format!(
            "{event_id}/photos/{}",
            sent["photos"][0]["id"].as_str().unwrap()
        ));
    }
    // A guest of their own sends one photo, to erase all theirs.
    let leaving = Uuid::new_v4().to_string();
    let (name, bytes) = crate::support::tiles(11).pop().unwrap();
    let res = app
        .client
        .post(app.url(&format!("/api/v1/events/{event_id}/photos?token={token}")))
        .header("X-Client-Id", &leaving)
        .multipart(Form::new().part("files", Part::bytes(bytes).file_name(name)))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let guest_headers = |client: &str| {
        [
            (
                reqwest::header::HeaderName::from_static("x-client-id"),
                client.to_string(),
            ),
            (
                reqwest::header::HeaderName::from_static("x-contribute-token"),
                token.clone(),
            ),
        ]
    };
    let (as_guest, as_leaving) = (guest_headers(&owner), guest_headers(&leaving));
    // The event asks its classifier: its token answers the verdicts.
    let res = app
        .client
        .patch(app.url(&format!("/api/v1/events/{event_id}")))
        .header("X-Client-Id", &owner)
        .json(&serde_json::json!({"review": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let record = app.platform.events().get(event_id.parse().unwrap()).await;
    let as_classifier = [(
        reqwest::header::HeaderName::from_static("x-review-token"),
        record.unwrap().review_token.unwrap(),
    )];
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
        let library = path.starts_with("/api/v1/libraries");
        let tiles_edit = path.ends_with("/tiles") && method != "GET";
        let event_photo = path.contains("{photo}");
        let (good_id, bad_id) = if event_photo {
            // The first photo is taken out, the second approved (and shown).
            let photo = &photos[usize::from(method != "DELETE")];
            (
                photo.clone(),
                photo.replacen(&event_id, &Uuid::new_v4().to_string(), 1),
            )
        } else if path.starts_with("/api/v1/events/") {
            (event_id.clone(), Uuid::new_v4().to_string())
        } else if tiles_edit {
            ("growing-tiles".to_string(), "no-such-library".to_string())
        } else if library && method == "DELETE" {
            ("doomed-tiles".to_string(), "no-such-library".to_string())
        } else if library {
            ("emoji".to_string(), "no-such-library".to_string())
        } else if method == "DELETE" {
            (doomed.clone(), Uuid::new_v4().to_string())
        } else if path.ends_with("/cancel") || path.ends_with("/sharing") {
            (held.to_string(), Uuid::new_v4().to_string())
        } else {
            (job_id.clone(), Uuid::new_v4().to_string())
        };
        let owned = method == "DELETE"
            || path.ends_with("/cancel")
            || path.ends_with("/sharing")
            || tiles_edit
            || path.starts_with("/api/v1/events/");
        let erase = path.ends_with("/photos") && method == "DELETE";
        let headers: &[_] = if path.ends_with("/verdict") {
            &as_classifier
        } else if erase {
            &as_leaving
        } else if path.ends_with("/photos") {
            &as_guest
        } else if owned {
            &as_owner
        } else {
            &[]
        };
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
            // Ending a wall or printer link that is ended already leaves it so; a guest with no photos
            // left erases none.
            let gone = match () {
                _ if path.ends_with("/wall") || path.ends_with("/printer") => 204,
                _ if erase => 200,
                _ => 404,
            };
            further.push((again, Some(gone)));
            // Someone else's: the job of another client, the operator's library, the photo
            // of another guest.
            let others = if library {
                "emoji"
            } else if event_photo {
                photos[1].as_str()
            } else if path.ends_with("/wall") || path.ends_with("/printer") || erase {
                event_id.as_str()
            } else {
                job_id.as_str()
            };
            let not_owner = call(&app, method, path, others, true, &[]).await;
            further.push((not_owner, Some(403)));
        }
        if path.ends_with("/cancel") {
            let again = call(&app, method, path, &good_id, true, headers).await;
            further.push((again, Some(409)));
            let not_owner = call(&app, method, path, &good_id, true, &[]).await;
            further.push((not_owner, Some(403)));
        } else if method == "POST" || method == "PATCH" {
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
    // What the classifier was offered (photos prepared after it was asked), taken.
    drain(&app, "photoreview").await;
    assert!(
        answers_checked >= ROUTES.len() * 2,
        "{answers_checked} answers checked"
    );
    assert!(
        json_bodies >= ROUTES.len(),
        "{json_bodies} JSON bodies validated"
    );
}

/// Takes every message off `queue`, once the work in flight has settled.
async fn drain(app: &TestApp, queue: &str) {
    let _ = crate::support::wait_for(std::time::Duration::from_secs(20), async || {
        match app.platform.queues.approximate_depth("photorequest").await {
            Ok(0) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    loop {
        let got = app
            .platform
            .queues
            .receive(queue, 32, std::time::Duration::from_secs(60))
            .await
            .unwrap();
        if got.is_empty() {
            break;
        }
        for m in got {
            app.platform
                .queues
                .delete(queue, &m.id, &m.pop_receipt)
                .await
                .unwrap();
        }
    }
}

/// The validation itself: it must be able to fail, on the document the server serves.
mod validation {
    use serde_json::{Value, json};
    use tessera_shared::spec::{Defaults, JobSpec};

    use super::validate;

    fn doc() -> Value {
        serde_json::from_str(tessera_web::api::openapi::document_json()).unwrap()
    }

    /// A job's `params`: every option at its declared default, on a small grid.
    fn params() -> Value {
        let spec = JobSpec::with_defaults(&Defaults::default());
        let mut params = Value::Object(tessera_shared::spec::params(&spec));
        for (name, value) in [
            ("library", json!({ "id": "emoji", "version": 1 })),
            ("tile_size", json!(16)),
            ("tile_height", json!(16)),
            ("cells", json!(4)),
            ("grid", json!("cells")),
            ("slices", json!(2)),
            ("input_name", json!("a.png")),
        ] {
            params[name] = value;
        }
        params
    }

    fn job() -> Value {
        json!({
            "id": "67e55044-10b1-426f-9247-bb680e5fe0c8",
            "state": "done",
            "progress": { "slices_done": 2, "slices_total": 2 },
            "output": { "width": 64, "height": 48, "cols": 4, "rows": 3 },
            "quality": null,
            "created_at": "2026-05-01T10:00:00Z",
            "updated_at": "2026-05-01T10:00:01Z",
            "finished_at": null,
            "expires_at": null,
            "params": params(),
            "warnings": [],
            "adapted": [],
            "slices": [],
            "transactions": { "web": 3 },
            "links": { "self": "/a", "events": "/b", "result": "/c" }
        })
    }

    fn job_errors(body: &Value) -> Vec<String> {
        let mut errors = validate(&doc(), &json!({ "$ref": "#/components/schemas/Job" }), body);
        errors.sort();
        errors
    }

    #[test]
    fn accepts_a_job_that_matches() {
        assert_eq!(job_errors(&job()), Vec::<String>::new());
    }

    #[test]
    fn rejects_a_missing_field_a_wrong_type_an_unknown_state_and_a_bad_format() {
        let mut body = job();
        body.as_object_mut().unwrap().remove("links");
        body["state"] = json!("paused");
        body["progress"]["slices_done"] = json!("2");
        body["id"] = json!("not-a-uuid");
        body["params"]["blend"] = json!(101);
        let errors = job_errors(&body);
        assert_eq!(errors.len(), 5, "{errors:#?}");
        for (at, what) in [
            ("", "links"),
            ("/state", "paused"),
            ("/progress/slices_done", "\"2\""),
            ("/id", "not-a-uuid"),
            ("/params/blend", "101"),
        ] {
            assert!(
                errors
                    .iter()
                    .any(|e| e.starts_with(&format!("{at}: ")) && e.contains(what)),
                "no error at {at:?} naming {what}: {errors:#?}"
            );
        }
    }

    #[test]
    fn rejects_an_error_body_without_its_message() {
        let errors = validate(
            &doc(),
            &json!({ "$ref": "#/components/schemas/Error" }),
            &json!({ "error": { "code": "not_found" } }),
        );
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].starts_with("/error: ") && errors[0].contains("message"));
    }
}

/// A submission's fields as text, checked the way the document states them and the way the
/// server does: whether each takes it.
fn taken_by_both(doc: &Value, fields: &[(&str, &str)]) -> (bool, bool) {
    let mut body = serde_json::json!({"image": "photo bytes"});
    let schema = serde_json::json!({"$ref": "#/components/schemas/JobSubmission"});
    // Multipart text: the document types whole numbers and switches, so those go typed.
    let properties = &doc["components"]["schemas"]["JobSubmission"]["properties"];
    for (name, value) in fields {
        body[*name] = match properties[*name]["type"].as_str() {
            Some("integer") => Value::from(value.parse::<u64>().unwrap()),
            Some("boolean") => Value::from(value.parse::<bool>().unwrap()),
            _ => Value::from(*value),
        };
    }
    let by_document = validate(doc, &schema, &body).is_empty();
    let defaults = tessera_shared::spec::Defaults {
        library: "emoji".into(),
        slices: 1,
    };
    let field = |name: &str| fields.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
    let by_server = tessera_shared::spec::JobSpec::from_fields(field, &defaults)
        .and_then(|spec| spec.check_fields())
        .is_ok();
    (by_document, by_server)
}

/// The rules the document states between a submission's fields, and the shapes it lets a
/// library have, are the ones the server enforces: each of the grid's ways alone and every pair
/// of them, with the rules on adaptive sizes, and every shape written with terms up to 20.
#[test]
fn the_document_takes_what_the_server_takes_between_fields_and_for_shapes() {
    let doc: Value = serde_json::from_str(tessera_web::api::openapi::document_json()).unwrap();
    let ways: [&[(&str, &str)]; 5] = [
        &[],
        &[("cells", "64")],
        &[("cells", "64"), ("adaptive", "8..32")],
        &[("per_pixel", "true")],
        &[("print", "A3@150dpi")],
    ];
    for (i, a) in ways.iter().enumerate() {
        for b in &ways[i..] {
            let mut fields: Vec<(&str, &str)> = a.to_vec();
            fields.extend(b.iter().filter(|f| !a.contains(f)));
            let (document, server) = taken_by_both(&doc, &fields);
            assert_eq!(
                document, server,
                "{fields:?}: document {document}, server {server}"
            );
        }
    }
    for fields in [
        &[("adaptive", "8..32"), ("tile_size", "24")][..],
        &[("adaptive", "8..32"), ("tile_size", "24x18")],
        &[("adaptive", "8..32"), ("background", "auto")],
        &[("adaptive", "8..32"), ("background", "library")],
        &[("per_pixel", "false"), ("cells", "40")],
    ] {
        let (document, server) = taken_by_both(&doc, fields);
        assert_eq!(
            document, server,
            "{fields:?}: document {document}, server {server}"
        );
    }

    let shape = &doc["components"]["schemas"]["LibraryUpload"]["properties"]["shape"];
    let mut taken = 0;
    for w in 0..=20 {
        for h in 0..=20 {
            let text = format!("{w}:{h}");
            let by_document = validate(&doc, shape, &Value::from(text.clone())).is_empty();
            let by_server = tessera_engine::TileShape::parse(&text).is_ok();
            assert_eq!(by_document, by_server, "shape {text}");
            taken += usize::from(by_server);
        }
    }
    // 16:9, 4:1 and 1:4 are shapes; 5:1 and 17:16 are not.
    assert!(taken > 150, "only {taken} shapes taken");
}
