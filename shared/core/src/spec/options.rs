//! The options of matching and rendering ([`RenderOptions`]), each declared once in
//! `render_options!`: one entry gives the struct's field (its name is the form's, the API's,
//! the record's and the wire's; `#[serde(alias)]` reads the names of older messages), its type,
//! and its [`Field`] (kind with range and default, flag, label, hint, description, how it reads
//! in words). The struct's doc comments, its defaults, its `get` and `set` and its part of
//! [`crate::spec::FIELDS`] are made from the entry.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::field::{Field, Kind, Limit, Place, SpecError, Value};
use crate::error_code::ErrorCode;
use crate::print::Print;
use tessera_engine::{AdaptiveSizes, TILE_SIZES, TileBackground};

/// What carries [`RenderOptions`] (a job's specification): what the declared fields read and
/// write.
pub trait WithOptions: 'static {
    fn options(&self) -> &RenderOptions;
    fn options_mut(&mut self) -> &mut RenderOptions;
}

/// A type an option's value has in [`RenderOptions`], read from and written as a [`Value`].
pub trait OptionValue: Sized {
    fn to_value(&self) -> Value;
    /// The value `value` (parsed and in range) gives; absent is the type's nothing.
    fn from_value(value: Value) -> Result<Self, SpecError>;
}

impl OptionValue for u32 {
    fn to_value(&self) -> Value {
        Value::Whole(Some(*self))
    }
    fn from_value(value: Value) -> Result<Self, SpecError> {
        Ok(value.as_whole().unwrap_or(0))
    }
}

/// A percentage or other small number that the range check has kept within a byte.
impl OptionValue for u8 {
    fn to_value(&self) -> Value {
        Value::Whole(Some((*self).into()))
    }
    fn from_value(value: Value) -> Result<Self, SpecError> {
        Ok(value.as_whole().map_or(0, |v| v.min(255) as u8))
    }
}

impl OptionValue for Option<u32> {
    fn to_value(&self) -> Value {
        Value::Whole(*self)
    }
    fn from_value(value: Value) -> Result<Self, SpecError> {
        Ok(value.as_whole())
    }
}

impl OptionValue for bool {
    fn to_value(&self) -> Value {
        Value::Switch(*self)
    }
    fn from_value(value: Value) -> Result<Self, SpecError> {
        Ok(matches!(value, Value::Switch(true)))
    }
}

impl OptionValue for Option<TileBackground> {
    fn to_value(&self) -> Value {
        Value::Text(self.map(|bg| bg.to_string()))
    }
    fn from_value(value: Value) -> Result<Self, SpecError> {
        Ok(value
            .into_text()
            .map(|t| {
                TileBackground::parse(&t).map_err(|e| {
                    SpecError::invalid(ErrorCode::InvalidParameter, format!("background: {e}"))
                })
            })
            .transpose()?
            // `library` is the default: none asked for.
            .filter(|bg| *bg != TileBackground::Library))
    }
}

impl OptionValue for Option<AdaptiveSizes> {
    fn to_value(&self) -> Value {
        Value::Text(self.map(|a| a.to_string()))
    }
    fn from_value(value: Value) -> Result<Self, SpecError> {
        value.into_text().as_deref().map(parse_adaptive).transpose()
    }
}

/// Declares [`RenderOptions`] and its [`Field`]s (`render_fields`) from one entry per option.
macro_rules! render_options {
    ($(
        $(#[$attr:meta])*
        $name:ident: $ty:ty {
            flag: $flag:expr,
            kind: $kind:expr,
            label: $label:expr,
            hint: $hint:expr,
            description: $description:expr,
            unit: $unit:expr,
            placeholder: $placeholder:expr,
            sample: $sample:expr,
            words: $words:expr $(,)?
        }
    ),* $(,)?) => {
        /// Matching and rendering options a job carries from the upload to every slice. An
        /// option left out of a message or a record takes its declared default.
        #[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
        #[serde(default)]
        pub struct RenderOptions {
            $( #[doc = $description] $(#[$attr])* pub $name: $ty, )*
        }

        impl RenderOptions {
            /// Every option at its type's nothing (0, false, none), before the defaults.
            pub(super) fn unset() -> RenderOptions {
                RenderOptions { $( $name: <$ty>::default(), )* }
            }
        }

        /// The options of [`RenderOptions`] as fields of what carries them, in the order the
        /// form and the API give them.
        pub(super) const fn render_fields<S: WithOptions>() -> [Field<S>; [$(stringify!($name)),*].len()] { [$(
            Field {
                name: stringify!($name),
                flag: $flag,
                kind: $kind,
                label: $label,
                hint: $hint,
                description: $description,
                unit: $unit,
                placeholder: $placeholder,
                place: Place::More,
                sample: $sample,
                get: |s| OptionValue::to_value(&s.options().$name),
                set: |s, v| {
                    s.options_mut().$name = OptionValue::from_value(v)?;
                    Ok(())
                },
                words: |s| {
                    let words: fn(&$ty) -> Option<String> = $words;
                    words(&s.options().$name)
                },
            },
        )*] }
    };
}

fn yes_no(b: &bool) -> Option<String> {
    Some(if *b { "yes" } else { "no" }.to_string())
}

render_options! {
    repeat_radius: u32 {
        flag: Ok("--repeat-radius"),
        kind: Kind::whole(0, 16, Some(1)).limited_by(Limit::RepeatRadius),
        label: "Repetition radius",
        hint: "No tile repeats within this many cells of itself (1: no identical neighbours; 0: no limit).",
        description: "No tile repeats within this many cells (at most limits.max_repeat_radius, 16 by default).",
        unit: "",
        placeholder: "",
        sample: "1",
        words: |v| Some(v.to_string()),
    },
    #[serde(skip_serializing_if = "Option::is_none")]
    max_uses: Option<u32> {
        flag: Ok("--max-uses"),
        kind: Kind::whole(1, u32::MAX, None),
        label: "Use each tile at most (times)",
        hint: "1 puts each picture in once at most; none: no limit.",
        description: "Use each tile at most this many times (absent: no cap). When the library's tiles times this cannot fill the grid: 422 too_few_uses, naming the cap, the cells or the library size that would.",
        unit: "",
        placeholder: "no limit",
        sample: "3",
        words: |v| Some(v.map_or_else(|| "no limit".to_string(), |n| format!("at most {n}"))),
    },
    min_uses: u32 {
        flag: Ok("--min-uses"),
        kind: Kind::whole(0, 1000, Some(0)),
        label: "Use each tile at least (times)",
        hint: "1 puts every picture in the mosaic (a guest book, a team): the grid needs at least as many cells as the library has pictures.",
        description: "Use every tile at least this many times (1: every photo is in the mosaic), solved as one assignment over the whole grid; at most max_uses. When the grid has fewer cells than the library's tiles times this: 422 too_few_cells, naming the cells across that would fit. Not with adaptive.",
        unit: "",
        placeholder: "",
        sample: "1",
        words: |v| (*v > 0).then(|| format!("at least {v}")),
    },
    every_tile: bool {
        flag: Ok("--every-tile"),
        kind: Kind::SWITCH,
        label: "Every picture once, where there is room",
        hint: "Puts every picture of the library in the mosaic when the grid has a cell for each (an event's mosaic: every guest's photo); with more pictures than cells, as many as fit, each at most where it suits best.",
        description: "Every tile at least once when the grid has as many cells as the library has tiles (min_uses 1, set when the job is accepted and said in its adapted notes otherwise); with more tiles than cells, no floor. Ignored when min_uses is given or with adaptive.",
        unit: "",
        placeholder: "",
        sample: "true",
        words: yes_no,
    },
    #[serde(alias = "blend_percent")]
    blend: u8 {
        flag: Ok("--blend"),
        kind: Kind::whole(0, 100, Some(0)),
        label: "Blend (%)",
        hint: "How far each tile is tinted toward the photo's colours: 0 keeps the tiles as they are, 100 tints them fully.",
        description: "Percent of each cell's colour error corrected by tinting its tile.",
        unit: "%",
        placeholder: "",
        sample: "10",
        words: |v| Some(format!("{v} %")),
    },
    #[serde(alias = "overlay_percent")]
    overlay: u8 {
        flag: Ok("--overlay"),
        kind: Kind::whole(0, 50, Some(0)),
        label: "Photo overlay (%)",
        hint: "Lays the photo itself over the tiles, 0 to 50 % opaque (ghosting): a closer likeness that the tiles did not make. The job page says so, and gives the quality with it and without it.",
        description: "Percent opacity of the photo laid over the tiles (ghosting), 0 to 50. The quality figures give the mosaic with it and without it.",
        unit: "%",
        placeholder: "",
        sample: "30",
        words: |v| (*v > 0).then(|| format!(
            "{v} %: the photo is laid over the tiles, which makes it look closer than the tiles alone do"
        )),
    },
    grout: u8 {
        flag: Ok("--grout"),
        kind: Kind::whole(0, 16, Some(0)),
        label: "Grout (px)",
        hint: "Lines this wide between the tiles, as between the stones of a real mosaic: in the colour behind transparent tiles when that is a colour, white otherwise.",
        description: "Width in pixels of the lines drawn between tiles (grout), 0 to 16: half of it on each side of a tile's edge, in the background colour when `background` is a colour, white otherwise. 0: none.",
        unit: "px",
        placeholder: "",
        sample: "2",
        words: |v| (*v > 0).then(|| format!("{v} px")),
    },
    form: u8 {
        flag: Ok("--form"),
        kind: Kind::whole(0, 100, Some(DEFAULT_FORM as u32)),
        label: "Colour or form",
        hint: "Colour against form. 0: each tile chosen by its colour alone, the least colour difference. Higher: tiles follow the photo's light and dark and its edges more, a closer likeness from across the room, at some cost in colour.",
        description: "Colour against form, 0 to 100: 0 chooses each tile by its colour alone (the least colour error); higher follows the photo's light and dark within each cell, and its edges from cell to cell, more (a closer likeness from across the room, at some cost in colour).",
        unit: "",
        placeholder: "",
        sample: "70",
        words: |v| Some(match v {
            0 => "0: colour alone".to_string(),
            f => format!("{f} (0: colour alone, 100: the most form)"),
        }),
    },
    flip: bool {
        flag: Ok("--flip"),
        kind: Kind::SWITCH,
        label: "Mirror tiles",
        hint: "Tiles may be mirrored where that follows the photo better; best with patterns and textures, less so with faces or text.",
        description: "Tiles may be mirrored left-right where that fits their cell better.",
        unit: "",
        placeholder: "",
        sample: "true",
        words: yes_no,
    },
    rotate: bool {
        flag: Ok("--rotate"),
        kind: Kind::SWITCH,
        label: "Turn tiles",
        hint: "Tiles may be turned where that follows the photo better (with mirroring: all 8 symmetries of the square); tiles that are not square turn by half turns only. A turned tile still counts as itself for the repetition radius and the uses.",
        description: "Tiles may be turned by 90, 180 or 270 degrees where that fits their cell better (with flip: all 8 symmetries of the square); tiles that are not square turn by 180 degrees only. A turned tile still counts as itself for the repetition radius.",
        unit: "",
        placeholder: "",
        sample: "true",
        words: yes_no,
    },
    #[serde(with = "wire_text", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    background: Option<TileBackground> {
        flag: Ok("--background"),
        kind: Kind::Text {
            pattern: "^(?:[Ll][Ii][Bb][Rr][Aa][Rr][Yy]|[Aa][Uu][Tt][Oo]|#?[0-9A-Fa-f]{6})?$",
            default: Some("auto"),
            // None: `adaptive`'s example takes the library's own background only.
            example: None,
            choices: &[
                ("library", "The library's own background"),
                ("auto", "Chosen to suit the photo"),
                ("000000", "Black"),
                ("808080", "Grey"),
                ("ffffff", "White"),
            ],
            required: false,
            max_length: None,
        },
        label: "Behind transparent tiles",
        hint: "What shows through tiles with transparent parts, such as emoji.",
        description: "What the transparent parts of tiles (emoji, cut-outs) lie over: `library` (the colour the library was imported over), `auto` (black, a grey, white or the photo's mean colour, whichever brings the tiles nearest the photo) or a colour as `rrggbb` or `#rrggbb`. Opaque tiles look the same under all. Not with adaptive (422 adaptive_background). Absent or empty: auto, or library with adaptive.",
        unit: "",
        placeholder: "",
        sample: "auto",
        // The page adds the colour `auto` chose.
        words: |v| Some(v.unwrap_or_default().to_string()),
    },
    #[serde(with = "wire_text", skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    adaptive: Option<AdaptiveSizes> {
        flag: Ok("--adaptive"),
        kind: Kind::Text {
            pattern: "^(?:(?:[4-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-6])\\.\\.(?:[4-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-6]))?$",
            default: None,
            example: Some("8..32"),
            choices: &[],
            required: false,
            max_length: None,
        },
        label: "Adaptive tile sizes (px)",
        hint: "Tiles of several sizes, smallest..largest such as 8..32: large tiles where the photo is calm, small ones at its detail; none: one size.",
        description: "Adaptive tile sizes, MIN..MAX pixels (as `8..32`; each 4 to 256, and the largest the smallest doubled one or more times): square tiles of several sizes, large where the photo is flat and small where it is detailed, with no more tiles than the uniform grid of `cells` and `tile_size` would have; the output is that grid's size rounded up to whole squares of MAX. Needs a square tile_size and cells across (not per_pixel). Empty or absent: the uniform grid. Sizes that do not double are 422 adaptive_not_doubling, an oblong tile_size 422 adaptive_not_square, and a largest size whose squares alone are more than the uniform grid's tiles 422 adaptive_too_coarse.",
        unit: "px",
        placeholder: "8..32",
        // Empty: the uniform grid (a sample goes with every other sample).
        sample: "",
        words: |v| Some(v.map_or_else(|| "no".to_string(), |a| format!("{a} px"))),
    },
}

impl RenderOptions {
    /// The background transparent tiles lie over.
    pub fn tile_background(&self) -> TileBackground {
        self.background.unwrap_or_default()
    }
}

impl WithOptions for RenderOptions {
    fn options(&self) -> &RenderOptions {
        self
    }
    fn options_mut(&mut self) -> &mut RenderOptions {
        self
    }
}

impl Default for RenderOptions {
    /// Every option's declared default.
    fn default() -> Self {
        let mut options = RenderOptions::unset();
        for field in &render_fields::<RenderOptions>() {
            if let Some(value) = field.default_value() {
                // Defaults are in range.
                let _ = (field.set)(&mut options, value);
            }
        }
        options
    }
}

/// The colour-against-form weight of a job that gives none: the matcher's weights as tuned on
/// the development photos (likeness from afar 0.710 against 0.675 by colour alone, for 2.8 % more
/// colour error, on the astronaut in emoji).
pub const DEFAULT_FORM: u8 = 50;

/// An option that travels as text (`"8..32"`, `"auto"`): written as it displays, parsed (and
/// so checked) as it is read.
pub(super) trait WireText: std::fmt::Display + Sized {
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
pub(super) mod wire_text {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::spec::options::WireText;

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

/// `MIN..MAX`. Malformed or a side out of range: invalid, as for `tile_size`; sides that do not
/// double: unusable.
pub(crate) fn parse_adaptive(text: &str) -> Result<AdaptiveSizes, SpecError> {
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
            ErrorCode::InvalidParameter,
            format!("adaptive must be MIN..MAX in pixels (as 8..32), not {text:?}"),
        ));
    };
    if let Some(side) = [min, max].into_iter().find(|s| !TILE_SIZES.contains(s)) {
        return Err(SpecError::invalid(
            ErrorCode::OutOfRange,
            format!(
                "adaptive must be {} to {} pixels a side, not {side} (in {text:?})",
                TILE_SIZES.start(),
                TILE_SIZES.end()
            ),
        ));
    }
    AdaptiveSizes::new(min, max).map_err(|_| {
        SpecError::unusable(
            ErrorCode::AdaptiveNotDoubling,
            format!(
                "adaptive {text}: the largest size must be the smallest doubled one or more \
                 times (as 8..16, 8..32 or 8..64)"
            ),
        )
    })
}
