//! Poison messages: what cannot be processed moves, with the reason, to `<queue>-poison`.
//!
//! A message is poison when its body does not decode, when its handler says so, or when it has
//! been received more often than the poison threshold. The runtime sends a [`PoisonRecord`] to the
//! poison queue, then deletes the original (a crash in between leaves a duplicate record, never a
//! lost message), then calls the listener's poison hook so the owning job can be marked failed.
//! `tessera queues requeue` sends a record's original body back to its queue after a fix.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::keys::BlobKey;
use crate::messages::{Encoding, poison_queue_name};
use crate::storage::{
    BlobStore, MAX_MESSAGE_BYTES, PutMode, QueueStore, ReceivedMessage, SendOptions, StorageError,
};

/// What the poison queue holds for each poisoned message (JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PoisonRecord {
    /// Why the message was poisoned, for a person to read.
    pub reason: String,
    /// The queue it came from.
    pub queue: String,
    pub message_id: String,
    pub dequeue_count: u32,
    /// When the message was first sent.
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub insertion_time: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    #[schemars(with = "String", extend("format" = "date-time"))]
    pub poisoned_at: OffsetDateTime,
    /// The original body, unless it was too large to fit in the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Where the original body was stored when it did not fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_blob: Option<String>,
    /// The job the message belonged to, when it could be read from the body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<Uuid>,
}

impl PoisonRecord {
    /// The original body, fetched from its blob when it was stored aside.
    pub async fn original_body(&self, blobs: &dyn BlobStore) -> Result<String, StorageError> {
        match (&self.body, &self.body_blob) {
            (Some(body), _) => Ok(body.clone()),
            (None, Some(key)) => {
                let bytes = blobs.get(key).await?;
                String::from_utf8(bytes.to_vec()).map_err(|e| {
                    StorageError::Other(format!("body blob {key} is not UTF-8: {e}").into())
                })
            }
            (None, None) => Err(StorageError::Other("poison record carries no body".into())),
        }
    }
}

/// Called after a message has been moved to the poison queue.
pub type PoisonHook =
    Arc<dyn Fn(PoisonRecord) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// Wraps an async closure as a [`PoisonHook`].
pub fn hook<F, Fut>(f: F) -> PoisonHook
where
    F: Fn(PoisonRecord) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    Arc::new(move |record| Box::pin(f(record)))
}

/// How long a poison hook keeps trying to record its job's fate while storage fails.
pub const FATE_RETRY_LIMIT: std::time::Duration = std::time::Duration::from_secs(3600);

/// Calls `record` until it succeeds, with back-off (half a second doubling to 30 s), for up to
/// [`FATE_RETRY_LIMIT`]: a poisoned message's job must not keep its state because storage was
/// down the moment the message went. The controllers' reconciler is the last resort.
pub async fn record_fate<F, Fut, E>(job: Uuid, mut record: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: fmt::Display,
{
    let started = std::time::Instant::now();
    let mut backoff = crate::runtime::backoff::Backoff::new(
        std::time::Duration::from_millis(500),
        std::time::Duration::from_secs(30),
    );
    loop {
        match record().await {
            Ok(()) => return,
            Err(e) if started.elapsed() < FATE_RETRY_LIMIT => {
                let delay = backoff.next_delay();
                tracing::warn!(%job, error = %e, ?delay, "poisoned job's fate not recorded yet; retrying");
                tokio::time::sleep(delay).await;
            }
            Err(e) => {
                tracing::error!(%job, error = %e, "poisoned job's fate not recorded; the reconciler will");
                return;
            }
        }
    }
}

/// A body's JSON, in either encoding, read as `T`; `None` when it is not.
fn wire_json<T: serde::de::DeserializeOwned>(body: &str) -> Option<T> {
    serde_json::from_str(&Encoding::from_wire(body).ok()?).ok()
}

/// Reads `body.job_id` from an envelope, if there is one; every pipeline message has it.
pub fn probe_job_id(body: &str) -> Option<Uuid> {
    #[derive(Deserialize)]
    struct Probe {
        body: ProbeBody,
    }
    #[derive(Deserialize)]
    struct ProbeBody {
        job_id: Uuid,
    }
    wire_json::<Probe>(body).map(|p| p.body.job_id)
}

/// Reads the envelope's `client_id` from a body in either encoding, if there is one.
pub fn probe_client_id(body: &str) -> Option<Uuid> {
    #[derive(Deserialize)]
    struct Probe {
        client_id: Uuid,
    }
    wire_json::<Probe>(body).map(|p| p.client_id)
}

/// The envelope field in which a retried message carries the cause of its last failed attempt.
const LAST_ERROR: &str = "last_error";
/// Longest cause carried in a message.
const MAX_CAUSE_BYTES: usize = 1024;

/// The cause of the last failed attempt, as a retry noted it in the body.
pub fn last_error(body: &str) -> Option<String> {
    let value: serde_json::Value = wire_json(body)?;
    value.get(LAST_ERROR)?.as_str().map(str::to_string)
}

/// The body with `cause` noted as its `last_error`, in the body's own encoding; `None` when the
/// body is not a JSON object or would outgrow a message.
pub(crate) fn with_last_error(body: &str, cause: &str) -> Option<String> {
    let mut value: serde_json::Map<String, serde_json::Value> = wire_json(body)?;
    value.insert(LAST_ERROR.into(), truncate(cause, MAX_CAUSE_BYTES).into());
    let text = Encoding::of(body).to_wire(&serde_json::to_string(&value).ok()?);
    (text.len() <= MAX_MESSAGE_BYTES).then_some(text)
}

/// Builds the record for `message`, storing the body aside when the record would not fit.
pub(crate) async fn make_record(
    blobs: &dyn BlobStore,
    queue: &str,
    message: &ReceivedMessage,
    reason: &str,
) -> Result<PoisonRecord, StorageError> {
    let body = without_last_error(&message.body);
    let mut record = PoisonRecord {
        reason: truncate(reason, 4096),
        queue: queue.to_string(),
        message_id: message.id.clone(),
        dequeue_count: message.dequeue_count,
        insertion_time: message.insertion_time,
        poisoned_at: OffsetDateTime::now_utc(),
        body: Some(body.clone()),
        body_blob: None,
        job_id: probe_job_id(&message.body),
    };
    if serde_json::to_string(&record).map_or(0, |s| s.len()) > MAX_MESSAGE_BYTES {
        let key = BlobKey::MessageBody {
            queue: poison_queue_name(queue),
            id: Uuid::new_v4(),
        }
        .path();
        blobs
            .put(&key, bytes::Bytes::from(body), PutMode::Overwrite)
            .await?;
        record.body = None;
        record.body_blob = Some(key);
    }
    Ok(record)
}

/// The body as first sent, in its own encoding: without the `last_error` its retries noted (the
/// record has the reason).
fn without_last_error(body: &str) -> String {
    let Some(mut value) = wire_json::<serde_json::Map<String, serde_json::Value>>(body) else {
        return body.to_string();
    };
    if value.remove(LAST_ERROR).is_none() {
        return body.to_string();
    }
    serde_json::to_string(&value)
        .map(|json| Encoding::of(body).to_wire(&json))
        .unwrap_or_else(|_| body.to_string())
}

/// Sends `record` to its queue's poison queue, written in `encoding` as the queue's own
/// messages are (base64 for tooling that expects it).
pub(crate) async fn send_record(
    queues: &dyn QueueStore,
    record: &PoisonRecord,
    encoding: Encoding,
) -> Result<(), StorageError> {
    let text = encoding.to_wire(&serde_json::to_string(record).expect("poison records serialize"));
    queues
        .send(
            &poison_queue_name(&record.queue),
            &text,
            SendOptions::default(),
        )
        .await
        .map(|_| ())
}

fn truncate(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

impl fmt::Display for PoisonRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (message {} from {}, received {} times)",
            self.reason, self.message_id, self.queue, self.dequeue_count
        )
    }
}
