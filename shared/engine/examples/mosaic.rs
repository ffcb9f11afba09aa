//! A mosaic from the engine alone, with timings per stage and the quality metric, for
//! benchmarks: `cargo run --release -p tessera-engine --example mosaic -- TARGET LIBRARY OUT
//! [cells|per-pixel] [tile-size] [radius] [blend]`, matching options from the environment.
//! The tile size is `16` or `24x18`; a folder or .zip library is imported at the tile size's
//! shape (SHAPE=4:3 to say it, the same), and KEPT=1 reports the mean share of each photo's
//! area that the crop keeps.

// A benchmark tool: it reports on stdout and stderr, and stops at the first error.
#![allow(clippy::print_stdout, clippy::print_stderr, clippy::unwrap_used)]

use std::time::Instant;

use tessera_engine::*;

/// A matching option from the environment (STRUCTURE_WEIGHT, LIGHTNESS_WEIGHT, GRADIENT_WEIGHT,
/// REFINE_PASSES, CANDIDATES, MAX_USES; BACKGROUND=auto or RRGGBB for transparent tiles; FLIP=1 and ROTATE=1 allow tile transforms), for tuning.
fn env<T: std::str::FromStr>(name: &str) -> Result<Option<T>, String> {
    std::env::var(name)
        .ok()
        .map(|v| v.parse().map_err(|_| format!("{name}={v} does not parse")))
        .transpose()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        return Err(
            "usage: mosaic TARGET LIBRARY OUT [cells|per-pixel] [tile-size] [radius] [blend]"
                .into(),
        );
    }
    let grid = match args.get(3).map(String::as_str) {
        Some("per-pixel") => Grid::PerPixel,
        Some(n) => Grid::Cells(n.parse()?),
        None => Grid::Cells(128),
    };
    let defaults = PlanOptions::default();
    let opts = PlanOptions {
        grid,
        tile_size: args
            .get(4)
            .map(|s| TileSize::parse(s))
            .transpose()?
            .unwrap_or(TileSize::square(16)),
        repeat_radius: args.get(5).map(|s| s.parse()).transpose()?.unwrap_or(1),
        blend: args.get(6).map(|s| s.parse()).transpose()?.unwrap_or(0),
        max_uses: env("MAX_USES")?,
        structure_weight: env("STRUCTURE_WEIGHT")?.unwrap_or(defaults.structure_weight),
        lightness_weight: env("LIGHTNESS_WEIGHT")?.unwrap_or(defaults.lightness_weight),
        gradient_weight: env("GRADIENT_WEIGHT")?.unwrap_or(defaults.gradient_weight),
        refine_passes: env("REFINE_PASSES")?.unwrap_or(defaults.refine_passes),
        candidates: env("CANDIDATES")?.unwrap_or(defaults.candidates),
        flip: env::<u8>("FLIP")?.is_some_and(|v| v != 0),
        rotate: env::<u8>("ROTATE")?.is_some_and(|v| v != 0),
        ..defaults
    };
    let t0 = Instant::now();
    let shape = env::<String>("SHAPE")?
        .map(|s| TileShape::parse(&s))
        .transpose()?
        .unwrap_or(opts.tile_size.shape());
    let import = ImportOptions {
        shape,
        ..ImportOptions::default()
    };
    let (library, report) = Library::open(args[1].as_ref(), &import)?;
    let t_lib = t0.elapsed();
    if let Some(r) = report {
        eprintln!(
            "imported {} tiles, skipped {}, duplicates {}",
            r.imported,
            r.skipped.len(),
            r.duplicates.len()
        );
    }
    let target = decode_target(&std::fs::read(&args[0])?, [255, 255, 255])?;
    let t1 = Instant::now();
    let background = env::<String>("BACKGROUND")?
        .map(|s| TileBackground::parse(&s))
        .transpose()?
        .unwrap_or_default()
        .resolve(&target, &library);
    if let Some(bg) = background {
        eprintln!("tiles over #{}", hex_colour(bg));
    }
    let library = lay_over(&library, background);
    let plan = Plan::make(&target, &library, &opts)?;
    let t_plan = t1.elapsed();
    let t2 = Instant::now();
    let out = std::path::Path::new(&args[2]);
    let mut sink = file_sink(
        out,
        (plan.width(), plan.total_height()),
        OutputFormat::from_path(out, 90)?,
        300,
    )?;
    let mut cells = MosaicCells::new(
        plan.width(),
        plan.total_height(),
        plan.cols(),
        plan.total_rows(),
    )?;
    let measure = std::env::var("MEASURE").is_ok_and(|v| v == "1");
    let cache = TileCache::new(&library, plan.tile_size());
    if measure {
        let mut tee = TeeSink(vec![Box::new(&mut cells), Box::new(&mut sink)]);
        render_to_sink(&plan, &cache, &mut tee, 16, &|_, _| {})?;
        tee.finish()?;
    } else {
        render_to_sink(&plan, &cache, &mut sink, 16, &|_, _| {})?;
        sink.finish()?;
    }
    let t_render = t2.elapsed();
    if std::env::var("KEPT").is_ok_and(|v| v == "1") {
        let (mean, n) = kept(args[1].as_ref(), library.shape())?;
        println!(
            "kept={mean:.4} of each photo's area at {} ({n} photos)",
            library.shape()
        );
    }
    eprintln!(
        "library {:.3}s plan {:.3}s render {:.3}s total {:.3}s ({}x{} cells, {}x{} px)",
        t_lib.as_secs_f64(),
        t_plan.as_secs_f64(),
        t_render.as_secs_f64(),
        t0.elapsed().as_secs_f64(),
        plan.cols(),
        plan.total_rows(),
        plan.width(),
        plan.total_height()
    );
    if measure {
        println!("{}", cells.quality(&target)?);
    }
    Ok(())
}

/// Mean share of each image's area (as displayed: EXIF orientation applied) that a centre crop
/// of `shape` keeps, over the images of a folder, and how many there are.
fn kept(
    folder: &std::path::Path,
    shape: TileShape,
) -> Result<(f64, usize), Box<dyn std::error::Error>> {
    use image::ImageDecoder;
    let mut shares = Vec::new();
    let mut dirs = vec![folder.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let Ok(reader) = image::ImageReader::open(&path).and_then(|r| r.with_guessed_format())
            else {
                continue;
            };
            let Ok(mut decoder) = reader.into_decoder() else {
                continue;
            };
            let (mut w, mut h) = decoder.dimensions();
            use image::metadata::Orientation::*;
            if matches!(
                decoder.orientation(),
                Ok(Rotate90 | Rotate270 | Rotate90FlipH | Rotate270FlipH)
            ) {
                (w, h) = (h, w);
            }
            shares.push(shape.kept(w as usize, h as usize));
        }
    }
    let n = shares.len().max(1) as f64;
    Ok((shares.iter().sum::<f64>() / n, shares.len()))
}
