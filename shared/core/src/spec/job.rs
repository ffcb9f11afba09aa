//! The job specification's types, its checks, its sizing and its conversion to the engine's
//! options; each option's declaration is in `options` (the render options) or `fields`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::field::SpecError;
use super::options::{RenderOptions, WithOptions, wire_text};
use crate::error_code::ErrorCode;
use crate::print::{DEFAULT_DPI, Print};
use tessera_engine::{
    AdaptiveSizing, Grid as EngineGrid, PlanOptions, Sizing, TILE_SIZES, TileBackground, TileShape,
    TileSize,
};

/// A tile library at one version: processors cache a library's index by this pair.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema, JsonSchema,
)]
pub struct LibraryRef {
    pub id: String,
    #[schema(minimum = 1)]
    pub version: u32,
}

/// How the target is cut into cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "mode")]
pub enum Grid {
    /// So many cells across; rows follow the target's aspect ratio.
    Cells { across: u32 },
    /// One tile per source pixel: the output is the source size times the tile size.
    PerPixel,
    /// Cells across chosen by the target's shape, for a grid of about the operator's
    /// `limits.auto_cells` cells ([`crate::spec::auto_cells_across`]).
    Auto,
}

/// Sizes known once the controller has planned the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct OutputSize {
    /// The mosaic's width in pixels.
    pub width: u32,
    /// The mosaic's height in pixels.
    pub height: u32,
    /// Cells across: of the grid, or, for adaptive tile sizes, of the smallest square's grid
    /// (the cell lookup counts in these cells).
    pub cols: u32,
    /// Cells down, counted as `cols` are.
    pub rows: u32,
}

/// The tile size of `tile_size` (the width) and `tile_height` (absent: square), as the
/// messages and job records carry it.
pub fn tile_size(tile_size: u32, tile_height: Option<u32>) -> TileSize {
    TileSize {
        width: tile_size,
        height: tile_height.unwrap_or(tile_size),
    }
}

/// The `tile_height` field for `size`: none for square tiles, so that their messages and records
/// read as they always have (and as processors from before oblong tiles read them).
pub fn tile_height_field(size: TileSize) -> Option<u32> {
    (!size.is_square()).then_some(size.height)
}

/// Slices a job may be cut into.
pub const SLICES_RANGE: std::ops::RangeInclusive<u32> = 1..=1024;

/// The submission's image, as the API document describes it.
pub const IMAGE_SCHEMA: &str = r#"{"type": "string", "format": "binary", "description": "The target image: JPEG, PNG, HEIC, AVIF, WebP, TIFF, BMP or GIF. Colour profiles are honoured.", "minLength": 1}"#;

/// The rules between fields other than the grid's ways (those are `fields::grid_ways`), as the
/// API document states them ([`JobSpec::check_fields`] enforces the same): `adaptive` takes a
/// square `tile_size` and no `background` but the library's own.
pub const RULES_SCHEMA: &str = r#"[{"anyOf": [{"properties": {"adaptive": {"maxLength": 0}}}, {"properties": {"tile_size": {"pattern": "^[0-9]+$"}}}]}, {"anyOf": [{"properties": {"adaptive": {"maxLength": 0}}}, {"properties": {"background": {"pattern": "^[Ll][Ii][Bb][Rr][Aa][Rr][Yy]$"}}}]}]"#;

/// The operator's limits on what a job may ask for (`[limits]` in the configuration). The web role
/// checks a submission against them and the controller plans under the same ones: both read this
/// one section, so a job accepted at the door is never refused at planning. They are not carried
/// in the message: a message from outside (an Azure Function, say) cannot raise them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JobLimits {
    /// Largest mosaic a job may ask for, in pixels.
    pub max_output_pixels: u64,
    /// A mosaic larger than this many pixels is made only when the job says `allow_large`.
    pub large_output_pixels: u64,
    /// Most cells across a job may ask for.
    pub max_cells: u32,
    /// Largest repetition radius a job may ask for.
    pub max_repeat_radius: u32,
    /// Cells of a job that names no grid: cells across follow the photo's shape so that the
    /// grid holds about this many (and the mosaic stays within `large_output_pixels`).
    pub auto_cells: u32,
}

impl Default for JobLimits {
    fn default() -> Self {
        JobLimits {
            max_output_pixels: tessera_engine::DEFAULT_MAX_OUTPUT_PIXELS,
            large_output_pixels: 200_000_000,
            max_cells: 4096,
            max_repeat_radius: 16,
            auto_cells: 128 * 128,
        }
    }
}

/// The file a job's result is given as. The stitcher always makes the PNG (the viewer, the zoom
/// tiles and the preview read it); JPEG and TIFF are made from it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FileFormat {
    #[default]
    Png,
    Jpeg,
    /// Tiled, pyramidal, deflate; BigTIFF past 4 GB.
    Tiff,
}

/// JPEG quality when a job gives none.
pub const DEFAULT_JPEG_QUALITY: u8 = 90;

impl FileFormat {
    /// The name a job gives it: `png`, `jpeg` or `tiff`.
    pub fn name(self) -> &'static str {
        match self {
            FileFormat::Png => "png",
            FileFormat::Jpeg => "jpeg",
            FileFormat::Tiff => "tiff",
        }
    }

    /// The file name extension.
    pub fn extension(self) -> &'static str {
        match self {
            FileFormat::Png => "png",
            FileFormat::Jpeg => "jpg",
            FileFormat::Tiff => "tif",
        }
    }

    /// The media type.
    pub fn media_type(self) -> &'static str {
        match self {
            FileFormat::Png => "image/png",
            FileFormat::Jpeg => "image/jpeg",
            FileFormat::Tiff => "image/tiff",
        }
    }

    pub(crate) fn parse(text: &str) -> Option<FileFormat> {
        match text.trim().to_ascii_lowercase().as_str() {
            "png" => Some(FileFormat::Png),
            "jpeg" | "jpg" => Some(FileFormat::Jpeg),
            "tiff" | "tif" => Some(FileFormat::Tiff),
            _ => None,
        }
    }
}

/// Everything a job asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct JobSpec {
    /// The tile library at one version (a door that knows only the id resolves the newest).
    pub library: LibraryRef,
    /// Width of one tile in output pixels.
    pub tile_size: u32,
    /// Height of one tile in output pixels; absent for square tiles (the width).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tile_height: Option<u32>,
    pub grid: Grid,
    /// Into how many slices (bands of cell rows) the job is cut.
    pub slices: u32,
    pub options: RenderOptions,
    /// Make the mosaic even when it is larger than the operator's `large_output_pixels`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_large: bool,
    /// Sized as a print (`A2@300dpi`, `60x40cm@300dpi`): cells across follow from the paper,
    /// the resolution and the tile size, and outputs carry the resolution. Absent: the grid as
    /// asked, at [`DEFAULT_DPI`].
    #[serde(default, skip_serializing_if = "Option::is_none", with = "wire_text")]
    #[schemars(with = "Option<String>")]
    pub print: Option<Print>,
    /// The result's file format (absent: PNG).
    #[serde(default, skip_serializing_if = "is_png")]
    pub format: FileFormat,
    /// JPEG quality, 1 to 100 (absent: [`DEFAULT_JPEG_QUALITY`]); other formats ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<u8>,
    /// An `http` or `https` URL called with a signed JSON body when the job ends (the web role
    /// calls it, on the operator's allow-list only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook: Option<String>,
    /// An earlier job of the same grid whose cells this one keeps where their tile is still in
    /// the library (an event's next mosaic): set by the service, never a submission's field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_cells_of: Option<uuid::Uuid>,
}

/// Longest webhook URL a job may carry.
pub const MAX_WEBHOOK_CHARS: usize = 2048;

/// Checks a webhook URL's form: `http` or `https`, a host, no credentials, no fragment, at most
/// [`MAX_WEBHOOK_CHARS`]. Whether its host may be called is the operator's allow-list.
pub fn check_webhook(text: &str) -> Result<url::Url, SpecError> {
    let bad =
        |why: &str| SpecError::invalid(ErrorCode::InvalidParameter, format!("webhook: {why}"));
    if text.len() > MAX_WEBHOOK_CHARS {
        return Err(bad(&format!("longer than {MAX_WEBHOOK_CHARS} characters")));
    }
    let url = url::Url::parse(text).map_err(|e| bad(&format!("not a URL ({e})")))?;
    // A URL, but not one that can be called back: 422.
    let bad = |why: &str| SpecError::unusable(ErrorCode::InvalidWebhook, format!("webhook: {why}"));
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("must be an http or https URL"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("has no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("must not carry credentials"));
    }
    if url.fragment().is_some() {
        return Err(bad("must not have a fragment"));
    }
    Ok(url)
}

fn is_png(format: &FileFormat) -> bool {
    *format == FileFormat::Png
}

/// The size a job's mosaic will have: its grid of cells and its pixels, and the plan options
/// it was sized with.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSize {
    /// The uniform grid (adaptive squares are no more than its cells).
    pub sizing: Sizing,
    /// The output in pixels, and the grid as the cell lookup counts it (cells of the smallest
    /// square for adaptive sizes).
    pub output: OutputSize,
    /// The engine's options for this target ([`JobSpec::plan_options`]).
    pub options: PlanOptions,
}

/// The uniform grid a job was sized to, in cells (adaptive squares are no more than its
/// cells): chosen once by the door that takes the job, carried to the controller on the
/// image request, which plans exactly this grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GridSize {
    #[schemars(range(min = 1))]
    pub cols: u32,
    #[schemars(range(min = 1))]
    pub rows: u32,
}

impl JobSize {
    /// The uniform grid this size has.
    pub fn grid(&self) -> GridSize {
        GridSize {
            cols: self.sizing.cols,
            rows: self.sizing.rows,
        }
    }
}

/// Defaults a door fills in where a submission says nothing.
#[derive(Debug, Clone, Default)]
pub struct Defaults {
    /// The library of a job that names none (empty: `library` is required).
    pub library: String,
    /// Slices of a job that names none.
    pub slices: u32,
}

impl JobSpec {
    /// A job of `library`: `across` cells of `tile_size` px square, in `slices` slices, every
    /// other field at its default (a PNG, the default render options).
    pub fn cells(library: LibraryRef, tile_size: u32, across: u32, slices: u32) -> JobSpec {
        JobSpec {
            library,
            tile_size,
            tile_height: None,
            grid: Grid::Cells { across },
            slices,
            options: RenderOptions::default(),
            allow_large: false,
            print: None,
            format: FileFormat::Png,
            quality: None,
            webhook: None,
            keep_cells_of: None,
        }
    }

    /// The job's tile size.
    pub fn tile(&self) -> TileSize {
        tile_size(self.tile_size, self.tile_height)
    }

    /// The engine's encoder for the result's file.
    pub fn output_format(&self) -> tessera_engine::OutputFormat {
        match self.format {
            FileFormat::Png => tessera_engine::OutputFormat::Png,
            FileFormat::Jpeg => tessera_engine::OutputFormat::Jpeg {
                quality: self.quality.unwrap_or(DEFAULT_JPEG_QUALITY),
            },
            FileFormat::Tiff => tessera_engine::OutputFormat::Tiff,
        }
    }

    /// What is laid over the rendered tiles of a `width` x `height` mosaic: the overlay of
    /// `target` (when the job asks for one and it is given), and the grout lines, in the
    /// background's colour when that is one, white otherwise.
    pub fn finish<'a>(
        &self,
        target: Option<&'a tessera_engine::RgbImage>,
        width: u32,
        height: u32,
    ) -> tessera_engine::Finish<'a> {
        let percent = self.options.overlay;
        let colour = match self.options.tile_background() {
            TileBackground::Colour(c) => c,
            _ => [255, 255, 255],
        };
        tessera_engine::Finish {
            overlay: target
                .filter(|_| percent > 0)
                .map(|t| tessera_engine::Overlay::new(t, width, height, percent)),
            grout: (self.options.grout > 0).then(|| tessera_engine::Grout {
                width: self.options.grout.into(),
                cell: self.tile(),
                colour,
            }),
        }
    }

    /// This job at a sketch's size: `cols` cells across of `tile` (width, height) pixels, on
    /// the uniform grid, however large the job itself is.
    pub fn sketch(&self, cols: u32, (width, height): (u32, u32)) -> JobSpec {
        JobSpec {
            tile_size: width,
            tile_height: (width != height).then_some(height),
            grid: Grid::Cells { across: cols },
            allow_large: true,
            options: RenderOptions {
                adaptive: None,
                ..self.options
            },
            keep_cells_of: None,
            ..self.clone()
        }
    }

    /// The resolution the outputs carry, in dots per inch.
    pub fn dpi(&self) -> u32 {
        self.print.map_or(DEFAULT_DPI, |p| p.dpi)
    }

    /// What the person should know before the job runs, though it may run: tiles that print
    /// too small to recognise.
    pub fn warnings(&self) -> Vec<String> {
        self.print
            .and_then(|p| p.tile_warning(self.tile()))
            .into_iter()
            .collect()
    }

    /// The rules a spec keeps on its own, whatever the limits: each field in range and no two
    /// fields that exclude each other. What the queues check of every message that carries one.
    pub fn check_fields(&self) -> Result<(), SpecError> {
        if let Some(url) = &self.webhook {
            check_webhook(url)?;
        }
        let tile = self.tile();
        for (name, side) in [("tile_size", tile.width), ("tile_height", tile.height)] {
            if !TILE_SIZES.contains(&side) {
                return Err(SpecError::invalid(
                    ErrorCode::OutOfRange,
                    format!(
                        "{name} must be {} to {} pixels, not {side}",
                        TILE_SIZES.start(),
                        TILE_SIZES.end()
                    ),
                ));
            }
        }
        self.check_ranges(None)?;
        self.check_uses()?;
        self.check_print()?;
        self.check_adaptive()
    }

    /// `min_uses` within `max_uses`, and not with adaptive sizes.
    fn check_uses(&self) -> Result<(), SpecError> {
        let options = &self.options;
        if let Some(cap) = options.max_uses
            && options.min_uses > cap
        {
            // Each value valid alone; together, a request that cannot be met.
            return Err(SpecError::unusable(
                ErrorCode::OutOfRange,
                format!(
                    "min_uses ({}) cannot be over max_uses ({cap})",
                    options.min_uses
                ),
            ));
        }
        if options.min_uses > 0 && options.adaptive.is_some() {
            return Err(SpecError::unusable(
                ErrorCode::AdaptiveMinUses,
                "min_uses is for a uniform grid: adaptive tile sizes cannot promise each tile a place",
            ));
        }
        Ok(())
    }

    /// A print sets the grid: no cells, per_pixel or adaptive sizes with it.
    fn check_print(&self) -> Result<(), SpecError> {
        let Some(print) = self.print else {
            return Ok(());
        };
        let other = match self.grid {
            Grid::Cells { .. } => Some("cells"),
            Grid::PerPixel => Some("per_pixel"),
            Grid::Auto => self.options.adaptive.map(|_| "adaptive"),
        };
        match other {
            Some(other) => Err(SpecError::unusable(
                ErrorCode::ConflictingParameters,
                format!(
                    "print {print} sets the grid from the paper: give either print or {other}, \
                     not both"
                ),
            )),
            None => Ok(()),
        }
    }

    /// Adaptive sizes need cells across, square tiles and the library's own background.
    fn check_adaptive(&self) -> Result<(), SpecError> {
        let Some(sizes) = self.options.adaptive else {
            return Ok(());
        };
        if self.options.grout > 0 {
            return Err(SpecError::unusable(
                ErrorCode::AdaptiveGrout,
                format!(
                    "adaptive {sizes} makes tiles of several sizes: grout is for a uniform grid, \
                     give grout 0 or no adaptive sizes"
                ),
            ));
        }
        let tile = self.tile();
        if self.grid == Grid::PerPixel {
            return Err(SpecError::invalid(
                ErrorCode::ConflictingParameters,
                "adaptive needs cells across: give either adaptive or per_pixel, not both",
            ));
        }
        if !tile.is_square() {
            return Err(SpecError::unusable(
                ErrorCode::AdaptiveNotSquare,
                format!(
                    "adaptive {sizes} makes square tiles, but tile_size {tile} is not square: \
                     give a square tile_size (and a square library), or no adaptive sizes"
                ),
            ));
        }
        if self.options.tile_background() != TileBackground::Library {
            return Err(SpecError::unusable(
                ErrorCode::AdaptiveBackground,
                format!(
                    "adaptive {sizes} lays tiles over the library's own background: leave \
                     background out (or library), or give no adaptive sizes"
                ),
            ));
        }
        Ok(())
    }

    /// The operator's limits on cells and the repetition radius, then
    /// [`JobSpec::check_fields`].
    pub fn check(&self, limits: &JobLimits) -> Result<(), SpecError> {
        self.check_ranges(Some(limits))?;
        self.check_fields()
    }

    /// The grid for a target of `width` x `height` pixels: [`Grid::Auto`] made cells across.
    pub fn engine_grid(&self, width: u32, height: u32, limits: &JobLimits) -> EngineGrid {
        if let Some(print) = self.print {
            // An unprintable size is refused by `size`, which says why.
            return EngineGrid::Cells(print.cells_across(width, height, self.tile()).unwrap_or(0));
        }
        match self.grid {
            Grid::Cells { across } => EngineGrid::Cells(across),
            Grid::PerPixel => EngineGrid::PerPixel,
            Grid::Auto => EngineGrid::Cells(auto_cells_across(width, height, self.tile(), limits)),
        }
    }

    /// The engine's plan options for a target of `width` x `height` pixels (the engine's
    /// defaults for what a job does not choose). The one conversion, for the web role's
    /// sizing, the controller's plan and `tessera render`.
    pub fn plan_options(&self, width: u32, height: u32, limits: &JobLimits) -> PlanOptions {
        let options = &self.options;
        PlanOptions {
            tile_size: self.tile(),
            grid: self.engine_grid(width, height, limits),
            repeat_radius: options.repeat_radius,
            max_uses: options.max_uses,
            min_uses: options.min_uses,
            blend: options.blend,
            flip: options.flip,
            rotate: options.rotate,
            max_output_pixels: limits.max_output_pixels,
            ..PlanOptions::default().with_form(options.form)
        }
    }

    /// The mosaic's size for a target of `width` x `height` pixels: refused when over the
    /// operator's maximum, or over `large_output_pixels` without `allow_large`.
    pub fn size(&self, width: u32, height: u32, limits: &JobLimits) -> Result<JobSize, SpecError> {
        if let Some(print) = self.print {
            let across = print
                .cells_across(width, height, self.tile())
                .map_err(|e| SpecError::unusable(ErrorCode::PrintTooSmall, e))?;
            if across > limits.max_cells {
                return Err(SpecError::unusable(
                    ErrorCode::PrintTooManyCells,
                    format!(
                        "print {print} in tiles of {} px needs {across} cells across, over this \
                         service's {}: use larger tiles or a lower resolution",
                        self.tile(),
                        limits.max_cells
                    ),
                ));
            }
        }
        let size = self.measure(width, height, self.plan_options(width, height, limits))?;
        let output = size.output;
        let pixels = u64::from(output.width) * u64::from(output.height);
        if pixels > limits.large_output_pixels && !self.allow_large {
            return Err(SpecError::unusable(
                ErrorCode::LargeOutput,
                format!(
                    "the mosaic would be {} x {} pixels ({:.0} megapixels, over the {:.0} this \
                     service makes unasked): give allow_large=true to make it anyway, or fewer \
                     cells or smaller tiles",
                    output.width,
                    output.height,
                    pixels as f64 / 1e6,
                    limits.large_output_pixels as f64 / 1e6
                ),
            ));
        }
        Ok(size)
    }

    /// The size of a job that the door which took it sized already to `grid` (what
    /// [`JobSpec::size`] chose): the engine's plan of exactly that grid, under the operator's
    /// output limit, without choosing again.
    pub fn size_to(
        &self,
        width: u32,
        height: u32,
        limits: &JobLimits,
        grid: GridSize,
    ) -> Result<JobSize, SpecError> {
        let options = PlanOptions {
            grid: EngineGrid::Exact {
                cols: grid.cols,
                rows: grid.rows,
            },
            ..self.plan_options(width, height, limits)
        };
        self.measure(width, height, options)
    }

    /// The grid and output of a `width` x `height` target under `options`.
    fn measure(&self, width: u32, height: u32, options: PlanOptions) -> Result<JobSize, SpecError> {
        let refused = |e: tessera_engine::Error| match e {
            tessera_engine::Error::OutputTooLarge {
                width,
                height,
                limit,
            } => SpecError::unusable(
                ErrorCode::OutputTooLarge,
                format!(
                    "the mosaic would be {width} x {height} px ({:.2} gigapixels), over this \
                     service's limit of {:.2}: use fewer cells or smaller tiles, or have the \
                     operator raise limits.max_output_pixels (TESSERA_LIMITS__MAX_OUTPUT_PIXELS)",
                    (width * height) as f64 / 1e9,
                    limit as f64 / 1e9
                ),
            ),
            tessera_engine::Error::AdaptiveBudget { .. } => {
                SpecError::unusable(ErrorCode::AdaptiveTooCoarse, format!("adaptive: {e}"))
            }
            e => SpecError::invalid(ErrorCode::InvalidParameter, e.to_string()),
        };
        let sizing = Sizing::new(width, height, &options).map_err(refused)?;
        let output = match self.options.adaptive {
            None => OutputSize {
                width: sizing.width,
                height: sizing.height,
                cols: sizing.cols,
                rows: sizing.rows,
            },
            Some(sizes) => {
                let adaptive =
                    AdaptiveSizing::new(width, height, &options, sizes).map_err(refused)?;
                let (cols, rows) = adaptive.grid();
                OutputSize {
                    width: adaptive.width,
                    height: adaptive.height,
                    cols,
                    rows,
                }
            }
        };
        Ok(JobSize {
            sizing,
            output,
            options,
        })
    }

    /// Fits this job of `size` to the library it names (`tiles` tiles of `shape`, called
    /// `name`), as every door does before a job is accepted or previewed: the options the
    /// submission left at their defaults (`given` says which it gave) are adapted to the
    /// library (`adapt_to_library`), then what still cannot work is refused
    /// ([`JobSpec::check_library`]). Returns what was adapted, in people's words.
    pub fn fit_library(
        &mut self,
        size: &JobSize,
        (name, tiles, shape): (&str, u32, TileShape),
        given: impl Fn(&str) -> bool,
    ) -> Result<Vec<String>, SpecError> {
        let mut adapted = self.adapt_to_library(size, tiles, given);
        adapted.extend(self.floor_every_tile(size, (name, tiles, shape)));
        self.check_library(size, name, tiles, shape)?;
        Ok(adapted)
    }

    /// `every_tile`: a floor of one use each where the library's tiles can all have a cell
    /// (`min_uses` 1), else no floor, said in people's words. Nothing when the job gives
    /// `min_uses` or is adaptive.
    fn floor_every_tile(
        &mut self,
        size: &JobSize,
        (name, tiles, shape): (&str, u32, TileShape),
    ) -> Option<String> {
        let options = &mut self.options;
        if !options.every_tile || options.min_uses > 0 || options.adaptive.is_some() {
            return None;
        }
        options.min_uses = 1;
        match self.check_library(size, name, tiles, shape) {
            Err(e) if e.field() == Some("min_uses") => {
                self.options.min_uses = 0;
                Some(format!(
                    "The library has {tiles} pictures, more than this grid can give a cell \
                     each, so not every picture is in the mosaic."
                ))
            }
            _ => None,
        }
    }

    /// Adapts the options a submission left at their defaults (`given` says which it gave) so
    /// that the library's `tiles` can make this mosaic, and says in people's words what changed
    /// and why. Today that is the repetition radius: a library too small for the default is
    /// used with the widest radius it allows. An option the person set is never changed:
    /// [`JobSpec::check_library`] then refuses it with its reason.
    fn adapt_to_library(
        &mut self,
        size: &JobSize,
        tiles: u32,
        given: impl Fn(&str) -> bool,
    ) -> Vec<String> {
        let mut adapted = Vec::new();
        let (cols, rows) = (size.sizing.cols, size.sizing.rows);
        let radius = self.options.repeat_radius;
        let fits = |r| tessera_engine::plan::tiles_needed(cols, rows, r) <= tiles as usize;
        if !given("repeat_radius") && !fits(radius) {
            let widest = (0..radius).rev().find(|&r| fits(r)).unwrap_or(0);
            self.options.repeat_radius = widest;
            let repeats = if widest == 0 {
                "the same picture may sit side by side".to_string()
            } else {
                format!("the same picture comes back after {widest} cells")
            };
            adapted.push(format!(
                "The library has only {tiles} pictures, too few to keep each one {} from \
                 itself, so {repeats}.",
                if radius == 1 {
                    "a cell".to_string()
                } else {
                    format!("{radius} cells")
                }
            ));
        }
        adapted
    }

    /// Whether the library (of `tiles` tiles of `shape`, id `name`) can make this mosaic: its
    /// tiles' shape, enough distinct tiles for the repetition radius, and enough uses under the
    /// cap to fill every cell.
    pub fn check_library(
        &self,
        size: &JobSize,
        name: &str,
        tiles: u32,
        shape: TileShape,
    ) -> Result<(), SpecError> {
        let tile = self.tile();
        if tile.shape() != shape {
            return Err(SpecError::unusable(
                ErrorCode::ShapeMismatch,
                format!(
                    "tile_size {tile} makes {} tiles, but the library {name:?} holds {shape} \
                     tiles: give a tile_size of shape {shape}, such as {}, or choose a library of \
                     shape {}",
                    tile.shape(),
                    shape.size_near(f64::from(tile.width * tile.height).sqrt().round() as u32),
                    tile.shape()
                ),
            ));
        }
        let (cols, rows) = (size.sizing.cols, size.sizing.rows);
        let radius = self.options.repeat_radius;
        let needed = tessera_engine::plan::tiles_needed(cols, rows, radius);
        if (tiles as usize) < needed {
            return Err(SpecError::unusable(
                ErrorCode::LibraryTooSmall,
                format!(
                    "the library {name:?} has {tiles} pictures, but keeping each picture {radius} \
                     cells away from itself on a {cols} x {rows} grid takes at least {needed} \
                     different pictures: let pictures repeat closer together, use fewer cells or \
                     choose a larger library"
                ),
            ));
        }
        let cells = u64::from(cols) * u64::from(rows);
        if let Some(cap) = self.options.max_uses
            && u64::from(tiles) * u64::from(cap) < cells
        {
            let uses = cells.div_ceil(u64::from(tiles.max(1)));
            let tiles_needed = cells.div_ceil(u64::from(cap));
            return Err(SpecError::unusable(
                ErrorCode::TooFewUses,
                format!(
                    "{cells} cells ({cols} x {rows}) with each of the library {name:?}'s {tiles} \
                     pictures used at most {cap} times leaves {} cells empty: let each picture be \
                     used up to {uses} times, use at most {} cells, or choose a library of at \
                     least {tiles_needed} pictures",
                    cells - u64::from(tiles) * u64::from(cap),
                    u64::from(tiles) * u64::from(cap)
                ),
            ));
        }
        let floor = u64::from(self.options.min_uses);
        if floor > 0 && u64::from(tiles) * floor > cells {
            let needed = u64::from(tiles) * floor;
            // As many rows per column as now: cells across that give the cells needed.
            let across =
                ((needed as f64 * f64::from(cols) / f64::from(rows.max(1))).sqrt()).ceil() as u64;
            return Err(SpecError::unusable(
                ErrorCode::TooFewCells,
                format!(
                    "the library {name:?}'s {tiles} pictures, each at least {floor} times, need \
                     {needed} cells; the grid has {cells} ({cols} x {rows}): ask for about \
                     {across} cells across, fewer uses of each picture, or a smaller library"
                ),
            ));
        }
        if let Some(why) = tessera_engine::plan::floor_unworkable(
            (cols, rows),
            u64::from(tiles),
            radius,
            self.options.min_uses,
        ) {
            return Err(SpecError::unusable(
                ErrorCode::TooFewCells,
                format!("the library {name:?}: {why}"),
            ));
        }
        Ok(())
    }
}

/// Cells across for a job that names no grid: about `limits.auto_cells` cells in all, shaped
/// like the photo, and no more than keep the mosaic within `limits.large_output_pixels`.
pub fn auto_cells_across(width: u32, height: u32, tile: TileSize, limits: &JobLimits) -> u32 {
    let tile_pixels = u64::from(tile.width) * u64::from(tile.height);
    let budget = u64::from(limits.auto_cells)
        .min(limits.large_output_pixels / tile_pixels.max(1))
        .max(1) as f64;
    // Cells across x rows = budget, with rows = across x (height / width) x (tile width / height).
    let aspect = f64::from(height.max(1)) / f64::from(width.max(1)) * f64::from(tile.width)
        / f64::from(tile.height);
    let mut across = ((budget / aspect).sqrt().floor() as u32).clamp(1, limits.max_cells.max(1));
    // Rows are rounded as the engine rounds them: step back while that overshoots the size.
    let rows = |across: u32| (f64::from(across) * aspect).round().max(1.0) as u64;
    while across > 1 && u64::from(across) * rows(across) * tile_pixels > limits.large_output_pixels
    {
        across -= 1;
    }
    across
}

/// `16` or `24x18`.
pub(crate) fn parse_tile_size(text: &str) -> Result<TileSize, SpecError> {
    TileSize::parse(text).map_err(|e| match e {
        tessera_engine::Error::TileSize(side) => SpecError::invalid(
            ErrorCode::OutOfRange,
            format!(
                "tile_size must be {} to {} pixels a side, not {side} (in {text:?})",
                TILE_SIZES.start(),
                TILE_SIZES.end()
            ),
        ),
        _ => SpecError::invalid(
            ErrorCode::InvalidParameter,
            format!(
                "tile_size must be a whole number of pixels (16) or width x height (24x18), not \
                 {text:?}"
            ),
        ),
    })
}

impl Grid {
    /// Cells across as asked (`None`: one per pixel, or chosen by the photo's shape).
    pub fn cells(self) -> Option<u32> {
        match self {
            Grid::Cells { across } => Some(across),
            Grid::PerPixel | Grid::Auto => None,
        }
    }
}

impl WithOptions for JobSpec {
    fn options(&self) -> &RenderOptions {
        &self.options
    }
    fn options_mut(&mut self) -> &mut RenderOptions {
        &mut self.options
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(fields: &[(&str, &str)]) -> Result<JobSpec, SpecError> {
        JobSpec::from_fields(
            |name| fields.iter().find(|(n, _)| *n == name).map(|(_, v)| *v),
            &Defaults {
                library: "emoji".into(),
                slices: 8,
            },
        )
    }

    #[test]
    fn a_tall_photo_with_the_defaults_gets_a_mosaic_of_sensible_size() {
        let limits = JobLimits::default();
        let s = spec(&[]).unwrap();
        assert_eq!(s.grid, Grid::Auto);
        let size = s.size(100, 20_000, &limits).unwrap();
        let pixels = u64::from(size.output.width) * u64::from(size.output.height);
        assert!(pixels <= 200_000_000, "{size:?}");
        let cells = u64::from(size.sizing.cols) * u64::from(size.sizing.rows);
        assert!((10_000..=16_384).contains(&cells), "{size:?}");
        // A square photo keeps the old default of 128 across.
        assert_eq!(s.size(1000, 1000, &limits).unwrap().sizing.cols, 128);
        // Large tiles: fewer cells, within the size made unasked.
        let big = spec(&[("tile_size", "256")]).unwrap();
        let size = big.size(4000, 3000, &limits).unwrap();
        assert!(u64::from(size.output.width) * u64::from(size.output.height) <= 200_000_000);
    }

    #[test]
    fn an_output_over_the_large_size_needs_to_be_asked_for() {
        let limits = JobLimits::default();
        let s = spec(&[("cells", "1000"), ("tile_size", "32")]).unwrap();
        let err = s.size(1000, 1000, &limits).unwrap_err();
        assert_eq!(err.code(), "large_output");
        assert!(err.to_string().contains("allow_large"), "{err}");
        let asked = spec(&[
            ("cells", "1000"),
            ("tile_size", "32"),
            ("allow_large", "true"),
        ]);
        assert!(asked.unwrap().size(1000, 1000, &limits).is_ok());
    }

    #[test]
    fn too_few_uses_for_the_grid_is_refused_with_the_numbers() {
        let limits = JobLimits::default();
        let s = spec(&[("cells", "100"), ("max_uses", "10"), ("repeat_radius", "0")]).unwrap();
        let size = s.size(1000, 2000, &limits).unwrap();
        assert_eq!((size.sizing.cols, size.sizing.rows), (100, 200));
        let err = s
            .check_library(&size, "small", 61, TileShape::SQUARE)
            .unwrap_err();
        assert_eq!(err.code(), "too_few_uses");
        let text = err.to_string();
        for number in [
            "20000 cells",
            "61",
            "up to 328 times",
            "610 cells",
            "2000 pictures",
        ] {
            assert!(text.contains(number), "{number}: {text}");
        }
        assert!(
            s.check_library(&size, "big", 2000, TileShape::SQUARE)
                .is_ok()
        );
    }

    #[test]
    fn cross_field_rules_hold_in_one_place() {
        let limits = JobLimits::default();
        let codes =
            |fields: &[(&str, &str)]| spec(fields).unwrap().check(&limits).unwrap_err().code();
        assert_eq!(
            codes(&[("adaptive", "8..32"), ("tile_size", "24x18")]),
            "adaptive_not_square"
        );
        assert_eq!(
            codes(&[("adaptive", "8..32"), ("background", "auto")]),
            "adaptive_background"
        );
        assert_eq!(
            codes(&[("adaptive", "8..32"), ("per_pixel", "true")]),
            "conflicting_parameters"
        );
        assert_eq!(
            spec(&[("cells", "8"), ("per_pixel", "true")])
                .unwrap_err()
                .code(),
            "conflicting_parameters"
        );
        assert_eq!(
            spec(&[("max_uses", "0")]).unwrap_err().code(),
            "out_of_range"
        );
        assert_eq!(
            spec(&[("blend", "101")]).unwrap_err().code(),
            "out_of_range"
        );
        assert_eq!(
            spec(&[("overlay", "51")]).unwrap_err().code(),
            "out_of_range"
        );
        assert_eq!(spec(&[("overlay", "30")]).unwrap().options.overlay, 30);
        let wide = spec(&[("cells", "5000")]).unwrap();
        assert_eq!(wide.check(&limits).unwrap_err().code(), "out_of_range");
    }
}
