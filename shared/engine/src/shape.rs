//! Tile shapes. A library keeps its renditions cropped to one [`TileShape`] (an aspect ratio in
//! lowest terms, 1:1 unless asked otherwise), and a mosaic's cells are [`TileSize`] pixels
//! (`16` for a square, `24x18` for 4:3): a plan's cells must have the shape of its library's
//! renditions, so that no tile is stretched.

use std::fmt;

use crate::error::Error;

/// Smallest and largest tile side in output pixels.
pub const TILE_SIZES: std::ops::RangeInclusive<u32> = 4..=256;

/// The most elongated shape a library may have, long side over short side.
pub const MAX_ASPECT: u32 = 4;

/// The largest term a shape is written with (`16:9`; `32:18` is written `16:9`), so that the
/// shapes a library may have are a list a pattern can state.
pub const MAX_SHAPE_TERM: u32 = 16;

/// An aspect ratio, width to height, in lowest terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TileShape {
    width: u32,
    height: u32,
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 { a } else { gcd(b, a % b) }
}

impl TileShape {
    pub const SQUARE: TileShape = TileShape {
        width: 1,
        height: 1,
    };

    /// The shape of `width` x `height` (reduced to lowest terms); an error for a zero side or a
    /// shape more elongated than [`MAX_ASPECT`]:1.
    pub fn new(width: u32, height: u32) -> Result<TileShape, Error> {
        if width == 0 || height == 0 {
            return Err(Error::InvalidOption(format!(
                "tile shape {width}:{height}: both sides must be at least 1"
            )));
        }
        let g = gcd(width, height);
        let shape = TileShape {
            width: width / g,
            height: height / g,
        };
        let (long, short) = (shape.width.max(shape.height), shape.width.min(shape.height));
        if long as u64 > short as u64 * MAX_ASPECT as u64 {
            return Err(Error::InvalidOption(format!(
                "tile shape {shape} is too elongated: at most {MAX_ASPECT}:1 or 1:{MAX_ASPECT}"
            )));
        }
        Ok(shape)
    }

    /// Reads `W:H` (such as `4:3`; `1:1` is square), each term 1 to [`MAX_SHAPE_TERM`].
    pub fn parse(text: &str) -> Result<TileShape, Error> {
        let bad = || {
            Error::InvalidOption(format!(
                "tile shape {text:?}: write width:height, such as 1:1, 4:3 or 2:3"
            ))
        };
        let (w, h) = text.trim().split_once(':').ok_or_else(bad)?;
        let side = |s: &str| s.trim().parse::<u32>().map_err(|_| bad());
        let (w, h) = (side(w)?, side(h)?);
        if w > MAX_SHAPE_TERM || h > MAX_SHAPE_TERM {
            return Err(Error::InvalidOption(format!(
                "tile shape {w}:{h}: write it with terms of 1 to {MAX_SHAPE_TERM}, such as 16:9"
            )));
        }
        TileShape::new(w, h)
    }

    /// A regular expression that matches exactly the texts [`TileShape::parse`] takes without
    /// spaces: `W:H` with terms of 1 to [`MAX_SHAPE_TERM`], at most [`MAX_ASPECT`]:1 either way.
    pub fn pattern() -> String {
        let ways: Vec<String> = (1..=MAX_SHAPE_TERM)
            .map(|w| {
                let heights: Vec<String> = (1..=MAX_SHAPE_TERM)
                    .filter(|&h| w <= h * MAX_ASPECT && h <= w * MAX_ASPECT)
                    .map(|h| h.to_string())
                    .collect();
                format!("{w}:(?:{})", heights.join("|"))
            })
            .collect();
        format!("^(?:{})$", ways.join("|"))
    }

    /// The width term of the ratio.
    pub fn width(self) -> u32 {
        self.width
    }

    /// The height term of the ratio.
    pub fn height(self) -> u32 {
        self.height
    }

    pub fn is_square(self) -> bool {
        self == Self::SQUARE
    }

    /// Width and height in pixels of this shape with `long` pixels on its long side (the short
    /// side rounded, at least 1).
    pub fn fit(self, long: u32) -> (u32, u32) {
        let (w, h) = (self.width as u64, self.height as u64);
        let long64 = long as u64;
        if w >= h {
            (long, ((long64 * h + w / 2) / w).max(1) as u32)
        } else {
            (((long64 * w + h / 2) / h).max(1) as u32, long)
        }
    }

    /// The tile size of this shape closest in area to `side` x `side`, within [`TILE_SIZES`]
    /// (whole multiples of the ratio: `16` for 1:1, `20x15` for 4:3).
    pub fn size_near(self, side: u32) -> TileSize {
        let (a, b) = (self.width, self.height);
        let (min, max) = (*TILE_SIZES.start(), *TILE_SIZES.end());
        let area = f64::from(side) * f64::from(side);
        let mut k = ((area / f64::from(a * b)).sqrt().round() as u32).max(1);
        while a.min(b) * k < min {
            k += 1;
        }
        while k > 1 && a.max(b) * k > max {
            k -= 1;
        }
        TileSize {
            width: a * k,
            height: b * k,
        }
    }

    /// The largest centre crop of this shape in a `width` x `height` image: `(x0, y0, w, h)`.
    pub fn crop(self, width: usize, height: usize) -> (usize, usize, usize, usize) {
        let (a, b) = (self.width as usize, self.height as usize);
        let (w, h) = if width * b >= height * a {
            // Wider than the shape: the full height, the width it gives.
            (((height * a + b / 2) / b).clamp(1, width), height)
        } else {
            (width, ((width * b + a / 2) / a).clamp(1, height))
        };
        ((width - w) / 2, (height - h) / 2, w, h)
    }

    /// Share of a `width` x `height` image's area that [`TileShape::crop`] keeps.
    pub fn kept(self, width: usize, height: usize) -> f64 {
        let (_, _, w, h) = self.crop(width, height);
        (w * h) as f64 / (width * height) as f64
    }
}

impl Default for TileShape {
    fn default() -> Self {
        Self::SQUARE
    }
}

impl fmt::Display for TileShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.width, self.height)
    }
}

impl std::str::FromStr for TileShape {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        TileShape::parse(s)
    }
}

/// The size of a mosaic's cells in output pixels, each side within [`TILE_SIZES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TileSize {
    pub width: u32,
    pub height: u32,
}

impl TileSize {
    /// Square cells of `side` pixels (not checked: see [`TileSize::check`]).
    pub const fn square(side: u32) -> TileSize {
        TileSize {
            width: side,
            height: side,
        }
    }

    /// `width` x `height` cells, each side checked.
    pub fn new(width: u32, height: u32) -> Result<TileSize, Error> {
        let size = TileSize { width, height };
        size.check()?;
        Ok(size)
    }

    /// An error if a side is outside [`TILE_SIZES`].
    pub fn check(self) -> Result<(), Error> {
        for side in [self.width, self.height] {
            if !TILE_SIZES.contains(&side) {
                return Err(Error::TileSize(side));
            }
        }
        Ok(())
    }

    /// Reads `16` (square) or `24x18` (width x height, a lowercase `x` between), each side 4
    /// to 256.
    pub fn parse(text: &str) -> Result<TileSize, Error> {
        let bad = || {
            Error::InvalidOption(format!(
                "tile size {text:?}: write one number for square tiles (16) or width x height \
                 (24x18), each {} to {} px",
                TILE_SIZES.start(),
                TILE_SIZES.end()
            ))
        };
        let side = |s: &str| {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            s.parse::<u32>().map_err(|_| bad())
        };
        let size = match text.split_once('x') {
            Some((w, h)) => TileSize {
                width: side(w)?,
                height: side(h)?,
            },
            None => TileSize::square(side(text)?),
        };
        size.check()?;
        Ok(size)
    }

    pub fn is_square(self) -> bool {
        self.width == self.height
    }

    /// The aspect ratio of the cells, in lowest terms (not checked against [`MAX_ASPECT`]).
    pub fn shape(self) -> TileShape {
        let g = gcd(self.width, self.height).max(1);
        TileShape {
            width: self.width / g,
            height: self.height / g,
        }
    }

    /// Pixels in one cell.
    pub fn area(self) -> u64 {
        self.width as u64 * self.height as u64
    }
}

/// `16` for a square, `24x18` otherwise: the form [`TileSize::parse`] reads.
impl fmt::Display for TileSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_square() {
            write!(f, "{}", self.width)
        } else {
            write!(f, "{}x{}", self.width, self.height)
        }
    }
}

impl std::str::FromStr for TileSize {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        TileSize::parse(s)
    }
}

/// An error unless cells of `size` have the library's `shape`.
pub(crate) fn check_shape(size: TileSize, shape: TileShape) -> Result<(), Error> {
    if size.shape() == shape {
        return Ok(());
    }
    let example = example_size(shape, size);
    Err(Error::ShapeMismatch(format!(
        "{size} px tiles are {} but the library's tiles are {shape}: use a tile size of shape \
         {shape} (such as {example}) or a library imported with shape {}",
        size.shape(),
        size.shape()
    )))
}

/// A tile size of `shape` close in area to `near`, to suggest.
fn example_size(shape: TileShape, near: TileSize) -> String {
    let area = near.area() as f64;
    let unit = (area / (shape.width as f64 * shape.height as f64)).sqrt();
    let scale = (unit.round() as u32).max(1);
    let (mut w, mut h) = (shape.width * scale, shape.height * scale);
    let min = *TILE_SIZES.start();
    while w.min(h) < min {
        w += shape.width;
        h += shape.height;
    }
    TileSize {
        width: w,
        height: h,
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_reduce_parse_and_fit() {
        assert_eq!(
            TileShape::parse("8:6").unwrap(),
            TileShape::new(4, 3).unwrap()
        );
        assert_eq!(TileShape::parse("4:3").unwrap().to_string(), "4:3");
        assert!(TileShape::parse("4x3").is_err());
        assert!(TileShape::parse("0:3").is_err());
        assert!(TileShape::parse("5:1").is_err());
        assert!(TileShape::parse("1:4").is_ok());
        assert!(TileShape::parse("16:9").is_ok());
        assert!(TileShape::parse("32:18").is_err(), "terms over 16");
        let four_three = TileShape::new(4, 3).unwrap();
        assert_eq!(four_three.fit(64), (64, 48));
        assert_eq!(TileShape::new(2, 3).unwrap().fit(64), (43, 64));
        assert_eq!(TileShape::SQUARE.fit(64), (64, 64));
        // Sizes of a shape near a square's area, within the tile bounds.
        assert_eq!(TileShape::SQUARE.size_near(16).to_string(), "16");
        assert_eq!(four_three.size_near(16).to_string(), "20x15");
        assert_eq!(
            four_three.size_near(1).to_string(),
            "8x6",
            "at least 4 px a side"
        );
        assert_eq!(
            TileShape::new(16, 9).unwrap().size_near(256).to_string(),
            "256x144"
        );
        assert_eq!(
            TileShape::new(1, 4).unwrap().size_near(48).to_string(),
            "24x96"
        );
        // A 3:2 photo keeps its full height in a 4:3 crop, and 8/9 of its width.
        assert_eq!(four_three.crop(600, 400), (33, 0, 533, 400));
        assert_eq!(TileShape::SQUARE.crop(600, 400), (100, 0, 400, 400));
        assert_eq!(four_three.crop(300, 400), (0, 87, 300, 225));
        assert!((TileShape::SQUARE.kept(400, 300) - 0.75).abs() < 1e-12);
        assert_eq!(four_three.kept(400, 300), 1.0);
    }

    #[test]
    fn tile_sizes_parse_and_check() {
        assert_eq!(TileSize::parse("16").unwrap(), TileSize::square(16));
        assert_eq!(
            TileSize::parse("24x18").unwrap(),
            TileSize::new(24, 18).unwrap()
        );
        assert_eq!(TileSize::parse("024x18").unwrap().to_string(), "24x18");
        assert_eq!(TileSize::parse("16x16").unwrap().to_string(), "16");
        for bad in [
            "24x", "x18", "", "24x18x2", "-4", "+16", "24 x", "1e2", "24:18", "24X18", " 16",
        ] {
            assert!(TileSize::parse(bad).is_err(), "{bad:?}");
        }
        assert!(matches!(TileSize::parse("3x18"), Err(Error::TileSize(3))));
        assert!(matches!(
            TileSize::parse("24x257"),
            Err(Error::TileSize(257))
        ));
        assert_eq!(TileSize::parse("24x18").unwrap().shape().to_string(), "4:3");
    }

    #[test]
    fn a_mismatch_names_both_shapes_and_a_fitting_size() {
        let err = check_shape(TileSize::new(24, 18).unwrap(), TileShape::SQUARE).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("4:3") && text.contains("1:1"), "{text}");
        assert!(text.contains("such as 21)"), "{text}");
        let err = check_shape(TileSize::square(16), TileShape::new(3, 2).unwrap()).unwrap_err();
        assert!(err.to_string().contains("such as 21x14"), "{err}");
        assert!(
            check_shape(
                TileSize::new(24, 18).unwrap(),
                TileShape::new(4, 3).unwrap()
            )
            .is_ok()
        );
    }
}
