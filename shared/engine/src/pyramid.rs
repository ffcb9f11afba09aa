//! A mosaic's pyramid of 256 px tiles, made from its rows as they come, in one pass: the zoom
//! tiles the web role serves and the Deep Zoom (DZI) folder `tessera render --dzi` writes.
//!
//! Level 0 is the full resolution; level `l` is the image shrunk by `2^l`, each pixel the rounded
//! mean of its `2^l` square block (cut short at the right and bottom edges). Level 1 sums 2 x 2
//! blocks of pixels and each level above sums 2 x 2 blocks of the sums below: sums compose
//! exactly, so every level is the true block mean whatever the order. Tile `(x, y)` of a level
//! covers its pixels `256x..256(x+1)` across and `256y..256(y+1)` down; edge tiles are smaller.
//! Memory holds one row of sums and one band of 256 rows per level.
//!
//! Deep Zoom numbers levels the other way: its level `n` is the image at `2^n` of its largest
//! side, up to [`dzi_max_level`] (the full resolution), down to one pixel at level 0.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::error::Error;
use crate::output::BandSink;

/// Pixels on a side of a full tile.
pub const PYRAMID_TILE: u32 = 256;

/// The size of level `level` of a `width` x `height` image.
pub fn level_size(width: u32, height: u32, level: u32) -> (u32, u32) {
    // Past level 40 every side is one pixel (or none); the shift would overflow.
    let level = level.min(40);
    let shrink = |n: u32| ((u64::from(n) + (1 << level) - 1) >> level) as u32;
    (shrink(width), shrink(height))
}

/// The smallest level whose whole image fits in one tile.
pub fn top_level(width: u32, height: u32) -> u32 {
    let mut level = 0;
    while level < 31 && (width.max(height).max(1) - 1) >> level >= PYRAMID_TILE {
        level += 1;
    }
    level
}

/// The level at which the image is one pixel (or one row or column): Deep Zoom's full-resolution
/// level number, `ceil(log2(max(width, height)))`.
pub fn dzi_max_level(width: u32, height: u32) -> u32 {
    let side = width.max(height).max(1);
    32 - (side - 1).leading_zeros()
}

/// The Deep Zoom descriptor of a `width` x `height` image of 256 px PNG tiles without overlap.
pub fn dzi_descriptor(width: u32, height: u32) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <Image xmlns=\"http://schemas.microsoft.com/deepzoom/2008\" Format=\"png\" Overlap=\"0\" \
         TileSize=\"{PYRAMID_TILE}\">\n  <Size Width=\"{width}\" Height=\"{height}\"/>\n</Image>\n"
    )
}

/// One tile made: its level (0 = full resolution), column, row, size and RGB8 pixels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PyramidTile {
    pub level: u32,
    pub x: u32,
    pub y: u32,
    pub width: u32,
    pub height: u32,
    pub pixels: Vec<u8>,
}

/// One level being made: the sums of the output row being gathered (levels above 0), and the
/// rows made since the last band of tiles.
struct Level {
    level: u32,
    width: u32,
    height: u32,
    sums: Vec<u64>,
    band: Vec<u8>,
    band_rows: u32,
}

impl Level {
    fn new(width: u32, height: u32, level: u32) -> Level {
        let (w, h) = level_size(width, height, level);
        Level {
            level,
            width: w,
            height: h,
            sums: if level == 0 {
                Vec::new()
            } else {
                vec![0; w as usize * 3]
            },
            band: Vec::new(),
            band_rows: 0,
        }
    }

    /// Takes output row `row` (RGB8); hands out a band of tiles when it has 256 rows or the level
    /// is complete.
    fn push(&mut self, row: u32, pixels: impl IntoIterator<Item = u8>, out: &mut Vec<PyramidTile>) {
        self.band.extend(pixels);
        self.band_rows += 1;
        if self.band_rows < PYRAMID_TILE && row + 1 < self.height {
            return;
        }
        let w = self.width as usize * 3;
        for tx in 0..self.width.div_ceil(PYRAMID_TILE) {
            let a = (tx * PYRAMID_TILE) as usize * 3;
            let b = (((tx + 1) * PYRAMID_TILE).min(self.width)) as usize * 3;
            out.push(PyramidTile {
                level: self.level,
                x: tx,
                y: row / PYRAMID_TILE,
                width: ((b - a) / 3) as u32,
                height: self.band_rows,
                pixels: self
                    .band
                    .chunks_exact(w)
                    .flat_map(|r| &r[a..b])
                    .copied()
                    .collect(),
            });
        }
        self.band.clear();
        self.band_rows = 0;
    }
}

/// Makes the tiles of levels `first..=last` of a `width` x `height` image from its rows, top to
/// bottom.
pub struct Pyramid {
    width: u32,
    height: u32,
    /// Level 0, when it is wanted.
    base: Option<Level>,
    /// Levels 1 to `last` (those under `first` are summed but not cut into tiles).
    above: Vec<Level>,
    first: u32,
    next_row: u32,
}

impl Pyramid {
    pub fn new(width: u32, height: u32, first: u32, last: u32) -> Pyramid {
        Pyramid {
            width,
            height,
            base: (first == 0).then(|| Level::new(width, height, 0)),
            above: (1..=last)
                .map(|level| Level::new(width, height, level))
                .collect(),
            first,
            next_row: 0,
        }
    }

    /// Rows still to come.
    pub fn rows_left(&self) -> u32 {
        self.height - self.next_row
    }

    /// Takes the next row (RGB8, `width` pixels) and adds the tiles it completes to `out`.
    pub fn push_row(&mut self, row: &[u8], out: &mut Vec<PyramidTile>) -> Result<(), Error> {
        if row.len() != self.width as usize * 3 || self.next_row >= self.height {
            return Err(Error::Encode(format!(
                "a pyramid of {} x {} px got a row of {} bytes at row {}",
                self.width,
                self.height,
                row.len(),
                self.next_row
            )));
        }
        let y = self.next_row;
        self.next_row += 1;
        if let Some(base) = &mut self.base {
            base.push(y, row.iter().copied(), out);
        }
        let Some(level1) = self.above.first_mut() else {
            return Ok(());
        };
        for (x, px) in row.chunks_exact(3).enumerate() {
            let at = (x >> 1) * 3;
            for (sum, v) in level1.sums[at..at + 3].iter_mut().zip(px) {
                *sum += u64::from(*v);
            }
        }
        if y % 2 == 1 || y + 1 == self.height {
            self.row_done(0, y >> 1, out);
        }
        Ok(())
    }

    /// Output row `row` of `above[i]` has all its sums: makes its pixels, adds the sums into the
    /// level above, and cuts a band of tiles when one is complete.
    fn row_done(&mut self, i: usize, row: u32, out: &mut Vec<PyramidTile>) {
        let (width, height, first) = (self.width, self.height, self.first);
        let (below, above) = self.above.split_at_mut(i + 1);
        let this = &mut below[i];
        let block = 1u64 << this.level;
        let rows_in = (u64::from(height) - u64::from(row) * block).min(block);
        if let Some(next) = above.first_mut() {
            for (j, px) in this.sums.chunks_exact(3).enumerate() {
                let at = (j >> 1) * 3;
                for (sum, v) in next.sums[at..at + 3].iter_mut().zip(px) {
                    *sum += v;
                }
            }
        }
        if this.level >= first {
            let means: Vec<u8> = this
                .sums
                .chunks_exact(3)
                .enumerate()
                .flat_map(|(j, px)| {
                    let cols_in = (u64::from(width) - j as u64 * block).min(block);
                    let n = cols_in * rows_in;
                    px.iter().map(move |&s| ((s + n / 2) / n) as u8)
                })
                .collect();
            this.push(row, means, out);
        }
        this.sums.iter_mut().for_each(|s| *s = 0);
        let last = row + 1 == this.height;
        if !above.is_empty() && (row % 2 == 1 || last) {
            self.row_done(i + 1, row >> 1, out);
        }
    }
}

/// Encodes RGB8 pixels as PNG (fast compression: tiles are many and made while people wait).
pub fn encode_png_rgb(pixels: &[u8], width: u32, height: u32) -> Result<Vec<u8>, Error> {
    use image::ImageEncoder as _;
    use image::codecs::png::{CompressionType, FilterType, PngEncoder};
    let mut out = Vec::new();
    PngEncoder::new_with_quality(&mut out, CompressionType::Fast, FilterType::Adaptive)
        .write_image(pixels, width, height, image::ExtendedColorType::Rgb8)
        .map_err(|e| Error::Encode(e.to_string()))?;
    Ok(out)
}

/// Writes a Deep Zoom image as rows come: `DIR/NAME.dzi` and the tiles at
/// `DIR/NAME_files/LEVEL/X_Y.png`, where OpenSeadragon and other Deep Zoom viewers look for them.
/// Memory holds one band of 256 rows per level; each band's tiles are encoded in parallel.
pub struct DziSink {
    files: PathBuf,
    descriptor: PathBuf,
    width: u32,
    height: u32,
    max_level: u32,
    pyramid: Pyramid,
    partial: Vec<u8>,
}

impl DziSink {
    /// Creates `dir` (and its parents) for a `width` x `height` image named `name`.
    pub fn create(dir: &Path, name: &str, width: u32, height: u32) -> Result<DziSink, Error> {
        if width == 0 || height == 0 {
            return Err(Error::Encode(
                "an empty image has no Deep Zoom pyramid".into(),
            ));
        }
        let max_level = dzi_max_level(width, height);
        let files = dir.join(format!("{name}_files"));
        for level in 0..=max_level {
            let d = files.join(level.to_string());
            std::fs::create_dir_all(&d).map_err(|e| Error::io(&d, e))?;
        }
        Ok(DziSink {
            files,
            descriptor: dir.join(format!("{name}.dzi")),
            width,
            height,
            max_level,
            pyramid: Pyramid::new(width, height, 0, max_level),
            partial: Vec::new(),
        })
    }

    fn write_tiles(&self, tiles: Vec<PyramidTile>) -> Result<(), Error> {
        tiles.par_iter().try_for_each(|tile| {
            let path = self
                .files
                .join((self.max_level - tile.level).to_string())
                .join(format!("{}_{}.png", tile.x, tile.y));
            let png = encode_png_rgb(&tile.pixels, tile.width, tile.height)?;
            std::fs::write(&path, png).map_err(|e| Error::io(&path, e))
        })
    }
}

impl BandSink for DziSink {
    fn write_rows(&mut self, rows: &[u8]) -> Result<(), Error> {
        let row_bytes = self.width as usize * 3;
        let mut tiles = Vec::new();
        let mut rows = rows;
        if !self.partial.is_empty() {
            let need = (row_bytes - self.partial.len()).min(rows.len());
            self.partial.extend_from_slice(&rows[..need]);
            rows = &rows[need..];
            if self.partial.len() == row_bytes {
                let row = std::mem::take(&mut self.partial);
                self.pyramid.push_row(&row, &mut tiles)?;
            }
        }
        let whole = rows.len() / row_bytes * row_bytes;
        for row in rows[..whole].chunks_exact(row_bytes) {
            self.pyramid.push_row(row, &mut tiles)?;
        }
        self.partial.extend_from_slice(&rows[whole..]);
        self.write_tiles(tiles)
    }

    fn finish(&mut self) -> Result<(), Error> {
        if self.pyramid.rows_left() > 0 || !self.partial.is_empty() {
            return Err(Error::Encode(format!(
                "the image ended {} rows short",
                self.pyramid.rows_left()
            )));
        }
        let xml = dzi_descriptor(self.width, self.height);
        std::fs::write(&self.descriptor, xml).map_err(|e| Error::io(&self.descriptor, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noise(width: u32, height: u32) -> Vec<u8> {
        (0..width * height * 3)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect()
    }

    /// The block mean of level `level` at pixel (x, y), computed directly.
    fn block_mean(img: &[u8], width: u32, height: u32, level: u32, x: u32, y: u32) -> [u8; 3] {
        let b = 1u32 << level;
        let (mut sums, mut n) = ([0u64; 3], 0u64);
        for yy in y * b..((y + 1) * b).min(height) {
            for xx in x * b..((x + 1) * b).min(width) {
                let at = (yy * width + xx) as usize * 3;
                for c in 0..3 {
                    sums[c] += u64::from(img[at + c]);
                }
                n += 1;
            }
        }
        sums.map(|s| ((s + n / 2) / n) as u8)
    }

    #[test]
    fn levels_count_like_deep_zoom() {
        assert_eq!(dzi_max_level(1, 1), 0);
        assert_eq!(dzi_max_level(2, 1), 1);
        assert_eq!(dzi_max_level(256, 100), 8);
        assert_eq!(dzi_max_level(257, 100), 9);
        assert_eq!(top_level(256, 256), 0);
        assert_eq!(top_level(257, 10), 1);
        assert_eq!(level_size(1157, 1531, 11), (1, 1));
    }

    /// Every tile of every level, from full resolution to one pixel, is the block mean of the
    /// image, cut where the tiling says, on sides that are multiples of no block.
    #[test]
    fn every_tile_of_every_level_is_the_block_mean() {
        let (width, height) = (613u32, 301u32);
        let img = noise(width, height);
        let max = dzi_max_level(width, height);
        let mut pyramid = Pyramid::new(width, height, 0, max);
        let mut tiles = Vec::new();
        for row in img.chunks_exact(width as usize * 3) {
            pyramid.push_row(row, &mut tiles).unwrap();
        }
        assert!(
            pyramid
                .push_row(&img[..width as usize * 3], &mut tiles)
                .is_err()
        );
        let mut expected = 0;
        for level in 0..=max {
            let (lw, lh) = level_size(width, height, level);
            expected += lw.div_ceil(PYRAMID_TILE) * lh.div_ceil(PYRAMID_TILE);
        }
        assert_eq!(tiles.len() as u32, expected);
        for tile in &tiles {
            let (lw, lh) = level_size(width, height, tile.level);
            assert_eq!(tile.width, (lw - tile.x * PYRAMID_TILE).min(PYRAMID_TILE));
            assert_eq!(tile.height, (lh - tile.y * PYRAMID_TILE).min(PYRAMID_TILE));
            for (i, px) in tile.pixels.chunks_exact(3).enumerate() {
                let (x, y) = (i as u32 % tile.width, i as u32 / tile.width);
                let want = block_mean(
                    &img,
                    width,
                    height,
                    tile.level,
                    tile.x * PYRAMID_TILE + x,
                    tile.y * PYRAMID_TILE + y,
                );
                assert_eq!(px, want, "level {} tile {},{}", tile.level, tile.x, tile.y);
            }
        }
    }

    #[test]
    fn levels_under_the_first_are_not_cut() {
        let (width, height) = (600u32, 520u32);
        let img = noise(width, height);
        let mut pyramid = Pyramid::new(width, height, 2, 3);
        let mut tiles = Vec::new();
        for row in img.chunks_exact(width as usize * 3) {
            pyramid.push_row(row, &mut tiles).unwrap();
        }
        let levels: Vec<u32> = tiles.iter().map(|t| t.level).collect();
        assert_eq!(levels, vec![2, 3]);
    }

    /// The sink takes bands of any row count, even split mid-row, and writes the files where a
    /// Deep Zoom viewer asks for them.
    #[test]
    fn dzi_sink_writes_the_descriptor_and_every_tile() {
        let (width, height) = (300u32, 270u32);
        let img = noise(width, height);
        let dir = tempfile::tempdir().unwrap();
        let mut sink = DziSink::create(dir.path(), "m", width, height).unwrap();
        for band in img.chunks(1000) {
            sink.write_rows(band).unwrap();
        }
        sink.finish().unwrap();
        let xml = std::fs::read_to_string(dir.path().join("m.dzi")).unwrap();
        assert!(xml.contains(r#"<Size Width="300" Height="270"/>"#), "{xml}");
        assert!(xml.contains(r#"TileSize="256""#) && xml.contains(r#"Overlap="0""#));
        let tile = |l: u32, x: u32, y: u32| {
            image::open(dir.path().join(format!("m_files/{l}/{x}_{y}.png")))
                .unwrap()
                .to_rgb8()
        };
        // Level 9 is full resolution: 2 x 2 tiles, the last 44 x 14.
        let corner = tile(9, 1, 1);
        assert_eq!(corner.dimensions(), (44, 14));
        let at = ((256 * width + 256) * 3) as usize;
        assert_eq!(
            corner.get_pixel(0, 0).0,
            [img[at], img[at + 1], img[at + 2]]
        );
        assert_eq!(tile(8, 0, 0).dimensions(), (150, 135));
        assert_eq!(tile(0, 0, 0).dimensions(), (1, 1));
        assert!(!dir.path().join("m_files/9/2_0.png").exists());
    }

    #[test]
    fn a_short_image_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = DziSink::create(dir.path(), "m", 10, 10).unwrap();
        sink.write_rows(&[0; 10 * 3 * 9]).unwrap();
        assert!(sink.finish().is_err());
    }
}
