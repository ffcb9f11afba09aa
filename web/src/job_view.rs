//! The job as the API shows it: a stable JSON shape over the stored record.

use std::collections::BTreeMap;
use tessera_shared::lifecycle::{RetentionSettings, expires_at};

use serde::Serialize;
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use tessera_shared::jobs::{JobQuality, JobRecord, JobState, KeptCells, OutputSize};
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
    /// What the service changed of the options the submission left at their defaults so that
    /// its library could make the mosaic, and why (a library too small for the default
    /// repetition radius: `params` show the radius used).
    pub adapted: Vec<String>,
    /// The slices rendered so far.
    pub slices: Vec<SliceView>,
    /// Storage transactions spent on the job, by role.
    pub transactions: BTreeMap<String, u64>,
    /// Why the job failed (present once it has).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub error: Option<String>,
    /// For a mosaic made again from an earlier one (an event's), the earlier job and how many
    /// cells changed (present once planned).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub kept: Option<KeptCells>,
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

/// The options `params` gives in fields of their own (the library with its version, the tile
/// width as a number) rather than as the specification's text.
pub const PARAMS_OF_THEIR_OWN: &[&str] = &["library", "tile_size"];

/// The job's parameters: the library at its version, the tile and grid as made, and every
/// option of the job specification by its name ([`tessera_shared::spec::params`]; the API
/// document lists them from the same declaration).
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = JobParams)]
pub struct ParamsView {
    pub library: LibraryRef,
    /// Tile width in pixels (the side, for square tiles).
    pub tile_size: u32,
    /// Tile height in pixels (`tile_size`, for square tiles).
    pub tile_height: u32,
    /// `cells` (as asked), `per_pixel`, `auto` (cells across chosen by the photo's shape) or
    /// `print` (cells across chosen by the print size).
    #[schema(example = "auto")]
    pub grid: &'static str,
    pub input_name: String,
    /// Every other option by its name, null when not given.
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub options: serde_json::Map<String, serde_json::Value>,
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
                grid,
                input_name: r.params.input_name.clone(),
                options: {
                    let mut options = tessera_shared::spec::params(spec);
                    options.retain(|name, _| !PARAMS_OF_THEIR_OWN.contains(&name.as_str()));
                    options
                },
            },
            warnings: spec.warnings(),
            adapted: r.adapted.clone(),
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
            kept: r.kept.clone(),
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
