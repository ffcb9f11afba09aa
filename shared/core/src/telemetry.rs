//! Metrics every role exposes at `GET /metrics`, in the Prometheus text format, and the readiness
//! check behind `GET /readyz`.
//!
//! The names are defined here once and follow Prometheus conventions (base units, `_total`
//! counters, the `tessera_` prefix). Code records through the `metrics` facade; [`Exporter`]
//! installs the process's recorder and renders it. Two families are read at scrape time rather
//! than recorded: the storage transactions (from the process's [`Accounting`]) and the queue
//! depths, which cost a metadata read each and so are refreshed at most once per
//! [`Exporter::depth_interval`].

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

use crate::accounting::{Accounting, Op};
use crate::messages::QueueName;
use crate::platform::Platform;
use crate::storage::{PutMode, StorageError};

pub use crate::metric_names::*;

/// Histogram buckets, in seconds: from a quick message to a gigapixel slice.
const SECONDS_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// The process's recorder, installed on first use. The `metrics` facade has one recorder per
/// process, so every [`Exporter`] of a process renders the same registry.
fn handle() -> &'static PrometheusHandle {
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets(SECONDS_BUCKETS)
            .expect("non-empty buckets")
            .build_recorder();
        let handle = recorder.handle();
        if metrics::set_global_recorder(recorder).is_err() {
            tracing::warn!("a metrics recorder was already installed; /metrics stays empty");
        }
        describe();
        handle
    })
}

fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        MESSAGES_HANDLED,
        "Messages finished by a listener, by outcome"
    );
    describe_histogram!(HANDLER_DURATION, Unit::Seconds, "Handler time per message");
    describe_gauge!(HANDLERS_IN_FLIGHT, "Handlers running now");
    describe_counter!(RECEIVES, "Receive calls made");
    describe_counter!(IDLE_RECEIVES, "Receive calls that came back empty");
    describe_counter!(NUDGES_RECEIVED, "Wake-up nudges from other processes");
    describe_gauge!(QUEUE_DEPTH, "Approximate messages waiting in a queue");
    describe_counter!(STORAGE_TRANSACTIONS, "Storage transactions of this process");
    describe_counter!(JOBS_FINISHED, "Jobs that reached a final state");
    describe_counter!(
        NOTIFICATIONS,
        "Job notification attempts, by outcome (delivered, failed, undelivered)"
    );
    describe_histogram!(
        SLICE_RENDER,
        Unit::Seconds,
        "Render and compression time per slice"
    );
}

/// Makes sure the recorder is installed, so that metrics recorded from now on are kept.
pub fn init() {
    handle();
}

/// Which role a process plays: the `role` label of its storage transactions, the queues whose
/// depth it reports and what its readiness checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Every role in one process.
    Serve,
    Web,
    Controller,
    Processor,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Serve => "serve",
            Role::Web => "web",
            Role::Controller => "controller",
            Role::Processor => "processor",
        }
    }

    /// The work queues whose depth (and poison queue's depth) this role reports. Each read is
    /// billed, so only the front end, where operators look, reports them (all four); the
    /// back-end roles, of which there may be many, report none (an autoscaler reads the depth
    /// it scales on itself).
    pub fn reported_queues(self) -> &'static [QueueName] {
        match self {
            Role::Serve | Role::Web => &QueueName::ALL,
            Role::Controller | Role::Processor => &[],
        }
    }

    /// The queue this role's readiness check reads: one it consumes.
    fn work_queue(self) -> QueueName {
        match self {
            Role::Serve | Role::Controller => QueueName::ImageRequest,
            Role::Web => QueueName::ImageResponse,
            Role::Processor => QueueName::SliceRequest,
        }
    }
}

/// Renders this process's metrics for one role.
#[derive(Clone)]
pub struct Exporter {
    platform: Platform,
    role: Role,
    depth_interval: Duration,
    depths_read: Arc<tokio::sync::Mutex<Option<Instant>>>,
}

impl Exporter {
    pub fn new(platform: Platform, role: Role, depth_interval: Duration) -> Self {
        init();
        Exporter {
            platform,
            role,
            depth_interval,
            depths_read: Arc::default(),
        }
    }

    pub fn role(&self) -> Role {
        self.role
    }

    /// How often, at most, queue depths are read from storage for a scrape.
    pub fn depth_interval(&self) -> Duration {
        self.depth_interval
    }

    /// The Prometheus text exposition of every metric of this process.
    pub async fn render(&self) -> String {
        self.refresh_depths().await;
        record_transactions(&self.platform.accounting, self.role);
        handle().render()
    }

    async fn refresh_depths(&self) {
        let mut read = self.depths_read.lock().await;
        if read.is_some_and(|at| at.elapsed() < self.depth_interval) {
            return;
        }
        *read = Some(Instant::now());
        for queue in self.role.reported_queues() {
            for name in [queue.as_str().to_string(), queue.poison()] {
                match self.platform.queues.approximate_depth(&name).await {
                    Ok(depth) => metrics::gauge!(QUEUE_DEPTH, "queue" => name).set(depth as f64),
                    Err(StorageError::NotFound(_)) => {
                        metrics::gauge!(QUEUE_DEPTH, "queue" => name).set(0.0)
                    }
                    Err(e) => tracing::debug!(queue = %name, error = %e, "queue depth not read"),
                }
            }
        }
    }
}

fn record_transactions(accounting: &Accounting, role: Role) {
    let snapshot = accounting.snapshot();
    for op in Op::ALL {
        metrics::counter!(STORAGE_TRANSACTIONS, "role" => role.as_str(), "op" => op.as_str())
            .absolute(snapshot.op(op));
    }
}

/// Whether this process can do its work now: the queue it consumes answers, and blobs can be
/// written (every role writes blobs: uploads, slices, results, records). Two storage
/// transactions per check, so a success is trusted for an interval: probes every few seconds
/// cost two transactions per interval, not per probe. A failure is never cached: the next probe
/// checks again.
#[derive(Clone)]
pub struct Readiness {
    platform: Platform,
    role: Role,
    interval: Duration,
    passed: Arc<tokio::sync::Mutex<Option<Instant>>>,
}

impl Readiness {
    pub fn new(platform: Platform, role: Role, interval: Duration) -> Self {
        Readiness {
            platform,
            role,
            interval,
            passed: Arc::default(),
        }
    }

    pub fn role(&self) -> Role {
        self.role
    }

    pub async fn check(&self) -> Result<(), StorageError> {
        // Free space is no storage transaction: checked on every probe.
        if self.platform.blobs.writable_bytes().await == Some(0) {
            return Err(StorageError::Full(
                "less free space than storage.min_free_bytes on the data disk".into(),
            ));
        }
        let mut passed = self.passed.lock().await;
        if passed.is_some_and(|at| at.elapsed() < self.interval) {
            return Ok(());
        }
        *passed = None;
        let queue = self.role.work_queue();
        match self.platform.queues.approximate_depth(queue.as_str()).await {
            Ok(_) | Err(StorageError::NotFound(_)) => {}
            Err(e) => return Err(e),
        }
        // One small blob per role, rewritten by each check.
        let key = format!("health/{}", self.role.as_str());
        self.platform
            .blobs
            .put(&key, Bytes::from_static(b"ready\n"), PutMode::Overwrite)
            .await?;
        *passed = Some(Instant::now());
        Ok(())
    }
}
