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
use tessera_shared::storage::{MessageUpdate, QueueStore, SendOptions};

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
pub(crate) fn peer(request: Value) -> Value {
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
    s.update(
        &q,
        MessageUpdate::new(&got[0].id, &got[0].pop_receipt, Duration::ZERO, None),
    )
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

/// An Azure Function on its default settings, played by the Python SDK with its base64 policies
/// (the queue trigger decodes, the output binding encodes), and a plain-text peer: each reads
/// what Tessera writes in the matching encoding, and Tessera reads what either writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn functions_bindings_read_and_write_tessera_messages_in_both_encodings() {
    use tessera_shared::messages::{Encoding, Envelope, ImageRequest};
    use tessera_shared::queue::Queue;
    use tessera_shared::runtime::Nudges;

    let golden = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/messages/image_request.json"),
    )
    .unwrap();
    let envelope = Envelope::<ImageRequest>::decode(&golden).unwrap();
    let s = storage();
    for (encoding, peer_encoding) in [(Encoding::Base64, "base64"), (Encoding::Json, "plain")] {
        let q = crate::support::unique_name("functions");
        let queue = Queue::<ImageRequest>::new(s.queues(), s.blobs(), Nudges::local())
            .named(&q)
            .encoded(encoding);
        queue.ensure().await.unwrap();

        // Tessera to the trigger.
        queue.send(&envelope).await.unwrap();
        let q2 = q.clone();
        let answer = tokio::task::spawn_blocking(move || {
            peer(json!({"op": "receive", "queue": q2, "encoding": peer_encoding, "delete": true}))
        })
        .await
        .unwrap();
        let messages = answer["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 1, "{answer}");
        let read: Value = serde_json::from_str(messages[0]["body"].as_str().unwrap())
            .unwrap_or_else(|e| panic!("{peer_encoding} trigger got no JSON ({e}): {answer}"));
        assert_eq!(read["kind"], "ImageRequest");
        assert_eq!(read["body"]["job_id"], envelope.body.job_id.to_string());

        // The output binding to Tessera, which reads both encodings whatever it writes.
        let (q2, text) = (q.clone(), golden.clone());
        tokio::task::spawn_blocking(move || {
            peer(
                json!({"op": "send", "queue": q2, "encoding": "base64", "bodies": [text.clone()]}),
            );
            peer(json!({"op": "send", "queue": q2, "bodies": [text]}));
        })
        .await
        .unwrap();
        let got = s.receive(&q, 32, Duration::from_secs(30)).await.unwrap();
        assert_eq!(got.len(), 2);
        let encodings: Vec<Encoding> = got.iter().map(|m| Encoding::of(&m.body)).collect();
        assert!(encodings.contains(&Encoding::Base64) && encodings.contains(&Encoding::Json));
        for m in got {
            let decoded = queue
                .decode(&m.body)
                .await
                .expect("Tessera reads the binding's message");
            assert_eq!(decoded.envelope, envelope);
            s.delete(&q, &m.id, &m.pop_receipt).await.unwrap();
        }
        s.delete_queue(&q).await.unwrap();
        s.delete_queue(&format!("{q}-poison")).await.unwrap();
    }
}
