//! `tessera render`: one mosaic on this machine, from a target image and a tile library (a
//! folder, a .zip or a saved index): plan the whole grid, then render band by band straight into
//! the encoder.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context as _;
use tessera_engine::{
    AdaptivePlan, BandSink, DziSink, FinishSink, ImportOptions, Library, MosaicCells, OutputFormat,
    Plan, Quality, RgbImage, TeeSink, TileBackground, TileCache, TileShape, decode_target,
    file_sink, hex_colour, lay_over, render_to_sink,
};
use tessera_shared::print::cm;
use tessera_shared::spec::{DEFAULT_JPEG_QUALITY, JobLimits, JobSize, JobSpec};

use super::job_flags::JobFlags;

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
    /// The job's options, as the service takes them.
    #[command(flatten)]
    pub job: JobFlags,
    /// Also write the plan as CSV (row, col, tile, file name, transform: none, flip, rot90, ...,
    /// flip+rot270; flip mirrors left-right before the clockwise turn).
    #[arg(long, value_name = "PLAN.csv")]
    pub plan: Option<PathBuf>,
    /// Also write where each photo went, as CSV: one line per tile used (tile, name, caption,
    /// uses, its cells as R1C1, row and column from 1), as `GET /api/v1/jobs/{id}/placements`
    /// gives it.
    #[arg(long, value_name = "PLACEMENTS.csv")]
    pub placements: Option<PathBuf>,
    /// Refuse outputs larger than this many pixels [default: limits.max_output_pixels, one
    /// gigapixel].
    #[arg(long, value_name = "PIXELS")]
    pub max_pixels: Option<u64>,
    /// Print the quality metric (CIEDE2000 on the cell grid, repeats) after rendering.
    #[arg(long)]
    pub metrics: bool,
    /// No progress bars.
    #[arg(short, long)]
    pub quiet: bool,
}

pub fn run(args: RenderArgs, limits: &JobLimits) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut spec = args.job.spec()?;
    let quality = spec.quality.unwrap_or(DEFAULT_JPEG_QUALITY);
    let format = args
        .output
        .as_deref()
        .map(|path| OutputFormat::from_path(path, quality))
        .transpose()?;
    let limits = JobLimits {
        max_output_pixels: args.max_pixels.unwrap_or(limits.max_output_pixels),
        ..limits.clone()
    };
    // On one machine the operator's caps on cells and radius do not apply: the rules between
    // the fields and the sizes do.
    spec.check_fields()?;
    let target_bytes = std::fs::read(&args.target)
        .with_context(|| format!("cannot read {}", args.target.display()))?;
    let target = decode_target(&target_bytes, colour(&spec))
        .with_context(|| format!("cannot decode {}", args.target.display()))?;
    drop(target_bytes);
    // Check the size before the (possibly long) import.
    let job_size = spec.size(target.width(), target.height(), &limits)?;
    describe(&spec, &job_size);

    let library = load_library(&args, &spec)?;
    let name = args.library.display().to_string();
    let fitted = (name.as_str(), library.len() as u32, library.shape());
    for adapted in spec.fit_library(&job_size, fitted, |name| args.job.gave(name))? {
        eprintln!("{adapted}");
    }
    let background = spec.options.tile_background().resolve(&target, &library);
    if let Some(bg) = background {
        eprintln!("transparent tiles over #{}", hex_colour(bg));
    }
    let library = lay_over(&library, background);
    let layout = plan_layout(&args, &spec, &job_size, &target, &library)?;
    write_csvs(&args, &layout, &library)?;
    let (quality, alone) = render(&args, &spec, &layout, &library, &target, format)?;
    let written: Vec<String> = (args.output.iter().map(|p| p.display().to_string()))
        .chain(
            args.dzi
                .iter()
                .map(|d| d.join("mosaic.dzi").display().to_string()),
        )
        .collect();
    let (width, height, _) = layout.metric_grid();
    eprintln!(
        "wrote {} ({width} x {height} px) in {:.2} s",
        written.join(" and "),
        started.elapsed().as_secs_f64()
    );
    print_metrics(quality, alone, spec.options.overlay);
    Ok(())
}

/// Says on stderr what the mosaic will be: its grid and pixels, its print size and warnings.
fn describe(spec: &JobSpec, job_size: &JobSize) {
    let size = job_size.sizing;
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
    let opts = &job_size.options;
    if opts.rotate && !opts.tile_size.is_square() {
        eprintln!(
            "{} px tiles are not square: --rotate turns them by 180 degrees only",
            opts.tile_size
        );
    }
}

/// Matches the tiles to the target: a uniform plan, or adaptive squares.
fn plan_layout(
    args: &RenderArgs,
    spec: &JobSpec,
    job_size: &JobSize,
    target: &RgbImage,
    library: &Library,
) -> anyhow::Result<Layout> {
    let (size, opts) = (job_size.sizing, &job_size.options);
    let bar = progress_bar(args.quiet, "matching");
    let layout = match spec.options.adaptive {
        Some(sizes) => {
            let adaptive = AdaptivePlan::make(target, library, opts, sizes)?;
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
            target,
            library,
            opts,
            &|done, total| {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
            },
        )?),
    };
    bar.finish_and_clear();
    Ok(layout)
}

/// Writes the plan and the placements as CSV, where asked.
fn write_csvs(args: &RenderArgs, layout: &Layout, library: &Library) -> anyhow::Result<()> {
    let create = |csv: &std::path::Path| {
        std::fs::File::create(csv)
            .map(std::io::BufWriter::new)
            .with_context(|| format!("cannot create {}", csv.display()))
    };
    if let (Some(csv), Layout::Uniform(plan)) = (&args.plan, layout) {
        plan.write_csv(library, create(csv)?)
            .with_context(|| format!("cannot write {}", csv.display()))?;
    }
    if let Some(csv) = &args.placements {
        let map = match layout {
            Layout::Uniform(plan) => tessera_engine::CellMap::from_plan(plan, library)?,
            Layout::Adaptive(plan) => tessera_engine::CellMap::from_adaptive(plan, library)?,
        };
        tessera_engine::write_placements_csv(&map.placements(), create(csv)?)
            .with_context(|| format!("cannot write {}", csv.display()))?;
    }
    Ok(())
}

/// Renders the layout band by band into the outputs asked for, finished as the job asks
/// (overlay, grout). With `--metrics`, the quality of what was written and, when rows are
/// finished, of the tiles alone, so that ghosting is not mistaken for matching.
fn render(
    args: &RenderArgs,
    spec: &JobSpec,
    layout: &Layout,
    library: &Library,
    target: &RgbImage,
    format: Option<OutputFormat>,
) -> anyhow::Result<(Option<Quality>, Option<Quality>)> {
    let (width, height, grid) = layout.metric_grid();
    let metric_sink = || MosaicCells::new(width, height, grid.0, grid.1);
    let mut cells = args.metrics.then(metric_sink).transpose()?;
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
        sinks.push(file_sink(path, (width, height), format, spec.dpi())?);
    }
    let finish = spec.finish(Some(target), width, height);
    let mut alone = (args.metrics && !finish.is_none())
        .then(metric_sink)
        .transpose()?;
    let mut all: Box<dyn BandSink + '_> = if finish.is_none() {
        Box::new(TeeSink(sinks))
    } else {
        let finished = FinishSink::new(finish, width, TeeSink(sinks));
        let mut first: Vec<Box<dyn BandSink + '_>> = Vec::new();
        if let Some(alone) = &mut alone {
            first.push(Box::new(alone));
        }
        first.push(Box::new(finished));
        Box::new(TeeSink(first))
    };
    let bar = progress_bar(args.quiet, "rendering");
    match layout {
        Layout::Uniform(plan) => {
            let cache = TileCache::new(library, plan.tile_size());
            // Bands of about 1 MB (at least one row of cells) keep memory flat whatever the height,
            // and are enough of them that every core compresses until the last one.
            let band_cells =
                ((1 << 20) / (width as u64 * 3 * plan.tile_size().height as u64)).max(1) as u32;
            let progress = |done: u32, total: u32| {
                bar.set_length(total as u64);
                bar.set_position(done as u64);
            };
            render_to_sink(plan, &cache, &mut *all, band_cells, &progress)?;
        }
        Layout::Adaptive(adaptive) => adaptive.render_to_sink(library, &mut *all)?,
    }
    all.finish()?;
    drop(all);
    bar.finish_and_clear();
    let quality = cells.map(|c| c.quality(target)).transpose()?;
    let alone = alone.map(|c| c.quality(target)).transpose()?;
    Ok((quality, alone))
}

/// Prints the quality figures: the tiles' own, and with the overlay where there is one.
fn print_metrics(quality: Option<Quality>, alone: Option<Quality>, overlay: u8) {
    match (quality, alone) {
        (Some(q), Some(alone)) if overlay > 0 => {
            // Repeats are the tiles' (overlaid cells all differ): the colour figures alone.
            println!("{alone}");
            println!(
                "with the {overlay} % overlay: de00_mean={:.4} de00_p95={:.4} ssim_view={}",
                q.de00_mean,
                q.de00_p95,
                q.ssim_view
                    .map_or_else(|| "none".to_string(), |s| format!("{s:.4}"))
            );
        }
        (_, Some(alone)) => println!("{alone}"),
        (Some(q), None) => println!("{q}"),
        _ => {}
    }
}

/// A uniform grid of cells, or adaptive squares.
enum Layout {
    Uniform(Plan),
    Adaptive(AdaptivePlan),
}

impl Layout {
    /// The mosaic's width and height, and the quality metric's grid: the plan's cells, or the
    /// smallest squares of an adaptive one.
    fn metric_grid(&self) -> (u32, u32, (u32, u32)) {
        match self {
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
        }
    }
}

/// The colour `background` gives, or white (for a transparent target, and for tiles imported
/// here before `auto` chooses).
fn colour(spec: &JobSpec) -> [u8; 3] {
    match spec.options.tile_background() {
        TileBackground::Colour(c) => c,
        _ => [255, 255, 255],
    }
}

fn load_library(args: &RenderArgs, spec: &JobSpec) -> anyhow::Result<Library> {
    let tile = spec.tile();
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
        background: colour(spec),
        shape,
        ..ImportOptions::default()
    };
    let (library, report) = import_with_bar(path, &opts, args.quiet)?;
    print_report(&report);
    Ok(library)
}
