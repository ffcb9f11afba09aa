//! The job as the API shows it: a stable JSON shape over the stored record.

use std::collections::BTreeMap;
use tessera_shared::lifecycle::{RetentionSettings, expires_at};

use serde::Serialize;
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use tessera_shared::jobs::{JobQuality, JobRecord, JobState, OutputSize};
use tessera_shared::messages::{Grid, LibraryRef};

/// A job: its state, progress, parameters and, once known, its size and quality.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = Job)]
pub struct JobView {
    pub id: Uuid,
    pub state: JobState,
    pub progress: Progress,
    /// The mosaic's size (known from submission).
    #[schema(required = true)]
    pub output: Option<OutputSize>,
    /// The mosaic's quality figures, null until the job is planned.
    #[schema(required = true)]
    pub quality: Option<JobQuality>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(required = true)]
    pub finished_at: Option<OffsetDateTime>,
    /// When the job and its result will be deleted (null while it runs, or when kept forever).
    #[serde(with = "time::serde::rfc3339::option")]
    #[schema(required = true)]
    pub expires_at: Option<OffsetDateTime>,
    /// How the job was made: present once its size is known (at submission).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub resolved: Option<Resolved>,
    /// The job's parameters as submitted (the library pinned to its version).
    pub params: ParamsView,
    /// What the person should know, though the job runs: tiles that print under about 1 cm.
    pub warnings: Vec<String>,
    /// The slices rendered so far.
    pub slices: Vec<SliceView>,
    /// Storage transactions spent on the job, by role.
    pub transactions: BTreeMap<String, u64>,
    /// Why the job failed (present once it has).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub error: Option<String>,
    /// The result's path (present once the job is done).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub result_url: Option<String>,
    pub links: Links,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Progress {
    pub slices_done: u32,
    pub slices_total: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = JobParams)]
pub struct ParamsView {
    pub library: LibraryRef,
    /// Tile width in pixels (the side, for square tiles).
    pub tile_size: u32,
    /// Tile height in pixels (`tile_size`, for square tiles).
    pub tile_height: u32,
    /// Cells across as asked, or null in one-tile-per-pixel mode and when the photo's shape
    /// chose them (`auto`; `resolved` has the grid made).
    #[schema(required = true)]
    pub cells: Option<u32>,
    pub per_pixel: bool,
    /// `cells` (as asked), `per_pixel`, `auto` (cells across chosen by the photo's shape) or
    /// `print` (cells across chosen by the print size).
    #[schema(example = "auto")]
    pub grid: &'static str,
    pub slices: u32,
    pub repeat_radius: u32,
    /// Most uses of any one tile, or null for no cap.
    #[schema(required = true)]
    pub max_uses: Option<u32>,
    /// Fewest uses of each tile (0: no floor; 1: every tile is in).
    pub min_uses: u32,
    #[schema(maximum = 100)]
    pub blend: u8,
    /// Opacity of the photo laid over the tiles, percent (0: none).
    #[schema(maximum = 50)]
    pub overlay: u8,
    /// Colour against form, 0 (colour alone) to 100.
    #[schema(maximum = 100)]
    pub form: u8,
    /// Tiles may be mirrored left-right.
    pub flip: bool,
    /// Tiles may be turned by quarter turns (tiles that are not square: by the half turn only).
    pub rotate: bool,
    /// What transparent tiles lie over, as asked: `auto` or `rrggbb` (absent: the library's
    /// own background).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background: Option<String>,
    /// Adaptive tile sizes, `MIN..MAX` pixels, or null for the uniform grid.
    #[schema(required = true, example = "8..32")]
    pub adaptive: Option<String>,
    /// Whether the job asked for a mosaic over the service's size made unasked.
    pub allow_large: bool,
    /// The result's file format: `png`, `jpeg` or `tiff`.
    #[schema(example = "png")]
    pub format: &'static str,
    /// JPEG quality (null: the default, 90, or not JPEG).
    #[schema(required = true, minimum = 1, maximum = 100)]
    pub quality: Option<u8>,
    /// The print size asked for (`A2@300dpi`), or null when the grid was asked for in cells.
    #[schema(required = true, example = "A2@300dpi")]
    pub print: Option<String>,
    pub input_name: String,
}

/// How the job was made, as resolved from what it asked: the grid and size the photo gave, and
/// the background `auto` chose.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Resolved {
    /// Cells across and rows made (of the smallest square, for adaptive sizes).
    pub cols: u32,
    pub rows: u32,
    /// The mosaic in pixels.
    pub width: u32,
    pub height: u32,
    /// The colour transparent tiles were laid over (`rrggbb`), once planned; absent for a
    /// library without transparency.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false, pattern = "^[0-9a-f]{6}$")]
    pub background: Option<String>,
    /// The resolution the outputs carry (the print's, or 300).
    pub dpi: u32,
    /// The mosaic's printed size at `dpi`, in centimetres.
    pub width_cm: f64,
    pub height_cm: f64,
    /// A tile's printed width at `dpi`, in centimetres.
    pub tile_cm: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = Slice)]
pub struct SliceView {
    pub seq: u32,
    /// The processor and slot that rendered it (`name/slot`).
    pub processor: String,
    pub render_ms: u64,
    #[serde(with = "time::serde::rfc3339")]
    pub finished_at: OffsetDateTime,
}

#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Links {
    #[serde(rename = "self")]
    pub this: String,
    pub events: String,
    pub result: String,
}

/// The file name a mosaic downloads as, after the photo it was made of: `sunset.jpg` gives
/// `sunset-mosaic.png`. Letters and digits of any script stay; anything else becomes `-`.
pub fn download_name(input_name: &str) -> String {
    download_name_as(input_name, "png")
}

/// [`download_name`] for a result of another format (`jpg`, `tif`).
pub fn download_name_as(input_name: &str, extension: &str) -> String {
    named_after(input_name, &format!("mosaic.{extension}"))
}

/// A file named after the photo a job was made of: `sunset.jpg` and `placements.csv` give
/// `sunset-placements.csv` (`what` alone when the photo's name has nothing usable).
pub fn named_after(input_name: &str, what: &str) -> String {
    let base = input_name.rsplit(['/', '\\']).next().unwrap_or_default();
    let stem = match base.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem,
        _ => base,
    };
    let mut name = String::new();
    for c in stem.chars().take(80) {
        if c.is_alphanumeric() || c == '_' {
            name.push(c);
        } else if !name.ends_with('-') {
            name.push('-');
        }
    }
    let name = name.trim_matches('-');
    if name.is_empty() {
        what.to_string()
    } else {
        format!("{name}-{what}")
    }
}

/// The path of a job's resource.
pub fn job_path(id: Uuid) -> String {
    format!("/api/v1/jobs/{id}")
}

impl JobView {
    /// The view of `r`, whose result expires as `retention` says.
    pub fn new(r: &JobRecord, retention: &RetentionSettings) -> Self {
        let path = job_path(r.id);
        let done = r.state == tessera_shared::jobs::JobState::Done;
        let spec = &r.params.spec;
        let grid = match spec.grid {
            Grid::Cells { .. } => "cells",
            Grid::PerPixel => "per_pixel",
            Grid::Auto if spec.print.is_some() => "print",
            Grid::Auto => "auto",
        };
        let dpi = spec.dpi();
        let cm = |px: u32| (tessera_shared::print::cm(px, dpi) * 100.0).round() / 100.0;
        JobView {
            id: r.id,
            state: r.state,
            progress: Progress {
                slices_done: r.slices_done(),
                slices_total: r.slices_total,
            },
            output: r.output,
            quality: r.quality.clone(),
            created_at: r.created_at,
            updated_at: r.updated_at,
            finished_at: r.finished_at,
            expires_at: expires_at(r, retention.retention()),
            resolved: r.output.map(|o| Resolved {
                cols: o.cols,
                rows: o.rows,
                width: o.width,
                height: o.height,
                background: r.quality.as_ref().and_then(|q| q.background.clone()),
                dpi,
                width_cm: cm(o.width),
                height_cm: cm(o.height),
                tile_cm: cm(spec.tile().width),
            }),
            params: ParamsView {
                library: spec.library.clone(),
                tile_size: spec.tile_size,
                tile_height: spec.tile().height,
                cells: spec.grid.cells(),
                per_pixel: spec.grid == Grid::PerPixel,
                grid,
                slices: spec.slices,
                repeat_radius: spec.options.repeat_radius,
                max_uses: spec.options.max_uses,
                min_uses: spec.options.min_uses,
                blend: spec.options.blend_percent,
                overlay: spec.options.overlay_percent,
                form: spec.options.form,
                flip: spec.options.flip,
                rotate: spec.options.rotate,
                background: spec.options.background.map(|bg| bg.to_string()),
                adaptive: spec.options.adaptive.map(|sizes| sizes.to_string()),
                allow_large: spec.allow_large,
                print: spec.print.map(|p| p.to_string()),
                format: spec.format.name(),
                quality: spec.quality,
                input_name: r.params.input_name.clone(),
            },
            warnings: spec.warnings(),
            slices: r
                .slices
                .iter()
                .map(|(seq, s)| SliceView {
                    seq: *seq,
                    processor: s.processor.clone(),
                    render_ms: s.render_ms,
                    finished_at: s.finished_at,
                })
                .collect(),
            transactions: r.transactions.clone(),
            error: r.error.clone(),
            result_url: done.then(|| format!("{path}/result")),
            links: Links {
                events: format!("{path}/events"),
                result: format!("{path}/result"),
                this: path,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::download_name;

    #[test]
    fn downloads_are_named_after_the_photo() {
        assert_eq!(download_name("sunset.jpg"), "sunset-mosaic.png");
        assert_eq!(download_name("IMG 0042.HEIC"), "IMG-0042-mosaic.png");
        assert_eq!(
            download_name("C:\\photos\\café au lait.png"),
            "café-au-lait-mosaic.png"
        );
        assert_eq!(download_name("../../etc/passwd"), "passwd-mosaic.png");
        assert_eq!(download_name("\"quoted\";.png"), "quoted-mosaic.png");
        assert_eq!(download_name(""), "mosaic.png");
        assert_eq!(download_name("..."), "mosaic.png");
        assert_eq!(
            super::download_name_as("sunset.jpg", "tif"),
            "sunset-mosaic.tif"
        );
    }
}
