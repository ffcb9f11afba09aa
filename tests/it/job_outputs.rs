//! What a job gives besides its mosaic, over real HTTP: a library's contact sheet made once,
//! the quality figures (and the processors the System page has seen), a preview that stores
//! nothing, the completion webhook, and result downloads as read-only links.

use bytes::Bytes;
use reqwest::StatusCode;
use serde_json::Value;
use tessera_shared::accounting::Op;
use tessera_shared::jobs::JobQuality;
use tessera_shared::keys::BlobKey;
use tessera_shared::storage::{BlobStoreExt, PutMode};
use tessera_web::WebSettings;
use tessera_web::web_settings::ApiKey;
use uuid::Uuid;

use crate::support::{
    TestApp, astronaut, error_code, job_form, no_redirect_client, spawn_app, spawn_app_with,
    test_settings,
};

fn reads(snapshot: &tessera_shared::accounting::Snapshot, target: &str, op: Op) -> u64 {
    snapshot
        .by_target
        .get(target)
        .and_then(|ops| ops.get(&op))
        .copied()
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_library_sheet_is_made_once_and_served_from_its_blob() {
    let app = spawn_app().await;
    let library: Value = app
        .get("/api/v1/libraries/emoji")
        .await
        .json()
        .await
        .unwrap();
    let tiles = library["tiles"].as_u64().unwrap() as u32;
    let version = library["version"].as_u64().unwrap() as u32;
    let shown = tiles.min(96);
    let rows = shown.div_ceil(12);
    let (width, height) = (shown.div_ceil(rows) * 32, rows * 32);
    let kept = BlobKey::LibrarySheet {
        library: "emoji".into(),
        version,
    }
    .path();
    assert!(!app.platform.blobs.exists(&kept).await.unwrap());

    let first = app.get("/api/v1/libraries/emoji/sheet").await;
    assert_eq!(first.status(), 200);
    assert_eq!(first.headers()["content-type"], "image/png");
    let etag = first.headers()["etag"].to_str().unwrap().to_string();
    assert!(etag.contains(&format!("v{version}")), "{etag}");
    let first: Bytes = first.bytes().await.unwrap();
    let image = image::load_from_memory_with_format(&first, image::ImageFormat::Png).unwrap();
    assert_eq!((image.width(), image.height()), (width, height));
    // Not one flat colour: tiles were drawn.
    let rgb = image.to_rgb8();
    let distinct: std::collections::HashSet<_> = rgb.pixels().map(|p| p.0).collect();
    assert!(distinct.len() > 50, "{} colours", distinct.len());
    assert!(app.platform.blobs.exists(&kept).await.unwrap());

    // The second time: the kept blob, not the index (a read of the catalogue record only).
    let before = app.platform.accounting.snapshot();
    let second = app.get("/api/v1/libraries/emoji/sheet").await;
    assert_eq!(second.status(), 200);
    let second = second.bytes().await.unwrap();
    let spent = app.platform.accounting.snapshot().since(&before);
    assert_eq!(second, first);
    assert_eq!(reads(&spent, "librarysheets", Op::BlobRead), 1, "{spent:?}");
    assert_eq!(
        reads(&spent, "librarysheets", Op::BlobWrite),
        0,
        "{spent:?}"
    );
    assert_eq!(reads(&spent, "libraries", Op::BlobRead), 1, "{spent:?}");

    // Caching: a held ETag is not sent again; a URL naming the version is immutable.
    let res = app
        .get_with("/api/v1/libraries/emoji/sheet", &[("If-None-Match", &etag)])
        .await;
    assert_eq!(res.status(), 304);
    let res = app
        .get(&format!("/api/v1/libraries/emoji/sheet?version={version}"))
        .await;
    assert_eq!(res.status(), 200);
    assert!(
        res.headers()["cache-control"]
            .to_str()
            .unwrap()
            .contains("immutable")
    );
    assert_eq!(res.bytes().await.unwrap(), first);
    assert_eq!(
        app.get("/api/v1/libraries/no-such-library/sheet")
            .await
            .status(),
        404
    );
    assert_eq!(
        app.get("/api/v1/libraries/emoji/sheet?version=99")
            .await
            .status(),
        404
    );

    // The pages show it: a strip on the home page, a sheet per library on the libraries page.
    let home = app.get("/").await.text().await.unwrap();
    assert!(
        home.contains(&format!(
            r#"id="sample-strip" src="/api/v1/libraries/emoji/sheet?version={version}""#
        )),
        "{home}"
    );
    assert!(home.contains(r#"alt="Sample tiles of emoji""#), "{home}");
    let libraries = app.get("/libraries").await.text().await.unwrap();
    assert!(
        libraries.contains(&format!(
            r#"<img src="/api/v1/libraries/emoji/sheet?version={version}" width="{width}" height="{height}""#
        )),
        "{libraries}"
    );
    assert!(libraries.contains("alt=\"Contact sheet of emoji"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quality_figures_and_the_processors_seen() {
    let app = spawn_app().await;
    let id = app.submit(job_form(astronaut())).await;
    let done = app.wait_until_finished(&id).await;
    assert_eq!(done["state"], "done", "{done}");
    assert!(done.as_object().unwrap().contains_key("quality"), "{done}");

    // Until the controller records figures the page has no quality section to show.
    let job_id = Uuid::parse_str(&id).unwrap();
    let recorded = app.platform.jobs().get(job_id).await.unwrap().quality;
    if recorded.is_none() {
        let page = app.get(&format!("/jobs/{id}")).await.text().await.unwrap();
        assert!(
            page.contains(
                r#"<section id="quality" class="card" aria-labelledby="quality-title" hidden>"#
            ),
            "{page}"
        );
    }
    let quality = JobQuality {
        de00_mean: 4.25125,
        de00_p95: 7.5,
        ssim_view: Some(0.71),
        distinct: 17,
        library_tiles: 40,
        min_uses: 0,
        max_uses: 9,
        overlay: None,
        dup_r1: 0.125,
        dup_r5: 0.5,
        background: Some("000000".into()),
    };
    app.platform
        .jobs()
        .update(job_id, |r| {
            r.quality = Some(quality.clone());
            true
        })
        .await
        .unwrap();
    let view: Value = app
        .get(&format!("/api/v1/jobs/{id}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(view["quality"]["de00_mean"], 4.25125);
    assert_eq!(view["quality"]["distinct"], 17);
    assert_eq!(view["quality"]["dup_r5"], 0.5);
    assert_eq!(view["quality"]["ssim_view"], 0.71);
    assert_eq!(view["quality"]["background"], "000000");
    let page = app.get(&format!("/jobs/{id}")).await.text().await.unwrap();
    assert!(
        page.contains(r#"<details id="quality" class="card fold" open>"#),
        "{page}"
    );
    // The card the page's script shows when the figures land is the page's own, formatted once.
    let res = app.get(&format!("/jobs/{id}/quality")).await;
    assert_eq!(res.status(), StatusCode::OK);
    let card = res.text().await.unwrap();
    let start = page.find(r#"<details id="quality""#).unwrap();
    let end = start + page[start..].find("</details>").unwrap();
    assert_eq!(card.trim(), page[start..end + "</details>".len()].trim());
    let res = app.get(&format!("/jobs/{}/quality", Uuid::new_v4())).await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    for shown in [
        r#"<dt>Mean colour difference (CIEDE2000)</dt><dd id="q-de00-mean">4.25</dd>"#,
        r#"<dd id="q-de00-p95">7.50</dd>"#,
        r#"<dt>Likeness from afar (SSIM)</dt><dd id="q-ssim-view">0.710</dd>"#,
        r#"<dt>Distinct tiles used, of the library's</dt><dd id="q-distinct">17 of 40</dd>"#,
        r#"<dt>Fewest uses of one tile (0: some photos are left out)</dt><dd id="q-min-uses">0</dd>"#,
        r#"<dt>Most uses of one tile</dt><dd id="q-max-uses">9</dd>"#,
        r#"<dd id="q-dup-r1">12.5 %</dd>"#,
        r#"<dd id="q-dup-r5">50.0 %</dd>"#,
        r#"<dt id="q-background-term">Transparent tiles laid over</dt><dd id="q-background">#000000</dd>"#,
    ] {
        assert!(page.contains(shown), "the job page lacks {shown}");
    }

    // The test processor ("test") rendered the job's three slices.
    let registration = format!(
        "nudges/listeners/slicerequest/{}_127.0.0.1_9",
        Uuid::new_v4()
    );
    app.platform
        .blobs
        .put(&registration, Bytes::from_static(b"{}"), PutMode::Overwrite)
        .await
        .unwrap();
    let system: Value = app.get("/api/v1/system").await.json().await.unwrap();
    let processors = system["processors"].as_array().unwrap();
    let test = processors
        .iter()
        .find(|p| p["id"] == "test")
        .unwrap_or_else(|| panic!("no processor test in {system}"));
    assert_eq!(test["slices"], 3, "{system}");
    assert!(test["slots"].as_u64().unwrap() >= 1);
    let last_seen = time::OffsetDateTime::parse(
        test["last_seen"].as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    assert!(time::OffsetDateTime::now_utc() - last_seen < time::Duration::minutes(5));
    assert!(system["jobs_read"].as_u64().unwrap() >= 1);
    assert_eq!(system["window_minutes"], 60);
    let listener = registration
        .rsplit('/')
        .next()
        .unwrap()
        .split('_')
        .next()
        .unwrap();
    assert!(
        system["slice_listeners"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["listener"] == listener),
        "{system}"
    );

    let page = app.get("/system").await.text().await.unwrap();
    assert!(page.contains("Processors seen recently"), "{page}");
    assert!(page.contains("<td><code>test</code></td>"), "{page}");
    assert!(page.contains(&format!("<code>{listener}</code>")), "{page}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preview_shows_the_jobs_grid_and_stores_nothing() {
    let app = crate::support::spawn_app_with(crate::support::test_settings(), false).await;
    let stored = |app: &TestApp| {
        let blobs = app.platform.blobs.clone();
        async move {
            let mut n = 0;
            for prefix in ["jobs/", "imageinput/", "activejobs/", "clients/"] {
                n += blobs
                    .list(prefix, 1000, None)
                    .await
                    .map_or(0, |p| p.items.len());
            }
            n
        }
    };
    let before = stored(&app).await;
    let res = app
        .client
        .post(app.url("/api/v1/previews"))
        .multipart(job_form(astronaut()))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["content-type"], "image/jpeg");
    // The job's own grid: 12 cells across the square astronaut.
    assert_eq!(res.headers()["x-preview-cells"], "12x12");
    assert_eq!(res.headers()["x-mosaic-size"], "96x96");
    let jpeg = res.bytes().await.unwrap();
    let img = image::load_from_memory(&jpeg).unwrap();
    // Twelve cells of 32 px, the largest a preview draws.
    assert_eq!((img.width(), img.height()), (384, 384));
    assert_eq!(stored(&app).await, before, "a preview stores nothing");
    // Refused as the job would be.
    let res = app
        .client
        .post(app.url("/api/v1/previews"))
        .multipart(
            reqwest::multipart::Form::new()
                .part(
                    "image",
                    reqwest::multipart::Part::bytes(astronaut()).file_name("a.png"),
                )
                .text("library", "no-such-library"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(res).await.1, "unknown_library");
}

/// A job's webhook is called when it ends, with a body signed by HMAC-SHA256 under the
/// operator's secret; a host off the allow-list is refused at the door, and a webhook on a
/// service with webhooks off too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_calls_its_webhook_with_a_signed_body() {
    use tokio::io::AsyncWriteExt;
    // The receiver: answers 500 to the first call (the sender retries) and 200 to the next.
    let receiver = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = receiver.local_addr().unwrap().port();
    let (calls_tx, mut calls) = tokio::sync::mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        for status in ["500 Internal Server Error", "200 OK"] {
            let (mut socket, _) = receiver.accept().await.unwrap();
            let request = crate::support::read_http_request(&mut socket).await;
            let reply =
                format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
            socket.write_all(reply.as_bytes()).await.unwrap();
            calls_tx.send(request).unwrap();
        }
    });

    let secret = "whsec-test-secret";
    let mut settings = test_settings();
    settings.webhooks.secret = ApiKey::new(secret);
    settings.webhooks.allow = vec![format!("127.0.0.1:{port}")];
    settings.webhooks.allow_private = true;
    let app = spawn_app_with(settings, true).await;
    let hook = format!("http://127.0.0.1:{port}/hooks/tessera");

    // Off the allow-list: refused at the door.
    let res = app
        .post_job(job_form(astronaut()).text("webhook", "http://127.0.0.1:1/elsewhere"))
        .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(error_code(res).await.1, "webhook_not_allowed");
    let res = app
        .post_job(job_form(astronaut()).text("webhook", "ftp://127.0.0.1/x"))
        .await;
    assert_eq!(error_code(res).await.1, "invalid_webhook");

    let id = app
        .submit(job_form(astronaut()).text("webhook", hook.clone()))
        .await;
    app.wait_until_finished(&id).await;
    let first = tokio::time::timeout(std::time::Duration::from_secs(30), calls.recv())
        .await
        .unwrap()
        .unwrap();
    let second = tokio::time::timeout(std::time::Duration::from_secs(30), calls.recv())
        .await
        .unwrap()
        .unwrap();
    for request in [&first, &second] {
        assert!(
            request.starts_with("POST /hooks/tessera HTTP/1.1"),
            "{request}"
        );
    }
    let (head, body) = second.split_once("\r\n\r\n").unwrap();
    let header = |name: &str| {
        head.lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
            })
            .unwrap_or_else(|| panic!("no {name} in {head}"))
    };
    assert_eq!(header("Tessera-Event"), "job.done");
    assert_eq!(header("Tessera-Delivery"), format!("{id}/job.done"));
    let signature = header("Tessera-Signature");
    crate::support::assert_signed(&signature, secret, body);
    let event: Value = serde_json::from_str(body).unwrap();
    assert_eq!(event["specversion"], "1.0");
    assert_eq!(event["id"], format!("{id}/job.done"));
    assert_eq!(event["type"], "io.tessera.job.done");
    let payload = &event["data"];
    assert_eq!(payload["job_id"], id.as_str());
    assert_eq!(payload["state"], "done");
    assert_eq!(
        payload["result_url"],
        format!("{}/api/v1/jobs/{id}/result", app.address)
    );
    assert!(payload["width"].as_u64().unwrap() > 0, "{payload}");

    // A service with webhooks off refuses a job that asks for one.
    let off = spawn_app_with(test_settings(), false).await;
    let res = off
        .post_job(job_form(astronaut()).text("webhook", hook))
        .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
}

/// With `web.result_link_secs`, a result download on Azure is a redirect to a link that reads
/// that blob alone, straight from storage, named and typed; storage refuses the same signature
/// on any other blob. The embedded backend cannot sign links and streams as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn result_downloads_redirect_to_a_read_only_link_to_that_blob_alone() {
    let settings = WebSettings {
        result_link_secs: 300,
        ..test_settings()
    };
    let mut app = crate::support::spawn_app_on_azurite_with(settings.clone()).await;
    app.client = no_redirect_client();
    let id = app.submit(job_form(astronaut())).await;
    let job = app.wait_until_finished(&id).await;
    assert_eq!(job["state"], "done", "{job:#}");

    let redirect = app.get_result(&id, &[]).await;
    assert_eq!(redirect.status(), StatusCode::FOUND);
    assert_eq!(redirect.headers()["cache-control"], "private, no-store");
    let link = redirect.headers()["location"].to_str().unwrap().to_string();
    let job_id: Uuid = id.parse().unwrap();
    assert!(
        link.contains(&BlobKey::ImageOutput { job: job_id }.path()) && link.contains("sp=r"),
        "{link}"
    );
    let direct = reqwest::get(&link).await.unwrap();
    assert_eq!(direct.status(), 200, "{link}");
    assert_eq!(direct.headers()["content-type"], "image/png");
    let disposition = direct.headers()["content-disposition"].to_str().unwrap();
    assert!(
        disposition.contains("filename=\"astronaut-mosaic.png\""),
        "{disposition}"
    );
    let bytes = direct.bytes().await.unwrap();
    image::load_from_memory_with_format(&bytes, image::ImageFormat::Png).expect("the mosaic");

    // The signature covers that blob only: the job's record next to it is refused.
    let record = link.replace(
        &BlobKey::ImageOutput { job: job_id }.path(),
        &BlobKey::JobRecord { job: job_id }.path(),
    );
    assert_eq!(reqwest::get(&record).await.unwrap().status(), 403);
    drop(app);

    let mut embedded = spawn_app_with(settings, true).await;
    embedded.client = no_redirect_client();
    let id = embedded.submit(job_form(astronaut())).await;
    embedded.wait_until_finished(&id).await;
    let streamed = embedded.get_result(&id, &[]).await;
    assert_eq!(streamed.status(), 200);
    assert_eq!(streamed.headers()["content-type"], "image/png");
}
