//! The OpenAPI document against the running API: every documented path and method is called at
//! least once, and every answer's status is one the document lists for that operation.

use std::collections::BTreeSet;

use reqwest::Method;
use reqwest::multipart::{Form, Part};
use serde_json::Value;
use uuid::Uuid;

use crate::api::{TestApp, astronaut, fixture, job_form, spawn_app};

/// The routes the server registers under `/api/v1`: the document must name each one.
const ROUTES: [(&str, &str); 13] = [
    ("POST", "/jobs"),
    ("GET", "/jobs/{id}"),
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

/// Calls one operation with `id` in its path and, for a POST, the body it documents as valid
/// (`valid`) or an invalid one.
async fn call(app: &TestApp, method: &str, path: &str, id: &str, valid: bool) -> u16 {
    // Tile (0, 0) of level 0 exists for every mosaic.
    let path = path.replace("{level}/{x}/{y}", "0/0/0");
    let url = app.url(&format!("/api/v1{}", path.replace("{id}", id)));
    let req = match method {
        "GET" => app.client.get(url),
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
    req.send().await.unwrap().status().as_u16()
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
    let res = app.post_job(job_form(astronaut())).await;
    assert_eq!(res.status(), 202);
    let job: Value = res.json().await.unwrap();
    let job_id = job["id"].as_str().unwrap().to_string();
    let finished = app.wait_until_finished(&job_id).await;
    assert_eq!(finished["state"], "done", "{finished}");

    let mut statuses_seen = 0;
    for (method, path) in &documented {
        let op = &paths[path.as_str()][method.to_lowercase()];
        let listed: BTreeSet<u16> = op["responses"]
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.parse().unwrap())
            .collect();
        let (good_id, bad_id) = if path.starts_with("/libraries") {
            ("emoji".to_string(), "no-such-library".to_string())
        } else {
            (job_id.clone(), Uuid::new_v4().to_string())
        };
        let mut cases = vec![call(&app, method, path, &good_id, true).await];
        if path.contains("{id}") {
            cases.push(call(&app, method, path, &bad_id, true).await);
        }
        if method == "POST" {
            cases.push(call(&app, method, path, &good_id, false).await);
        }
        let success = cases[0];
        assert!(
            (200..300).contains(&success),
            "{method} {path}: a valid call answered {success}"
        );
        for status in cases {
            assert!(
                listed.contains(&status),
                "{method} {path} answered {status}, which the document does not list ({listed:?})"
            );
            statuses_seen += 1;
        }
    }
    assert!(statuses_seen >= ROUTES.len());
}
