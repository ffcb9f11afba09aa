//! `tessera render`: one mosaic on this machine, from a target image and a tile library (a
//! folder, a .zip or a saved index): plan the whole grid, then render band by band straight into
//! the encoder.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context as _;
use tessera_engine::{
    BandSink, Grid, ImportOptions, Library, MosaicCells, OutputFormat, Plan, PlanOptions, Sizing,
    TeeSink, TileCache, decode_target, file_sink, render_to_sink,
};

use super::library::{import_with_bar, parse_colour, print_report, progress_bar};

/// Make a photo mosaic of TARGET from the tiles of LIBRARY.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  tessera render portrait.jpg -l ~/emoji -o mosaic.png
  tessera render portrait.jpg -l emoji.idx -o mosaic.jpg --cells 200 --tile-size 24 --quality 85
  tessera render icon.png -l photos.zip -o big.png --per-pixel --tile-size 16
  tessera render portrait.jpg -l emoji.idx -o mosaic.png --repeat-radius 3 --blend 20 --plan plan.csv

The output is (cells x tile size) pixels across; rows follow the target's aspect ratio.
--per-pixel makes one cell per target pixel (output = target size x tile size).")]
pub struct RenderArgs {
    /// The image to reproduce (JPEG, PNG, WebP, GIF).
    pub target: PathBuf,
    /// Tiles: a folder or .zip of images, or an index saved by `tessera library index`.
    #[arg(short, long, value_name = "LIBRARY")]
    pub library: PathBuf,
    /// Output image, .png or .jpg.
    #[arg(short, long, value_name = "OUT")]
    pub output: PathBuf,
    /// Tile size in output pixels (4 to 256).
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(4..=256))]
    pub tile_size: u32,
    /// Cells across; rows follow the aspect ratio.
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..))]
    pub cells: u32,
    /// One cell per target pixel instead of --cells.
    #[arg(long, conflicts_with = "cells")]
    pub per_pixel: bool,
    /// No identical tile within this many cells (1 = no identical neighbours; 0 = no limit).
    #[arg(long, default_value_t = 1)]
    pub repeat_radius: u32,
    /// Use no tile more than this many times.
    #[arg(long, value_name = "N")]
    pub max_uses: Option<u32>,
    /// Move each tile toward its cell's colour, 0 to 100 %.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub blend: u8,
    /// Also write the plan as CSV (row, col, tile, file name).
    #[arg(long, value_name = "PLAN.csv")]
    pub plan: Option<PathBuf>,
    /// JPEG quality, 1 to 100.
    #[arg(long, default_value_t = 90, value_parser = clap::value_parser!(u8).range(1..=100))]
    pub quality: u8,
    /// Refuse outputs larger than this many pixels.
    #[arg(long, default_value_t = tessera_engine::DEFAULT_MAX_OUTPUT_PIXELS, value_name = "PIXELS")]
    pub max_pixels: u64,
    /// Background for transparent tiles and targets, RRGGBB hex (for libraries imported here).
    #[arg(long, default_value = "ffffff", value_parser = parse_colour)]
    pub background: [u8; 3],
    /// Print the quality metric (CIEDE2000 on the cell grid, repeats) after rendering.
    #[arg(long)]
    pub metrics: bool,
    /// No progress bars.
    #[arg(short, long)]
    pub quiet: bool,
}

pub fn run(args: RenderArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let format = OutputFormat::from_path(&args.output, args.quality)?;
    let opts = PlanOptions {
        tile_size: args.tile_size,
        grid: if args.per_pixel {
            Grid::PerPixel
        } else {
            Grid::Cells(args.cells)
        },
        repeat_radius: args.repeat_radius,
        max_uses: args.max_uses,
        blend: args.blend,
        max_output_pixels: args.max_pixels,
        ..PlanOptions::default()
    };
    let target_bytes = std::fs::read(&args.target)
        .with_context(|| format!("cannot read {}", args.target.display()))?;
    let target = decode_target(&target_bytes, args.background)
        .with_context(|| format!("cannot decode {}", args.target.display()))?;
    drop(target_bytes);
    // Check the size before the (possibly long) import.
    let size = Sizing::new(target.width(), target.height(), &opts)?;
    eprintln!(
        "{} x {} cells of {} px: output {} x {} px",
        size.cols, size.rows, size.tile_size, size.width, size.height
    );

    let library = load_library(&args)?;

    let bar = progress_bar(args.quiet, "matching");
    let plan = Plan::make_with_progress(&target, &library, &opts, &|done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    if let Some(csv) = &args.plan {
        let file = std::fs::File::create(csv)
            .with_context(|| format!("cannot create {}", csv.display()))?;
        plan.write_csv(&library, std::io::BufWriter::new(file))
            .with_context(|| format!("cannot write {}", csv.display()))?;
    }

    let cache = TileCache::new(&library, plan.tile_size());
    let mut sink = file_sink(&args.output, plan.width(), plan.total_height(), format)?;
    let bar = progress_bar(args.quiet, "rendering");
    let progress = |done: u32, total: u32| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    };
    // Bands of about 4 MB (at least one row of cells) keep memory flat whatever the height.
    let band_cells =
        ((4 << 20) / (plan.width() as u64 * 3 * plan.tile_size() as u64)).max(1) as u32;
    let quality = if args.metrics {
        let mut cells = MosaicCells::new(
            plan.width(),
            plan.total_height(),
            plan.cols(),
            plan.total_rows(),
        )?;
        let mut tee = TeeSink {
            first: &mut sink,
            second: &mut cells,
        };
        render_to_sink(&plan, &cache, &mut tee, band_cells, &progress)?;
        tee.finish()?;
        Some(cells.quality(&target)?)
    } else {
        render_to_sink(&plan, &cache, &mut sink, band_cells, &progress)?;
        sink.finish()?;
        None
    };
    bar.finish_and_clear();
    eprintln!(
        "wrote {} ({} x {} px) in {:.2} s",
        args.output.display(),
        plan.width(),
        plan.total_height(),
        started.elapsed().as_secs_f64()
    );
    if let Some(q) = quality {
        println!("{q}");
    }
    Ok(())
}

fn load_library(args: &RenderArgs) -> anyhow::Result<Library> {
    let path = &args.library;
    let mut head = [0u8; 8];
    let is_index = path.is_file()
        && std::fs::File::open(path)
            .and_then(|mut f| std::io::Read::read(&mut f, &mut head))
            .is_ok_and(|n| Library::is_index(&head[..n]));
    if is_index {
        // Renditions stay in the file: a mosaic reads only the tiles it uses.
        return Library::open_index(path)
            .with_context(|| format!("cannot load the index {}", path.display()));
    }
    let opts = ImportOptions {
        background: args.background,
        ..ImportOptions::default()
    };
    let (library, report) = import_with_bar(path, &opts, args.quiet)?;
    print_report(&report);
    Ok(library)
}
