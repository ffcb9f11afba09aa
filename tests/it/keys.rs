//! The front end's optional keys, over real HTTP: with a key configured every call needs it
//! (and browsers sign in), without one everything stays open; cookies need this site, images
//! stay private, and failed sign-ins are limited.

use reqwest::StatusCode;
use serde_json::Value;
use tessera_web::WebSettings;
use tessera_web::web_settings::ApiKey;

use crate::support::{
    TestApp, astronaut, error_code, job_form, no_redirect_client, spawn_app, spawn_app_with,
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
        assert_eq!(error_code(res).await.1, "unauthorized");
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
            assert_eq!(error_code(res).await.1, code);
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
    assert_eq!(error_code(res).await.1, "cross_site_request");
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
    let job = app.wait_until_finished_with(&id, &with_cookie).await;
    assert_eq!(job["state"], "done", "{job}");
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
    assert_eq!(error_code(res).await.1, "too_many_failed_keys");
    assert_eq!(sign_in(KEY).await.unwrap().status(), 303);
}
