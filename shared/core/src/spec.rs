//! What a job asks for: one [`JobSpec`] from the door to the processor.
//!
//! Each door builds it once: the web role's multipart form through [`JobSpec::from_fields`],
//! `tessera render` from its flags, the queues by deserializing the `ImageRequest` (which carries
//! it, as do the job record and every `SliceRequest`). It is checked once against the operator's
//! [`JobLimits`] ([`JobSpec::check`]), sized once ([`JobSpec::size`]: cells, rows and output
//! pixels, with the same limits in the web role and the controller), checked against its library
//! once ([`JobSpec::check_library`]) and converted once to the engine's plan options
//! ([`JobSpec::plan_options`]). [`FIELDS`] lists every field a job takes, for the form, the API
//! document and the test that keeps the doors in step.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::print::{DEFAULT_DPI, Print, PrintError};
use tessera_engine::{
    AdaptiveSizes, AdaptiveSizing, Grid as EngineGrid, PlanOptions, Sizing, TILE_SIZES,
    TileBackground, TileShape, TileSize,
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

/// Matching and rendering options a job carries from the upload to every slice.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RenderOptions {
    /// No identical tile within this Chebyshev distance (0: unlimited repeats).
    pub repeat_radius: u32,
    /// How far each tile is moved toward its cell's colour, 0 to 100 %.
    pub blend_percent: u8,
    /// An optional cap on the number of uses of any one tile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_uses: Option<u32>,
    /// Every tile at least this many times (absent: 0, no floor): 1 puts every photo in.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub min_uses: u32,
    /// Tiles may be mirrored left-right (absent: false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flip: bool,
    /// Tiles may be turned by quarter turns (absent: false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rotate: bool,
    /// What transparent tiles lie over: `library`, `auto` or a colour as `rrggbb` hex
    /// (absent: the library's own background, as `library`). Not with `adaptive`.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "wire_text")]
    #[schemars(with = "Option<String>")]
    pub background: Option<TileBackground>,
    /// Adaptive tile sizes, `"MIN..MAX"` (as `"8..32"`): square tiles of several sizes, large
    /// where the photo is flat and small where it is detailed, no more of them than the uniform
    /// grid has. Absent: the uniform grid, and the messages read as they did before.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "wire_text")]
    #[schemars(with = "Option<String>")]
    pub adaptive: Option<AdaptiveSizes>,
    /// The photo laid over the tiles at this opacity, 0 to 50 % (absent: 0, none). The quality
    /// figures give the mosaic with it and without it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub overlay_percent: u8,
    /// Colour against form, 0 to 100 (absent: [`DEFAULT_FORM`]): 0 chooses each tile by its
    /// colour alone; higher follows the photo's light and dark within each cell and its edges
    /// from cell to cell more, at some cost in colour.
    #[serde(default = "default_form", skip_serializing_if = "is_default_form")]
    pub form: u8,
}

/// The colour-against-form weight of a job that gives none: the matcher's weights as tuned on
/// the development photos (likeness from afar 0.710 against 0.675 by colour alone, for 2.8 % more
/// colour error, on the astronaut in emoji).
pub const DEFAULT_FORM: u8 = 50;

fn default_form() -> u8 {
    DEFAULT_FORM
}

fn is_default_form(v: &u8) -> bool {
    *v == DEFAULT_FORM
}

fn is_zero(v: &u8) -> bool {
    *v == 0
}

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}

impl RenderOptions {
    /// The background transparent tiles lie over.
    pub fn tile_background(&self) -> TileBackground {
        self.background.unwrap_or_default()
    }
}

/// An option that travels as text (`"8..32"`, `"auto"`): written as it displays, parsed (and
/// so checked) as it is read.
trait WireText: std::fmt::Display + Sized {
    fn from_wire(text: &str) -> Result<Self, String>;
}

impl WireText for TileBackground {
    fn from_wire(text: &str) -> Result<Self, String> {
        TileBackground::parse(text)
    }
}

impl WireText for Print {
    fn from_wire(text: &str) -> Result<Self, String> {
        text.parse()
            .map_err(|e: crate::print::PrintError| e.to_string())
    }
}

impl WireText for AdaptiveSizes {
    fn from_wire(text: &str) -> Result<Self, String> {
        text.parse().map_err(|e| format!("adaptive: {e}"))
    }
}

/// Serde for an optional [`WireText`] field.
mod wire_text {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::WireText;

    pub fn serialize<T: WireText, S: Serializer>(
        value: &Option<T>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(value) => s.collect_str(value),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, T: WireText, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<T>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|text| T::from_wire(&text).map_err(serde::de::Error::custom))
            .transpose()
    }
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            repeat_radius: 1,
            blend_percent: 0,
            max_uses: None,
            min_uses: 0,
            flip: false,
            rotate: false,
            background: None,
            adaptive: None,
            overlay_percent: 0,
            form: DEFAULT_FORM,
        }
    }
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

/// One field of a job, as the form and the API name it, and the `tessera render` flag that sets
/// the same (`None`: the field has no meaning for a render on one machine, with the reason).
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub name: &'static str,
    pub flag: Result<&'static str, &'static str>,
    /// The field's JSON Schema in the API document (as multipart text: numbers and booleans
    /// as their words), with its description.
    pub schema: &'static str,
}

/// The submission's image, as the API document describes it.
pub const IMAGE_SCHEMA: &str = r#"{"type": "string", "format": "binary", "description": "The target image: JPEG, PNG, HEIC, AVIF, WebP, TIFF, BMP or GIF. Colour profiles are honoured.", "minLength": 1}"#;

/// The rules between fields, as the API document states them ([`JobSpec::check_fields`] enforces
/// the same): `per_pixel` gives neither `cells` nor `adaptive`, `adaptive` takes a square
/// `tile_size` and no `background` but the library's own, and `print` gives none of `cells`,
/// `per_pixel` and `adaptive`.
pub const RULES_SCHEMA: &str = r#"[{"anyOf": [{"properties": {"per_pixel": {"const": false}}}, {"properties": {"adaptive": false, "cells": false}}]}, {"anyOf": [{"properties": {"adaptive": {"maxLength": 0}}}, {"properties": {"tile_size": {"pattern": "^[0-9]+$"}}}]}, {"anyOf": [{"properties": {"adaptive": {"maxLength": 0}}}, {"properties": {"background": {"pattern": "^[Ll][Ii][Bb][Rr][Aa][Rr][Yy]$"}}}]}, {"anyOf": [{"properties": {"print": {"maxLength": 0}}}, {"properties": {"cells": false, "per_pixel": {"const": false}, "adaptive": {"maxLength": 0}}}]}]"#;

/// The JSON Schema of a job submission (`multipart/form-data`): the image and every field of
/// [`FIELDS`], with the rules between them. The API document's `JobSubmission`.
pub fn submission_schema() -> serde_json::Value {
    let parse = |text: &str| {
        serde_json::from_str::<serde_json::Value>(text).unwrap_or_else(
            |e| serde_json::json!({ "description": format!("(schema unreadable: {e})") }),
        )
    };
    let mut properties = serde_json::Map::new();
    properties.insert("image".into(), parse(IMAGE_SCHEMA));
    for field in FIELDS {
        properties.insert(field.name.into(), parse(field.schema));
    }
    serde_json::json!({
        "type": "object",
        "description": "A job submission (`multipart/form-data`).",
        "required": ["image"],
        "properties": properties,
        "additionalProperties": false,
        "allOf": parse(RULES_SCHEMA),
    })
}

/// Every field of a job submission but the image itself. The test of the doors walks this list:
/// each field must be read by the form parser, documented in the API, offered by the home form and
/// (unless it says why not) a flag of `tessera render`.
pub const FIELDS: &[Field] = &[
    Field {
        name: "library",
        flag: Ok("--library"),
        schema: r#"{"type": "string", "description": "Library id (the configured default when omitted or empty).", "pattern": "^([a-z0-9][a-z0-9-]{0,47})?$"}"#,
    },
    Field {
        name: "tile_size",
        flag: Ok("--tile-size"),
        schema: r#"{"type": "string", "description": "Tile size in pixels: `16` for square tiles, or width x height such as `24x18` (each side 4 to 256). The tiles' shape must be the library's (`24x18` is 4:3; a square library takes square tiles).", "default": "16", "example": "24x18", "pattern": "^(?:[4-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-6])(?:x(?:[4-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-6]))?$"}"#,
    },
    Field {
        name: "cells",
        flag: Ok("--cells"),
        schema: r#"{"type": "integer", "format": "int32", "description": "Cells across (at most limits.max_cells, 4096 by default); not with per_pixel. Absent or empty: chosen by the photo's shape, for about limits.auto_cells cells (128 across a square photo) and a mosaic within limits.large_output_pixels.", "maximum": 4096, "minimum": 1}"#,
    },
    Field {
        name: "per_pixel",
        flag: Ok("--per-pixel"),
        schema: r#"{"type": "boolean", "description": "One tile per pixel of the target.", "default": false}"#,
    },
    Field {
        name: "slices",
        flag: Err("a render on one machine is not cut into slices"),
        schema: r#"{"type": "integer", "format": "int32", "description": "Slices to render in parallel (rounded to whole rows of cells; the default suits the size).", "maximum": 1024, "minimum": 1}"#,
    },
    Field {
        name: "repeat_radius",
        flag: Ok("--repeat-radius"),
        schema: r#"{"type": "integer", "format": "int32", "description": "No tile repeats within this many cells (at most limits.max_repeat_radius, 16 by default).", "default": 1, "maximum": 16, "minimum": 0}"#,
    },
    Field {
        name: "max_uses",
        flag: Ok("--max-uses"),
        schema: r#"{"type": "integer", "format": "int32", "description": "Use each tile at most this many times (absent: no cap). When the library's tiles times this cannot fill the grid: 422 too_few_uses, naming the cap, the cells or the library size that would.", "example": 1, "maximum": 4294967295, "minimum": 1}"#,
    },
    Field {
        name: "min_uses",
        flag: Ok("--min-uses"),
        schema: r#"{"type": "integer", "format": "int32", "description": "Use every tile at least this many times (1: every photo is in the mosaic), solved as one assignment over the whole grid; at most max_uses. When the grid has fewer cells than the library's tiles times this: 422 too_few_cells, naming the cells across that would fit. Not with adaptive.", "default": 0, "maximum": 1000, "minimum": 0}"#,
    },
    Field {
        name: "blend",
        flag: Ok("--blend"),
        schema: r#"{"type": "integer", "format": "int32", "description": "Percent of each cell's colour error corrected by tinting its tile.", "default": 0, "maximum": 100, "minimum": 0}"#,
    },
    Field {
        name: "overlay",
        flag: Ok("--overlay"),
        schema: r#"{"type": "integer", "format": "int32", "description": "Percent opacity of the photo laid over the tiles (ghosting), 0 to 50. The quality figures give the mosaic with it and without it.", "default": 0, "maximum": 50, "minimum": 0}"#,
    },
    Field {
        name: "form",
        flag: Ok("--form"),
        schema: r#"{"type": "integer", "format": "int32", "description": "Colour against form, 0 to 100: 0 chooses each tile by its colour alone (the least colour error); higher follows the photo's light and dark within each cell, and its edges from cell to cell, more (a closer likeness from across the room, at some cost in colour).", "default": 50, "maximum": 100, "minimum": 0}"#,
    },
    Field {
        name: "flip",
        flag: Ok("--flip"),
        schema: r#"{"type": "boolean", "description": "Tiles may be mirrored left-right where that fits their cell better.", "default": false}"#,
    },
    Field {
        name: "rotate",
        flag: Ok("--rotate"),
        schema: r#"{"type": "boolean", "description": "Tiles may be turned by 90, 180 or 270 degrees where that fits their cell better (with flip: all 8 symmetries of the square); tiles that are not square turn by 180 degrees only. A turned tile still counts as itself for the repetition radius.", "default": false}"#,
    },
    Field {
        name: "background",
        flag: Ok("--background"),
        schema: r#"{"type": "string", "description": "What the transparent parts of tiles (emoji, cut-outs) lie over: `library` (the colour the library was imported over), `auto` (black, a grey, white or the photo's mean colour, whichever brings the tiles nearest the photo) or a colour as `rrggbb` or `#rrggbb`. Opaque tiles look the same under all. Not with adaptive (422 adaptive_background).", "default": "library", "example": "auto", "pattern": "^(?:[Ll][Ii][Bb][Rr][Aa][Rr][Yy]|[Aa][Uu][Tt][Oo]|#?[0-9A-Fa-f]{6})$"}"#,
    },
    Field {
        name: "adaptive",
        flag: Ok("--adaptive"),
        schema: r#"{"type": "string", "description": "Adaptive tile sizes, MIN..MAX pixels (as `8..32`; each 4 to 256, and the largest the smallest doubled one or more times): square tiles of several sizes, large where the photo is flat and small where it is detailed, with no more tiles than the uniform grid of `cells` and `tile_size` would have; the output is that grid's size rounded up to whole squares of MAX. Needs a square tile_size and cells across (not per_pixel). Empty or absent: the uniform grid. Sizes that do not double are 422 adaptive_not_doubling, an oblong tile_size 422 adaptive_not_square, and a largest size whose squares alone are more than the uniform grid's tiles 422 adaptive_too_coarse.", "example": "8..32", "pattern": "^(?:(?:[4-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-6])\\.\\.(?:[4-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-6]))?$"}"#,
    },
    Field {
        name: "print",
        flag: Ok("--print"),
        schema: r#"{"type": "string", "description": "Size the mosaic as a print: a preset (A0 to A5) or width x height with a unit (cm, mm or in), then optionally @ and a resolution (72 to 1200 dpi; 300 when absent), as `A2@300dpi`, `60x40cm@300dpi` or `18x24in`. The paper turns to the photo's orientation, and the mosaic is the largest grid of whole tiles that fits on it with the photo uncropped; cells across follow from it, so give no cells (nor per_pixel or adaptive). Without tile_size, tiles print 1 cm wide; tiles that print smaller draw a warning. Outputs carry the resolution (300 dpi without print).", "example": "A2@300dpi", "pattern": "^\\s*(?:[Aa][0-5]|[0-9]+(?:\\.[0-9]+)?x[0-9]+(?:\\.[0-9]+)?(?:cm|mm|in|CM|MM|IN))\\s*(?:@\\s*[0-9]+\\s*(?:dpi|ppi|DPI|PPI)?\\s*)?$"}"#,
    },
    Field {
        name: "format",
        flag: Err(
            "tessera render takes the format from the output's extension: .png, .jpg or .tif",
        ),
        schema: r#"{"type": "string", "description": "The result's file: `png`, `jpeg` (at `quality`) or `tiff` (tiled, pyramidal, deflate; BigTIFF past 4 GB, for print shops and huge mosaics). Every format carries the print's resolution. The viewer and zoom tiles are made from the PNG, which is kept beside the others.", "default": "png", "enum": ["png", "jpeg", "tiff"]}"#,
    },
    Field {
        name: "quality",
        flag: Ok("--quality"),
        schema: r#"{"type": "integer", "format": "int32", "description": "JPEG quality, 1 to 100 (other formats ignore it).", "default": 90, "maximum": 100, "minimum": 1}"#,
    },
    Field {
        name: "webhook",
        flag: Err("a render on one machine has no one to call back"),
        schema: r#"{"type": "string", "format": "uri", "maxLength": 2048, "description": "Called with an HMAC-signed JSON POST when the job ends (done or failed), with retries and back-off. Only http or https URLs without credentials (otherwise 422 invalid_webhook), on hosts of the operator's allow-list (web.webhooks.allow; otherwise 422 webhook_not_allowed).", "example": "https://hooks.example.com/tessera"}"#,
    },
    Field {
        name: "allow_large",
        flag: Ok("--allow-large"),
        schema: r#"{"type": "boolean", "description": "Make the mosaic even when it is larger than limits.large_output_pixels (200 megapixels by default); without it such a job is 422 large_output, naming the size.", "default": false}"#,
    },
];

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

    fn parse(text: &str) -> Option<FileFormat> {
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
}

/// Longest webhook URL a job may carry.
pub const MAX_WEBHOOK_CHARS: usize = 2048;

/// Checks a webhook URL's form: `http` or `https`, a host, no credentials, no fragment, at most
/// [`MAX_WEBHOOK_CHARS`]. Whether its host may be called is the operator's allow-list.
pub fn check_webhook(text: &str) -> Result<url::Url, SpecError> {
    let bad = |why: &str| SpecError::invalid("invalid_parameter", format!("webhook: {why}"));
    if text.len() > MAX_WEBHOOK_CHARS {
        return Err(bad(&format!("longer than {MAX_WEBHOOK_CHARS} characters")));
    }
    let url = url::Url::parse(text).map_err(|e| bad(&format!("not a URL ({e})")))?;
    // A URL, but not one that can be called back: 422.
    let bad = |why: &str| SpecError::unusable("invalid_webhook", format!("webhook: {why}"));
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

/// Why a job specification is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// A field is malformed, out of range or given with one it excludes (HTTP 400).
    #[error("{message}")]
    Invalid { code: &'static str, message: String },
    /// Well formed, but unusable with this photo, this library or these limits (HTTP 422).
    #[error("{message}")]
    Unusable { code: &'static str, message: String },
}

impl SpecError {
    fn invalid(code: &'static str, message: impl Into<String>) -> Self {
        SpecError::Invalid {
            code,
            message: message.into(),
        }
    }

    fn unusable(code: &'static str, message: impl Into<String>) -> Self {
        SpecError::Unusable {
            code,
            message: message.into(),
        }
    }

    /// The stable error code clients see.
    pub fn code(&self) -> &'static str {
        match self {
            SpecError::Invalid { code, .. } | SpecError::Unusable { code, .. } => code,
        }
    }
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

/// Defaults a door fills in where a submission says nothing.
#[derive(Debug, Clone, Default)]
pub struct Defaults {
    /// The library of a job that names none (empty: `library` is required).
    pub library: String,
    /// Slices of a job that names none.
    pub slices: u32,
}

impl JobSpec {
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

    /// Reads a submission's text fields (`field(name)`: the field's text, if given): each field
    /// parsed, none yet checked against the others or the limits ([`JobSpec::check`]). The
    /// library is the id asked for (its `version` is 0 until the door resolves it).
    pub fn from_fields<'a>(
        field: impl Fn(&str) -> Option<&'a str>,
        defaults: &Defaults,
    ) -> Result<JobSpec, SpecError> {
        let get = |name: &str| field(name);
        // `library`, `background` and `adaptive` may be sent empty: the default, as absent.
        let given = |name: &str| field(name).filter(|t| !t.is_empty());
        let library = match given("library") {
            Some(id) => id.to_string(),
            None if !defaults.library.is_empty() => defaults.library.clone(),
            None => {
                return Err(SpecError::invalid(
                    "missing_parameter",
                    "library is required",
                ));
            }
        };
        let tile = match get("tile_size") {
            Some(text) => parse_tile_size(text)?,
            None => TileSize::square(16),
        };
        let per_pixel = parse_bool("per_pixel", get("per_pixel"))?;
        let cells = get("cells").map(|t| parse_u32("cells", t)).transpose()?;
        let grid = match (per_pixel, cells) {
            (true, Some(_)) => {
                return Err(SpecError::invalid(
                    "conflicting_parameters",
                    "give either cells or per_pixel, not both",
                ));
            }
            (true, None) => Grid::PerPixel,
            (false, Some(across)) => Grid::Cells { across },
            (false, None) => Grid::Auto,
        };
        let slices = match get("slices") {
            Some(t) => parse_u32("slices", t)?,
            None => defaults
                .slices
                .clamp(*SLICES_RANGE.start(), *SLICES_RANGE.end()),
        };
        let repeat_radius = get("repeat_radius")
            .map(|t| parse_u32("repeat_radius", t))
            .transpose()?
            .unwrap_or(1);
        let blend_percent = parse_u8_in("blend", get("blend"), 0..=100, "")?.unwrap_or(0);
        let max_uses = get("max_uses")
            .map(|t| parse_u32("max_uses", t))
            .transpose()?;
        let min_uses = get("min_uses")
            .map(|t| parse_u32("min_uses", t))
            .transpose()?
            .unwrap_or(0);
        let overlay_percent =
            parse_u8_in("overlay", get("overlay"), 0..=50, " (percent)")?.unwrap_or(0);
        let background = given("background")
            .map(|text| {
                TileBackground::parse(text).map_err(|e| {
                    SpecError::invalid("invalid_parameter", format!("background: {e}"))
                })
            })
            .transpose()?
            // `library` is the default: none asked for.
            .filter(|bg| *bg != TileBackground::Library);
        let adaptive = given("adaptive").map(parse_adaptive).transpose()?;
        let print = given("print")
            .map(|text| {
                text.parse::<Print>().map_err(|e| match e {
                    PrintError::Malformed(m) => SpecError::invalid("invalid_parameter", m),
                    PrintError::OutOfRange(m) => SpecError::unusable("print_out_of_range", m),
                })
            })
            .transpose()?;
        // A print fixes the pixels, so the grid follows from it; tiles print 1 cm by default.
        let tile = match (print, get("tile_size")) {
            (Some(print), None) => print.default_tile(),
            _ => tile,
        };
        let spec = JobSpec {
            library: LibraryRef {
                id: library,
                version: 0,
            },
            tile_size: tile.width,
            tile_height: tile_height_field(tile),
            grid,
            slices,
            options: RenderOptions {
                repeat_radius,
                blend_percent,
                max_uses,
                min_uses,
                flip: parse_bool("flip", get("flip"))?,
                rotate: parse_bool("rotate", get("rotate"))?,
                background,
                adaptive,
                overlay_percent,
                form: parse_u8_in("form", get("form"), 0..=100, "")?.unwrap_or(DEFAULT_FORM),
            },
            allow_large: parse_bool("allow_large", get("allow_large"))?,
            print,
            format: match given("format") {
                None => FileFormat::Png,
                Some(text) => FileFormat::parse(text).ok_or_else(|| {
                    SpecError::invalid(
                        "invalid_parameter",
                        format!("format must be png, jpeg or tiff, not {text:?}"),
                    )
                })?,
            },
            quality: parse_u8_in("quality", get("quality"), 1..=100, "")?,
            webhook: given("webhook").map(str::to_string),
        };
        Ok(spec)
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
                    "out_of_range",
                    format!(
                        "{name} must be {} to {} pixels, not {side}",
                        TILE_SIZES.start(),
                        TILE_SIZES.end()
                    ),
                ));
            }
        }
        if !SLICES_RANGE.contains(&self.slices) {
            return Err(SpecError::invalid(
                "out_of_range",
                format!(
                    "slices must be {} to {}, not {}",
                    SLICES_RANGE.start(),
                    SLICES_RANGE.end(),
                    self.slices
                ),
            ));
        }
        if let Grid::Cells { across: 0 } = self.grid {
            return Err(SpecError::invalid(
                "out_of_range",
                "cells must be at least 1",
            ));
        }
        let options = &self.options;
        if options.blend_percent > 100 {
            return Err(SpecError::invalid(
                "out_of_range",
                format!("blend must be 0 to 100, not {}", options.blend_percent),
            ));
        }
        if options.min_uses > 1000 {
            return Err(SpecError::invalid(
                "out_of_range",
                format!("min_uses must be 0 to 1000, not {}", options.min_uses),
            ));
        }
        if let Some(cap) = options.max_uses
            && options.min_uses > cap
        {
            // Each value valid alone; together, a request that cannot be met.
            return Err(SpecError::unusable(
                "out_of_range",
                format!(
                    "min_uses ({}) cannot be over max_uses ({cap})",
                    options.min_uses
                ),
            ));
        }
        if options.min_uses > 0 && options.adaptive.is_some() {
            return Err(SpecError::unusable(
                "adaptive_min_uses",
                "min_uses is for a uniform grid: adaptive tile sizes cannot promise each tile a place",
            ));
        }
        if options.overlay_percent > 50 {
            return Err(SpecError::invalid(
                "out_of_range",
                format!(
                    "overlay must be 0 to 50 (percent), not {}",
                    options.overlay_percent
                ),
            ));
        }
        if let Some(print) = self.print {
            let other = match self.grid {
                Grid::Cells { .. } => Some("cells"),
                Grid::PerPixel => Some("per_pixel"),
                Grid::Auto => options.adaptive.map(|_| "adaptive"),
            };
            if let Some(other) = other {
                return Err(SpecError::unusable(
                    "conflicting_parameters",
                    format!(
                        "print {print} sets the grid from the paper: give either print or {other}, \
                         not both"
                    ),
                ));
            }
        }
        if let Some(q) = self.quality
            && !(1..=100).contains(&q)
        {
            return Err(SpecError::invalid(
                "out_of_range",
                format!("quality must be 1 to 100, not {q}"),
            ));
        }
        if options.form > 100 {
            return Err(SpecError::invalid(
                "out_of_range",
                format!("form must be 0 to 100, not {}", options.form),
            ));
        }
        if options.max_uses == Some(0) {
            return Err(SpecError::invalid(
                "out_of_range",
                "max_uses must be at least 1 (leave it out for no cap)",
            ));
        }
        if let Some(sizes) = options.adaptive {
            if self.grid == Grid::PerPixel {
                return Err(SpecError::invalid(
                    "conflicting_parameters",
                    "adaptive needs cells across: give either adaptive or per_pixel, not both",
                ));
            }
            if !tile.is_square() {
                return Err(SpecError::unusable(
                    "adaptive_not_square",
                    format!(
                        "adaptive {sizes} makes square tiles, but tile_size {tile} is not square: \
                         give a square tile_size (and a square library), or no adaptive sizes"
                    ),
                ));
            }
            if options.tile_background() != TileBackground::Library {
                return Err(SpecError::unusable(
                    "adaptive_background",
                    format!(
                        "adaptive {sizes} lays tiles over the library's own background: leave \
                         background out (or library), or give no adaptive sizes"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The operator's limits on cells and the repetition radius, then
    /// [`JobSpec::check_fields`].
    pub fn check(&self, limits: &JobLimits) -> Result<(), SpecError> {
        if let Grid::Cells { across } = self.grid
            && !(1..=limits.max_cells).contains(&across)
        {
            return Err(SpecError::invalid(
                "out_of_range",
                format!("cells must be 1 to {}, not {across}", limits.max_cells),
            ));
        }
        if self.options.repeat_radius > limits.max_repeat_radius {
            return Err(SpecError::invalid(
                "out_of_range",
                format!(
                    "repeat_radius must be 0 to {}, not {}",
                    limits.max_repeat_radius, self.options.repeat_radius
                ),
            ));
        }
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
            blend: options.blend_percent,
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
                .map_err(|e| SpecError::unusable("print_too_small", e))?;
            if across > limits.max_cells {
                return Err(SpecError::unusable(
                    "print_too_many_cells",
                    format!(
                        "print {print} in tiles of {} px needs {across} cells across, over this \
                         service's {}: use larger tiles or a lower resolution",
                        self.tile(),
                        limits.max_cells
                    ),
                ));
            }
        }
        let options = self.plan_options(width, height, limits);
        let refused = |e: tessera_engine::Error| match e {
            tessera_engine::Error::OutputTooLarge {
                width,
                height,
                limit,
            } => SpecError::unusable(
                "output_too_large",
                format!(
                    "the mosaic would be {width} x {height} px ({:.2} gigapixels), over this \
                     service's limit of {:.2}: use fewer cells or smaller tiles, or have the \
                     operator raise limits.max_output_pixels (TESSERA_LIMITS__MAX_OUTPUT_PIXELS)",
                    (width * height) as f64 / 1e9,
                    limit as f64 / 1e9
                ),
            ),
            tessera_engine::Error::AdaptiveBudget { .. } => {
                SpecError::unusable("adaptive_too_coarse", format!("adaptive: {e}"))
            }
            e => SpecError::invalid("invalid_parameter", e.to_string()),
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
        let pixels = u64::from(output.width) * u64::from(output.height);
        if pixels > limits.large_output_pixels && !self.allow_large {
            return Err(SpecError::unusable(
                "large_output",
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
        Ok(JobSize {
            sizing,
            output,
            options,
        })
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
                "shape_mismatch",
                format!(
                    "tile_size {tile} makes {} tiles, but the library {name:?} holds {shape} \
                     tiles: give a tile_size of shape {shape} or choose a library of shape {}",
                    tile.shape(),
                    tile.shape()
                ),
            ));
        }
        let (cols, rows) = (size.sizing.cols, size.sizing.rows);
        let radius = self.options.repeat_radius;
        let needed = tessera_engine::plan::tiles_needed(cols, rows, radius);
        if (tiles as usize) < needed {
            return Err(SpecError::unusable(
                "library_too_small",
                format!(
                    "the library {name:?} has {tiles} tiles, but a repetition radius of {radius} \
                     on a {cols} x {rows} grid needs at least {needed} different tiles: lower the \
                     repetition radius, use fewer cells or choose a larger library"
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
                "too_few_uses",
                format!(
                    "{cells} cells ({cols} x {rows}) with each of the library {name:?}'s {tiles} \
                     tiles used at most {cap} times leaves {} cells empty: allow max_uses={uses}, \
                     use at most {} cells, or choose a library of at least {tiles_needed} tiles",
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
                "too_few_cells",
                format!(
                    "the library {name:?}'s {tiles} tiles, each at least {floor} times, need \
                     {needed} cells; the grid has {cells} ({cols} x {rows}): ask for about \
                     {across} cells across, a lower min_uses, or a smaller library"
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
                "too_few_cells",
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

fn parse_u32(name: &str, text: &str) -> Result<u32, SpecError> {
    text.parse().map_err(|_| {
        SpecError::invalid(
            "invalid_parameter",
            format!("{name} must be a whole number, not {text:?}"),
        )
    })
}

/// A whole-number field within `range`, if given: 400 `out_of_range` outside it, naming the
/// range (and `unit` after it).
fn parse_u8_in(
    name: &str,
    text: Option<&str>,
    range: std::ops::RangeInclusive<u8>,
    unit: &str,
) -> Result<Option<u8>, SpecError> {
    let Some(value) = text.map(|t| parse_u32(name, t)).transpose()? else {
        return Ok(None);
    };
    match u8::try_from(value) {
        Ok(v) if range.contains(&v) => Ok(Some(v)),
        _ => Err(SpecError::invalid(
            "out_of_range",
            format!(
                "{name} must be {} to {}{unit}, not {value}",
                range.start(),
                range.end()
            ),
        )),
    }
}

fn parse_bool(name: &str, text: Option<&str>) -> Result<bool, SpecError> {
    match text {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(other) => Err(SpecError::invalid(
            "invalid_parameter",
            format!("{name} must be true or false, not {other:?}"),
        )),
    }
}

/// `16` or `24x18`.
fn parse_tile_size(text: &str) -> Result<TileSize, SpecError> {
    TileSize::parse(text).map_err(|e| match e {
        tessera_engine::Error::TileSize(side) => SpecError::invalid(
            "out_of_range",
            format!(
                "tile_size must be {} to {} pixels a side, not {side} (in {text:?})",
                TILE_SIZES.start(),
                TILE_SIZES.end()
            ),
        ),
        _ => SpecError::invalid(
            "invalid_parameter",
            format!(
                "tile_size must be a whole number of pixels (16) or width x height (24x18), not \
                 {text:?}"
            ),
        ),
    })
}

/// `MIN..MAX`. Malformed or a side out of range: invalid, as for `tile_size`; sides that do not
/// double: unusable.
fn parse_adaptive(text: &str) -> Result<AdaptiveSizes, SpecError> {
    let side = |v: &str| {
        (!v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
            .then(|| v.parse::<u32>().ok())
            .flatten()
    };
    let Some((min, max)) = text
        .split_once("..")
        .and_then(|(min, max)| Some((side(min)?, side(max)?)))
    else {
        return Err(SpecError::invalid(
            "invalid_parameter",
            format!("adaptive must be MIN..MAX in pixels (as 8..32), not {text:?}"),
        ));
    };
    if let Some(side) = [min, max].into_iter().find(|s| !TILE_SIZES.contains(s)) {
        return Err(SpecError::invalid(
            "out_of_range",
            format!(
                "adaptive must be {} to {} pixels a side, not {side} (in {text:?})",
                TILE_SIZES.start(),
                TILE_SIZES.end()
            ),
        ));
    }
    AdaptiveSizes::new(min, max).map_err(|_| {
        SpecError::unusable(
            "adaptive_not_doubling",
            format!(
                "adaptive {text}: the largest size must be the smallest doubled one or more \
                 times (as 8..16, 8..32 or 8..64)"
            ),
        )
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
            "max_uses=328",
            "610 cells",
            "2000 tiles",
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
        assert_eq!(codes(&[("max_uses", "0")]), "out_of_range");
        assert_eq!(
            spec(&[("blend", "101")]).unwrap_err().code(),
            "out_of_range"
        );
        assert_eq!(
            spec(&[("overlay", "51")]).unwrap_err().code(),
            "out_of_range"
        );
        assert_eq!(
            spec(&[("overlay", "30")]).unwrap().options.overlay_percent,
            30
        );
        let wide = spec(&[("cells", "5000")]).unwrap();
        assert_eq!(wide.check(&limits).unwrap_err().code(), "out_of_range");
    }
}
