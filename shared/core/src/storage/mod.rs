//! The storage ports: one small trait for queues, one for blobs, with semantic errors.
//!
//! Backends implement these at the bytes level ([`embedded`] on local disk, `tessera_azure` on Azure
//! Storage); everything above (typed queues, the listener runtime, the pipeline) works through them
//! and never knows which backend it has. Both backends follow Azure Storage's semantics: visibility
//! timeouts, dequeue counts, pop receipts that go stale, time to live, 64 KiB messages, batches of at
//! most 32.
//!
//! Blob keys are `container/name…`: the first path segment is the container (Azure's rules: 3 to 63
//! lowercase letters, digits and hyphens), the rest is the blob's name.

pub mod describe;
pub mod embedded;
pub mod prefixed;
pub mod reader;

use std::collections::HashMap;
use std::fmt::{self, Debug};
use std::ops::Range;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use time::OffsetDateTime;

/// Largest message body a queue accepts, in bytes (Azure's limit).
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;
/// Most messages one receive or peek may return (Azure's limit).
pub const MAX_BATCH: usize = 32;
/// Longest visibility timeout or delay (Azure's limit).
pub const MAX_VISIBILITY: Duration = Duration::from_secs(7 * 24 * 3600);
/// Time to live of a message sent without one (Azure's default).
pub const DEFAULT_TIME_TO_LIVE: Duration = Duration::from_secs(7 * 24 * 3600);

pub type Result<T, E = StorageError> = std::result::Result<T, E>;

/// What went wrong, by meaning rather than by backend. The kinds that come from below (full,
/// transient, other) keep the lower error as their `source()`, so a chain of causes reaches the
/// operating system's or the HTTP client's own error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StorageError {
    /// The queue, message or blob does not exist (or the message has expired).
    NotFound(String),
    /// A create-only write met an existing blob.
    AlreadyExists(String),
    /// A conditional write's precondition (an ETag) no longer holds.
    Precondition(String),
    /// The pop receipt is stale: the message was received again or updated since.
    ReceiptMismatch(String),
    /// A message or request over a size limit.
    TooLarge { size: usize, limit: usize },
    /// An argument outside what the service accepts (a batch of 33, a bad name, ...).
    Invalid(String),
    /// No space left to write: worth retrying once space returns, not at once.
    Full(Cause),
    /// Worth retrying: a timeout, a refused connection, a 5xx, "server busy".
    Transient(Cause),
    /// Anything else: not worth retrying.
    Other(Cause),
}

impl fmt::Display for StorageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StorageError::NotFound(what) => write!(f, "not found: {what}"),
            StorageError::AlreadyExists(what) => write!(f, "already exists: {what}"),
            StorageError::Precondition(what) => write!(f, "precondition failed: {what}"),
            StorageError::ReceiptMismatch(id) => {
                write!(f, "pop receipt does not match for message {id}")
            }
            StorageError::TooLarge { size, limit } => {
                write!(f, "too large: {size} bytes, the limit is {limit}")
            }
            StorageError::Invalid(what) => write!(f, "invalid request: {what}"),
            StorageError::Full(cause) => write!(f, "storage is full: {cause}"),
            StorageError::Transient(cause) => write!(f, "transient storage error: {cause}"),
            StorageError::Other(cause) => write!(f, "storage error: {cause}"),
        }
    }
}

impl std::error::Error for StorageError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StorageError::Full(cause)
            | StorageError::Transient(cause)
            | StorageError::Other(cause) => cause.source.as_deref().map(|e| e as _),
            _ => None,
        }
    }
}

/// What a storage error says, and the lower error behind it, if any (shared, so that errors stay
/// cheap to clone). Two causes are equal when they say the same.
#[derive(Debug, Clone)]
pub struct Cause {
    message: String,
    source: Option<std::sync::Arc<dyn std::error::Error + Send + Sync>>,
}

impl Cause {
    /// `message`, with `source` as the error behind it.
    pub fn with_source(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Cause {
            message: message.into(),
            source: Some(std::sync::Arc::new(source)),
        }
    }
}

impl From<String> for Cause {
    fn from(message: String) -> Self {
        Cause {
            message,
            source: None,
        }
    }
}

impl From<&str> for Cause {
    fn from(message: &str) -> Self {
        message.to_string().into()
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::ops::Deref for Cause {
    type Target = str;
    fn deref(&self) -> &str {
        &self.message
    }
}

impl PartialEq for Cause {
    fn eq(&self, other: &Self) -> bool {
        self.message == other.message
    }
}

impl Eq for Cause {}

impl StorageError {
    pub fn is_transient(&self) -> bool {
        matches!(self, StorageError::Transient(_))
    }
}

/// Options for sending a message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SendOptions {
    /// Hidden for this long after sending.
    pub visibility_delay: Duration,
    /// Deleted after this long; `None` means [`DEFAULT_TIME_TO_LIVE`].
    pub time_to_live: Option<Duration>,
}

/// A message just sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentMessage {
    pub id: String,
    pub pop_receipt: String,
    pub insertion_time: OffsetDateTime,
    pub expiration_time: OffsetDateTime,
    pub next_visible: OffsetDateTime,
}

/// A message received, hidden from other receivers until `next_visible`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedMessage {
    pub id: String,
    /// Proof of this receipt, needed to delete or update the message; stale after any later
    /// receive or update.
    pub pop_receipt: String,
    /// How many times the message has been received, this time included.
    pub dequeue_count: u32,
    pub insertion_time: OffsetDateTime,
    pub expiration_time: OffsetDateTime,
    pub next_visible: OffsetDateTime,
    pub body: String,
}

/// A message seen without receiving it (no receipt, dequeue count unchanged).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeekedMessage {
    pub id: String,
    pub dequeue_count: u32,
    pub insertion_time: OffsetDateTime,
    pub expiration_time: OffsetDateTime,
    pub body: String,
}

/// The result of updating a message's visibility or content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdatedMessage {
    /// The new receipt; the old one is stale from now on.
    pub pop_receipt: String,
    pub next_visible: OffsetDateTime,
}

/// A change to a received message: hidden for `visibility_timeout` from now, its body replaced
/// when `body` is given. The receipt must be current.
#[derive(Debug, Clone, Copy)]
pub struct MessageUpdate<'a> {
    pub id: &'a str,
    pub pop_receipt: &'a str,
    pub visibility_timeout: Duration,
    pub body: Option<&'a str>,
}

impl<'a> MessageUpdate<'a> {
    pub fn new(
        id: &'a str,
        pop_receipt: &'a str,
        visibility_timeout: Duration,
        body: Option<&'a str>,
    ) -> Self {
        MessageUpdate {
            id,
            pop_receipt,
            visibility_timeout,
            body,
        }
    }
}

/// The queue port.
#[async_trait]
pub trait QueueStore: Send + Sync + Debug {
    /// Creates the queue; succeeds if it already exists.
    async fn create_queue(&self, queue: &str) -> Result<()>;
    /// Deletes the queue and its messages.
    async fn delete_queue(&self, queue: &str) -> Result<()>;
    /// Names of the queues that exist, sorted.
    async fn list_queues(&self) -> Result<Vec<String>>;
    /// Appends a message; the body is at most [`MAX_MESSAGE_BYTES`].
    async fn send(&self, queue: &str, body: &str, options: SendOptions) -> Result<SentMessage>;
    /// Receives up to `max` (1 to [`MAX_BATCH`]) visible messages and hides them for
    /// `visibility_timeout`, adding one to each dequeue count. Empty when none is visible.
    async fn receive(
        &self,
        queue: &str,
        max: usize,
        visibility_timeout: Duration,
    ) -> Result<Vec<ReceivedMessage>>;
    /// Applies `change` to a received message ([`MessageUpdate`]).
    async fn update(&self, queue: &str, change: MessageUpdate<'_>) -> Result<UpdatedMessage>;
    /// Deletes a received message. The receipt must be current.
    async fn delete(&self, queue: &str, id: &str, pop_receipt: &str) -> Result<()>;
    /// Up to `max` (1 to [`MAX_BATCH`]) visible messages, without receiving them.
    async fn peek(&self, queue: &str, max: usize) -> Result<Vec<PeekedMessage>>;
    /// Messages in the queue, visible or not (approximate, as Azure reports it).
    async fn approximate_depth(&self, queue: &str) -> Result<u64>;
    async fn get_metadata(&self, queue: &str) -> Result<HashMap<String, String>>;
    /// Replaces the queue's metadata.
    async fn set_metadata(&self, queue: &str, metadata: &HashMap<String, String>) -> Result<()>;
    /// Deletes every message in the queue.
    async fn clear(&self, queue: &str) -> Result<()>;
}

/// How a put treats an existing blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PutMode {
    Overwrite,
    /// Fails with [`StorageError::AlreadyExists`] if the blob exists; exclusive under
    /// concurrent writers.
    CreateNew,
    /// Fails with [`StorageError::Precondition`] unless the blob's ETag is this one.
    IfMatch(String),
}

/// What a blob store knows of one blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobMeta {
    pub key: String,
    pub size: u64,
    pub etag: String,
    pub last_modified: OffsetDateTime,
}

/// One page of a listing; `next` continues it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListPage {
    pub items: Vec<BlobMeta>,
    pub next: Option<String>,
}

/// The blob port.
#[async_trait]
pub trait BlobStore: Send + Sync + Debug {
    async fn put(&self, key: &str, data: Bytes, mode: PutMode) -> Result<BlobMeta>;
    async fn get(&self, key: &str) -> Result<Bytes>;
    /// Bytes `range` of the blob; a range past the end is cut at the end.
    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes>;
    async fn head(&self, key: &str) -> Result<BlobMeta>;
    /// Blobs whose key starts with `prefix` (which names at least the container), in key order,
    /// at most `page_size` per page.
    async fn list(&self, prefix: &str, page_size: usize, page: Option<String>) -> Result<ListPage>;
    /// Deletes the blob; [`StorageError::NotFound`] if it does not exist.
    async fn delete(&self, key: &str) -> Result<()>;
    /// Starts a block upload for a large blob: nothing is visible until `finish`.
    async fn upload(&self, key: &str) -> Result<Box<dyn BlobUpload>>;
    /// Bytes that may still be written before storage counts as full, where that is bounded and
    /// known (the embedded backend's disk, less the free space it keeps); `None` where storage
    /// does not run out (an Azure account). Not a storage transaction.
    async fn writable_bytes(&self) -> Option<u64> {
        None
    }
    /// A URL that reads this blob, and no other, straight from storage until `lifetime` has
    /// passed, answered with `disposition` as its `Content-Disposition`; `None` where the
    /// backend cannot sign one (the embedded backend; Azure without an account key). Signed
    /// here: not a storage transaction.
    fn read_link(
        &self,
        _key: &str,
        _lifetime: std::time::Duration,
        _disposition: Option<&str>,
    ) -> Option<String> {
        None
    }
}

/// A large blob written in pieces (Azure: staged blocks, then a commit).
#[async_trait]
pub trait BlobUpload: Send {
    async fn write(&mut self, chunk: Bytes) -> Result<()>;
    /// Makes the blob visible, whole, replacing any earlier one.
    async fn finish(self: Box<Self>) -> Result<BlobMeta>;
    /// Drops what was written; the key is untouched.
    async fn abort(self: Box<Self>) -> Result<()>;
}

/// The most blobs one listing page holds (Azure's `maxresults` at most).
pub const LIST_PAGE_MAX: usize = 5000;

/// Conveniences over the blob port.
#[async_trait]
pub trait BlobStoreExt: BlobStore {
    async fn exists(&self, key: &str) -> Result<bool> {
        match self.head(key).await {
            Ok(_) => Ok(true),
            Err(StorageError::NotFound(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Every blob under `prefix`, following pages of the most Azure lists at once (each page
    /// one transaction).
    async fn list_all(&self, prefix: &str) -> Result<Vec<BlobMeta>> {
        let mut items = Vec::new();
        let mut page = None;
        loop {
            let got = self.list(prefix, LIST_PAGE_MAX, page).await?;
            items.extend(got.items);
            match got.next {
                Some(next) => page = Some(next),
                None => return Ok(items),
            }
        }
    }
}

impl<T: BlobStore + ?Sized> BlobStoreExt for T {}

/// Rewrites `body` at `key` every `every` (the first rewrite one period from now), in a task of
/// its own, until the task is aborted: how a registration shows its process is alive. A failed
/// rewrite is logged and tried again at the next period.
pub fn rewrite_periodically(
    blobs: std::sync::Arc<dyn BlobStore>,
    key: String,
    body: Bytes,
    every: Duration,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            if let Err(e) = blobs.put(&key, body.clone(), PutMode::Overwrite).await {
                tracing::debug!(%key, error = %e, "registration not rewritten");
            }
        }
    })
}

/// Checks a batch size against the port's limit (1 to [`MAX_BATCH`]).
pub fn check_batch(max: usize) -> Result<()> {
    if (1..=MAX_BATCH).contains(&max) {
        Ok(())
    } else {
        Err(StorageError::Invalid(format!(
            "a batch is 1 to {MAX_BATCH} messages, not {max}"
        )))
    }
}

/// Checks a visibility timeout or delay (`what` names it in the error) against [`MAX_VISIBILITY`].
pub fn check_visibility(what: &str, d: Duration) -> Result<()> {
    if d <= MAX_VISIBILITY {
        Ok(())
    } else {
        Err(StorageError::Invalid(format!(
            "{what} of {d:?} is over the limit of {MAX_VISIBILITY:?}"
        )))
    }
}

/// Checks a message body against [`MAX_MESSAGE_BYTES`].
pub fn check_body(body: &str) -> Result<()> {
    if body.len() <= MAX_MESSAGE_BYTES {
        Ok(())
    } else {
        Err(StorageError::TooLarge {
            size: body.len(),
            limit: MAX_MESSAGE_BYTES,
        })
    }
}

/// Checks a queue name against Azure's rules: 3 to 63 lowercase letters, digits and single
/// hyphens, starting and ending with a letter or digit.
pub fn validate_queue_name(name: &str) -> Result<()> {
    validate_dns_name(name, "queue")
}

/// Splits a blob key into its container and blob name, checking both.
pub fn split_blob_key(key: &str) -> Result<(&str, &str)> {
    let (container, name) = key.split_once('/').ok_or_else(|| {
        StorageError::Invalid(format!("blob key {key:?} has no container/ prefix"))
    })?;
    validate_dns_name(container, "container")?;
    if name.is_empty() || name.len() > 1024 {
        return Err(StorageError::Invalid(format!(
            "blob name in {key:?} must be 1 to 1024 characters"
        )));
    }
    if name
        .split('/')
        .any(|seg| seg.is_empty() || seg == "." || seg == "..")
        || name.contains('\\')
        || name.chars().any(char::is_control)
    {
        return Err(StorageError::Invalid(format!(
            "blob name in {key:?} has an empty, '.' or '..' segment, a backslash or a control character"
        )));
    }
    Ok((container, name))
}

fn validate_dns_name(name: &str, what: &str) -> Result<()> {
    let ok = (3..=63).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    if ok {
        Ok(())
    } else {
        Err(StorageError::Invalid(format!(
            "{what} name {name:?} must be 3 to 63 lowercase letters, digits and single hyphens"
        )))
    }
}
