//! Quality of any mosaic image (ours or another tool's), as `shared/tools/mosaic_metrics.py`
//! measures it: `cargo run --release -p tessera-engine --example metrics -- TARGET MOSAIC COLS ROWS`.

// A benchmark tool: it reports on stdout and stderr, and stops at the first error.
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [target, mosaic, cols, rows] = args.as_slice() else {
        return Err("usage: metrics TARGET MOSAIC COLS ROWS".into());
    };
    let target = tessera_engine::decode_target(&std::fs::read(target)?, [255, 255, 255])?;
    let q = tessera_engine::evaluate_file(&target, mosaic.as_ref(), cols.parse()?, rows.parse()?)?;
    println!("{q}");
    Ok(())
}
