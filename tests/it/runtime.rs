//! The queue listener runtime against real backends: redelivery after a killed process, the poison
//! path, malformed bodies, lease renewal, the back-off schedule, graceful shutdown and nudges that
//! cross processes.
//!
//! Tests that need a second process re-run this test binary with `runtime::child_process` as the
//! filter and the child's part named in `TESSERA_RUNTIME_CHILD`; the child prints `CHILD …` lines
//! the parent reads.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::{KillOnDrop, eventually, unique_name};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tempfile::TempDir;
use tessera_azure::{AzureOptions, AzureStorage};
use tessera_shared::accounting::{Accounting, Op};
use tessera_shared::messages::{Encoding, Envelope, Message, QueueName};
use tessera_shared::queue::Queue;
use tessera_shared::runtime::backoff::Backoff;
use tessera_shared::runtime::{
    Context, Failure, Listener, ListenerSettings, NudgeSettings, Nudges, PoisonRecord, poison,
};
use tessera_shared::storage::embedded::EmbeddedStorage;
use tessera_shared::storage::{
    BlobStore, MessageUpdate, PeekedMessage, QueueStore, ReceivedMessage, SendOptions, SentMessage,
    UpdatedMessage,
};
use tokio::sync::mpsc;
use uuid::Uuid;

const CHILD_ENV: &str = "TESSERA_RUNTIME_CHILD";

/// The message the tests send.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Ping {
    job_id: Uuid,
    n: u32,
    #[serde(default)]
    pad: String,
}

impl Message for Ping {
    const QUEUE: QueueName = QueueName::SliceRequest;
    const KIND: &'static str = "Ping";
}

fn ping(n: u32) -> Envelope<Ping> {
    Envelope::new(
        Uuid::nil(),
        Ping {
            job_id: Uuid::new_v4(),
            n,
            pad: String::new(),
        },
    )
}

/// Both stores of an embedded data directory that lives as long as this value.
struct Store {
    queues: Arc<dyn QueueStore>,
    blobs: Arc<dyn BlobStore>,
    /// The embedded data directory; `None` for Azure.
    dir: Option<TempDir>,
}

fn embedded() -> Store {
    let dir = tempfile::tempdir().unwrap();
    let storage = EmbeddedStorage::open(dir.path()).unwrap();
    Store {
        queues: storage.queues(),
        blobs: storage.blobs(),
        dir: Some(dir),
    }
}

/// Azurite (or the account `TESSERA_AZURE_CONNECTION_STRING` names). Fails, never skips, when
/// the variable is unset: `scripts/test.sh` starts Azurite and sets it.
fn azurite() -> Store {
    let storage = azure_storage();
    Store {
        queues: storage.queues(),
        blobs: storage.blobs(),
        dir: None,
    }
}

fn azure_storage() -> AzureStorage {
    let connection = std::env::var("TESSERA_AZURE_CONNECTION_STRING").expect(
        "TESSERA_AZURE_CONNECTION_STRING is not set: run scripts/test.sh, or start Azurite with \
         scripts/azurite.sh start and set TESSERA_AZURE_CONNECTION_STRING=UseDevelopmentStorage=true",
    );
    AzureStorage::from_connection_string(&connection, AzureOptions::default())
        .expect("a valid Azure connection string")
}

/// One test per scenario and backend: `runtime::embedded::<name>` and `runtime::azurite::<name>`.
macro_rules! on_every_backend {
    ($($name:ident),* $(,)?) => {
        mod embedded {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(&super::embedded()).await;
                }
            )*
        }
        mod azurite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(&super::azurite()).await;
                }
            )*
        }
    };
}

on_every_backend!(
    handles_each_message_once_and_counts_its_transactions,
    poison_path_end_to_end_with_the_reason_readable,
    handler_poison_and_malformed_bodies_go_straight_to_the_poison_queue,
    a_base64_queue_writes_its_poison_records_in_base64,
    a_handler_three_times_the_visibility_timeout_keeps_its_lease,
    a_panicking_handler_is_a_failed_attempt_not_a_dead_worker,
    graceful_shutdown_finishes_in_time_and_releases_the_rest,
    a_send_nudges_an_idle_listener_in_the_same_process,
    a_message_in_hand_when_its_process_is_killed_is_delivered_again,
    a_nudge_crosses_from_one_process_to_another,
);

impl Store {
    fn queue(&self, name: &str, nudges: &Nudges) -> Queue<Ping> {
        Queue::new(self.queues.clone(), self.blobs.clone(), nudges.clone()).named(name)
    }
}

fn quick() -> ListenerSettings {
    ListenerSettings {
        min_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(200),
        ..ListenerSettings::default()
    }
}

/// A listener that, idle, polls again only after 30 s: sooner only when nudged.
fn polls_every_30s() -> ListenerSettings {
    ListenerSettings {
        min_backoff: Duration::from_secs(30),
        max_backoff: Duration::from_secs(30),
        ..ListenerSettings::default()
    }
}

async fn poison_records(store: &Store, queue: &str) -> Vec<PoisonRecord> {
    store
        .queues
        .peek(&format!("{queue}-poison"), 32)
        .await
        .unwrap()
        .into_iter()
        .map(|m| {
            let text = tessera_shared::messages::Encoding::from_wire(&m.body).unwrap();
            serde_json::from_str(&text).unwrap()
        })
        .collect()
}

async fn handles_each_message_once_and_counts_its_transactions(store: &Store) {
    let accounting = Accounting::new();
    let queues: Arc<dyn QueueStore> = Arc::new(accounting.wrap(store.queues.clone()));
    let blobs: Arc<dyn BlobStore> = Arc::new(accounting.wrap(store.blobs.clone()));
    let nudges = Nudges::local();
    let name = unique_name("rt");
    let queue = Queue::<Ping>::new(queues, blobs, nudges).named(&name);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let jobs = Arc::new(Mutex::new(Vec::new()));
    let (s, j) = (seen.clone(), jobs.clone());
    let listener = Listener::new(queue.clone())
        .settings(quick())
        .start(move |m: Envelope<Ping>, ctx: Context| {
            let (s, j) = (s.clone(), j.clone());
            async move {
                assert_eq!(ctx.job, Some(m.body.job_id));
                s.lock().unwrap().push(m.body.n);
                j.lock().unwrap().push(m.body.job_id);
                Ok(())
            }
        })
        .await
        .unwrap();
    // One body over the 64 KiB limit travels through a blob.
    let mut big = ping(99);
    big.body.pad = "x".repeat(100 * 1024);
    for n in 0..20 {
        queue.send(&ping(n)).await.unwrap();
    }
    queue.send(&big).await.unwrap();
    eventually(Duration::from_secs(10), "21 messages handled", async || {
        listener.stats().processed == 21
    })
    .await;
    let stats = listener.shutdown(Duration::from_secs(5)).await;
    let mut seen = seen.lock().unwrap().clone();
    seen.sort_unstable();
    let mut expected: Vec<u32> = (0..20).collect();
    expected.push(99);
    assert_eq!(seen, expected);
    assert_eq!(stats.poisoned + stats.retried, 0);
    assert_eq!(store.queues.approximate_depth(&name).await.unwrap(), 0);

    let snap = accounting.snapshot();
    assert_eq!(snap.op(Op::Put), 21);
    assert_eq!(snap.op(Op::Delete), 21);
    assert_eq!(snap.op(Op::Get), stats.receives);
    // The large body: written once, read once, deleted once.
    assert_eq!(snap.by_target["messagebodies"][&Op::BlobWrite], 1);
    assert_eq!(snap.by_target["messagebodies"][&Op::BlobRead], 1);
    assert_eq!(snap.by_target["messagebodies"][&Op::BlobDelete], 1);
    // Each job is charged its own delete.
    for job in jobs.lock().unwrap().iter() {
        assert_eq!(snap.by_job[job][&Op::Delete], 1, "job {job}");
    }
}

async fn poison_path_end_to_end_with_the_reason_readable(store: &Store) {
    let name = unique_name("rt");
    let queue = store.queue(&name, &Nudges::local());
    let attempts = Arc::new(AtomicU32::new(0));
    let hooked = Arc::new(Mutex::new(Vec::<PoisonRecord>::new()));
    let (a, h) = (attempts.clone(), hooked.clone());
    let listener = Listener::new(queue.clone())
        .settings(ListenerSettings {
            poison_threshold: 3,
            ..quick()
        })
        .on_poison(poison::hook(move |record| {
            let h = h.clone();
            async move { h.lock().unwrap().push(record) }
        }))
        .start(move |_m: Envelope<Ping>, _ctx: Context| {
            let a = a.clone();
            async move {
                a.fetch_add(1, Ordering::SeqCst);
                Err(Failure::retry_after(Duration::ZERO))
            }
        })
        .await
        .unwrap();
    let sent = ping(7);
    queue.send(&sent).await.unwrap();
    eventually(Duration::from_secs(10), "message poisoned", async || {
        listener.stats().poisoned == 1
    })
    .await;
    listener.shutdown(Duration::from_secs(5)).await;

    // Three attempts ran; the fourth receive moved the message aside without running it.
    assert_eq!(attempts.load(Ordering::SeqCst), 3);
    assert_eq!(store.queues.approximate_depth(&name).await.unwrap(), 0);
    let records = poison_records(store, &name).await;
    assert_eq!(records.len(), 1);
    let record = &records[0];
    assert!(
        record.reason.contains("over the poison threshold of 3"),
        "{}",
        record.reason
    );
    assert_eq!(record.dequeue_count, 4);
    assert_eq!(record.queue, name);
    assert_eq!(record.job_id, Some(sent.body.job_id));
    // The record keeps the body as it was sent (base64 by default).
    let body = record.body.as_deref().unwrap();
    assert_eq!(Encoding::of(body), Encoding::Base64);
    assert_eq!(
        Envelope::<Ping>::decode(&Encoding::from_wire(body).unwrap()).unwrap(),
        sent
    );
    assert_eq!(hooked.lock().unwrap().as_slice(), records.as_slice());
}

/// A queue written in base64 (for Azure Functions' bindings) writes its poison records in
/// base64 too, so the same tooling reads its poison queue.
async fn a_base64_queue_writes_its_poison_records_in_base64(store: &Store) {
    let name = unique_name("rt");
    let queue = store
        .queue(&name, &Nudges::local())
        .encoded(Encoding::Base64);
    let listener = Listener::new(queue.clone())
        .settings(quick())
        .start(|m: Envelope<Ping>, _ctx: Context| async move {
            Err(Failure::poison(format!("ping {} refused", m.body.n)))
        })
        .await
        .unwrap();
    queue.send(&ping(7)).await.unwrap();
    eventually(
        Duration::from_secs(10),
        "the message poisoned",
        async || listener.stats().poisoned == 1,
    )
    .await;
    listener.shutdown(Duration::from_secs(5)).await;
    let raw = store
        .queues
        .peek(&format!("{name}-poison"), 32)
        .await
        .unwrap();
    assert_eq!(raw.len(), 1);
    assert_eq!(
        Encoding::of(&raw[0].body),
        Encoding::Base64,
        "{}",
        raw[0].body
    );
    let records = poison_records(store, &name).await;
    assert_eq!(records[0].reason, "ping 7 refused");
}

async fn handler_poison_and_malformed_bodies_go_straight_to_the_poison_queue(store: &Store) {
    let name = unique_name("rt");
    let queue = store.queue(&name, &Nudges::local());
    let attempts = Arc::new(AtomicU32::new(0));
    let a = attempts.clone();
    let listener = Listener::new(queue.clone())
        .settings(quick())
        .start(move |m: Envelope<Ping>, _ctx: Context| {
            let a = a.clone();
            async move {
                a.fetch_add(1, Ordering::SeqCst);
                Err(Failure::poison(format!("ping {} refused", m.body.n)))
            }
        })
        .await
        .unwrap();
    store
        .queues
        .send(&name, "{not json", SendOptions::default())
        .await
        .unwrap();
    store
        .queues
        .send(
            &name,
            r#"{"v":1,"kind":"Pong","client_id":"00000000-0000-0000-0000-000000000000","request_id":"00000000-0000-0000-0000-000000000000","body":{}}"#,
            SendOptions::default(),
        )
        .await
        .unwrap();
    queue.send(&ping(5)).await.unwrap();
    eventually(
        Duration::from_secs(10),
        "three messages poisoned",
        async || listener.stats().poisoned == 3,
    )
    .await;
    listener.shutdown(Duration::from_secs(5)).await;

    // The handler saw only the well-formed message, once; nothing was retried.
    assert_eq!(attempts.load(Ordering::SeqCst), 1);
    let records = poison_records(store, &name).await;
    let by_body: HashMap<String, &PoisonRecord> = records
        .iter()
        .map(|r| (r.body.clone().unwrap(), r))
        .collect();
    let malformed = by_body["{not json"];
    assert!(
        malformed
            .reason
            .starts_with("undecodable body: message is not valid JSON"),
        "{}",
        malformed.reason
    );
    assert_eq!(malformed.dequeue_count, 1);
    let wrong_kind = records.iter().find(|r| r.reason.contains("Pong")).unwrap();
    assert_eq!(wrong_kind.dequeue_count, 1);
    let refused = records
        .iter()
        .find(|r| r.reason == "ping 5 refused")
        .unwrap();
    assert_eq!(refused.dequeue_count, 1);
}

async fn a_handler_three_times_the_visibility_timeout_keeps_its_lease(store: &Store) {
    let name = unique_name("rt");
    let queue = store.queue(&name, &Nudges::local());
    let attempts = Arc::new(AtomicU32::new(0));
    let a = attempts.clone();
    let settings = ListenerSettings {
        visibility_timeout: Duration::from_secs(1),
        renewal_interval: Duration::from_millis(300),
        ..quick()
    };
    let listener = Listener::new(queue.clone())
        .settings(settings.clone())
        .start(move |_m: Envelope<Ping>, _ctx: Context| {
            let a = a.clone();
            async move {
                a.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_secs(3)).await;
                Ok(())
            }
        })
        .await
        .unwrap();
    queue.send(&ping(1)).await.unwrap();
    // The slow handler holds the message before the rival starts.
    eventually(
        Duration::from_secs(15),
        "slow handler started",
        async || attempts.load(Ordering::SeqCst) == 1,
    )
    .await;
    // A second listener on the same queue would take the message if its lease lapsed.
    let rival_attempts = Arc::new(AtomicU32::new(0));
    let r = rival_attempts.clone();
    let rival = Listener::new(queue.clone())
        .settings(settings)
        .start(move |_m: Envelope<Ping>, _ctx: Context| {
            let r = r.clone();
            async move {
                r.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        })
        .await
        .unwrap();
    eventually(Duration::from_secs(15), "message handled", async || {
        listener.stats().processed + rival.stats().processed == 1
    })
    .await;
    // Give a lapsed lease the chance to show up as a second delivery.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let stats = listener.shutdown(Duration::from_secs(5)).await;
    let rival_stats = rival.shutdown(Duration::from_secs(5)).await;
    let total = attempts.load(Ordering::SeqCst) + rival_attempts.load(Ordering::SeqCst);
    assert_eq!(total, 1, "the message ran more than once");
    let renewals = stats.renewals + rival_stats.renewals;
    assert!(renewals >= 5, "only {renewals} renewals in 3 s at 300 ms");
    assert_eq!(stats.lost_leases + rival_stats.lost_leases, 0);
    assert_eq!(store.queues.approximate_depth(&name).await.unwrap(), 0);
}

async fn a_panicking_handler_is_a_failed_attempt_not_a_dead_worker(store: &Store) {
    let name = unique_name("rt");
    let queue = store.queue(&name, &Nudges::local());
    let attempts = Arc::new(AtomicU32::new(0));
    let a = attempts.clone();
    let listener = Listener::new(queue.clone())
        .settings(ListenerSettings {
            max_retry_delay: Duration::from_millis(100),
            ..quick()
        })
        .start(move |m: Envelope<Ping>, ctx: Context| {
            let a = a.clone();
            async move {
                a.fetch_add(1, Ordering::SeqCst);
                if m.body.n == 0 && ctx.dequeue_count == 1 {
                    panic!("first attempt fails");
                }
                Ok(())
            }
        })
        .await
        .unwrap();
    queue.send(&ping(0)).await.unwrap();
    queue.send(&ping(1)).await.unwrap();
    eventually(Duration::from_secs(10), "both handled", async || {
        listener.stats().processed == 2
    })
    .await;
    let stats = listener.shutdown(Duration::from_secs(5)).await;
    assert_eq!(stats.panicked, 1);
    assert_eq!(attempts.load(Ordering::SeqCst), 3);
}

async fn graceful_shutdown_finishes_in_time_and_releases_the_rest(store: &Store) {
    let name = unique_name("rt");
    let queue = store.queue(&name, &Nudges::local());
    let started = Arc::new(AtomicU32::new(0));
    let s = started.clone();
    // One handler at a time: the first message runs, the second waits its turn in the process.
    let listener = Listener::new(queue.clone())
        .settings(ListenerSettings {
            max_concurrency: 1,
            visibility_timeout: Duration::from_secs(60),
            ..quick()
        })
        .start(move |_m: Envelope<Ping>, ctx: Context| {
            let s = s.clone();
            async move {
                // Whichever message runs first finishes soon after shutdown begins (a batch
                // has no order).
                if s.fetch_add(1, Ordering::SeqCst) == 0 {
                    ctx.shutting_down().await;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    Ok(())
                } else {
                    std::future::pending::<()>().await;
                    Ok(())
                }
            }
        })
        .await
        .unwrap();
    queue.send(&ping(0)).await.unwrap();
    queue.send(&ping(1)).await.unwrap();
    eventually(Duration::from_secs(10), "both received", async || {
        listener.stats().received == 2 && started.load(Ordering::SeqCst) == 1
    })
    .await;
    let stats = listener.shutdown(Duration::from_secs(5)).await;
    assert_eq!(
        started.load(Ordering::SeqCst),
        1,
        "no handler starts after shutdown"
    );
    assert_eq!(stats.processed, 1);
    assert_eq!(stats.released, 1);
    // The released message is visible again at once, not after its 60 s timeout.
    let again = store
        .queues
        .receive(&name, 32, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].dequeue_count, 2);

    // A handler that outlives the deadline is abandoned and its message released.
    let name = unique_name("rt");
    let queue = store.queue(&name, &Nudges::local());
    let listener = Listener::new(queue.clone())
        .settings(ListenerSettings {
            visibility_timeout: Duration::from_secs(60),
            ..quick()
        })
        .start(move |_m: Envelope<Ping>, _ctx: Context| async move {
            std::future::pending::<()>().await;
            Ok(())
        })
        .await
        .unwrap();
    queue.send(&ping(2)).await.unwrap();
    eventually(Duration::from_secs(10), "handler running", async || {
        listener.stats().running == 1
    })
    .await;
    let stats = listener.shutdown(Duration::from_millis(200)).await;
    assert_eq!((stats.processed, stats.released), (0, 1));
    let again = store
        .queues
        .receive(&name, 32, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(again.len(), 1);
}

/// Delegates to a real backend and reports when each receive is made, on tokio's clock.
#[derive(Debug)]
struct ReceiveTimes {
    inner: Arc<dyn QueueStore>,
    times: mpsc::UnboundedSender<tokio::time::Instant>,
}

#[async_trait]
impl QueueStore for ReceiveTimes {
    async fn create_queue(&self, q: &str) -> tessera_shared::storage::Result<()> {
        self.inner.create_queue(q).await
    }
    async fn delete_queue(&self, q: &str) -> tessera_shared::storage::Result<()> {
        self.inner.delete_queue(q).await
    }
    async fn list_queues(&self) -> tessera_shared::storage::Result<Vec<String>> {
        self.inner.list_queues().await
    }
    async fn send(
        &self,
        q: &str,
        body: &str,
        o: SendOptions,
    ) -> tessera_shared::storage::Result<SentMessage> {
        self.inner.send(q, body, o).await
    }
    async fn receive(
        &self,
        q: &str,
        max: usize,
        vis: Duration,
    ) -> tessera_shared::storage::Result<Vec<ReceivedMessage>> {
        let _ = self.times.send(tokio::time::Instant::now());
        self.inner.receive(q, max, vis).await
    }
    async fn update(
        &self,
        q: &str,
        change: MessageUpdate<'_>,
    ) -> tessera_shared::storage::Result<UpdatedMessage> {
        self.inner.update(q, change).await
    }
    async fn delete(&self, q: &str, id: &str, r: &str) -> tessera_shared::storage::Result<()> {
        self.inner.delete(q, id, r).await
    }
    async fn peek(
        &self,
        q: &str,
        max: usize,
    ) -> tessera_shared::storage::Result<Vec<PeekedMessage>> {
        self.inner.peek(q, max).await
    }
    async fn approximate_depth(&self, q: &str) -> tessera_shared::storage::Result<u64> {
        self.inner.approximate_depth(q).await
    }
    async fn get_metadata(
        &self,
        q: &str,
    ) -> tessera_shared::storage::Result<HashMap<String, String>> {
        self.inner.get_metadata(q).await
    }
    async fn set_metadata(
        &self,
        q: &str,
        m: &HashMap<String, String>,
    ) -> tessera_shared::storage::Result<()> {
        self.inner.set_metadata(q, m).await
    }
    async fn clear(&self, q: &str) -> tessera_shared::storage::Result<()> {
        self.inner.clear(q).await
    }
}

#[tokio::test(start_paused = true)]
async fn idle_back_off_follows_the_seeded_schedule() {
    let store = embedded();
    let (tx, mut times) = mpsc::unbounded_channel();
    let queues: Arc<dyn QueueStore> = Arc::new(ReceiveTimes {
        inner: store.queues.clone(),
        times: tx,
    });
    let name = unique_name("rt");
    let nudges = Nudges::local();
    let queue = Queue::<Ping>::new(queues, store.blobs.clone(), nudges).named(&name);
    let (min, max) = (Duration::from_millis(100), Duration::from_secs(5));
    let listener = Listener::new(queue.clone())
        .settings(ListenerSettings {
            min_backoff: min,
            max_backoff: max,
            ..ListenerSettings::default()
        })
        .seed(42)
        .start(move |_m: Envelope<Ping>, _ctx: Context| async move { Ok(()) })
        .await
        .unwrap();

    let mut expected = Backoff::seeded(min, max, 42);
    let mut last = times.recv().await.unwrap();
    for i in 0..10 {
        let at = times.recv().await.unwrap();
        let want = expected.next_delay();
        let got = at - last;
        // tokio's timer rounds a sleep up to the next millisecond.
        assert!(
            got >= want && got <= want + Duration::from_millis(2),
            "poll {i}: slept {got:?}, the schedule says {want:?}"
        );
        last = at;
    }
    listener.shutdown(Duration::from_secs(5)).await;
}

/// A listener that polls once at start, then not again for 30 s (only a nudge can wake it
/// sooner), and hands each ping's number to the receiver; returned after its first poll.
async fn idle_listener(
    queue: Queue<Ping>,
) -> (
    tessera_shared::runtime::ListenerHandle,
    mpsc::UnboundedReceiver<u32>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let listener = Listener::new(queue)
        .settings(polls_every_30s())
        .start(move |m: Envelope<Ping>, _ctx: Context| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(m.body.n);
                Ok(())
            }
        })
        .await
        .unwrap();
    eventually(Duration::from_secs(10), "first poll", async || {
        listener.stats().empty_receives >= 1
    })
    .await;
    (listener, rx)
}

async fn a_send_nudges_an_idle_listener_in_the_same_process(store: &Store) {
    let name = unique_name("rt");
    let queue = store.queue(&name, &Nudges::local());
    let (listener, mut rx) = idle_listener(queue.clone()).await;
    queue.send(&ping(8)).await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(15), rx.recv()).await;
    assert_eq!(got.expect("not woken by the nudge"), Some(8));
    listener.shutdown(Duration::from_secs(5)).await;
}

/// Starts this test binary again as a child process playing `role`, on `store`'s backend.
fn spawn_child(
    role: &str,
    store: &Store,
    queue: &str,
) -> (KillOnDrop, std::sync::mpsc::Receiver<String>) {
    let mut command = Command::new(std::env::current_exe().unwrap());
    if let Some(dir) = &store.dir {
        command.env("TESSERA_RUNTIME_DIR", dir.path());
    }
    let mut child = command
        .args([
            "runtime::child_process",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, role)
        .env("TESSERA_RUNTIME_QUEUE", queue)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            // libtest may print `test runtime::child_process ... ` before the first line.
            if let Some(at) = line.find("CHILD ") {
                let _ = tx.send(line[at + "CHILD ".len()..].to_string());
            }
        }
    });
    (KillOnDrop(child), rx)
}

fn expect_line(rx: &std::sync::mpsc::Receiver<String>, prefix: &str) -> String {
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("child never said {prefix:?}"));
        if line.starts_with(prefix) {
            return line;
        }
    }
}

/// The child's side of the two-process tests, run by them alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "child process of the two-process runtime tests"]
async fn child_process() {
    let Ok(role) = std::env::var(CHILD_ENV) else {
        return;
    };
    let name = std::env::var("TESSERA_RUNTIME_QUEUE").unwrap();
    let (queues, blobs) = match std::env::var("TESSERA_RUNTIME_DIR") {
        Ok(dir) => {
            let storage = EmbeddedStorage::open(Path::new(&dir)).unwrap();
            (storage.queues(), storage.blobs())
        }
        Err(_) => {
            let storage = azure_storage();
            (storage.queues(), storage.blobs())
        }
    };
    let nudges = Nudges::cross_process(blobs.clone(), NudgeSettings::default());
    let queue = Queue::<Ping>::new(queues, blobs, nudges).named(&name);
    match role.as_str() {
        "crash" => {
            let _listener = Listener::new(queue)
                .settings(ListenerSettings {
                    visibility_timeout: Duration::from_secs(2),
                    renewal_interval: Duration::from_millis(500),
                    ..quick()
                })
                .start(|m: Envelope<Ping>, ctx: Context| async move {
                    println!("CHILD started {} {}", m.body.n, ctx.dequeue_count);
                    std::future::pending::<()>().await;
                    Ok(())
                })
                .await
                .unwrap();
            std::future::pending::<()>().await;
        }
        "nudged" => {
            // Polls once at start, then not again for 30 s: only a nudge can wake it sooner.
            let listener = Listener::new(queue)
                .settings(polls_every_30s())
                .start(|m: Envelope<Ping>, _ctx: Context| async move {
                    println!("CHILD handled {}", m.body.n);
                    Ok(())
                })
                .await
                .unwrap();
            eventually(Duration::from_secs(10), "first poll", async || {
                listener.stats().empty_receives >= 1
            })
            .await;
            println!("CHILD ready");
            std::future::pending::<()>().await;
        }
        other => panic!("unknown child role {other}"),
    }
}

async fn a_message_in_hand_when_its_process_is_killed_is_delivered_again(store: &Store) {
    let name = unique_name("rt");
    let queue = store.queue(&name, &Nudges::local());
    queue.ensure().await.unwrap();
    let sent = ping(41);
    queue.send(&sent).await.unwrap();
    let (child, lines) = spawn_child("crash", store, &name);
    assert_eq!(expect_line(&lines, "started"), "started 41 1");
    // SIGKILL: no chance to release the message.
    drop(child);

    // The lease lapses (2 s) and a listener in this process gets the message again.
    let (tx, mut rx) = mpsc::unbounded_channel();
    let listener = Listener::new(queue)
        .settings(quick())
        .start(move |m: Envelope<Ping>, ctx: Context| {
            let tx = tx.clone();
            async move {
                let _ = tx.send((m, ctx.dequeue_count));
                Ok(())
            }
        })
        .await
        .unwrap();
    let (got, dequeue_count) = tokio::time::timeout(Duration::from_secs(20), rx.recv())
        .await
        .expect("message never redelivered")
        .unwrap();
    assert_eq!(got, sent);
    assert_eq!(dequeue_count, 2);
    listener.shutdown(Duration::from_secs(5)).await;
    assert_eq!(store.queues.approximate_depth(&name).await.unwrap(), 0);
}

async fn a_nudge_crosses_from_one_process_to_another(store: &Store) {
    let name = unique_name("rt");
    let (child, lines) = spawn_child("nudged", store, &name);
    expect_line(&lines, "ready");
    let nudges = Nudges::cross_process(store.blobs.clone(), NudgeSettings::default());
    let queue = store.queue(&name, &nudges);
    let sent_at = std::time::Instant::now();
    queue.send(&ping(3)).await.unwrap();
    assert_eq!(expect_line(&lines, "handled"), "handled 3");
    let waited = sent_at.elapsed();
    drop(child);
    // Without the nudge the child would not have polled again for 30 s.
    assert!(
        waited < Duration::from_secs(15),
        "picked up after {waited:?}"
    );
}

/// The nudge endpoint binds one address and registers another (as behind NAT or in a pod):
/// publishers see the advertised address and the fixed port, and a datagram to it wakes the
/// listener. A flood of datagrams (forged, say) wakes it at most once per `min_wake_interval`,
/// so it costs a bounded number of receives, and a real message is still picked up at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nudge_endpoint_advertises_its_address_and_a_datagram_flood_costs_bounded_receives() {
    use tessera_shared::runtime::NudgeEndpoint;
    use tessera_shared::storage::BlobStoreExt;

    let store = embedded();
    let name = unique_name("rt");
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let interval = Duration::from_millis(200);
    let nudges = Nudges::cross_process(
        store.blobs.clone(),
        NudgeSettings {
            endpoint: NudgeEndpoint {
                bind: "0.0.0.0".parse().unwrap(),
                advertise: "127.0.0.1".parse().unwrap(),
                port,
            },
            min_wake_interval: interval,
            ..NudgeSettings::default()
        },
    );
    let (listener, mut rx) = idle_listener(store.queue(&name, &nudges)).await;

    let registered = store
        .blobs
        .list_all(&format!("nudges/listeners/{name}/"))
        .await
        .unwrap();
    assert_eq!(registered.len(), 1, "{registered:?}");
    assert!(
        registered[0].key.ends_with(&format!("_127.0.0.1_{port}")),
        "registered as {}",
        registered[0].key
    );

    // One second of datagrams, as fast as they go.
    let flood = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let datagram = format!("tessera-nudge:{name}");
    let before = listener.stats().receives;
    let started = std::time::Instant::now();
    let mut sent = 0u32;
    while started.elapsed() < Duration::from_secs(1) {
        flood
            .send_to(datagram.as_bytes(), ("127.0.0.1", port))
            .unwrap();
        sent += 1;
        if sent.is_multiple_of(100) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    // Let a wake deferred to the end of the last interval happen.
    tokio::time::sleep(interval * 2).await;
    let receives = listener.stats().receives - before;
    let flood_time = started.elapsed();
    let bound = (flood_time.as_millis() / interval.as_millis()) as u64 + 2;
    assert!(sent >= 1000, "only {sent} datagrams sent");
    assert!(receives >= 1, "the datagrams never woke the listener");
    assert!(
        receives <= bound,
        "{sent} datagrams in {flood_time:?} cost {receives} receives (at most {bound} allowed)"
    );

    // Still a hint that works: a real message, nudged by datagram only, is picked up at once
    // (a publisher with its own registration list, as another process has).
    let publisher = Nudges::cross_process(store.blobs.clone(), NudgeSettings::default());
    let sent_at = std::time::Instant::now();
    store.queue(&name, &publisher).send(&ping(5)).await.unwrap();
    let got = tokio::time::timeout(Duration::from_secs(10), rx.recv()).await;
    assert_eq!(got.expect("not woken after the flood"), Some(5));
    assert!(sent_at.elapsed() < Duration::from_secs(5));
    listener.shutdown(Duration::from_secs(5)).await;
}

/// The address a process advertises by default is the one of the interface that reaches storage:
/// loopback for storage on this machine.
#[test]
fn the_interface_towards_local_storage_is_loopback() {
    use tessera_shared::nudge::local_address_towards;
    assert_eq!(
        local_address_towards("127.0.0.1", 10001).unwrap(),
        "127.0.0.1".parse::<std::net::IpAddr>().unwrap()
    );
    assert!(local_address_towards("no-such-host.invalid", 1).is_err());
}
