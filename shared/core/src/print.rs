//! Print sizes: a mosaic sized for paper (`60x40cm@300dpi`, `A2@300dpi`, `18x24in`) and the
//! resolution every output carries.
//!
//! The paper is turned to the photo's orientation, and the mosaic is the largest grid of whole
//! tiles that fits on it with the photo uncropped: it fills the paper along one side, and along
//! the other as far as the photo's shape allows (never past the paper). Tiles that would print
//! smaller than [`MIN_TILE_CM`] draw a warning, since the photos in them stop being
//! recognisable there.

use std::fmt;
use std::ops::RangeInclusive;

use tessera_engine::{TILE_SIZES, TileSize};

/// The resolution of outputs whose job names no print.
pub const DEFAULT_DPI: u32 = 300;
/// Resolutions a print may ask for.
pub const DPI_RANGE: RangeInclusive<u32> = 72..=1200;
/// Below this printed width (in cm), the photos in the tiles stop being recognisable.
pub const MIN_TILE_CM: f64 = 1.0;
/// Paper sides a print may ask for, in millimetres (1 cm to 10 m).
const SIDE_MM: RangeInclusive<f64> = 10.0..=10_000.0;
/// ISO 216 sizes in millimetres, portrait.
const PRESETS: &[(&str, f64, f64)] = &[
    ("A0", 841.0, 1189.0),
    ("A1", 594.0, 841.0),
    ("A2", 420.0, 594.0),
    ("A3", 297.0, 420.0),
    ("A4", 210.0, 297.0),
    ("A5", 148.0, 210.0),
];

/// A unit of length as a print size is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Mm,
    Cm,
    In,
}

impl Unit {
    fn mm(self) -> f64 {
        match self {
            Unit::Mm => 1.0,
            Unit::Cm => 10.0,
            Unit::In => 25.4,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Unit::Mm => "mm",
            Unit::Cm => "cm",
            Unit::In => "in",
        }
    }
}

/// A paper size: a named preset or two sides in one unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Paper {
    Preset(&'static str),
    Sides { width: f64, height: f64, unit: Unit },
}

/// A print: paper and resolution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Print {
    pub paper: Paper,
    pub dpi: u32,
}

impl Paper {
    /// Width and height in millimetres, as written.
    pub fn mm(&self) -> (f64, f64) {
        match *self {
            Paper::Preset(name) => PRESETS
                .iter()
                .find(|p| p.0 == name)
                .map_or((0.0, 0.0), |p| (p.1, p.2)),
            Paper::Sides {
                width,
                height,
                unit,
            } => (width * unit.mm(), height * unit.mm()),
        }
    }
}

impl fmt::Display for Print {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.paper {
            Paper::Preset(name) => write!(f, "{name}")?,
            Paper::Sides {
                width,
                height,
                unit,
            } => write!(f, "{width}x{height}{}", unit.name())?,
        }
        write!(f, "@{}dpi", self.dpi)
    }
}

/// Why a print size is refused: written wrongly, or written well but out of range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrintError {
    #[error("{0}")]
    Malformed(String),
    #[error("{0}")]
    OutOfRange(String),
}

impl std::str::FromStr for Print {
    type Err = PrintError;

    /// `SIZE[@DPI]`: SIZE a preset (`A0` to `A5`) or `WxH` with a unit (`cm`, `mm`, `in`), as
    /// `60x40cm` or `18x24in`; DPI as `300dpi`, `300ppi` or `300` (default [`DEFAULT_DPI`]).
    fn from_str(text: &str) -> Result<Print, PrintError> {
        let malformed = |usage: &str| PrintError::Malformed(format!("print {text:?}: {usage}"));
        let usage = "give a preset (A0 to A5) or width x height with a unit, as 60x40cm, \
                     600x400mm or 18x24in, then optionally @ and a resolution, as A2@300dpi";
        let lower = text.trim().to_ascii_lowercase();
        let (size, dpi) = match lower.split_once('@') {
            Some((size, dpi)) => (size.trim(), Some(dpi.trim())),
            None => (lower.as_str(), None),
        };
        let dpi = match dpi {
            None => DEFAULT_DPI,
            Some(d) => {
                let digits = d
                    .strip_suffix("dpi")
                    .or_else(|| d.strip_suffix("ppi"))
                    .unwrap_or(d)
                    .trim();
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(malformed(&format!(
                        "the resolution {d:?} is not a number of dpi"
                    )));
                }
                let dpi = digits.parse::<u32>().unwrap_or(u32::MAX);
                if !DPI_RANGE.contains(&dpi) {
                    return Err(PrintError::OutOfRange(format!(
                        "print {text:?}: the resolution must be {} to {} dpi, not {digits}",
                        DPI_RANGE.start(),
                        DPI_RANGE.end()
                    )));
                }
                dpi
            }
        };
        if let Some(preset) = PRESETS.iter().find(|p| p.0.eq_ignore_ascii_case(size)) {
            return Ok(Print {
                paper: Paper::Preset(preset.0),
                dpi,
            });
        }
        let (sides, unit) = [Unit::Mm, Unit::Cm, Unit::In]
            .into_iter()
            .find_map(|u| size.strip_suffix(u.name()).map(|s| (s, u)))
            .ok_or_else(|| malformed(usage))?;
        let (w, h) = sides.split_once('x').ok_or_else(|| malformed(usage))?;
        let side = |s: &str| -> Result<f64, PrintError> {
            let s = s.trim();
            let number = !s.is_empty()
                && s.bytes().all(|b| b.is_ascii_digit() || b == b'.')
                && s.bytes().next().is_some_and(|b| b.is_ascii_digit());
            let v: f64 = s
                .parse()
                .ok()
                .filter(|_| number)
                .ok_or_else(|| malformed(usage))?;
            if !v.is_finite() || !SIDE_MM.contains(&(v * unit.mm())) {
                return Err(PrintError::OutOfRange(format!(
                    "print {text:?}: each side must be 1 cm to 10 m, not {s}{}",
                    unit.name()
                )));
            }
            Ok(v)
        };
        Ok(Print {
            paper: Paper::Sides {
                width: side(w)?,
                height: side(h)?,
                unit,
            },
            dpi,
        })
    }
}

/// Pixels of `mm` millimetres at `dpi`, rounded.
fn px(mm: f64, dpi: u32) -> u32 {
    (mm / 25.4 * f64::from(dpi)).round() as u32
}

/// The smallest square tile that prints [`MIN_TILE_CM`] wide at `dpi`, within the tile sizes the
/// engine makes.
pub fn tile_at(dpi: u32) -> TileSize {
    let side = (MIN_TILE_CM / 2.54 * f64::from(dpi)).ceil() as u32;
    TileSize::square(side.clamp(*TILE_SIZES.start(), *TILE_SIZES.end()))
}

/// Centimetres of `px` pixels at `dpi`.
pub fn cm(px: u32, dpi: u32) -> f64 {
    f64::from(px) / f64::from(dpi.max(1)) * 2.54
}

impl Print {
    /// The paper in pixels at the print's resolution, turned to a photo of `width` x `height`:
    /// its longer side along the photo's longer side.
    pub fn paper_px(&self, width: u32, height: u32) -> (u32, u32) {
        let (w, h) = self.paper.mm();
        let (w, h) = (px(w, self.dpi), px(h, self.dpi));
        if width == height || (width > height) == (w > h) {
            (w, h)
        } else {
            (h, w)
        }
    }

    /// The tile of a job that gives none: the smallest square that prints [`MIN_TILE_CM`] wide
    /// at this resolution, within the tile sizes the engine makes.
    pub fn default_tile(&self) -> TileSize {
        tile_at(self.dpi)
    }

    /// Cells across for a photo of `width` x `height` in tiles of `tile`: the most whose grid
    /// (rows rounded as the engine rounds them) fits on the paper. An error when not one tile
    /// fits.
    pub fn cells_across(&self, width: u32, height: u32, tile: TileSize) -> Result<u32, String> {
        let (pw, ph) = self.paper_px(width, height);
        let aspect = f64::from(height.max(1)) / f64::from(width.max(1));
        let aspect = if tile.is_square() {
            aspect
        } else {
            aspect * f64::from(tile.width) / f64::from(tile.height)
        };
        let rows = |across: u32| (f64::from(across) * aspect).round().max(1.0) as u64;
        let fits = |across: u32| rows(across) * u64::from(tile.height) <= u64::from(ph);
        let mut across = pw / tile.width.max(1);
        // Start near the answer when the height binds, then step to it.
        let by_height = ((f64::from(ph / tile.height.max(1)) + 0.5) / aspect).floor();
        across = across.min(by_height.max(1.0).min(f64::from(u32::MAX)) as u32);
        while across > 0 && !fits(across) {
            across -= 1;
        }
        while across < pw / tile.width.max(1) && fits(across + 1) {
            across += 1;
        }
        if across == 0 {
            return Err(format!(
                "a tile of {tile} px does not fit on {self} ({pw} x {ph} px): use smaller tiles \
                 or a larger print"
            ));
        }
        Ok(across)
    }

    /// The warning for tiles that print smaller than [`MIN_TILE_CM`], with what would fix it.
    pub fn tile_warning(&self, tile: TileSize) -> Option<String> {
        let side = tile.width.min(tile.height);
        let printed = cm(side, self.dpi);
        // A hair of slack: 118 px at 300 dpi is 0.9991 cm.
        if printed >= MIN_TILE_CM - 0.005 {
            return None;
        }
        let needed = self.default_tile().width;
        let lower_dpi = (f64::from(side) * 2.54 / MIN_TILE_CM).floor() as u32;
        let dpi_hint = if DPI_RANGE.contains(&lower_dpi) {
            format!(", print at {lower_dpi} dpi")
        } else {
            String::new()
        };
        Some(format!(
            "tiles of {tile} px print {:.2} cm wide at {} dpi: below about {MIN_TILE_CM:.0} cm the \
             photos in them stop being recognisable. Use tiles of at least {needed} px{dpi_hint}, \
             or choose a larger print",
            printed, self.dpi
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_and_sides_parse_and_print_back() {
        for (text, shown, mm) in [
            ("A2@300dpi", "A2@300dpi", (420.0, 594.0)),
            ("a3", "A3@300dpi", (297.0, 420.0)),
            ("60x40cm@150", "60x40cm@150dpi", (600.0, 400.0)),
            ("18x24in@300ppi", "18x24in@300dpi", (457.2, 609.6)),
            ("500x700mm", "500x700mm@300dpi", (500.0, 700.0)),
        ] {
            let print: Print = text.parse().expect(text);
            assert_eq!(print.to_string(), shown);
            let (w, h) = print.paper.mm();
            assert!((w - mm.0).abs() < 1e-9 && (h - mm.1).abs() < 1e-9, "{text}");
            assert_eq!(shown.parse::<Print>().expect(shown), print);
        }
        for bad in [
            "A9",
            "60x40",
            "60cm",
            "60x40cm@10dpi",
            "0x40cm",
            "x40cm",
            "60x40cm@abc",
            "",
        ] {
            assert!(bad.parse::<Print>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a2_at_300_dpi_is_its_pixels_turned_to_the_photo() {
        let a2: Print = "A2@300dpi".parse().expect("A2");
        assert_eq!(a2.paper_px(3000, 4000), (4961, 7016));
        assert_eq!(a2.paper_px(4000, 3000), (7016, 4961));
    }

    #[test]
    fn the_grid_fills_the_paper_as_far_as_the_photo_allows() {
        let a2: Print = "A2@300dpi".parse().expect("A2");
        let tile = a2.default_tile();
        assert_eq!(tile, TileSize::square(119));
        // A photo of the paper's shape fills it to within a tile on both sides.
        let across = a2.cells_across(4961, 7016, tile).expect("fits");
        assert_eq!(across, 4961 / 119);
        // A square photo fills the width; the height stays within the paper.
        let across = a2.cells_across(1000, 1000, tile).expect("fits");
        assert_eq!(across, 41);
        // A wide panorama on portrait paper turns the paper.
        let across = a2.cells_across(3000, 1000, tile).expect("fits");
        assert!(u64::from(across) * 119 <= 7016 && u64::from(across + 1) * 119 > 7016);
        let small: Print = "2x2cm@72dpi".parse().expect("small");
        assert!(small.cells_across(100, 100, TileSize::square(200)).is_err());
    }

    #[test]
    fn tiles_under_a_centimetre_are_warned_of() {
        let a2: Print = "A2@300dpi".parse().expect("A2");
        assert!(a2.tile_warning(a2.default_tile()).is_none());
        assert!(a2.tile_warning(TileSize::square(118)).is_none());
        let warning = a2.tile_warning(TileSize::square(48)).expect("warns");
        assert!(
            warning.contains("0.41 cm") && warning.contains("119 px"),
            "{warning}"
        );
    }
}
