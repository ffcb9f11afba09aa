//! The service as an attacker tries it: libraries belong to someone, uploads stay within bounds,
//! quotas hold under parallel submissions, stalled bodies are cut off, a forged message points
//! nowhere else, and a malformed archive is the archive's fault.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::multipart::{Form, Part};
use serde_json::Value;
use sha2::Digest;
use uuid::Uuid;

use tessera_shared::messages::{Envelope, ImageResponse, JobOutcome, QueueName};
use tessera_shared::storage::embedded::{Durability, EmbeddedStorage};
use tessera_web::WebSettings;
use tessera_web::web_settings::ApiKey;

use crate::support::{
    Leftovers, TestApp, astronaut, eventually, job_ended_at, job_form, no_redirect_client,
    spawn_app_on, spawn_app_with, test_settings, tiles, wait_for, zip_of,
};

/// A library upload of a few fixture tiles named `name`, with extra text fields.
fn library_form(name: &str, fields: &[(&str, &str)]) -> Form {
    let mut form = Form::new().text("name", name.to_string());
    for (k, v) in fields {
        form = form.text(k.to_string(), v.to_string());
    }
    for (file, bytes) in tiles(12) {
        form = form.part("files", Part::bytes(bytes).file_name(file));
    }
    form
}

async fn code(res: reqwest::Response) -> (u16, String) {
    let status = res.status().as_u16();
    let body: Value = res.json().await.unwrap_or_default();
    let code = body["error"]["code"].as_str().unwrap_or_default();
    (status, code.to_string())
}

impl TestApp {
    async fn send_as(
        &self,
        method: reqwest::Method,
        path: &str,
        client: &str,
    ) -> reqwest::Response {
        self.client
            .request(method, self.url(path))
            .header("X-Client-Id", client)
            .send()
            .await
            .unwrap()
    }

    async fn library_ids_seen_by(&self, client: &str) -> Vec<String> {
        let list: Value = self
            .send_as(reqwest::Method::GET, "/api/v1/libraries", client)
            .await
            .json()
            .await
            .unwrap();
        list["libraries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["id"].as_str().unwrap().to_string())
            .collect()
    }

    async fn job_on(&self, library: &str, client: &str) -> reqwest::Response {
        let form = Form::new()
            .part("image", Part::bytes(astronaut()).file_name("astronaut.png"))
            .text("library", library.to_string())
            .text("tile_size", "8")
            .text("cells", "12");
        self.post_job_with(form, &[("X-Client-Id", client)]).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_library_is_its_owners_to_replace_delete_and_share() {
    // No workers: jobs stay active, holding their library.
    let app = spawn_app_with(test_settings(), false).await;
    let (alice, bob) = (Uuid::new_v4().to_string(), Uuid::new_v4().to_string());

    let res = app
        .post_library_as(
            library_form("Alice Tiles", &[("visibility", "private")]),
            &alice,
        )
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let created: Value = res.json().await.unwrap();
    assert_eq!(created["library"]["visibility"], "private");
    let owner = created["library"]["owner"].as_str().unwrap();
    assert!(
        owner.starts_with("client:") && !owner.contains(&alice),
        "{owner}"
    );

    // Bob neither sees, nor uses, nor replaces, nor deletes Alice's private library.
    assert!(
        !app.library_ids_seen_by(&bob)
            .await
            .contains(&"alice-tiles".into())
    );
    assert!(!app.library_ids_seen_by(&alice).await.is_empty());
    for path in [
        "/api/v1/libraries/alice-tiles",
        "/api/v1/libraries/alice-tiles/sheet",
    ] {
        let res = app.send_as(reqwest::Method::GET, path, &bob).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{path}");
        assert_eq!(
            app.get(path).await.status(),
            StatusCode::NOT_FOUND,
            "{path}"
        );
    }
    let res = app
        .post_library_as(library_form("ALICE tiles!!", &[("replace", "true")]), &bob)
        .await;
    assert_eq!(code(res).await, (403, "not_library_owner".into()));
    let res = app
        .send_as(
            reqwest::Method::DELETE,
            "/api/v1/libraries/alice-tiles",
            &bob,
        )
        .await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let res = app.job_on("alice-tiles", &bob).await;
    assert_eq!(code(res).await, (422, "unknown_library".into()));
    let got: Value = app
        .send_as(
            reqwest::Method::GET,
            "/api/v1/libraries/alice-tiles",
            &alice,
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(got["version"], 1, "the library is unchanged");

    // A shared library: everyone sees it and makes mosaics of it; only its owner changes it.
    let res = app
        .post_library_as(
            library_form("Alice Shared", &[("visibility", "shared")]),
            &alice,
        )
        .await;
    assert_eq!(res.status(), StatusCode::CREATED);
    assert!(
        app.library_ids_seen_by(&bob)
            .await
            .contains(&"alice-shared".into())
    );
    assert_eq!(
        app.job_on("alice-shared", &bob).await.status(),
        StatusCode::ACCEPTED
    );
    let res = app
        .post_library_as(library_form("Alice Shared", &[("replace", "true")]), &bob)
        .await;
    assert_eq!(code(res).await, (403, "not_library_owner".into()));
    let res = app
        .send_as(
            reqwest::Method::DELETE,
            "/api/v1/libraries/alice-shared",
            &bob,
        )
        .await;
    assert_eq!(code(res).await, (403, "not_library_owner".into()));

    // The operator's default library: nobody replaces it over HTTP without the operator's key.
    let res = app
        .post_library_as(
            library_form("EMOJI", &[("replace", "true"), ("shape", "4:3")]),
            &bob,
        )
        .await;
    assert_eq!(code(res).await, (403, "not_library_owner".into()));
    let emoji: Value = app.get_library("emoji").await.json().await.unwrap();
    assert_eq!(
        (emoji["version"].as_u64(), emoji["shape"].as_str()),
        (Some(1), Some("1:1"))
    );

    // Alice deletes her own: not while a job of hers renders from it.
    let res = app.job_on("alice-tiles", &alice).await;
    assert_eq!(res.status(), StatusCode::ACCEPTED);
    let job = res.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let res = app
        .send_as(
            reqwest::Method::DELETE,
            "/api/v1/libraries/alice-tiles",
            &alice,
        )
        .await;
    assert_eq!(code(res).await, (409, "library_in_use".into()));
    let cancel = format!("/api/v1/jobs/{job}/cancel");
    assert!(
        app.send_as(reqwest::Method::POST, &cancel, &alice)
            .await
            .status()
            .is_success()
    );
    let res = app
        .send_as(
            reqwest::Method::DELETE,
            "/api/v1/libraries/alice-tiles",
            &alice,
        )
        .await;
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let res = app
        .send_as(
            reqwest::Method::GET,
            "/api/v1/libraries/alice-tiles",
            &alice,
        )
        .await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let left = app
        .platform
        .blobs
        .list("libraries/alice-tiles/", 10, None)
        .await
        .unwrap();
    assert!(left.items.is_empty(), "{:?}", left.items);
}

/// Settings with the operator's key and two named keys, `alice-key` and `bob-key`.
fn operator_alice_and_bob() -> WebSettings {
    let digest = |key: &str| format!("sha256:{:x}", sha2::Sha256::digest(key.as_bytes()));
    WebSettings {
        api_key: ApiKey::new("operator-key"),
        keys: [("alice", "alice-key"), ("bob", "bob-key")]
            .into_iter()
            .map(|(name, key)| (name.to_string(), digest(key)))
            .collect(),
        ..test_settings()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn named_keys_own_their_libraries_and_the_operator_keeps_the_default() {
    let settings = operator_alice_and_bob();
    let mut app = spawn_app_with(settings, false).await;
    app.client = no_redirect_client();
    let call = |method: reqwest::Method, path: &str, key: &str| {
        app.client
            .request(method, app.url(path))
            .header("X-API-Key", key.to_string())
    };
    let upload = |form: Form, key: &str| {
        call(reqwest::Method::POST, "/api/v1/libraries", key)
            .multipart(form)
            .send()
    };
    let res = upload(
        library_form("Team A", &[("visibility", "private")]),
        "alice-key",
    )
    .await
    .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    assert_eq!(
        res.json::<Value>().await.unwrap()["library"]["owner"],
        "key:alice"
    );
    let path = "/api/v1/libraries/team-a";
    let seen = |key: &'static str| call(reqwest::Method::GET, path, key).send();
    assert_eq!(
        seen("bob-key").await.unwrap().status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(seen("alice-key").await.unwrap().status(), StatusCode::OK);
    assert_eq!(seen("operator-key").await.unwrap().status(), StatusCode::OK);
    let res = upload(library_form("Team A", &[("replace", "true")]), "bob-key")
        .await
        .unwrap();
    assert_eq!(code(res).await, (403, "not_library_owner".into()));

    // The default library: replaced by the operator alone.
    let res = upload(library_form("Emoji", &[("replace", "true")]), "bob-key")
        .await
        .unwrap();
    assert_eq!(code(res).await, (403, "not_library_owner".into()));
    let res = upload(
        library_form("Emoji", &[("replace", "true")]),
        "operator-key",
    )
    .await
    .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    let replaced: Value = res.json().await.unwrap();
    assert_eq!(
        (
            replaced["library"]["version"].as_u64(),
            replaced["library"]["owner"].as_str()
        ),
        (Some(2), Some("operator"))
    );

    // The operator may delete anyone's library.
    let res = call(reqwest::Method::DELETE, path, "operator-key")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
}

/// A job submitted with a named key belongs to the key: another key may not cancel or delete it
/// with the submitting client's id, the same key may from any client, and the operator's key
/// may cancel anyone's job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_made_with_a_key_belong_to_that_key() {
    let settings = operator_alice_and_bob();
    let app = spawn_app_with(settings, false).await;
    let call = |method: reqwest::Method, path: &str, key: &'static str, client: Uuid| {
        app.client
            .request(method, app.url(path))
            .header("X-API-Key", key)
            .header("X-Client-Id", client.to_string())
    };
    let submit = |key: &'static str, client: Uuid| async move {
        let res = call(reqwest::Method::POST, "/api/v1/jobs", key, client)
            .multipart(job_form(astronaut()))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::ACCEPTED);
        let job: Value = res.json().await.unwrap();
        job["id"].as_str().unwrap().to_string()
    };
    let (post, delete) = (reqwest::Method::POST, reqwest::Method::DELETE);
    let shared_client = Uuid::new_v4();
    let job = submit("alice-key", shared_client).await;
    let cancel = format!("/api/v1/jobs/{job}/cancel");
    let path = format!("/api/v1/jobs/{job}");
    // The client id that submitted it, with another key: refused.
    let res = call(post.clone(), &cancel, "bob-key", shared_client).send();
    assert_eq!(code(res.await.unwrap()).await, (403, "not_your_job".into()));
    // The key that submitted it, from another client: its own.
    let res = call(post.clone(), &cancel, "alice-key", Uuid::new_v4()).send();
    assert_eq!(res.await.unwrap().status(), StatusCode::OK);
    let res = call(delete.clone(), &path, "bob-key", shared_client).send();
    assert_eq!(code(res.await.unwrap()).await, (403, "not_your_job".into()));
    let res = call(delete, &path, "alice-key", Uuid::new_v4()).send();
    assert_eq!(res.await.unwrap().status(), StatusCode::NO_CONTENT);

    // Bob's job: the operator's key may cancel it.
    let job = submit("bob-key", Uuid::new_v4()).await;
    let cancel = format!("/api/v1/jobs/{job}/cancel");
    let res = call(post, &cancel, "operator-key", Uuid::new_v4()).send();
    assert_eq!(res.await.unwrap().status(), StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn library_uploads_pass_the_free_space_guard() {
    let dir = tempfile::tempdir().unwrap();
    // Storage that keeps more free space than any disk has: nothing is writable.
    let storage =
        EmbeddedStorage::open_with(dir.path(), Durability::default(), u64::MAX / 4).unwrap();
    let app = spawn_app_on(dir, storage, test_settings(), false).await;
    let res = app.post_library(library_form("Full disk", &[])).await;
    let (status, code) = code(res).await;
    assert_eq!((status, code.as_str()), (507, "insufficient_storage"));
    assert_eq!(
        app.get_library("full-disk").await.status(),
        StatusCode::NOT_FOUND
    );
}

/// An archive under a megabyte that unpacks to more than the disk has left is refused before
/// it is unpacked (its compressed size passed the guard; its unpacked size does not), and
/// nothing of it stays in the spool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archive_that_unpacks_past_the_free_space_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let stat = rustix::fs::statvfs(dir.path()).unwrap();
    let free = stat.f_bavail * stat.f_frsize;
    // Storage that keeps all but 200 MB of the disk free.
    let keep = free.saturating_sub(200 << 20);
    let spool = dir.path().join("spool");
    let storage = EmbeddedStorage::open_with(dir.path(), Durability::default(), keep).unwrap();
    let mut settings = test_settings();
    settings.spool_dir = Some(spool.clone());
    let app = spawn_app_on(dir, storage, settings, false).await;
    let mut entries = tiles(3);
    entries.push(("zeros.png".into(), vec![0u8; 400 << 20]));
    let entries: Vec<(&str, Vec<u8>)> = entries
        .iter()
        .map(|(n, b)| (n.as_str(), b.clone()))
        .collect();
    let zip = zip_of(&entries);
    assert!(zip.len() < 1 << 20, "{} bytes", zip.len());
    let form = Form::new()
        .text("name", "Zeros")
        .part("files", Part::bytes(zip).file_name("zeros.zip"));
    let res = app.post_library(form).await;
    let (status, code) = code(res).await;
    assert_eq!((status, code.as_str()), (507, "insufficient_storage"));
    let left: u64 = walk_bytes(&spool);
    assert!(left < 1 << 20, "{left} bytes left in the spool");
}

/// Bytes of every file under `dir`.
fn walk_bytes(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => walk_bytes(&e.path()),
            _ => e.metadata().map_or(0, |m| m.len()),
        })
        .sum()
}

/// A PNG of `side` x `side` pixels, 8-bit grey, varied so that it does not compress to
/// nothing, yet small.
fn big_grey_png(side: u32, seed: u8) -> Vec<u8> {
    let img = image::GrayImage::from_fn(side, side, |x, y| {
        image::Luma([((x / 64 + y / 64) as u8).wrapping_mul(7).wrapping_add(seed)])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

/// A library upload as raw HTTP/1.1 bytes: `files` as one multipart field each.
fn raw_library_upload(port: u16, name: &str, files: &[(&str, Vec<u8>)], client: &str) -> Vec<u8> {
    let boundary = "tessera-boundary-7d1f";
    let mut body = Vec::new();
    write!(
        body,
        "--{boundary}\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\n{name}\r\n"
    )
    .unwrap();
    for (file, bytes) in files {
        write!(
            body,
            "--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{file}\"\r\n\
             Content-Type: application/octet-stream\r\n\r\n"
        )
        .unwrap();
        body.extend_from_slice(bytes);
        body.extend_from_slice(b"\r\n");
    }
    write!(body, "--{boundary}--\r\n").unwrap();
    let mut request = format!(
        "POST /api/v1/libraries HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Client-Id: {client}\r\n\
         Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    request.extend_from_slice(&body);
    request
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_whose_client_went_away_publishes_nothing() {
    let app = spawn_app_with(test_settings(), false).await;
    let port: u16 = app.address.rsplit(':').next().unwrap().parse().unwrap();
    // Forty large pictures in a small zip: seconds of decoding, one import at a time.
    let heavy: Vec<(String, Vec<u8>)> = (0..40)
        .map(|i| (format!("big-{i:02}.png"), big_grey_png(3000, i as u8)))
        .collect();
    let entries: Vec<(&str, Vec<u8>)> =
        heavy.iter().map(|(n, b)| (n.as_str(), b.clone())).collect();
    let zip = zip_of(&entries);
    let request = raw_library_upload(port, "Heavy", &[("heavy.zip", zip)], &app.owner);
    let mut socket = TcpStream::connect(("127.0.0.1", port)).unwrap();
    socket.write_all(&request).unwrap();
    // The upload is in; the import starts; the client gives up and goes.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    drop(socket);

    // The next import waits for the slot: once it is done, the first has ended one way or
    // the other, and it must not have published.
    let res = app.post_library(library_form("After", &[])).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let res = app.get_library("heavy").await;
    assert_eq!(
        res.status(),
        StatusCode::NOT_FOUND,
        "an abandoned import was published"
    );
    let stored = app
        .platform
        .blobs
        .list("libraries/heavy/", 10, None)
        .await
        .unwrap();
    assert!(stored.items.is_empty(), "{:?}", stored.items);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quotas_hold_under_parallel_submissions_per_client_address_and_service() {
    let settings = WebSettings {
        max_active_jobs_per_client: 4,
        max_active_jobs_per_address: 6,
        max_active_jobs: 8,
        // The test client stands for a proxy that names each caller's address.
        trusted_proxies: vec!["127.0.0.1".parse().unwrap()],
        ..test_settings()
    };
    let app = std::sync::Arc::new(spawn_app_with(settings, false).await);
    let submit = |client: String, address: &'static str| {
        let app = app.clone();
        async move {
            let res = app
                .post_job_with(
                    job_form(astronaut()),
                    &[("X-Client-Id", &client), ("X-Forwarded-For", address)],
                )
                .await;
            code(res).await
        }
    };
    // Twelve at once from one client: exactly its quota gets in.
    let one = Uuid::new_v4().to_string();
    let answers =
        futures_util::future::join_all((0..12).map(|_| submit(one.clone(), "198.51.100.1"))).await;
    let accepted = answers.iter().filter(|(s, _)| *s == 202).count();
    assert_eq!(accepted, 4, "{answers:?}");
    assert!(
        answers
            .iter()
            .all(|(s, c)| *s == 202 || (*s == 429 && c == "too_many_active_jobs")),
        "{answers:?}"
    );
    // New client ids from the same address: the address's quota holds (4 + 2 more).
    let mut from_address = Vec::new();
    for _ in 0..4 {
        from_address.push(submit(Uuid::new_v4().to_string(), "198.51.100.1").await);
    }
    let statuses: Vec<_> = from_address.iter().map(|(s, c)| (*s, c.as_str())).collect();
    assert_eq!(
        statuses,
        [
            (202, ""),
            (202, ""),
            (429, "too_many_active_jobs_from_address"),
            (429, "too_many_active_jobs_from_address"),
        ]
    );
    // Another address gets in, up to the service's cap of 8 active jobs.
    assert_eq!(
        submit(Uuid::new_v4().to_string(), "203.0.113.2").await.0,
        202
    );
    assert_eq!(
        submit(Uuid::new_v4().to_string(), "203.0.113.2").await.0,
        202
    );
    let (status, code) = submit(Uuid::new_v4().to_string(), "203.0.113.3").await;
    assert_eq!((status, code.as_str()), (503, "service_busy"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_bodies_are_cut_off_and_client_ids_must_be_uuids() {
    let settings = WebSettings {
        body_read_timeout_secs: 1,
        ..test_settings()
    };
    let app = spawn_app_with(settings, false).await;
    let port: u16 = app.address.rsplit(':').next().unwrap().parse().unwrap();
    let mut socket = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let boundary = "b0undary";
    let head = format!(
        "POST /api/v1/jobs HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
         Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: 40000000\r\n\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"image\"; filename=\"a.png\"\r\n\r\n"
    );
    socket.write_all(head.as_bytes()).unwrap();
    socket.write_all(&vec![7u8; 100_000]).unwrap();
    // Then nothing: the server answers 408 instead of waiting.
    socket
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut answer = [0u8; 64];
    let n = socket.read(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer[..n]);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");

    let id = app.submit(job_form(astronaut())).await;
    let events = format!("/api/v1/jobs/{id}/events");
    let res = app
        .get_with(&events, &[("X-Client-Id", "not-a-uuid")])
        .await;
    assert_eq!(code(res).await, (400, "invalid_client_id".into()));

    // Fresh client ids do not buy more streams: the address's cap holds.
    let mut open = Vec::new();
    for _ in 0..WebSettings::default().max_streams_per_address {
        let client = Uuid::new_v4().to_string();
        let res = app.get_with(&events, &[("X-Client-Id", &client)]).await;
        assert_eq!(res.status(), StatusCode::OK);
        open.push(res);
    }
    let client = Uuid::new_v4().to_string();
    let res = app.get_with(&events, &[("X-Client-Id", &client)]).await;
    assert_eq!(code(res).await, (429, "too_many_streams".into()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uploads_spool_under_the_data_directory_and_leftovers_go_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("spool");
    let leftover = spool.join(".tmpKILLED").join("files");
    std::fs::create_dir_all(&leftover).unwrap();
    std::fs::write(leftover.join("big.png"), vec![0u8; 4096]).unwrap();
    let storage = EmbeddedStorage::open(dir.path()).unwrap();
    let settings = WebSettings {
        spool_dir: Some(spool.clone()),
        ..test_settings()
    };
    let app = spawn_app_on(dir, storage, settings, false).await;
    assert!(spool.is_dir());
    let left = || std::fs::read_dir(&spool).unwrap().count();
    assert_eq!(left(), 0, "a killed upload's files are left");
    let res = app.post_library(library_form("Spooled", &[])).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    assert_eq!(left(), 0, "an upload's spool is left");
}

#[test]
fn an_open_service_on_the_network_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let mut web = crate::support::KillOnDrop(
        std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
            .arg("--data")
            .arg(dir.path())
            .arg("web")
            .env("TESSERA_WEB__BIND", "0.0.0.0")
            .env("TESSERA_WEB__PORT", "0")
            .env_remove("TESSERA_STORAGE")
            .env_remove("TESSERA_WEB__API_KEY")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let stderr = web.0.stderr.take().unwrap();
    let mut seen = String::new();
    for line in std::io::BufRead::lines(std::io::BufReader::new(stderr)) {
        let line = line.unwrap();
        seen.push_str(&line);
        seen.push('\n');
        if line.contains("THE SERVICE IS OPEN") || line.contains("web listening") {
            break;
        }
    }
    web.kill();
    assert!(seen.contains("THE SERVICE IS OPEN"), "{seen}");
    assert!(seen.contains("TESSERA_WEB__API_KEY"), "{seen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_image_response_exposes_no_other_job() {
    let mut app = spawn_app_with(test_settings(), false).await;
    // The forged response goes to imageresponse-poison: that is the point.
    app.leaves(Leftovers::Poison);
    let victim = app.submit(job_form(astronaut())).await;
    let target: Uuid = app.submit(job_form(astronaut())).await.parse().unwrap();
    let forged = ImageResponse {
        job_id: target,
        outcome: JobOutcome::Done {
            output_blob: format!("jobs/{victim}.json"),
            width: 10,
            height: 10,
        },
    };
    app.platform
        .queue::<ImageResponse>()
        .send(&Envelope::new(Uuid::new_v4(), forged))
        .await
        .unwrap();
    // The front end's listener takes it, and poisons it at once.
    let poison = QueueName::ImageResponse.poison();
    eventually(
        Duration::from_secs(30),
        "the forged response poisoned",
        async || {
            app.platform
                .queues
                .approximate_depth(&poison)
                .await
                .unwrap()
                > 0
        },
    )
    .await;
    let job: Value = app.get_job(&target.to_string()).await.json().await.unwrap();
    assert_eq!(job["state"], "queued", "{job}");
    let res = app.get_result(&target.to_string(), &[]).await;
    assert_ne!(res.status(), StatusCode::OK);
    let body = res.text().await.unwrap();
    assert!(!body.contains(&victim), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archive_with_clashing_entries_is_refused_as_bad() {
    let app = spawn_app_with(test_settings(), false).await;
    let tile = tiles(1).remove(0).1;
    let zip = zip_of(&[("a.png", tile.clone()), ("a.png/b.png", tile)]);
    let form = Form::new()
        .text("name", "Clash")
        .part("files", Part::bytes(zip).file_name("clash.zip"));
    let res = app.post_library(form).await;
    assert_eq!(code(res).await, (422, "bad_archive".into()));
}

/// A 10000 x 10000 16-bit RGBA PNG of a few hundred kilobytes: rows of one colour each, written
/// a row at a time.
fn huge_deep_png() -> Vec<u8> {
    let side = 10_000u32;
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, side, side);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Sixteen);
    encoder.set_compression(png::Compression::Balanced);
    let mut writer = encoder.write_header().unwrap();
    let mut stream = writer.stream_writer().unwrap();
    let mut row = vec![0u8; side as usize * 8];
    for y in 0..side {
        let v = ((y * 65_535) / side) as u16;
        for px in row.chunks_exact_mut(8) {
            px[..2].copy_from_slice(&v.to_be_bytes());
            px[2..4].copy_from_slice(&(65_535 - v).to_be_bytes());
            px[4..6].copy_from_slice(&32_768u16.to_be_bytes());
            px[6..].copy_from_slice(&65_535u16.to_be_bytes());
        }
        stream.write_all(&row).unwrap();
    }
    stream.finish().unwrap();
    drop(writer);
    out
}

/// The most `tessera serve` may hold at its peak while checking, planning and rendering a
/// 10000 x 10000 16-bit target: the target decoded once at 3 bytes a pixel (300 MB), and room
/// for the rest of the service. Checked whole at 8 bytes a pixel, then decoded at 8 and 4 bytes
/// on the way to 3, the same job took 1.36 GB.
const HUGE_TARGET_PEAK: u64 = 512 << 20;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_deep_target_stays_within_a_stated_peak() {
    let serve = crate::support::Serve::start(&[]).await;
    let client = no_redirect_client();
    let base = serve.base.clone();
    let before = serve.peak();

    let image = huge_deep_png();
    assert!(image.len() < 4 << 20, "{} bytes", image.len());
    let form = Form::new()
        .part("image", Part::bytes(image).file_name("deep.png"))
        .text("tile_size", "8")
        .text("cells", "40");
    let id = crate::support::queued_at(&client, &base, form).await;
    let job = job_ended_at(&client, &format!("{base}/api/v1/jobs/{id}"), &[]).await;
    assert_eq!(job["state"], "done", "{}", serve.log());
    let peak = serve.peak();
    println!(
        "tessera serve peak resident memory: {} MiB before the job, {} MiB after",
        before >> 20,
        peak >> 20
    );
    assert!(
        peak < HUGE_TARGET_PEAK,
        "peak {} MiB, over the stated {} MiB",
        peak >> 20,
        HUGE_TARGET_PEAK >> 20
    );
}

#[test]
fn the_operator_lists_owners_and_deletes_any_library_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let tessera = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
            .arg("--data")
            .arg(dir.path())
            .args(args)
            .env("TESSERA_LOG", "warn")
            .env_remove("TESSERA_STORAGE")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    let tiles = crate::support::fixture("engine/tiles");
    tessera(&[
        "library",
        "import",
        tiles.to_str().unwrap(),
        "--name",
        "Cli Tiles",
    ]);
    let listed = tessera(&["library", "list"]);
    let line = listed.lines().find(|l| l.starts_with("cli-tiles")).unwrap();
    assert!(
        line.contains("shared") && line.contains("operator"),
        "{line}"
    );
    let deleted = tessera(&["library", "delete", "cli-tiles"]);
    assert!(deleted.contains("library cli-tiles deleted"), "{deleted}");
    assert!(!tessera(&["library", "list"]).contains("cli-tiles"));
}

/// A socket whose receive window is a few kilobytes: a request sent on it holds the server's
/// answer mid-way for as long as it is not read.
fn slow_reader(port: u16) -> TcpStream {
    use rustix::net::{AddressFamily, SocketType, connect, socket, sockopt};
    let fd = socket(AddressFamily::INET, SocketType::STREAM, None).unwrap();
    sockopt::set_socket_recv_buffer_size(&fd, 4096).unwrap();
    connect(&fd, &std::net::SocketAddr::from(([127, 0, 0, 1], port))).unwrap();
    TcpStream::from(fd)
}

/// A slow reader's socket whose answer to `request` began with 200: the answer is being sent
/// and holds its place. A reader that came while an earlier answer still held one (its last
/// bytes read but the server not yet done with it) is refused 429 and tries again.
fn held_answer(port: u16, request: &str) -> TcpStream {
    let started = std::time::Instant::now();
    loop {
        let mut socket = slow_reader(port);
        socket.write_all(request.as_bytes()).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        while !line.ends_with(b"\r\n") && socket.read(&mut byte).unwrap() == 1 {
            line.push(byte[0]);
        }
        let line = String::from_utf8_lossy(&line).into_owned();
        if line.starts_with("HTTP/1.1 200") {
            return socket;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "a slow reader's answer: {line}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A large mosaic's placements are written as they are sent (a chunk at a time, the whole
/// answer never held), and one address has at most two being sent at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn placements_stream_and_are_shared_per_address() {
    let app = crate::support::spawn_app().await;
    let form = crate::support::sized_job_form(astronaut(), 4, 800, 4).text("repeat_radius", "0");
    let id = app.submit(form).await;
    let job = app.wait_until_finished(&id).await;
    assert_eq!(job["state"], "done", "{job}");
    let cells = job["output"]["cols"].as_u64().unwrap() * job["output"]["rows"].as_u64().unwrap();
    assert!(cells > 500_000, "{cells} cells");
    let path = format!("/api/v1/jobs/{id}/placements");
    let res = app.get(&path).await;
    assert_eq!(res.status(), StatusCode::OK);
    let body = res.bytes().await.unwrap();
    assert!(body.len() > 4 << 20, "{} bytes", body.len());
    let placements: Value = serde_json::from_slice(&body).unwrap();
    let mut seen = vec![false; cells as usize];
    let cols = job["output"]["cols"].as_u64().unwrap();
    for tile in placements["tiles"].as_array().unwrap() {
        let listed = tile["cells"].as_array().unwrap();
        assert_eq!(listed.len() as u64, tile["uses"].as_u64().unwrap());
        for cell in listed {
            let at = cell[0].as_u64().unwrap() * cols + cell[1].as_u64().unwrap();
            assert!(
                !std::mem::replace(&mut seen[at as usize], true),
                "{cell} twice"
            );
        }
    }
    assert!(seen.iter().all(|&s| s), "a cell is missing");
    assert_eq!(placements["uses"], cells);
    let csv = app
        .get(&format!("{path}?format=csv"))
        .await
        .text()
        .await
        .unwrap();
    assert_eq!(
        csv.lines().count(),
        placements["tiles"].as_array().unwrap().len() + 1
    );

    // Two answers held by slow readers: the address's third request waits its turn.
    let port: u16 = app.address.rsplit(':').next().unwrap().parse().unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    let held: Vec<TcpStream> = (0..2).map(|_| held_answer(port, &request)).collect();
    // Once the server holds both, the third is refused.
    wait_for(Duration::from_secs(30), async || {
        match code(app.get(&path).await).await {
            (429, c) if c == "too_many_placements" => Ok(()),
            seen => Err(format!("the third request answered {seen:?}")),
        }
    })
    .await;
    // Gone with a reset: a reader whose window never opened would otherwise close with a FIN,
    // which the server learns of only at its next zero-window probe, seconds apart.
    for socket in &held {
        rustix::net::sockopt::set_socket_linger(socket, Some(Duration::ZERO)).unwrap();
    }
    drop(held);
    // The turn comes back soon after, however busy the machine.
    wait_for(Duration::from_secs(10), async || {
        let status = app.get(&path).await.status();
        if status == StatusCode::OK {
            Ok(())
        } else {
            Err(format!("still {status} after the slow readers went away"))
        }
    })
    .await;
}
