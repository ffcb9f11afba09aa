//! The REST API over real HTTP: the app (`support::TestApp`) bound on a free port over the
//! embedded backend in a temporary directory, with the controller and a processor running in the
//! same process.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};
use tessera_shared::messages::{Encoding, Envelope, ImageRequest, ImageResponse, JobOutcome};
use tessera_shared::storage::embedded::EmbeddedStorage;
use tessera_web::WebSettings;
use uuid::Uuid;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_with_flip_and_rotate_carries_them_to_done() {
    let app = spawn_app().await;
    let form = job_form(astronaut())
        .text("flip", "true")
        .text("rotate", "true");
    let res = app.post_job(form).await;
    assert_eq!(res.status(), StatusCode::ACCEPTED);
    let job: Value = res.json().await.unwrap();
    assert_eq!(job["params"]["flip"], true);
    assert_eq!(job["params"]["rotate"], true);
    let id = job["id"].as_str().unwrap().to_string();
    let job = app.wait_until_finished(&id).await;
    assert_eq!(job["state"], "done", "{job}");
    assert_eq!(
        (&job["params"]["flip"], &job["params"]["rotate"]),
        (&Value::Bool(true), &Value::Bool(true))
    );
}

/// The background transparent tiles lie over is asked for by name or colour, kept with the job
/// and changes the mosaic; `library` is the same as not asking.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_lays_transparent_tiles_over_the_background_it_asks_for() {
    let app = spawn_app().await;
    let mut results = Vec::new();
    for (asked, kept) in [
        ("library", Value::Null),
        ("#000000", Value::from("000000")),
        ("AUTO", Value::from("auto")),
    ] {
        let res = app
            .post_job(job_form(astronaut()).text("background", asked))
            .await;
        assert_eq!(res.status(), StatusCode::ACCEPTED, "{asked}");
        let job: Value = res.json().await.unwrap();
        assert_eq!(job["params"]["background"], kept, "{asked}");
        let id = job["id"].as_str().unwrap().to_string();
        let job = app.wait_until_finished(&id).await;
        assert_eq!(job["state"], "done", "{job}");
        // The colour the tiles were laid over: the library's white, black as asked, or the
        // one auto chose.
        let used = job["quality"]["background"].as_str().unwrap().to_string();
        match asked {
            "library" => assert_eq!(used, "ffffff"),
            "#000000" => assert_eq!(used, "000000"),
            _ => assert_ne!(used, "ffffff", "auto kept white for the dark photo"),
        }
        let result = app.get(&format!("/api/v1/jobs/{id}/result")).await;
        results.push(result.bytes().await.unwrap());
    }
    assert_ne!(results[0], results[1], "over black looks like over white");
    assert_ne!(results[0], results[2], "auto kept white for the dark photo");
    // Adaptive squares keep the library's own background: asking for another is refused.
    let res = app
        .post_job(
            job_form(astronaut())
                .text("background", "auto")
                .text("adaptive", "8..16"),
        )
        .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["code"], "adaptive_background", "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_runs_to_done_and_its_result_streams_whole_and_in_ranges() {
    let app = spawn_app().await;
    let res = app.post_job(job_form(astronaut())).await;
    assert_eq!(res.status(), StatusCode::ACCEPTED);
    let location = res.headers()["location"].to_str().unwrap().to_string();
    let job: Value = res.json().await.unwrap();
    let id = job["id"].as_str().unwrap().to_string();
    assert_eq!(location, format!("/api/v1/jobs/{id}"));
    assert_eq!(job["state"], "queued");
    assert_eq!(job["output"]["width"], 96);
    assert_eq!(job["output"]["height"], 96);
    assert_eq!(job["params"]["library"]["id"], "emoji");
    assert_eq!(job["params"]["slices"], 3);
    assert_eq!(
        (&job["params"]["flip"], &job["params"]["rotate"]),
        (&Value::Bool(false), &Value::Bool(false))
    );

    // The event stream sends the job as it changes and ends once it is done.
    let events = app.get_events(&id).await;
    assert_eq!(events.status(), StatusCode::OK);
    assert_eq!(events.headers()["content-type"], "text/event-stream");
    let text = events.text().await.unwrap();
    let last: Value = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .next_back()
        .map(|d| serde_json::from_str(d).unwrap())
        .unwrap();
    assert_eq!(last["state"], "done", "{text}");

    let job = app.wait_until_finished(&id).await;
    assert_eq!(job["state"], "done", "{job}");
    assert_eq!(job["progress"]["slices_total"], 3);
    assert_eq!(job["progress"]["slices_done"], 3);
    assert_eq!(job["slices"].as_array().unwrap().len(), 3);
    assert_eq!(job["result_url"], format!("/api/v1/jobs/{id}/result"));

    let whole = app.get_result(&id, &[]).await;
    assert_eq!(whole.status(), StatusCode::OK);
    assert_eq!(whole.headers()["content-type"], "image/png");
    assert!(
        whole.headers()["cache-control"]
            .to_str()
            .unwrap()
            .contains("immutable")
    );
    let etag = whole.headers()["etag"].to_str().unwrap().to_string();
    let length: usize = whole.headers()["content-length"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let bytes = whole.bytes().await.unwrap().to_vec();
    assert_eq!(bytes.len(), length);
    let mosaic = image::load_from_memory(&bytes).unwrap();
    assert_eq!((mosaic.width(), mosaic.height()), (96, 96));

    let part = app.get_result(&id, &[("range", "bytes=10-99")]).await;
    assert_eq!(part.status(), StatusCode::PARTIAL_CONTENT);
    assert_eq!(
        part.headers()["content-range"],
        format!("bytes 10-99/{length}").as_str()
    );
    assert_eq!(part.bytes().await.unwrap().as_ref(), &bytes[10..100]);

    let tail = app.get_result(&id, &[("range", "bytes=-16")]).await;
    assert_eq!(tail.status(), StatusCode::PARTIAL_CONTENT);
    assert_eq!(tail.bytes().await.unwrap().as_ref(), &bytes[length - 16..]);

    let past = app
        .get_result(&id, &[("range", &format!("bytes={length}-"))])
        .await;
    assert_eq!(past.status(), StatusCode::RANGE_NOT_SATISFIABLE);

    let cached = app.get_result(&id, &[("if-none-match", &etag)]).await;
    assert_eq!(cached.status(), StatusCode::NOT_MODIFIED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_submission_stores_its_input_and_record_and_queues_one_request() {
    // Refusals have their own tests (refusals.rs); this is what an accepted job leaves behind.
    let app = spawn_app_with(test_settings(), false).await;
    let good = astronaut();
    assert_eq!(
        app.platform.queue::<ImageRequest>().depth().await.unwrap(),
        0
    );
    let client = Uuid::new_v4();
    let res = app
        .post_job_with(job_form(good), &[("x-client-id", &client.to_string())])
        .await;
    assert_eq!(res.status(), StatusCode::ACCEPTED);
    let job: Value = res.json().await.unwrap();
    let id: Uuid = job["id"].as_str().unwrap().parse().unwrap();
    assert_eq!(
        app.platform.queue::<ImageRequest>().depth().await.unwrap(),
        1
    );
    let record = app.platform.jobs().get(id).await.unwrap();
    assert_eq!(record.client_id, client);
    let peeked = app.platform.queues.peek("imagerequest", 1).await.unwrap();
    // Written base64-encoded, as Azure Functions' queue bindings expect by default.
    let body = &peeked[0].body;
    assert_eq!(Encoding::of(body), Encoding::Base64, "{body}");
    let message = Envelope::<ImageRequest>::decode(&Encoding::from_wire(body).unwrap()).unwrap();
    assert_eq!(message.body.job_id, id);
    assert_eq!(message.client_id, client);
    assert_eq!(message.body.input_blob, format!("imageinput/{id}"));
    // Sized once, here: the request carries the grid the record's output was measured on.
    let (grid, output) = (message.body.sized_to.unwrap(), record.output.unwrap());
    assert_eq!((grid.cols, grid.rows), (output.cols, output.rows));
    assert_eq!(record.sized_to, Some(grid));
    assert_eq!(
        app.platform
            .blobs
            .get(&message.body.input_blob)
            .await
            .unwrap()
            .as_ref(),
        astronaut().as_slice()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_gets_a_client_cookie_and_keeps_it() {
    let app = spawn_app_with(test_settings(), false).await;
    let res = app.post_job(job_form(astronaut())).await;
    assert_eq!(res.status(), StatusCode::ACCEPTED);
    let cookie = res.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(cookie.starts_with("tessera_client="), "{cookie}");
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    let client: Uuid = cookie["tessera_client=".len()..]
        .split(';')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let job: Value = res.json().await.unwrap();
    let id: Uuid = job["id"].as_str().unwrap().parse().unwrap();
    assert_eq!(app.platform.jobs().get(id).await.unwrap().client_id, client);

    let sent = format!("tessera_client={client}");
    let again = app
        .post_job_with(
            job_form(astronaut()),
            // A cookie-carrying POST must come from this site's scripts (see pages::forgery_check).
            &[("cookie", &sent), ("X-Requested-With", "tessera")],
        )
        .await;
    assert!(again.headers().get("set-cookie").is_none());
    let job: Value = again.json().await.unwrap();
    let id: Uuid = job["id"].as_str().unwrap().parse().unwrap();
    assert_eq!(app.platform.jobs().get(id).await.unwrap().client_id, client);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_routes_are_404_and_unserved_methods_405() {
    // Unknown job ids have their own test in refusals.rs.
    let app = spawn_app_with(test_settings(), false).await;
    let res = app.get("/api/v1/nothing-here").await;
    assert_refused(res, StatusCode::NOT_FOUND, "no_route").await;
    // A path that exists, asked with a method it does not serve: 405, naming the ones it does.
    let job = uuid::Uuid::new_v4();
    for (method, path, allow) in [
        (
            reqwest::Method::POST,
            format!("/api/v1/jobs/{job}"),
            "GET, DELETE",
        ),
        (
            reqwest::Method::PUT,
            "/api/v1/libraries".to_string(),
            "GET, POST",
        ),
        (reqwest::Method::GET, "/api/v1/jobs".to_string(), "POST"),
        (reqwest::Method::DELETE, "/api/v1/queues".to_string(), "GET"),
    ] {
        let res = app
            .client
            .request(method.clone(), app.url(&path))
            .send()
            .await
            .unwrap();
        assert_eq!(res.headers()["allow"], allow, "{method} {path}");
        assert_eq!(
            error_code(res).await,
            (
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed".to_string()
            ),
            "{method} {path}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_imageresponse_listener_tells_of_a_jobs_end_and_writes_no_outcome() {
    // No back end runs: the broker's side alone, with the controller's part done by hand.
    let app = spawn_app_with(test_settings(), false).await;
    let id = app.submit(job_form(astronaut())).await;
    let job: Value = app.get_job(&id).await.json().await.unwrap();
    assert_eq!(job["state"], "queued");
    let res = app.get_result(&id, &[]).await;
    assert_refused(res, StatusCode::CONFLICT, "job_not_done").await;

    let job_id: Uuid = id.parse().unwrap();
    let responses = app.platform.queue::<ImageResponse>();
    let done = ImageResponse {
        job_id,
        outcome: JobOutcome::Done {
            output_blob: format!("imageoutput/{id}"),
            width: 96,
            height: 96,
        },
    };
    // A response whose record has not ended (no controller wrote it) never makes it done.
    responses
        .send(&Envelope::new(Uuid::new_v4(), done.clone()))
        .await
        .unwrap();
    // Once the listener has taken it (it is hidden, or back with a delivery counted):
    eventually(
        Duration::from_secs(30),
        "the early response taken",
        async || {
            let seen = app.platform.queues.peek("imageresponse", 1).await.unwrap();
            seen.first().is_none_or(|m| m.dequeue_count >= 1)
        },
    )
    .await;
    let job: Value = app.get_job(&id).await.json().await.unwrap();
    assert_eq!(job["state"], "queued", "{job:#}");

    // The controller writes the outcome, then sends the response: the listener tells the
    // event streams.
    app.platform
        .jobs()
        .update(job_id, |r| r.fail("the library vanished"))
        .await
        .unwrap();
    let failed = ImageResponse {
        job_id,
        outcome: JobOutcome::Failed {
            reason: "the library vanished".into(),
        },
    };
    responses
        .send(&Envelope::new(Uuid::new_v4(), failed))
        .await
        .unwrap();
    let text = app.get_events(&id).await.text().await.unwrap();
    assert!(text.contains("\"state\":\"failed\""), "{text}");
    let job = app.wait_until_finished(&id).await;
    assert_eq!(job["state"], "failed");
    assert_eq!(job["error"], "the library vanished");

    // Every response is taken (the early one once the record ended), and the job stays as the
    // controller finished it.
    eventually(
        Duration::from_secs(30),
        "every response taken",
        async || responses.depth().await.unwrap() == 0,
    )
    .await;
    let job: Value = app.get_job(&id).await.json().await.unwrap();
    assert_eq!(job["state"], "failed");
    let res = app.get_result(&id, &[]).await;
    assert_refused(res, StatusCode::CONFLICT, "job_failed").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn libraries_are_listed_and_imported_from_zips_and_files() {
    let settings = WebSettings {
        max_library_uncompressed_bytes: 1024 * 1024,
        ..test_settings()
    };
    let app = spawn_app_with(settings, false).await;
    let list: Value = app.get_libraries().await.json().await.unwrap();
    assert_eq!(list["libraries"][0]["id"], "emoji");
    let emoji: Value = app.get_library("emoji").await.json().await.unwrap();
    assert!(emoji["tiles"].as_u64().unwrap() > 10, "{emoji}");
    let res = app.get_library("nope").await;
    assert_refused(res, StatusCode::NOT_FOUND, "library_not_found").await;

    // A zip with tiles, a stray text file and a corrupt image.
    let mut entries: Vec<(String, Vec<u8>)> = tiles(6)
        .into_iter()
        .map(|(n, b)| (format!("set/{n}"), b))
        .collect();
    entries.push(("set/readme.txt".into(), b"hello".to_vec()));
    entries.push(("set/broken.png".into(), png(30, 30)[..60].to_vec()));
    let refs: Vec<(&str, Vec<u8>)> = entries
        .iter()
        .map(|(n, b)| (n.as_str(), b.clone()))
        .collect();
    let form = Form::new()
        .text("name", "My Tiles")
        .part("file", Part::bytes(zip_of(&refs)).file_name("tiles.zip"));
    let res = app.post_library(form).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    assert_eq!(res.headers()["location"], "/api/v1/libraries/my-tiles");
    let created: Value = res.json().await.unwrap();
    assert_eq!(created["library"]["id"], "my-tiles");
    assert_eq!(created["library"]["tiles"], 6);
    assert_eq!(created["report"]["ignored"], 1);
    // Every file left out is named, in name order.
    assert_eq!(
        created["report"]["skipped"][0]["name"], "set/broken.png",
        "{created}"
    );
    assert_eq!(
        created["report"]["skipped"][1]["name"], "set/readme.txt",
        "{created}"
    );
    let got: Value = app.get_library("my-tiles").await.json().await.unwrap();
    assert_eq!(got["version"], 1);

    // Loose image files under a name with the same id: refused, the library unchanged...
    let loose = |name: &str, replace: Option<&str>| {
        let mut form = Form::new().text("name", name.to_string());
        if let Some(replace) = replace {
            form = form.text("replace", replace.to_string());
        }
        for (name, bytes) in tiles(3) {
            form = form.part("files", Part::bytes(bytes).file_name(name));
        }
        form
    };
    let res = app.post_library(loose("MY TILES!!", None)).await;
    assert_refused(res, StatusCode::CONFLICT, "library_exists").await;
    let got: Value = app.get_library("my-tiles").await.json().await.unwrap();
    assert_eq!(
        (&got["version"], &got["name"]),
        (&1.into(), &"My Tiles".into())
    );

    // ... unless it says replace: version 2.
    let res = app.post_library(loose("My Tiles", Some("true"))).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let created: Value = res.json().await.unwrap();
    assert_eq!(created["library"]["version"], 2);
    assert_eq!(created["library"]["tiles"], 3);

    // Replacements racing each other: each gets a version of its own, and the one recorded as
    // current is the newest (it never rolls back).
    let (a, b, c) = tokio::join!(
        app.post_library(loose("My Tiles", Some("true"))),
        app.post_library(loose("My Tiles", Some("true"))),
        app.post_library(loose("My Tiles", Some("true"))),
    );
    let mut versions = Vec::new();
    for res in [a, b, c] {
        assert_eq!(res.status(), StatusCode::CREATED);
        let created: Value = res.json().await.unwrap();
        versions.push(created["library"]["version"].as_u64().unwrap());
    }
    versions.sort();
    assert_eq!(versions, vec![3, 4, 5]);
    let got: Value = app.get_library("my-tiles").await.json().await.unwrap();
    assert_eq!(got["version"], 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_queues_and_security_headers() {
    let app = spawn_app_with(test_settings(), false).await;
    assert_eq!(app.healthz().await.status(), StatusCode::OK);
    assert_eq!(app.readyz().await.status(), StatusCode::OK);
    app.submit(job_form(astronaut())).await;
    let res = app.get_queues().await;
    assert_eq!(res.status(), StatusCode::OK);
    let headers = res.headers().clone();
    assert_eq!(headers["x-content-type-options"], "nosniff");
    let csp = headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    let body: Value = res.json().await.unwrap();
    let queues = body["queues"].as_array().unwrap();
    let names: Vec<&str> = queues.iter().map(|q| q["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "imagerequest",
            "slicerequest",
            "sliceresponse",
            "imageresponse",
            "photorequest",
            "libraryrequest",
            "photoreview",
        ]
    );
    assert_eq!(queues[0]["depth"], 1);
    assert_eq!(queues[0]["poison"], "imagerequest-poison");
    assert_eq!(queues[0]["poison_depth"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_done_job_holds_only_its_result_and_deleting_it_leaves_nothing() {
    let app = spawn_app().await;
    let baseline = all_blob_keys(&app.platform).await;
    let client = Uuid::new_v4().to_string();
    let as_client = [("x-client-id", client.as_str())];
    let res = app.post_job_with(job_form(astronaut()), &as_client).await;
    assert_eq!(res.status(), StatusCode::ACCEPTED);
    let id = res.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let job = app.wait_until_finished(&id).await;
    assert_eq!(job["state"], "done", "{job}");
    let expires = time::OffsetDateTime::parse(
        job["expires_at"].as_str().expect("a done job expires"),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    let finished = time::OffsetDateTime::parse(
        job["finished_at"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    assert_eq!(expires - finished, time::Duration::days(30));

    // What the viewer makes: the preview and a zoom tile.
    for path in ["preview", "tiles/0/0/0"] {
        let res = app.get(&format!("/api/v1/jobs/{id}/{path}")).await;
        assert_eq!(res.status(), StatusCode::OK, "{path}");
    }
    // The intermediates went as the job ended (the controller releases them after announcing).
    let held: Vec<String> = wait_for(Duration::from_secs(10), async || {
        let held: Vec<String> = all_blob_keys(&app.platform)
            .await
            .difference(&baseline)
            .cloned()
            .collect();
        let intermediate = |k: &String| k.starts_with("slice") || k.starts_with("imageinput");
        if held.iter().any(intermediate) {
            Err(format!("{held:?}"))
        } else {
            Ok(held)
        }
    })
    .await;
    let kinds: std::collections::BTreeSet<&str> =
        held.iter().map(|k| k.split('/').next().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "cellmaps",
            "clients",
            "imageoutput",
            "imagepreview",
            "imagetiles",
            "jobs",
            "seekindex"
        ]
        .into_iter()
        .collect(),
        "{held:?}"
    );

    // Only its client may delete it.
    let res = app
        .client
        .delete(app.url(&format!("/api/v1/jobs/{id}")))
        .send()
        .await
        .unwrap();
    assert_refused(res, StatusCode::FORBIDDEN, "not_your_job").await;
    let delete = || {
        app.client
            .delete(app.url(&format!("/api/v1/jobs/{id}")))
            .header("x-client-id", &client)
            .send()
    };
    assert_eq!(delete().await.unwrap().status(), StatusCode::NO_CONTENT);
    assert_eq!(app.get_job(&id).await.status(), StatusCode::NOT_FOUND);
    assert_eq!(delete().await.unwrap().status(), StatusCode::NOT_FOUND);
    assert_eq!(all_blob_keys(&app.platform).await, baseline);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_job_cannot_be_deleted() {
    // No workers: the job stays queued.
    let app = spawn_app_with(test_settings(), false).await;
    let client = Uuid::new_v4().to_string();
    let res = app
        .post_job_with(job_form(astronaut()), &[("x-client-id", &client)])
        .await;
    let id = res.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let res = app
        .client
        .delete(app.url(&format!("/api/v1/jobs/{id}")))
        .header("x-client-id", &client)
        .send()
        .await
        .unwrap();
    assert_refused(res, StatusCode::CONFLICT, "job_active").await;
    assert_eq!(app.get_job(&id).await.status(), StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_over_its_quota_of_active_jobs_gets_429_with_retry_after() {
    // No workers: every job stays queued.
    let app = spawn_app_with(test_settings(), false).await;
    let client = Uuid::new_v4().to_string();
    for _ in 0..4 {
        let res = app
            .post_job_with(job_form(astronaut()), &[("x-client-id", &client)])
            .await;
        assert_eq!(res.status(), StatusCode::ACCEPTED);
    }
    let res = app
        .post_job_with(job_form(astronaut()), &[("x-client-id", &client)])
        .await;
    let retry_after: u64 = res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry_after >= 1);
    assert_refused(res, StatusCode::TOO_MANY_REQUESTS, "too_many_active_jobs").await;
    // Nothing of the refused job was stored: still four markers.
    let markers = app
        .platform
        .blobs
        .list(&format!("clients/{client}/"), 100, None)
        .await
        .unwrap();
    assert_eq!(markers.items.len(), 4);
    // Another client is not held back.
    let other = Uuid::new_v4().to_string();
    let res = app
        .post_job_with(job_form(astronaut()), &[("x-client-id", &other)])
        .await;
    assert_eq!(res.status(), StatusCode::ACCEPTED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ended_job_frees_its_place_in_the_quota() {
    let app = spawn_app_with(
        WebSettings {
            max_active_jobs_per_client: 1,
            ..test_settings()
        },
        true,
    )
    .await;
    let client = Uuid::new_v4().to_string();
    for _ in 0..2 {
        let res = app
            .post_job_with(job_form(astronaut()), &[("x-client-id", &client)])
            .await;
        assert_eq!(res.status(), StatusCode::ACCEPTED);
        let id = res.json::<Value>().await.unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(app.wait_until_finished(&id).await["state"], "done");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_answers_507_and_not_ready_until_space_returns() {
    // The disk counts as full while less than `keep` is free: set half a gigabyte under what is
    // free now (other tests write too), then a file takes a gigabyte.
    let dir = tempfile::tempdir().unwrap();
    let stat = rustix::fs::statvfs(dir.path()).unwrap();
    let free = stat.f_bavail * stat.f_frsize;
    let mib = 1u64 << 20;
    assert!(
        free > 1536 * mib,
        "the test needs 1.5 GiB free, {free} bytes are"
    );
    let keep = free - 512 * mib;
    let storage = EmbeddedStorage::open_with(
        dir.path(),
        tessera_shared::storage::embedded::Durability::default(),
        keep,
    )
    .unwrap();
    let filler = dir.path().join("filler");
    let app = spawn_app_on(dir, storage, test_settings(), false).await;
    let client = Uuid::new_v4().to_string();
    let as_client = [("x-client-id", client.as_str())];
    let submit = || app.post_job_with(job_form(astronaut()), &as_client);
    assert_eq!(submit().await.status(), StatusCode::ACCEPTED);
    assert_eq!(app.readyz().await.status(), StatusCode::OK);

    let file = std::fs::File::create(&filler).unwrap();
    rustix::fs::fallocate(&file, rustix::fs::FallocateFlags::empty(), 0, 1024 * mib).unwrap();
    let res = submit().await;
    assert_eq!(res.headers()["retry-after"], "60");
    assert_eq!(
        error_code(res).await,
        (
            StatusCode::INSUFFICIENT_STORAGE,
            "insufficient_storage".into()
        )
    );
    let res = app.readyz().await;
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = res.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("full"), "{message}");

    // Space returns: so does the service, by itself.
    drop(file);
    std::fs::remove_file(&filler).unwrap();
    assert_eq!(submit().await.status(), StatusCode::ACCEPTED);
    assert_eq!(app.readyz().await.status(), StatusCode::OK);
}

/// Opens the job's event stream and reads its first event.
async fn open_stream(app: &TestApp, id: &str, client: &str) -> reqwest::Response {
    let mut res = app
        .client
        .get(app.url(&format!("/api/v1/jobs/{id}/events")))
        .header("x-client-id", client)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let first = res.chunk().await.unwrap().unwrap();
    assert!(first.starts_with(b"event: job"), "{first:?}");
    res
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_streams_of_one_job_share_one_poller_and_end_at_shutdown() {
    let poll = 100;
    let settings = WebSettings {
        events_poll_ms: poll,
        max_streams_per_client: 64,
        max_streams_per_address: 64,
        ..test_settings()
    };
    // No workers: the job stays queued, and its streams open.
    let app = spawn_app_with(settings, false).await;
    let id = app.submit(job_form(astronaut())).await;
    let client = Uuid::new_v4().to_string();
    let mut streams = Vec::new();
    for _ in 0..50 {
        streams.push(open_stream(&app, &id, &client).await);
    }
    assert_eq!(app.streams.counts(), (50, 1));

    let window = Duration::from_secs(3);
    let reads = |s: &tessera_shared::accounting::Snapshot| s.target_total("jobs");
    let before = reads(&app.platform.accounting.snapshot());
    tokio::time::sleep(window).await;
    let after = reads(&app.platform.accounting.snapshot());
    let per_minute = (after - before) * 60_000 / window.as_millis() as u64;
    // One poller: a read (head and get: two transactions at most) per poll interval.
    let one_poller = 2 * 60_000 / poll;
    assert!(
        per_minute <= one_poller,
        "{per_minute} record reads a minute"
    );
    eprintln!("50 event streams of one job: {per_minute} record reads a minute (poll {poll} ms)");

    // Shutdown ends every stream at once, rather than holding the stop for its grace period.
    app.streams.close();
    for mut stream in streams {
        let end = tokio::time::timeout(Duration::from_secs(5), async {
            while stream.chunk().await.unwrap().is_some() {}
        })
        .await;
        assert!(end.is_ok(), "a stream still open after the close");
    }
    let res = app.get_events(&id).await;
    assert_eq!(error_code(res).await.1, "shutting_down");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_streams_are_capped_per_client_and_in_all() {
    let settings = WebSettings {
        max_streams: 3,
        max_streams_per_client: 2,
        ..test_settings()
    };
    let app = spawn_app_with(settings, false).await;
    let id = app.submit(job_form(astronaut())).await;
    let (a, b, c) = (
        Uuid::new_v4().to_string(),
        Uuid::new_v4().to_string(),
        Uuid::new_v4().to_string(),
    );
    let _a1 = open_stream(&app, &id, &a).await;
    let _a2 = open_stream(&app, &id, &a).await;
    let refused = |client: String| {
        let app = &app;
        let id = id.clone();
        async move {
            let res = app
                .client
                .get(app.url(&format!("/api/v1/jobs/{id}/events")))
                .header("x-client-id", client)
                .send()
                .await
                .unwrap();
            assert!(res.headers().contains_key("retry-after"));
            error_code(res).await
        }
    };
    assert_eq!(
        refused(a.clone()).await,
        (StatusCode::TOO_MANY_REQUESTS, "too_many_streams".into())
    );
    let _b1 = open_stream(&app, &id, &b).await;
    assert_eq!(
        refused(c).await,
        (StatusCode::TOO_MANY_REQUESTS, "too_many_streams".into())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_that_submitted_a_job_may_cancel_it_while_it_runs() {
    let app = spawn_app().await;
    let owner = Uuid::new_v4();
    let id = app.queued_job(owner).await;
    let cancel = |client: Option<Uuid>| {
        let mut req = app
            .client
            .post(app.url(&format!("/api/v1/jobs/{id}/cancel")));
        if let Some(client) = client {
            req = req.header("X-Client-Id", client.to_string());
        }
        req.send()
    };
    // Another client, or none, may not.
    for client in [None, Some(Uuid::new_v4())] {
        assert_refused(
            cancel(client).await.unwrap(),
            StatusCode::FORBIDDEN,
            "not_your_job",
        )
        .await;
    }
    let res = cancel(Some(owner)).await.unwrap();
    assert_eq!(res.status(), 200);
    let job: Value = res.json().await.unwrap();
    assert_eq!(job["state"], "failed", "{job}");
    assert_eq!(job["error"], tessera_web::api::job_broker::CANCELLED);
    let stored: Value = app.get_job(&id.to_string()).await.json().await.unwrap();
    assert_eq!(stored["state"], "failed");
    // An ended job is not cancelled again; it may be deleted.
    assert_refused(
        cancel(Some(owner)).await.unwrap(),
        StatusCode::CONFLICT,
        "job_ended",
    )
    .await;
    let res = app
        .client
        .delete(app.url(&format!("/api/v1/jobs/{id}")))
        .header("X-Client-Id", owner.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 204);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn head_answers_wherever_get_does_with_the_headers_and_no_body() {
    let app = spawn_app().await;
    let id = app.submit(job_form(astronaut())).await;
    app.wait_until_finished(&id).await;
    for path in [
        "/".to_string(),
        "/libraries".to_string(),
        format!("/jobs/{id}"),
        format!("/api/v1/jobs/{id}"),
        format!("/api/v1/jobs/{id}/result"),
        format!("/api/v1/jobs/{id}/preview"),
        format!("/api/v1/jobs/{id}/tiles/0/0/0"),
        "/api/v1/libraries/emoji/sheet".to_string(),
        "/static/style.css".to_string(),
    ] {
        let get = app.get(&path).await;
        assert_eq!(get.status(), 200, "GET {path}");
        let get_type = get.headers()["content-type"].clone();
        let get_length = get.bytes().await.unwrap().len();
        let head = app.client.head(app.url(&path)).send().await.unwrap();
        assert_eq!(head.status(), 200, "HEAD {path}");
        assert_eq!(head.headers()["content-type"], get_type, "HEAD {path}");
        // Pages and job records may change between the two requests; files do not.
        let fixed = path.starts_with("/static/")
            || path.contains('.')
            || path.contains("/tiles/")
            || path.ends_with("/result")
            || path.ends_with("/preview")
            || path.ends_with("/sheet");
        if fixed {
            let length: usize = head.headers()["content-length"]
                .to_str()
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(length, get_length, "HEAD {path}: the GET's length");
        }
        assert!(
            head.bytes().await.unwrap().is_empty(),
            "HEAD {path} sent a body"
        );
    }
    // A range of the result, as a download manager asks before fetching.
    let head = app
        .client
        .head(app.url(&format!("/api/v1/jobs/{id}/result")))
        .header("Range", "bytes=0-99")
        .send()
        .await
        .unwrap();
    assert_eq!(head.status(), 206);
    assert_eq!(head.headers()["content-length"], "100");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_gets_an_error_page_in_words_and_the_api_keeps_json() {
    let app = spawn_app().await;
    let html = |path: &str| {
        app.client
            .get(app.url(path))
            .header("Accept", "text/html,application/xhtml+xml")
            .send()
    };
    for (path, says) in [
        ("/nonexistent", "There is no page at /nonexistent."),
        ("/jobs/not-a-job", "No job"),
        (
            "/jobs/00000000-0000-4000-8000-000000000000",
            "00000000-0000-4000-8000-000000000000",
        ),
    ] {
        let res = html(path).await.unwrap();
        assert_eq!(res.status(), 404, "{path}");
        assert!(
            res.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/html"),
            "{path}"
        );
        let body = res.text().await.unwrap();
        assert!(
            body.contains("<h1>Not found</h1>") && body.contains(says),
            "{path}: {body}"
        );
        assert!(body.contains("href=\"/\""), "{path}: a way back");
    }
    // The API answers JSON whatever the client accepts; so do pages asked for without HTML.
    let res = html("/api/v1/jobs/not-a-job").await.unwrap();
    assert_eq!(res.status(), 404);
    assert_eq!(res.headers()["content-type"], "application/json");
    let res = app.get("/nonexistent").await;
    assert_eq!(res.headers()["content-type"], "application/json");
}

/// A 4:3 library: uploaded with `shape`, shown with it, and its jobs take 4:3 tiles (24x18)
/// end to end; a square tile size on it, a 4:3 one on a square library and malformed sizes and
/// shapes are refused with a clear answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oblong_tiles_from_upload_to_a_done_job() {
    let app = spawn_app().await;
    let upload = |shape: &str| {
        let mut form = Form::new()
            .text("name", "Four by three")
            .text("shape", shape.to_string());
        for (name, bytes) in tiles(30) {
            form = form.part("files", Part::bytes(bytes).file_name(name));
        }
        form
    };
    // Malformed: 400; W:H but too elongated, or with a term over 16: 422.
    for (shape, status, code, says) in [
        ("4x3", 400, "invalid_parameter", "width:height"),
        ("9:1", 422, "shape_out_of_range", "elongated"),
        ("17:16", 422, "shape_out_of_range", "terms of 1 to 16"),
        ("0:1", 400, "invalid_parameter", "at least 1"),
    ] {
        let res = app.post_library(upload(shape)).await;
        assert_eq!(res.status().as_u16(), status, "{shape}");
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["error"]["code"], code);
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{shape}: {message}");
    }
    let res = app.post_library(upload("8:6")).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let created: Value = res.json().await.unwrap();
    assert_eq!(created["library"]["shape"], "4:3", "{created}");
    let got: Value = app.get_library("four-by-three").await.json().await.unwrap();
    assert_eq!(got["shape"], "4:3");
    let emoji: Value = app.get_library("emoji").await.json().await.unwrap();
    assert_eq!(emoji["shape"], "1:1");

    let form = |library: &str, tile_size: &str| {
        Form::new()
            .part("image", Part::bytes(astronaut()).file_name("astronaut.png"))
            .text("library", library.to_string())
            .text("tile_size", tile_size.to_string())
            .text("cells", "10")
            .text("slices", "2")
    };
    for (library, tile_size, status, code) in [
        (
            "four-by-three",
            "16",
            StatusCode::UNPROCESSABLE_ENTITY,
            "shape_mismatch",
        ),
        (
            "emoji",
            "24x18",
            StatusCode::UNPROCESSABLE_ENTITY,
            "shape_mismatch",
        ),
        (
            "four-by-three",
            "24x",
            StatusCode::BAD_REQUEST,
            "invalid_parameter",
        ),
        (
            "four-by-three",
            "24X18",
            StatusCode::BAD_REQUEST,
            "invalid_parameter",
        ),
        (
            "four-by-three",
            "24x300",
            StatusCode::BAD_REQUEST,
            "out_of_range",
        ),
    ] {
        let res = app.post_job(form(library, tile_size)).await;
        assert_eq!(res.status(), status, "{library} {tile_size}");
        let body: Value = res.json().await.unwrap();
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert_eq!(body["error"]["code"], code, "{library} {tile_size}: {body}");
        assert!(message.contains("tile_size"), "{message}");
        if code == "shape_mismatch" {
            assert!(
                message.contains("4:3") && message.contains("1:1"),
                "{message}"
            );
        }
    }

    let id = app.submit(form("four-by-three", "24x18")).await;
    let done = app.wait_until_finished(&id).await;
    assert_eq!(done["state"], "done", "{done}");
    assert_eq!(done["params"]["tile_size"], 24);
    assert_eq!(done["params"]["tile_height"], 18);
    // A square target in 4:3 cells: 10 across, 13 down.
    let output = &done["output"];
    assert_eq!(
        (output["cols"].as_u64(), output["rows"].as_u64()),
        (Some(10), Some(13))
    );
    assert_eq!(
        (output["width"].as_u64(), output["height"].as_u64()),
        (Some(240), Some(234))
    );
    let cell: Value = app
        .get(&format!("/api/v1/jobs/{id}/cells/2/3"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!((&cell["x"], &cell["y"]), (&72.into(), &36.into()), "{cell}");
    assert_eq!(
        (&cell["size"], &cell["height"]),
        (&24.into(), &18.into()),
        "{cell}"
    );
}

/// Transparent tiles are laid over the background the upload chooses (`#RRGGBB` as a browser's
/// colour input sends it, or `RRGGBB`), seen in the library's contact sheet; a colour that is not
/// one is refused in words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transparent_tiles_are_laid_over_the_chosen_background() {
    use image::ImageEncoder as _;

    let app = spawn_app().await;
    let mut clear = Vec::new();
    image::codecs::png::PngEncoder::new(&mut clear)
        .write_image(&[0u8; 32 * 32 * 4], 32, 32, image::ExtendedColorType::Rgba8)
        .unwrap();
    let upload = |name: &str, background: &str| {
        Form::new()
            .text("name", name.to_string())
            .text("background", background.to_string())
            .part("files", Part::bytes(clear.clone()).file_name("clear.png"))
    };
    let res = app.post_library(upload("Clear", "red")).await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["code"], "invalid_parameter");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("background"),
        "{body}"
    );
    for (name, background, colour) in [
        ("Clear red", "#ff0000", [255, 0, 0]),
        ("Clear teal", "008080", [0, 128, 128]),
    ] {
        let res = app.post_library(upload(name, background)).await;
        assert_eq!(res.status(), StatusCode::CREATED, "{background}");
        let created: Value = res.json().await.unwrap();
        assert_eq!(created["library"]["transparent"], true, "{created}");
        let id = created["library"]["id"].as_str().unwrap().to_string();
        let sheet = app.get(&format!("/api/v1/libraries/{id}/sheet")).await;
        assert_eq!(sheet.status(), StatusCode::OK);
        let sheet = image::load_from_memory(&sheet.bytes().await.unwrap())
            .unwrap()
            .to_rgb8();
        assert_eq!(sheet.get_pixel(16, 16).0, colour, "{background}");
    }
    // An opaque tile makes an opaque library.
    let mut opaque = Vec::new();
    image::codecs::png::PngEncoder::new(&mut opaque)
        .write_image(&[90u8; 32 * 32 * 3], 32, 32, image::ExtendedColorType::Rgb8)
        .unwrap();
    let form = Form::new()
        .text("name", "Opaque grey")
        .part("files", Part::bytes(opaque).file_name("grey.png"));
    let res = app.post_library(form).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let created: Value = res.json().await.unwrap();
    assert_eq!(created["library"]["transparent"], false, "{created}");
}

/// `POST /api/v1/sizing` answers the mosaic a job makes before the photo is sent: the same grid
/// and pixels as the finished job, the print in centimetres, and the submission's refusals
/// with the field to change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sizing_answers_what_the_job_makes_and_refuses_what_it_refuses() {
    let app = spawn_app().await;
    // The astronaut is 512 x 512.
    for (fields, form) in [
        (
            "tile_size=8&cells=12",
            sized_job_form(astronaut(), 8, 12, 1),
        ),
        (
            "tile_size=10&cells=7&slices=1",
            sized_job_form(astronaut(), 10, 7, 1),
        ),
    ] {
        let sizing: Value = sized(
            &app,
            &format!("width=512&height=512&library=emoji&{fields}"),
        )
        .await;
        let id = app.submit(form).await;
        let job = app.wait_until_finished(&id).await;
        assert_eq!(job["state"], "done", "{job}");
        for key in ["width", "height", "cols", "rows"] {
            assert_eq!(
                sizing[key], job["output"][key],
                "{key}: {sizing} against {job}"
            );
        }
        assert_eq!(sizing["large"], false);
        assert!(sizing["print"].is_null(), "{sizing}");
    }

    // On paper: 10 x 10 cm at 254 dpi is 1000 px a side; tiles of 100 px print 1 cm.
    let sizing: Value = sized(
        &app,
        "width=512&height=512&library=emoji&print=10x10cm@254dpi&tile_size=100",
    )
    .await;
    assert_eq!(sizing["cols"], 10, "{sizing}");
    assert_eq!(sizing["width"], 1000, "{sizing}");
    assert_eq!(sizing["print"]["width_cm"], 10.0, "{sizing}");
    assert_eq!(sizing["print"]["tile_cm"], 1.0, "{sizing}");
    assert_eq!(sizing["print"]["dpi"], 254, "{sizing}");

    // Sizes by name: the grid is the server's, for this photo and library, whatever the
    // fields say of it (the size's area, 6,144 px squared for a poster, in the photo's shape),
    // and every named size's figures come with any answer.
    let poster: Value = sized(
        &app,
        "width=4000&height=3000&library=emoji&tile_size=24x18&cells=7&size=poster",
    )
    .await;
    assert_eq!(
        (&poster["tile_size"], &poster["cols"], &poster["width"]),
        (&json!("32"), &json!(222), &json!(7104)),
        "{poster}"
    );
    let figures: Vec<(&str, u64)> = poster["sizes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["width"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        figures,
        [("screen", 2368), ("poster", 7104), ("print", 14208)],
        "{poster}"
    );
    // On paper, the tile prints about 1 cm at the print's resolution.
    let paper: Value = sized(
        &app,
        "width=512&height=512&library=emoji&print=A5@72dpi&size=paper",
    )
    .await;
    assert_eq!(
        (&paper["tile_size"], &paper["cols"], &paper["width"]),
        (&json!("29"), &json!(14), &json!(406)),
        "{paper}"
    );

    // A panorama keeps eight cells across its short side; one too long for that is refused,
    // saying what would do.
    let panorama: Value = sized(&app, "width=100&height=200000&library=emoji&size=screen").await;
    assert_eq!(panorama["cols"], 8, "{panorama}");
    let res = size(&app, "width=200000&height=100&library=emoji&size=screen").await;
    assert_eq!(res.status(), 422);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["field"], "size", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("crop it"),
        "{body}"
    );

    for (query, status, code, field) in [
        ("height=512", 400, "missing_parameter", None),
        (
            "width=512&height=512&size=huge",
            400,
            "invalid_parameter",
            Some("size"),
        ),
        ("width=0&height=512", 400, "invalid_parameter", None),
        (
            "width=512&height=512&colour=red",
            400,
            "unknown_field",
            None,
        ),
        (
            "width=512&height=512&cells=10&print=A4&library=emoji",
            422,
            "conflicting_parameters",
            Some("print"),
        ),
        (
            "width=512&height=512&tile_size=24x18&library=emoji",
            422,
            "shape_mismatch",
            Some("tile_size"),
        ),
        (
            "width=512&height=512&cells=4096&tile_size=256&library=emoji",
            422,
            "output_too_large",
            Some("cells"),
        ),
        (
            "width=512&height=512&library=no-such",
            422,
            "unknown_library",
            Some("library"),
        ),
    ] {
        let res = size(&app, query).await;
        assert_eq!(res.status().as_u16(), status, "{query}");
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["error"]["code"], code, "{query}: {body}");
        if let Some(field) = field {
            assert_eq!(body["error"]["field"], field, "{query}: {body}");
        }
    }
}

/// The answer to a sizing request with `body` as its form.
async fn sized(app: &TestApp, body: &str) -> Value {
    size(app, body).await.json().await.unwrap()
}

/// A sizing request with `body` as its form.
async fn size(app: &TestApp, body: &str) -> reqwest::Response {
    app.client
        .post(app.url("/api/v1/sizing"))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(body.to_string())
        .send()
        .await
        .unwrap()
}
