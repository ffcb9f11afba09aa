//! What both roles share: how rows are cut into slices, and marking a job failed.

use std::ops::Range;
use std::sync::Arc;

use tessera_shared::jobs::{JobError, JobRecord};
use tessera_shared::library_cache::LibraryCache;
use tessera_shared::lifecycle::release_intermediates;
use tessera_shared::messages::Message;
use tessera_shared::messages::{Envelope, ImageResponse, JobOutcome, QueueName};
use tessera_shared::platform::Platform;
use tessera_shared::runtime::{
    Failure, Handler, Listener, ListenerHandle, ListenerSettings, PoisonRecord, poison,
};
use tessera_shared::storage::StorageError;
use uuid::Uuid;

/// The cell rows of each of `slices` slices of a grid `rows` high, split as evenly as can be;
/// never more slices than rows, never an empty slice.
pub fn slice_ranges(rows: u32, slices: u32) -> Vec<Range<u32>> {
    let count = slices.clamp(1, rows.max(1));
    (0..count)
        .map(|i| {
            let start = (u64::from(i) * u64::from(rows) / u64::from(count)) as u32;
            let end = (u64::from(i + 1) * u64::from(rows) / u64::from(count)) as u32;
            start..end
        })
        .collect()
}

/// Marks `job` failed with `reason` (unless it already ended) and, if this call ended it, tells
/// the front end with a failed `ImageResponse`.
pub(crate) async fn fail_job(platform: &Platform, job: Uuid, reason: &str) -> Result<(), JobError> {
    fail_job_if(platform, job, |_| Some(reason.to_string()), None)
        .await
        .map(drop)
}

/// Fails `job` with the reason `why` gives for its record as it stands (`None` leaves the job
/// alone), as [`fail_job`] does; returns the reason if this call ended the job. A job with no
/// record is answered with a failed `ImageResponse` when `no_record` gives its client and
/// reason (a request from outside, such as an Azure Function's, has no record), else left
/// alone.
pub(crate) async fn fail_job_if(
    platform: &Platform,
    job: Uuid,
    mut why: impl FnMut(&JobRecord) -> Option<String>,
    no_record: Option<(Uuid, &str)>,
) -> Result<Option<String>, JobError> {
    let mut ended = None;
    let client = match platform
        .jobs()
        .update(job, |record| {
            ended = why(record).filter(|reason| record.fail(reason.clone()));
            ended.is_some()
        })
        .await
    {
        Ok(record) => {
            if ended.is_some() {
                // Owed before the failure is announced, as a done job's is.
                tessera_shared::outbox::owe(platform, &record).await?;
            }
            record.client_id
        }
        Err(JobError::NotFound(_)) => match no_record {
            Some((client, reason)) => {
                tracing::warn!(%job, "request without a job record failed");
                ended = Some(reason.to_string());
                client
            }
            None => {
                tracing::warn!(%job, "failed job has no record");
                return Ok(None);
            }
        },
        Err(e) => return Err(e),
    };
    if let Some(reason) = &ended {
        tracing::warn!(%job, reason, "job failed");

        let response = ImageResponse {
            job_id: job,
            outcome: JobOutcome::Failed {
                reason: reason.clone(),
            },
        };
        platform
            .queue::<ImageResponse>()
            .send(&Envelope::new(client, response))
            .await?;
        // Slices not started yet find no plan and are skipped (best effort: a slice rendered
        // anyway is only wasted work; what is left is swept by the storage gc, the upload too).
        if let Err(e) = release_intermediates(&*platform.blobs, job, true).await {
            tracing::warn!(%job, error = %e, "intermediates of a failed job left for the gc");
        }
    }
    Ok(ended)
}

/// Fails the job for good and poisons the message; a storage error while recording it is retried.
pub(crate) async fn give_up(platform: &Platform, job: Uuid, reason: String) -> Failure {
    match fail_job(platform, job, &reason).await {
        Ok(()) => Failure::poison(reason),
        Err(e) => {
            tracing::warn!(%job, error = %e, "could not record the failure; retrying");
            Failure::retry_because(format!("{reason} (not recorded: {e})"))
        }
    }
}

/// Storage errors of the job store are worth a retry; a corrupt record is not.
pub(crate) fn job_failure(job: Uuid, e: JobError) -> Failure {
    match e {
        JobError::Storage(e) => Failure::retry_because(format!("job {job}: {e}")),
        other => Failure::poison(format!("job {job}: {other}")),
    }
}

/// Lowers the calling thread's CPU priority to `nice` (Linux keeps a nice value per thread;
/// elsewhere the thread keeps its priority).
pub(crate) fn lower_thread_priority(nice: i32) {
    #[cfg(target_os = "linux")]
    if let Err(e) = rustix::process::setpriority_process(Some(rustix::thread::gettid()), nice) {
        tracing::debug!(error = %e, "thread keeps its priority");
    }
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
}

/// What a caught panic says.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

/// Runs `work` on a thread of its own at CPU priority `nice` (10 to 19: below everything the
/// process waits on); a panic comes back as an error.
pub(crate) async fn on_background_thread<T: Send + 'static>(
    nice: i32,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    caught(
        "",
        "the thread went away",
        |job| {
            std::thread::Builder::new()
                .name("background".into())
                .spawn(move || {
                    lower_thread_priority(nice);
                    job();
                })
                .map(drop)
                .map_err(|e| e.to_string())
        },
        work,
    )
    .await
}

/// Hands `work` to `spawn` (which runs it on some other thread) and waits for its value; a panic
/// comes back as an error, `{doing}panicked: ...`, and a job dropped unrun as `gone`.
pub(crate) async fn caught<T: Send + 'static>(
    doing: &str,
    gone: &str,
    spawn: impl FnOnce(Box<dyn FnOnce() + Send>) -> Result<(), String>,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let (done, result) = tokio::sync::oneshot::channel();
    spawn(Box::new(move || {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work));
        let _ = done.send(outcome.map_err(|panic| panic_message(&*panic)));
    }))?;
    match result.await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(panic)) => Err(format!("{doing}panicked: {panic}")),
        Err(_) => Err(gone.into()),
    }
}

/// Marks the owning job failed when one of its messages is poisoned, in a task of its own that
/// retries while storage fails (the listener goes on meanwhile).
/// A role's cache of libraries: `capacity` libraries within `mib` MiB of tiles.
pub(crate) fn library_cache(platform: &Platform, capacity: usize, mib: u64) -> Arc<LibraryCache> {
    Arc::new(LibraryCache::new(platform.libraries(), capacity, mib << 20))
}

/// Starts a listener on `M`'s queue; a message that poisons fails its job, the reason starting
/// with `what`.
pub(crate) async fn listen<M: Message, H: Handler<M>>(
    platform: &Platform,
    settings: ListenerSettings,
    what: &'static str,
    handler: H,
) -> Result<ListenerHandle, StorageError> {
    Listener::new(platform.queue::<M>())
        .settings(settings)
        .on_poison(poison_hook(platform.clone(), what))
        .start(handler)
        .await
}

pub(crate) fn poison_hook(platform: Platform, what: &'static str) -> poison::PoisonHook {
    poison::hook(move |record: PoisonRecord| {
        let platform = platform.clone();
        async move {
            let Some(job) = record.job_id else { return };
            let reason = format!("{what}: {}", record.reason);
            // A request from outside (an Azure Function, say) may have no job record: its
            // sender still hears of the failure on `imageresponse`.
            let answer_unknown = record.queue == QueueName::ImageRequest.as_str();
            let client = record
                .body
                .as_deref()
                .and_then(poison::probe_client_id)
                .unwrap_or_default();
            tokio::spawn(poison::record_fate(job, move || {
                let (platform, reason) = (platform.clone(), reason.clone());
                async move {
                    let no_record = answer_unknown.then_some((client, reason.as_str()));
                    fail_job_if(&platform, job, |_| Some(reason.clone()), no_record)
                        .await
                        .map(drop)
                }
            }));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_cover_every_row_once() {
        for rows in [1u32, 2, 7, 30, 31, 512] {
            for slices in [1u32, 3, 8, 40, 1024] {
                let ranges = slice_ranges(rows, slices);
                assert_eq!(ranges.len() as u32, slices.min(rows));
                assert_eq!(ranges[0].start, 0);
                assert_eq!(ranges.last().unwrap().end, rows);
                for pair in ranges.windows(2) {
                    assert_eq!(pair[0].end, pair[1].start);
                }
                assert!(ranges.iter().all(|r| !r.is_empty()));
            }
        }
    }
}
