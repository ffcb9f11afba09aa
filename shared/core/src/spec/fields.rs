//! Every option of a job, declared once ([`FIELDS`]): its name, kind, range, default, flag,
//! label, hint, unit and how it reads in words, with how it is read from and written to a
//! [`JobSpec`]. The doors derive from this table: the form parser and the range checks
//! ([`JobSpec::from_fields`], [`JobSpec::check_fields`]), the API document
//! ([`submission_schema`]), the job's `params` ([`params`]), the job page's settings in words
//! ([`settings_in_words`]), the flags of `tessera render`, the home form's inputs and the options
//! document the page reads (`GET /api/v1/options`).

use serde::Serialize;

use super::field::{Field, Kind, Limit, Place, SpecError, Value, field_schema};
use super::job::{
    DEFAULT_JPEG_QUALITY, Defaults, FileFormat, Grid, IMAGE_SCHEMA, JobLimits, JobSpec, LibraryRef,
    MAX_WEBHOOK_CHARS, RULES_SCHEMA, SLICES_RANGE, parse_tile_size, tile_height_field,
};
use super::named_sizes::{MAX_PHOTO_SIDE, size_names};
use super::options::{RenderOptions, render_fields};
use crate::error_code::ErrorCode;
use crate::print::{Print, PrintError};
use tessera_engine::TileBackground;

impl<T> Field<T> {
    /// The largest value a whole-number option may take under `limits`.
    pub fn max(&self, limits: &JobLimits) -> Option<u32> {
        match self.kind {
            Kind::Whole { max, limit, .. } => Some(limit.map_or(max, |l| l.value(limits))),
            _ => None,
        }
    }
}

impl Limit {
    /// The limit's value in `limits`.
    pub fn value(self, limits: &JobLimits) -> u32 {
        match self {
            Limit::Cells => limits.max_cells,
            Limit::RepeatRadius => limits.max_repeat_radius,
        }
    }
}

/// An option of a job.
pub type JobField = Field<JobSpec>;

/// The fields before the render options.
const HEAD: [Field<JobSpec>; 5] = [
    Field {
        name: "library",
        flag: Ok("--library"),
        kind: Kind::Text {
            pattern: "^([a-z0-9][a-z0-9-]{0,47})?$",
            default: None,
            example: None,
            choices: &[],
            required: false,
            max_length: None,
        },
        label: "Tile library",
        hint: "The pictures the mosaic is made of.",
        description: "Library id (the configured default when omitted or empty).",
        unit: "",
        placeholder: "",
        place: Place::Main,
        sample: "no-such-library",
        get: |s| Value::text(&s.library.id),
        set: |s, v| {
            if let Some(id) = v.into_text() {
                s.library.id = id;
            }
            Ok(())
        },
        words: |s| Some(format!("{} (version {})", s.library.id, s.library.version)),
    },
    Field {
        name: "tile_size",
        flag: Ok("--tile-size"),
        kind: Kind::Text {
            pattern: "^(?:[4-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-6])(?:x(?:[4-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-6]))?$",
            default: Some("16"),
            // Square, so that it goes with `adaptive`'s example and the default library.
            example: Some("24"),
            choices: &[],
            required: true,
            max_length: None,
        },
        label: "Tile size (px)",
        hint: "4 to 256 px a side; width x height for libraries that are not square (24x18 for 4:3). On paper, tiles print 1 cm wide unless set here.",
        description: "Tile size in pixels: `16` for square tiles, or width x height such as `24x18` (each side 4 to 256). The tiles' shape must be the library's (`24x18` is 4:3; a square library takes square tiles). With print and no tile_size, tiles print 1 cm wide.",
        unit: "px",
        placeholder: "",
        place: Place::More,
        sample: "16",
        get: |s| Value::text(s.tile()),
        set: |s, v| {
            if let Some(t) = v.into_text() {
                let tile = parse_tile_size(&t)?;
                s.tile_size = tile.width;
                s.tile_height = tile_height_field(tile);
            }
            Ok(())
        },
        words: |s| Some(format!("{} px", s.tile())),
    },
    Field {
        name: "cells",
        flag: Ok("--cells"),
        kind: Kind::Whole {
            min: 1,
            max: 4096,
            default: None,
            limit: Some(Limit::Cells),
        },
        label: "Cells across",
        hint: "Tiles in one row; none: chosen from the photo's shape. Not with one tile per pixel.",
        description: "Cells across (at most limits.max_cells, 4096 by default); not with per_pixel or print. Absent: chosen by the photo's shape, for about limits.auto_cells cells (128 across a square photo) and a mosaic within limits.large_output_pixels.",
        unit: "",
        placeholder: "auto",
        place: Place::Main,
        sample: "8",
        get: |s| Value::Whole(s.grid.cells()),
        set: |s, v| {
            if let Some(across) = v.as_whole() {
                s.grid = Grid::Cells { across };
            }
            Ok(())
        },
        // The page's "Grid" line says how the grid was made.
        words: |_| None,
    },
    Field {
        name: "per_pixel",
        flag: Ok("--per-pixel"),
        kind: Kind::SWITCH,
        label: "One tile per pixel",
        hint: "One tile for each pixel of the image, for small images: the mosaic is the image's size times the tile size.",
        description: "One tile per pixel of the target; not with cells.",
        unit: "",
        placeholder: "",
        place: Place::Main,
        sample: "false",
        get: |s| Value::Switch(s.grid == Grid::PerPixel),
        set: |s, v| {
            if v == Value::Switch(true) {
                if let Grid::Cells { .. } = s.grid {
                    return Err(SpecError::invalid(
                        ErrorCode::ConflictingParameters,
                        "give either cells or per_pixel, not both",
                    ));
                }
                s.grid = Grid::PerPixel;
            }
            Ok(())
        },
        words: |_| None,
    },
    Field {
        name: "slices",
        flag: Err("a render on one machine is not cut into slices"),
        kind: Kind::Whole {
            min: *SLICES_RANGE.start(),
            max: *SLICES_RANGE.end(),
            default: None,
            limit: None,
        },
        label: "Parts made in parallel",
        hint: "The operator's default suits the size.",
        description: "Slices to render in parallel (rounded to whole rows of cells; the default suits the size).",
        unit: "",
        placeholder: "",
        place: Place::Nowhere,
        sample: "2",
        get: |s| Value::Whole(Some(s.slices)),
        set: |s, v| {
            if let Some(n) = v.as_whole() {
                s.slices = n;
            }
            Ok(())
        },
        words: |s| Some(s.slices.to_string()),
    },
];

/// The fields after the render options.
const TAIL: [Field<JobSpec>; 5] = [
    Field {
        name: "print",
        flag: Ok("--print"),
        kind: Kind::Text {
            pattern: "^\\s*(?:(?:[Aa][0-5]|[0-9]+(?:\\.[0-9]+)?x[0-9]+(?:\\.[0-9]+)?(?:cm|mm|in|CM|MM|IN))\\s*(?:@\\s*[0-9]+\\s*(?:dpi|ppi|DPI|PPI)?\\s*)?)?$",
            default: None,
            example: Some("A2@300dpi"),
            choices: &[
                ("A4@300dpi", "A4"),
                ("A3@300dpi", "A3"),
                ("A2@300dpi", "A2"),
                ("A1@300dpi", "A1"),
                ("A0@300dpi", "A0"),
                ("18x24in@300dpi", "18 x 24 in"),
                ("24x36in@300dpi", "24 x 36 in"),
                ("60x40cm@300dpi", "60 x 40 cm"),
            ],
            required: false,
            max_length: None,
        },
        label: "Paper size",
        hint: "A0 to A5, or width x height in cm, mm or in, then @ and the dots per inch (300 if left out): A2@300dpi, 60x40cm@300dpi, 18x24in. The paper turns to the photo; tiles print 1 cm wide unless a tile size is given.",
        description: "Size the mosaic as a print: a preset (A0 to A5) or width x height with a unit (cm, mm or in), then optionally @ and a resolution (72 to 1200 dpi; 300 when absent), as `A2@300dpi`, `60x40cm@300dpi` or `18x24in`. The paper turns to the photo's orientation, and the mosaic is the largest grid of whole tiles that fits on it with the photo uncropped; cells across follow from it, so give no cells (nor per_pixel or adaptive): 422 conflicting_parameters otherwise. Without tile_size, tiles print 1 cm wide; tiles that print smaller draw a warning. Outputs carry the resolution (300 dpi without print). Empty: none.",
        unit: "",
        placeholder: "",
        place: Place::Main,
        sample: "A4@150dpi",
        get: |s| Value::Text(s.print.map(|p| p.to_string())),
        set: |s, v| {
            s.print = v
                .into_text()
                .map(|t| {
                    t.parse::<Print>().map_err(|e| match e {
                        PrintError::Malformed(m) => {
                            SpecError::invalid(ErrorCode::InvalidParameter, m)
                        }
                        PrintError::OutOfRange(m) => {
                            SpecError::unusable(ErrorCode::PrintOutOfRange, m)
                        }
                    })
                })
                .transpose()?;
            Ok(())
        },
        // The page's "Print size" line says it with the size it gives.
        words: |_| None,
    },
    Field {
        name: "format",
        flag: Err(
            "tessera render takes the format from the output's extension: .png, .jpg or .tif",
        ),
        kind: Kind::Choice {
            choices: &[
                ("png", "PNG"),
                ("jpeg", "JPEG"),
                ("tiff", "TIFF (for print shops)"),
            ],
            default: "png",
        },
        label: "File",
        hint: "PNG keeps every pixel. JPEG is smaller, at the quality below. TIFF is tiled and pyramidal, for print shops and very large mosaics. All carry the print's resolution.",
        description: "The result's file: `png`, `jpeg` (at `quality`) or `tiff` (tiled, pyramidal, deflate; BigTIFF past 4 GB, for print shops and huge mosaics). Every format carries the print's resolution. The viewer and zoom tiles are made from the PNG, which is kept beside the others. Empty: png.",
        unit: "",
        placeholder: "",
        place: Place::More,
        sample: "tiff",
        get: |s| Value::text(s.format.name()),
        set: |s, v| {
            if let Some(t) = v.into_text() {
                s.format = FileFormat::parse(&t).ok_or_else(|| {
                    SpecError::invalid(
                        ErrorCode::InvalidParameter,
                        format!("format must be png, jpeg or tiff, not {t:?}"),
                    )
                })?;
            }
            Ok(())
        },
        words: |s| {
            Some(match s.format {
                FileFormat::Png => "PNG".to_string(),
                FileFormat::Jpeg => format!(
                    "JPEG, quality {}",
                    s.quality.unwrap_or(DEFAULT_JPEG_QUALITY)
                ),
                FileFormat::Tiff => "TIFF: tiled, pyramidal, deflate".to_string(),
            })
        },
    },
    Field {
        name: "quality",
        flag: Ok("--quality"),
        kind: Kind::Whole {
            min: 1,
            max: 100,
            default: Some(DEFAULT_JPEG_QUALITY as u32),
            limit: None,
        },
        label: "JPEG quality",
        hint: "The JPEG file's quality, 1 to 100; other files ignore it.",
        description: "JPEG quality, 1 to 100 (other formats ignore it).",
        unit: "",
        placeholder: "",
        place: Place::More,
        sample: "85",
        get: |s| Value::Whole(s.quality.map(u32::from)),
        set: |s, v| {
            s.quality = v.as_whole().map(|q| q.min(255) as u8);
            Ok(())
        },
        // The "File" line gives it.
        words: |_| None,
    },
    Field {
        name: "webhook",
        flag: Err("a render on one machine has no one to call back"),
        kind: Kind::Text {
            pattern: "^(?:[Hh][Tt][Tt][Pp][Ss]?://(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\\.){0,8}[A-Za-z][A-Za-z0-9-]{0,61}(?::[1-9][0-9]{0,3})?(?:/[A-Za-z0-9._~%/-]{0,1900})?)?$",
            default: None,
            example: Some("https://hooks.example.com/tessera"),
            choices: &[],
            required: false,
            max_length: Some(MAX_WEBHOOK_CHARS),
        },
        label: "Call a web address when done",
        hint: "None: no call. The address gets a signed notice when the mosaic is done or has failed; only hosts this service allows.",
        description: "Called with an HMAC-signed JSON POST when the job ends (done or failed), with retries and back-off. Only http or https URLs with a host and without credentials or a fragment, at most 2048 characters (otherwise 422 invalid_webhook), on hosts of the operator's allow-list (web.webhooks.allow; otherwise 422 webhook_not_allowed). Empty: none.",
        unit: "",
        placeholder: "https://hooks.example.com/tessera",
        place: Place::More,
        // Empty: none (a URL is refused where webhooks are off).
        sample: "",
        get: |s| Value::Text(s.webhook.clone()),
        set: |s, v| {
            s.webhook = v.into_text();
            Ok(())
        },
        words: |_| None,
    },
    Field {
        name: "allow_large",
        flag: Ok("--allow-large"),
        kind: Kind::SWITCH,
        label: "Make it this large",
        hint: "Make the mosaic even over the size made unasked (it takes long to make and to download).",
        description: "Make the mosaic even when it is larger than limits.large_output_pixels (200 megapixels by default); without it such a job is 422 large_output, naming the size.",
        unit: "",
        placeholder: "",
        place: Place::Main,
        sample: "true",
        get: |s| Value::Switch(s.allow_large),
        set: |s, v| {
            s.allow_large = v == Value::Switch(true);
            Ok(())
        },
        words: |_| None,
    },
];

/// Every option of a job submission but the image itself, in the order the form and the API
/// document give them.
pub const FIELDS: &[Field<JobSpec>] = &ALL;

const RENDER_FIELDS: [Field<JobSpec>; render_fields::<JobSpec>().len()] = render_fields();

const ALL: [Field<JobSpec>; HEAD.len() + RENDER_FIELDS.len() + TAIL.len()] =
    joined([&HEAD, &RENDER_FIELDS, &TAIL]);

/// `parts` one after the other (`N`: their lengths' sum).
const fn joined<const N: usize>(parts: [&[Field<JobSpec>]; 3]) -> [Field<JobSpec>; N] {
    let mut out = [parts[0][0]; N];
    let (mut at, mut part) = (0, 0);
    while part < parts.len() {
        let mut i = 0;
        while i < parts[part].len() {
            out[at] = parts[part][i];
            at += 1;
            i += 1;
        }
        part += 1;
    }
    out
}

/// The option called `name`.
pub fn field(name: &str) -> Option<&'static Field<JobSpec>> {
    FIELDS.iter().find(|f| f.name == name)
}

impl JobSpec {
    /// A spec of every option's declared default, the library and slices `defaults`' (the
    /// library's version 0 until a door resolves it).
    pub fn with_defaults(defaults: &Defaults) -> JobSpec {
        let mut spec = JobSpec {
            library: LibraryRef {
                id: defaults.library.clone(),
                version: 0,
            },
            slices: defaults
                .slices
                .clamp(*SLICES_RANGE.start(), *SLICES_RANGE.end()),
            ..JobSpec::unset()
        };
        apply_defaults(&mut spec);
        spec
    }

    /// A spec of nothing: every option at its type's nothing, before any default.
    pub(super) fn unset() -> JobSpec {
        let nothing = LibraryRef {
            id: String::new(),
            version: 0,
        };
        JobSpec {
            grid: Grid::Auto,
            options: RenderOptions::unset(),
            ..JobSpec::cells(nothing, 16, 0, 1)
        }
    }

    /// Reads a submission's text fields (`field(name)`: the field's text, if given): each field
    /// parsed as [`FIELDS`] declares it, none yet checked against the others or the limits
    /// ([`JobSpec::check`]). The library is the id asked for (its `version` is 0 until the door
    /// resolves it).
    pub fn from_fields<'a>(
        field: impl Fn(&str) -> Option<&'a str>,
        defaults: &Defaults,
    ) -> Result<JobSpec, SpecError> {
        let mut spec = JobSpec::with_defaults(defaults);
        for declared in FIELDS {
            if let Some(text) = field(declared.name) {
                let value = declared.parse(text)?;
                (declared.set)(&mut spec, value)?;
            }
        }
        if spec.library.id.is_empty() {
            return Err(SpecError::invalid(
                ErrorCode::MissingParameter,
                "library is required",
            ));
        }
        // A print fixes the pixels, so the grid follows from it; tiles print 1 cm by default.
        if let (Some(print), None) = (spec.print, field("tile_size")) {
            let tile = print.default_tile();
            spec.tile_size = tile.width;
            spec.tile_height = tile_height_field(tile);
        }
        // Transparent tiles lie over the background chosen to suit the photo unless another
        // is asked for; adaptive sizes take the library's own.
        if field("background").is_none_or(str::is_empty) && spec.options.adaptive.is_none() {
            spec.options.background = Some(TileBackground::Auto);
        }
        Ok(spec)
    }
}

impl JobSpec {
    /// Every whole-number option within its range (`limits`: with the operator's limits where
    /// they bound one).
    pub(super) fn check_ranges(&self, limits: Option<&JobLimits>) -> Result<(), SpecError> {
        for field in FIELDS {
            if let Value::Whole(Some(value)) = (field.get)(self) {
                let limit = match field.kind {
                    Kind::Whole { limit, .. } => limit,
                    _ => None,
                };
                field.check_range(value, limits.zip(limit).map(|(l, limit)| limit.value(l)))?;
            }
        }
        Ok(())
    }
}

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
        properties.insert(field.name.into(), field_schema(field));
    }
    let names: Vec<&String> = properties.keys().collect();
    serde_json::json!({
        "type": "object",
        "description": "A job submission (`multipart/form-data`). The grid is sized one way: \
            by `cells`, by `per_pixel`, by `print`, or by none of them (cells across follow the \
            photo); `adaptive` goes with `cells` or none. A submission leaves out the other \
            ways' fields.",
        "required": ["image"],
        "properties": properties,
        "additionalProperties": false,
        "anyOf": grid_ways(&names),
        "allOf": parse(RULES_SCHEMA),
    })
}

/// The JSON Schema of a sizing request (`application/x-www-form-urlencoded`): a submission's
/// fields and rules, with the photo's size (`width`, `height`) in place of the photo.
pub fn sizing_schema() -> serde_json::Value {
    let mut schema = submission_schema();
    let side = |which: &str| {
        serde_json::json!({
            "type": "integer", "minimum": 1, "maximum": MAX_PHOTO_SIDE,
            "description": format!("The photo's {which} in pixels, upright."),
        })
    };
    if let Some(properties) = schema["properties"].as_object_mut() {
        properties.remove("image");
        properties.insert("width".into(), side("width"));
        properties.insert("height".into(), side("height"));
        let names = size_names();
        properties.insert(
            "size".into(),
            serde_json::json!({
                "type": "string", "enum": names,
                "description": "A size by name: its tile size (of the library's shape) and \
                    cells across in place of the ones given; `paper` sets only the tile, for \
                    the print's resolution.",
            }),
        );
    }
    schema["required"] = serde_json::json!(["width", "height"]);
    schema["description"] = serde_json::json!(
        "A sizing request (`application/x-www-form-urlencoded`): the photo's size and the \
         fields of a job submission, with the same rules between them."
    );
    let names: Vec<String> = schema["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    let names: Vec<&String> = names.iter().collect();
    schema["anyOf"] = grid_ways(&names);
    schema
}

/// The ways a grid is sized, one branch each: the fields a branch leaves out are named in its
/// `propertyNames` (a branch that says nothing of a field leaves it to the others, so that a
/// generator following the branches never mixes two ways).
fn grid_ways(names: &[&String]) -> serde_json::Value {
    use serde_json::json;
    let without = |left_out: &[&str]| -> serde_json::Value {
        let kept: Vec<&&String> = names
            .iter()
            .filter(|n| !left_out.contains(&n.as_str()))
            .collect();
        json!({ "enum": kept })
    };
    json!([
        {
            "title": "cells",
            "properties": {"cells": {}, "adaptive": {}, "per_pixel": {"const": false}},
            "propertyNames": without(&["print"]),
        },
        {
            "title": "per_pixel",
            "required": ["per_pixel"],
            "properties": {"per_pixel": {"const": true}},
            "propertyNames": without(&["cells", "adaptive", "print"]),
        },
        {
            "title": "print",
            "required": ["print"],
            "propertyNames": without(&["cells", "adaptive", "per_pixel"]),
        },
        {
            "title": "auto",
            "properties": {"adaptive": {}, "per_pixel": {"const": false}},
            "propertyNames": without(&["cells", "print"]),
        },
    ])
}

/// The spec every option's default makes (the library and slices the door's).
fn apply_defaults(spec: &mut JobSpec) {
    for field in FIELDS {
        if let Some(value) = field.default_value() {
            // Defaults are in range.
            let _ = (field.set)(spec, value);
        }
    }
}

/// The job's options as the API's `params` show them: each option's value by name (null: not
/// given).
pub fn params(spec: &JobSpec) -> serde_json::Map<String, serde_json::Value> {
    FIELDS
        .iter()
        .map(|field| {
            let value = match (field.get)(spec) {
                Value::Whole(v) => serde_json::json!(v),
                Value::Switch(b) => serde_json::json!(b),
                Value::Text(t) => serde_json::json!(t),
            };
            (field.name.to_string(), value)
        })
        .collect()
}

/// The job's options in words, label first, as the job page lists them.
pub fn settings_in_words(spec: &JobSpec) -> Vec<(&'static str, String)> {
    FIELDS
        .iter()
        .filter_map(|field| (field.words)(spec).map(|words| (field.label, words)))
        .collect()
}

/// One option as the options document gives it to the page (`GET /api/v1/options`).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct OptionDoc {
    pub name: &'static str,
    /// `whole`, `switch`, `text` or `choice`.
    pub kind: &'static str,
    pub label: &'static str,
    pub hint: &'static str,
    pub unit: &'static str,
    pub placeholder: &'static str,
    /// The `tessera render` flag, if any.
    pub flag: Option<&'static str>,
    /// A whole number's bounds here (the operator's limits applied).
    pub min: Option<u32>,
    pub max: Option<u32>,
    /// What an absent value means, as text (empty: none).
    pub default: String,
    /// The values offered.
    pub choices: Vec<Choice>,
    /// Where the home form offers it: `main`, `more` or `none`.
    pub place: &'static str,
}

/// A value the form offers for an option.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Choice {
    pub value: &'static str,
    pub label: &'static str,
}

/// Every option as the page reads it, with this service's limits.
pub fn options_document(limits: &JobLimits) -> Vec<OptionDoc> {
    FIELDS
        .iter()
        .map(|field| {
            let (kind, min, choices) = match field.kind {
                Kind::Whole { min, .. } => ("whole", Some(min), &[][..]),
                Kind::Switch { .. } => ("switch", None, &[][..]),
                Kind::Text { choices, .. } => ("text", None, choices),
                Kind::Choice { choices, .. } => ("choice", None, choices),
            };
            OptionDoc {
                name: field.name,
                kind,
                label: field.label,
                hint: field.hint,
                unit: field.unit,
                placeholder: field.placeholder,
                flag: field.flag.ok(),
                min,
                max: field.max(limits).filter(|m| *m != u32::MAX),
                default: field.default_text(),
                choices: choices
                    .iter()
                    .map(|&(value, label)| Choice { value, label })
                    .collect(),
                place: match field.place {
                    Place::Main => "main",
                    Place::More => "more",
                    Place::Nowhere => "none",
                },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_option_is_declared_once_with_a_label_and_a_schema() {
        let mut names = std::collections::BTreeSet::new();
        for field in FIELDS {
            assert!(names.insert(field.name), "{} declared twice", field.name);
            assert!(!field.label.is_empty() && !field.description.is_empty());
            let schema = field_schema(field);
            assert!(schema["type"].is_string(), "{}: {schema}", field.name);
            if let Kind::Text { pattern, .. } = field.kind {
                assert!(pattern.starts_with('^') && pattern.ends_with('$'));
            }
        }
    }

    #[test]
    fn whole_numbers_are_checked_against_their_declared_range() {
        let blend = field("blend").unwrap();
        assert_eq!(blend.parse("100").unwrap(), Value::Whole(Some(100)));
        let err = blend.parse("101").unwrap_err();
        assert_eq!(err.to_string(), "blend must be 0 to 100, not 101");
        let cells = field("cells").unwrap();
        // The operator's limit applies at the service's doors, not at parsing.
        assert!(cells.parse("9999").is_ok());
        let limits = JobLimits::default();
        assert_eq!(
            cells
                .check_range(9999, Some(limits.max_cells))
                .unwrap_err()
                .to_string(),
            "cells must be 1 to 4096, not 9999"
        );
    }
}
