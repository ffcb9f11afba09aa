//! What is laid over the rendered tiles, band by band, before the rows are written: the photo
//! overlay, then the grout lines between tiles. Rows are finished from their place in the
//! mosaic alone, so any band of rows gives the same bytes as the whole image.

use crate::error::Error;
use crate::output::BandSink;
use crate::overlay::Overlay;
use crate::shape::TileSize;

/// Lines `width` pixels wide between the cells of a uniform grid of `cell`-sized tiles, half on
/// each side of every edge (the left and top half rounded down), in `colour`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grout {
    pub width: u32,
    pub cell: TileSize,
    pub colour: [u8; 3],
}

impl Grout {
    /// Draws the lines over `pixels`, packed RGB8 rows `mosaic_width` pixels wide from row
    /// `first_row` of the mosaic on. Each tile keeps at least one pixel each way.
    pub fn apply(&self, pixels: &mut [u8], first_row: u32, mosaic_width: u32) {
        let (tw, th) = (self.cell.width as usize, self.cell.height as usize);
        let row_bytes = mosaic_width as usize * 3;
        if self.width == 0 || row_bytes == 0 || tw == 0 || th == 0 {
            return;
        }
        let across = (self.width as usize).min(tw - 1);
        let down = (self.width as usize).min(th - 1);
        let (left, right) = (across / 2, across - across / 2);
        let (top, bottom) = (down / 2, down - down / 2);
        let colour = self.colour;
        let paint = |px: &mut [u8]| {
            for p in px.chunks_exact_mut(3) {
                p.copy_from_slice(&colour);
            }
        };
        for (r, row) in pixels.chunks_exact_mut(row_bytes).enumerate() {
            let y = (first_row as usize + r) % th;
            if y < top || y >= th - bottom {
                paint(row);
                continue;
            }
            for cell in row.chunks_mut(tw * 3) {
                // The mosaic is whole cells wide: every chunk is one cell.
                paint(&mut cell[..left * 3]);
                paint(&mut cell[(tw - right) * 3..]);
            }
        }
    }
}

/// The steps that finish rendered rows, each optional.
pub struct Finish<'a> {
    pub overlay: Option<Overlay<'a>>,
    pub grout: Option<Grout>,
}

impl Finish<'_> {
    /// Whether it changes nothing.
    pub fn is_none(&self) -> bool {
        self.overlay.is_none() && self.grout.is_none_or(|g| g.width == 0)
    }

    /// Finishes `pixels`, packed RGB8 rows `width` pixels wide from row `first_row` on.
    pub fn apply(&self, pixels: &mut [u8], first_row: u32, width: u32) {
        if let Some(overlay) = &self.overlay {
            overlay.apply(pixels, first_row);
        }
        if let Some(grout) = &self.grout {
            grout.apply(pixels, first_row, width);
        }
    }
}

/// Finishes each band of rows before handing it on to `inner`.
pub struct FinishSink<'a, S> {
    finish: Finish<'a>,
    width: u32,
    row: u32,
    inner: S,
}

impl<'a, S: BandSink> FinishSink<'a, S> {
    /// For a mosaic `width` pixels wide.
    pub fn new(finish: Finish<'a>, width: u32, inner: S) -> Self {
        FinishSink {
            finish,
            width,
            row: 0,
            inner,
        }
    }
}

impl<S: BandSink> BandSink for FinishSink<'_, S> {
    fn write_rows(&mut self, rows: &[u8]) -> Result<(), Error> {
        self.write_owned(rows.to_vec())
    }

    fn write_owned(&mut self, mut rows: Vec<u8>) -> Result<(), Error> {
        let row_bytes = (self.width as usize * 3).max(1);
        self.finish.apply(&mut rows, self.row, self.width);
        self.row += (rows.len() / row_bytes) as u32;
        self.inner.write_owned(rows)
    }

    fn finish(&mut self) -> Result<(), Error> {
        self.inner.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grout_frames_every_tile_and_bands_agree_with_the_whole() {
        let (w, h) = (40u32, 30u32);
        let grout = Grout {
            width: 3,
            cell: TileSize {
                width: 10,
                height: 10,
            },
            colour: [255, 0, 0],
        };
        let tiles = vec![7u8; (w * h * 3) as usize];
        let mut whole = tiles.clone();
        grout.apply(&mut whole, 0, w);
        let mut banded = tiles.clone();
        for (i, band) in banded.chunks_mut(w as usize * 3 * 4).enumerate() {
            grout.apply(band, i as u32 * 4, w);
        }
        assert_eq!(whole, banded);
        let at = |x: u32, y: u32| {
            let i = ((y * w + x) * 3) as usize;
            [whole[i], whole[i + 1], whole[i + 2]]
        };
        // One pixel of grout on the left and top of each tile, two on the right and bottom.
        for (x, y, grouted) in [
            (0, 5, true),
            (1, 5, false),
            (7, 5, false),
            (8, 5, true),
            (9, 5, true),
            (10, 5, true),
            (5, 0, true),
            (5, 1, false),
            (5, 8, true),
            (5, 5, false),
        ] {
            assert_eq!(at(x, y) == [255, 0, 0], grouted, "({x}, {y})");
        }
        // None wide: nothing changes.
        let mut same = tiles.clone();
        Grout { width: 0, ..grout }.apply(&mut same, 0, w);
        assert_eq!(same, tiles);
    }
}
