//! What the System page and `/api/v1/system` show: queue depths, the running roles and where
//! their metrics answer, the processors and listeners seen recently.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use time::{Duration, OffsetDateTime};
use utoipa::ToSchema;

use tessera_shared::jobs::JobError;
use tessera_shared::messages::QueueName;
use tessera_shared::nudge;
use tessera_shared::registry::{RoleRegistration, RoleRegistry};
use tessera_shared::storage::{BlobMeta, StorageError};

use crate::api_error::ApiResult;
use crate::app_state::AppState;

/// One work queue's approximate depth and its poison queue's.
#[derive(Debug, Serialize, ToSchema)]
pub struct QueueDepth {
    /// `imagerequest`, `slicerequest`, `sliceresponse` or `imageresponse`.
    pub name: &'static str,
    pub depth: u64,
    /// The name of its poison queue.
    pub poison: String,
    pub poison_depth: u64,
}

impl QueueDepth {
    /// What the queue's messages are waiting for, in a sentence for the System page.
    pub fn purpose(&self) -> &'static str {
        match self.name {
            "imagerequest" => "New jobs waiting for the job controller to cut them into slices.",
            "slicerequest" => "Slices waiting for an image processor to render them.",
            "sliceresponse" => "Rendered slices waiting for the job controller to stitch them.",
            "imageresponse" => {
                "Finished mosaics waiting for the web front end to mark the job done."
            }
            _ => "",
        }
    }
}

/// The answer of `GET /api/v1/queues`.
#[derive(Debug, Serialize, ToSchema)]
pub struct QueueList {
    pub queues: Vec<QueueDepth>,
}

/// The approximate depth of the four work queues and their poison queues.
pub async fn queue_depths(state: &AppState) -> ApiResult<Vec<QueueDepth>> {
    let store = &state.platform.queues;
    let mut out = Vec::new();
    for name in QueueName::ALL {
        let poison = name.poison();
        out.push(QueueDepth {
            name: name.as_str(),
            depth: depth(store.approximate_depth(name.as_str()).await)?,
            poison_depth: depth(store.approximate_depth(&poison).await)?,
            poison,
        });
    }
    Ok(out)
}

/// How far back "recently" reaches.
pub const RECENT: Duration = Duration::hours(1);
/// Job records read at most to find recent slices (the most recently written ones).
pub const RECENT_JOBS: usize = 20;
/// Pages of the job listing read at most (each up to [`LIST_PAGE`] records).
const MAX_LIST_PAGES: usize = 20;
const LIST_PAGE: usize = 1000;

/// What the system knows of its processors, from storage it keeps anyway: the slices recent job
/// records credit to each processor, and the wake-up registrations of the processes listening
/// on the `slicerequest` queue. Costs a listing of the job records, [`RECENT_JOBS`] record reads
/// at most, and one listing of the registrations.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = System)]
pub struct SystemView {
    /// How far back "recently" reaches, in minutes.
    pub window_minutes: i64,
    /// Job records read for this answer.
    pub jobs_read: usize,
    /// Processors (one per process: the name before a slice's `/slot`) that finished a slice
    /// within the window, most recently seen first.
    pub processors: Vec<ProcessorSeen>,
    /// Processes registered for wake-up nudges on the `slicerequest` queue whose registration
    /// was rewritten within its time-to-live.
    pub slice_listeners: Vec<ListenerSeen>,
    /// Every running process (web, controller, processor, serve) with where its `/healthz`,
    /// `/readyz` and `/metrics` answer, as each registered itself (rewritten every few
    /// minutes; withdrawn when it stops).
    pub roles: Vec<RoleRegistration>,
    /// Job notifications (webhook calls) still undelivered when their retry period ended: how
    /// many, and the latest few.
    pub undelivered_total: usize,
    pub undelivered: Vec<UndeliveredEvent>,
}

/// A notification set aside (`outbox-undelivered/`).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct UndeliveredEvent {
    pub job: uuid::Uuid,
    /// `job.done` or `job.failed`.
    pub event: String,
    /// The host it was for (the URL's path and query may carry a receiver's token).
    pub host: String,
    pub attempts: u32,
    /// Why the last attempt failed.
    pub last_error: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ProcessorSeen {
    /// The processor process (a slice's processor name without its `/slot`).
    pub id: String,
    /// When it last finished a slice.
    #[serde(with = "time::serde::rfc3339")]
    pub last_seen: OffsetDateTime,
    /// Slices it finished within the window (of the jobs read).
    pub slices: u32,
    /// Its slots (concurrent renders) seen at work.
    pub slots: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct ListenerSeen {
    /// The process's registration id (not the processor name: registrations do not carry one).
    pub listener: String,
    /// When the registration was last rewritten (every few minutes while the process runs).
    #[serde(with = "time::serde::rfc3339")]
    pub last_seen: OffsetDateTime,
}

/// Works out [`SystemView`] from storage.
pub async fn system_view(state: &AppState) -> ApiResult<SystemView> {
    let now = OffsetDateTime::now_utc();
    let since = now - RECENT;
    let blobs = &state.platform.blobs;
    let recent = recent_records(state, since).await?;
    let (jobs_read, processors) = processors_seen(state, &recent, since).await;
    let slice_listeners = slice_listeners(state, now).await?;
    let roles = RoleRegistry::new(blobs.clone()).list().await?;
    let (undelivered_total, set_aside) = tessera_shared::outbox::undelivered(&**blobs, 10).await?;
    let undelivered = set_aside
        .into_iter()
        .map(|d| UndeliveredEvent {
            job: d.job,
            host: url::Url::parse(&d.url)
                .ok()
                .and_then(|u| u.host_str().map(str::to_string))
                .unwrap_or_default(),
            event: d.event,
            attempts: d.attempts,
            last_error: d.last_error.unwrap_or_default(),
        })
        .collect();
    Ok(SystemView {
        window_minutes: RECENT.whole_minutes(),
        jobs_read,
        processors,
        slice_listeners,
        roles,
        undelivered_total,
        undelivered,
    })
}

/// The job records written most recently since `since`, newest first, at most
/// [`RECENT_JOBS`] of them.
async fn recent_records(state: &AppState, since: OffsetDateTime) -> ApiResult<Vec<BlobMeta>> {
    let blobs = &state.platform.blobs;
    let mut recent = Vec::new();
    let mut token = None;
    for _ in 0..MAX_LIST_PAGES {
        let page = match blobs.list("jobs/", LIST_PAGE, token).await {
            Ok(p) => p,
            Err(StorageError::NotFound(_)) => break,
            Err(e) => return Err(e.into()),
        };
        recent.extend(
            page.items
                .into_iter()
                .filter(|m| m.last_modified >= since && m.key.ends_with(".json")),
        );
        match page.next {
            Some(next) => token = Some(next),
            None => break,
        }
    }
    recent.sort_by_key(|m| std::cmp::Reverse(m.last_modified));
    recent.truncate(RECENT_JOBS);
    Ok(recent)
}

/// The processors credited with slices since `since` in the `recent` job records: how many
/// records were read, and each process with its slices and slots, the latest seen first.
async fn processors_seen(
    state: &AppState,
    recent: &[BlobMeta],
    since: OffsetDateTime,
) -> (usize, Vec<ProcessorSeen>) {
    let mut seen: BTreeMap<String, (OffsetDateTime, u32, BTreeSet<String>)> = BTreeMap::new();
    let mut jobs_read = 0;
    for meta in recent {
        let Some(id) = meta
            .key
            .strip_prefix("jobs/")
            .and_then(|k| k.strip_suffix(".json"))
            .and_then(|k| uuid::Uuid::parse_str(k).ok())
        else {
            continue;
        };
        let record = match state.platform.jobs().get(id).await {
            Ok(r) => r,
            // Deleted since the listing, or not a record this version reads: nothing to learn.
            Err(JobError::NotFound(_)) => continue,
            Err(e) => {
                tracing::debug!(job = %id, error = %e, "job record skipped");
                continue;
            }
        };
        jobs_read += 1;
        for slice in record.slices.values() {
            if slice.finished_at < since {
                continue;
            }
            let (process, slot) = match slice.processor.rsplit_once('/') {
                Some((p, s)) => (p.to_string(), s.to_string()),
                None => (slice.processor.clone(), String::new()),
            };
            let entry = seen
                .entry(process)
                .or_insert((slice.finished_at, 0, BTreeSet::new()));
            entry.0 = entry.0.max(slice.finished_at);
            entry.1 += 1;
            entry.2.insert(slot);
        }
    }
    let mut processors: Vec<ProcessorSeen> = seen
        .into_iter()
        .map(|(id, (last_seen, slices, slots))| ProcessorSeen {
            id,
            last_seen,
            slices,
            slots: slots.len() as u32,
        })
        .collect();
    processors.sort_by_key(|p| std::cmp::Reverse(p.last_seen));
    (jobs_read, processors)
}

/// The processes registered to be woken for slice requests and alive at `now`: one listing.
async fn slice_listeners(state: &AppState, now: OffsetDateTime) -> ApiResult<Vec<ListenerSeen>> {
    let ttl = Duration::try_from(nudge::NudgeSettings::default().ttl).unwrap_or(Duration::ZERO);
    let prefix = format!(
        "{}/listeners/{}/",
        nudge::CONTAINER,
        QueueName::SliceRequest.as_str()
    );
    let listed = match state.platform.blobs.list(&prefix, LIST_PAGE, None).await {
        Ok(p) => p.items,
        Err(StorageError::NotFound(_)) => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    let mut listeners: Vec<ListenerSeen> = listed
        .into_iter()
        .filter(|m| m.last_modified + ttl > now)
        .filter_map(|m| {
            let name = m.key.rsplit('/').next()?;
            let listener = name.split('_').next()?.to_string();
            Some(ListenerSeen {
                listener,
                last_seen: m.last_modified,
            })
        })
        .collect();
    listeners.sort_by_key(|l| std::cmp::Reverse(l.last_seen));
    Ok(listeners)
}

/// A queue that does not exist yet holds nothing.
fn depth(result: Result<u64, StorageError>) -> ApiResult<u64> {
    match result {
        Ok(n) => Ok(n),
        Err(StorageError::NotFound(_)) => Ok(0),
        Err(e) => Err(e.into()),
    }
}
