//! The job record: one JSON blob per job (`jobs/{id}.json`) that every role reads and updates, so
//! any number of web instances, controllers and processors agree on a job's state.
//!
//! Updates are read-modify-write under the blob's ETag ([`PutMode::IfMatch`]), retried on a lost
//! race, and idempotent: the state only moves forward ([`JobState::rank`]), a slice is counted
//! once however often its response arrives, and a finished job stays finished.
//!
//! A job not ended yet also has an empty marker, [`BlobKey::ActiveJob`], written before its record
//! and removed once it ends, so that the controllers' reconciler finds the jobs to watch with one
//! listing, without reading every record ever made.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::keys::BlobKey;
use crate::spec::JobSpec;
use crate::storage::{BlobStore, PutMode, StorageError};

/// Where a job is in its life. Only ever moves forward, in this order; `Failed` and `Done` end it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    Queued,
    Slicing,
    Rendering,
    Stitching,
    Done,
    Failed,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Slicing => "slicing",
            JobState::Rendering => "rendering",
            JobState::Stitching => "stitching",
            JobState::Done => "done",
            JobState::Failed => "failed",
        }
    }

    pub fn is_final(self) -> bool {
        matches!(self, JobState::Done | JobState::Failed)
    }

    /// Position in the life cycle; a job never moves to a lower rank.
    pub fn rank(self) -> u8 {
        self as u8
    }
}

/// What the job was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobParams {
    /// What the job asks for, as it was asked.
    #[serde(flatten)]
    pub spec: JobSpec,
    /// The uploaded file's name, as the client gave it (display only).
    #[serde(default)]
    pub input_name: String,
}

/// One rendered slice.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SliceRecord {
    pub processor: String,
    pub render_ms: u64,
    #[serde(with = "time::serde::rfc3339")]
    pub finished_at: OffsetDateTime,
}

pub use crate::spec::OutputSize;

/// Who besides its owner may see a job. A job is readable by its id unless made private; a
/// private job is readable by its owner (or the operator) and by whoever holds its share link.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sharing {
    pub private: bool,
    /// The secret in the share link of a private job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

impl Sharing {
    fn is_open(&self) -> bool {
        *self == Sharing::default()
    }
}

/// What a job made again from an earlier one ([`crate::spec::JobSpec::keep_cells_of`]) kept of
/// it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct KeptCells {
    /// The earlier job.
    pub from: Uuid,
    /// Cells whose tile is not the one they held in the earlier job.
    pub changed: u64,
    /// Cells in all.
    pub cells: u64,
}

/// Quality figures of a job's mosaic on its cell grid, as the quality metric defines them:
/// CIEDE2000 between each cell's target colour and the colour its tile renders there, and how
/// tiles repeat. Worked out by the controller from the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct JobQuality {
    /// Mean CIEDE2000 colour difference between each cell's target colour and its tile.
    pub de00_mean: f64,
    /// 95th percentile of the same.
    pub de00_p95: f64,
    /// SSIM of the mosaic's and target's lightness seen from a distance (up to 1, higher is
    /// better): how well the mosaic keeps the photo's form. Absent on grids under 2 cells a side
    /// or over a million cells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssim_view: Option<f64>,
    /// Distinct tiles used.
    pub distinct: u32,
    /// Tiles in the library version the job used: `distinct` of these appear.
    #[serde(default)]
    pub library_tiles: u32,
    /// Uses of the least used tile of the library (0 while any tile is left out).
    #[serde(default)]
    pub min_uses: u32,
    /// Uses of the most used tile.
    pub max_uses: u32,
    /// With an overlay: the mean and 95th percentile colour differences of the mosaic with the
    /// photo laid over it (`de00_mean` and `de00_p95` are the tiles' alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlay: Option<OverlayQuality>,
    /// Share of cells (0 to 1) whose tile appears again within Chebyshev radius 1.
    pub dup_r1: f64,
    /// The same within radius 5.
    pub dup_r5: f64,
    /// The colour the library's transparent tiles were laid over, as `rrggbb` (the one `auto`
    /// chose, say); absent for a library without transparency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(pattern = "^[0-9a-f]{6}$", example = "000000")]
    pub background: Option<String>,
}

/// The colour differences of a mosaic with its overlay.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct OverlayQuality {
    /// The overlay's opacity, in percent.
    pub percent: u8,
    pub de00_mean: f64,
    pub de00_p95: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobRecord {
    pub id: Uuid,
    pub client_id: Uuid,
    /// The key the job was submitted with (a named key, or the operator's): such a job belongs
    /// to that key, whichever client carries it, and not to a client without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_holder: Option<crate::owner::Owner>,
    /// Who planning is shared by: the key (`key:NAME`), else the address the job came from
    /// (`address:IP`, an IPv6 /64 as its network). None: the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submitter: Option<String>,
    pub state: JobState,
    pub params: JobParams,
    /// What the service changed of the options the submission left at their defaults, so that
    /// its library could make the mosaic, in people's words (see [`JobSpec::fit_library`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adapted: Vec<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub finished_at: Option<OffsetDateTime>,
    #[serde(default)]
    pub output: Option<OutputSize>,
    /// The uniform grid the door sized the job to: sent again with the image request when the
    /// job is planned again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sized_to: Option<crate::spec::GridSize>,
    /// Quality figures (known once planned).
    #[serde(default)]
    pub quality: Option<JobQuality>,
    /// For a job made again from an earlier one, how many of its cells changed (known once
    /// planned).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kept: Option<KeptCells>,
    /// Who besides its owner may see the job.
    #[serde(default, skip_serializing_if = "Sharing::is_open")]
    pub sharing: Sharing,
    /// An event's mosaic whose library version the controller has still to make from the
    /// event's prepared photos (`libraryrequest`); until then the specification names the
    /// version before (or the first to come), and the job is not planned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library_of_event: Option<Uuid>,
    /// Whether the planner has stored the cell map and recorded the quality figures (none, for
    /// an adaptive mosaic). The job is done once this and the stitch are both in, whichever
    /// comes last.
    #[serde(default)]
    pub summarized: bool,
    /// Slices the job was cut into (known once sliced).
    #[serde(default)]
    pub slices_total: u32,
    /// Rendered slices by sequence number.
    #[serde(default)]
    pub slices: BTreeMap<u32, SliceRecord>,
    /// Blob key of the finished mosaic.
    #[serde(default)]
    pub result_blob: Option<String>,
    /// Why the job failed.
    #[serde(default)]
    pub error: Option<String>,
    /// Storage transactions spent on the job, by role.
    #[serde(default)]
    pub transactions: BTreeMap<String, u64>,
    /// Whether the job's `ImageResponse` has been sent (a redelivery after a crash sends it).
    #[serde(default)]
    pub announced: bool,
    /// When the reconciler found the job stalled and asked again for what was missing.
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub redriven_at: Option<OffsetDateTime>,
}

impl JobRecord {
    pub fn new(id: Uuid, client_id: Uuid, params: JobParams) -> Self {
        let now = OffsetDateTime::now_utc();
        JobRecord {
            id,
            client_id,
            key_holder: None,
            submitter: None,
            state: JobState::Queued,
            params,
            adapted: Vec::new(),
            created_at: now,
            updated_at: now,
            finished_at: None,
            output: None,
            sized_to: None,
            quality: None,
            kept: None,
            sharing: Sharing::default(),
            library_of_event: None,
            summarized: false,
            slices_total: 0,
            slices: BTreeMap::new(),
            result_blob: None,
            error: None,
            transactions: BTreeMap::new(),
            announced: false,
            redriven_at: None,
        }
    }

    /// Moves the state forward to `state`; a move backwards, or out of a final state, is ignored.
    /// Returns whether the state changed.
    pub fn advance(&mut self, state: JobState) -> bool {
        if self.state.is_final() || state.rank() <= self.state.rank() {
            return false;
        }
        self.state = state;
        if state.is_final() {
            self.finished_at = Some(OffsetDateTime::now_utc());
        }
        true
    }

    /// Records a rendered slice once; a repeat keeps the first record. Returns whether it was new.
    pub fn slice_done(&mut self, seq: u32, slice: SliceRecord) -> bool {
        if self.slices.contains_key(&seq) {
            return false;
        }
        self.slices.insert(seq, slice);
        true
    }

    /// Records the planner's summary (the quality figures, kept if recorded before). Returns
    /// whether this finished the job: the stitch was already in.
    pub fn summary_done(&mut self, quality: Option<JobQuality>) -> bool {
        if self.state.is_final() {
            return false;
        }
        if self.quality.is_none() {
            self.quality = quality;
        }
        self.summarized = true;
        self.is_stitched() && self.advance(JobState::Done)
    }

    /// Records the stitched result. Returns whether this finished the job: the planner's
    /// summary was already in.
    pub fn stitch_done(&mut self, result_blob: String) -> bool {
        if self.state.is_final() {
            return false;
        }
        self.result_blob = Some(result_blob);
        self.summarized && self.advance(JobState::Done)
    }

    /// Whether the result is stitched (the job may still wait for the planner's summary).
    pub fn is_stitched(&self) -> bool {
        self.result_blob.is_some()
    }

    /// Marks the job failed with a reason, unless it already ended.
    pub fn fail(&mut self, reason: impl Into<String>) -> bool {
        if self.state.is_final() {
            return false;
        }
        self.error = Some(reason.into());
        self.advance(JobState::Failed)
    }

    pub fn slices_done(&self) -> u32 {
        self.slices.len() as u32
    }

    /// Whether nothing has changed in the record for `timeout` up to `now`.
    pub fn stalled(&self, now: OffsetDateTime, timeout: std::time::Duration) -> bool {
        !self.state.is_final() && now - self.updated_at >= timeout
    }

    /// Where the job stands, for a person: `rendering, 3 of 4 slices`.
    pub fn progress(&self) -> String {
        match self.slices_total {
            0 => self.state.as_str().to_string(),
            total => format!(
                "{}, {} of {total} slices",
                self.state.as_str(),
                self.slices_done()
            ),
        }
    }
}

/// Why a job record could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("job {0} not found")]
    NotFound(Uuid),
    #[error("job record {0} is corrupt: {1}")]
    Corrupt(Uuid, String),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// Reads and updates job records in a blob store.
#[derive(Debug, Clone)]
pub struct JobStore {
    blobs: Arc<dyn BlobStore>,
}

/// Lost races tolerated in one update before giving up (each means another writer progressed).
const MAX_UPDATE_ATTEMPTS: usize = 32;

impl JobStore {
    pub fn new(blobs: Arc<dyn BlobStore>) -> Self {
        JobStore { blobs }
    }

    /// Stores a new record, and the marker of an active job before it; fails with
    /// `AlreadyExists` if the job is known.
    pub async fn create(&self, record: &JobRecord) -> Result<(), JobError> {
        if !record.state.is_final() {
            let marker = BlobKey::ActiveJob { job: record.id }.path();
            self.blobs
                .put(&marker, Bytes::new(), PutMode::Overwrite)
                .await?;
        }
        let key = BlobKey::JobRecord { job: record.id }.path();
        self.blobs
            .put(&key, encode(record), PutMode::CreateNew)
            .await?;
        Ok(())
    }

    /// Notes that a job ended: its client's marker (if the client has one) turns from empty to
    /// one byte, so that a listing of the client's markers counts its active jobs, and the
    /// job's active marker goes. Best effort: a marker left behind is seen to by the
    /// reconciler's next sweep, which calls this again.
    pub async fn forget_active(&self, job: Uuid, client: Option<Uuid>) {
        if let Some(client) = client {
            let marker = BlobKey::ClientJob { client, job }.path();
            if let Ok(meta) = self.blobs.head(&marker).await
                && meta.size == 0
                && let Err(e) = self
                    .blobs
                    .put(&marker, Bytes::from_static(b"e"), PutMode::Overwrite)
                    .await
            {
                tracing::debug!(%job, error = %e, "client marker of an ended job left active");
                return;
            }
        }
        let marker = BlobKey::ActiveJob { job }.path();
        match self.blobs.delete(&marker).await {
            Ok(()) | Err(StorageError::NotFound(_)) => {}
            Err(e) => tracing::debug!(%job, error = %e, "active marker of an ended job left"),
        }
    }

    /// Jobs of `client` not ended yet, counted from its markers (one listing).
    pub async fn active_of_client(&self, client: Uuid) -> Result<usize, StorageError> {
        use crate::storage::BlobStoreExt;
        let markers = self
            .blobs
            .list_all(&BlobKey::client_jobs_prefix(client))
            .await?;
        Ok(markers.iter().filter(|m| m.size == 0).count())
    }

    /// The record as stored: one blob read.
    pub async fn get(&self, job: Uuid) -> Result<JobRecord, JobError> {
        let key = BlobKey::JobRecord { job }.path();
        let bytes = self.blobs.get(&key).await.map_err(|e| not_found(job, e))?;
        serde_json::from_slice(&bytes).map_err(|e| JobError::Corrupt(job, e.to_string()))
    }

    /// The record and an ETag for a conditional write. The ETag is read before the body and may
    /// be older than it: the conditional write then fails and the update reads again, which is
    /// safe.
    async fn get_with_etag(&self, job: Uuid) -> Result<(JobRecord, String), JobError> {
        let key = BlobKey::JobRecord { job }.path();
        let meta = self.blobs.head(&key).await.map_err(|e| not_found(job, e))?;
        Ok((self.get(job).await?, meta.etag))
    }

    /// Applies `change` to the record and writes it back if `change` returns true, retrying on
    /// a concurrent writer. Returns the record as stored afterwards.
    pub async fn update(
        &self,
        job: Uuid,
        mut change: impl FnMut(&mut JobRecord) -> bool,
    ) -> Result<JobRecord, JobError> {
        let key = BlobKey::JobRecord { job }.path();
        for _ in 0..MAX_UPDATE_ATTEMPTS {
            let (mut record, etag) = self.get_with_etag(job).await?;
            let was_final = record.state.is_final();
            if !change(&mut record) {
                return Ok(record);
            }
            record.updated_at = OffsetDateTime::now_utc();
            match self
                .blobs
                .put(&key, encode(&record), PutMode::IfMatch(etag))
                .await
            {
                Ok(_) => {
                    if !was_final && record.state.is_final() {
                        metrics::counter!(crate::metric_names::JOBS_FINISHED, "state" => record.state.as_str())
                            .increment(1);
                        self.forget_active(job, Some(record.client_id)).await;
                    }
                    return Ok(record);
                }
                Err(StorageError::Precondition(_)) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(
            StorageError::Transient(format!("job {job}: too many concurrent updates").into())
                .into(),
        )
    }
}

fn not_found(job: Uuid, e: StorageError) -> JobError {
    match e {
        StorageError::NotFound(_) => JobError::NotFound(job),
        e => e.into(),
    }
}

fn encode(record: &JobRecord) -> Bytes {
    Bytes::from(serde_json::to_vec(record).expect("job records serialize"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messages::LibraryRef;

    fn record() -> JobRecord {
        JobRecord::new(
            Uuid::new_v4(),
            Uuid::new_v4(),
            JobParams {
                spec: JobSpec::cells(
                    LibraryRef {
                        id: "emoji".into(),
                        version: 1,
                    },
                    16,
                    32,
                    4,
                ),
                input_name: "cat.jpg".into(),
            },
        )
    }

    fn slice() -> SliceRecord {
        SliceRecord {
            processor: "p1".into(),
            render_ms: 5,
            finished_at: OffsetDateTime::now_utc(),
        }
    }

    #[test]
    fn state_only_moves_forward() {
        let mut r = record();
        assert!(r.advance(JobState::Rendering));
        assert!(!r.advance(JobState::Slicing));
        assert_eq!(r.state, JobState::Rendering);
        assert!(r.advance(JobState::Done));
        assert!(!r.fail("late failure"));
        assert_eq!(r.state, JobState::Done);
        assert!(r.error.is_none());
    }

    #[test]
    fn a_slice_counts_once() {
        let mut r = record();
        assert!(r.slice_done(2, slice()));
        assert!(!r.slice_done(
            2,
            SliceRecord {
                processor: "p2".into(),
                ..slice()
            }
        ));
        assert_eq!(r.slices_done(), 1);
        assert_eq!(r.slices[&2].processor, "p1");
    }

    fn quality(de00_mean: f64) -> JobQuality {
        JobQuality {
            de00_mean,
            de00_p95: 20.0,
            ssim_view: Some(0.7),
            distinct: 10,
            library_tiles: 12,
            min_uses: 0,
            max_uses: 3,
            overlay: None,
            dup_r1: 0.0,
            dup_r5: 0.1,
            background: None,
        }
    }

    #[test]
    fn the_job_is_done_by_whichever_of_summary_and_stitch_comes_last() {
        // Summary first: the stitch finishes the job.
        let mut r = record();
        r.advance(JobState::Rendering);
        assert!(!r.summary_done(Some(quality(12.0))));
        assert_eq!(r.state, JobState::Rendering);
        r.advance(JobState::Stitching);
        assert!(r.stitch_done("out.png".into()));
        assert_eq!(r.state, JobState::Done);
        assert_eq!(r.quality.as_ref().map(|q| q.de00_mean), Some(12.0));
        // Once done, neither finishes it again.
        assert!(!r.stitch_done("out.png".into()));
        assert!(!r.summary_done(None));

        // Stitch first: the job waits, stitched, for the summary, which finishes it.
        let mut r = record();
        r.advance(JobState::Stitching);
        assert!(!r.stitch_done("out.png".into()));
        assert!(r.is_stitched());
        assert_eq!(r.state, JobState::Stitching);
        assert!(r.summary_done(Some(quality(13.0))));
        assert_eq!(r.state, JobState::Done);
        assert_eq!(r.result_blob.as_deref(), Some("out.png"));

        // A summary made again (a redelivery) keeps the figures recorded first; a summary
        // without figures (an adaptive mosaic) still lets the job end.
        let mut r = record();
        r.advance(JobState::Stitching);
        r.summary_done(Some(quality(12.0)));
        r.summary_done(Some(quality(14.0)));
        assert_eq!(r.quality.as_ref().map(|q| q.de00_mean), Some(12.0));
        let mut r = record();
        r.advance(JobState::Stitching);
        assert!(!r.summary_done(None));
        assert!(r.stitch_done("out.png".into()));
        assert!(r.quality.is_none());

        // A failed job stays failed.
        let mut r = record();
        r.fail("gone");
        assert!(!r.summary_done(None) && !r.stitch_done("out.png".into()));
        assert!(!r.is_stitched());
    }

    #[test]
    fn record_round_trips_as_json() {
        let mut r = record();
        r.slice_done(0, slice());
        let text = serde_json::to_string(&r).unwrap();
        let back: JobRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(back.slices.len(), 1);
        assert_eq!(back.params, r.params);
        assert!(text.contains("\"state\":\"queued\""));
    }
}
