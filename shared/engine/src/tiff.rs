//! Streaming tiled TIFF for print shops and huge mosaics: RGB8 in tiles of 256 x 256, each
//! compressed with deflate after the horizontal-difference predictor, written as the rows come.
//! The file is pyramidal: after the full image, each level halves the one before (2 x 2 means)
//! down to a single tile, as reduced-resolution images in the chain of directories
//! (`NewSubfileType` 1), as libvips and the print RIPs read them. Past 4 GB it is BigTIFF.
//! Every level carries the resolution (`XResolution`, `YResolution`, inches) and the sRGB
//! profile.
//!
//! Memory holds one band of 256 rows per level (about 1.5 bands of the full width in all) and a
//! tile's offset and size per tile; the directories go at the end, and the header's pointer to
//! the first is written last, so the writer must seek.

use std::io::{Seek, SeekFrom, Write};

use flate2::Compression;
use flate2::write::ZlibEncoder;
use rayon::prelude::*;

use crate::error::Error;

/// Tile side in pixels.
const TILE: usize = 256;
/// Past this many bytes of pixels the file is BigTIFF (compression cannot be counted on to
/// keep a classic TIFF's offsets under 4 GiB).
const BIG_PIXEL_BYTES: u64 = 3 << 30;

/// One level of the pyramid: its rows gathered into a band of tiles, and its tiles so far.
struct Level {
    width: usize,
    height: usize,
    /// Rows of the band being filled (up to [`TILE`] rows).
    band: Vec<u8>,
    /// Rows of this level received so far.
    rows_in: usize,
    /// A row waiting for its pair, to make the next level's row.
    pending: Option<Vec<u8>>,
    /// Each tile's offset and byte count, row of tiles by row of tiles.
    tiles: Vec<(u64, u64)>,
}

impl Level {
    fn new(width: usize, height: usize) -> Level {
        Level {
            width,
            height,
            band: Vec::with_capacity(width * 3 * TILE.min(height)),
            rows_in: 0,
            pending: None,
            tiles: Vec::new(),
        }
    }
}

/// A tiled, pyramidal TIFF written as rows come (see the module's notes).
pub struct TiffSink<W: Write + Seek> {
    w: W,
    /// Bytes written so far (where the next write lands).
    at: u64,
    big: bool,
    dpi: u32,
    levels: Vec<Level>,
    finished: bool,
}

impl<W: Write + Seek> TiffSink<W> {
    /// A TIFF of `width` x `height` printed at `dpi`.
    pub fn new(w: W, width: u32, height: u32, dpi: u32) -> Result<Self, Error> {
        let big = u64::from(width) * u64::from(height) * 3 > BIG_PIXEL_BYTES;
        Self::with_kind(w, (width, height), dpi, big)
    }

    /// A TIFF, BigTIFF when `big`.
    fn with_kind(
        mut w: W,
        (width, height): (u32, u32),
        dpi: u32,
        big: bool,
    ) -> Result<Self, Error> {
        if width == 0 || height == 0 {
            return Err(Error::Encode(format!("a {width} x {height} TIFF")));
        }
        // The header, its pointer to the first directory written at the end.
        let header: &[u8] = if big {
            &[b'I', b'I', 43, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
        } else {
            &[b'I', b'I', 42, 0, 0, 0, 0, 0]
        };
        w.write_all(header).map_err(enc_err)?;
        let (mut lw, mut lh) = (width as usize, height as usize);
        let mut levels = vec![Level::new(lw, lh)];
        while lw > TILE || lh > TILE {
            (lw, lh) = (lw.div_ceil(2), lh.div_ceil(2));
            levels.push(Level::new(lw, lh));
        }
        Ok(TiffSink {
            w,
            at: header.len() as u64,
            big,
            dpi,
            levels,
            finished: false,
        })
    }

    /// Takes one row of level `l`, and hands each pair of rows on to the next level.
    fn push_row(&mut self, l: usize, row: &[u8]) -> Result<(), Error> {
        let has_next = l + 1 < self.levels.len();
        let level = &mut self.levels[l];
        if level.rows_in >= level.height {
            return Err(Error::Encode("more rows than the image has".into()));
        }
        level.band.extend_from_slice(row);
        level.rows_in += 1;
        let band_full = level.band.len() == level.width * 3 * TILE || level.rows_in == level.height;
        let last = level.rows_in == level.height;
        let next = if has_next {
            match level.pending.take() {
                None if !last => {
                    level.pending = Some(row.to_vec());
                    None
                }
                None => Some(halve(row, row, level.width)),
                Some(above) => Some(halve(&above, row, level.width)),
            }
        } else {
            None
        };
        if band_full {
            self.write_band(l)?;
        }
        if let Some(next) = next {
            self.push_row(l + 1, &next)?;
        }
        Ok(())
    }

    /// Cuts level `l`'s band into tiles, compresses them in parallel and writes them in order.
    fn write_band(&mut self, l: usize) -> Result<(), Error> {
        let level = &mut self.levels[l];
        let band = std::mem::take(&mut level.band);
        let (width, rows) = (level.width, band.len() / (level.width * 3));
        let across = width.div_ceil(TILE);
        let compressed: Vec<Result<Vec<u8>, Error>> = (0..across)
            .into_par_iter()
            .map(|tx| compress_tile(&band, width, rows, tx * TILE))
            .collect();
        level.band = band;
        level.band.clear();
        for tile in compressed {
            let tile = tile?;
            self.w.write_all(&tile).map_err(enc_err)?;
            level.tiles.push((self.at, tile.len() as u64));
            self.at += tile.len() as u64;
        }
        Ok(())
    }

    /// Writes every level's directory, chained, and points the header at the first.
    fn write_directories(&mut self) -> Result<(), Error> {
        // Word-align the directories.
        if self.at % 2 == 1 {
            self.w.write_all(&[0]).map_err(enc_err)?;
            self.at += 1;
        }
        let first = self.at;
        let icc = crate::profile::srgb_icc();
        for l in 0..self.levels.len() {
            let last = l + 1 == self.levels.len();
            let dir = self.directory(l, icc, last)?;
            self.w.write_all(&dir).map_err(enc_err)?;
            self.at += dir.len() as u64;
        }
        self.w.seek(SeekFrom::Start(4)).map_err(enc_err)?;
        if self.big {
            self.w
                .write_all(&[8, 0, 0, 0])
                .and_then(|()| self.w.write_all(&first.to_le_bytes()))
        } else {
            let first = u32::try_from(first)
                .map_err(|_| Error::Encode("a classic TIFF past 4 GiB".into()))?;
            self.w.write_all(&first.to_le_bytes())
        }
        .map_err(enc_err)?;
        self.w.seek(SeekFrom::End(0)).map_err(enc_err)?;
        self.w.flush().map_err(enc_err)
    }

    /// Level `l`'s directory at the current offset, with the values too long for an entry
    /// after it; points to the next directory unless it is the `last`.
    fn directory(&self, l: usize, icc: &[u8], last: bool) -> Result<Vec<u8>, Error> {
        let level = &self.levels[l];
        let offsets: Vec<u64> = level.tiles.iter().map(|t| t.0).collect();
        let counts: Vec<u64> = level.tiles.iter().map(|t| t.1).collect();
        let res = [self.dpi, 1];
        let mut entries: Vec<Entry> = vec![
            Entry::long(254, &[u64::from(l > 0)]),
            Entry::long(256, &[level.width as u64]),
            Entry::long(257, &[level.height as u64]),
            Entry::short(258, &[8, 8, 8]),
            // Adobe deflate.
            Entry::short(259, &[8]),
            // RGB.
            Entry::short(262, &[2]),
            Entry::short(277, &[3]),
            Entry::rational(282, res),
            Entry::rational(283, res),
            Entry::short(284, &[1]),
            // Inches.
            Entry::short(296, &[2]),
            // Horizontal differencing.
            Entry::short(317, &[2]),
            Entry::long(322, &[TILE as u64]),
            Entry::long(323, &[TILE as u64]),
            Entry::offsets(324, &offsets, self.big),
            Entry::offsets(325, &counts, self.big),
        ];
        if l == 0 {
            entries.push(Entry::undefined(34675, icc));
        }
        let (entry_bytes, count_bytes, pointer_bytes, inline) = if self.big {
            (20usize, 8usize, 8usize, 8usize)
        } else {
            (12, 2, 4, 4)
        };
        let start = self.at;
        let head = count_bytes + entries.len() * entry_bytes + pointer_bytes;
        let mut out = Vec::with_capacity(head);
        let mut extra: Vec<u8> = Vec::new();
        push_uint(&mut out, entries.len() as u64, count_bytes);
        for e in &entries {
            push_uint(&mut out, u64::from(e.tag), 2);
            push_uint(&mut out, u64::from(e.kind), 2);
            push_uint(&mut out, e.count, count_bytes.max(4));
            if e.data.len() <= inline {
                let mut value = e.data.clone();
                value.resize(inline, 0);
                out.extend_from_slice(&value);
            } else {
                let offset = start + head as u64 + extra.len() as u64;
                if !self.big && offset > u64::from(u32::MAX) {
                    return Err(Error::Encode("a classic TIFF past 4 GiB".into()));
                }
                push_uint(&mut out, offset, inline);
                extra.extend_from_slice(&e.data);
                if extra.len() % 2 == 1 {
                    extra.push(0);
                }
            }
        }
        let next = if last {
            0
        } else {
            start + head as u64 + extra.len() as u64
        };
        push_uint(&mut out, next, pointer_bytes);
        out.extend_from_slice(&extra);
        Ok(out)
    }
}

/// One directory entry: tag, field type, count, and its value's bytes (little-endian).
struct Entry {
    tag: u16,
    kind: u16,
    count: u64,
    data: Vec<u8>,
}

impl Entry {
    fn short(tag: u16, values: &[u16]) -> Entry {
        Entry {
            tag,
            kind: 3,
            count: values.len() as u64,
            data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        }
    }

    fn long(tag: u16, values: &[u64]) -> Entry {
        Entry {
            tag,
            kind: 4,
            count: values.len() as u64,
            data: values
                .iter()
                .flat_map(|&v| (v as u32).to_le_bytes())
                .collect(),
        }
    }

    /// Tile offsets or byte counts: LONG8 in a BigTIFF, LONG otherwise.
    fn offsets(tag: u16, values: &[u64], big: bool) -> Entry {
        if big {
            Entry {
                tag,
                kind: 16,
                count: values.len() as u64,
                data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
            }
        } else {
            Entry::long(tag, values)
        }
    }

    fn rational(tag: u16, [num, den]: [u32; 2]) -> Entry {
        Entry {
            tag,
            kind: 5,
            count: 1,
            data: num
                .to_le_bytes()
                .into_iter()
                .chain(den.to_le_bytes())
                .collect(),
        }
    }

    fn undefined(tag: u16, bytes: &[u8]) -> Entry {
        Entry {
            tag,
            kind: 7,
            count: bytes.len() as u64,
            data: bytes.to_vec(),
        }
    }
}

fn push_uint(out: &mut Vec<u8>, value: u64, bytes: usize) {
    out.extend_from_slice(&value.to_le_bytes()[..bytes]);
}

fn enc_err(e: impl std::fmt::Display) -> Error {
    Error::Encode(format!("TIFF: {e}"))
}

/// The 2 x 2 means of two rows of `width` pixels: a row of `ceil(width / 2)` (the last column
/// paired with itself when the width is odd).
fn halve(a: &[u8], b: &[u8], width: usize) -> Vec<u8> {
    let out_w = width.div_ceil(2);
    let mut out = Vec::with_capacity(out_w * 3);
    for x in 0..out_w {
        let (x0, x1) = (2 * x, (2 * x + 1).min(width - 1));
        for c in 0..3 {
            let sum = u16::from(a[x0 * 3 + c])
                + u16::from(a[x1 * 3 + c])
                + u16::from(b[x0 * 3 + c])
                + u16::from(b[x1 * 3 + c]);
            out.push(((sum + 2) / 4) as u8);
        }
    }
    out
}

/// The tile at column `x0` of a band of `rows` rows: padded to a full tile by repeating the
/// last column and row, differenced along each row, and deflated.
fn compress_tile(band: &[u8], width: usize, rows: usize, x0: usize) -> Result<Vec<u8>, Error> {
    let mut raw = Vec::with_capacity(TILE * TILE * 3);
    for y in 0..TILE {
        let row = &band[y.min(rows - 1) * width * 3..][..width * 3];
        let start = raw.len();
        for x in x0..x0 + TILE {
            let at = x.min(width - 1) * 3;
            raw.extend_from_slice(&row[at..at + 3]);
        }
        // Horizontal differencing (predictor 2), from the right so each byte's left is intact.
        let line = &mut raw[start..];
        for i in (3..line.len()).rev() {
            line[i] = line[i].wrapping_sub(line[i - 3]);
        }
    }
    let mut z = ZlibEncoder::new(Vec::with_capacity(TILE * TILE), Compression::fast());
    z.write_all(&raw).map_err(enc_err)?;
    z.finish().map_err(enc_err)
}

impl<W: Write + Seek> TiffSink<W> {
    /// Takes the next rows (whole RGB8 rows, top to bottom).
    pub fn write_rows(&mut self, rows: &[u8]) -> Result<(), Error> {
        if self.finished {
            return Err(Error::Encode("already finished".into()));
        }
        let row_bytes = self.levels[0].width * 3;
        if !rows.len().is_multiple_of(row_bytes) {
            return Err(Error::Encode("a band must hold whole rows".into()));
        }
        for row in rows.chunks_exact(row_bytes) {
            self.push_row(0, row)?;
        }
        Ok(())
    }

    /// Writes what is left and the directories; an error if rows are missing.
    pub fn finish(&mut self) -> Result<(), Error> {
        if self.finished {
            return Err(Error::Encode("already finished".into()));
        }
        let missing = self.levels[0].height - self.levels[0].rows_in;
        if missing > 0 {
            return Err(Error::Encode(format!(
                "{missing} rows missing at the end of the image"
            )));
        }
        self.finished = true;
        self.write_directories()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn picture(width: u32, height: u32) -> Vec<u8> {
        (0..height)
            .flat_map(|y| {
                (0..width).flat_map(move |x| {
                    [
                        (x * 7 % 256) as u8,
                        (y * 3 % 256) as u8,
                        ((x ^ y) % 256) as u8,
                    ]
                })
            })
            .collect()
    }

    fn tiff(width: u32, height: u32, pixels: &[u8], band_rows: usize) -> Vec<u8> {
        written(width, height, pixels, band_rows, false)
    }

    fn written(width: u32, height: u32, pixels: &[u8], band_rows: usize, big: bool) -> Vec<u8> {
        let mut out = std::io::Cursor::new(Vec::new());
        let mut sink = TiffSink::with_kind(&mut out, (width, height), 300, big).unwrap();
        for band in pixels.chunks(width as usize * 3 * band_rows) {
            sink.write_rows(band).unwrap();
        }
        sink.finish().unwrap();
        drop(sink);
        out.into_inner()
    }

    #[test]
    fn the_full_image_reads_back_exactly_at_any_band_height() {
        let (w, h) = (600, 300);
        let pixels = picture(w, h);
        let first = tiff(w, h, &pixels, 7);
        assert_eq!(first, tiff(w, h, &pixels, 300), "bands change nothing");
        let decoded = image::load_from_memory_with_format(&first, image::ImageFormat::Tiff)
            .unwrap()
            .to_rgb8();
        assert_eq!(decoded.dimensions(), (w, h));
        assert_eq!(decoded.into_raw(), pixels);
    }

    #[test]
    fn a_bigtiff_reads_back_as_the_classic_one_does() {
        let (w, h) = (300, 270);
        let pixels = picture(w, h);
        let big = written(w, h, &pixels, 50, true);
        assert_eq!(&big[..4], &[b'I', b'I', 43, 0]);
        let decoded = image::load_from_memory_with_format(&big, image::ImageFormat::Tiff)
            .unwrap()
            .to_rgb8();
        assert_eq!(decoded.into_raw(), pixels);
        let mut decoder = ::tiff::decoder::Decoder::new(std::io::Cursor::new(big)).unwrap();
        decoder.next_image().unwrap();
        assert_eq!(decoder.dimensions().unwrap(), (150, 135));
    }

    #[test]
    fn each_level_halves_the_one_before_down_to_one_tile() {
        let (w, h) = (1100, 530);
        let bytes = tiff(w, h, &picture(w, h), 64);
        let mut decoder = ::tiff::decoder::Decoder::new(std::io::Cursor::new(bytes)).unwrap();
        let mut sizes = vec![decoder.dimensions().unwrap()];
        while decoder.more_images() {
            decoder.next_image().unwrap();
            sizes.push(decoder.dimensions().unwrap());
        }
        assert_eq!(sizes, [(1100, 530), (550, 265), (275, 133), (138, 67)]);
    }

    #[test]
    fn too_few_or_too_many_rows_are_refused() {
        let mut out = std::io::Cursor::new(Vec::new());
        let mut sink = TiffSink::new(&mut out, 4, 2, 300).unwrap();
        sink.write_rows(&[0; 12]).unwrap();
        assert!(sink.finish().is_err());
        let mut sink = TiffSink::new(std::io::Cursor::new(Vec::new()), 4, 1, 300).unwrap();
        assert!(sink.write_rows(&[0; 24]).is_err());
    }
}
