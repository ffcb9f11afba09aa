//! Sizes by name, as the home form offers them ("Screen", "Poster", "Large print", "On paper"):
//! each one a tile size of the library's shape and the cells across that give it, worked out here
//! for a photo of a given size, so that the page only shows what the server says.

use tessera_engine::{TileShape, TileSize};

use crate::print::{DEFAULT_DPI, Print, tile_at};

/// A size by name: tiles of about `tile` px a side, of the library's shape, and as many cells
/// across as make the mosaic's long side about `long` px.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NamedSize {
    /// The name the form sends (`screen`).
    pub name: &'static str,
    /// What the form calls it.
    pub label: &'static str,
    /// The mosaic's long side in pixels, about.
    pub long: u32,
    /// A tile's side in pixels, about (its area, for tiles that are not square).
    pub tile: u32,
}

/// The size by name whose grid follows the print: its tile prints about 1 cm wide.
pub const PAPER: &str = "paper";

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

/// The size by `name`, if it is one.
pub fn named_size(name: &str) -> Option<&'static NamedSize> {
    NAMED_SIZES.iter().find(|s| s.name == name)
}

impl NamedSize {
    /// The tile size and cells across for a `width` x `height` photo in tiles of `shape`, with
    /// at most `max_cells` across: across from the long side (the width of a wide photo, the
    /// height's share for a tall one).
    pub fn grid(
        &self,
        width: u32,
        height: u32,
        shape: TileShape,
        max_cells: u32,
    ) -> (TileSize, u32) {
        let tile = shape.size_near(self.tile);
        let aspect = f64::from(width.max(1)) / f64::from(height.max(1));
        let long = f64::from(self.long);
        let across_px = if aspect >= 1.0 { long } else { long * aspect };
        let across = (across_px / f64::from(tile.width)).round() as u32;
        (tile, across.clamp(1, max_cells.max(1)))
    }

    /// How the form words it before a photo is chosen: "about 6,000 px across".
    pub fn about(&self) -> String {
        let rounded = (self.long + 500) / 1000 * 1000;
        format!("about {} px across", thousands(rounded))
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
        // A wide photo: the width is the long side.
        assert_eq!(
            poster.grid(4000, 3000, TileShape::SQUARE, 4096),
            (TileSize::square(32), 192)
        );
        // A tall one: across is the height's share.
        assert_eq!(
            poster.grid(3000, 4000, TileShape::SQUARE, 4096),
            (TileSize::square(32), 144)
        );
        // Tiles of the library's shape; cells within the service's limit.
        let four_three = TileShape::new(4, 3).unwrap();
        let (tile, across) = poster.grid(4000, 3000, four_three, 100);
        assert_eq!((tile.to_string(), across), ("36x27".to_string(), 100));
        assert_eq!(poster.about(), "about 6,000 px across");
        assert_eq!(
            named_size("print").unwrap().about(),
            "about 12,000 px across"
        );
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
