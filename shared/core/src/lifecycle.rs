//! The life cycle of what jobs store: intermediates go when a job ends, a deleted job leaves
//! nothing, results expire, and library versions no job needs are collected.
//!
//! A done job holds its record, its result, and what the viewer made of the result (preview,
//! seek index, zoom tiles). Its upload, slice plans and slice outputs go as it ends
//! ([`release_intermediates`]); [`collect_garbage`] sweeps what a crash left behind, results past
//! their retention, and old library versions. [`usage`] reports bytes by kind.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::time::Duration;

use time::OffsetDateTime;
use uuid::Uuid;

use crate::jobs::{JobError, JobRecord};
use crate::keys::BlobKey;
use crate::messages::LibraryRef;
use crate::platform::Platform;
use crate::storage::{BlobStore, BlobStoreExt, StorageError};

/// Every container Tessera writes, with what it holds (the kinds [`usage`] reports).
pub const KINDS: &[(&str, &str)] = &[
    ("imageinput", "uploads"),
    ("sliceinput", "slice plans"),
    ("sliceoutput", "slice outputs"),
    ("imageoutput", "results"),
    ("imagepreview", "previews"),
    ("seekindex", "seek indexes"),
    ("imagetiles", "zoom tiles"),
    ("cellmaps", "cell maps"),
    ("jobs", "job records"),
    ("activejobs", "active job markers"),
    ("clients", "client job lists"),
    ("libraries", "tile libraries"),
    ("librarysheets", "contact sheets"),
    ("messagebodies", "large message bodies"),
    ("health", "readiness probes"),
    ("roles", "role registrations"),
    ("sessions", "browser sessions"),
];

/// Blobs and bytes of one kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub blobs: u64,
    pub bytes: u64,
}

/// Blobs and bytes in each container of [`KINDS`], in that order.
pub async fn usage(blobs: &dyn BlobStore) -> Result<Vec<(&'static str, Usage)>, StorageError> {
    let mut out = Vec::with_capacity(KINDS.len());
    for (container, _) in KINDS {
        let mut usage = Usage::default();
        for meta in blobs.list_all(&format!("{container}/")).await? {
            usage.blobs += 1;
            usage.bytes += meta.size;
        }
        out.push((*container, usage));
    }
    Ok(out)
}

async fn delete_quietly(blobs: &dyn BlobStore, key: &str) -> Result<u64, StorageError> {
    match blobs.delete(key).await {
        Ok(()) => Ok(1),
        Err(StorageError::NotFound(_)) => Ok(0),
        Err(e) => Err(e),
    }
}

async fn delete_prefix(blobs: &dyn BlobStore, prefix: &str) -> Result<u64, StorageError> {
    let mut deleted = 0;
    for meta in blobs.list_all(prefix).await? {
        deleted += delete_quietly(blobs, &meta.key).await?;
    }
    Ok(deleted)
}

/// Deletes what an ended job no longer needs: its slice plans and outputs, and its upload unless
/// `keep_input`. Returns the blobs deleted.
pub async fn release_intermediates(
    blobs: &dyn BlobStore,
    job: Uuid,
    keep_input: bool,
) -> Result<u64, StorageError> {
    let mut deleted = delete_prefix(blobs, &BlobKey::slice_inputs_prefix(job)).await?;
    deleted += delete_prefix(blobs, &BlobKey::slice_outputs_prefix(job)).await?;
    if !keep_input {
        deleted += delete_quietly(blobs, &BlobKey::ImageInput { job }.path()).await?;
    }
    Ok(deleted)
}

/// Deletes a job and everything it holds, its record last (so that a deletion cut short can be
/// done again). Returns the blobs deleted.
pub async fn delete_job(blobs: &dyn BlobStore, record: &JobRecord) -> Result<u64, StorageError> {
    let job = record.id;
    let output = record
        .result_blob
        .clone()
        .unwrap_or_else(|| BlobKey::ImageOutput { job }.path());
    let mut deleted = release_intermediates(blobs, job, false).await?;
    deleted += delete_prefix(blobs, &BlobKey::image_tiles_prefix(job)).await?;
    for key in [
        BlobKey::SeekIndex {
            output: output.clone(),
        }
        .path(),
        BlobKey::ImagePreview { job }.path(),
        BlobKey::CellMap { job }.path(),
        BlobKey::ImageFile {
            job,
            extension: record.params.spec.format.extension(),
        }
        .path(),
        output,
        BlobKey::ClientJob {
            client: record.client_id,
            job,
        }
        .path(),
        BlobKey::ActiveJob { job }.path(),
        BlobKey::JobRecord { job }.path(),
    ] {
        deleted += delete_quietly(blobs, &key).await?;
    }
    Ok(deleted)
}

/// How long results are kept (the `[retention]` section).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetentionSettings {
    /// Days a job and its result are kept after the job ended; 0 keeps them forever.
    pub result_days: u64,
}

impl Default for RetentionSettings {
    fn default() -> Self {
        RetentionSettings { result_days: 30 }
    }
}

impl RetentionSettings {
    /// How long after its end a job is deleted; `None`: never.
    pub fn retention(&self) -> Option<Duration> {
        (self.result_days > 0).then(|| Duration::from_secs(self.result_days * 86_400))
    }
}

/// When a job's result expires, `retention` after it ended (`None`: never).
pub fn expires_at(record: &JobRecord, retention: Option<Duration>) -> Option<OffsetDateTime> {
    Some(record.finished_at? + retention?)
}

/// What [`collect_garbage`] follows.
#[derive(Debug, Clone, Copy)]
pub struct GcOptions {
    /// Ended jobs are deleted this long after they ended; `None` keeps them.
    pub retention: Option<Duration>,
    /// Keep the uploads of ended jobs.
    pub keep_inputs: bool,
    /// Blobs of a job with no record are left this long (a submission writes its upload first).
    pub grace: Duration,
}

/// What one sweep removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GcReport {
    /// Ended jobs whose intermediates were left behind, now released.
    pub released: u64,
    /// Jobs deleted because their results expired.
    pub expired: u64,
    /// Blobs of jobs that have no record.
    pub orphans: u64,
    /// Library versions no longer current and used by no active job.
    pub library_versions: u64,
    /// Browser sessions past their lifetime.
    pub sessions: u64,
    /// Events whose guests' photos went, their retention after closing over.
    pub events_erased: u64,
    /// Blobs deleted in all.
    pub blobs: u64,
}

/// One sweep over storage: intermediates of ended jobs, blobs of jobs with no record, expired
/// jobs, and library versions that are neither current nor used by an active job.
pub async fn collect_garbage(
    platform: &Platform,
    options: GcOptions,
) -> Result<GcReport, StorageError> {
    let now = OffsetDateTime::now_utc();
    let mut report = GcReport::default();
    collect_intermediates(platform, &options, now, &mut report).await?;
    if let Some(retention) = options.retention {
        collect_expired(platform, retention, now, &mut report).await?;
    }
    collect_library_versions(platform, &mut report).await?;
    collect_event_photos(platform, now, &mut report).await?;
    // Sessions: written once at sign-in, over when their lifetime has passed since.
    let blobs = &*platform.blobs;
    let lifetime = time::Duration::days(SESSION_LIFETIME_DAYS);
    for meta in blobs.list_all(BlobKey::SESSIONS_PREFIX).await? {
        if now - meta.last_modified > lifetime {
            report.blobs += delete_quietly(blobs, &meta.key).await?;
            report.sessions += 1;
        }
    }
    Ok(report)
}

/// Intermediates, by the job they belong to: a finished job's are released, and those of a
/// job without a record once the grace has passed.
async fn collect_intermediates(
    platform: &Platform,
    options: &GcOptions,
    now: OffsetDateTime,
    report: &mut GcReport,
) -> Result<(), StorageError> {
    let (blobs, jobs) = (&*platform.blobs, platform.jobs());
    let mut owners: BTreeMap<Uuid, OffsetDateTime> = BTreeMap::new();
    for container in ["imageinput/", "sliceinput/", "sliceoutput/"] {
        for meta in blobs.list_all(container).await? {
            let id = meta.key[container.len()..].split('/').next().unwrap_or("");
            if let Ok(job) = id.parse::<Uuid>() {
                let newest = owners.entry(job).or_insert(meta.last_modified);
                *newest = (*newest).max(meta.last_modified);
            }
        }
    }
    for (job, newest) in owners {
        match jobs.get(job).await {
            Ok(record) if record.state.is_final() => {
                let deleted = release_intermediates(blobs, job, options.keep_inputs).await?;
                if deleted > 0 {
                    report.released += 1;
                    report.blobs += deleted;
                }
            }
            Ok(_) => {}
            Err(JobError::NotFound(_)) if now - newest >= options.grace => {
                let deleted = release_intermediates(blobs, job, false).await?;
                report.orphans += deleted;
                report.blobs += deleted;
            }
            Err(JobError::NotFound(_)) => {}
            Err(JobError::Corrupt(..)) => {}
            Err(JobError::Storage(e)) => return Err(e),
        }
    }
    Ok(())
}

/// Expired results: a record's last write is no earlier than the job's end, so only records
/// unchanged for the whole retention are read.
async fn collect_expired(
    platform: &Platform,
    retention: Duration,
    now: OffsetDateTime,
    report: &mut GcReport,
) -> Result<(), StorageError> {
    let (blobs, jobs) = (&*platform.blobs, platform.jobs());
    for meta in blobs.list_all(BlobKey::JOB_RECORDS_PREFIX).await? {
        if now - meta.last_modified < retention {
            continue;
        }
        let Some(job) = BlobKey::job_of_record(&meta.key) else {
            continue;
        };
        let record = match jobs.get(job).await {
            Ok(record) => record,
            Err(JobError::Storage(e)) => return Err(e),
            Err(_) => continue,
        };
        if expires_at(&record, Some(retention)).is_some_and(|at| at <= now) {
            report.blobs += delete_job(blobs, &record).await?;
            report.expired += 1;
        }
    }
    Ok(())
}

/// The guests' photos of events closed for longer than their retention, and each such event's
/// library (left to a later sweep while a job renders from it).
async fn collect_event_photos(
    platform: &Platform,
    now: OffsetDateTime,
    report: &mut GcReport,
) -> Result<(), StorageError> {
    use crate::events::EventError;
    let events = platform.events();
    let storage = |e: EventError| match e {
        EventError::Storage(e) => e,
        e => StorageError::Other(e.to_string().into()),
    };
    for event in events.all_events().await.map_err(storage)? {
        let record = match events.get(event).await {
            Ok(record) => record,
            Err(EventError::Storage(e)) => return Err(e),
            Err(_) => continue,
        };
        if record.erased_at.is_some() || record.photos_expire_at().is_none_or(|at| at > now) {
            continue;
        }
        match platform.libraries().delete(&record.library_id()).await {
            Ok(deleted) => report.blobs += deleted as u64,
            Err(crate::libraries::LibraryError::NotFound(_)) => {}
            Err(crate::libraries::LibraryError::InUse { .. }) => continue,
            Err(e) => return Err(library_storage_error(e)),
        }
        report.blobs += events.erase_photos(&record).await.map_err(storage)?;
        report.events_erased += 1;
        tracing::info!(event = %event, "an ended event's photos went, their retention over");
    }
    Ok(())
}

/// Library versions: the current one of each library stays, and any an active job names. One
/// listing of each library's indexes and sheets finds the versions still stored.
async fn collect_library_versions(
    platform: &Platform,
    report: &mut GcReport,
) -> Result<(), StorageError> {
    let (blobs, jobs) = (&*platform.blobs, platform.jobs());
    let mut in_use: HashSet<LibraryRef> = HashSet::new();
    for marker in blobs.list_all(BlobKey::ACTIVE_JOBS_PREFIX).await? {
        if let Some(job) = BlobKey::active_job_of(&marker.key)
            && let Ok(record) = jobs.get(job).await
        {
            in_use.insert(record.params.spec.library.clone());
        }
    }
    for library in platform
        .libraries()
        .list()
        .await
        .map_err(library_storage_error)?
    {
        let mut stored = blobs
            .list_all(&BlobKey::library_prefix(&library.id))
            .await?;
        stored.extend(
            blobs
                .list_all(&BlobKey::library_sheets_prefix(&library.id))
                .await?,
        );
        let mut collected = BTreeSet::new();
        for meta in stored {
            let Some(version) = BlobKey::library_version_of(&meta.key, &library.id) else {
                continue;
            };
            let reference = LibraryRef {
                id: library.id.clone(),
                version,
            };
            if version >= library.version || in_use.contains(&reference) {
                continue;
            }
            report.blobs += delete_quietly(blobs, &meta.key).await?;
            collected.insert(version);
        }
        report.library_versions += collected.len() as u64;
        report.blobs += crate::library_parts::collect(blobs, &library.id).await?;
    }
    Ok(())
}

/// How long a browser stays signed in: its session ends this long after sign-in (or at
/// sign-out), and the sweep deletes what is left of it.
pub const SESSION_LIFETIME_DAYS: i64 = 30;

fn library_storage_error(e: crate::libraries::LibraryError) -> StorageError {
    match e {
        crate::libraries::LibraryError::Storage(e) => e,
        other => StorageError::Other(other.to_string().into()),
    }
}
