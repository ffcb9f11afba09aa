//! Time and peak memory of the job viewer's images on a large mosaic.
//!
//! `cargo run --release --example viewer_bench -- make DIR [SIDE]` stitches a SIDE x SIDE mosaic
//! (default 16384) of 16 px emoji tiles into embedded storage at DIR, as a done job; then
//! `... -- preview DIR`, `... -- tile DIR LEVEL X Y` and `... -- tile-unindexed DIR LEVEL X Y`
//! each start the web app on that storage in a fresh process and time one cold request, with
//! the process's peak resident memory over the request (VmHWM, reset just before it).

// A benchmark tool: it reports on stdout and stderr, and stops at the first error.
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use bytes::Bytes;
use tessera_engine::FragmentEncoder;
use tessera_shared::jobs::{JobParams, JobRecord, JobState, OutputSize};
use tessera_shared::keys::BlobKey;
use tessera_shared::messages::LibraryRef;
use tessera_shared::platform::Platform;
use tessera_shared::runtime::Nudges;
use tessera_shared::spec::JobSpec;
use tessera_shared::storage::PutMode;
use tessera_shared::storage::embedded::EmbeddedStorage;
use tessera_web::{Application, WebSettings};
use uuid::Uuid;

const SLICES: u32 = 8;
const CELL: u32 = 16;

fn tiles() -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/engine/tiles");
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "png"))
        .collect();
    names.sort();
    names
        .iter()
        .map(|p| {
            let img = image::open(p).unwrap().to_rgb8();
            image::imageops::resize(&img, CELL, CELL, image::imageops::FilterType::Triangle)
                .into_raw()
        })
        .collect()
}

fn fragment(tiles: &[Vec<u8>], side: u32, rows: std::ops::Range<u32>) -> Vec<u8> {
    let mut encoder = FragmentEncoder::new(side, 1 << 24).unwrap();
    let mut row = vec![0u8; side as usize * 3];
    for y in rows {
        for cx in 0..side / CELL {
            let mut h = u64::from(cx).wrapping_mul(0x9e37_79b9_7f4a_7c15)
                ^ u64::from(y / CELL).wrapping_mul(0xc2b2_ae3d);
            h ^= h >> 29;
            let tile = &tiles[(h % tiles.len() as u64) as usize];
            let at = ((y % CELL) * CELL * 3) as usize;
            // Each cell's tile tinted by its own amount, as blending toward the target does,
            // so the image compresses like a mosaic rather than like a repeated pattern.
            let tint = [
                (h >> 32) as u8 % 48,
                (h >> 40) as u8 % 48,
                (h >> 48) as u8 % 48,
            ];
            let cell = &mut row[(cx * CELL * 3) as usize..((cx + 1) * CELL * 3) as usize];
            for (i, (out, v)) in cell.iter_mut().zip(&tile[at..]).enumerate() {
                *out = v.saturating_add(tint[i % 3]);
            }
        }
        encoder.write_rows(&row).unwrap();
    }
    encoder.finish().unwrap()
}

fn storage(dir: &Path) -> Platform {
    let storage = EmbeddedStorage::open(dir).unwrap();
    Platform::new(storage.queues(), storage.blobs(), Nudges::local())
}

fn job_id(dir: &Path) -> Uuid {
    Uuid::parse_str(std::fs::read_to_string(dir.join("job")).unwrap().trim()).unwrap()
}

async fn make(dir: &Path, side: u32) {
    std::fs::create_dir_all(dir).unwrap();
    let platform = storage(dir);
    platform.ensure_queues().await.unwrap();
    let job = Uuid::new_v4();
    let tiles = tiles();
    let started = Instant::now();
    let per = side.div_ceil(SLICES);
    let fragments: Vec<Vec<u8>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..SLICES)
            .map(|seq| {
                let tiles = &tiles;
                s.spawn(move || fragment(tiles, side, seq * per..((seq + 1) * per).min(side)))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut keys = Vec::new();
    for (seq, bytes) in fragments.into_iter().enumerate() {
        let key = BlobKey::SliceOutput {
            job,
            seq: seq as u32,
        }
        .path();
        let size = bytes.len() as u64;
        platform
            .blobs
            .put(&key, Bytes::from(bytes), PutMode::Overwrite)
            .await
            .unwrap();
        keys.push((key, size));
    }
    let rendered = started.elapsed();
    let output = BlobKey::ImageOutput { job }.path();
    let started = Instant::now();
    let meta = tessera_workers::stitch_png(
        platform.blobs.clone(),
        &keys,
        &output,
        (side, side),
        300,
        8 << 20,
    )
    .await
    .unwrap();
    let params = JobParams {
        spec: JobSpec::cells(
            LibraryRef {
                id: "emoji".into(),
                version: 1,
            },
            CELL,
            side / CELL,
            SLICES,
        ),
        input_name: "bench".into(),
    };
    let mut record = JobRecord::new(job, Uuid::new_v4(), params);
    record.state = JobState::Done;
    record.result_blob = Some(output);
    record.output = Some(OutputSize {
        width: side,
        height: side,
        cols: side / CELL,
        rows: side / CELL,
    });
    platform.jobs().create(&record).await.unwrap();
    std::fs::write(dir.join("job"), job.to_string()).unwrap();
    println!(
        "made a {side} x {side} mosaic: fragments in {:.1} s, stitched in {:.1} s, {} MB PNG, job {job}",
        rendered.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        meta.size >> 20
    );
}

fn peak_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

async fn request(dir: &Path, path: &str, what: &str) {
    let platform = storage(dir);
    let app = Application::build(
        platform,
        WebSettings {
            port: 0,
            workers: 2,
            ..WebSettings::default()
        },
    )
    .await
    .unwrap();
    let url = format!("http://127.0.0.1:{}{path}", app.port());
    tokio::spawn(app.run_until_stopped());
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    // Warm the connection and the server's threads on a cheap request first.
    client
        .get(url.replace(path, "/healthz"))
        .send()
        .await
        .unwrap();
    let before = rss_kib();
    // Resets the peak resident size to the current one.
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let started = Instant::now();
    let res = client.get(&url).send().await.unwrap();
    let status = res.status();
    let body = res.bytes().await.unwrap();
    let took = started.elapsed();
    let peak = peak_kib();
    println!(
        "{what}: {status}, {} KB, {:.0} ms, resident {} MB before, peak {} MB (+{} MB)",
        body.len() >> 10,
        took.as_secs_f64() * 1000.0,
        before >> 10,
        peak >> 10,
        peak.saturating_sub(before) >> 10
    );
    let started = Instant::now();
    let again = client.get(&url).send().await.unwrap();
    assert_eq!(again.status(), status);
    again.bytes().await.unwrap();
    println!(
        "{what}, again (kept as a blob): {:.0} ms",
        started.elapsed().as_secs_f64() * 1000.0
    );
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = PathBuf::from(args.get(1).expect("a storage directory"));
    let num = |i: usize| args[i].parse::<u32>().unwrap();
    match args[0].as_str() {
        "make" => make(&dir, args.get(2).map_or(16384, |s| s.parse().unwrap())).await,
        "preview" => {
            let job = job_id(&dir);
            request(&dir, &format!("/api/v1/jobs/{job}/preview"), "preview").await
        }
        kind @ ("tile" | "tile-unindexed") => {
            let job = job_id(&dir);
            if kind == "tile-unindexed" {
                let platform = storage(&dir);
                let output = BlobKey::ImageOutput { job }.path();
                let _ = platform
                    .blobs
                    .delete(&BlobKey::SeekIndex { output }.path())
                    .await;
            }
            let (level, x, y) = (num(2), num(3), num(4));
            let path = format!("/api/v1/jobs/{job}/tiles/{level}/{x}/{y}");
            request(&dir, &path, &format!("{kind} {level}/{x}/{y}")).await
        }
        other => panic!("unknown command {other}: make, preview, tile, tile-unindexed"),
    }
}
