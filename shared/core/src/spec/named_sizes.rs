//! Sizes by name, as the home form offers them ("Screen", "Poster", "Large print", "On paper"):
//! each one a tile size of the library's shape and the cells across that give it, worked out here
//! for a photo of a given size, so that the page only shows what the server says.

use tessera_engine::{TileShape, TileSize};

use crate::print::{DEFAULT_DPI, Print, tile_at};

/// A size by name: tiles of about `tile` px a side, of the library's shape, and as many cells as
/// make a mosaic of about `long` x `long` px in area, shaped like the photo, with at least
/// [`MIN_SHORT_CELLS`] across its short side (a panorama stays a picture, not a hairline).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NamedSize {
    /// The name the form sends (`screen`).
    pub name: &'static str,
    /// What the form calls it.
    pub label: &'static str,
    /// The side of the square whose area the mosaic has, about, in pixels.
    pub long: u32,
    /// A tile's side in pixels, about (its area, for tiles that are not square).
    pub tile: u32,
}

/// The size by name whose grid follows the print: its tile prints about 1 cm wide.
pub const PAPER: &str = "paper";

/// The fewest cells a size by name puts across a photo's short side.
pub const MIN_SHORT_CELLS: u32 = 8;

/// The sizes by name, smallest first. `paper` is not among them: its grid follows the print.
pub const NAMED_SIZES: [NamedSize; 3] = [
    NamedSize {
        name: "screen",
        label: "Screen",
        long: 2048,
        tile: 16,
    },
    NamedSize {
        name: "poster",
        label: "Poster",
        long: 6144,
        tile: 32,
    },
    NamedSize {
        name: "print",
        label: "Large print",
        long: 12288,
        tile: 48,
    },
];

/// The largest photo side, in pixels, that sizing takes.
pub const MAX_PHOTO_SIDE: u32 = 1 << 20;

/// Every size by name a request may give: [`NAMED_SIZES`]'s and [`PAPER`].
pub fn size_names() -> Vec<&'static str> {
    NAMED_SIZES.iter().map(|s| s.name).chain([PAPER]).collect()
}

/// The size by `name`, if it is one.
pub fn named_size(name: &str) -> Option<&'static NamedSize> {
    NAMED_SIZES.iter().find(|s| s.name == name)
}

impl NamedSize {
    /// The tile size and cells across for a `width` x `height` photo in tiles of `shape`, with
    /// at most `max_cells` across: the cells that fill the size's area in the photo's shape,
    /// and at least [`MIN_SHORT_CELLS`] across the short side. An error, saying what would do,
    /// for a photo so wide that its short side cannot have them.
    pub fn grid(
        &self,
        width: u32,
        height: u32,
        shape: TileShape,
        max_cells: u32,
    ) -> Result<(TileSize, u32), String> {
        let tile = shape.size_near(self.tile);
        // Cells across per cell down, for cells of the tile's shape in the photo's.
        let across_per_down = f64::from(width.max(1)) / f64::from(height.max(1))
            * f64::from(tile.height)
            / f64::from(tile.width);
        let cells = f64::from(self.long).powi(2) / (f64::from(tile.width) * f64::from(tile.height));
        let mut across = (cells * across_per_down).sqrt();
        let short = f64::from(MIN_SHORT_CELLS);
        across = across.max(short).max(short * across_per_down).round();
        if across > f64::from(max_cells) {
            return Err(format!(
                "a photo of {width} x {height} px needs {across} cells across to have \
                 {MIN_SHORT_CELLS} down, over this service's {max_cells}: crop it to a less \
                 elongated shape"
            ));
        }
        Ok((tile, across.max(1.0) as u32))
    }

    /// How the form words it before a photo is chosen: "about 38 megapixels".
    pub fn about(&self) -> String {
        let mp = (f64::from(self.long).powi(2) / 1e6).round() as u32;
        format!("about {} megapixels", thousands(mp))
    }
}

/// The tile for "On paper": about 1 cm at the print's resolution ([`DEFAULT_DPI`] without a
/// print), of the library's shape.
pub fn paper_tile(print: Option<&Print>, shape: TileShape) -> TileSize {
    shape.size_near(tile_at(print.map_or(DEFAULT_DPI, |p| p.dpi)).width)
}

/// `12000` as `12,000`.
pub fn thousands(n: u32) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_sizes_follow_the_photo_and_the_library() {
        let poster = named_size("poster").unwrap();
        // A square photo: the size's side in cells.
        let grid = |size: &NamedSize, w, h, shape, max| size.grid(w, h, shape, max).unwrap();
        let square = TileShape::SQUARE;
        assert_eq!(
            grid(poster, 3000, 3000, square, 4096),
            (TileSize::square(32), 192)
        );
        // A 4:3 photo, wide or tall: the same area.
        assert_eq!(grid(poster, 4000, 3000, square, 4096).1, 222);
        assert_eq!(grid(poster, 3000, 4000, square, 4096).1, 166);
        // A panorama keeps its area, and eight cells at least across its short side.
        let print = named_size("print").unwrap();
        assert_eq!(grid(print, 100, 20_000, square, 4096).1, 18);
        assert_eq!(grid(print, 20_000, 100, square, 4096).1, 3620);
        assert_eq!(grid(print, 100, 200_000, square, 4096).1, 8);
        let err = print.grid(200_000, 100, square, 4096).unwrap_err();
        assert!(err.contains("16000 cells across"), "{err}");
        // Tiles of the library's shape.
        let four_three = TileShape::new(4, 3).unwrap();
        let (tile, across) = grid(poster, 4000, 3000, four_three, 4096);
        assert_eq!((tile.to_string(), across), ("36x27".to_string(), 197));
        assert_eq!(poster.about(), "about 38 megapixels");
        assert_eq!(print.about(), "about 151 megapixels");
        assert!(named_size("paper").is_none());
        let a2: Print = "A2@300dpi".parse().unwrap();
        assert_eq!(paper_tile(Some(&a2), TileShape::SQUARE).to_string(), "119");
        let a2_low: Print = "A2@150dpi".parse().unwrap();
        assert_eq!(
            paper_tile(Some(&a2_low), TileShape::SQUARE).to_string(),
            "60"
        );
        assert_eq!(paper_tile(None, four_three).to_string(), "136x102");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
