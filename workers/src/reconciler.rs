//! The reconciler: every job reaches done or failed.
//!
//! Messages are delivered at least once, yet a job can still stall: its poison hook could not
//! write while storage was down, a process died between poisoning a message and marking the job,
//! an operator cleared a queue. Each job controller sweeps the jobs not ended yet (one listing of
//! their [`BlobKey::ActiveJob`] markers) every quarter of `jobs.stall_timeout_secs`. A job whose
//! record has not changed for that long is re-driven once: what is missing is asked for again
//! (the plan, the slices not rendered, the planner's summary, or the stitch), idempotently. A
//! job that stalls again after that fails with the reason.
//!
//! Under several controllers, the record's conditional write decides: the first to note the
//! re-drive acts, the others find a record that changed a moment ago and leave it.

use std::collections::HashSet;
use std::time::Duration;

use tessera_shared::jobs::{JobError, JobRecord, JobState};
use tessera_shared::keys::BlobKey;
use tessera_shared::lifecycle::{GcOptions, collect_garbage};
use tessera_shared::messages::{
    Envelope, ImageRequest, LibraryRequest, SliceRequest, SliceResponse,
};
use tessera_shared::platform::Platform;
use tessera_shared::runtime::shutdown::Shutdown;
use tessera_shared::storage::{BlobStoreExt, StorageError};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::job_work::fail_job_if;
use crate::role_settings::JobsSettings;

/// What one sweep did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SweepReport {
    /// Jobs not ended yet.
    pub active: usize,
    /// Stalled jobs asked again for what was missing.
    pub redriven: Vec<Uuid>,
    /// Stalled jobs failed (they had been re-driven before).
    pub failed: Vec<Uuid>,
}

/// Sweeps every `sweep_interval` until `shutdown` fires.
pub(crate) async fn run_reconciler(platform: Platform, settings: JobsSettings, shutdown: Shutdown) {
    while next_pass(settings.sweep_interval(), &shutdown).await {
        match sweep(&platform, settings.stall_timeout()).await {
            Ok(report) if report.redriven.is_empty() && report.failed.is_empty() => {}
            Ok(report) => tracing::info!(
                active = report.active,
                redriven = report.redriven.len(),
                failed = report.failed.len(),
                "stalled jobs reconciled"
            ),
            Err(e) => tracing::warn!(error = %e, "reconciler sweep failed; next sweep retries"),
        }
    }
}

/// Sweeps storage every `interval` until `shutdown` fires ([`collect_garbage`]).
pub(crate) async fn run_storage_gc(
    platform: Platform,
    options: GcOptions,
    interval: Duration,
    shutdown: Shutdown,
) {
    while next_pass(interval, &shutdown).await {
        match collect_garbage(&platform, options).await {
            Ok(report) if report.blobs == 0 => {}
            Ok(report) => tracing::info!(?report, "storage swept"),
            Err(e) => tracing::warn!(error = %e, "storage sweep failed; the next one retries"),
        }
    }
}

/// Waits `interval`, up to a quarter longer at random (controllers started together spread their
/// passes); false when `shutdown` fires first.
async fn next_pass(interval: Duration, shutdown: &Shutdown) -> bool {
    let jitter = interval.mul_f64(rand::random::<f64>() * 0.25);
    tokio::select! {
        () = shutdown.fired() => false,
        () = tokio::time::sleep(interval + jitter) => true,
    }
}

/// One pass over the jobs not ended yet: re-drives or fails those stalled for `stall`.
pub async fn sweep(platform: &Platform, stall: Duration) -> Result<SweepReport, StorageError> {
    let mut report = SweepReport::default();
    let jobs = platform.jobs();
    for marker in platform.blobs.list_all(BlobKey::ACTIVE_JOBS_PREFIX).await? {
        let Some(job) = BlobKey::active_job_of(&marker.key) else {
            continue;
        };
        let now = OffsetDateTime::now_utc();
        let record = match jobs.get(job).await {
            Ok(record) => record,
            // A marker written by a submission whose record never followed, or left by a job
            // deleted since: gone once it is older than a stall.
            Err(JobError::NotFound(_)) => {
                if now - marker.last_modified >= stall {
                    jobs.forget_active(job, None).await;
                }
                continue;
            }
            Err(e) => {
                tracing::warn!(%job, error = %e, "job record not read");
                continue;
            }
        };
        if record.state.is_final() {
            jobs.forget_active(job, Some(record.client_id)).await;
            continue;
        }
        report.active += 1;
        if !record.stalled(now, stall) {
            continue;
        }
        let (acted, list) = if record.redriven_at.is_some() {
            (fail_stalled(platform, job, stall).await, &mut report.failed)
        } else {
            (redrive(platform, job, stall).await, &mut report.redriven)
        };
        match acted {
            Ok(true) => list.push(job),
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(%job, error = %e, "stalled job not reconciled; next sweep retries")
            }
        }
    }
    Ok(report)
}

/// Fails a job that stalled again after its re-drive; false if it moved meanwhile.
async fn fail_stalled(platform: &Platform, job: Uuid, stall: Duration) -> Result<bool, JobError> {
    let reason = fail_job_if(
        platform,
        job,
        |r| {
            let now = OffsetDateTime::now_utc();
            (r.stalled(now, stall) && r.redriven_at.is_some()).then(|| {
                format!(
                    "no progress for {} s, even after its missing work was asked for again \
                 (stopped at {})",
                    stall.as_secs(),
                    r.progress()
                )
            })
        },
        None,
    )
    .await?;
    Ok(reason.is_some())
}

/// Notes the re-drive in the record (the conditional write makes this controller the one that
/// acts) and asks again for what the job misses; false if the job moved meanwhile.
async fn redrive(platform: &Platform, job: Uuid, stall: Duration) -> Result<bool, JobError> {
    let mut claimed = false;
    let record = platform
        .jobs()
        .update(job, |r| {
            let now = OffsetDateTime::now_utc();
            claimed = r.stalled(now, stall) && r.redriven_at.is_none();
            if claimed {
                r.redriven_at = Some(now);
            }
            claimed
        })
        .await?;
    if !claimed {
        return Ok(false);
    }
    tracing::warn!(%job, progress = record.progress(), "job stalled; asking again for what is missing");
    resend_missing(platform, &record).await?;
    Ok(true)
}

/// Sends the messages that take `record`'s job on from where it stands: the image request when
/// it was never planned, a slice's plan is gone or the planner's summary never came (planning
/// again also asks for the slices not rendered), the requests of the slices not rendered, and,
/// with every slice in but no stitch, one slice response again so that the job is stitched.
async fn resend_missing(platform: &Platform, record: &JobRecord) -> Result<(), StorageError> {
    let job = record.id;
    let client = record.client_id;
    let params = &record.params;
    let plan_again = || async {
        if let Some(event_id) = record.library_of_event {
            // Its library was never made: that is asked for again, and the job follows.
            let request = LibraryRequest {
                event_id,
                job_id: job,
            };
            return platform
                .queue::<LibraryRequest>()
                .send(&Envelope::new(client, request))
                .await
                .map(drop);
        }
        let request = ImageRequest {
            job_id: job,
            input_blob: BlobKey::ImageInput { job }.path(),
            spec: params.spec.clone(),
            sized_to: record.sized_to,
            redrive: true,
        };
        platform
            .queue::<ImageRequest>()
            .send(&Envelope::new(client, request))
            .await
            .map(drop)
    };
    let total = record.slices_total;
    let missing: Vec<u32> = (0..total)
        .filter(|seq| !record.slices.contains_key(seq))
        .collect();
    if total == 0
        || record.state < JobState::Rendering
        || (!record.summarized && !missing.is_empty())
    {
        return plan_again().await;
    }
    if missing.is_empty() {
        if !record.summarized {
            plan_again().await?;
        }
        if record.is_stitched() {
            return Ok(());
        }
        let (&seq, slice) = record.slices.last_key_value().expect("total > 0");
        let response = SliceResponse {
            job_id: job,
            seq,
            output_blob: BlobKey::SliceOutput { job, seq }.path(),
            processor: slice.processor.clone(),
            render_ms: slice.render_ms,
            count: total,
            transactions: 0,
        };
        return platform
            .queue::<SliceResponse>()
            .send(&Envelope::new(client, response))
            .await
            .map(drop);
    }
    let plans: HashSet<String> = platform
        .blobs
        .list_all(&BlobKey::slice_inputs_prefix(job))
        .await?
        .into_iter()
        .map(|meta| meta.key)
        .collect();
    let plan_key = |seq| BlobKey::SliceInput { job, seq }.path();
    if missing.iter().any(|&seq| !plans.contains(&plan_key(seq))) {
        return plan_again().await;
    }
    for seq in missing {
        let request = SliceRequest {
            job_id: job,
            seq,
            count: total,
            plan_blob: plan_key(seq),
            spec: params.spec.clone(),
        };
        platform
            .queue::<SliceRequest>()
            .send(&Envelope::new(client, request))
            .await?;
    }
    Ok(())
}
