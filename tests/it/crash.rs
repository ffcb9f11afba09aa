//! The embedded backend under a real SIGKILL, and shared by several processes.
//!
//! The child processes are this test binary run again on one ignored test (`crash::*_child`),
//! told what to do by environment variables; they print one line per acknowledged operation and
//! flush it, so the parent knows exactly what the store promised before the kill.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use bytes::Bytes;
use tessera_shared::storage::embedded::EmbeddedStorage;
use tessera_shared::storage::{PutMode, QueueStore, ReceivedMessage, SendOptions, StorageError};

const CRASH_DIR: &str = "TESSERA_TEST_CRASH_DIR";
const CRASH_START: &str = "TESSERA_TEST_CRASH_START";
const SHARE_DIR: &str = "TESSERA_TEST_SHARE_DIR";
const QUEUE: &str = "crash-test";
const ACK: &str = "@ack ";
const LONG: Duration = Duration::from_secs(120);

/// Receives `max` at a time and deletes each message until the queue is empty; returns what it
/// deleted.
async fn drain(queues: &dyn QueueStore, max: usize) -> Vec<ReceivedMessage> {
    let mut deleted = Vec::new();
    loop {
        let batch = queues.receive(QUEUE, max, LONG).await.unwrap();
        if batch.is_empty() {
            return deleted;
        }
        for m in batch {
            queues.delete(QUEUE, &m.id, &m.pop_receipt).await.unwrap();
            deleted.push(m);
        }
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// The content of blob `n`: its size and bytes both depend on `n`, so a truncated or mixed-up
/// file shows.
fn blob_content(n: u64) -> Vec<u8> {
    let len = 1 + (n * 7919 % 150_000) as usize;
    (0..len).map(|i| (n as usize * 31 + i * 7) as u8).collect()
}

fn blob_key(n: u64) -> String {
    format!("crashblobs/b-{n}")
}

/// Prints one acknowledgement line, flushed before the operation counts as done.
fn ack(line: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{ACK}{line}").expect("stdout");
    out.flush().expect("flush");
}

/// The acknowledgement in a line of a child's output (the test harness may print its own text
/// before the first one, on the same line).
fn acked(line: &str) -> Option<&str> {
    line.find(ACK).map(|at| &line[at + ACK.len()..])
}

/// Spawns this test binary running the ignored test `name`, with `envs`.
fn spawn_child(name: &str, envs: &[(&str, String)]) -> Child {
    let mut command = Command::new(std::env::current_exe().expect("test binary"));
    command
        .args([
            "--exact",
            name,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    for (key, value) in envs {
        command.env(key, value);
    }
    command.spawn().expect("spawn child")
}

/// The acknowledgements on the child's stdout, one per line, on a channel (so the parent can
/// wait with a deadline).
fn lines_of(child: &mut Child) -> mpsc::Receiver<String> {
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let Some(line) = acked(&line) else { continue };
            if tx.send(line.to_string()).is_err() {
                break;
            }
        }
    });
    rx
}

/// Writes numbered messages and blobs from four tasks until killed, printing `M n` after each
/// acknowledged send and `B n` after each acknowledged blob write.
#[test]
#[ignore = "child process of sigkill_loses_nothing_acknowledged"]
fn crash_writer_child() {
    let Ok(dir) = std::env::var(CRASH_DIR) else {
        return;
    };
    let start: u64 = std::env::var(CRASH_START).unwrap().parse().unwrap();
    runtime().block_on(async move {
        let storage = EmbeddedStorage::open(Path::new(&dir)).unwrap();
        let (queues, blobs) = (storage.queues(), storage.blobs());
        queues.create_queue(QUEUE).await.unwrap();
        let mut tasks = Vec::new();
        for task in 0..4u64 {
            let (queues, blobs) = (queues.clone(), blobs.clone());
            tasks.push(tokio::spawn(async move {
                for i in 0..100_000u64 {
                    let n = start + task * 1_000_000 + i;
                    queues
                        .send(QUEUE, &format!("m-{n}"), SendOptions::default())
                        .await
                        .unwrap();
                    ack(&format!("M {n}"));
                    if i.is_multiple_of(3) {
                        let data = blob_content(n);
                        if n.is_multiple_of(2) {
                            blobs
                                .put(&blob_key(n), Bytes::from(data), PutMode::CreateNew)
                                .await
                                .unwrap();
                        } else {
                            let mut upload = blobs.upload(&blob_key(n)).await.unwrap();
                            for chunk in data.chunks(40_000) {
                                upload.write(Bytes::copy_from_slice(chunk)).await.unwrap();
                            }
                            upload.finish().await.unwrap();
                        }
                        ack(&format!("B {n}"));
                    }
                }
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
    });
}

#[test]
fn sigkill_loses_nothing_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let rt = runtime();
    for round in 0..3u64 {
        let mut child = spawn_child(
            "crash::crash_writer_child",
            &[
                (CRASH_DIR, dir.path().display().to_string()),
                (CRASH_START, (round * 10_000_000).to_string()),
            ],
        );
        let lines = lines_of(&mut child);
        let (mut messages, mut blob_ids) = (HashSet::new(), HashSet::new());
        let mut record = |line: &str| {
            if let Some(n) = line.strip_prefix("M ") {
                messages.insert(n.parse::<u64>().unwrap());
            } else if let Some(n) = line.strip_prefix("B ") {
                blob_ids.insert(n.parse::<u64>().unwrap());
            }
        };
        let kill_after = rand::random_range(20..1500);
        let mut acks = 0;
        while acks < kill_after {
            let line = lines
                .recv_timeout(Duration::from_secs(60))
                .expect("the child stopped acknowledging");
            record(&line);
            acks += usize::from(line.starts_with("M ") || line.starts_with("B "));
        }
        std::thread::sleep(Duration::from_micros(rand::random_range(0..3000)));
        child.kill().expect("SIGKILL the child");
        let status = child.wait().unwrap();
        assert!(
            status.code().is_none(),
            "the child exited by itself: {status}"
        );
        // Lines already written to the pipe were acknowledged before the kill.
        while let Ok(line) = lines.recv_timeout(Duration::from_secs(10)) {
            record(&line);
        }
        assert!(!messages.is_empty());

        rt.block_on(async {
            let storage = EmbeddedStorage::open(dir.path()).unwrap();
            let (queues, blobs) = (storage.queues(), storage.blobs());
            for n in &blob_ids {
                let got = blobs.get(&blob_key(*n)).await.unwrap_or_else(|e| {
                    panic!("round {round}: acknowledged blob {n} is lost: {e}")
                });
                assert!(
                    got == blob_content(*n),
                    "round {round}: blob {n} is damaged"
                );
            }
            let mut found = HashSet::new();
            for m in drain(&*queues, 32).await {
                let n: u64 = m.body.strip_prefix("m-").unwrap().parse().unwrap();
                assert!(found.insert(n), "round {round}: message {n} is there twice");
                assert_eq!(m.dequeue_count, 1);
            }
            let lost: Vec<_> = messages.difference(&found).collect();
            assert!(
                lost.is_empty(),
                "round {round}: {} acknowledged messages lost, e.g. {:?}",
                lost.len(),
                &lost[..lost.len().min(5)]
            );
            assert_eq!(queues.approximate_depth(QUEUE).await.unwrap(), 0);
            println!(
                "round {round}: killed after {} sends and {} blobs acknowledged; all present",
                messages.len(),
                blob_ids.len()
            );
        });
    }
}

/// Receives and deletes from the shared queue until it is empty, printing `GOT body` for each
/// message it deleted.
#[test]
#[ignore = "child process of two_processes_share_a_queue_without_loss_or_duplicates"]
fn share_consumer_child() {
    let Ok(dir) = std::env::var(SHARE_DIR) else {
        return;
    };
    runtime().block_on(async move {
        let storage = EmbeddedStorage::open(Path::new(&dir)).unwrap();
        let queues = storage.queues();
        // Start together with the other consumer, so the two really race.
        crate::support::eventually(Duration::from_secs(30), "the go-ahead", async || {
            Path::new(&dir).join("go").exists()
        })
        .await;
        let mut idle = 0;
        while idle < 20 {
            let got = queues.receive(QUEUE, 4, LONG).await.unwrap();
            if got.is_empty() {
                if queues.approximate_depth(QUEUE).await.unwrap() == 0 {
                    idle += 1;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
                continue;
            }
            idle = 0;
            for m in got {
                match queues.delete(QUEUE, &m.id, &m.pop_receipt).await {
                    Ok(()) => ack(&format!("GOT {}", m.body)),
                    Err(e) => panic!("delete of a message this process holds: {e}"),
                }
            }
        }
    });
}

#[test]
fn two_processes_share_a_queue_without_loss_or_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let total = 1500;
    runtime().block_on(async {
        let storage = EmbeddedStorage::open(dir.path()).unwrap();
        let queues = storage.queues();
        queues.create_queue(QUEUE).await.unwrap();
        for i in 0..total {
            queues
                .send(QUEUE, &format!("s-{i}"), SendOptions::default())
                .await
                .unwrap();
        }
    });
    let mut children: Vec<Child> = (0..2)
        .map(|_| {
            spawn_child(
                "crash::share_consumer_child",
                &[(SHARE_DIR, dir.path().display().to_string())],
            )
        })
        .collect();
    let streams: Vec<_> = children.iter_mut().map(lines_of).collect();
    std::fs::write(dir.path().join("go"), b"").unwrap();
    let mut per_child = Vec::new();
    let mut seen = Vec::new();
    for lines in streams {
        let mut count = 0;
        while let Ok(line) = lines.recv_timeout(Duration::from_secs(60)) {
            if let Some(body) = line.strip_prefix("GOT ") {
                seen.push(body.to_string());
                count += 1;
            }
        }
        per_child.push(count);
    }
    for mut child in children {
        assert!(child.wait().unwrap().success(), "a consumer failed");
    }
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "a message was consumed twice");
    assert_eq!(
        seen.len(),
        total,
        "messages consumed per process: {per_child:?}"
    );
    println!("two processes consumed {per_child:?} messages");
}

/// Two stores opened on one directory in one process behave as two processes would: no message
/// lost or doubled, and one winner among create-only writers across both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_on_one_directory_agree() {
    let dir = tempfile::tempdir().unwrap();
    let a = EmbeddedStorage::open(dir.path()).unwrap();
    let b = EmbeddedStorage::open(dir.path()).unwrap();
    a.queues().create_queue(QUEUE).await.unwrap();
    let total = 300;
    for i in 0..total {
        b.queues()
            .send(QUEUE, &format!("x-{i}"), SendOptions::default())
            .await
            .unwrap();
    }
    let mut tasks = Vec::new();
    for store in [a.queues(), b.queues(), a.queues(), b.queues()] {
        tasks.push(tokio::spawn(async move {
            let got = drain(&*store, 16).await;
            got.into_iter().map(|m| m.body).collect::<Vec<_>>()
        }));
    }
    let mut seen = Vec::new();
    for task in tasks {
        seen.extend(task.await.unwrap());
    }
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len());
    assert_eq!(seen.len(), total);

    let mut writers = Vec::new();
    for (i, store) in [a.blobs(), b.blobs(), a.blobs(), b.blobs()]
        .into_iter()
        .enumerate()
    {
        writers.push(tokio::spawn(async move {
            store
                .put(
                    "shared/once",
                    Bytes::from(vec![i as u8; 10_000]),
                    PutMode::CreateNew,
                )
                .await
        }));
    }
    let mut wins = 0;
    for writer in writers {
        match writer.await.unwrap() {
            Ok(_) => wins += 1,
            Err(StorageError::AlreadyExists(_)) => {}
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(wins, 1);
}
