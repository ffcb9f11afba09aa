//! Storage transaction accounting: every call a role makes to a queue or blob store, counted.
//!
//! In Azure Storage every call is a billed transaction, so the runtime is judged by how few it
//! makes. [`Counted`] wraps any backend of either port and counts each call by [`Op`] and by queue
//! or container, per process (one [`Accounting`] handle shared by every wrapper) and per job where
//! a job id is known: inside [`with_job`] (the listener runtime runs each message in the scope of
//! its job) every call is also charged to that job.
//!
//! What one call costs is what Azure bills: a receive of 32 messages is one transaction, a depth is
//! one metadata read, a staged block is one blob write.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::future::Future;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use serde::Serialize;
use uuid::Uuid;

use crate::storage::{
    BlobMeta, BlobStore, BlobUpload, ListPage, MessageUpdate, PeekedMessage, PutMode, QueueStore,
    ReceivedMessage, Result, SendOptions, SentMessage, UpdatedMessage,
};

/// The kinds of storage transaction, as Azure bills them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// A message sent (Put Message).
    Put,
    /// A batch received (Get Messages).
    Get,
    /// A message deleted.
    Delete,
    /// A message's visibility or body updated (lease renewal, retry delay, release).
    Update,
    /// Messages peeked.
    Peek,
    /// Queue metadata read or written, depth included (Azure reports depth as metadata).
    Metadata,
    /// Queue administration: create, delete, list queues, clear.
    Admin,
    /// A blob read: get, ranged get, properties.
    BlobRead,
    /// A blob written: put, staged block, block-list commit.
    BlobWrite,
    /// A blob deleted.
    BlobDelete,
    /// A page of a blob listing.
    List,
}

impl Op {
    pub const ALL: [Op; 11] = [
        Op::Put,
        Op::Get,
        Op::Delete,
        Op::Update,
        Op::Peek,
        Op::Metadata,
        Op::Admin,
        Op::BlobRead,
        Op::BlobWrite,
        Op::BlobDelete,
        Op::List,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Op::Put => "put",
            Op::Get => "get",
            Op::Delete => "delete",
            Op::Update => "update",
            Op::Peek => "peek",
            Op::Metadata => "metadata",
            Op::Admin => "admin",
            Op::BlobRead => "blob_read",
            Op::BlobWrite => "blob_write",
            Op::BlobDelete => "blob_delete",
            Op::List => "list",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

tokio::task_local! {
    static JOB: Uuid;
}

/// Runs `fut` with every storage call it makes (in this task) charged to `job` as well.
pub async fn with_job<F: Future>(job: Uuid, fut: F) -> F::Output {
    JOB.scope(job, fut).await
}

/// The job the current task is working for, if it runs inside [`with_job`].
pub fn current_job() -> Option<Uuid> {
    JOB.try_with(|job| *job).ok()
}

/// Jobs whose counts one process keeps at most.
const MAX_JOBS: usize = 4096;

#[derive(Default)]
struct Counts {
    by_target: HashMap<(Op, String), u64>,
    by_job: HashMap<Uuid, HashMap<Op, u64>>,
}

/// One process's transaction counters; cheap to clone, shared by every [`Counted`] wrapper.
#[derive(Clone, Default)]
pub struct Accounting {
    counts: Arc<Mutex<Counts>>,
}

impl fmt::Debug for Accounting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Accounting")
            .field("total", &self.snapshot().total)
            .finish()
    }
}

/// Counts at one moment: serializable, printable, subtractable.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Snapshot {
    pub total: u64,
    /// Transactions by kind.
    pub by_op: BTreeMap<Op, u64>,
    /// Transactions by queue or container, then by kind.
    pub by_target: BTreeMap<String, BTreeMap<Op, u64>>,
    /// Transactions charged to each job, by kind.
    pub by_job: BTreeMap<Uuid, BTreeMap<Op, u64>>,
}

impl Snapshot {
    /// Transactions on one queue or container.
    pub fn target_total(&self, target: &str) -> u64 {
        self.by_target
            .get(target)
            .map_or(0, |ops| ops.values().sum())
    }

    pub fn op(&self, op: Op) -> u64 {
        self.by_op.get(&op).copied().unwrap_or(0)
    }

    pub fn job_total(&self, job: Uuid) -> u64 {
        self.by_job.get(&job).map_or(0, |ops| ops.values().sum())
    }

    /// What happened between `earlier` and this snapshot.
    pub fn since(&self, earlier: &Snapshot) -> Snapshot {
        fn sub(a: &BTreeMap<Op, u64>, b: Option<&BTreeMap<Op, u64>>) -> BTreeMap<Op, u64> {
            a.iter()
                .map(|(op, n)| (*op, n - b.and_then(|b| b.get(op)).copied().unwrap_or(0)))
                .filter(|(_, n)| *n > 0)
                .collect()
        }
        let by_target: BTreeMap<_, _> = self
            .by_target
            .iter()
            .map(|(t, ops)| (t.clone(), sub(ops, earlier.by_target.get(t))))
            .filter(|(_, ops)| !ops.is_empty())
            .collect();
        let by_job: BTreeMap<_, _> = self
            .by_job
            .iter()
            .map(|(j, ops)| (*j, sub(ops, earlier.by_job.get(j))))
            .filter(|(_, ops)| !ops.is_empty())
            .collect();
        let by_op = sub(&self.by_op, Some(&earlier.by_op));
        Snapshot {
            total: by_op.values().sum(),
            by_op,
            by_target,
            by_job,
        }
    }
}

impl fmt::Display for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} storage transactions", self.total)?;
        for (target, ops) in &self.by_target {
            let parts: Vec<String> = ops.iter().map(|(op, n)| format!("{op} {n}")).collect();
            writeln!(f, "  {target}: {}", parts.join(", "))?;
        }
        Ok(())
    }
}

impl Accounting {
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts one transaction of kind `op` on `target` (a queue or container name), charged to
    /// the current job when there is one.
    pub fn record(&self, op: Op, target: &str) {
        let job = current_job();
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        match counts.by_target.get_mut(&(op, target.to_string())) {
            Some(n) => *n += 1,
            None => {
                counts.by_target.insert((op, target.to_string()), 1);
            }
        }
        if let Some(job) = job {
            if counts.by_job.len() >= MAX_JOBS && !counts.by_job.contains_key(&job) {
                // Jobs whose last few transactions were never taken: drop one, stay bounded.
                if let Some(stale) = counts.by_job.keys().next().copied() {
                    counts.by_job.remove(&stale);
                }
            }
            *counts.by_job.entry(job).or_default().entry(op).or_default() += 1;
        }
    }

    pub fn snapshot(&self) -> Snapshot {
        let counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        let mut snap = Snapshot::default();
        for ((op, target), n) in &counts.by_target {
            snap.total += n;
            *snap.by_op.entry(*op).or_default() += n;
            *snap
                .by_target
                .entry(target.clone())
                .or_default()
                .entry(*op)
                .or_default() += n;
        }
        for (job, ops) in &counts.by_job {
            snap.by_job
                .insert(*job, ops.iter().map(|(op, n)| (*op, *n)).collect());
        }
        snap
    }

    /// The transactions charged to `job` in this process since the last take, forgotten here:
    /// each is reported once, however many handlers of the job run at once.
    pub fn take_job(&self, job: Uuid) -> u64 {
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        counts
            .by_job
            .remove(&job)
            .map_or(0, |ops| ops.values().sum())
    }

    /// Wraps a queue or blob backend so that its calls are counted here.
    pub fn wrap<T: ?Sized>(&self, inner: Arc<T>) -> Counted<T> {
        Counted {
            inner,
            accounting: self.clone(),
        }
    }
}

/// A queue or blob backend whose every call is counted in an [`Accounting`].
pub struct Counted<T: ?Sized> {
    inner: Arc<T>,
    accounting: Accounting,
}

impl<T: ?Sized> Counted<T> {
    pub fn new(inner: Arc<T>, accounting: Accounting) -> Self {
        Counted { inner, accounting }
    }

    pub fn accounting(&self) -> &Accounting {
        &self.accounting
    }

    pub fn inner(&self) -> &Arc<T> {
        &self.inner
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for Counted<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Counted")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

/// The container of a blob key or listing prefix.
fn container(key: &str) -> &str {
    key.split_once('/').map_or(key, |(c, _)| c)
}

#[async_trait]
impl<T: QueueStore + ?Sized> QueueStore for Counted<T> {
    async fn create_queue(&self, queue: &str) -> Result<()> {
        self.accounting.record(Op::Admin, queue);
        self.inner.create_queue(queue).await
    }

    async fn delete_queue(&self, queue: &str) -> Result<()> {
        self.accounting.record(Op::Admin, queue);
        self.inner.delete_queue(queue).await
    }

    async fn list_queues(&self) -> Result<Vec<String>> {
        self.accounting.record(Op::Admin, "*");
        self.inner.list_queues().await
    }

    async fn send(&self, queue: &str, body: &str, options: SendOptions) -> Result<SentMessage> {
        self.accounting.record(Op::Put, queue);
        self.inner.send(queue, body, options).await
    }

    async fn receive(
        &self,
        queue: &str,
        max: usize,
        visibility_timeout: Duration,
    ) -> Result<Vec<ReceivedMessage>> {
        self.accounting.record(Op::Get, queue);
        self.inner.receive(queue, max, visibility_timeout).await
    }

    async fn update(&self, queue: &str, change: MessageUpdate<'_>) -> Result<UpdatedMessage> {
        self.accounting.record(Op::Update, queue);
        self.inner.update(queue, change).await
    }

    async fn delete(&self, queue: &str, id: &str, pop_receipt: &str) -> Result<()> {
        self.accounting.record(Op::Delete, queue);
        self.inner.delete(queue, id, pop_receipt).await
    }

    async fn peek(&self, queue: &str, max: usize) -> Result<Vec<PeekedMessage>> {
        self.accounting.record(Op::Peek, queue);
        self.inner.peek(queue, max).await
    }

    async fn approximate_depth(&self, queue: &str) -> Result<u64> {
        self.accounting.record(Op::Metadata, queue);
        self.inner.approximate_depth(queue).await
    }

    async fn get_metadata(&self, queue: &str) -> Result<HashMap<String, String>> {
        self.accounting.record(Op::Metadata, queue);
        self.inner.get_metadata(queue).await
    }

    async fn set_metadata(&self, queue: &str, metadata: &HashMap<String, String>) -> Result<()> {
        self.accounting.record(Op::Metadata, queue);
        self.inner.set_metadata(queue, metadata).await
    }

    async fn clear(&self, queue: &str) -> Result<()> {
        self.accounting.record(Op::Admin, queue);
        self.inner.clear(queue).await
    }
}

#[async_trait]
impl<T: BlobStore + ?Sized> BlobStore for Counted<T> {
    async fn writable_bytes(&self) -> Option<u64> {
        self.inner.writable_bytes().await
    }

    fn read_link(
        &self,
        key: &str,
        lifetime: Duration,
        disposition: Option<&str>,
    ) -> Option<String> {
        self.inner.read_link(key, lifetime, disposition)
    }

    async fn put(&self, key: &str, data: Bytes, mode: PutMode) -> Result<BlobMeta> {
        self.accounting.record(Op::BlobWrite, container(key));
        self.inner.put(key, data, mode).await
    }

    async fn get(&self, key: &str) -> Result<Bytes> {
        self.accounting.record(Op::BlobRead, container(key));
        self.inner.get(key).await
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        self.accounting.record(Op::BlobRead, container(key));
        self.inner.get_range(key, range).await
    }

    async fn head(&self, key: &str) -> Result<BlobMeta> {
        self.accounting.record(Op::BlobRead, container(key));
        self.inner.head(key).await
    }

    async fn list(&self, prefix: &str, page_size: usize, page: Option<String>) -> Result<ListPage> {
        self.accounting.record(Op::List, container(prefix));
        self.inner.list(prefix, page_size, page).await
    }

    async fn delete(&self, key: &str) -> Result<()> {
        self.accounting.record(Op::BlobDelete, container(key));
        self.inner.delete(key).await
    }

    async fn upload(&self, key: &str) -> Result<Box<dyn BlobUpload>> {
        let inner = self.inner.upload(key).await?;
        Ok(Box::new(CountedUpload {
            inner,
            container: container(key).to_string(),
            accounting: self.accounting.clone(),
        }))
    }
}

/// Counts each staged block and the final commit of a block upload.
struct CountedUpload {
    inner: Box<dyn BlobUpload>,
    container: String,
    accounting: Accounting,
}

#[async_trait]
impl BlobUpload for CountedUpload {
    async fn write(&mut self, chunk: Bytes) -> Result<()> {
        self.accounting.record(Op::BlobWrite, &self.container);
        self.inner.write(chunk).await
    }

    async fn finish(self: Box<Self>) -> Result<BlobMeta> {
        self.accounting.record(Op::BlobWrite, &self.container);
        self.inner.finish().await
    }

    async fn abort(self: Box<Self>) -> Result<()> {
        self.inner.abort().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn counts_by_op_target_and_job() {
        let acc = Accounting::new();
        acc.record(Op::Get, "slicerequest");
        let job = Uuid::new_v4();
        with_job(job, async {
            acc.record(Op::Delete, "slicerequest");
            acc.record(Op::BlobWrite, "sliceoutput");
        })
        .await;
        let before = acc.snapshot();
        assert_eq!(before.total, 3);
        assert_eq!(before.op(Op::Get), 1);
        assert_eq!(before.target_total("slicerequest"), 2);
        assert_eq!(before.job_total(job), 2);
        acc.record(Op::Get, "slicerequest");
        let diff = acc.snapshot().since(&before);
        assert_eq!(diff.total, 1);
        assert_eq!(diff.by_job.len(), 0);
        let json = serde_json::to_value(acc.snapshot()).unwrap();
        assert_eq!(json["by_op"]["get"], 2);
        assert_eq!(json["by_target"]["sliceoutput"]["blob_write"], 1);
    }

    #[tokio::test]
    async fn a_job_is_taken_once_and_the_table_stays_bounded() {
        let acc = Accounting::new();
        let job = Uuid::new_v4();
        with_job(job, async {
            acc.record(Op::Put, "imagerequest");
            acc.record(Op::BlobWrite, "jobs");
        })
        .await;
        assert_eq!(acc.take_job(job), 2);
        assert_eq!(acc.take_job(job), 0, "taken once");
        with_job(job, async { acc.record(Op::Delete, "imagerequest") }).await;
        assert_eq!(acc.take_job(job), 1);
        for _ in 0..MAX_JOBS + 10 {
            with_job(Uuid::new_v4(), async { acc.record(Op::Get, "q") }).await;
        }
        assert!(acc.snapshot().by_job.len() <= MAX_JOBS);
        assert_eq!(acc.snapshot().total, 3 + MAX_JOBS as u64 + 10);
    }
}
