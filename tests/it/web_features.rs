//! The front end's optional API key, the libraries' contact sheets, the job's quality figures and
//! the processors the system page has seen, over real HTTP.

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
    TestApp, astronaut, job_form, no_redirect_client, spawn_app, spawn_app_with, test_settings,
};

pub(crate) const KEY: &str = "correct horse battery staple";

/// The web role alone (no workers) with an API key, and a client that does not follow redirects.
pub(crate) async fn spawn_keyed_app() -> TestApp {
    spawn_keyed_app_with(false).await
}

/// [`spawn_keyed_app`], with a controller and a processor too when `workers`.
async fn spawn_keyed_app_with(workers: bool) -> TestApp {
    let settings = WebSettings {
        port: 0,
        workers: 1,
        api_key: ApiKey::new(KEY),
        // The test client stands for a proxy: what it forwards names the client's address.
        trusted_proxies: vec!["127.0.0.1".parse().unwrap()],
        ..WebSettings::default()
    };
    let mut app = spawn_app_with(settings, workers).await;
    app.client = no_redirect_client();
    app
}

async fn error_code(res: reqwest::Response) -> String {
    let body: Value = res.json().await.unwrap();
    body["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_key_configured_every_call_needs_it() {
    let app = spawn_keyed_app().await;

    // Health checks and assets stay open.
    for path in ["/healthz", "/readyz", "/static/style.css", "/signin"] {
        assert_eq!(app.get(path).await.status(), 200, "{path}");
    }

    // API calls: no key, a wrong key, the right key in either header.
    let mut failures = 0;
    for path in [
        "/api/v1/libraries",
        "/api/v1/queues",
        "/api/v1/openapi.json",
    ] {
        let res = app.get(path).await;
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{path}");
        assert!(
            res.headers()["www-authenticate"]
                .to_str()
                .unwrap()
                .starts_with("Bearer"),
        );
        assert_eq!(error_code(res).await, "unauthorized");
        // Wrong keys count against the address: five are answered 401, then 429 (a guesser
        // is slowed, and told so) ...
        for wrong in [
            ("Authorization", "Bearer not-the-key"),
            ("X-API-Key", "not-the-key"),
            ("Authorization", "Bearer correct horse battery stapl"),
            ("X-API-Key", ""),
        ] {
            failures += 1;
            // From one client behind the proxy, whose guesses lock no one else out.
            let res = app
                .get_with(path, &[wrong, ("X-Forwarded-For", "203.0.113.9")])
                .await;
            let (status, code) = if failures <= 5 {
                (401, "unauthorized")
            } else {
                (429, "too_many_failed_keys")
            };
            assert_eq!(res.status(), status, "{path} with {wrong:?}");
            assert_eq!(error_code(res).await, code);
        }
        // ... while the right key is let in all along.
        let bearer = format!("Bearer {KEY}");
        for right in [("Authorization", bearer.as_str()), ("X-API-Key", KEY)] {
            let res = app.get_with(path, &[right]).await;
            assert_eq!(res.status(), 200, "{path} with {:?}", right.0);
        }
    }
    let bearer = format!("Bearer {KEY}");
    let sheet = app
        .get_with(
            "/api/v1/libraries/emoji/sheet",
            &[("Authorization", &bearer)],
        )
        .await;
    assert_eq!(sheet.status(), 200);
    assert!(
        sheet.headers()["cache-control"]
            .to_str()
            .unwrap()
            .starts_with("private")
    );

    // A browser asking for a page is sent to sign in, and back afterwards.
    let res = app.get("/libraries").await;
    assert_eq!(res.status(), 303);
    assert_eq!(res.headers()["location"], "/signin?next=/libraries");
    let res = app.get("/jobs?page=2").await;
    assert_eq!(res.headers()["location"], "/signin?next=/jobs%3Fpage%3D2");
    let form = app.get("/signin?next=/libraries").await;
    let form = form.text().await.unwrap();
    assert!(
        form.contains(r#"<label for="key">API key</label>"#),
        "{form}"
    );
    assert!(form.contains(r#"name="next" value="/libraries""#), "{form}");

    let sign_in = |key: &'static str, origin: Option<String>| {
        let mut req = app
            .client
            .post(app.url("/signin"))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(format!("key={}&next=%2Flibraries", key.replace(' ', "+")));
        if let Some(origin) = origin {
            req = req.header("Origin", origin);
        }
        req.send()
    };
    // A form posted from another site is refused, whatever it holds.
    let res = sign_in(KEY, Some("http://evil.example".into()))
        .await
        .unwrap();
    assert_eq!(res.status(), 403);
    assert!(res.headers().get("set-cookie").is_none());
    let res = sign_in(KEY, None).await.unwrap();
    assert_eq!(res.status(), 403);
    // A wrong key shows the form again with the reason.
    let res = sign_in("guess", Some(app.address.clone())).await.unwrap();
    assert_eq!(res.status(), 401);
    assert!(res.headers().get("set-cookie").is_none());
    assert!(res.text().await.unwrap().contains(r#"role="alert""#));
    // The right key: a session cookie (a MAC, not the key), then back where the browser was.
    let res = sign_in(KEY, Some(app.address.clone())).await.unwrap();
    assert_eq!(res.status(), 303);
    assert_eq!(res.headers()["location"], "/libraries");
    let set_cookie = res.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(set_cookie.starts_with("tessera_session="), "{set_cookie}");
    assert!(set_cookie.contains("HttpOnly"), "{set_cookie}");
    assert!(set_cookie.contains("SameSite=Strict"), "{set_cookie}");
    assert!(
        !set_cookie.contains("horse"),
        "the cookie holds a MAC, not the key"
    );
    let session = set_cookie.split(';').next().unwrap().to_string();

    let with_cookie = [("Cookie", session.as_str())];
    for path in ["/", "/libraries", "/system", "/jobs", "/api"] {
        let res = app.get_with(path, &with_cookie).await;
        assert_eq!(res.status(), 200, "{path} with the session cookie");
    }
    let res = app.get_with("/api/v1/libraries", &with_cookie).await;
    assert_eq!(res.status(), 200);
    // The pages' scripts post with the cookie too.
    let res = app
        .post_job_with(
            job_form(astronaut()),
            &[with_cookie[0], ("X-Requested-With", "tessera")],
        )
        .await;
    assert_eq!(res.status(), 202);
    // A forged or altered cookie is no session.
    let mut forged = session.clone();
    let last = forged.pop().unwrap();
    forged.push(if last == '0' { '1' } else { '0' });
    let res = app
        .get_with("/api/v1/libraries", &[("Cookie", forged.as_str())])
        .await;
    assert_eq!(res.status(), 401);
    let res = app
        .get_with(
            "/api/v1/libraries",
            &[("Cookie", &format!("tessera_session={KEY}"))],
        )
        .await;
    assert_eq!(res.status(), 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_key_everything_stays_open() {
    let app = spawn_app().await;
    for path in [
        "/",
        "/libraries",
        "/system",
        "/api/v1/libraries",
        "/api/v1/system",
    ] {
        assert_eq!(app.get(path).await.status(), 200, "{path}");
    }
    // Nothing to sign in to: the sign-in page goes straight on.
    let res = no_redirect_client()
        .get(app.url("/signin?next=/jobs"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 303);
    assert_eq!(res.headers()["location"], "/jobs");
}

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
async fn behind_a_key_cookies_need_this_site_images_stay_private_and_sign_in_is_limited() {
    let app = spawn_keyed_app_with(true).await;
    let origin = app.address.clone();
    let sign_in = |key: &'static str| {
        app.client
            .post(app.url("/signin"))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .header("Origin", origin.clone())
            .body(format!("key={}", key.replace(' ', "+")))
            .send()
    };
    let session_of = |res: reqwest::Response| {
        let cookie = res.headers()["set-cookie"].to_str().unwrap().to_string();
        cookie.split(';').next().unwrap().to_string()
    };
    let session = session_of(sign_in(KEY).await.unwrap());
    // Each sign-in is a session of its own: a random token, never the key nor a value shared.
    let other = session_of(sign_in(KEY).await.unwrap());
    assert_ne!(session, other);
    assert!(!session.contains(KEY) && session.len() > 60, "{session}");

    // A post carrying only the session cookie must come from this site too.
    let res = app
        .post_job_with(job_form(astronaut()), &[("Cookie", &session)])
        .await;
    assert_eq!(res.status(), 403);
    assert_eq!(error_code(res).await, "cross_site_request");
    let res = app
        .post_job_with(
            job_form(astronaut()),
            &[("Cookie", &session), ("X-Requested-With", "tessera")],
        )
        .await;
    assert_eq!(res.status(), 202);
    let id = res.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();

    // The mosaic's images are for this browser's cache only.
    let with_cookie = [("Cookie", session.as_str())];
    for _ in 0..1200 {
        let job: Value = app
            .get_with(&format!("/api/v1/jobs/{id}"), &with_cookie)
            .await
            .json()
            .await
            .unwrap();
        if job["state"] == "done" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    for path in ["result", "preview", "tiles/0/0/0"] {
        let res = app
            .get_with(&format!("/api/v1/jobs/{id}/{path}"), &with_cookie)
            .await;
        assert_eq!(res.status(), 200, "{path}");
        let cache = res.headers()["cache-control"].to_str().unwrap();
        assert!(
            cache.starts_with("private") && !cache.contains("public"),
            "{path}: {cache}"
        );
    }

    // Sign-out: from this site only; the cookie goes.
    let res = app
        .client
        .post(app.url("/signout"))
        .header("Cookie", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 403);
    let res = app
        .client
        .post(app.url("/signout"))
        .header("Cookie", &session)
        .header("Origin", origin.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 303);
    assert_eq!(res.headers()["location"], "/signin");
    let gone = res.headers()["set-cookie"].to_str().unwrap();
    assert!(
        gone.starts_with("tessera_session=;") && gone.contains("Max-Age=0"),
        "{gone}"
    );

    // Signed out, the session is over: its token no longer opens anything.
    let res = app
        .get_with("/api/v1/queues", &[("Cookie", &session)])
        .await;
    assert_eq!(res.status(), 401, "a session must end at sign-out");

    // Wrong keys: five are answered, then the address waits; the right key still signs in
    // (someone else behind the same address is not locked out by the guesses).
    for _ in 0..5 {
        assert_eq!(sign_in("guess").await.unwrap().status(), 401);
    }
    let res = sign_in("guess").await.unwrap();
    assert_eq!(res.status(), 429);
    let wait: u64 = res.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    assert_eq!(error_code(res).await, "too_many_failed_keys");
    assert_eq!(sign_in(KEY).await.unwrap().status(), 303);
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
    assert_eq!(error_code(res).await, "unknown_library");
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
    assert_eq!(error_code(res).await, "webhook_not_allowed");
    let res = app
        .post_job(job_form(astronaut()).text("webhook", "ftp://127.0.0.1/x"))
        .await;
    assert_eq!(error_code(res).await, "invalid_webhook");

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
    let unix: i64 = signature
        .strip_prefix("t=")
        .and_then(|s| s.split(',').next())
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        signature,
        tessera_web::background::webhook::signature(secret, unix, body)
    );
    assert_ne!(
        signature,
        tessera_web::background::webhook::signature("another secret", unix, body)
    );
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
