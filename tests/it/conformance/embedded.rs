//! The conformance suite against the embedded backend, one temporary data directory per test.

use tessera_shared::storage::embedded::{Durability, EmbeddedStorage};

use super::Backend;

async fn backend() -> Backend {
    let dir = tempfile::tempdir().expect("temporary directory");
    let storage = EmbeddedStorage::open(dir.path()).expect("open embedded storage");
    Backend::new(storage.queues(), storage.blobs(), dir)
}

mod queues {
    queue_conformance!(super::backend);
}

mod blobs {
    blob_conformance!(super::backend);
}

/// The same suite with every write fsynced.
mod power_loss {
    use super::*;

    async fn backend() -> Backend {
        let dir = tempfile::tempdir().expect("temporary directory");
        let storage = EmbeddedStorage::open_with(dir.path(), Durability::PowerLoss, 0)
            .expect("open embedded storage");
        Backend::new(storage.queues(), storage.blobs(), dir)
    }

    mod queues {
        queue_conformance!(super::backend);
    }

    mod blobs {
        blob_conformance!(super::backend);
    }
}

/// Messages per second through send, receive and delete with sixteen concurrent handlers. A
/// figure, not a pass mark: `cargo test --release --test it embedded_queue_throughput -- --ignored
/// --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: prints a figure"]
async fn embedded_queue_throughput() {
    use std::time::{Duration, Instant};
    use tessera_shared::storage::SendOptions;

    let backend = backend().await;
    let queue = super::unique_queue();
    backend.queues.create_queue(&queue).await.unwrap();
    let (handlers, per_handler) = (16, 1250);
    let total = handlers * per_handler;

    let started = Instant::now();
    let mut tasks = Vec::new();
    for h in 0..handlers {
        let (store, queue) = (backend.queues.clone(), queue.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..per_handler {
                store
                    .send(
                        &queue,
                        &format!("{{\"n\":{}}}", h * per_handler + i),
                        SendOptions::default(),
                    )
                    .await
                    .unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let sent_in = started.elapsed();

    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..handlers {
        let (store, queue) = (backend.queues.clone(), queue.clone());
        tasks.push(tokio::spawn(async move {
            let mut done = 0;
            loop {
                let batch = store
                    .receive(&queue, 32, Duration::from_secs(60))
                    .await
                    .unwrap();
                if batch.is_empty() {
                    return done;
                }
                for m in batch {
                    store.delete(&queue, &m.id, &m.pop_receipt).await.unwrap();
                    done += 1;
                }
            }
        }));
    }
    let mut done = 0;
    for task in tasks {
        done += task.await.unwrap();
    }
    let consumed_in = started.elapsed();
    assert_eq!(done, total);
    let rate = |d: Duration| total as f64 / d.as_secs_f64();
    println!(
        "embedded queue, {handlers} handlers, {total} messages: send {:.0}/s, receive+delete {:.0}/s, \
         send->receive->delete {:.0}/s",
        rate(sent_in),
        rate(consumed_in),
        rate(sent_in + consumed_in)
    );
}

/// A failed write keeps the operating system's error as its source, and says it in its message.
#[tokio::test]
async fn a_failed_write_keeps_its_cause_as_the_source() {
    use tessera_shared::storage::{PutMode, StorageError};
    let dir = tempfile::tempdir().unwrap();
    let storage = EmbeddedStorage::open(dir.path()).unwrap();
    let tmp = dir.path().join("blobs/.tmp");
    std::fs::remove_dir_all(&tmp).unwrap();
    std::fs::write(&tmp, b"").unwrap();
    let err = storage
        .blobs()
        .put(
            "cause/one",
            bytes::Bytes::from_static(b"x"),
            PutMode::Overwrite,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StorageError::Other(_)), "{err:?}");
    let source = std::error::Error::source(&err).expect("a source");
    let io = source
        .downcast_ref::<std::io::Error>()
        .expect("the io::Error");
    assert_eq!(io.raw_os_error(), Some(20), "{io}");
    assert!(err.to_string().contains("Not a directory"), "{err}");
}
