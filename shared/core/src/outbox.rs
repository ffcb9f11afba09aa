//! Notifications a job's end owes, kept in storage until they are delivered: the outbox.
//!
//! The controller, the one writer of a job's outcome, records the delivery when the job ends
//! (before it announces the end on `imageresponse`), at a key derived from the job, so a
//! redelivered message records it once. Any web or controller process sends what is due: it claims a
//! delivery by a conditional write (a lease of a few minutes, so one sender calls at a time),
//! calls, and deletes it once delivered, or sets the next attempt with back-off. A delivery
//! still owed when its retry period ends is moved to [`BlobKey::UNDELIVERED_PREFIX`], where the
//! operator sees it (the System page, a metric). Every attempt carries the same event id.
//!
//! Consumers outside Tessera read the same events from a queue of their own when one is
//! configured (`queues.job_events`, e.g. `jobevents`): every job's end, whether or not it asked
//! for a webhook, as the CloudEvents body a webhook gets. `imageresponse` is Tessera's own.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::jobs::{JobRecord, JobState};
use crate::keys::BlobKey;
use crate::platform::Platform;
use crate::storage::{BlobStore, BlobStoreExt, PutMode, SendOptions, StorageError};

/// One notification owed: what happened to which job, and where it goes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Delivery {
    pub job: Uuid,
    /// The webhook URL the job asked for.
    pub url: String,
    /// `job.done` or `job.failed`.
    pub event: String,
    /// When the job ended.
    #[serde(with = "time::serde::rfc3339")]
    pub time: OffsetDateTime,
    /// What the event says of the job: its state, size or reason (links are made absolute by
    /// the sender, which knows the service's address).
    pub data: serde_json::Value,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub attempts: u32,
    #[serde(with = "time::serde::rfc3339")]
    pub next_attempt_at: OffsetDateTime,
    #[serde(default)]
    pub last_error: Option<String>,
    /// The client whose job it is (absent on deliveries recorded before it was kept), for the
    /// cap on a client's deliveries outstanding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<Uuid>,
}

impl Delivery {
    /// The delivery a job's end owes, if the job asked for a webhook and has ended.
    pub fn of(record: &JobRecord) -> Option<Delivery> {
        Self::to(record, record.params.spec.webhook.clone()?)
    }

    /// The event of `record`'s end, for `url`, once the job has ended.
    fn to(record: &JobRecord, url: String) -> Option<Delivery> {
        if !record.state.is_final() {
            return None;
        }
        let now = OffsetDateTime::now_utc();
        let mut data = serde_json::json!({
            "job_id": record.id,
            "state": record.state.as_str(),
        });
        if record.state == JobState::Done {
            if let Some(size) = &record.output {
                data["width"] = size.width.into();
                data["height"] = size.height.into();
            }
        } else if let Some(reason) = &record.error {
            data["reason"] = reason.as_str().into();
        }
        Some(Delivery {
            job: record.id,
            url,
            event: event_of(record.state).into(),
            time: record.finished_at.unwrap_or(now),
            data,
            created_at: now,
            attempts: 0,
            next_attempt_at: now,
            last_error: None,
            client: Some(record.client_id),
        })
    }

    /// The event's id: the same on every attempt, so a receiver can drop a repeat.
    pub fn id(&self) -> String {
        format!("{}/{}", self.job, self.event)
    }
}

/// The event a job's final state makes.
pub fn event_of(state: JobState) -> &'static str {
    match state {
        JobState::Done => "job.done",
        _ => "job.failed",
    }
}

/// The CloudEvents 1.0 body of `delivery`, in structured mode, links made absolute under
/// `public_url`.
pub fn cloud_event(delivery: &Delivery, public_url: &str) -> String {
    let base = public_url.trim_end_matches('/');
    let job = delivery.job;
    let mut data = delivery.data.clone();
    data["job_url"] = format!("{base}/api/v1/jobs/{job}").into();
    if delivery.event == "job.done" {
        data["result_url"] = format!("{base}/api/v1/jobs/{job}/result").into();
    }
    serde_json::json!({
        "specversion": "1.0",
        "id": delivery.id(),
        "source": format!("{base}/api/v1/jobs"),
        "type": format!("io.tessera.{}", delivery.event),
        "subject": job.to_string(),
        "time": delivery.time.format(&time::format_description::well_known::Rfc3339).ok(),
        "datacontenttype": "application/json",
        "data": data,
    })
    .to_string()
}

/// Records what `record`'s end owes: the webhook delivery, if the job asked for one (once per
/// job, whoever records it first), and the event on the job events queue, if one is kept (at
/// least once: a consumer drops a repeat by the event's `id`).
pub async fn owe(platform: &Platform, record: &JobRecord) -> Result<(), StorageError> {
    if let Some(events) = &platform.job_events
        && let Some(event) = Delivery::to(record, String::new())
    {
        let body = platform
            .encoding
            .to_wire(&cloud_event(&event, &events.public_url));
        platform
            .queues
            .send(&events.queue, &body, SendOptions::default())
            .await?;
    }
    let Some(delivery) = Delivery::of(record) else {
        return Ok(());
    };
    let key = BlobKey::OutboxEvent { job: record.id }.path();
    match platform
        .blobs
        .put(&key, encode(&delivery), PutMode::CreateNew)
        .await
    {
        Ok(_) | Err(StorageError::AlreadyExists(_)) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Every delivery owed, with the ETag it was read at (for [`claim`]): one listing, and a read
/// of each entry unless `known` holds it at the ETag listed (what a sender read before and
/// nobody changed since).
pub async fn owed(
    blobs: &dyn BlobStore,
    known: &std::collections::HashMap<String, (Delivery, String)>,
) -> Result<Vec<(Delivery, String)>, StorageError> {
    let mut out = Vec::new();
    for meta in blobs.list_all(BlobKey::OUTBOX_PREFIX).await? {
        if let Some((delivery, etag)) = known.get(&meta.key)
            && *etag == meta.etag
        {
            out.push((delivery.clone(), meta.etag));
            continue;
        }
        let bytes = match blobs.get(&meta.key).await {
            Ok(bytes) => bytes,
            Err(StorageError::NotFound(_)) => continue,
            Err(e) => return Err(e),
        };
        match serde_json::from_slice::<Delivery>(&bytes) {
            Ok(delivery) => out.push((delivery, meta.etag)),
            Err(e) => tracing::warn!(key = meta.key, error = %e, "an outbox entry is unreadable"),
        }
    }
    Ok(out)
}

/// Takes `delivery` (read at `etag`) for one attempt until `lease_until`: `None` when another
/// sender changed it first.
pub async fn claim(
    blobs: &dyn BlobStore,
    delivery: &mut Delivery,
    etag: &str,
    lease_until: OffsetDateTime,
) -> Result<Option<String>, StorageError> {
    delivery.attempts += 1;
    delivery.next_attempt_at = lease_until;
    let key = BlobKey::OutboxEvent { job: delivery.job }.path();
    match blobs
        .put(&key, encode(delivery), PutMode::IfMatch(etag.to_string()))
        .await
    {
        Ok(meta) => Ok(Some(meta.etag)),
        Err(StorageError::Precondition(_) | StorageError::NotFound(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The delivery was made: it is owed no more.
pub async fn delivered(blobs: &dyn BlobStore, job: Uuid) -> Result<(), StorageError> {
    match blobs.delete(&BlobKey::OutboxEvent { job }.path()).await {
        Ok(()) | Err(StorageError::NotFound(_)) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The attempt failed: the next is at `next`, unless the delivery was claimed since.
pub async fn retry_at(
    blobs: &dyn BlobStore,
    delivery: &mut Delivery,
    etag: &str,
    next: OffsetDateTime,
    error: String,
) -> Result<(), StorageError> {
    delivery.next_attempt_at = next;
    delivery.last_error = Some(error);
    let key = BlobKey::OutboxEvent { job: delivery.job }.path();
    match blobs
        .put(&key, encode(delivery), PutMode::IfMatch(etag.to_string()))
        .await
    {
        Ok(_) | Err(StorageError::Precondition(_) | StorageError::NotFound(_)) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The retry period ended: the delivery is kept where the operator sees it, and owed no more.
pub async fn set_aside(
    blobs: &dyn BlobStore,
    delivery: &Delivery,
    error: String,
) -> Result<(), StorageError> {
    let mut kept = delivery.clone();
    kept.last_error = Some(error);
    blobs
        .put(
            &BlobKey::UndeliveredEvent { job: delivery.job }.path(),
            encode(&kept),
            PutMode::Overwrite,
        )
        .await?;
    metrics::counter!(crate::metric_names::NOTIFICATIONS, "outcome" => "undelivered").increment(1);
    delivered(blobs, delivery.job).await
}

/// The deliveries set aside, newest first, at most `max`.
pub async fn undelivered(
    blobs: &dyn BlobStore,
    max: usize,
) -> Result<(usize, Vec<Delivery>), StorageError> {
    let list = blobs.list_all(BlobKey::UNDELIVERED_PREFIX).await?;
    let total = list.len();
    let mut out = Vec::new();
    for meta in list.iter().rev().take(max) {
        if let Ok(bytes) = blobs.get(&meta.key).await
            && let Ok(delivery) = serde_json::from_slice::<Delivery>(&bytes)
        {
            out.push(delivery);
        }
    }
    out.sort_by_key(|d| std::cmp::Reverse(d.created_at));
    Ok((total, out))
}

fn encode(delivery: &Delivery) -> bytes::Bytes {
    serde_json::to_vec(delivery)
        .expect("a delivery serializes")
        .into()
}
