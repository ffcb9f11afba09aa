//! The image processors: `slicerequest` -> the rendered rows, filtered and compressed as a PNG
//! fragment, in `sliceoutput/{job}/{seq}` -> `sliceresponse`. Rendering and compression run on
//! blocking threads, at most one slice per core at a time, so the processors compress the image
//! in parallel and the stitcher only joins the fragments.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use tessera_engine::{
    AdaptivePlan, FragmentEncoder, Plan, RgbImage, TileCache, TileSize, decode_target,
    render_band_serial,
};
use tessera_shared::keys::BlobKey;
use tessera_shared::messages::{Envelope, SliceRequest, SliceResponse};
use tessera_shared::platform::Platform;
use tessera_shared::runtime::shutdown::Shutdown;
use tessera_shared::runtime::{Context, Failure, ListenerSettings};
use tessera_shared::spec::JobSpec;
use tessera_shared::storage::{BlobStoreExt, PutMode, StorageError};

use crate::job_work::{caught, library_cache, listen, lower_thread_priority};
use crate::role_settings::ProcessorSettings;
use tessera_shared::library_cache::{LibraryCache, LibraryLoadError};

/// Pixel bytes rendered at a time within a slice (rounded to whole cell rows).
const RENDER_BAND_BYTES: usize = 2 << 20;

/// Tiles resized for a slice, shared with the other slices of the process.
type Tiles = Arc<TileCache<'static>>;

/// A slice's plan, with the tiles it renders with: rows of a uniform grid, or rows of blocks of
/// an adaptive mosaic (told apart by the plan blob's magic) and a tile cache per square size.
enum SlicePlan {
    Uniform(Plan, Tiles),
    Adaptive(AdaptivePlan, Vec<Tiles>),
}

impl SlicePlan {
    /// Renders the slice a few rows at a time, compressed as they come: memory holds a band of
    /// pixels and the compressed slice, not the slice's pixels. The rows are finished as `spec`
    /// asks ([`JobSpec::finish`]: the overlay of `target`, the grout).
    fn render(
        &self,
        spec: &JobSpec,
        target: Option<&RgbImage>,
    ) -> Result<Vec<u8>, tessera_engine::Error> {
        let (width, height, rows, row_height) = match self {
            SlicePlan::Uniform(plan, _) => (
                plan.width(),
                plan.total_height(),
                plan.row_range(),
                plan.tile_size().height,
            ),
            SlicePlan::Adaptive(plan, _) => (
                plan.width(),
                plan.height(),
                plan.block_row_range(),
                plan.sizes().max,
            ),
        };
        let finish = spec.finish(target, width, height);
        let row_bytes = width as usize * 3 * row_height as usize;
        let step = (RENDER_BAND_BYTES / row_bytes.max(1)).max(1) as u32;
        let mut fragment = FragmentEncoder::new(width, row_bytes * rows.len() / 4)?;
        let mut band = Vec::new();
        let mut y = rows.start;
        while y < rows.end {
            let end = (y + step).min(rows.end);
            match self {
                SlicePlan::Uniform(plan, cache) => {
                    render_band_serial(&plan.rows(y..end)?, cache, &mut band)?
                }
                SlicePlan::Adaptive(plan, caches) => {
                    plan.render_rows_serial(caches, y..end, &mut band)?
                }
            }
            if !finish.is_none() {
                finish.apply(&mut band, y * row_height, width);
            }
            fragment.write_rows(&band)?;
            y = end;
        }
        fragment.finish()
    }
}

/// Runs `settings.processors` image processors (one listener rendering that many slices at
/// once) until `shutdown` fires, then lets the slices in hand finish.
pub async fn run_processors(
    platform: Platform,
    settings: ProcessorSettings,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let libraries = library_cache(
        &platform,
        settings.library_cache,
        settings.library_cache_mib,
    );
    run_processors_with(platform, settings, libraries, shutdown).await
}

/// [`run_processors`] with a library cache it may share with a controller in the same process.
pub(crate) async fn run_processors_with(
    platform: Platform,
    settings: ProcessorSettings,
    libraries: Arc<LibraryCache>,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    platform.ensure_queues().await?;
    let listener_settings = settings.listener();
    let concurrency = listener_settings.max_concurrency;
    let prefix = settings.name_prefix();
    let processor = Arc::new(Processor {
        libraries,
        render_threads: render_threads(concurrency)?,
        platform: platform.clone(),
        free: Mutex::new((0..concurrency).rev().collect()),
        prefix: prefix.clone(),
        target: Mutex::new(None),
    });
    let p = processor.clone();
    let listener = listen(
        &platform,
        listener_settings,
        "a slice could not be rendered",
        move |message: Envelope<SliceRequest>, context| {
            let p = p.clone();
            async move { p.on_slice_request(message, context).await }
        },
    )
    .await?;
    // Guests' photos are small and wait on storage as much as on the cores: twice as many at
    // once, asked for in larger batches.
    let photo_settings = ListenerSettings {
        batch_size: 16,
        max_concurrency: concurrency * 2,
        ..settings.listener()
    };
    let photos = crate::photo_preparation::listen(&platform, photo_settings).await?;
    tracing::info!(processors = concurrency, name = %prefix, "image processors running");
    shutdown.fired().await;
    let grace = crate::role_settings::SHUTDOWN_GRACE;
    let (stats, photo_stats) = tokio::join!(listener.shutdown(grace), photos.shutdown(grace));
    tracing::info!(
        slices = stats.processed,
        photos = photo_stats.processed,
        "image processors stopped"
    );
    Ok(())
}

struct Processor {
    platform: Platform,
    libraries: Arc<LibraryCache>,
    /// Where slices are rendered and compressed, one thread per slot.
    render_threads: rayon::ThreadPool,
    /// Numbers of the processor slots not rendering now.
    free: Mutex<Vec<usize>>,
    prefix: String,
    /// The last target decoded for an overlay, by job: a job's slices mostly come to the same
    /// processes.
    target: Mutex<Option<(uuid::Uuid, Arc<RgbImage>)>>,
}

/// A processor slot, given back when the slice is done.
struct SlotGuard<'a> {
    free: &'a Mutex<Vec<usize>>,
    slot: usize,
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        self.free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(self.slot);
    }
}

impl Processor {
    fn take_slot(&self) -> SlotGuard<'_> {
        let slot = self
            .free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or(0);
        SlotGuard {
            free: &self.free,
            slot,
        }
    }

    /// The slice's plan from its blob, checked against the request, with its tiles.
    async fn slice_plan(
        &self,
        request: &SliceRequest,
        bytes: &[u8],
        what: &str,
    ) -> Result<SlicePlan, Failure> {
        let bad = |e: String| Failure::poison(format!("{what}: {e}"));
        if AdaptivePlan::is_blob(bytes) {
            let plan = AdaptivePlan::from_bytes(bytes).map_err(|e| bad(e.to_string()))?;
            if request.spec.options.adaptive != Some(plan.sizes()) {
                return Err(bad(format!(
                    "the plan has adaptive tiles of {}, the request {}",
                    plan.sizes(),
                    request
                        .spec
                        .options
                        .adaptive
                        .map_or("none".to_string(), |s| s.to_string())
                )));
            }
            let mut caches = Vec::new();
            for size in plan.tile_sizes() {
                caches.push(
                    self.tiles(request, TileSize::square(size), None, what)
                        .await?,
                );
            }
            return Ok(SlicePlan::Adaptive(plan, caches));
        }
        let plan = Plan::from_bytes(bytes).map_err(|e| bad(e.to_string()))?;
        if let Some(sizes) = request.spec.options.adaptive {
            return Err(bad(format!(
                "the request has adaptive tiles of {sizes}, its plan a uniform grid"
            )));
        }
        if plan.tile_size() != request.spec.tile() {
            return Err(bad(format!(
                "the plan has {} px tiles, the request {} px",
                plan.tile_size(),
                request.spec.tile()
            )));
        }
        let cache = self
            .tiles(request, plan.tile_size(), plan.background(), what)
            .await?;
        Ok(SlicePlan::Uniform(plan, cache))
    }

    /// The request's library's tiles at `size`, over `background` (the plan's): a library that
    /// cannot be had is poison, one that storage failed to give is retried.
    async fn tiles(
        &self,
        request: &SliceRequest,
        size: TileSize,
        background: Option<[u8; 3]>,
        what: &str,
    ) -> Result<Tiles, Failure> {
        match self
            .libraries
            .tiles(&request.spec.library, size, background)
            .await
        {
            Ok(cache) => Ok(cache),
            Err(LibraryLoadError::Permanent(reason)) => {
                Err(Failure::poison(format!("{what}: {reason}")))
            }
            Err(LibraryLoadError::Transient(e)) => {
                tracing::warn!(job = %request.job_id, error = %e, "tile library not loaded; retrying");
                Err(Failure::retry_because(format!(
                    "tile library not loaded: {e}"
                )))
            }
        }
    }

    /// The job's target, decoded as the controller decodes it (transparency over the library's
    /// background), for an overlay.
    async fn target(
        &self,
        platform: &Platform,
        request: &SliceRequest,
        what: &str,
    ) -> Result<Arc<RgbImage>, Failure> {
        let job = request.job_id;
        if let Some((of, target)) = &*self.target.lock().unwrap_or_else(|e| e.into_inner())
            && *of == job
        {
            return Ok(target.clone());
        }
        let library = match self.libraries.get(&request.spec.library).await {
            Ok(library) => library,
            Err(LibraryLoadError::Permanent(reason)) => {
                return Err(Failure::poison(format!("{what}: {reason}")));
            }
            Err(LibraryLoadError::Transient(e)) => {
                return Err(Failure::retry_because(format!(
                    "tile library not loaded: {e}"
                )));
            }
        };
        let input = platform
            .blobs
            .get(&BlobKey::ImageInput { job }.path())
            .await?;
        let background = library.background();
        let target = tokio::task::spawn_blocking(move || decode_target(&input, background))
            .await
            .map_err(|e| Failure::poison(format!("{what}: {e}")))?
            .map_err(|e| Failure::poison(format!("{what}: the target for the overlay: {e}")))?;
        let target = Arc::new(target);
        *self.target.lock().unwrap_or_else(|e| e.into_inner()) = Some((job, target.clone()));
        Ok(target)
    }

    async fn on_slice_request(
        &self,
        message: Envelope<SliceRequest>,
        _context: Context,
    ) -> Result<(), Failure> {
        let client = message.client_id;
        let request = message.body;
        let job = request.job_id;
        let slot = self.take_slot();
        let name = format!("{}/{}", self.prefix, slot.slot);
        let platform = self.platform.clone();
        let output = BlobKey::SliceOutput {
            job,
            seq: request.seq,
        }
        .path();
        let what = format!("slice {} of {}", request.seq, request.count);

        // A slice rendered before (a redelivery, a duplicate) is not rendered again.
        let render_ms = if platform.blobs.exists(&output).await? {
            0
        } else {
            // The plan's key follows from the job and the slice, never from the message.
            let plan_key = BlobKey::SliceInput {
                job,
                seq: request.seq,
            }
            .path();
            let plan_bytes = match platform.blobs.get(&plan_key).await {
                Ok(bytes) => bytes,
                Err(StorageError::NotFound(_)) => {
                    // A failed job's plans are deleted: its slices are not worth rendering.
                    return match platform.jobs().get(job).await {
                        Ok(record) if record.state.is_final() => {
                            tracing::info!(%job, state = record.state.as_str(), "{what} skipped: the job has ended");
                            Ok(())
                        }
                        _ => Err(Failure::poison(format!(
                            "{what}: its plan {plan_key} is missing"
                        ))),
                    };
                }
                Err(e) => return Err(e.into()),
            };
            let plan = self.slice_plan(&request, &plan_bytes, &what).await?;
            let target = if request.spec.options.overlay > 0 {
                Some(self.target(&platform, &request, &what).await?)
            } else {
                None
            };
            let started = Instant::now();
            let span = tracing::Span::current();
            let spec = request.spec.clone();
            let fragment = on_render_thread(&self.render_threads, move || {
                let _entered = span.enter();
                plan.render(&spec, target.as_deref())
            })
            .await
            .map_err(|e| Failure::poison(format!("{what}: {e}")))?
            .map_err(|e| Failure::poison(format!("{what}: {e}")))?;
            let rendered = started.elapsed();
            metrics::histogram!(tessera_shared::telemetry::SLICE_RENDER)
                .record(rendered.as_secs_f64());
            let render_ms = rendered.as_millis() as u64;
            // Rendering and encoding are deterministic: a blob written meanwhile holds the same
            // bytes.
            match platform
                .blobs
                .put(&output, Bytes::from(fragment), PutMode::CreateNew)
                .await
            {
                Ok(_) | Err(StorageError::AlreadyExists(_)) => {}
                Err(e) => return Err(e.into()),
            }
            render_ms
        };

        let response = SliceResponse {
            job_id: job,
            seq: request.seq,
            output_blob: output,
            processor: name,
            render_ms,
            count: request.count,
            // This handler's calls, the response's own send included.
            transactions: platform.accounting.take_job(job) + 1,
        };
        platform
            .queue::<SliceResponse>()
            .send(&Envelope::new(client, response))
            .await?;
        Ok(())
    }
}

/// The threads that render and compress slices, one per processor slot, at a lower CPU priority
/// (nice 10) than the rest of the process: in `tessera serve` the planner, whose slices the
/// processors wait for, and the web front end come first, and rendering takes the CPU left.
fn render_threads(threads: usize) -> anyhow::Result<rayon::ThreadPool> {
    Ok(rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .thread_name(|i| format!("render-{i}"))
        .start_handler(|_| lower_thread_priority(10))
        .build()?)
}

/// Runs `work` on one of the render threads; a panic comes back as an error.
async fn on_render_thread<T: Send + 'static>(
    threads: &rayon::ThreadPool,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    caught(
        "rendering ",
        "the render thread went away",
        |job| {
            threads.spawn(job);
            Ok(())
        },
        work,
    )
    .await
}
