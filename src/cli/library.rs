//! `tessera library index`: import a folder or .zip of images into a tile index file, the one
//! blob that `tessera render -l` and the processors load.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context as _;
use tessera_engine::{ImportOptions, ImportReport, Library, TileShape};

/// Import a folder or .zip of images and save the tile index to a file.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  tessera library index ~/emoji -o emoji.idx
  tessera library index photos.zip -o photos.idx --rendition-size 128 --background 000000
  tessera library index ~/photos -o photos43.idx --shape 4:3
  tessera render portrait.jpg -l emoji.idx -o mosaic.png
  tessera render portrait.jpg -l photos43.idx -o mosaic.png --tile-size 24x18")]
pub struct LibraryIndexArgs {
    /// A folder (searched recursively) or a .zip of images: JPEG, PNG, HEIC, AVIF, WebP, TIFF,
    /// BMP, GIF (first frame).
    pub src: PathBuf,
    /// Where to write the index.
    #[arg(short, long, value_name = "INDEX")]
    pub output: PathBuf,
    /// Long side in pixels of the stored renditions tiles are rendered from.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(4..=512))]
    pub rendition_size: u32,
    /// Shape of the tiles, width:height (1:1, 4:3, 3:2, 2:3, ...): each image is cropped to
    /// this shape (see --crop). Render with a tile size of the same shape (4:3: --tile-size
    /// 24x18, 32x24, ...).
    #[arg(long, default_value = "1:1", value_parser = parse_shape)]
    pub shape: TileShape,
    /// Where each image is cropped to the shape: `attention` (where its detail, skin and colour
    /// are) or `centre`.
    #[arg(long, default_value = "attention", value_parser = parse_crop)]
    pub crop: tessera_engine::CropRule,
    /// Side of the sub-grid each tile is described by (3 = 3x3 Lab means).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(1..=8))]
    pub grid: u8,
    /// Colour transparent pixels are composited onto, as RRGGBB hex.
    #[arg(long, default_value = "ffffff", value_parser = tessera_engine::parse_hex_colour)]
    pub background: [u8; 3],
    /// Also write the index's contact sheet here: a PNG of up to 12 x 8 of its tiles, as the
    /// Libraries page shows them.
    #[arg(long, value_name = "SHEET.png")]
    pub sheet: Option<PathBuf>,
    /// No progress bar.
    #[arg(short, long)]
    pub quiet: bool,
}

pub fn run(args: LibraryIndexArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let opts = ImportOptions {
        background: args.background,
        grid: args.grid,
        rendition_size: args.rendition_size,
        shape: args.shape,
        crop: args.crop,
    };
    let (library, report) = import_with_bar(&args.src, &opts, args.quiet)?;
    library
        .save(&args.output)
        .with_context(|| format!("cannot save the index to {}", args.output.display()))?;
    if let Some(sheet) = &args.sheet {
        let png = tessera_web::api::contact_sheet::make_sheet(&library)
            .map_err(|e| anyhow::anyhow!("cannot draw the contact sheet: {}", e.message))?;
        std::fs::write(sheet, png).with_context(|| format!("cannot write {}", sheet.display()))?;
    }
    print_report(&report);
    eprintln!(
        "saved {} tiles of shape {} to {} (version {}) in {:.1} s",
        library.len(),
        library.shape(),
        args.output.display(),
        library.version_hex(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Imports with a progress bar (hidden when stderr is not a terminal or `quiet`).
pub fn import_with_bar(
    src: &std::path::Path,
    opts: &ImportOptions,
    quiet: bool,
) -> anyhow::Result<(Library, ImportReport)> {
    let bar = progress_bar(quiet, "importing tiles");
    let (library, report) = Library::import_with_progress(src, opts, &|done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
        true
    })
    .with_context(|| format!("cannot import tiles from {}", src.display()))?;
    bar.finish_and_clear();
    if library.is_empty() {
        anyhow::bail!(
            "{} holds no image Tessera can use: {}",
            src.display(),
            tessera_engine::summarise_skipped(&report.skipped)
        );
    }
    Ok((library, report))
}

/// Prints what an import skipped and merged.
pub fn print_report(report: &ImportReport) {
    eprintln!(
        "{} tiles imported, {} files skipped ({} of them not images), {} duplicates merged",
        report.imported,
        report.skipped.len(),
        report.ignored,
        report.duplicates.len(),
    );
    for (name, reason) in &report.skipped {
        eprintln!("  skipped {name}: {reason}");
    }
}

/// A progress bar on stderr, hidden when asked or when stderr is not a terminal.
pub fn progress_bar(quiet: bool, what: &'static str) -> indicatif::ProgressBar {
    if quiet {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(0);
    let style = indicatif::ProgressStyle::with_template("{msg:>16} [{bar:40}] {pos}/{len} ({eta})")
        .expect("valid template")
        .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(what);
    bar
}

/// Parses `--crop`: `attention` or `centre`.
pub fn parse_crop(s: &str) -> Result<tessera_engine::CropRule, String> {
    tessera_engine::CropRule::parse(s).ok_or_else(|| format!("{s:?}: give attention or centre"))
}

/// Parses `--shape`: `W:H`.
pub fn parse_shape(s: &str) -> Result<TileShape, String> {
    TileShape::parse(s).map_err(|e| e.to_string())
}

/// Import a folder or .zip of images into the configured store as a named library (a new
/// version when the name exists).
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  tessera library import ~/emoji --name Emoji
  tessera library import ~/photos --name 'Photos 4:3' --shape 4:3
  TESSERA_STORAGE=azure tessera library import photos.zip --name 'Holiday photos'")]
pub struct LibraryImportArgs {
    /// A folder (searched recursively) or a .zip of images: JPEG, PNG, HEIC, AVIF, WebP, TIFF,
    /// BMP, GIF (first frame).
    pub src: PathBuf,
    /// The library's name; its id is made from it (lowercase letters, digits, hyphens).
    #[arg(long)]
    pub name: String,
    /// Publish a new version of a library that exists under this name (or its id); without it,
    /// an existing library is refused.
    #[arg(long)]
    pub replace: bool,
    /// Shape of the tiles, width:height (1:1, 4:3, 3:2, 2:3, ...): each image is cropped to
    /// this shape (see --crop); jobs on the library use tiles of this shape.
    #[arg(long, default_value = "1:1", value_parser = parse_shape)]
    pub shape: TileShape,
    /// Colour transparent parts of tiles are laid over, RRGGBB hex.
    #[arg(long, default_value = "ffffff", value_parser = tessera_engine::parse_hex_colour)]
    pub background: [u8; 3],
    /// Where each image is cropped to the shape: `attention` (where its detail, skin and colour
    /// are) or `centre`.
    #[arg(long, default_value = "attention", value_parser = parse_crop)]
    pub crop: tessera_engine::CropRule,
}

pub async fn import(
    args: LibraryImportArgs,
    platform: &tessera_shared::platform::Platform,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let (record, report) = tessera_workers::import_library(
        platform,
        &args.src,
        &args.name,
        tessera_engine::ImportOptions {
            shape: args.shape,
            background: args.background,
            crop: args.crop,
            ..tessera_engine::ImportOptions::default()
        },
        &tessera_shared::libraries::Publication::operator(args.replace),
    )
    .await?;
    print_report(&report);
    println!(
        "library {} (\"{}\") version {}: {} tiles of shape {}, index {} bytes, in {:.1} s",
        record.id,
        record.name,
        record.version,
        record.tiles,
        record.shape,
        record.index_bytes,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

pub async fn list(platform: &tessera_shared::platform::Platform) -> anyhow::Result<()> {
    let records = platform.libraries().list().await?;
    if records.is_empty() {
        println!("no libraries yet: tessera library import SRC --name NAME");
    }
    for r in records {
        let visibility = match r.visibility {
            tessera_shared::libraries::Visibility::Private => "private",
            tessera_shared::libraries::Visibility::Shared => "shared",
        };
        println!(
            "{:<24} v{:<4} {:>6} tiles  {:<7} {:<20}  {}",
            r.id,
            r.version,
            r.tiles,
            visibility,
            r.owner.as_str(),
            r.name
        );
    }
    Ok(())
}

/// Add images to a library as its next version (one with the name of a tile replaces it).
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  tessera library add holiday-photos ~/new-photos
  tessera library add holiday-photos more.zip")]
pub struct LibraryAddArgs {
    /// The library's id.
    pub id: String,
    /// A folder (searched recursively), a .zip or one image to add.
    pub src: PathBuf,
}

/// Take tiles out of a library as its next version.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:
  tessera library remove holiday-photos IMG_0042.jpg IMG_0043.jpg")]
pub struct LibraryRemoveArgs {
    /// The library's id.
    pub id: String,
    /// The tiles' names, as the library holds them.
    #[arg(required = true)]
    pub names: Vec<String>,
}

pub async fn add(
    args: LibraryAddArgs,
    platform: &tessera_shared::platform::Platform,
) -> anyhow::Result<()> {
    let edit = tessera_shared::library_import::LibraryEdit {
        add: Some(args.src),
        remove: Vec::new(),
    };
    edit_library(platform, &args.id, edit).await
}

pub async fn remove(
    args: LibraryRemoveArgs,
    platform: &tessera_shared::platform::Platform,
) -> anyhow::Result<()> {
    let edit = tessera_shared::library_import::LibraryEdit {
        add: None,
        remove: args.names,
    };
    edit_library(platform, &args.id, edit).await
}

/// Publishes `edit` of library `id` as the operator and says what it did.
async fn edit_library(
    platform: &tessera_shared::platform::Platform,
    id: &str,
    edit: tessera_shared::library_import::LibraryEdit,
) -> anyhow::Result<()> {
    let started = Instant::now();
    let (record, report) = tessera_shared::library_import::edit_library_while(
        platform,
        id,
        edit,
        &tessera_shared::libraries::Owner::operator(),
        || true,
    )
    .await?;
    if !report.skipped.is_empty() {
        eprintln!(
            "skipped: {}",
            tessera_engine::summarise_skipped(&report.skipped)
        );
    }
    for (name, kept) in &report.duplicates {
        eprintln!("{name}: the same as {kept}, left out");
    }
    println!(
        "library {} version {}: {} added, {} taken out, {} tiles, in {:.1} s",
        record.id,
        record.version,
        report.added,
        report.removed,
        record.tiles,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
