//! The job controller: `imagerequest` -> plan and slices -> `slicerequest`; `sliceresponse` ->
//! progress, and once every slice is in storage, the stitched output -> `imageresponse`.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tessera_engine::{
    AdaptivePlan, AdaptiveSizing, CellMap, Error as EngineError, FRAGMENT_HEADER_BYTES, Plan,
    RgbImage, TileCache, decode_target, hex_colour, plan_quality,
};
use tessera_shared::jobs::{
    JobError, JobParams, JobQuality, JobRecord, JobState, KeptCells, OutputSize, SliceRecord,
};
use tessera_shared::keys::BlobKey;
use tessera_shared::lifecycle::release_intermediates;
use tessera_shared::messages::{
    Envelope, ImageRequest, ImageResponse, JobOutcome, LibraryRequest, SliceRequest, SliceResponse,
};
use tessera_shared::platform::Platform;
use tessera_shared::runtime::shutdown::Shutdown;
use tessera_shared::runtime::{Context, Failure};
use tessera_shared::spec::{FileFormat, GridSize, JobLimits, JobSpec};
use tessera_shared::storage::{BlobMeta, BlobStoreExt, PutMode, SendOptions, StorageError};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::job_work::{
    give_up, job_failure, library_cache, listen, on_background_thread, slice_ranges,
};
use crate::role_settings::ControllerSettings;
use crate::stitch::{StitchError, convert_output, stitch_png};
use tessera_shared::library_cache::{LibraryCache, LibraryLoadError};

/// Runs the job controller until `shutdown` fires, then stops receiving and lets the messages in
/// hand finish.
pub async fn run_controller(
    platform: Platform,
    settings: ControllerSettings,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let libraries = library_cache(
        &platform,
        settings.library_cache,
        settings.library_cache_mib,
    );
    run_controller_with(platform, settings, libraries, shutdown).await
}

/// [`run_controller`] with a library cache it may share with processors in the same process.
pub(crate) async fn run_controller_with(
    platform: Platform,
    settings: ControllerSettings,
    libraries: Arc<LibraryCache>,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    platform.ensure_queues().await?;
    let controller = Arc::new(Controller {
        libraries,
        platform: platform.clone(),
        settings: settings.clone(),
        stitching: Mutex::new(HashSet::new()),
        shares: crate::shares::PlanningShares::new(settings.plan_concurrency),
    });

    let c = controller.clone();
    let requests = listen(
        &platform,
        settings.listener(settings.plan_concurrency),
        "the job could not be planned",
        move |message: Envelope<ImageRequest>, context| {
            let c = c.clone();
            async move { c.on_image_request(message, context).await }
        },
    )
    .await?;
    let c = controller.clone();
    let responses = listen(
        &platform,
        settings.listener(settings.response_concurrency),
        "a rendered slice could not be collected",
        move |message: Envelope<SliceResponse>, context| {
            let c = c.clone();
            async move { c.on_slice_response(message, context).await }
        },
    )
    .await?;
    let p = platform.clone();
    let libraries = listen(
        &platform,
        settings.listener(settings.plan_concurrency),
        "the event's library could not be made",
        move |message: Envelope<LibraryRequest>, _context| {
            let p = p.clone();
            async move { crate::event_libraries::on_library_request(&p, message).await }
        },
    )
    .await?;
    let reconciler = tokio::spawn(crate::reconciler::run_reconciler(
        platform.clone(),
        settings.jobs.clone(),
        shutdown.clone(),
    ));
    let gc = tokio::spawn(crate::reconciler::run_storage_gc(
        platform.clone(),
        settings.gc_options(),
        Duration::from_secs(settings.jobs.gc_interval_secs.max(1)),
        shutdown.clone(),
    ));
    tracing::info!("job controller running");
    shutdown.fired().await;
    let _ = tokio::join!(reconciler, gc);
    let (a, b, c) = tokio::join!(
        requests.shutdown(crate::role_settings::SHUTDOWN_GRACE),
        responses.shutdown(crate::role_settings::SHUTDOWN_GRACE),
        libraries.shutdown(crate::role_settings::SHUTDOWN_GRACE)
    );
    tracing::info!(
        image_requests = a.processed,
        slice_responses = b.processed,
        library_requests = c.processed,
        "job controller stopped"
    );
    Ok(())
}

/// How long a job over its submitter's planning share waits before it is received again.
const SHARE_WAIT: Duration = Duration::from_secs(1);

struct Controller {
    platform: Platform,
    settings: ControllerSettings,
    libraries: Arc<LibraryCache>,
    /// Jobs this process is stitching now.
    stitching: Mutex<HashSet<Uuid>>,
    /// Planning places held per submitter.
    shares: crate::shares::PlanningShares,
}

/// Marks a job as being stitched in this process while it lives.
struct StitchGuard<'a> {
    stitching: &'a Mutex<HashSet<Uuid>>,
    job: Uuid,
}

impl Drop for StitchGuard<'_> {
    fn drop(&mut self) {
        self.stitching
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.job);
    }
}

impl Controller {
    async fn on_image_request(
        &self,
        message: Envelope<ImageRequest>,
        context: Context,
    ) -> Result<(), Failure> {
        let client = message.client_id;
        let request = message.body;
        let job = request.job_id;
        let platform = self.platform.clone();
        let jobs = platform.jobs();

        let record = match jobs.get(job).await {
            Ok(record) => record,
            Err(JobError::NotFound(_)) => self.create_record(&platform, client, &request).await?,
            Err(e) => return Err(job_failure(job, e)),
        };
        if record.state.is_final() {
            // This request's summary may have finished the job just before a crash: its
            // redelivery tells the front end and releases what the job no longer needs.
            if record.state == JobState::Done && context.dequeue_count > 1 {
                self.wind_up(&platform, client, &record).await?;
            }
            return Ok(());
        }
        if record.slices_total > 0 && context.dequeue_count == 1 && !request.redrive {
            // Sliced before: a first delivery is a duplicate of a request that was, or will be
            // again, handled. A redelivery may follow a crash before every slice was asked for
            // (and the reconciler re-drives a stalled job): it plans again (the plan is
            // deterministic) and asks for the slices not rendered.
            return Ok(());
        }
        let submitter = record
            .submitter
            .clone()
            .unwrap_or_else(|| format!("client:{client}"));
        let Some(_share) = self.shares.take(&submitter) else {
            return self
                .wait_for_share(client, request, &record, &submitter)
                .await;
        };
        jobs.update(job, |r| r.advance(JobState::Slicing))
            .await
            .map_err(|e| job_failure(job, e))?;
        let (input, tiles) = self.job_inputs(&request).await?;
        let earlier = self.earlier_cells(&request).await?;
        let Some(planned) = self
            .plan_and_send(client, &request, record, (input, earlier), tiles)
            .await?
        else {
            return Ok(());
        };
        self.summarise(client, &request, planned).await
    }

    /// Puts a job whose submitter has all its planning places back on the queue as a new
    /// message, for a little while. A job waiting its turn is not stalled: its record says it is
    /// alive, a minute at a time.
    async fn wait_for_share(
        &self,
        client: Uuid,
        request: ImageRequest,
        record: &JobRecord,
        submitter: &str,
    ) -> Result<(), Failure> {
        let job = request.job_id;
        if OffsetDateTime::now_utc() - record.updated_at > Duration::from_secs(60) {
            self.platform
                .jobs()
                .update(job, |r| !r.state.is_final())
                .await
                .map_err(|e| job_failure(job, e))?;
        }
        let later = SendOptions {
            visibility_delay: SHARE_WAIT,
            ..Default::default()
        };
        self.platform
            .queue::<ImageRequest>()
            .send_with(&Envelope::new(client, request), later)
            .await?;
        tracing::info!(%job, submitter, "planning places of its submitter taken: the job waits its turn");
        Ok(())
    }

    /// The job's upload and its library's tiles. The upload's key follows from the job, never
    /// from the message: a request cannot make a job of another job's blobs.
    async fn job_inputs(
        &self,
        request: &ImageRequest,
    ) -> Result<(Bytes, Arc<TileCache<'static>>), Failure> {
        let (platform, job) = (&self.platform, request.job_id);
        let input_key = BlobKey::ImageInput { job }.path();
        let input = match platform.blobs.get(&input_key).await {
            Ok(bytes) => bytes,
            Err(StorageError::NotFound(_)) => {
                let reason = format!("the uploaded image {input_key} is missing");
                return Err(give_up(platform, job, reason).await);
            }
            Err(e) => return Err(e.into()),
        };
        match self
            .libraries
            .tiles(&request.spec.library, request.spec.tile(), None)
            .await
        {
            Ok(tiles) => Ok((input, tiles)),
            Err(LibraryLoadError::Permanent(reason)) => Err(give_up(platform, job, reason).await),
            Err(LibraryLoadError::Transient(e)) => {
                tracing::warn!(%job, error = %e, "tile library not loaded; retrying");
                Err(Failure::retry_because(format!(
                    "tile library not loaded: {e}"
                )))
            }
        }
    }

    /// The cell map of the earlier job whose cells the job keeps, if it names one and the map is
    /// there: an earlier job deleted since, or one that failed, leaves the job to be planned
    /// afresh.
    async fn earlier_cells(&self, request: &ImageRequest) -> Result<Option<Earlier>, Failure> {
        let (job, Some(from)) = (request.job_id, request.spec.keep_cells_of) else {
            return Ok(None);
        };
        match self
            .platform
            .blobs
            .get(&BlobKey::CellMap { job: from }.path())
            .await
        {
            Ok(bytes) => match CellMap::from_bytes(&bytes) {
                Ok(map) => Ok(Some((from, map))),
                Err(e) => {
                    tracing::warn!(%job, %from, error = %e, "the earlier cell map is unreadable: planned afresh");
                    Ok(None)
                }
            },
            Err(StorageError::NotFound(_)) => {
                tracing::info!(%job, %from, "the earlier job has no cell map: planned afresh");
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Plans the job, asking for each slice as soon as its rows are matched, so processors
    /// render the first slices while the rest of the image is still being planned. `None` when
    /// the job ended meanwhile.
    async fn plan_and_send(
        &self,
        client: Uuid,
        request: &ImageRequest,
        mut record: JobRecord,
        (input, earlier): (Bytes, Option<Earlier>),
        tiles: Arc<TileCache<'static>>,
    ) -> Result<Option<Planned>, Failure> {
        let (platform, job) = (&self.platform, request.job_id);
        let (planned, mut slices) = tokio::sync::mpsc::channel(4);
        let (spec, grid) = (request.spec.clone(), request.sized_to);
        let (limits, max_slice_pixels) =
            (self.settings.limits.clone(), self.settings.max_slice_pixels);
        let planner = tokio::task::spawn_blocking(move || {
            plan_job(
                (&input, earlier),
                tiles,
                (&spec, grid, &limits),
                max_slice_pixels,
                &planned,
            )
        });
        while let Some(item) = slices.recv().await {
            match item {
                Progress::Sized(size, total) => {
                    record = platform
                        .jobs()
                        .update(job, |r| {
                            if r.state.is_final() || r.slices_total > 0 {
                                return false;
                            }
                            r.slices_total = total;
                            r.output.get_or_insert(size);
                            r.advance(JobState::Rendering);
                            true
                        })
                        .await
                        .map_err(|e| job_failure(job, e))?;
                    if record.state.is_final() {
                        return Ok(None);
                    }
                    if record.slices_total != total || record.output != Some(size) {
                        return Err(Failure::poison(format!(
                            "job {job} was cut into {} slices of a {:?} output before, now {total} of {size:?}",
                            record.slices_total, record.output
                        )));
                    }
                }
                Progress::Slice(seq, plan) => {
                    self.send_slice(platform, client, request, &record, seq, plan)
                        .await?;
                }
            }
        }
        match planner.await {
            Ok(Ok(planned)) => Ok(Some(planned)),
            Ok(Err(e)) => Err(give_up(platform, job, e.to_string()).await),
            Err(e) => Err(Failure::poison(format!("planning panicked: {e}"))),
        }
    }

    /// Which tile went where, kept with the job for viewers that ask of a cell (a pass over
    /// every cell, made off the runtime's threads), and the quality figures, measured on a
    /// uniform grid's cells (an adaptive mosaic has none): both at once, while the last slices
    /// render and are stitched. The job is done once both this summary and the stitch are
    /// recorded, by whichever comes last.
    async fn summarise(
        &self,
        client: Uuid,
        request: &ImageRequest,
        planned: Planned,
    ) -> Result<(), Failure> {
        let Planned {
            plan,
            target,
            tiles: quality_tiles,
            kept,
        } = planned;
        let (platform, job) = (&self.platform, request.job_id);
        let library = quality_tiles.clone();
        let started = std::time::Instant::now();
        let uniform = match &plan {
            WholePlan::Uniform(plan) => Some(Arc::clone(plan)),
            WholePlan::Adaptive(_) => None,
        };
        let mapped = tokio::task::spawn_blocking(move || {
            match &plan {
                WholePlan::Uniform(plan) => CellMap::from_plan(plan, library.library()),
                WholePlan::Adaptive(plan) => CellMap::from_adaptive(plan, library.library()),
            }
            .map(|m| m.to_bytes())
        });
        let measured = async {
            match uniform {
                Some(plan) => {
                    job_quality(plan, target, quality_tiles, request.spec.options.overlay)
                        .await
                        .inspect_err(|e| tracing::warn!(%job, error = %e, "no quality figures"))
                        .ok()
                }
                None => None,
            }
        };
        let (map, quality) = tokio::join!(mapped, measured);
        let map = map
            .map_err(|e| Failure::poison(format!("no cell map: {e}")))?
            .map_err(|e| Failure::poison(format!("no cell map: {e}")))?;
        platform
            .blobs
            .put(
                &BlobKey::CellMap { job }.path(),
                Bytes::from(map),
                PutMode::Overwrite,
            )
            .await?;
        tracing::debug!(%job, ms = started.elapsed().as_millis() as u64, "cell map and quality figures made");
        // With this update's own head, read and write.
        let spent_here = platform.accounting.take_job(job) + 3;
        let record = self
            .record_ending(platform, client, job, spent_here, |r| {
                if r.kept.is_none() {
                    r.kept = kept.clone();
                }
                r.summary_done(quality.clone())
            })
            .await?;
        tracing::info!(%job, slices = record.slices_total, "job planned");
        Ok(())
    }

    /// Records one of the two steps a job ends with (the planner's summary, the stitch: `step`
    /// says whether it was the last) with the controller's transactions, and winds the job up if
    /// this finished it.
    async fn record_ending(
        &self,
        platform: &Platform,
        client: Uuid,
        job: Uuid,
        spent_here: u64,
        mut step: impl FnMut(&mut JobRecord) -> bool,
    ) -> Result<JobRecord, Failure> {
        let mut finished = false;
        let record = platform
            .jobs()
            .update(job, |r| {
                if r.state.is_final() {
                    return false;
                }
                finished = step(r);
                *r.transactions.entry("controller".into()).or_default() += spent_here;
                true
            })
            .await
            .map_err(|e| job_failure(job, e))?;
        if finished {
            self.wind_up(platform, client, &record).await?;
        }
        Ok(record)
    }

    /// Stores one slice's rows of the plan and, unless the slice is rendered already, asks for
    /// it with a `SliceRequest`.
    async fn send_slice(
        &self,
        platform: &Platform,
        client: Uuid,
        request: &ImageRequest,
        record: &JobRecord,
        seq: u32,
        plan: Bytes,
    ) -> Result<(), Failure> {
        let job = request.job_id;
        let key = BlobKey::SliceInput { job, seq }.path();
        // The plan is deterministic: a blob left by an earlier attempt holds the same bytes.
        match platform.blobs.put(&key, plan, PutMode::CreateNew).await {
            Ok(_) | Err(StorageError::AlreadyExists(_)) => {}
            Err(e) => return Err(e.into()),
        }
        if record.slices.contains_key(&seq) {
            return Ok(());
        }
        let slice = SliceRequest {
            job_id: job,
            seq,
            count: record.slices_total,
            plan_blob: key,
            spec: request.spec.clone(),
        };
        platform
            .queue::<SliceRequest>()
            .send(&Envelope::new(client, slice))
            .await?;
        Ok(())
    }

    /// A job submitted without a record (straight to the queue) gets one here.
    async fn create_record(
        &self,
        platform: &Platform,
        client: Uuid,
        request: &ImageRequest,
    ) -> Result<JobRecord, Failure> {
        let job = request.job_id;
        let record = JobRecord::new(
            job,
            client,
            JobParams {
                spec: request.spec.clone(),
                input_name: String::new(),
            },
        );
        match platform.jobs().create(&record).await {
            Ok(()) => Ok(record),
            Err(JobError::Storage(StorageError::AlreadyExists(_))) => platform
                .jobs()
                .get(job)
                .await
                .map_err(|e| job_failure(job, e)),
            Err(e) => Err(job_failure(job, e)),
        }
    }

    async fn on_slice_response(
        &self,
        message: Envelope<SliceResponse>,
        context: Context,
    ) -> Result<(), Failure> {
        let client = message.client_id;
        let response = message.body;
        let job = response.job_id;
        let platform = self.platform.clone();
        let jobs = platform.jobs();

        let slice = SliceRecord {
            processor: response.processor.clone(),
            render_ms: response.render_ms,
            finished_at: OffsetDateTime::now_utc(),
        };
        let record = jobs
            .update(job, |r| {
                if r.state.is_final() || !r.slice_done(response.seq, slice.clone()) {
                    return false;
                }
                *r.transactions.entry("processor".into()).or_default() += response.transactions;
                r.advance(JobState::Rendering);
                true
            })
            .await
            .map_err(|e| job_failure(job, e))?;
        match record.state {
            JobState::Failed => return Ok(()),
            JobState::Done => {
                // A redelivery may follow a crash between finishing the job and telling the
                // front end, or releasing what the job no longer needs. (A first delivery is a
                // duplicate racing the announcement.)
                if context.dequeue_count > 1 {
                    self.wind_up(&platform, client, &record).await?;
                }
                return Ok(());
            }
            // Stitched already, waiting for the planner's summary, which will finish the job
            // (the reconciler asks for it again should the planner die first).
            _ if record.is_stitched() => return Ok(()),
            _ => {}
        }
        let Some(size) = record.output else {
            return Err(Failure::poison(format!(
                "job {job} has a slice response but no output size"
            )));
        };
        let total = record.slices_total.max(response.count);
        if response.seq >= total {
            return Err(Failure::poison(format!(
                "slice {} of a job cut into {total}",
                response.seq
            )));
        }

        let Some(slices) = self.rendered_slices(&record, total).await? else {
            return Ok(());
        };

        // One stitch per job at a time, as far as can be told: in this process for sure; across
        // processes, a first delivery that finds the job already stitching comes back later
        // (by then the job is done, or the stitcher's own message has come back to finish it).
        if !self
            .stitching
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(job)
        {
            return Ok(());
        }
        let _guard = StitchGuard {
            stitching: &self.stitching,
            job,
        };
        if record.state == JobState::Stitching && context.dequeue_count == 1 {
            return Err(Failure::retry_after(Duration::from_millis(
                self.settings.visibility_timeout_ms,
            )));
        }
        jobs.update(job, |r| r.advance(JobState::Stitching))
            .await
            .map_err(|e| job_failure(job, e))?;
        let output = self.stitch(&record, size, &slices).await?;
        let spent_here = platform.accounting.take_job(job);
        self.record_ending(&platform, client, job, spent_here, |r| {
            r.stitch_done(output.clone())
        })
        .await?;
        Ok(())
    }

    /// Every slice's blob with its size, once the job is complete: decided from the record and
    /// from what exists, every slice's response noted (so no late response finds the job
    /// already done and goes unrecorded), and every slice blob (written whole, at once). `None`
    /// while some are missing.
    async fn rendered_slices(
        &self,
        record: &JobRecord,
        total: u32,
    ) -> Result<Option<Vec<(String, u64)>>, Failure> {
        let (platform, job) = (&self.platform, record.id);
        if (0..total).any(|seq| !record.slices.contains_key(&seq)) {
            return Ok(None);
        }
        let listed = platform
            .blobs
            .list_all(&BlobKey::slice_outputs_prefix(job))
            .await?;
        let mut slices = Vec::with_capacity(total as usize);
        for seq in 0..total {
            let key = BlobKey::SliceOutput { job, seq }.path();
            match listed.iter().find(|meta| meta.key == key) {
                // The stitcher checks the fragments' rows against the image: it needs only the
                // output's size, whatever rows (of cells, or of adaptive blocks) cut the slices.
                Some(meta) if meta.size > FRAGMENT_HEADER_BYTES as u64 => {
                    slices.push((key, meta.size))
                }
                Some(meta) => {
                    let reason = format!(
                        "slice {seq} of {total} holds {} bytes, too few for a PNG fragment",
                        meta.size
                    );
                    return Err(give_up(platform, job, reason).await);
                }
                None => return Ok(None),
            }
        }
        Ok(Some(slices))
    }

    /// Stitches the slices into the job's PNG, and makes the result's file from it when the job
    /// asks for another format. The PNG's key.
    async fn stitch(
        &self,
        record: &JobRecord,
        size: OutputSize,
        slices: &[(String, u64)],
    ) -> Result<String, Failure> {
        let (platform, job) = (&self.platform, record.id);
        let output = BlobKey::ImageOutput { job }.path();
        let started = std::time::Instant::now();
        let stitched = stitch_png(
            platform.blobs.clone(),
            slices,
            &output,
            (size.width, size.height),
            record.params.spec.dpi(),
            self.settings.stitch_band_bytes,
        )
        .await;
        let png = step_outcome(platform, job, ("stitching", started), stitched).await?;
        let spec = &record.params.spec;
        if spec.format != FileFormat::Png {
            let file = BlobKey::ImageFile {
                job,
                extension: spec.format.extension(),
            }
            .path();
            let started = std::time::Instant::now();
            let made = convert_output(
                platform.blobs.clone(),
                (&output, png.size),
                &file,
                spec.output_format(),
                spec.dpi(),
            )
            .await;
            step_outcome(platform, job, ("the result file", started), made).await?;
        }
        Ok(output)
    }

    /// Tells the front end that a done job is done (unless told before) and releases what the
    /// job no longer needs.
    async fn wind_up(
        &self,
        platform: &Platform,
        client: Uuid,
        record: &JobRecord,
    ) -> Result<(), Failure> {
        if !record.announced {
            self.announce(platform, client, record).await?;
        }
        self.release(platform, record.id).await
    }

    /// Deletes a done job's upload (unless kept), slice plans and outputs. Part of handling the
    /// message that finished the job: a failure, or a crash before it, brings the message back.
    async fn release(&self, platform: &Platform, job: Uuid) -> Result<(), Failure> {
        release_intermediates(&*platform.blobs, job, self.settings.jobs.keep_inputs)
            .await
            .map(drop)
            .map_err(|e| Failure::retry_because(format!("intermediates not released: {e}")))
    }

    /// Sends the `ImageResponse` of a finished job, then notes in the record that it went out.
    async fn announce(
        &self,
        platform: &Platform,
        client: Uuid,
        record: &JobRecord,
    ) -> Result<(), Failure> {
        let (Some(output), Some(size)) = (&record.result_blob, record.output) else {
            return Ok(());
        };
        // The notification is owed before the end is announced: whoever reads imageresponse,
        // the webhook is called.
        tessera_shared::outbox::owe(platform, record)
            .await
            .map_err(|e| Failure::retry_because(format!("notification not recorded: {e}")))?;
        let response = ImageResponse {
            job_id: record.id,
            outcome: JobOutcome::Done {
                output_blob: output.clone(),
                width: size.width,
                height: size.height,
            },
        };
        platform
            .queue::<ImageResponse>()
            .send(&Envelope::new(client, response))
            .await?;
        platform
            .jobs()
            .update(record.id, |r| !std::mem::replace(&mut r.announced, true))
            .await
            .map_err(|e| job_failure(record.id, e))?;
        Ok(())
    }
}

/// The quality figures of a whole plan, worked out at a low priority beside the slices'
/// rendering; a failure here costs the figures, not the job.
async fn job_quality(
    plan: Arc<Plan>,
    target: RgbImage,
    tiles: Arc<TileCache<'static>>,
    overlay_percent: u8,
) -> Result<JobQuality, String> {
    let background = plan.background().map(hex_colour);
    let (quality, library_tiles, min_uses, overlay) = on_background_thread(15, move || {
        let quality = plan_quality(&plan, &tiles, &target)?;
        let overlay = (overlay_percent > 0).then(|| {
            let (de00_mean, de00_p95) =
                tessera_engine::overlaid_difference(&plan, &tiles, overlay_percent);
            tessera_shared::jobs::OverlayQuality {
                percent: overlay_percent,
                de00_mean,
                de00_p95,
            }
        });
        // Fairness: how many of the library's tiles appear, and how often the least used does.
        let mut uses = vec![0u32; tiles.library().len()];
        for &t in plan.tiles() {
            if let Some(n) = uses.get_mut(t as usize) {
                *n += 1;
            }
        }
        let least = uses.iter().copied().min().unwrap_or(0);
        Ok::<_, tessera_engine::Error>((quality, uses.len() as u32, least, overlay))
    })
    .await?
    .map_err(|e| e.to_string())?;
    Ok(JobQuality {
        de00_mean: quality.de00_mean,
        de00_p95: quality.de00_p95,
        ssim_view: quality.ssim_view,
        distinct: quality.distinct as u32,
        library_tiles,
        min_uses,
        max_uses: quality.max_uses as u32,
        overlay,
        dup_r1: quality.dup_r1,
        dup_r5: quality.dup_r5,
        background,
    })
}

/// An earlier job whose cells a job keeps, and its cell map.
type Earlier = (Uuid, CellMap);

/// What the planner made: the whole plan, the decoded target, the tiles the plan was made with
/// and, for a job that keeps an earlier one's cells, how many changed.
struct Planned {
    plan: WholePlan,
    target: RgbImage,
    tiles: Arc<TileCache<'static>>,
    kept: Option<KeptCells>,
}

/// What the planner hands the controller as it goes, in order.
enum Progress {
    /// The output size and slice count, known before matching starts.
    Sized(OutputSize, u32),
    /// One slice's rows of the plan, serialized, once every one of them is matched.
    Slice(u32, Bytes),
}

/// The plan of a whole job.
enum WholePlan {
    /// A uniform grid of cells, shared by the cell map and the quality figures, made at once.
    Uniform(Arc<Plan>),
    /// Adaptive squares.
    Adaptive(AdaptivePlan),
}

/// Decodes the target and plans the whole image as the job's specification asks, under the
/// operator's limits (a uniform grid, or adaptive squares), over the background the job asks
/// for, sending each slice's rows on `slices` as soon as they are final; returns the whole plan,
/// the decoded target and the tiles the plan was made with (the library's own, or laid over the
/// background: the specification's rules keep adaptive squares to the library's own).
fn plan_job(
    (input, earlier): (&[u8], Option<Earlier>),
    tiles: Arc<TileCache<'static>>,
    (spec, grid, limits): (&JobSpec, Option<GridSize>, &JobLimits),
    max_slice_pixels: u64,
    slices: &tokio::sync::mpsc::Sender<Progress>,
) -> Result<Planned, EngineError> {
    let stopped = || EngineError::InvalidOption("planning stopped: the job was let go".into());
    let target = decode_target(input, tiles.library().background())?;
    let (width, height) = (target.width(), target.height());
    // Sized once, by the door that took the job; a request written by hand is sized here.
    let size = match grid {
        Some(grid) => spec.size_to(width, height, limits, grid),
        None => spec.size(width, height, limits),
    }
    .map_err(|e| EngineError::InvalidOption(e.to_string()))?;
    let options = &size.options;
    let (slice_count, adaptive) = (spec.slices, spec.options.adaptive);
    let background = spec
        .options
        .tile_background()
        .resolve(&target, tiles.library());
    let tiles = match background.and_then(|bg| tiles.library().over(bg)) {
        Some(over) => Arc::new(TileCache::shared(Arc::new(over), tiles.tile_size())),
        None => tiles,
    };
    let library = tiles.library();
    // The slices: as asked, but at least enough to keep each within the most pixels a slice may
    // hold, and never more than rows (of cells, or of the adaptive blocks).
    let cut = |width: u32, height: u32, rows: u32| {
        let pixels = u64::from(width) * u64::from(height);
        let at_least = pixels
            .div_ceil(max_slice_pixels.max(1))
            .min(u64::from(u32::MAX)) as u32;
        slice_ranges(rows, slice_count.max(at_least))
    };
    if let Some(sizes) = adaptive {
        // The quadtree is made for the whole image at once; then it is cut on rows of blocks,
        // so each slice renders whole squares of its own.
        let sizing = AdaptiveSizing::new(width, height, options, sizes)?;
        let ranges = cut(sizing.width, sizing.height, sizing.block_rows);
        slices
            .blocking_send(Progress::Sized(size.output, ranges.len() as u32))
            .map_err(|_| stopped())?;
        let plan = AdaptivePlan::make(&target, library, options, sizes)?;
        for (seq, rows) in ranges.into_iter().enumerate() {
            let part = plan.rows(rows)?.to_bytes();
            slices
                .blocking_send(Progress::Slice(seq as u32, Bytes::from(part)))
                .map_err(|_| stopped())?;
        }
        return Ok(Planned {
            plan: WholePlan::Adaptive(plan),
            target,
            tiles,
            kept: None,
        });
    }
    let sizing = size.sizing;
    let ranges = cut(sizing.width, sizing.height, sizing.rows);
    slices
        .blocking_send(Progress::Sized(size.output, ranges.len() as u32))
        .map_err(|_| stopped())?;
    let mut next = 0;
    let mut send = |plan: &Plan, done: u32| {
        while let Some(rows) = ranges.get(next).filter(|rows| rows.end <= done) {
            let part = plan.rows(rows.clone())?.to_bytes();
            slices
                .blocking_send(Progress::Slice(next as u32, Bytes::from(part)))
                .map_err(|_| stopped())?;
            next += 1;
        }
        Ok(())
    };
    let earlier = earlier.and_then(|(from, map)| {
        let cells = earlier_tiles(&map, (sizing.cols, sizing.rows), library)?;
        Some((from, cells))
    });
    let plan = match &earlier {
        Some((_, cells)) => Plan::make_keeping(&target, library, options, cells, &mut send)?,
        None => Plan::make_incrementally(&target, library, options, &mut send)?,
    };
    let kept = earlier.map(|(from, cells)| KeptCells {
        from,
        changed: cells
            .iter()
            .zip(plan.tiles())
            .filter(|(was, now)| was != now)
            .count() as u64,
        cells: cells.len() as u64,
    });
    Ok(Planned {
        plan: WholePlan::Uniform(Arc::new(plan)),
        target,
        tiles,
        kept,
    })
}

/// The tile each cell of an earlier job's `map` held, as an index into `library` by its file
/// name (`u32::MAX` where it is no longer in it); `None` when the map is of another grid than
/// `(cols, rows)`, or of adaptive squares.
fn earlier_tiles(
    map: &CellMap,
    (cols, rows): (u32, u32),
    library: &tessera_engine::Library,
) -> Option<Vec<u32>> {
    if map.is_adaptive() || (map.cols(), map.rows()) != (cols, rows) {
        return None;
    }
    let index: std::collections::HashMap<&str, u32> = library
        .names()
        .iter()
        .enumerate()
        .map(|(i, name)| (name.as_str(), i as u32))
        .collect();
    let tile_of = |source: &tessera_engine::CellSource| {
        index.get(source.name.as_str()).copied().unwrap_or(u32::MAX)
    };
    let mut cells = Vec::with_capacity(cols as usize * rows as usize);
    for row in 0..rows {
        for col in 0..cols {
            cells.push(map.at(row, col).map_or(u32::MAX, tile_of));
        }
    }
    Some(cells)
}

/// The end of one step of making a job's output (`what`, begun at `started`): logged when done,
/// retried after a storage error, and the job failed for output that cannot be made.
async fn step_outcome(
    platform: &Platform,
    job: Uuid,
    (what, started): (&str, std::time::Instant),
    result: Result<BlobMeta, StitchError>,
) -> Result<BlobMeta, Failure> {
    match result {
        Ok(meta) => {
            tracing::info!(
                %job,
                bytes = meta.size,
                ms = started.elapsed().as_millis() as u64,
                "{what} done"
            );
            Ok(meta)
        }
        Err(StitchError::Storage(e)) => {
            tracing::warn!(%job, error = %e, "{what} failed; retrying");
            Err(Failure::retry_because(format!("{what} failed: {e}")))
        }
        Err(StitchError::Invalid(reason)) => Err(give_up(platform, job, reason).await),
    }
}
