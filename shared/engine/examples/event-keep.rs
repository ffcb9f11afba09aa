//! An event's mosaic kept up as photos arrive: the first `BATCH` photos of `PHOTOS` (in a fixed
//! order of their own) make the first mosaic, and each further batch makes the next one from the last
//! (`Plan::make_keeping`), every photo at least once, on a grid of about `CELLS` cells. Prints
//! per batch the planning time, the cells that changed and the mean CIEDE2000 on the cell grid;
//! every `--fresh-every` batches, a fresh mosaic of the same photos for comparison.
//! `cargo run --release -p tessera-engine --example event-keep -- TARGET PHOTOS_INDEX
//! [--photos 2000] [--batch 50] [--cells 20000] [--fresh-every 10]`

// A benchmark tool: it reports on stdout, and stops at the first error.
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]

#[path = "common/rss.rs"]
mod rss;
use rss::peak_rss_kb;

use std::collections::HashMap;
use std::time::Instant;

use tessera_engine::{
    Grid, Library, Plan, PlanOptions, TileCache, TileSize, decode_target, plan_quality,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(target_path), Some(index)) = (args.first(), args.get(1)) else {
        return Err(
            "usage: event-keep TARGET PHOTOS_INDEX [--photos N] [--batch N] \
                    [--cells N] [--fresh-every N]"
                .into(),
        );
    };
    let flag = |name: &str, default: usize| -> usize {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1)?.parse().ok())
            .unwrap_or(default)
    };
    let (photos, batch) = (flag("--photos", 2000), flag("--batch", 50));
    let (cells, fresh_every) = (flag("--cells", 20_000), flag("--fresh-every", 10));
    let all = Library::open_index(std::path::Path::new(index))?;
    let target = decode_target(&std::fs::read(target_path)?, all.background())?;
    if all.len() < photos {
        return Err(format!("the index has {} photos, not {photos}", all.len()).into());
    }
    // Photos arrive in an order of their own, not by name (a photo's crops are named alike).
    let mut arrival: Vec<String> = all.names().to_vec();
    arrival.sort_by_key(|n| fnv(n));
    let aspect = f64::from(target.width()) / f64::from(target.height());
    let across = (cells as f64 * aspect).sqrt().round() as u32;
    let opts = PlanOptions {
        tile_size: TileSize::square(16),
        grid: Grid::Cells(across),
        min_uses: 1,
        ..PlanOptions::default()
    };
    println!("batch photos plan_s changed_cells cells de00_mean fresh_de00_mean fresh_plan_s");
    let mut earlier: Option<(Vec<String>, Library)> = None;
    let mut times = Vec::new();
    for (b, arrived) in (batch..=photos).step_by(batch).enumerate() {
        let left_out: Vec<String> = arrival[arrived..].to_vec();
        let (library, _) = all.edited(&[], &left_out)?;
        let started = Instant::now();
        let plan = match &earlier {
            None => Plan::make(&target, &library, &opts)?,
            Some((was, _)) => {
                let index: HashMap<&str, u32> = library
                    .names()
                    .iter()
                    .enumerate()
                    .map(|(i, n)| (n.as_str(), i as u32))
                    .collect();
                let cells: Vec<u32> = was
                    .iter()
                    .map(|n| index.get(n.as_str()).copied().unwrap_or(u32::MAX))
                    .collect();
                Plan::make_keeping(&target, &library, &opts, &cells, &mut |_, _| Ok(()))?
            }
        };
        let took = started.elapsed().as_secs_f64();
        let now: Vec<String> = plan
            .tiles()
            .iter()
            .map(|&t| library.name(t).to_string())
            .collect();
        let changed = earlier.as_ref().map_or(now.len(), |(was, _)| {
            was.iter().zip(&now).filter(|(a, b)| a != b).count()
        });
        if earlier.is_some() {
            times.push(took);
        }
        let cache = TileCache::new(&library, opts.tile_size);
        let de = plan_quality(&plan, &cache, &target)?.de00_mean;
        let fresh = if (b + 1) % fresh_every.max(1) == 0 {
            let started = Instant::now();
            let plan = Plan::make(&target, &library, &opts)?;
            let took = started.elapsed().as_secs_f64();
            let de = plan_quality(&plan, &cache, &target)?.de00_mean;
            format!("{de:.3} {took:.3}")
        } else {
            "- -".into()
        };
        println!(
            "{} {arrived} {took:.3} {changed} {} {de:.3} {fresh}",
            b + 1,
            now.len()
        );
        earlier = Some((now, library));
    }
    times.sort_by(f64::total_cmp);
    let median = times.get(times.len() / 2).copied().unwrap_or(0.0);
    println!(
        "median_keep_plan_s={median:.3} peak_rss_mb={}",
        peak_rss_kb() / 1000
    );
    Ok(())
}

/// FNV-1a of `text`: an arrival order that is the same on every run.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}
