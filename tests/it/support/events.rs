//! Events as the tests make them: an owner's event from a photo and fields, guests' photos
//! sent through its link, and a mosaic asked for and waited on.

use reqwest::StatusCode;
use reqwest::multipart::{Form, Part};
use serde_json::Value;
use uuid::Uuid;

use super::TestApp;

/// Makes the event "Anna and Tom" of `image` for `owner` with `fields`: the answer.
pub(crate) async fn make_event(
    app: &TestApp,
    owner: Uuid,
    image: Vec<u8>,
    fields: &[(&str, &str)],
) -> Value {
    let mut form = Form::new()
        .text("name", "Anna and Tom")
        .part("image", Part::bytes(image).file_name("us.png"));
    for (k, v) in fields {
        form = form.text(k.to_string(), v.to_string());
    }
    // The test photos are made alike (gradients of one pattern): screened, they would be held
    // as near duplicates. The screen's own tests turn it on.
    if !fields.iter().any(|(k, _)| *k == "screen") {
        form = form.text("screen", "false");
    }
    let res = app
        .client
        .post(app.url("/api/v1/events"))
        .header("X-Client-Id", owner.to_string())
        .multipart(form)
        .send()
        .await
        .unwrap();
    let status = res.status();
    let body: Value = res.json().await.unwrap();
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body
}

/// Sends `files` to `event` as guest `guest`, with `fields` (a `guest_name`): the status and
/// the body. With the back-end roles running, it returns once the processors have prepared
/// every photo taken, as the guest's view of the event says.
pub(crate) async fn send_photos(
    app: &TestApp,
    event: &Value,
    guest: Uuid,
    files: Vec<(&str, Vec<u8>)>,
    fields: &[(&str, &str)],
) -> (StatusCode, Value) {
    let (status, body) = send_photos_received(app, event, guest, files, fields).await;
    if status == StatusCode::CREATED && app.runs_workers() {
        let sent: Vec<&str> = body["photos"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["id"].as_str().unwrap())
            .collect();
        prepared(app, event, guest, &sent).await;
    }
    (status, body)
}

/// Waits until the processors have prepared photos `sent` of `guest`'s to `event`.
pub(crate) async fn prepared(app: &TestApp, event: &Value, guest: Uuid, sent: &[&str]) {
    let (id, token) = (
        event["id"].as_str().unwrap(),
        event["contribute_token"].as_str().unwrap(),
    );
    let path = format!("/api/v1/events/{id}?token={token}");
    let guest = guest.to_string();
    super::wait_for(std::time::Duration::from_secs(60), async || {
        let view: Value = app
            .get_with(&path, &[("X-Client-Id", &guest)])
            .await
            .json()
            .await
            .map_err(|e| e.to_string())?;
        let photos = view["photos"].as_array().cloned().unwrap_or_default();
        let waiting: Vec<&str> = sent
            .iter()
            .copied()
            .filter(|s| {
                !photos
                    .iter()
                    .any(|p| p["id"] == *s && p["prepared"] == true)
            })
            .collect();
        match waiting.is_empty() {
            true => Ok(()),
            false => Err(format!("photos not prepared yet: {waiting:?}")),
        }
    })
    .await
}

/// Waits until the processors have prepared every photo `event` received (its owner's view
/// counts none received).
pub(crate) async fn none_received(app: &TestApp, owner: Uuid, event: &str) {
    let (path, owner) = (format!("/api/v1/events/{event}"), owner.to_string());
    super::wait_for(std::time::Duration::from_secs(60), async || {
        let view: Value = app
            .get_with(&path, &[("X-Client-Id", &owner)])
            .await
            .json()
            .await
            .map_err(|e| e.to_string())?;
        match view["counts"]["received"].as_u64() {
            Some(0) => Ok(()),
            other => Err(format!("photos still received: {other:?}")),
        }
    })
    .await
}

/// [`send_photos`] that returns as soon as the photos are received.
pub(crate) async fn send_photos_received(
    app: &TestApp,
    event: &Value,
    guest: Uuid,
    files: Vec<(&str, Vec<u8>)>,
    fields: &[(&str, &str)],
) -> (StatusCode, Value) {
    let (id, token) = (
        event["id"].as_str().unwrap(),
        event["contribute_token"].as_str().unwrap(),
    );
    let mut form = Form::new();
    for (k, v) in fields {
        form = form.text(k.to_string(), v.to_string());
    }
    for (name, bytes) in files {
        form = form.part("files", Part::bytes(bytes).file_name(name.to_string()));
    }
    let res = app
        .client
        .post(app.url(&format!("/api/v1/events/{id}/photos?token={token}")))
        .header("X-Client-Id", guest.to_string())
        .multipart(form)
        .send()
        .await
        .unwrap();
    (res.status(), res.json().await.unwrap_or(Value::Null))
}

/// Asks for a mosaic of `event` as `owner` and waits until it is finished: the job as it ends.
pub(crate) async fn finished_event_mosaic(app: &TestApp, owner: Uuid, event: &str) -> Value {
    none_received(app, owner, event).await;
    let res = app
        .client
        .post(app.url(&format!("/api/v1/events/{event}/mosaic")))
        .header("X-Client-Id", owner.to_string())
        .send()
        .await
        .unwrap();
    let status = res.status();
    let body: Value = res.json().await.unwrap();
    assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    let owner = owner.to_string();
    app.wait_until_finished_with(body["job"].as_str().unwrap(), &[("X-Client-Id", &owner)])
        .await
}
