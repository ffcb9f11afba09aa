//! The whole pipeline on real images: a job submitted as the broker submits it, planned and
//! stitched by the job controller, rendered by image processors, on the embedded backend and on
//! Azurite; compared pixel for pixel with the engine's own render of the same target.
//!
//! Tests on Azurite share the pipeline's four queues, so they run one at a time (a process-wide
//! lock) and start from empty queues. They fail, saying why, when
//! `TESSERA_AZURE_CONNECTION_STRING` is not set (`scripts/test.sh` sets it).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tessera_engine::{
    AdaptivePlan, CellMap, Grid as EngineGrid, ImportOptions, Library, Plan, PlanOptions,
    TileBackground, TileCache, TileShape, TileSize, Transform, VecSink, decode_target, evaluate,
    render_to_sink,
};
use tessera_shared::jobs::{JobParams, JobQuality, JobRecord, JobState};
use tessera_shared::keys::BlobKey;
use tessera_shared::libraries::Publication;
use tessera_shared::messages::{
    Envelope, Grid, ImageRequest, ImageResponse, JobOutcome, LibraryRef, QueueName, RenderOptions,
    SliceRequest, tile_height_field,
};
use tessera_shared::platform::Platform;
use tessera_shared::runtime::shutdown::ShutdownTrigger;
use tessera_shared::spec::{Defaults, FileFormat, GridSize, JobSpec};
use tessera_shared::storage::embedded::EmbeddedStorage;
use tessera_shared::storage::{BlobStore, PutMode, QueueStore, SendOptions};
use tessera_workers::{
    ControllerSettings, ProcessorSettings, import_library, reconcile_stalled_jobs,
};
use tokio::task::JoinHandle;
use uuid::Uuid;

use crate::support::pipeline::*;
use crate::support::{eventually, wait_for};

/// Long enough for any job here on a slow machine; a hang fails instead of blocking the run.
const JOB_DEADLINE: Duration = Duration::from_secs(120);

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/engine")
}

fn target_bytes() -> Vec<u8> {
    std::fs::read(fixtures().join("astronaut-48.png")).expect("the astronaut fixture")
}

/// What a test asks of a job.
#[derive(Debug, Clone, Copy)]
struct Job {
    cells: u32,
    tile_size: u32,
    tile_height: u32,
    slices: u32,
    options: RenderOptions,
}

impl Job {
    fn small(slices: u32) -> Self {
        Job {
            cells: 32,
            tile_size: 8,
            tile_height: 8,
            slices,
            // The declared defaults (radius 1, form 50, the rest none) with some blend.
            options: RenderOptions {
                blend: 15,
                ..RenderOptions::default()
            },
        }
    }
}

impl Job {
    fn tile(&self) -> TileSize {
        TileSize {
            width: self.tile_size,
            height: self.tile_height,
        }
    }
}

/// The fixture tiles imported at the job's tile shape, and the target, as `tessera render`
/// reads them.
fn local_library_and_target(job: &Job) -> (Library, image::RgbImage) {
    let import = ImportOptions {
        shape: TileShape::new(job.tile_size, job.tile_height).unwrap(),
        ..ImportOptions::default()
    };
    let (library, _) = Library::import(&fixtures().join("tiles"), &import).unwrap();
    let target = decode_target(&target_bytes(), library.background()).unwrap();
    let background = job.options.tile_background().resolve(&target, &library);
    let library = background
        .and_then(|bg| library.over(bg))
        .unwrap_or(library);
    (library, target)
}

/// The engine's options for a job, as `tessera render` sets them from its flags.
fn local_options(job: &Job) -> PlanOptions {
    PlanOptions {
        tile_size: job.tile(),
        grid: EngineGrid::Cells(job.cells),
        repeat_radius: job.options.repeat_radius,
        max_uses: job.options.max_uses,
        min_uses: job.options.min_uses,
        blend: job.options.blend,
        flip: job.options.flip,
        rotate: job.options.rotate,
        ..PlanOptions::default().with_form(job.options.form)
    }
}

/// The engine's plan for a job, as `tessera render` makes it (the tiles imported at the tile
/// size's shape), with the library it matched.
fn local_plan(job: &Job) -> (Library, Plan) {
    let (library, target) = local_library_and_target(job);
    let plan = Plan::make(&target, &library, &local_options(job)).unwrap();
    (library, plan)
}

/// The engine's adaptive plan for a job, as `tessera render --adaptive` makes it, with the
/// library it matched.
fn local_adaptive_plan(job: &Job) -> (Library, AdaptivePlan) {
    let (library, target) = local_library_and_target(job);
    let sizes = job.options.adaptive.expect("an adaptive job");
    let plan = AdaptivePlan::make(&target, &library, &local_options(job), sizes).unwrap();
    (library, plan)
}

/// `tessera render --adaptive` of a job, as the engine renders it: size and RGB8 pixels.
fn local_adaptive_render(job: &Job) -> (u32, u32, Vec<u8>) {
    let (library, plan) = local_adaptive_plan(job);
    let mut sink = VecSink::default();
    plan.render_to_sink(&library, &mut sink).unwrap();
    (plan.width(), plan.height(), sink.pixels)
}

/// The engine called directly, as `tessera render` does: RGB8 pixels and the size (the photo
/// laid over them when the job asks for an overlay).
fn local_render(job: &Job) -> (u32, u32, Vec<u8>) {
    let (library, target) = local_library_and_target(job);
    let plan = Plan::make(&target, &library, &local_options(job)).unwrap();
    let cache = TileCache::new(&library, plan.tile_size());
    let mut sink = VecSink::default();
    render_to_sink(&plan, &cache, &mut sink, 4, &|_, _| {}).unwrap();
    let mut pixels = sink.pixels;
    let percent = job.options.overlay;
    tessera_engine::Overlay::new(&target, plan.width(), plan.total_height(), percent)
        .apply(&mut pixels, 0);
    // Grout over the whole image, in white (the background asked for is not a colour).
    tessera_engine::Grout {
        width: job.options.grout.into(),
        cell: plan.tile_size(),
        colour: [255, 255, 255],
    }
    .apply(&mut pixels, 0, plan.width());
    (plan.width(), plan.total_height(), pixels)
}

// ---------------------------------------------------------------------------------------------
// Jobs

/// Submits a job the way the broker does: the upload, the job record, the `ImageRequest`.
async fn submit(platform: &Platform, library: LibraryRef, image: &[u8], job: &Job) -> Uuid {
    submit_as(platform, (library, image), job, (FileFormat::Png, None)).await
}

/// [`submit`] for a result of `format` (with its JPEG quality).
async fn submit_as(
    platform: &Platform,
    (library, image): (LibraryRef, &[u8]),
    job: &Job,
    (format, quality): (FileFormat, Option<u8>),
) -> Uuid {
    let spec = JobSpec {
        tile_height: tile_height_field(job.tile()),
        options: job.options,
        format,
        quality,
        ..JobSpec::cells(library, job.tile_size, job.cells, job.slices)
    };
    send_job(platform, image, spec, None).await
}

/// Stores the target and the job's record and queues its request, carrying `grid` as the
/// broker's do (`None`: a request written by hand, which the controller sizes).
async fn send_job(
    platform: &Platform,
    image: &[u8],
    spec: JobSpec,
    grid: Option<GridSize>,
) -> Uuid {
    let id = Uuid::new_v4();
    let client = Uuid::new_v4();
    let input = BlobKey::ImageInput { job: id }.path();
    platform
        .blobs
        .put(&input, Bytes::copy_from_slice(image), PutMode::CreateNew)
        .await
        .unwrap();
    let params = JobParams {
        spec: spec.clone(),
        input_name: "astronaut-48.png".into(),
    };
    platform
        .jobs()
        .create(&JobRecord::new(id, client, params))
        .await
        .unwrap();
    let request = ImageRequest {
        job_id: id,
        input_blob: input,
        spec,
        sized_to: grid,
        redrive: false,
    };
    platform
        .queue::<ImageRequest>()
        .send(&Envelope::new(client, request))
        .await
        .unwrap();
    id
}

/// The job's quality figures, which the controller records once the whole plan is made.
async fn wait_for_quality(platform: &Platform, job: Uuid) -> JobQuality {
    wait_for(JOB_DEADLINE, async || {
        let record = platform.jobs().get(job).await.unwrap();
        record
            .quality
            .ok_or(format!("job {job} has no quality figures"))
    })
    .await
}

/// Waits until the job has ended, and returns its record.
async fn finished(platform: &Platform, job: Uuid) -> JobRecord {
    wait_for(JOB_DEADLINE, async || {
        let record = platform.jobs().get(job).await.unwrap();
        if record.state.is_final() {
            Ok(record)
        } else {
            Err(format!("job {job} did not end: {record:#?}"))
        }
    })
    .await
}

/// Waits while `busy` holds; fails the test, saying `what`, at the job deadline.
async fn wait_while(what: &str, mut busy: impl AsyncFnMut() -> bool) {
    eventually(JOB_DEADLINE, what, async || !busy().await).await
}

/// The finished mosaic, decoded: size and RGB8 pixels.
async fn result_pixels(platform: &Platform, job: Uuid) -> (u32, u32, Vec<u8>) {
    let png = platform
        .blobs
        .get(&BlobKey::ImageOutput { job }.path())
        .await
        .unwrap();
    let image = image::load_from_memory_with_format(&png, image::ImageFormat::Png)
        .unwrap()
        .to_rgb8();
    (image.width(), image.height(), image.into_raw())
}

fn assert_same_pixels(got: &(u32, u32, Vec<u8>), want: &(u32, u32, Vec<u8>), what: &str) {
    assert_eq!((got.0, got.1), (want.0, want.1), "{what}: size");
    if got.2 != want.2 {
        let first = got.2.iter().zip(&want.2).position(|(a, b)| a != b);
        let differing = got.2.iter().zip(&want.2).filter(|(a, b)| a != b).count();
        panic!(
            "{what}: {differing} bytes differ, the first at byte {first:?} (row {:?})",
            first.map(|i| i / (got.0 as usize * 3))
        );
    }
}

/// A finished job's record says what happened, in full.
fn assert_done_record(record: &JobRecord, job: &Job, slices: u32) {
    assert_eq!(record.state, JobState::Done, "{record:#?}");
    assert!(record.error.is_none());
    assert!(record.finished_at.is_some());
    assert_eq!(record.slices_total, slices);
    assert_eq!(record.slices.len() as u32, slices);
    assert!(
        record
            .slices
            .values()
            .all(|s| s.processor.starts_with("test/"))
    );
    let output = record.output.expect("output size");
    assert_eq!(output.width, job.cells * job.tile_size);
    assert_eq!(output.height, output.rows * job.tile_height);
    assert_eq!(record.params.spec.tile(), job.tile());
    assert_eq!(output.cols, job.cells);
    assert_eq!(
        record.result_blob.as_deref(),
        Some(BlobKey::ImageOutput { job: record.id }.path().as_str())
    );
    assert!(
        record.transactions.get("controller").copied().unwrap_or(0) > 0,
        "{record:#?}"
    );
    // At least a look for the slice and a response per slice.
    assert!(
        record.transactions.get("processor").copied().unwrap_or(0) >= u64::from(slices) * 2,
        "{record:#?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Scenarios, run on either backend

/// Runs a small job and checks it against a local render; returns the job's id.
async fn job_matches_local_render(env: Env) -> Uuid {
    let library = env.library().await;
    let roles = start_roles(&env.platform, controller_settings(), processor_settings(2)).await;
    let job = Job::small(3);
    let id = submit(&env.platform, library.reference(), &target_bytes(), &job).await;
    let record = finished(&env.platform, id).await;
    assert_done_record(&record, &job, 3);
    let pixels = result_pixels(&env.platform, id).await;
    assert_same_pixels(&pixels, &local_render(&job), "pipeline vs local render");

    // The quality figures on the record are what measuring the result gives.
    let quality = wait_for_quality(&env.platform, id).await;
    let mosaic = image::RgbImage::from_raw(pixels.0, pixels.1, pixels.2).unwrap();
    let target = decode_target(&target_bytes(), [255; 3]).unwrap();
    let size = record.output.unwrap();
    let measured = evaluate(&target, &mosaic, job.cells, size.rows).unwrap();
    assert!(
        (quality.de00_mean - measured.de00_mean).abs() < 0.3,
        "{quality:?} vs {measured}"
    );
    let (recorded, seen) = (quality.ssim_view.unwrap(), measured.ssim_view.unwrap());
    assert!((recorded - seen).abs() < 0.01, "{quality:?} vs {measured}");
    if job.options.blend == 0 {
        assert_eq!(quality.distinct as usize, measured.distinct);
        assert_eq!(quality.max_uses as usize, measured.max_uses);
        assert_eq!(
            (quality.dup_r1, quality.dup_r5),
            (measured.dup_r1, measured.dup_r5)
        );
    } else {
        // Measured from pixels, a tile tinted two ways by the blend counts twice; the record
        // counts the tiles chosen.
        assert!(
            quality.distinct as usize <= measured.distinct,
            "{quality:?} vs {measured}"
        );
        assert!(
            quality.dup_r5 >= measured.dup_r5,
            "{quality:?} vs {measured}"
        );
    }
    env.drain(&[]).await;
    let responses = roles.responses_for(id);
    assert_eq!(responses.len(), 1, "{responses:?}");
    assert_eq!(
        responses[0].outcome,
        JobOutcome::Done {
            output_blob: BlobKey::ImageOutput { job: id }.path(),
            width: size.width,
            height: size.height,
        }
    );
    roles.stop().await;
    id
}

async fn failing_slice_is_poisoned(env: Env) {
    let library = env.library().await;
    let settings = ProcessorSettings {
        poison_threshold: 2,
        visibility_timeout_ms: 1_000,
        renewal_interval_ms: 300,
        ..processor_settings(2)
    };
    let roles = start_roles(&env.platform, controller_settings(), settings).await;

    // A slice whose plan blob is corrupt: rendering it can never succeed.
    let job = Job::small(2);
    let bad = Uuid::new_v4();
    let client = Uuid::new_v4();
    let params = JobParams {
        spec: JobSpec {
            options: job.options,
            ..JobSpec::cells(library.reference(), job.tile_size, job.cells, 2)
        },
        input_name: String::new(),
    };
    env.platform
        .jobs()
        .create(&JobRecord::new(bad, client, params))
        .await
        .unwrap();
    let plan_blob = BlobKey::SliceInput { job: bad, seq: 0 }.path();
    let late_plan = BlobKey::SliceInput { job: bad, seq: 1 }.path();
    for key in [&plan_blob, &late_plan] {
        env.blobs
            .put(
                key,
                Bytes::from_static(b"TSRPLAN\nnot a plan at all"),
                PutMode::CreateNew,
            )
            .await
            .unwrap();
    }
    let slice = |seq, plan_blob| {
        Envelope::new(
            client,
            SliceRequest {
                job_id: bad,
                seq,
                count: 2,
                plan_blob,
                spec: JobSpec {
                    options: job.options,
                    ..JobSpec::cells(library.reference(), job.tile_size, job.cells, 2)
                },
            },
        )
    };
    let slices = env.platform.queue::<SliceRequest>();
    slices.send(&slice(0, plan_blob)).await.unwrap();

    // A job naming a library version that does not exist.
    let missing = LibraryRef {
        id: library.id.clone(),
        version: library.version + 40,
    };
    let unknown = submit(&env.platform, missing, &target_bytes(), &job).await;
    // And a good job beside them.
    let good = submit(&env.platform, library.reference(), &target_bytes(), &job).await;

    let record = finished(&env.platform, bad).await;
    assert_eq!(record.state, JobState::Failed);
    let reason = record.error.clone().unwrap();
    assert!(reason.contains("slice 0 of 2"), "{reason}");
    assert!(reason.contains("plan"), "{reason}");
    // The failed job's other slices are not worth rendering: their plans are gone, and a slice
    // asked for now is skipped, neither rendered nor poisoned (the poison count below).
    wait_while("the failed job's plans are still there", async || {
        tessera_shared::storage::BlobStoreExt::exists(&*env.blobs, &late_plan)
            .await
            .unwrap()
    })
    .await;
    slices.send(&slice(1, late_plan)).await.unwrap();

    let record = finished(&env.platform, unknown).await;
    assert_eq!(record.state, JobState::Failed);
    let reason = record.error.clone().unwrap();
    assert!(
        reason.contains(&library.id) && reason.contains("not found"),
        "{reason}"
    );

    let record = finished(&env.platform, good).await;
    assert_done_record(&record, &job, 2);
    assert_same_pixels(
        &result_pixels(&env.platform, good).await,
        &local_render(&job),
        "the good job",
    );

    wait_while("the late slice was never taken", async || {
        env.depths().await[QueueName::SliceRequest.as_str()] > 0
    })
    .await;
    assert_eq!(slices_present(&env, bad).await, 0);
    let poisoned = poison_records(&env, QueueName::SliceRequest).await;
    assert_eq!(poisoned.len(), 1, "{poisoned:?}");
    assert_eq!(poisoned[0].0, Some(bad));
    let poisoned = poison_records(&env, QueueName::ImageRequest).await;
    assert_eq!(poisoned.len(), 1, "{poisoned:?}");
    assert_eq!(poisoned[0].0, Some(unknown));
    assert!(poisoned[0].1.contains("not found"), "{poisoned:?}");

    let failures: Vec<_> = roles.received.lock().unwrap().clone();
    for id in [bad, unknown] {
        assert!(
            failures
                .iter()
                .any(|r| r.job_id == id && matches!(r.outcome, JobOutcome::Failed { .. })),
            "no failure announced for {id}: {failures:?}"
        );
    }
    env.drain(&[]).await;
    roles.stop().await;
}

/// The poison queue's records (job and reason), read and removed.
async fn poison_records(env: &Env, queue: QueueName) -> Vec<(Option<Uuid>, String)> {
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = env
            .queues
            .receive(&queue.poison(), 32, Duration::from_secs(30))
            .await
            .unwrap();
        if got.is_empty() && (!out.is_empty() || Instant::now() > deadline) {
            return out;
        }
        for message in got {
            // Written in the queue's encoding, as its messages are.
            let text = tessera_shared::messages::Encoding::from_wire(&message.body).unwrap();
            let record: tessera_shared::runtime::PoisonRecord =
                serde_json::from_str(&text).unwrap();
            out.push((record.job_id, record.reason));
            env.queues
                .delete(&queue.poison(), &message.id, &message.pop_receipt)
                .await
                .unwrap();
        }
    }
}

async fn messages_twice_give_one_result(env: Env) {
    let library = env.library().await;
    let platform = env.doubled();
    let roles = start_roles(&platform, controller_settings(), processor_settings(2)).await;
    let job = Job::small(4);
    let id = submit(&platform, library.reference(), &target_bytes(), &job).await;
    let record = finished(&env.platform, id).await;
    assert_done_record(&record, &job, 4);
    assert_same_pixels(
        &result_pixels(&env.platform, id).await,
        &local_render(&job),
        "doubled messages",
    );
    env.drain(&[]).await;
    // Every duplicate has been handled by now: the job was completed and announced once.
    let again = env.platform.jobs().get(id).await.unwrap();
    assert_eq!(again.finished_at, record.finished_at);
    assert_eq!(again.slices, record.slices);
    assert_eq!(
        again.transactions.get("processor"),
        record.transactions.get("processor")
    );
    let responses = roles.responses_for(id);
    assert_eq!(responses.len(), 1, "{responses:#?}");
    roles.stop().await;
}

// ---------------------------------------------------------------------------------------------
// The tests

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_job_matches_a_local_render() {
    job_matches_local_render(embedded()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azurite_job_matches_a_local_render() {
    let id = job_matches_local_render(azurite().await).await;
    // Blobs say what they are, as a storage browser or a SAS link sees them.
    for (container, blob, media) in [
        ("imageoutput", format!("{id}.png"), "image/png"),
        ("jobs", format!("{id}.json"), "application/json"),
    ] {
        let request = serde_json::json!({"op": "blob", "container": container, "blob": blob});
        let props = tokio::task::spawn_blocking(move || crate::interop::peer(request))
            .await
            .unwrap();
        assert_eq!(props["content_type"], media, "{container}/{blob}: {props}");
        assert_eq!(props["metadata"]["tessera_job"], id.to_string(), "{props}");
    }
}

/// With a name prefix, a job runs on queues and containers of its own in a shared Azure
/// account: nothing of it is under the plain names, and everything under the prefixed ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azurite_job_under_a_name_prefix_keeps_to_its_own_names() {
    use tessera_shared::storage::BlobStoreExt;
    use tessera_shared::storage::prefixed::{Prefixed, check_prefix};
    let storage = tessera_azure::AzureStorage::from_connection_string(
        &connection_string(),
        tessera_azure::AzureOptions::default(),
    )
    .unwrap();
    let prefix = format!("t{}-", &Uuid::new_v4().simple().to_string()[..8]);
    check_prefix(&prefix).unwrap();
    assert!(check_prefix("Dev_").is_err() && check_prefix("dev").is_err());
    let (raw_queues, raw_blobs) = (storage.queues(), storage.blobs());
    let queues: Arc<dyn QueueStore> = Arc::new(Prefixed::new(raw_queues.clone(), &prefix));
    let blobs: Arc<dyn BlobStore> = Arc::new(Prefixed::new(raw_blobs.clone(), &prefix));
    let env = Env::new(queues.clone(), blobs, None, None);
    let id = job_matches_local_render(env).await;

    let record = BlobKey::JobRecord { job: id }.path();
    assert!(
        raw_blobs
            .exists(&format!("{prefix}{record}"))
            .await
            .unwrap()
    );
    assert!(!raw_blobs.exists(&record).await.unwrap());
    let output = BlobKey::ImageOutput { job: id }.path();
    assert!(
        raw_blobs
            .exists(&format!("{prefix}{output}"))
            .await
            .unwrap()
    );
    let listed = raw_queues.list_queues().await.unwrap();
    for name in all_queue_names() {
        assert!(
            listed.contains(&format!("{prefix}{name}")),
            "{name}: {listed:?}"
        );
    }
    // Seen through the prefix, the names are the plain ones.
    let seen = queues.list_queues().await.unwrap();
    assert!(seen.contains(&"imagerequest".to_string()), "{seen:?}");
    assert!(seen.iter().all(|q| !q.starts_with(&prefix)), "{seen:?}");
    for name in all_queue_names() {
        queues.delete_queue(&name).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_with_flip_and_rotate_matches_a_local_render() {
    let env = embedded();
    let library = env.library().await;
    let roles = start_roles(&env.platform, controller_settings(), processor_settings(2)).await;
    let mut job = Job::small(3);
    job.options.flip = true;
    job.options.rotate = true;
    let id = submit(&env.platform, library.reference(), &target_bytes(), &job).await;
    let record = finished(&env.platform, id).await;
    assert_done_record(&record, &job, 3);
    assert!(record.params.spec.options.flip && record.params.spec.options.rotate);
    let pixels = result_pixels(&env.platform, id).await;
    assert_same_pixels(&pixels, &local_render(&job), "pipeline vs local render");

    // The transforms are in use: some cells hold a mirrored or turned tile, and the picture
    // differs from the job without them.
    let (lib, plan) = local_plan(&job);
    let turned = plan
        .transforms()
        .iter()
        .filter(|&&t| t != Transform::NONE)
        .count();
    assert!(turned >= 32, "only {turned} cells turned");
    let plain = Job::small(3);
    assert_ne!(pixels.2, local_render(&plain).2);
    let mut csv = Vec::new();
    plan.write_csv(&lib, &mut csv).unwrap();
    let csv = String::from_utf8(csv).unwrap();
    assert!(csv.starts_with("row,col,tile,name,transform\n"), "{csv}");
    assert!(
        csv.lines().any(|l| l.ends_with(",flip+rot90")),
        "no cell flipped and turned"
    );
    env.drain(&[]).await;
    roles.stop().await;
}

/// JPEG and TIFF results, made from the stitched PNG: byte for byte what `tessera render -o
/// mosaic.jpg --quality 85` and `-o mosaic.tif` write for the same mosaic, at 1, 3 and 100
/// slices; the PNG stays beside them for the viewer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jpeg_and_tiff_results_match_a_local_render_at_any_slice_count() {
    let env = embedded();
    let library = env.library().await;
    let roles = start_roles(&env.platform, controller_settings(), processor_settings(2)).await;
    let (width, height, pixels) = local_render(&Job::small(1));
    let dir = tempfile::tempdir().unwrap();
    for (format, quality, engine) in [
        (
            FileFormat::Jpeg,
            Some(85),
            tessera_engine::OutputFormat::Jpeg { quality: 85 },
        ),
        (FileFormat::Tiff, None, tessera_engine::OutputFormat::Tiff),
    ] {
        let path = dir.path().join(format!("local.{}", format.extension()));
        let mut sink = tessera_engine::file_sink(&path, (width, height), engine, 300).unwrap();
        sink.write_rows(&pixels).unwrap();
        sink.finish().unwrap();
        drop(sink);
        let want = std::fs::read(&path).unwrap();
        for slices in [1, 3, 100] {
            let job = Job::small(slices);
            let reference = library.reference();
            let id = submit_as(
                &env.platform,
                (reference, &target_bytes()),
                &job,
                (format, quality),
            )
            .await;
            let record = finished(&env.platform, id).await;
            assert_eq!(record.state, JobState::Done, "{record:#?}");
            let key = BlobKey::ImageFile {
                job: id,
                extension: format.extension(),
            };
            let got = env.platform.blobs.get(&key.path()).await.unwrap();
            assert!(
                got[..] == want[..],
                "{format:?} in {slices} slices: {} bytes, the render {}",
                got.len(),
                want.len()
            );
            assert_same_pixels(
                &result_pixels(&env.platform, id).await,
                &(width, height, pixels.clone()),
                "the PNG beside it",
            );
        }
    }
    env.drain(&[]).await;
    roles.stop().await;
}

/// Transparent tiles laid over black, and over the background chosen for the photo: the
/// pipeline's result is the engine's render, byte for byte, at several slice counts, and the
/// plan says what the tiles lie over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_with_tiles_over_another_background_matches_a_local_render() {
    let env = embedded();
    let library = env.library().await;
    let roles = start_roles(&env.platform, controller_settings(), processor_settings(2)).await;
    let plain = local_render(&Job::small(1)).2;
    let mut chosen = Vec::new();
    for (background, slices) in [
        (TileBackground::Colour([0, 0, 0]), 1),
        (TileBackground::Colour([0, 0, 0]), 3),
        (TileBackground::Auto, 2),
    ] {
        let mut job = Job::small(slices);
        job.options.background = Some(background);
        let id = submit(&env.platform, library.reference(), &target_bytes(), &job).await;
        let record = finished(&env.platform, id).await;
        assert_done_record(&record, &job, slices);
        assert_eq!(record.params.spec.options.background, Some(background));
        let pixels = result_pixels(&env.platform, id).await;
        let local = local_render(&job);
        assert_same_pixels(&pixels, &local, &format!("{background} in {slices} slices"));
        assert_ne!(pixels.2, plain, "{background}: the same as over white");
        let (_, plan) = local_plan(&job);
        chosen.push(plan.background().unwrap());
    }
    assert_eq!(chosen[0], [0, 0, 0]);
    assert_ne!(
        chosen[2],
        [255, 255, 255],
        "auto kept white for a dark photo"
    );
    env.drain(&[]).await;
    roles.stop().await;
}

/// 24 x 18 tiles on a 4:3 library: the pipeline's result is the engine's render, byte for byte,
/// with tiles mirrored and turned by the half turn only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_with_oblong_tiles_matches_a_local_render() {
    let env = embedded();
    let library = env.library_of_shape(TileShape::new(4, 3).unwrap()).await;
    assert_eq!(library.shape, "4:3");
    let roles = start_roles(&env.platform, controller_settings(), processor_settings(2)).await;
    let mut job = Job::small(3);
    (job.cells, job.tile_size, job.tile_height) = (12, 24, 18);
    job.options.flip = true;
    job.options.rotate = true;
    let id = submit(&env.platform, library.reference(), &target_bytes(), &job).await;
    let record = finished(&env.platform, id).await;
    assert_done_record(&record, &job, 3);
    let pixels = result_pixels(&env.platform, id).await;
    let local = local_render(&job);
    // A square target in 4:3 cells: 12 across, 16 down, an output about square.
    assert_eq!((local.0, local.1), (288, 288));
    assert_same_pixels(&pixels, &local, "pipeline vs local render");
    let (_, plan) = local_plan(&job);
    assert!(plan.transforms().iter().all(|t| t.quarter_turns() % 2 == 0));
    assert!(plan.transforms().iter().any(|t| t.quarter_turns() == 2));
    env.drain(&[]).await;
    roles.stop().await;
}

/// Adaptive tile sizes through the whole service: the controller plans the quadtree once and
/// cuts it on rows of blocks, the processors render their rows of blocks from the adaptive plan
/// blobs, the stitcher joins them. Whatever the slice count, the result is byte for byte the
/// engine's own adaptive render (`tessera render --adaptive`), and the cell map names, for every
/// cell of the smallest square, the square over it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_with_adaptive_tile_sizes_matches_a_local_render_at_any_slice_count() {
    let env = embedded();
    let library = env.library().await;
    let roles = start_roles(&env.platform, controller_settings(), processor_settings(2)).await;
    let adaptive = |slices| {
        let mut job = Job::small(slices);
        job.options.adaptive = Some("4..16".parse().unwrap());
        job.options.flip = true;
        job
    };
    let want = local_adaptive_render(&adaptive(1));
    // 32 cells of 8 px over a square target: 256 px, 16 rows of blocks of 16 px.
    assert_eq!((want.0, want.1), (256, 256));
    let (local_library, plan) = local_adaptive_plan(&adaptive(1));
    assert_eq!(plan.tile_sizes(), vec![4, 8, 16]);
    let map = CellMap::from_adaptive(&plan, &local_library).unwrap();
    // Not the uniform grid's picture.
    assert_ne!(want.2, local_render(&Job::small(1)).2);
    for slices in [1, 2, 3, 5, 100] {
        let job = adaptive(slices);
        let id = submit(&env.platform, library.reference(), &target_bytes(), &job).await;
        let record = finished(&env.platform, id).await;
        assert_eq!(record.state, JobState::Done, "{record:#?}");
        // Never more slices than rows of blocks.
        assert_eq!(record.slices_total, slices.min(16), "{slices} slices");
        assert_eq!(record.slices.len() as u32, record.slices_total);
        assert_eq!(record.params.spec.options.adaptive, job.options.adaptive);
        let output = record.output.unwrap();
        assert_eq!((output.width, output.height), (256, 256));
        // Cells of the smallest square.
        assert_eq!((output.cols, output.rows), (64, 64));
        assert_same_pixels(
            &result_pixels(&env.platform, id).await,
            &want,
            &format!("{slices} slices vs tessera render --adaptive"),
        );
        let stored = env
            .platform
            .blobs
            .get(&BlobKey::CellMap { job: id }.path())
            .await
            .unwrap();
        assert!(
            CellMap::from_bytes(&stored).unwrap() == map,
            "{slices} slices: the cell map"
        );
        // The quality figures are a uniform grid's: an adaptive job has none.
        assert!(record.quality.is_none());
    }
    env.drain(&[]).await;
    roles.stop().await;
}

/// An adaptive request that reaches the queue past the API's checks (oblong tiles) is poison
/// when decoded, with the reason; and a slice request whose adaptive sizes are not its plan's
/// is refused by the processor rather than rendered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adaptive_messages_that_cannot_be_honoured_are_refused() {
    let job = Uuid::new_v4();
    let mut request = serde_json::json!({
        "v": 1,
        "kind": "ImageRequest",
        "client_id": Uuid::new_v4(),
        "request_id": Uuid::new_v4(),
        "body": {
            "job_id": job,
            "input_blob": format!("imageinput/{job}"),
            "library": { "id": "emoji", "version": 1 },
            "tile_size": 24,
            "tile_height": 18,
            "grid": { "mode": "cells", "across": 12 },
            "slices": 2,
            "options": { "repeat_radius": 1, "blend_percent": 0, "adaptive": "8..32" }
        }
    });
    let err = Envelope::<ImageRequest>::decode(&request.to_string()).unwrap_err();
    assert!(err.to_string().contains("square"), "{err}");
    request["body"]["tile_height"] = serde_json::Value::Null;
    request["body"]["grid"] = serde_json::json!({ "mode": "per_pixel" });
    let err = Envelope::<ImageRequest>::decode(&request.to_string()).unwrap_err();
    assert!(err.to_string().contains("per_pixel"), "{err}");
    request["body"]["grid"] = serde_json::json!({ "mode": "cells", "across": 12 });
    request["body"]["options"]["adaptive"] = "8..24".into();
    let err = Envelope::<ImageRequest>::decode(&request.to_string()).unwrap_err();
    assert!(err.to_string().contains("doubled"), "{err}");
    request["body"]["options"]["adaptive"] = "8..32".into();
    let ok = Envelope::<ImageRequest>::decode(&request.to_string()).unwrap();
    assert_eq!(ok.body.spec.options.adaptive.unwrap().to_string(), "8..32");

    // A processor given an adaptive plan for a request that is not adaptive.
    let env = embedded();
    let library = env.library().await;
    let roles = start_roles(&env.platform, controller_settings(), processor_settings(1)).await;
    let mut job = Job::small(1);
    job.options.adaptive = Some("4..16".parse().unwrap());
    let (_, plan) = local_adaptive_plan(&job);
    let id = Uuid::new_v4();
    let client = Uuid::new_v4();
    let params = JobParams {
        spec: JobSpec {
            options: Job::small(1).options,
            ..JobSpec::cells(library.reference(), job.tile_size, job.cells, 1)
        },
        input_name: String::new(),
    };
    env.platform
        .jobs()
        .create(&JobRecord::new(id, client, params))
        .await
        .unwrap();
    let plan_blob = BlobKey::SliceInput { job: id, seq: 0 }.path();
    env.blobs
        .put(&plan_blob, Bytes::from(plan.to_bytes()), PutMode::CreateNew)
        .await
        .unwrap();
    let slice = SliceRequest {
        job_id: id,
        seq: 0,
        count: 1,
        plan_blob,
        spec: JobSpec {
            options: Job::small(1).options,
            ..JobSpec::cells(library.reference(), job.tile_size, job.cells, 1)
        },
    };
    env.platform
        .queue::<SliceRequest>()
        .send(&Envelope::new(client, slice))
        .await
        .unwrap();
    let record = finished(&env.platform, id).await;
    assert_eq!(record.state, JobState::Failed);
    let reason = record.error.unwrap_or_default();
    assert!(
        reason.contains("adaptive tiles of 4..16") && reason.contains("none"),
        "{reason}"
    );
    assert_eq!(slices_present(&env, id).await, 0);
    env.drain(&[("slicerequest-poison", 1)]).await;
    roles.stop().await;
}

/// A request whose tile shape is not its library's (sent to the queue, past the API's check)
/// fails the job with a reason that names both shapes, and goes to the poison queue: no retry
/// can help it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_of_another_shape_than_its_library_fails_clearly() {
    let env = embedded();
    let library = env.library().await;
    let roles = start_roles(&env.platform, controller_settings(), processor_settings(1)).await;
    let mut job = Job::small(2);
    (job.tile_size, job.tile_height) = (24, 18);
    let id = submit(&env.platform, library.reference(), &target_bytes(), &job).await;
    let record = finished(&env.platform, id).await;
    assert_eq!(record.state, JobState::Failed, "{record:#?}");
    let reason = record.error.unwrap_or_default();
    assert!(reason.contains("4:3") && reason.contains("1:1"), "{reason}");
    // The job is marked failed before its request moves to the poison queue.
    let poison = QueueName::ImageRequest.poison();
    wait_for(Duration::from_secs(30), async || {
        match env.depths().await[&poison] {
            1 => Ok(()),
            n => Err(format!("{n} requests on {poison}")),
        }
    })
    .await;
    env.drain(&[("imagerequest-poison", 1)]).await;
    roles.stop().await;
}

/// A job is sized once, by the door that took it: the controller plans the grid the request
/// carries, not one of its own choosing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controller_plans_the_grid_the_request_carries() {
    let env = embedded();
    let library = env.library().await;
    let roles = start_roles(&env.platform, controller_settings(), processor_settings(1)).await;
    let job = Job::small(2);
    let spec = JobSpec {
        library: library.reference(),
        tile_size: job.tile_size,
        grid: Grid::Cells { across: job.cells },
        slices: job.slices,
        ..JobSpec::with_defaults(&Defaults::default())
    };
    let carried = GridSize { cols: 20, rows: 9 };
    let id = send_job(&env.platform, &target_bytes(), spec, Some(carried)).await;
    let record = finished(&env.platform, id).await;
    assert_eq!(record.state, JobState::Done, "{record:#?}");
    let output = record.output.unwrap();
    assert_eq!((output.cols, output.rows), (20, 9));
    let (width, height, _) = result_pixels(&env.platform, id).await;
    assert_eq!((width, height), (20 * 8, 9 * 8));
    env.drain(&[]).await;
    roles.stop().await;
}

/// Requests that cannot be read but name a job, base64-encoded as a Functions output binding
/// sends them: a job with a record is failed with the reason, and a request from outside with
/// no record is answered all the same, with a failed ImageResponse.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_request_fails_its_job_and_is_answered() {
    use tessera_shared::messages::Encoding;
    let env = embedded();
    let library = env.library().await;
    let roles = start_roles(&env.platform, controller_settings(), processor_settings(1)).await;
    let (known, unknown, client) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
    let request = |job: Uuid| {
        serde_json::json!({
            "v": 1, "kind": "ImageRequest", "client_id": client, "request_id": Uuid::new_v4(),
            "body": {
                "job_id": job, "input_blob": format!("imageinput/{job}"),
                "library": library.reference(), "tile_size": 3,
                "grid": { "mode": "cells", "across": 12 }, "slices": 1,
                "options": { "repeat_radius": 1, "blend_percent": 0 }
            }
        })
    };
    let params = JobParams {
        spec: serde_json::from_value(request(known)["body"].clone()).unwrap(),
        input_name: String::new(),
    };
    env.platform
        .jobs()
        .create(&JobRecord::new(known, client, params))
        .await
        .unwrap();
    let mut from_outside = request(unknown);
    from_outside["v"] = 2.into();
    for message in [request(known), from_outside] {
        let wire = Encoding::Base64.to_wire(&message.to_string());
        env.queues
            .send("imagerequest", &wire, SendOptions::default())
            .await
            .unwrap();
    }
    env.platform.nudges.nudge("imagerequest").await;
    let record = finished(&env.platform, known).await;
    assert_eq!(record.state, JobState::Failed);
    let reason = record.error.unwrap_or_default();
    assert!(reason.contains("tile_size"), "{reason}");

    wait_while("both failures answered", async || {
        roles.responses_for(known).is_empty() || roles.responses_for(unknown).is_empty()
    })
    .await;
    for (job, says) in [
        (known, "tile_size"),
        (unknown, "unsupported envelope version 2"),
    ] {
        match &roles.responses_for(job)[..] {
            [
                ImageResponse {
                    outcome: JobOutcome::Failed { reason },
                    ..
                },
            ] => assert!(reason.contains(says), "{job}: {reason}"),
            other => panic!("{job}: {other:?}"),
        }
    }
    assert_eq!(env.depths().await[&QueueName::ImageRequest.poison()], 2);
    env.drain(&[("imagerequest-poison", 2)]).await;
    roles.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slice_count_does_not_change_the_pixels() {
    let env = embedded();
    let library = env.library().await;
    let roles = start_roles(&env.platform, controller_settings(), processor_settings(2)).await;
    let mut outputs = Vec::new();
    for slices in [1, 3, 8, 100] {
        let job = Job::small(slices);
        let id = submit(&env.platform, library.reference(), &target_bytes(), &job).await;
        let record = finished(&env.platform, id).await;
        // Never more slices than rows of cells.
        assert_done_record(&record, &job, slices.min(record.output.unwrap().rows));
        outputs.push((slices, result_pixels(&env.platform, id).await));
    }
    let want = local_render(&Job::small(1));
    for (slices, got) in &outputs {
        assert_same_pixels(got, &want, &format!("{slices} slices"));
    }
    env.drain(&[]).await;
    roles.stop().await;

    // A controller whose slices may hold at most 10,000 pixels cuts a one-slice job of
    // 256 x 256 px into seven, with the same pixels.
    let capped = ControllerSettings {
        max_slice_pixels: 10_000,
        ..controller_settings()
    };
    let roles = start_roles(&env.platform, capped, processor_settings(2)).await;
    let job = Job::small(1);
    let id = submit(&env.platform, library.reference(), &target_bytes(), &job).await;
    let record = finished(&env.platform, id).await;
    assert_done_record(&record, &job, 7);
    assert_same_pixels(
        &result_pixels(&env.platform, id).await,
        &want,
        "capped slices",
    );
    roles.stop().await;
}

/// Every option of the job specification at once gives, through the pipeline, the pixels of a
/// local render, whatever the slice count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_option_gives_the_pixels_of_a_local_render_at_1_3_and_100_slices() {
    let env = embedded();
    let library = env.library().await;
    let roles = start_roles(&env.platform, controller_settings(), processor_settings(2)).await;
    let with_options = |slices| {
        let mut job = Job::small(slices);
        job.options = RenderOptions {
            repeat_radius: 2,
            blend: 30,
            max_uses: Some(40),
            min_uses: 1,
            flip: true,
            rotate: true,
            background: Some(tessera_engine::TileBackground::Auto),
            overlay: 30,
            form: 80,
            grout: 3,
            ..RenderOptions::default()
        };
        job
    };
    let want = local_render(&with_options(1));
    for slices in [1, 3, 100] {
        let job = with_options(slices);
        let id = submit(&env.platform, library.reference(), &target_bytes(), &job).await;
        let record = finished(&env.platform, id).await;
        assert_eq!(record.state, JobState::Done, "{record:#?}");
        let quality = record.quality.as_ref().unwrap();
        assert!(quality.max_uses <= 40);
        // Every tile of the library is in, once at least.
        assert!(quality.min_uses >= 1, "{quality:?}");
        assert_eq!(quality.distinct, quality.library_tiles, "{quality:?}");
        // The overlay's figures beside the tiles' own: the photo makes the mosaic closer.
        let overlay = quality.overlay.expect("the overlay's figures");
        assert_eq!(overlay.percent, 30);
        assert!(overlay.de00_mean < quality.de00_mean, "{quality:?}");
        assert_same_pixels(
            &result_pixels(&env.platform, id).await,
            &want,
            &format!("every option, {slices} slices"),
        );
    }
    env.drain(&[]).await;
    roles.stop().await;
}

/// A message cannot point a job at another job's blobs: a request whose `input_blob` is not its
/// own job's upload is poison at once, with the reason, and its job fails saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_request_cannot_take_another_jobs_blob_as_its_upload() {
    let env = embedded();
    let library = env.library().await;
    let roles = start_roles(&env.platform, controller_settings(), processor_settings(1)).await;
    let job = Job::small(1);
    let first = submit(&env.platform, library.reference(), &target_bytes(), &job).await;
    let record = finished(&env.platform, first).await;
    assert_eq!(record.state, JobState::Done);

    let second = Uuid::new_v4();
    let client = Uuid::new_v4();
    let spec = JobSpec {
        options: job.options,
        ..JobSpec::cells(library.reference(), job.tile_size, job.cells, 1)
    };
    let params = JobParams {
        spec: spec.clone(),
        input_name: String::new(),
    };
    env.platform
        .jobs()
        .create(&JobRecord::new(second, client, params))
        .await
        .unwrap();
    let request = ImageRequest {
        job_id: second,
        // The first job's result, a PNG: it must not become the second job's picture.
        input_blob: record.result_blob.clone().unwrap(),
        spec,
        sized_to: None,
        redrive: false,
    };
    env.platform
        .queue::<ImageRequest>()
        .send(&Envelope::new(client, request))
        .await
        .unwrap();
    let record = finished(&env.platform, second).await;
    assert_eq!(record.state, JobState::Failed, "{record:#?}");
    let reason = record.error.unwrap_or_default();
    assert!(
        reason.contains("not this message's own blob key"),
        "{reason}"
    );
    let poisoned = poison_records(&env, QueueName::ImageRequest).await;
    assert_eq!(poisoned.len(), 1, "{poisoned:?}");
    assert_eq!(poisoned[0].0, Some(second));
    assert!(poisoned[0].1.contains("own blob key"), "{poisoned:?}");
    env.drain(&[]).await;
    roles.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_failing_slice_is_poisoned_and_fails_its_job() {
    failing_slice_is_poisoned(embedded()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azurite_failing_slice_is_poisoned_and_fails_its_job() {
    failing_slice_is_poisoned(azurite().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_messages_delivered_twice_give_one_result() {
    messages_twice_give_one_result(embedded()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azurite_messages_delivered_twice_give_one_result() {
    messages_twice_give_one_result(azurite().await).await;
}

// ---------------------------------------------------------------------------------------------
// Storage that cleans up after itself

/// Keys that name `job`.
fn keys_of(keys: &std::collections::BTreeSet<String>, job: Uuid) -> Vec<String> {
    let id = job.to_string();
    keys.iter().filter(|k| k.contains(&id)).cloned().collect()
}

async fn storage_returns_to_its_baseline(env: Env) {
    use tessera_shared::lifecycle::{GcOptions, collect_garbage, delete_job};
    let library = env.library().await;
    let roles = start_roles(&env.platform, controller_settings(), processor_settings(2)).await;
    let baseline = crate::support::all_blob_keys(&env.platform).await;
    let job = Job::small(3);
    let (deleted, expired) = (
        submit(&env.platform, library.reference(), &target_bytes(), &job).await,
        submit(&env.platform, library.reference(), &target_bytes(), &job).await,
    );
    for id in [deleted, expired] {
        assert_done_record(&finished(&env.platform, id).await, &job, 3);
        // A done job holds its record and its result; its upload and slices go as it ends.
        wait_while("a done job's intermediates are still there", async || {
            keys_of(&crate::support::all_blob_keys(&env.platform).await, id)
                .iter()
                .any(|k| k.starts_with("slice") || k.starts_with("imageinput"))
        })
        .await;
        let output = BlobKey::ImageOutput { job: id }.path();
        assert_eq!(
            keys_of(&crate::support::all_blob_keys(&env.platform).await, id),
            vec![
                BlobKey::CellMap { job: id }.path(),
                output.clone(),
                BlobKey::JobRecord { job: id }.path(),
                BlobKey::SeekIndex { output }.path(),
            ]
        );
    }
    env.drain(&[]).await;
    roles.stop().await;

    // Left behind by a crash: a slice of a job that has no record.
    let orphan = BlobKey::SliceOutput {
        job: Uuid::new_v4(),
        seq: 0,
    }
    .path();
    env.blobs
        .put(&orphan, Bytes::from_static(b"left"), PutMode::CreateNew)
        .await
        .unwrap();
    // A library imported again under its name: its first version is no longer needed.
    let again = import_library(
        &env.platform,
        &fixtures().join("tiles"),
        &library.name,
        ImportOptions::default(),
        &Publication::operator(true),
    )
    .await
    .unwrap()
    .0;
    assert_eq!(again.version, library.version + 1);

    let record = env.platform.jobs().get(deleted).await.unwrap();
    delete_job(&*env.blobs, &record).await.unwrap();
    assert!(keys_of(&crate::support::all_blob_keys(&env.platform).await, deleted).is_empty());
    // The other expires (a retention of nothing), and the sweep takes the rest.
    let report = collect_garbage(
        &env.platform,
        GcOptions {
            retention: Some(Duration::ZERO),
            keep_inputs: false,
            grace: Duration::ZERO,
        },
    )
    .await
    .unwrap();
    assert!(report.expired >= 1 && report.orphans >= 1, "{report:?}");
    assert!(report.library_versions >= 1, "{report:?}");
    let after = crate::support::all_blob_keys(&env.platform).await;
    assert!(keys_of(&after, expired).is_empty(), "{after:?}");
    assert!(!after.contains(&orphan));
    let first_version = format!("libraries/{}/v{}/", library.id, library.version);
    assert!(
        !after.iter().any(|k| k.starts_with(&first_version)),
        "{after:?}"
    );
    assert!(env.platform.libraries().get(&library.id).await.is_ok());
    if env.lock.is_none() {
        // A store of its own: nothing else wrote, so exactly the baseline is left, with the
        // library's new version in place of the old.
        let moved = |keys: &std::collections::BTreeSet<String>| -> Vec<String> {
            keys.iter()
                .filter(|k| !k.starts_with("libraries/") && !k.starts_with("health/"))
                .cloned()
                .collect()
        };
        assert_eq!(moved(&after), moved(&baseline));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_storage_returns_to_its_baseline() {
    storage_returns_to_its_baseline(embedded()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azurite_storage_returns_to_its_baseline() {
    storage_returns_to_its_baseline(azurite().await).await;
}

// ---------------------------------------------------------------------------------------------
// Jobs that stall

async fn active_markers(env: &Env) -> usize {
    tessera_shared::storage::BlobStoreExt::list_all(&*env.blobs, BlobKey::ACTIVE_JOBS_PREFIX)
        .await
        .unwrap()
        .len()
}

const STALL: Duration = Duration::from_millis(1500);
/// The stall timeout of a sweep that comes after a job has stalled: every job not ended has
/// stood still at least this long, so the test need not wait one out.
const STALLED: Duration = Duration::ZERO;

/// `job` submitted on a fresh embedded store and planned by a controller running alone: its
/// slice requests wait on the queue.
async fn planned_by_a_controller_alone(
    job: &Job,
) -> (Env, (ShutdownTrigger, JoinHandle<anyhow::Result<()>>), Uuid) {
    let env = embedded();
    let library = env.library().await;
    // The controller makes the queues as it starts; the job is sent before it may have.
    env.platform.ensure_queues().await.unwrap();
    let controller = start_controller(&env.platform);
    let id = submit(&env.platform, library.reference(), &target_bytes(), job).await;
    wait_for_quality(&env.platform, id).await;
    // Every slice is asked for as it is planned, before the figures are recorded; a test that
    // loses the slice requests must find them all sent first.
    let requests = QueueName::SliceRequest.as_str();
    wait_while("the slices were not all sent", async || {
        env.depths().await[requests] < u64::from(job.slices)
    })
    .await;
    (env, controller, id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_job_is_driven_again_once_and_ends_done() {
    let job = Job::small(3);
    let (env, controller, id) = planned_by_a_controller_alone(&job).await;
    assert_eq!(active_markers(&env).await, 1);

    // The slice requests are lost, and one slice's plan with them.
    let slices = QueueName::SliceRequest.as_str();
    env.queues.clear(slices).await.unwrap();
    env.blobs
        .delete(&BlobKey::SliceInput { job: id, seq: 1 }.path())
        .await
        .unwrap();
    let report = reconcile_stalled_jobs(&env.platform, STALL).await.unwrap();
    assert_eq!((report.active, report.redriven.len()), (1, 0), "{report:?}");

    // Stalled: two controllers sweeping at once drive it again once. The plan is made again
    // (a slice's plan is missing) and every slice asked for once. Their stall timeout is a real
    // one: with none, a sweep reading the job just after the other's re-drive would find it
    // stalled again at once.
    tokio::time::sleep(STALL).await;
    let (a, b) = tokio::join!(
        reconcile_stalled_jobs(&env.platform, STALL),
        reconcile_stalled_jobs(&env.platform, STALL)
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.redriven.len() + b.redriven.len(), 1, "{a:?} {b:?}");
    assert!(a.failed.is_empty() && b.failed.is_empty());
    wait_while("the slices were not asked for again", async || {
        env.depths().await[slices] < 3
    })
    .await;

    let processors = start_processors(&env.platform, processor_settings(2));
    let record = finished(&env.platform, id).await;
    assert_done_record(&record, &job, 3);
    assert!(record.redriven_at.is_some());
    assert_same_pixels(
        &result_pixels(&env.platform, id).await,
        &local_render(&job),
        "the job driven again",
    );
    assert_eq!(active_markers(&env).await, 0);
    let report = reconcile_stalled_jobs(&env.platform, STALL).await.unwrap();
    assert_eq!(report.active, 0);
    // The front end (not running here) is told once.
    env.drain(&[("imageresponse", 1)]).await;
    stop_role(processors).await;
    stop_role(controller).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_stitched_without_its_summary_waits_for_it_and_is_driven_again_for_it() {
    let job = Job::small(3);
    let (env, controller, id) = planned_by_a_controller_alone(&job).await;
    // The planner's summary is lost: as if its controller had died after asking for the slices,
    // and its image request had been lost with it.
    env.platform
        .jobs()
        .update(id, |r| {
            r.summarized = false;
            r.quality = None;
            true
        })
        .await
        .unwrap();

    // Rendered and stitched, the job waits for the summary: it is not done without its figures.
    let processors = start_processors(&env.platform, processor_settings(2));
    wait_while("the job was not stitched", async || {
        !env.platform.jobs().get(id).await.unwrap().is_stitched()
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let record = env.platform.jobs().get(id).await.unwrap();
    assert_eq!(record.state, JobState::Stitching, "{record:#?}");
    assert!(record.quality.is_none() && !record.announced);

    // Stalled: the reconciler asks for the plan again, whose summary finishes the job.
    let report = reconcile_stalled_jobs(&env.platform, STALLED)
        .await
        .unwrap();
    assert_eq!(report.redriven, vec![id], "{report:?}");
    finished(&env.platform, id).await;
    // Done is recorded before the ImageResponse is sent, and announced after it.
    wait_while("the job was not announced", async || {
        !env.platform.jobs().get(id).await.unwrap().announced
    })
    .await;
    let record = env.platform.jobs().get(id).await.unwrap();
    assert_done_record(&record, &job, 3);
    assert!(record.summarized && record.announced, "{record:#?}");
    let quality = record.quality.expect("quality figures");
    assert!(
        quality.de00_mean > 0.0 && quality.distinct > 0,
        "{quality:?}"
    );
    assert_same_pixels(
        &result_pixels(&env.platform, id).await,
        &local_render(&job),
        "the job finished by its summary",
    );
    assert_eq!(active_markers(&env).await, 0);
    env.drain(&[("imageresponse", 1)]).await;
    stop_role(processors).await;
    stop_role(controller).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_stalled_again_after_being_driven_again_fails_with_the_reason() {
    let (env, controller, id) = planned_by_a_controller_alone(&Job::small(2)).await;
    let slices = QueueName::SliceRequest.as_str();
    env.queues.clear(slices).await.unwrap();

    let report = reconcile_stalled_jobs(&env.platform, STALLED)
        .await
        .unwrap();
    assert_eq!(report.redriven, vec![id]);
    assert_eq!(env.depths().await[slices], 2);
    // Lost again, and no processor anyway.
    env.queues.clear(slices).await.unwrap();
    let report = reconcile_stalled_jobs(&env.platform, STALL).await.unwrap();
    assert!(
        report.failed.is_empty(),
        "driven again a moment ago: {report:?}"
    );

    let report = reconcile_stalled_jobs(&env.platform, STALLED)
        .await
        .unwrap();
    assert_eq!(report.failed, vec![id]);
    let record = env.platform.jobs().get(id).await.unwrap();
    assert_eq!(record.state, JobState::Failed);
    let reason = record.error.unwrap();
    assert!(
        reason.contains("no progress") && reason.contains("rendering, 0 of 2 slices"),
        "{reason}"
    );
    assert_eq!(active_markers(&env).await, 0);
    // The front end is told.
    env.drain(&[("imageresponse", 1)]).await;
    stop_role(controller).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn job_poisoned_while_blob_writes_fail_ends_failed_with_the_cause() {
    // Every slice is sent (see the helper), or the controller, still planning when writes fail,
    // would send the slices again once they return.
    let (env, controller, id) = planned_by_a_controller_alone(&Job::small(2)).await;

    // Blob writes fail from here on: the blob store's temp folder is replaced by a file.
    let tmp = env.dir.as_ref().unwrap().path().join("blobs/.tmp");
    std::fs::remove_dir_all(&tmp).unwrap();
    std::fs::write(&tmp, b"").unwrap();
    let processors = start_processors(
        &env.platform,
        ProcessorSettings {
            poison_threshold: 2,
            max_retry_delay_ms: 100,
            ..processor_settings(2)
        },
    );
    let poison = QueueName::SliceRequest.poison();
    wait_while("the slices were not poisoned", async || {
        env.depths().await[&poison] < 2
    })
    .await;
    // Nothing can mark the job failed while writes fail.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let record = env.platform.jobs().get(id).await.unwrap();
    assert_eq!(record.state, JobState::Rendering);

    // Storage returns: the poison hooks, still trying, record the job's fate and its cause.
    std::fs::remove_file(&tmp).unwrap();
    std::fs::create_dir(&tmp).unwrap();
    let returned = Instant::now();
    let record = finished(&env.platform, id).await;
    let waited = returned.elapsed();
    assert_eq!(record.state, JobState::Failed);
    let reason = record.error.unwrap();
    assert!(
        reason.contains("over the poison threshold of 2") && reason.contains("Not a directory"),
        "{reason}"
    );
    assert!(
        waited < Duration::from_secs(20),
        "failed {waited:?} after storage returned"
    );
    // The job's marker goes with its intermediates, just after the record says failed.
    wait_while("the ended job is still marked active", async || {
        active_markers(&env).await > 0
    })
    .await;
    env.drain(&[("slicerequest-poison", 2), ("imageresponse", 1)])
        .await;
    stop_role(processors).await;
    stop_role(controller).await;
}

// ---------------------------------------------------------------------------------------------
// Separate processes

/// A `tessera` role in its own process, on Azurite.
fn spawn_role(role: &str, extra: &[(&str, &str)]) -> crate::support::KillOnDrop {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_tessera"));
    command
        .arg(role)
        .env("TESSERA_STORAGE", "azure")
        .env(CONNECTION_ENV, connection_string())
        .env("TESSERA_LOG", "warn")
        // Several roles on this machine: each ops endpoint on a free port.
        .env("TESSERA_OPS__PORT", "0")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null());
    for section in ["CONTROLLER", "PROCESSOR"] {
        for (key, value) in [
            ("VISIBILITY_TIMEOUT_MS", "3000"),
            ("RENEWAL_INTERVAL_MS", "1000"),
            ("MIN_BACKOFF_MS", "10"),
            ("MAX_BACKOFF_MS", "500"),
            ("MAX_RETRY_DELAY_MS", "1000"),
        ] {
            command.env(format!("TESSERA_{section}__{key}"), value);
        }
    }
    for (key, value) in extra {
        command.env(key, value);
    }
    crate::support::KillOnDrop(
        command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start `tessera {role}`: {e}")),
    )
}

/// Fails at once, saying why, when the binary has no such role yet.
fn require_role(role: &str) {
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args([role, "--help"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(
        status.success(),
        "the tessera binary has no `{role}` subcommand: wire tessera_workers::run_* into src/main.rs"
    );
}

/// Slice outputs of a job present in storage.
async fn slices_present(env: &Env, job: Uuid) -> usize {
    use tessera_shared::storage::BlobStoreExt;
    env.blobs
        .list_all(&BlobKey::slice_outputs_prefix(job))
        .await
        .unwrap()
        .len()
}

/// Waits until `ready` holds of the slices present, failing the test at the job deadline or
/// if the job ends first.
async fn wait_until(env: &Env, job: Uuid, what: &str, ready: impl Fn(usize) -> bool) -> JobRecord {
    wait_for(JOB_DEADLINE, async || {
        let record = env.platform.jobs().get(job).await.unwrap();
        if ready(slices_present(env, job).await) {
            return Ok(record);
        }
        assert!(!record.state.is_final(), "{what}: {record:#?}");
        Err(format!("{what}: {record:#?}"))
    })
    .await
}

/// Waits until the web process answers its health check.
async fn wait_for_web(client: &reqwest::Client, base: &str) {
    eventually(
        Duration::from_secs(60),
        "`tessera web` answering",
        async || {
            let answer = client.get(format!("{base}/healthz")).send().await;
            answer.is_ok_and(|r| r.status().is_success())
        },
    )
    .await
}

/// A web front end, a controller and three processors in their own processes; the job is
/// uploaded through the REST API; a processor and then the controller are killed (SIGKILL) in
/// the middle of the job, and a new controller takes over. The job completes with the same
/// pixels, the front end sees it done and serves the result, and no message is left anywhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn azurite_processes_killed_mid_job_lose_nothing() {
    let env = azurite().await;
    for role in ["web", "controller", "processor"] {
        require_role(role);
    }
    let library = env.library().await;
    let port = crate::support::free_port().to_string();
    let _web = spawn_role("web", &[("TESSERA_WEB__PORT", port.as_str())]);
    let one = [("TESSERA_PROCESSOR__PROCESSORS", "1")];
    let mut controller = spawn_role("controller", &[]);
    let mut processors: Vec<_> = (0..3)
        .map(|i| {
            let id = format!("p{i}");
            spawn_role(
                "processor",
                &[one[0], ("TESSERA_PROCESSOR__ID", id.as_str())],
            )
        })
        .collect();

    // Heavy enough that the kills land while slices are still being rendered.
    let job = Job {
        cells: 48,
        tile_size: 64,
        tile_height: 64,
        slices: 48,
        // The form's default: transparent tiles over the background chosen to suit the photo.
        options: RenderOptions {
            background: Some(tessera_engine::TileBackground::Auto),
            ..RenderOptions::default()
        },
    };
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    wait_for_web(&client, &base).await;
    let form = reqwest::multipart::Form::new()
        .part(
            "image",
            reqwest::multipart::Part::bytes(target_bytes())
                .file_name("astronaut.png")
                .mime_str("image/png")
                .unwrap(),
        )
        .text("library", library.id.clone())
        .text("tile_size", job.tile_size.to_string())
        .text("cells", job.cells.to_string())
        .text("slices", job.slices.to_string())
        .text("repeat_radius", job.options.repeat_radius.to_string());
    let id: Uuid = crate::support::queued_at(&client, &base, form)
        .await
        .parse()
        .unwrap();

    let record = wait_until(&env, id, "no slice before the first kill", |n| n >= 1).await;
    assert!(!record.state.is_final());
    // SIGKILL: the process gets no chance to release its messages.
    processors[0].kill();

    let record = wait_until(&env, id, "too few slices before the second kill", |n| {
        n >= 12
    })
    .await;
    assert!(!record.state.is_final());
    controller.kill();
    let _successor = spawn_role("controller", &[]);

    let record = finished(&env.platform, id).await;
    assert_eq!(record.state, JobState::Done, "{record:#?}");
    assert_eq!(record.slices.len(), 48);
    assert_same_pixels(
        &result_pixels(&env.platform, id).await,
        &local_render(&job),
        "after the kills",
    );

    // The front end agrees and serves the same bytes as storage holds.
    let view: serde_json::Value = client
        .get(format!("{base}/api/v1/jobs/{id}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(view["state"], "done", "{view}");
    let served = client
        .get(format!("{base}/api/v1/jobs/{id}/result"))
        .send()
        .await
        .unwrap();
    assert_eq!(served.status(), 200);
    let served = served.bytes().await.unwrap();
    let stored = env
        .blobs
        .get(record.result_blob.as_deref().unwrap())
        .await
        .unwrap();
    assert!(
        served == stored,
        "the served result differs from the stored one"
    );

    // The front end takes the ImageResponse; then nothing may be left on any queue, poison
    // queues included.
    wait_for(Duration::from_secs(60), async || {
        let depths = env.depths().await;
        let announced = env.platform.jobs().get(id).await.unwrap().announced;
        if announced && depths.values().all(|&n| n == 0) {
            Ok(())
        } else {
            Err(format!("announced {announced}, messages left: {depths:?}"))
        }
    })
    .await
}

/// The workers' library cache keeps to its memory budget: past it, the least recently used
/// version goes (with its resized tiles); the version in use stays whatever its size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_library_cache_keeps_to_its_memory_budget() {
    let dir = tempfile::tempdir().unwrap();
    let storage = EmbeddedStorage::open(dir.path()).unwrap();
    let platform = Platform::new(
        storage.queues(),
        storage.blobs(),
        tessera_shared::runtime::Nudges::local(),
    );
    let mut refs = Vec::new();
    for name in ["one", "two"] {
        let (record, _) = tessera_workers::import_library(
            &platform,
            &fixtures().join("tiles"),
            name,
            tessera_engine::ImportOptions::default(),
            &Publication::operator(false),
        )
        .await
        .unwrap();
        refs.push(record.reference());
    }
    let (one, two) = (&refs[0], &refs[1]);
    let roomy = tessera_workers::LibraryCache::new(platform.libraries(), 4, 1 << 30);
    let size = roomy.get(one).await.unwrap().memory_bytes();
    assert!(
        size > 41 * 64 * 64 * 3,
        "{size} bytes for 41 tiles of 64 px"
    );
    roomy.get(two).await.unwrap();
    assert_eq!(roomy.held(), vec![one.clone(), two.clone()]);

    // Room for one version and a half: each load lets the other go.
    let tight = tessera_workers::LibraryCache::new(platform.libraries(), 4, size * 3 / 2);
    tight
        .tiles(one, tessera_engine::TileSize::square(16), None)
        .await
        .unwrap();
    assert_eq!(tight.held(), vec![one.clone()]);
    tight.get(two).await.unwrap();
    assert_eq!(tight.held(), vec![two.clone()]);
    tight
        .tiles(one, tessera_engine::TileSize::square(16), None)
        .await
        .unwrap();
    assert_eq!(tight.held(), vec![one.clone()]);
    // No room at all: the version in use is still kept.
    let none = tessera_workers::LibraryCache::new(platform.libraries(), 4, 0);
    none.get(two).await.unwrap();
    assert_eq!(none.held(), vec![two.clone()]);
}
