//! The pipeline's own harness, on either backend: the storage of one test (embedded, or the
//! shared Azurite under its lock) that checks at the test's end that its queues drained, a
//! queue store that delivers everything twice, and the controller and processors run in the
//! test's process.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tempfile::TempDir;
use tessera_engine::{ImportOptions, TileShape};
use tessera_shared::libraries::{LibraryRecord, Publication};
use tessera_shared::library_import::import_library;
use tessera_shared::messages::{Envelope, ImageResponse, QueueName};
use tessera_shared::nudge::Nudges;
use tessera_shared::platform::Platform;
use tessera_shared::runtime::shutdown::{self, ShutdownTrigger};
use tessera_shared::runtime::{Context, Failure, Listener, ListenerHandle, ListenerSettings};
use tessera_shared::storage::embedded::EmbeddedStorage;
use tessera_shared::storage::{
    BlobStore, MessageUpdate, PeekedMessage, QueueStore, ReceivedMessage, SendOptions, SentMessage,
    UpdatedMessage,
};
use tessera_workers::{ControllerSettings, ProcessorSettings, run_controller, run_processors};
use tokio::task::JoinHandle;
use uuid::Uuid;

use super::{block_on_aside, fixture, queues_emptied, wait_for};

/// Where the Azurite tests find their storage account.
pub(crate) const CONNECTION_ENV: &str = "TESSERA_AZURE_CONNECTION_STRING";

// ---------------------------------------------------------------------------------------------
// Environments

/// The pipeline's queues and their poison queues.
pub(crate) fn all_queue_names() -> Vec<String> {
    QueueName::ALL
        .iter()
        .flat_map(|q| [q.as_str().to_string(), q.poison()])
        .collect()
}

/// A storage backend for one test; on Azurite it holds the lock until dropped.
pub(crate) struct Env {
    pub(crate) platform: Platform,
    pub(crate) queues: Arc<dyn QueueStore>,
    pub(crate) blobs: Arc<dyn BlobStore>,
    /// Whether the test checked the queues itself ([`Env::drain`]); if not, the drop does.
    drained: AtomicBool,
    pub(crate) dir: Option<TempDir>,
    pub(crate) lock: Option<tokio::sync::MutexGuard<'static, ()>>,
}

pub(crate) fn embedded() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let storage = EmbeddedStorage::open(dir.path()).unwrap();
    Env::new(storage.queues(), storage.blobs(), Some(dir), None)
}

pub(crate) fn connection_string() -> String {
    std::env::var(CONNECTION_ENV).unwrap_or_else(|_| {
        panic!(
            "{CONNECTION_ENV} is not set: the Azurite pipeline tests need a running Azurite \
             (scripts/test.sh starts one and sets it; or `scripts/azurite.sh start` and \
             {CONNECTION_ENV}=UseDevelopmentStorage=true)"
        )
    })
}

pub(crate) async fn azurite() -> Env {
    let connection = connection_string();
    let lock = super::azurite_lock().lock().await;
    let storage = tessera_azure::AzureStorage::from_connection_string(
        &connection,
        tessera_azure::AzureOptions::default(),
    )
    .expect("Azurite connection string");
    let env = Env::new(storage.queues(), storage.blobs(), None, Some(lock));
    env.platform.ensure_queues().await.unwrap();
    for name in all_queue_names() {
        env.queues.clear(&name).await.unwrap();
        env.queues
            .set_metadata(&name, &HashMap::new())
            .await
            .unwrap();
    }
    env
}

impl Env {
    pub(crate) fn new(
        queues: Arc<dyn QueueStore>,
        blobs: Arc<dyn BlobStore>,
        dir: Option<TempDir>,
        lock: Option<tokio::sync::MutexGuard<'static, ()>>,
    ) -> Self {
        Env {
            platform: Platform::new(queues.clone(), blobs.clone(), Nudges::local()),
            queues,
            blobs,
            drained: AtomicBool::new(false),
            dir,
            lock,
        }
    }

    /// The same storage with every message on the pipeline's internal queues sent twice.
    pub(crate) fn doubled(&self) -> Platform {
        let queues: Arc<dyn QueueStore> = Arc::new(Twice(self.queues.clone()));
        Platform::new(queues, self.blobs.clone(), Nudges::local())
    }

    pub(crate) async fn library(&self) -> LibraryRecord {
        self.library_of_shape(TileShape::SQUARE).await
    }

    /// The fixture tiles cropped to `shape`.
    pub(crate) async fn library_of_shape(&self, shape: TileShape) -> LibraryRecord {
        let name = format!("emoji {}", &Uuid::new_v4().simple().to_string()[..8]);
        let tiles = fixture("engine/tiles");
        let options = ImportOptions {
            shape,
            ..ImportOptions::default()
        };
        let (record, report) = import_library(
            &self.platform,
            &tiles,
            &name,
            options,
            &Publication::operator(false),
        )
        .await
        .unwrap();
        assert!(report.imported >= 30, "{report:?}");
        assert_eq!(record.tiles as usize, report.imported);
        record
    }

    /// Messages left on every pipeline queue and poison queue.
    pub(crate) async fn depths(&self) -> HashMap<String, u64> {
        let mut depths = HashMap::new();
        for name in all_queue_names() {
            depths.insert(
                name.clone(),
                self.queues.approximate_depth(&name).await.unwrap(),
            );
        }
        depths
    }

    /// Waits until the queues hold what a finished test leaves: nothing, but the poison queues'
    /// messages `poisoned` names (`("imagerequest-poison", 1)`). Deletions may trail the last
    /// completion by a moment; at the deadline the test fails with the depths.
    pub(crate) async fn drain(&self, poisoned: &[(&str, u64)]) {
        self.drained.store(true, Ordering::Relaxed);
        let expected = |name: &str| {
            poisoned
                .iter()
                .find(|(q, _)| *q == name)
                .map_or(0, |(_, n)| *n)
        };
        wait_for(Duration::from_secs(30), async || {
            let depths = self.depths().await;
            if depths.iter().all(|(name, &n)| n == expected(name)) {
                Ok(())
            } else {
                Err(format!(
                    "the queues did not drain to {poisoned:?}: {depths:?}"
                ))
            }
        })
        .await
    }
}

impl Drop for Env {
    /// At the test's end, unless it failed already or checked the queues itself with what it
    /// leaves ([`Env::drain`]): every queue drains, poison queues included.
    fn drop(&mut self) {
        if std::thread::panicking() || self.drained.load(Ordering::Relaxed) {
            return;
        }
        let queues = all_queue_names();
        let store = self.queues.clone();
        let left = block_on_aside(move || async move {
            queues_emptied(&*store, &queues, Duration::from_secs(30)).await
        });
        if let Err(left) = left {
            panic!("the test left messages on its queues: {left}");
        }
    }
}

/// Sends every message twice, except the final `imageresponse` (so that a test can count the
/// completions the pipeline announces).
#[derive(Debug)]
pub(crate) struct Twice(Arc<dyn QueueStore>);

#[async_trait]
impl QueueStore for Twice {
    async fn create_queue(&self, queue: &str) -> tessera_shared::storage::Result<()> {
        self.0.create_queue(queue).await
    }
    async fn delete_queue(&self, queue: &str) -> tessera_shared::storage::Result<()> {
        self.0.delete_queue(queue).await
    }
    async fn list_queues(&self) -> tessera_shared::storage::Result<Vec<String>> {
        self.0.list_queues().await
    }
    async fn send(
        &self,
        queue: &str,
        body: &str,
        options: SendOptions,
    ) -> tessera_shared::storage::Result<SentMessage> {
        let first = self.0.send(queue, body, options).await?;
        if [
            QueueName::ImageRequest,
            QueueName::SliceRequest,
            QueueName::SliceResponse,
        ]
        .iter()
        .any(|q| q.as_str() == queue)
        {
            self.0.send(queue, body, options).await?;
        }
        Ok(first)
    }
    async fn receive(
        &self,
        queue: &str,
        max: usize,
        visibility_timeout: Duration,
    ) -> tessera_shared::storage::Result<Vec<ReceivedMessage>> {
        self.0.receive(queue, max, visibility_timeout).await
    }
    async fn update(
        &self,
        queue: &str,
        change: MessageUpdate<'_>,
    ) -> tessera_shared::storage::Result<UpdatedMessage> {
        self.0.update(queue, change).await
    }
    async fn delete(
        &self,
        queue: &str,
        id: &str,
        pop_receipt: &str,
    ) -> tessera_shared::storage::Result<()> {
        self.0.delete(queue, id, pop_receipt).await
    }
    async fn peek(
        &self,
        queue: &str,
        max: usize,
    ) -> tessera_shared::storage::Result<Vec<PeekedMessage>> {
        self.0.peek(queue, max).await
    }
    async fn approximate_depth(&self, queue: &str) -> tessera_shared::storage::Result<u64> {
        self.0.approximate_depth(queue).await
    }
    async fn get_metadata(
        &self,
        queue: &str,
    ) -> tessera_shared::storage::Result<HashMap<String, String>> {
        self.0.get_metadata(queue).await
    }
    async fn set_metadata(
        &self,
        queue: &str,
        metadata: &HashMap<String, String>,
    ) -> tessera_shared::storage::Result<()> {
        self.0.set_metadata(queue, metadata).await
    }
    async fn clear(&self, queue: &str) -> tessera_shared::storage::Result<()> {
        self.0.clear(queue).await
    }
}

// ---------------------------------------------------------------------------------------------
// The roles, run in this process

pub(crate) fn controller_settings() -> ControllerSettings {
    ControllerSettings {
        min_backoff_ms: 5,
        max_backoff_ms: 200,
        visibility_timeout_ms: 10_000,
        renewal_interval_ms: 2_000,
        max_retry_delay_ms: 500,
        // Small bands, so that stitching crosses slice borders inside a band.
        stitch_band_bytes: 10_000,
        ..ControllerSettings::default()
    }
}

pub(crate) fn processor_settings(processors: usize) -> ProcessorSettings {
    ProcessorSettings {
        processors,
        id: "test".into(),
        min_backoff_ms: 5,
        max_backoff_ms: 200,
        visibility_timeout_ms: 10_000,
        renewal_interval_ms: 2_000,
        max_retry_delay_ms: 500,
        ..ProcessorSettings::default()
    }
}

/// The controller, the processors and a stand-in for the broker's `imageresponse` listener.
pub(crate) struct Roles {
    trigger: ShutdownTrigger,
    tasks: Vec<JoinHandle<anyhow::Result<()>>>,
    responses: ListenerHandle,
    pub(crate) received: Arc<Mutex<Vec<ImageResponse>>>,
}

pub(crate) async fn start_roles(
    platform: &Platform,
    controller: ControllerSettings,
    processors: ProcessorSettings,
) -> Roles {
    platform.ensure_queues().await.unwrap();
    let (trigger, signal) = shutdown::channel();
    let tasks = vec![
        tokio::spawn(run_controller(platform.clone(), controller, signal.clone())),
        tokio::spawn(run_processors(platform.clone(), processors, signal)),
    ];
    let received = Arc::new(Mutex::new(Vec::new()));
    let sink = received.clone();
    let responses = Listener::new(platform.queue::<ImageResponse>())
        .settings(ListenerSettings {
            min_backoff: Duration::from_millis(5),
            max_backoff: Duration::from_millis(200),
            ..ListenerSettings::default()
        })
        .start(move |message: Envelope<ImageResponse>, _: Context| {
            let sink = sink.clone();
            async move {
                sink.lock().unwrap().push(message.body);
                Ok::<(), Failure>(())
            }
        })
        .await
        .unwrap();
    Roles {
        trigger,
        tasks,
        responses,
        received,
    }
}

impl Roles {
    pub(crate) fn responses_for(&self, job: Uuid) -> Vec<ImageResponse> {
        self.received
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.job_id == job)
            .cloned()
            .collect()
    }

    pub(crate) async fn stop(self) {
        self.trigger.fire();
        for task in self.tasks {
            task.await.unwrap().unwrap();
        }
        self.responses.shutdown(Duration::from_secs(5)).await;
    }
}

/// A job controller alone. Its own reconciler sweeps only after minutes (the default stall
/// timeout): these tests sweep themselves, at the moments they choose.
pub(crate) fn start_controller(
    platform: &Platform,
) -> (ShutdownTrigger, JoinHandle<anyhow::Result<()>>) {
    let (trigger, signal) = shutdown::channel();
    let task = tokio::spawn(run_controller(
        platform.clone(),
        controller_settings(),
        signal,
    ));
    (trigger, task)
}

pub(crate) fn start_processors(
    platform: &Platform,
    settings: ProcessorSettings,
) -> (ShutdownTrigger, JoinHandle<anyhow::Result<()>>) {
    let (trigger, signal) = shutdown::channel();
    let task = tokio::spawn(run_processors(platform.clone(), settings, signal));
    (trigger, task)
}

pub(crate) async fn stop_role((trigger, task): (ShutdownTrigger, JoinHandle<anyhow::Result<()>>)) {
    trigger.fire();
    task.await.unwrap().unwrap();
}
