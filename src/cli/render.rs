//! `tessera render`: one mosaic on this machine, from a target image and a tile library (a
//! folder, a .zip or a saved index): plan the whole grid, then render band by band straight into
//! the encoder.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context as _;
use tessera_engine::{
    AdaptivePlan, BandSink, DziSink, ImportOptions, Library, MosaicCells, OutputFormat, Plan,
    TeeSink, TileBackground, TileCache, TileShape, TileSize, decode_target, file_sink, hex_colour,
    lay_over, render_to_sink,
};
use tessera_shared::messages::{Grid as SpecGrid, LibraryRef, RenderOptions, tile_height_field};
use tessera_shared::print::{Print, cm};
use tessera_shared::spec::{JobLimits, JobSpec};

use super::library::{import_with_bar, print_report, progress_bar};

/// Make a photo mosaic of TARGET from the tiles of LIBRARY.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  tessera render portrait.jpg -l ~/emoji -o mosaic.png
  tessera render portrait.jpg -l emoji.idx -o mosaic.jpg --cells 200 --tile-size 24 --quality 85
  tessera render icon.png -l photos.zip -o big.png --per-pixel --tile-size 16
  tessera render portrait.jpg -l emoji.idx -o mosaic.png --repeat-radius 3 --blend 20 --plan plan.csv
  tessera render portrait.jpg -l emoji.idx --cells 400 --dzi site/   # site/mosaic.dzi + tiles
  tessera render portrait.jpg -l photos.idx -o mosaic.png --flip --rotate --max-uses 1
  tessera render portrait.jpg -l ~/photos -o mosaic.png --tile-size 24x18   # 4:3 tiles

The output is (cells x tile width) pixels across; rows follow the target's aspect ratio.
--per-pixel makes one cell per target pixel (output = target size x tile size).
Tiles of W x H pixels are crops of that shape: a folder or .zip is imported at it (24x18 crops
each photo to 4:3), and a saved index must have been made with that shape
(`tessera library index ... --shape 4:3`).")]
pub struct RenderArgs {
    /// The image to reproduce (JPEG, PNG, HEIC, AVIF, WebP, TIFF, BMP, GIF).
    pub target: PathBuf,
    /// Tiles: a folder or .zip of images, or an index saved by `tessera library index`.
    #[arg(short, long, value_name = "LIBRARY")]
    pub library: PathBuf,
    /// Output image: .png, .jpg or .tif (tiled, pyramidal, deflate; BigTIFF past 4 GB).
    #[arg(short, long, value_name = "OUT", required_unless_present = "dzi")]
    pub output: Option<PathBuf>,
    /// Also (or instead) write a Deep Zoom pyramid for static hosting: DIR/mosaic.dzi and the
    /// tiles in DIR/mosaic_files/, as OpenSeadragon and other Deep Zoom viewers read them.
    #[arg(long, value_name = "DIR")]
    pub dzi: Option<PathBuf>,
    /// Tile size in output pixels: 16 for square tiles, or WxH such as 24x18 (each side 4 to
    /// 256). The tiles' shape must be the library's [default: 16; with --print, tiles that
    /// print 1 cm wide].
    #[arg(long, value_name = "SIZE", value_parser = parse_tile_size)]
    pub tile_size: Option<TileSize>,
    /// Size the mosaic as a print: a preset (A0 to A5) or WxH with a unit (cm, mm, in), then
    /// optionally @ and a resolution (300 dpi by default), as A2@300dpi, 60x40cm@300dpi or
    /// 18x24in. The paper turns to the photo's orientation; cells across follow from the paper
    /// and the tile size. The output carries the resolution (300 dpi without --print).
    #[arg(long, value_name = "SIZE[@DPI]", conflicts_with_all = ["cells", "per_pixel", "adaptive"],
          value_parser = |s: &str| s.parse::<Print>().map_err(|e| e.to_string()))]
    pub print: Option<Print>,
    /// Cells across; rows follow the aspect ratio [default: chosen by the photo's shape for
    /// about 16,384 cells (limits.auto_cells): 128 across a square photo].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub cells: Option<u32>,
    /// One cell per target pixel instead of --cells.
    #[arg(long, conflicts_with = "cells")]
    pub per_pixel: bool,
    /// No identical tile within this many cells (1 = no identical neighbours; 0 = no limit).
    #[arg(long, default_value_t = 1)]
    pub repeat_radius: u32,
    /// Use no tile more than this many times.
    #[arg(long, value_name = "N")]
    pub max_uses: Option<u32>,
    /// Use every tile at least this many times (1: every photo is in), solved as one assignment
    /// over the whole grid.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub min_uses: u32,
    /// Move each tile toward its cell's colour, 0 to 100 %.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub blend: u8,
    /// Tiles may be mirrored left-right, where that fits the cell better.
    #[arg(long)]
    pub flip: bool,
    /// Tiles may be turned by 90, 180 or 270 degrees, where that fits the cell better (with
    /// --flip: all 8 symmetries of the square). Tiles that are not square (--tile-size 24x18)
    /// turn by 180 degrees only, the one turn that keeps their shape. A turned tile still counts
    /// as that tile for --repeat-radius and --max-uses.
    #[arg(long)]
    pub rotate: bool,
    /// Adaptive tile sizes, MIN..MAX px (as 8..32; MAX a power-of-two multiple of MIN): large
    /// tiles where the photo is flat, small where it is detailed, no more tiles than the uniform
    /// grid of --cells and --tile-size has.
    #[arg(long, value_name = "MIN..MAX", conflicts_with_all = ["per_pixel", "plan"])]
    pub adaptive: Option<tessera_engine::AdaptiveSizes>,
    /// Also write the plan as CSV (row, col, tile, file name, transform: none, flip, rot90, ...,
    /// flip+rot270; flip mirrors left-right before the clockwise turn).
    #[arg(long, value_name = "PLAN.csv")]
    pub plan: Option<PathBuf>,
    /// Also write where each photo went, as CSV: one line per tile used (tile, name, caption,
    /// uses, its cells as row:column from 0), as `GET /api/v1/jobs/{id}/placements` gives it.
    #[arg(long, value_name = "PLACEMENTS.csv")]
    pub placements: Option<PathBuf>,
    /// JPEG quality, 1 to 100.
    #[arg(long, default_value_t = 90, value_parser = clap::value_parser!(u8).range(1..=100))]
    pub quality: u8,
    /// Refuse outputs larger than this many pixels [default: limits.max_output_pixels, one
    /// gigapixel].
    #[arg(long, value_name = "PIXELS")]
    pub max_pixels: Option<u64>,
    /// Make the mosaic even when it is larger than limits.large_output_pixels (200 megapixels
    /// by default).
    #[arg(long)]
    pub allow_large: bool,
    /// What transparent tiles (and a transparent target) lie over: a colour as RRGGBB hex, or
    /// auto, the one (black, a grey, white or the photo's mean colour) over which the tiles come
    /// nearest the photo. Without it, tiles keep the background they were indexed over, and a
    /// folder or .zip is imported over white.
    #[arg(long, value_name = "RRGGBB|auto", value_parser = TileBackground::parse)]
    pub background: Option<TileBackground>,
    /// Lay the photo over the tiles at this opacity, 0 to 50 % (ghosting; the metrics give the
    /// mosaic with it and without it).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=50))]
    pub overlay: u8,
    /// Colour against form, 0 to 100: 0 chooses each tile by its colour alone; higher follows
    /// the photo's light and dark within each cell and its edges more, at some cost in colour.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u8).range(0..=100))]
    pub form: u8,
    /// Print the quality metric (CIEDE2000 on the cell grid, repeats) after rendering.
    #[arg(long)]
    pub metrics: bool,
    /// No progress bars.
    #[arg(short, long)]
    pub quiet: bool,
}

/// The job specification the flags ask for: the same type a job of the service carries.
fn job_spec(args: &RenderArgs) -> JobSpec {
    let tile = match (args.tile_size, args.print) {
        (Some(tile), _) => tile,
        (None, Some(print)) => print.default_tile(),
        (None, None) => TileSize::square(16),
    };
    JobSpec {
        // The library is the file or folder given; the spec's reference is not used here.
        library: LibraryRef {
            id: "local".into(),
            version: 1,
        },
        tile_size: tile.width,
        tile_height: tile_height_field(tile),
        grid: match (args.per_pixel, args.cells) {
            (true, _) => SpecGrid::PerPixel,
            (false, Some(across)) => SpecGrid::Cells { across },
            (false, None) => SpecGrid::Auto,
        },
        slices: 1,
        options: RenderOptions {
            repeat_radius: args.repeat_radius,
            blend_percent: args.blend,
            max_uses: args.max_uses,
            min_uses: args.min_uses,
            flip: args.flip,
            rotate: args.rotate,
            background: args.background.filter(|bg| *bg != TileBackground::Library),
            adaptive: args.adaptive,
            overlay_percent: args.overlay,
            form: args.form,
        },
        allow_large: args.allow_large,
        print: args.print,
        // The output's extension chooses the format here; the spec's is the service's.
        format: Default::default(),
        quality: Some(args.quality),
        webhook: None,
    }
}

pub fn run(args: RenderArgs, limits: &JobLimits) -> anyhow::Result<()> {
    let started = Instant::now();
    let format = args
        .output
        .as_deref()
        .map(|path| OutputFormat::from_path(path, args.quality))
        .transpose()?;
    let limits = JobLimits {
        max_output_pixels: args.max_pixels.unwrap_or(limits.max_output_pixels),
        ..limits.clone()
    };
    let spec = job_spec(&args);
    // On one machine the operator's caps on cells and radius do not apply: the rules between
    // the fields and the sizes do.
    spec.check_fields()?;
    let target_bytes = std::fs::read(&args.target)
        .with_context(|| format!("cannot read {}", args.target.display()))?;
    let target = decode_target(&target_bytes, args.colour())
        .with_context(|| format!("cannot decode {}", args.target.display()))?;
    drop(target_bytes);
    // Check the size before the (possibly long) import.
    let job_size = spec.size(target.width(), target.height(), &limits)?;
    let size = job_size.sizing;
    let opts = &job_size.options;
    eprintln!(
        "{} x {} cells of {} px: output {} x {} px",
        size.cols, size.rows, size.tile_size, size.width, size.height
    );
    let dpi = spec.dpi();
    if let Some(print) = spec.print {
        eprintln!(
            "prints {:.1} x {:.1} cm on {print}, in tiles {:.2} cm wide",
            cm(job_size.output.width, dpi),
            cm(job_size.output.height, dpi),
            cm(size.tile_size.width, dpi)
        );
    }
    for warning in spec.warnings() {
        eprintln!("warning: {warning}");
    }
    if opts.rotate && !opts.tile_size.is_square() {
        eprintln!(
            "{} px tiles are not square: --rotate turns them by 180 degrees only",
            opts.tile_size
        );
    }

    let library = load_library(&args, spec.tile())?;
    spec.check_library(
        &job_size,
        &args.library.display().to_string(),
        library.len() as u32,
        library.shape(),
    )?;
    let background = args
        .background
        .unwrap_or_default()
        .resolve(&target, &library);
    if let Some(bg) = background {
        eprintln!("transparent tiles over #{}", hex_colour(bg));
    }
    let library = lay_over(&library, background);

    let bar = progress_bar(args.quiet, "matching");
    let layout = match args.adaptive {
        Some(sizes) => {
            let adaptive = AdaptivePlan::make(&target, &library, opts, sizes)?;
            eprintln!(
                "adaptive: {} tiles of {} to {} px (the uniform grid has {}): output {} x {} px",
                adaptive.leaves().len(),
                sizes.min,
                sizes.max,
                size.cols as u64 * size.rows as u64,
                adaptive.width(),
                adaptive.height()
            );
            Layout::Adaptive(adaptive)
        }
        None => Layout::Uniform(Plan::make_with_progress(
            &target,
            &library,
            opts,
            &|done, total| {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
            },
        )?),
    };
    bar.finish_and_clear();
    if let (Some(csv), Layout::Uniform(plan)) = (&args.plan, &layout) {
        let file = std::fs::File::create(csv)
            .with_context(|| format!("cannot create {}", csv.display()))?;
        plan.write_csv(&library, std::io::BufWriter::new(file))
            .with_context(|| format!("cannot write {}", csv.display()))?;
    }
    if let Some(csv) = &args.placements {
        let map = match &layout {
            Layout::Uniform(plan) => tessera_engine::CellMap::from_plan(plan, &library)?,
            Layout::Adaptive(plan) => tessera_engine::CellMap::from_adaptive(plan, &library)?,
        };
        let file = std::fs::File::create(csv)
            .with_context(|| format!("cannot create {}", csv.display()))?;
        tessera_engine::write_placements_csv(&map.placements(), std::io::BufWriter::new(file))
            .with_context(|| format!("cannot write {}", csv.display()))?;
    }

    // The quality metric's grid: the plan's cells, or the smallest squares of an adaptive one.
    let (width, height, grid) = match &layout {
        Layout::Uniform(plan) => (
            plan.width(),
            plan.total_height(),
            (plan.cols(), plan.total_rows()),
        ),
        Layout::Adaptive(a) => (
            a.width(),
            a.height(),
            (a.width() / a.sizes().min, a.height() / a.sizes().min),
        ),
    };
    let mut cells = if args.metrics {
        Some(MosaicCells::new(width, height, grid.0, grid.1)?)
    } else {
        None
    };
    // The image encoder goes last: it takes each band by value.
    let mut sinks: Vec<Box<dyn BandSink + '_>> = Vec::new();
    if let Some(dir) = &args.dzi {
        sinks.push(Box::new(
            DziSink::create(dir, "mosaic", width, height).with_context(|| {
                format!("cannot write a Deep Zoom pyramid in {}", dir.display())
            })?,
        ));
    }
    if let Some(cells) = &mut cells {
        sinks.push(Box::new(cells));
    }
    if let (Some(path), Some(format)) = (&args.output, format) {
        sinks.push(file_sink(path, (width, height), format, dpi)?);
    }
    let bar = progress_bar(args.quiet, "rendering");
    let progress = |done: u32, total: u32| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    };
    // With an overlay, the sinks take the overlaid rows; the metrics measure the tiles alone
    // as well, so that ghosting is not mistaken for matching.
    let mut alone = if args.metrics && args.overlay > 0 {
        Some(MosaicCells::new(width, height, grid.0, grid.1)?)
    } else {
        None
    };
    let mut all: Box<dyn BandSink + '_> = if args.overlay > 0 {
        let overlay = tessera_engine::Overlay::new(&target, width, height, args.overlay);
        let overlaid = tessera_engine::OverlaySink::new(overlay, TeeSink(sinks));
        let mut first: Vec<Box<dyn BandSink + '_>> = Vec::new();
        if let Some(alone) = &mut alone {
            first.push(Box::new(alone));
        }
        first.push(Box::new(overlaid));
        Box::new(TeeSink(first))
    } else {
        Box::new(TeeSink(sinks))
    };
    match &layout {
        Layout::Uniform(plan) => {
            let cache = TileCache::new(&library, plan.tile_size());
            // Bands of about 4 MB (at least one row of cells) keep memory flat whatever the height.
            let band_cells =
                ((4 << 20) / (width as u64 * 3 * plan.tile_size().height as u64)).max(1) as u32;
            render_to_sink(plan, &cache, &mut *all, band_cells, &progress)?;
        }
        Layout::Adaptive(adaptive) => adaptive.render_to_sink(&library, &mut *all)?,
    }
    all.finish()?;
    drop(all);
    let quality = cells.map(|c| c.quality(&target)).transpose()?;
    let alone = alone.map(|c| c.quality(&target)).transpose()?;
    bar.finish_and_clear();
    let written: Vec<String> = (args.output.iter().map(|p| p.display().to_string()))
        .chain(
            args.dzi
                .iter()
                .map(|d| d.join("mosaic.dzi").display().to_string()),
        )
        .collect();
    eprintln!(
        "wrote {} ({width} x {height} px) in {:.2} s",
        written.join(" and "),
        started.elapsed().as_secs_f64()
    );
    match (quality, alone) {
        (Some(q), Some(alone)) => {
            // Repeats are the tiles' (overlaid cells all differ): the colour figures alone.
            println!("{alone}");
            println!(
                "with the {} % overlay: de00_mean={:.4} de00_p95={:.4} ssim_view={}",
                args.overlay,
                q.de00_mean,
                q.de00_p95,
                q.ssim_view
                    .map_or_else(|| "none".to_string(), |s| format!("{s:.4}"))
            );
        }
        (Some(q), None) => println!("{q}"),
        _ => {}
    }
    Ok(())
}

/// A uniform grid of cells, or adaptive squares.
enum Layout {
    Uniform(Plan),
    Adaptive(AdaptivePlan),
}

impl RenderArgs {
    /// The colour `--background` gives, or white (for a transparent target, and for tiles
    /// imported here before `auto` chooses).
    fn colour(&self) -> [u8; 3] {
        match self.background {
            Some(TileBackground::Colour(c)) => c,
            _ => [255, 255, 255],
        }
    }
}

fn load_library(args: &RenderArgs, tile: TileSize) -> anyhow::Result<Library> {
    let path = &args.library;
    if Library::is_index_file(path) {
        // Renditions stay in the file: a mosaic reads only the tiles it uses.
        let library = Library::open_index(path)
            .with_context(|| format!("cannot load the index {}", path.display()))?;
        let wanted = tile.shape();
        if library.shape() != wanted {
            anyhow::bail!(
                "the index {} holds {} tiles but --tile-size {} is {wanted}: give a tile size of \
                 shape {}, or index the tiles again with `tessera library index SRC -o INDEX \
                 --shape {wanted}`",
                path.display(),
                library.shape(),
                tile,
                library.shape()
            );
        }
        return Ok(library);
    }
    // A folder or .zip: each photo is cropped to the tiles' shape.
    // TileShape::new also refuses shapes too elongated for a library.
    let shape =
        TileShape::new(tile.width, tile.height).with_context(|| format!("--tile-size {tile}"))?;
    let opts = ImportOptions {
        background: args.colour(),
        shape,
        ..ImportOptions::default()
    };
    let (library, report) = import_with_bar(path, &opts, args.quiet)?;
    print_report(&report);
    Ok(library)
}

/// Parses `--tile-size`: `16` or `24x18`.
fn parse_tile_size(s: &str) -> Result<TileSize, String> {
    TileSize::parse(s).map_err(|e| e.to_string())
}
