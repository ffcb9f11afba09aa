//! Interoperability on Azurite: what Tessera puts on a queue, another Azure SDK (Python's
//! azure-storage-queue) reads, and the other way round, bodies and dequeue counts intact.
//!
//! Needs Azurite (`TESSERA_AZURE_CONNECTION_STRING`) and the Python SDK in a virtual environment
//! (`scripts/azurite.sh python`; interpreter from `TESSERA_TEST_PYTHON`, default
//! `.tools/venv/bin/python`). `scripts/test.sh` sets up both.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use tessera_azure::{AzureOptions, AzureStorage};
use tessera_shared::storage::{QueueStore, SendOptions};

/// Bodies that trip up encodings: XML specials, quotes, non-ASCII, astral plane, a CDATA end.
const BODIES: [&str; 5] = [
    "plain ascii",
    r#"<tag attr="v">&amp; & < > " '</tag>"#,
    "Grüße, 日本語, emoji 🧩🖼️",
    r#"{"v":1,"kind":"slice_request","body":{"key":"sliceinput/j/0001","note":"]]> <![CDATA["}}"#,
    "  leading and trailing spaces, tab\tand newline\nkept  ",
];

fn connection_string() -> String {
    std::env::var("TESSERA_AZURE_CONNECTION_STRING").expect(
        "TESSERA_AZURE_CONNECTION_STRING is not set: run scripts/test.sh, or start Azurite with \
         scripts/azurite.sh start and set TESSERA_AZURE_CONNECTION_STRING=UseDevelopmentStorage=true",
    )
}

/// Runs the Python peer with one request; returns its answer.
fn peer(request: Value) -> Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/interop/queue_peer.py");
    let mut child = Command::new(crate::support::python())
        .arg(script)
        .env("TESSERA_AZURE_CONNECTION_STRING", connection_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the Python peer");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(request.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the Python peer failed on {request}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the Python peer answers JSON")
}

fn storage() -> AzureStorage {
    AzureStorage::from_connection_string(&connection_string(), AzureOptions::default()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_reads_what_tessera_sends() {
    let s = storage();
    let q = crate::support::unique_name("interop");
    s.create_queue(&q).await.unwrap();
    let mut ids = Vec::new();
    for body in BODIES {
        ids.push(s.send(&q, body, SendOptions::default()).await.unwrap().id);
    }
    // Tessera receives the first once and lets it go: the Python SDK must see a count of 2.
    let got = s.receive(&q, 1, Duration::from_secs(30)).await.unwrap();
    assert_eq!(got[0].id, ids[0]);
    s.update(&q, &got[0].id, &got[0].pop_receipt, Duration::ZERO, None)
        .await
        .unwrap();

    let q2 = q.clone();
    let answer = tokio::task::spawn_blocking(move || {
        peer(json!({"op": "receive", "queue": q2, "max": 32, "visibility": 30, "delete": true}))
    })
    .await
    .unwrap();
    let messages = answer["messages"].as_array().unwrap();
    assert_eq!(messages.len(), BODIES.len(), "{answer}");
    for (id, body) in ids.iter().zip(BODIES) {
        let m = messages
            .iter()
            .find(|m| m["id"] == id.as_str())
            .unwrap_or_else(|| panic!("message {id} not received by Python: {answer}"));
        assert_eq!(m["body"], body);
        let expected = if *id == ids[0] { 2 } else { 1 };
        assert_eq!(m["dequeue_count"], expected, "{m}");
    }
    // Python deleted them all.
    assert_eq!(s.approximate_depth(&q).await.unwrap(), 0);
    s.delete_queue(&q).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tessera_reads_what_python_sdk_sends() {
    let s = storage();
    let q = crate::support::unique_name("interop");
    s.create_queue(&q).await.unwrap();
    let q2 = q.clone();
    let answer = tokio::task::spawn_blocking(move || {
        let sent = peer(json!({"op": "send", "queue": q2, "bodies": BODIES}));
        // Python receives the batch once and releases it: Tessera must see a count of 2.
        let released = peer(json!({"op": "receive", "queue": q2, "max": 2, "release": true}));
        (sent, released)
    })
    .await
    .unwrap();
    let ids: Vec<String> = answer.0["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    let released: Vec<&str> = answer.1["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(released.len(), 2, "{}", answer.1);

    let got = s.receive(&q, 32, Duration::from_secs(30)).await.unwrap();
    assert_eq!(got.len(), BODIES.len());
    for (id, body) in ids.iter().zip(BODIES) {
        let m = got
            .iter()
            .find(|m| &m.id == id)
            .unwrap_or_else(|| panic!("message {id} not received by Tessera"));
        assert_eq!(m.body, body);
        let expected = if released.contains(&id.as_str()) {
            2
        } else {
            1
        };
        assert_eq!(m.dequeue_count, expected, "message {id}");
        s.delete(&q, &m.id, &m.pop_receipt).await.unwrap();
    }
    s.delete_queue(&q).await.unwrap();
}
