//! `tessera bench queues`: the queue runtime's benchmark (and `bench preview`, `bench decode`:
//! a photo's preview and its decode with and without a colour profile).
//!
//! Measures, on the embedded backend or on Azurite:
//! - pickup latency, send to handler start, for an idle listener in another process (this
//!   executable started again with a hidden flag), with nudges and without them;
//! - throughput send -> receive -> handler -> delete with 1, 4 and 16 handlers;
//! - storage transactions of an idle listener over a window (60 s by default), extrapolated to
//!   an hour with its (seeded) back-off schedule;
//! - storage transactions per processed message with full batches.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};
use tessera_azure::{AzureOptions, AzureStorage};
use tessera_shared::accounting::{Accounting, Op, Snapshot};
use tessera_shared::messages::{Envelope, Message, QueueName};
use tessera_shared::queue::Queue;
use tessera_shared::runtime::backoff::{Backoff, polls_within};
use tessera_shared::runtime::{Context, Listener, ListenerSettings, NudgeSettings, Nudges};
use tessera_shared::storage::embedded::EmbeddedStorage;
use tessera_shared::storage::{BlobStore, QueueStore};
use tokio::io::{AsyncBufReadExt, BufReader};
use uuid::Uuid;

/// Benchmarks that print figures.
#[derive(Debug, clap::Subcommand)]
pub enum BenchCommand {
    /// The queue runtime: pickup latency, throughput, transactions.
    Queues(QueuesBenchArgs),
    /// The preview a page shows before a job (`POST /api/v1/previews`): its time for a photo.
    Preview(PreviewBenchArgs),
    /// Colour management's cost: a JPEG decoded with an ICC profile and without one.
    Decode(DecodeBenchArgs),
}

#[derive(Debug, clap::Args)]
pub struct DecodeBenchArgs {
    /// The photo: a JPEG (a 12-megapixel one, say). Its own profile is replaced.
    pub photo: PathBuf,
    /// The ICC profile to tag it with.
    #[arg(long, default_value = "tests/fixtures/photos/icc/display-p3.icc")]
    pub icc: PathBuf,
    /// Decodes of each; the medians are reported.
    #[arg(long, default_value_t = 9)]
    pub runs: usize,
}

#[derive(Debug, clap::Args)]
pub struct PreviewBenchArgs {
    /// The photo (a 12-megapixel JPEG, say).
    pub target: PathBuf,
    /// The tiles: a folder or .zip of images, or an index (`tessera library index`).
    #[arg(long, short)]
    pub library: PathBuf,
    /// Previews made; the median is reported.
    #[arg(long, default_value_t = 9)]
    pub runs: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchBackend {
    Embedded,
    Azurite,
}

#[derive(Debug, clap::Args)]
pub struct QueuesBenchArgs {
    /// Storage to measure: a fresh embedded data directory, or Azurite (TESSERA_AZURE_CONNECTION_STRING
    /// when set, otherwise the one `scripts/azurite.sh start` runs on its default ports).
    #[arg(long, value_enum, default_value = "embedded")]
    pub backend: BenchBackend,
    /// Print one JSON object instead of a report.
    #[arg(long)]
    pub json: bool,
    /// Pickup samples with nudges.
    #[arg(long, default_value_t = 100)]
    pub samples: usize,
    /// Pickup samples without nudges.
    #[arg(long, default_value_t = 30)]
    pub samples_no_nudge: usize,
    /// Longest idle back-off of the listener measured without nudges, in milliseconds (at the
    /// default of 60 s a sample would take half a minute).
    #[arg(long, default_value_t = 1000)]
    pub no_nudge_max_backoff_ms: u64,
    /// Messages per throughput run [default: 20000 embedded, 3000 Azurite].
    #[arg(long)]
    pub messages: Option<usize>,
    /// How long the idle listener is watched, in seconds (at least 60 for the published figure).
    #[arg(long, default_value_t = 60)]
    pub idle_secs: u64,
    /// Internal: run as the listener process of the pickup measurement.
    #[arg(long, hide = true, value_name = "QUEUE")]
    pub listener_child: Option<String>,
    /// Internal: the listener process runs without nudges.
    #[arg(long, hide = true)]
    pub child_no_nudge: bool,
    /// Internal: the embedded data directory of the listener process.
    #[arg(long, hide = true)]
    pub child_dir: Option<PathBuf>,
}

pub fn run(command: BenchCommand) -> anyhow::Result<()> {
    match command {
        BenchCommand::Queues(args) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(run_queues(args)),
        BenchCommand::Preview(args) => run_preview(args),
        BenchCommand::Decode(args) => run_decode(args),
    }
}

/// Decodes `args.photo` as a target, tagged with `args.icc` and with no profile, in turn, and
/// prints the medians and what the conversion to sRGB adds.
fn run_decode(args: DecodeBenchArgs) -> anyhow::Result<()> {
    let bytes = std::fs::read(&args.photo)?;
    let icc = std::fs::read(&args.icc)
        .with_context(|| format!("cannot read the profile {}", args.icc.display()))?;
    let untagged = jpeg_without_profile(&bytes)?;
    let tagged = jpeg_with_profile(&untagged, &icc)?;
    let (mut plain, mut managed) = (Vec::new(), Vec::new());
    let mut size = (0, 0);
    for _ in 0..args.runs.max(1) {
        for (input, times) in [(&untagged, &mut plain), (&tagged, &mut managed)] {
            let started = Instant::now();
            let img = tessera_engine::decode_target(input, [255, 255, 255])?;
            times.push(started.elapsed().as_secs_f64());
            size = img.dimensions();
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (plain, managed) = (median(&mut plain), median(&mut managed));
    println!(
        "{} ({} x {} px, {:.1} megapixels), {} runs each",
        args.photo.display(),
        size.0,
        size.1,
        f64::from(size.0) * f64::from(size.1) / 1e6,
        args.runs.max(1)
    );
    println!("median decode, no profile:    {plain:.3} s");
    println!(
        "median decode, {}: {managed:.3} s",
        args.icc.file_name().unwrap_or_default().to_string_lossy()
    );
    println!(
        "conversion to sRGB: {:.3} s, {:.1}% of the decode",
        managed - plain,
        100.0 * (managed - plain) / plain
    );
    Ok(())
}

/// The JPEG's segments up to its first scan, without any ICC profile (APP2 `ICC_PROFILE`).
fn jpeg_without_profile(bytes: &[u8]) -> anyhow::Result<Vec<u8>> {
    if !bytes.starts_with(&[0xFF, 0xD8]) {
        bail!("not a JPEG");
    }
    let mut out = bytes[..2].to_vec();
    let mut i = 2;
    while i + 4 <= bytes.len() && bytes[i] == 0xFF && bytes[i + 1] != 0xDA {
        let len = usize::from(u16::from_be_bytes([bytes[i + 2], bytes[i + 3]]));
        let end = (i + 2 + len).min(bytes.len());
        let icc = bytes[i + 1] == 0xE2 && bytes[i + 4..end].starts_with(b"ICC_PROFILE\0");
        if !icc {
            out.extend_from_slice(&bytes[i..end]);
        }
        i = end;
    }
    out.extend_from_slice(&bytes[i..]);
    Ok(out)
}

/// The JPEG with `icc` in APP2 segments right after its start (one segment holds 65,519 bytes).
fn jpeg_with_profile(bytes: &[u8], icc: &[u8]) -> anyhow::Result<Vec<u8>> {
    let chunks: Vec<&[u8]> = icc.chunks(65_519).collect();
    if chunks.len() > 255 {
        bail!("the profile is too large for a JPEG");
    }
    let mut out = bytes[..2].to_vec();
    for (n, chunk) in chunks.iter().enumerate() {
        out.extend_from_slice(&[0xFF, 0xE2]);
        out.extend_from_slice(&((chunk.len() + 16) as u16).to_be_bytes());
        out.extend_from_slice(b"ICC_PROFILE\0");
        out.extend_from_slice(&[n as u8 + 1, chunks.len() as u8]);
        out.extend_from_slice(chunk);
    }
    out.extend_from_slice(&bytes[2..]);
    Ok(out)
}

/// Makes the preview of a default job (the service's defaults: auto cells, 16 px tiles) of
/// `args.target` `args.runs` times, and prints each time and the median, with the decode's.
fn run_preview(args: PreviewBenchArgs) -> anyhow::Result<()> {
    use tessera_shared::spec::{Defaults, JobLimits, JobSpec};
    let bytes = std::fs::read(&args.target)?;
    let library = if args.library.is_file()
        && !args
            .library
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("zip"))
    {
        tessera_engine::Library::from_bytes(&std::fs::read(&args.library)?)?
    } else {
        tessera_engine::Library::import(&args.library, &tessera_engine::ImportOptions::default())?.0
    };
    let defaults = Defaults {
        library: "bench".into(),
        slices: 1,
    };
    let spec = JobSpec::from_fields(|_| None, &defaults)?;
    let limits = JobLimits::default();
    let mut totals = Vec::new();
    let mut decodes = Vec::new();
    let mut shown = None;
    for _ in 0..args.runs.max(1) {
        let started = Instant::now();
        let decoded = tessera_engine::decode_target(&bytes, library.background())?;
        decodes.push(started.elapsed().as_secs_f64());
        drop(decoded);
        let started = Instant::now();
        let sketch =
            tessera_web::imaging::draft_mosaic::sketch(&bytes, &spec, &library, &limits, |_| true)
                .map_err(|e| anyhow::anyhow!("{}: {}", e.code, e.message))?;
        totals.push(started.elapsed().as_secs_f64());
        shown = Some((sketch.width, sketch.height, sketch.cols, sketch.rows));
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (w, h, cols, rows) = shown.unwrap_or_default();
    println!(
        "preview of {} ({} tiles): {w} x {h} px, {cols} x {rows} cells; times (s): {}",
        args.target.display(),
        library.len(),
        totals
            .iter()
            .map(|t| format!("{t:.3}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!(
        "median {:.3} s, of which decoding the photo {:.3} s",
        median(&mut totals),
        median(&mut decodes)
    );
    Ok(())
}

/// The benchmark's message: when it was sent, on the wall clock both processes share.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Probe {
    n: u64,
    sent_unix_ns: u64,
}

impl Message for Probe {
    const QUEUE: QueueName = QueueName::SliceRequest;
    const KIND: &'static str = "BenchProbe";
}

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

fn probe(n: u64) -> Envelope<Probe> {
    Envelope::new(
        Uuid::nil(),
        Probe {
            n,
            sent_unix_ns: unix_ns(),
        },
    )
}

fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", &Uuid::new_v4().simple().to_string()[..10])
}

/// The storage under test, and how a listener process reaches it.
struct Backend {
    queues: Arc<dyn QueueStore>,
    blobs: Arc<dyn BlobStore>,
    /// Arguments and environment that give a child process the same storage.
    child_args: Vec<String>,
    child_env: Vec<(String, String)>,
    label: String,
    cleanup: Cleanup,
}

enum Cleanup {
    Dir(PathBuf),
    Nothing,
}

impl Backend {
    async fn open(kind: BenchBackend) -> anyhow::Result<Backend> {
        match kind {
            BenchBackend::Embedded => {
                let dir = std::env::temp_dir().join(unique("tessera-bench"));
                let storage = EmbeddedStorage::open(&dir)?;
                Ok(Backend {
                    queues: storage.queues(),
                    blobs: storage.blobs(),
                    child_args: vec!["--child-dir".into(), dir.display().to_string()],
                    child_env: Vec::new(),
                    label: "embedded".into(),
                    cleanup: Cleanup::Dir(dir),
                })
            }
            BenchBackend::Azurite => {
                // The Azurite `scripts/azurite.sh start` runs, or the account the environment names.
                let (conn, label) = match std::env::var("TESSERA_AZURE_CONNECTION_STRING") {
                    Ok(conn) if !conn.trim().is_empty() => (
                        conn,
                        "azurite (TESSERA_AZURE_CONNECTION_STRING)".to_string(),
                    ),
                    _ => (
                        "UseDevelopmentStorage=true".to_string(),
                        "azurite (scripts/azurite.sh)".to_string(),
                    ),
                };
                let storage = AzureStorage::from_connection_string(&conn, AzureOptions::default())?;
                if let Err(e) = storage.queues().list_queues().await {
                    bail!(
                        "no Azurite answers ({e}): start one with `scripts/azurite.sh start`, \
                         or name an account in TESSERA_AZURE_CONNECTION_STRING"
                    );
                }
                Ok(Backend {
                    queues: storage.queues(),
                    blobs: storage.blobs(),
                    child_args: Vec::new(),
                    child_env: vec![("TESSERA_AZURE_CONNECTION_STRING".into(), conn)],
                    label,
                    cleanup: Cleanup::Nothing,
                })
            }
        }
    }

    async fn close(self) {
        match self.cleanup {
            Cleanup::Dir(dir) => {
                let _ = tokio::fs::remove_dir_all(dir).await;
            }
            Cleanup::Nothing => {}
        }
    }
}

/// The figures, as `--json` prints them.
#[derive(Debug, Serialize)]
pub struct QueuesReport {
    pub backend: String,
    pub pickup_p50_ms: f64,
    pub pickup_p99_ms: f64,
    pub pickup_p50_ms_no_nudge: f64,
    pub pickup_p99_ms_no_nudge: f64,
    pub no_nudge_max_backoff_ms: u64,
    pub pickup_samples: usize,
    pub throughput_msgs_per_s: f64,
    pub throughput_by_handlers: Vec<(usize, f64)>,
    pub idle_tx_per_listener_hour: f64,
    pub idle_window_s: u64,
    pub idle_tx_in_window: u64,
    pub idle_tx_by_op: std::collections::BTreeMap<Op, u64>,
    pub tx_per_message: f64,
    pub tx_per_message_by_op: std::collections::BTreeMap<Op, f64>,
}

async fn run_queues(args: QueuesBenchArgs) -> anyhow::Result<()> {
    if let Some(queue) = &args.listener_child {
        return listener_child(&args, queue).await;
    }
    let backend = Backend::open(args.backend).await?;
    let result = measure(&args, &backend).await;
    backend.close().await;
    let report = result?;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print_report(&report);
    }
    Ok(())
}

async fn measure(args: &QueuesBenchArgs, backend: &Backend) -> anyhow::Result<QueuesReport> {
    let progress = |what: &str| {
        if !args.json {
            eprintln!("bench queues: {what}");
        }
    };
    progress(&format!("backend {}", backend.label));
    // The idle listener is watched in the background while the rest runs.
    let idle_window = Duration::from_secs(args.idle_secs.max(1));
    let idle = tokio::spawn(idle_transactions(
        backend.queues.clone(),
        backend.blobs.clone(),
        idle_window,
    ));

    progress("pickup with nudges (listener in another process)");
    let nudged = pickup(args, backend, false, args.samples).await?;
    progress("pickup without nudges");
    let plain = pickup(args, backend, true, args.samples_no_nudge).await?;

    let messages = args.messages.unwrap_or(match args.backend {
        BenchBackend::Embedded => 20_000,
        BenchBackend::Azurite => 3_000,
    });
    let mut by_handlers = Vec::new();
    let mut per_message = Snapshot::default();
    for handlers in [1usize, 4, 16] {
        progress(&format!(
            "throughput, {handlers} handler(s), {messages} messages"
        ));
        let (rate, snap) = throughput(backend, handlers, messages).await?;
        by_handlers.push((handlers, rate));
        if handlers == 16 {
            per_message = snap;
        }
    }
    progress(&format!(
        "idle listener, {} s window",
        idle_window.as_secs()
    ));
    let (idle_snapshot, idle_hour) = idle.await??;

    let n = messages as f64;
    Ok(QueuesReport {
        backend: backend.label.clone(),
        pickup_p50_ms: percentile(&nudged, 0.50),
        pickup_p99_ms: percentile(&nudged, 0.99),
        pickup_p50_ms_no_nudge: percentile(&plain, 0.50),
        pickup_p99_ms_no_nudge: percentile(&plain, 0.99),
        no_nudge_max_backoff_ms: args.no_nudge_max_backoff_ms,
        pickup_samples: nudged.len(),
        throughput_msgs_per_s: by_handlers.last().map_or(0.0, |(_, r)| *r),
        throughput_by_handlers: by_handlers,
        idle_tx_per_listener_hour: idle_hour,
        idle_window_s: idle_window.as_secs(),
        idle_tx_in_window: idle_snapshot.total,
        idle_tx_by_op: idle_snapshot.by_op.clone(),
        tx_per_message: per_message.total as f64 / n,
        tx_per_message_by_op: per_message
            .by_op
            .iter()
            .map(|(op, c)| (*op, *c as f64 / n))
            .collect(),
    })
}

fn percentile(samples_ms: &[f64], p: f64) -> f64 {
    if samples_ms.is_empty() {
        return f64::NAN;
    }
    let mut sorted = samples_ms.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((sorted.len() as f64) * p).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// A small deterministic generator for the gaps between pickup samples.
fn next_gap(state: &mut u64, span: Duration) -> Duration {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    span.mul_f64((*state % 10_000) as f64 / 10_000.0)
}

/// Pickup latency (ms) of an idle listener in a child process.
async fn pickup(
    args: &QueuesBenchArgs,
    backend: &Backend,
    no_nudge: bool,
    samples: usize,
) -> anyhow::Result<Vec<f64>> {
    let name = unique("bench-pickup");
    let exe = std::env::current_exe()?;
    let mut command = tokio::process::Command::new(exe);
    command
        .args(["bench", "queues", "--listener-child", &name])
        .args([
            "--no-nudge-max-backoff-ms",
            &args.no_nudge_max_backoff_ms.to_string(),
        ])
        .args(&backend.child_args)
        .envs(backend.child_env.iter().cloned())
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .kill_on_drop(true);
    if no_nudge {
        command.arg("--child-no-nudge");
    }
    let mut child = command.spawn().context("starting the listener process")?;
    let mut lines = BufReader::new(child.stdout.take().expect("piped")).lines();
    let mut next_line = async || -> anyhow::Result<String> {
        match tokio::time::timeout(Duration::from_secs(120), lines.next_line()).await {
            Ok(Ok(Some(line))) => Ok(line),
            Ok(Ok(None)) => bail!("the listener process ended early"),
            Ok(Err(e)) => Err(e.into()),
            Err(_) => bail!("the listener process said nothing for 120 s"),
        }
    };
    let ready = next_line().await?;
    if ready != "ready" {
        bail!("unexpected first line from the listener process: {ready:?}");
    }
    let nudges = Nudges::cross_process(backend.blobs.clone(), NudgeSettings::default());
    let queue =
        Queue::<Probe>::new(backend.queues.clone(), backend.blobs.clone(), nudges).named(&name);
    // Let the listener go idle before the first sample.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut latencies = Vec::with_capacity(samples);
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let span = if no_nudge {
        Duration::from_millis(args.no_nudge_max_backoff_ms.max(1))
    } else {
        Duration::from_millis(200)
    };
    for n in 0..samples as u64 {
        // Idle again: past the listener's first empty polls, at a random point of its back-off.
        tokio::time::sleep(Duration::from_millis(300) + next_gap(&mut rng, span)).await;
        queue.send(&probe(n)).await?;
        let line = next_line().await?;
        let mut parts = line.split_whitespace();
        let (Some("picked"), Some(got), Some(us)) = (parts.next(), parts.next(), parts.next())
        else {
            bail!("unexpected line from the listener process: {line:?}");
        };
        if got.parse::<u64>()? != n {
            bail!("the listener process picked message {got}, expected {n}");
        }
        latencies.push(us.parse::<f64>()? / 1000.0);
    }
    let _ = child.kill().await;
    let _ = backend.queues.delete_queue(&name).await;
    let _ = backend.queues.delete_queue(&format!("{name}-poison")).await;
    Ok(latencies)
}

/// The listener process of the pickup measurement: prints `ready`, then `picked <n> <µs>` per
/// message, the microseconds from its send to its handler's start.
async fn listener_child(args: &QueuesBenchArgs, name: &str) -> anyhow::Result<()> {
    let (queues, blobs) = if let Some(dir) = &args.child_dir {
        let storage = EmbeddedStorage::open(Path::new(dir))?;
        (storage.queues(), storage.blobs())
    } else {
        let conn = std::env::var("TESSERA_AZURE_CONNECTION_STRING")
            .context("the listener process needs --child-dir or TESSERA_AZURE_CONNECTION_STRING")?;
        let storage = AzureStorage::from_connection_string(&conn, AzureOptions::default())?;
        (storage.queues(), storage.blobs())
    };
    let mut settings = ListenerSettings::default();
    let nudges = if args.child_no_nudge {
        settings.max_backoff = Duration::from_millis(args.no_nudge_max_backoff_ms.max(1));
        Nudges::local()
    } else {
        Nudges::cross_process(blobs.clone(), NudgeSettings::default())
    };
    let queue = Queue::<Probe>::new(queues, blobs, nudges).named(name);
    let listener = Listener::new(queue)
        .settings(settings)
        .start(|m: Envelope<Probe>, _ctx: Context| async move {
            let us = unix_ns().saturating_sub(m.body.sent_unix_ns) / 1000;
            println!("picked {} {us}", m.body.n);
            Ok(())
        })
        .await?;
    println!("ready");
    // Runs until the benchmark kills it (or its stdout closes).
    loop {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        let _ = listener.stats();
    }
}

/// Messages per second through send -> receive -> handler -> delete with `handlers` handlers,
/// and the transactions spent.
async fn throughput(
    backend: &Backend,
    handlers: usize,
    messages: usize,
) -> anyhow::Result<(f64, Snapshot)> {
    let accounting = Accounting::new();
    let queues: Arc<dyn QueueStore> = Arc::new(accounting.wrap(backend.queues.clone()));
    let blobs: Arc<dyn BlobStore> = Arc::new(accounting.wrap(backend.blobs.clone()));
    let name = unique("bench-tp");
    let queue = Queue::<Probe>::new(queues, blobs, Nudges::local()).named(&name);
    let done = Arc::new(AtomicU64::new(0));
    let finished = Arc::new(tokio::sync::Notify::new());
    let (d, f) = (done.clone(), finished.clone());
    let total = messages as u64;
    let listener = Listener::new(queue.clone())
        .settings(ListenerSettings {
            batch_size: 32,
            max_concurrency: handlers,
            max_receivers: 2,
            ..ListenerSettings::default()
        })
        .ignore_metadata()
        .start(move |_m: Envelope<Probe>, _ctx: Context| {
            let (d, f) = (d.clone(), f.clone());
            async move {
                if d.fetch_add(1, Ordering::Relaxed) + 1 == total {
                    f.notify_one();
                }
                Ok(())
            }
        })
        .await?;
    let start = Instant::now();
    let senders = 16usize;
    let mut tasks = Vec::new();
    for s in 0..senders {
        let queue = queue.clone();
        tasks.push(tokio::spawn(async move {
            let mut n = s;
            while n < messages {
                queue.send(&probe(n as u64)).await?;
                n += senders;
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    // Handled is not yet deleted: wait for the listener's deletes too.
    tokio::time::timeout(Duration::from_secs(600), finished.notified())
        .await
        .context("throughput run did not finish in 10 minutes")?;
    while listener.stats().processed < total {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let elapsed = start.elapsed();
    listener.shutdown(Duration::from_secs(10)).await;
    let snap = accounting.snapshot();
    let _ = backend.queues.delete_queue(&name).await;
    let _ = backend.queues.delete_queue(&format!("{name}-poison")).await;
    Ok((messages as f64 / elapsed.as_secs_f64(), snap))
}

/// Transactions of one idle listener at default settings (cross-process nudges on) over
/// `window`, and the hour extrapolated with its back-off schedule.
async fn idle_transactions(
    queues: Arc<dyn QueueStore>,
    blobs: Arc<dyn BlobStore>,
    window: Duration,
) -> anyhow::Result<(Snapshot, f64)> {
    const SEED: u64 = 1;
    let accounting = Accounting::new();
    let queues: Arc<dyn QueueStore> = Arc::new(accounting.wrap(queues));
    let blobs: Arc<dyn BlobStore> = Arc::new(accounting.wrap(blobs));
    let nudge_settings = NudgeSettings::default();
    let nudges = Nudges::cross_process(blobs.clone(), nudge_settings);
    let name = unique("bench-idle");
    let queue = Queue::<Probe>::new(queues, blobs, nudges).named(&name);
    let settings = ListenerSettings::default();
    let listener = Listener::new(queue)
        .settings(settings.clone())
        .seed(SEED)
        .start(|_m: Envelope<Probe>, _ctx: Context| async { Ok(()) })
        .await?;
    tokio::time::sleep(window).await;
    let snap = accounting.snapshot();
    listener.shutdown(Duration::from_secs(5)).await;
    // The rest of the hour: the polls the same seeded schedule makes after the window, plus
    // the registration rewrites.
    let hour = Duration::from_secs(3600);
    let (min, max) = (settings.min_backoff, settings.max_backoff);
    let later_polls =
        polls_within(min, max, SEED, hour).saturating_sub(polls_within(min, max, SEED, window));
    let later_refreshes = (hour.as_secs_f64() / nudge_settings.refresh.as_secs_f64()).floor()
        - (window.as_secs_f64() / nudge_settings.refresh.as_secs_f64()).floor();
    let per_hour = snap.total as f64 + later_polls as f64 + later_refreshes;
    Ok((snap, per_hour))
}

fn print_report(r: &QueuesReport) {
    println!("queue benchmark on {}", r.backend);
    println!(
        "pickup, idle listener in another process ({} samples): p50 {:.2} ms, p99 {:.2} ms with a nudge",
        r.pickup_samples, r.pickup_p50_ms, r.pickup_p99_ms
    );
    println!(
        "pickup without nudges (max back-off {} ms): p50 {:.1} ms, p99 {:.1} ms",
        r.no_nudge_max_backoff_ms, r.pickup_p50_ms_no_nudge, r.pickup_p99_ms_no_nudge
    );
    for (handlers, rate) in &r.throughput_by_handlers {
        println!("throughput with {handlers:>2} handler(s): {rate:.0} messages/s");
    }
    let ops: Vec<String> = r
        .tx_per_message_by_op
        .iter()
        .map(|(op, n)| format!("{op} {n:.3}"))
        .collect();
    println!(
        "transactions per message (full batches): {:.3} ({})",
        r.tx_per_message,
        ops.join(", ")
    );
    let ops: Vec<String> = r
        .idle_tx_by_op
        .iter()
        .map(|(op, n)| format!("{op} {n}"))
        .collect();
    println!(
        "idle listener: {} transactions in {} s ({}), {:.0} per listener-hour",
        r.idle_tx_in_window,
        r.idle_window_s,
        ops.join(", "),
        r.idle_tx_per_listener_hour
    );
    let defaults = ListenerSettings::default();
    let mut schedule = Backoff::seeded(defaults.min_backoff, defaults.max_backoff, 1);
    let delays: Vec<String> = (0..12)
        .map(|_| format!("{:.1}", schedule.next_delay().as_secs_f64()))
        .collect();
    println!("idle back-off schedule (s): {} ...", delays.join(", "));
}
