//! What a saved tile index costs once loaded, as the image processors' library cache loads it
//! (`Library::from_vec` on the whole blob): load time, and the bytes held by each part.
//! `cargo run --release -p tessera-engine --example library-memory -- INDEX`

// A benchmark tool: it reports on stdout and stderr, and stops at the first error.
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]

#[path = "common/rss.rs"]
mod rss;
use rss::peak_rss_kb;

use std::time::Instant;

use tessera_engine::Library;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [index] = args.as_slice() else {
        return Err("usage: library-memory INDEX".into());
    };
    let started = Instant::now();
    let bytes = std::fs::read(index)?;
    let read = started.elapsed().as_secs_f64();
    let file = bytes.len();
    let started = Instant::now();
    let library = Library::from_vec(bytes)?;
    let decode = started.elapsed().as_secs_f64();

    let n = library.len();
    let side = library.rendition_size() as usize;
    let renditions = n * side * side * 3;
    let k2 = library.grid() * library.grid();
    let descriptors = n * (1 + k2) * std::mem::size_of::<[f32; 3]>();
    // Each name: its heap bytes and the String itself in the names vector.
    let names: usize = library
        .names()
        .iter()
        .map(|s| s.capacity() + std::mem::size_of::<String>())
        .sum();
    // The planner's k-d tree over the means: a point and an id per tile, about one node (16 bytes)
    // per four tiles.
    let kdtree = n * (std::mem::size_of::<[f32; 3]>() + 4 + 4);
    let held = renditions + descriptors + names;
    let mb = |b: usize| b as f64 / 1e6;
    println!(
        "tiles={n} file_mb={:.1} read_s={read:.3} decode_s={decode:.3} held_mb={:.1} \
         renditions_mb={:.1} descriptors_mb={:.1} names_mb={:.1} kdtree_mb={:.1} peak_rss_mb={}",
        mb(file),
        mb(held),
        mb(renditions),
        mb(descriptors),
        mb(names),
        mb(kdtree),
        peak_rss_kb() / 1000,
    );
    Ok(())
}
