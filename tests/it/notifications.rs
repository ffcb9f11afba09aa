//! Job notifications as `tessera serve` ships them, on the embedded backend, with the binary's
//! own HTTP client (this test installs no TLS provider in that process): the event arrives as
//! CloudEvents 1.0, signed, and a receiver that fails for 70 seconds while the service is
//! killed and started again still gets it, with the same id on every attempt.

use std::time::{Duration, Instant};

use reqwest::multipart::{Form, Part};
use serde_json::Value;
use tokio::io::AsyncWriteExt;

use crate::support::{Serve, astronaut, ended, free_port};

/// One request a receiver got: its head and its body.
struct Call {
    head: String,
    body: String,
}

impl Call {
    fn header(&self, name: &str) -> String {
        self.head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
            })
            .unwrap_or_else(|| panic!("no {name} in {}", self.head))
    }
}

/// A receiver on 127.0.0.1 that answers 500 until `fail_for` has passed since it started, then
/// 200; every call is sent on the channel.
async fn receiver(fail_for: Duration) -> (u16, tokio::sync::mpsc::UnboundedReceiver<(Call, u16)>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let started = Instant::now();
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            let text = crate::support::read_http_request(&mut socket).await;
            let status = if started.elapsed() < fail_for {
                500
            } else {
                200
            };
            let reply =
                format!("HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
            let _ = socket.write_all(reply.as_bytes()).await;
            let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
            let call = Call {
                head: head.to_string(),
                body: body.to_string(),
            };
            if tx.send((call, status)).is_err() {
                return;
            }
        }
    });
    (port, rx)
}

const SECRET: &str = "whsec-binary-secret";

fn config(dir: &std::path::Path, receiver: u16) -> std::path::PathBuf {
    config_with(dir, receiver, 4, 40)
}

/// A config whose webhooks may call `receiver`, waiting at most `max_backoff` seconds between
/// two of at most `max_attempts` attempts.
fn config_with(
    dir: &std::path::Path,
    receiver: u16,
    max_backoff: u64,
    max_attempts: u32,
) -> std::path::PathBuf {
    let path = dir.join("tessera.toml");
    std::fs::write(
        &path,
        format!(
            "[web.webhooks]\nsecret = \"{SECRET}\"\nallow = [\"127.0.0.1:{receiver}\"]\n\
             allow_private = true\nmax_backoff_secs = {max_backoff}\n\
             max_attempts = {max_attempts}\n"
        ),
    )
    .unwrap();
    path
}

async fn submit_with_webhook(serve: &Serve, hook: &str) -> String {
    let form = Form::new()
        .part("image", Part::bytes(astronaut()).file_name("a.png"))
        .text("cells", "16")
        .text("tile_size", "8")
        .text("webhook", hook.to_string());
    let (status, body) = serve.submit(form).await;
    assert_eq!(status, 202, "{body}");
    body["id"].as_str().unwrap().to_string()
}

fn check_event(call: &Call, id: &str, base: &str) {
    assert!(
        call.head.starts_with("POST /hook HTTP/1.1"),
        "{}",
        call.head
    );
    assert_eq!(call.header("Tessera-Delivery"), format!("{id}/job.done"));
    let signature = call.header("Tessera-Signature");
    crate::support::assert_signed(&signature, SECRET, &call.body);
    let event: Value = serde_json::from_str(&call.body).unwrap();
    assert_eq!(event["specversion"], "1.0", "{event}");
    assert_eq!(event["id"], format!("{id}/job.done"));
    assert_eq!(event["type"], "io.tessera.job.done");
    assert_eq!(event["subject"], id);
    assert!(event["time"].as_str().is_some(), "{event}");
    assert_eq!(event["data"]["state"], "done");
    assert_eq!(
        event["data"]["result_url"],
        format!("{base}/api/v1/jobs/{id}/result")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_delivers_a_webhook_on_the_embedded_backend() {
    let (port, mut calls) = receiver(Duration::ZERO).await;
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), port);
    let args = ["--config", config.to_str().unwrap()];
    let serve = Serve::start_in(dir.path(), free_port(), &args, &[]).await;
    let hook = format!("http://127.0.0.1:{port}/hook");
    let id = submit_with_webhook(&serve, &hook).await;
    assert_eq!(ended(&serve, &id).await["state"], "done");
    let (call, status) = tokio::time::timeout(Duration::from_secs(30), calls.recv())
        .await
        .unwrap_or_else(|_| panic!("no webhook call:\n{}", serve.log()))
        .unwrap();
    assert_eq!(status, 200);
    check_event(&call, &id, &serve.base);
    assert!(!serve.log().contains("panicked"), "{}", serve.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_fails_for_70_seconds_across_a_restart_still_gets_the_event() {
    let (port, mut calls) = receiver(Duration::from_secs(70)).await;
    let dir = tempfile::tempdir().unwrap();
    let config = config(dir.path(), port);
    let args = ["--config", config.to_str().unwrap()];
    let web_port = free_port();
    let serve = Serve::start_in(dir.path(), web_port, &args, &[]).await;
    let hook = format!("http://127.0.0.1:{port}/hook");
    let id = submit_with_webhook(&serve, &hook).await;
    assert_eq!(ended(&serve, &id).await["state"], "done");
    let (first, status) = tokio::time::timeout(Duration::from_secs(30), calls.recv())
        .await
        .unwrap_or_else(|_| panic!("no webhook call:\n{}", serve.log()))
        .unwrap();
    assert_eq!(status, 500);
    // Killed while the receiver still fails, and started again on the same data.
    drop(serve);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let serve = Serve::start_in(dir.path(), web_port, &args, &[]).await;
    let mut attempts = 1;
    let delivered = loop {
        // A sender killed mid-call holds its lease for the call's time limit and a few seconds.
        let (call, status) = tokio::time::timeout(Duration::from_secs(90), calls.recv())
            .await
            .unwrap_or_else(|_| panic!("the event never came:\n{}", serve.log()))
            .unwrap();
        attempts += 1;
        assert_eq!(
            call.header("Tessera-Delivery"),
            first.header("Tessera-Delivery")
        );
        if status == 200 {
            break call;
        }
    };
    check_event(&delivered, &id, &serve.base);
    assert!(attempts >= 3, "{attempts} attempts");
    // Delivered once: nothing more comes.
    let more = tokio::time::timeout(Duration::from_secs(6), calls.recv()).await;
    assert!(more.is_err(), "a call after the delivery");
}

/// A receiver that never answers well is called `max_attempts` times, then the delivery is set
/// aside for the operator and never tried again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_webhook_ends_after_its_tries() {
    let (port, mut calls) = receiver(Duration::from_secs(3600)).await;
    let dir = tempfile::tempdir().unwrap();
    let config = config_with(dir.path(), port, 1, 3);
    let args = ["--config", config.to_str().unwrap()];
    let serve = Serve::start_in(dir.path(), free_port(), &args, &[]).await;
    let hook = format!("http://127.0.0.1:{port}/hook");
    let id = submit_with_webhook(&serve, &hook).await;
    assert_eq!(ended(&serve, &id).await["state"], "done");
    for attempt in 1..=3 {
        let (call, status) = tokio::time::timeout(Duration::from_secs(30), calls.recv())
            .await
            .unwrap_or_else(|_| panic!("no attempt {attempt}:\n{}", serve.log()))
            .unwrap();
        assert_eq!(status, 500);
        assert_eq!(call.header("Tessera-Delivery"), format!("{id}/job.done"));
    }
    let more = tokio::time::timeout(Duration::from_secs(8), calls.recv()).await;
    assert!(more.is_err(), "a fourth attempt");
    let log = serve.log();
    assert!(
        log.contains("webhook undelivered: set aside") && log.contains("3 attempts failed"),
        "{log}"
    );
}

/// With `queues.job_events`, every job's end is also sent to that queue, as the CloudEvents
/// event a webhook gets, in the queues' encoding: a consumer outside Tessera reads it there and
/// never needs `imageresponse`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_job_end_reaches_the_job_events_queue() {
    use tessera_shared::storage::embedded::EmbeddedStorage;
    let dir = tempfile::tempdir().unwrap();
    let public = "https://mosaics.example.com";
    let env = [
        ("TESSERA_QUEUES__JOB_EVENTS", "jobevents"),
        ("TESSERA_WEB__WEBHOOKS__PUBLIC_URL", public),
    ];
    let serve = Serve::start_in(dir.path(), free_port(), &[], &env).await;
    let form = Form::new()
        .part("image", Part::bytes(astronaut()).file_name("a.png"))
        .text("cells", "16")
        .text("tile_size", "8");
    let (_, body) = serve.submit(form).await;
    let id = body["id"].as_str().unwrap().to_string();
    assert_eq!(ended(&serve, &id).await["state"], "done");
    drop(serve);

    let storage = EmbeddedStorage::open(&dir.path().join("data")).unwrap();
    let got = storage
        .queues()
        .receive("jobevents", 32, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(got.len(), 1, "{got:?}");
    // Base64, as the work queues are by default.
    assert!(!got[0].body.starts_with('{'), "{}", got[0].body);
    let json = tessera_shared::messages::Encoding::from_wire(&got[0].body).unwrap();
    let event: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(event["specversion"], "1.0", "{event}");
    assert_eq!(event["id"], format!("{id}/job.done"));
    assert_eq!(event["type"], "io.tessera.job.done");
    assert_eq!(event["subject"], id);
    assert_eq!(
        event["data"]["result_url"],
        format!("{public}/api/v1/jobs/{id}/result")
    );
}
