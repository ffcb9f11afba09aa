//! Random access into a PNG written by [`FragmentPngWriter`]: its [`SeekIndex`] lists the places
//! where inflating can start with no earlier byte (each fragment's start, and the full-flush
//! points inside fragments), so a reader can fetch a range of the file, strip the IDAT chunk
//! framing ([`IdatData`]) and inflate only the rows it needs ([`Scanlines`]).
//!
//! The index, as bytes (all integers big-endian): `TSI1`, width (u32), height (u32), the offset
//! of the first IDAT chunk in the file (u64), the data bytes of every IDAT chunk but the last
//! (u32), the length of the zlib stream the IDAT chunks hold (u64), the number of points (u32),
//! then each point: its first row (u32), the offset of its DEFLATE data in the zlib stream (u64)
//! and in the PNG file (u64). The row after a point is filtered without looking at the row
//! above it (Sub), so a reader starts there with an empty previous row.
//!
//! [`FragmentPngWriter`]: crate::fragment::FragmentPngWriter

use std::io::Read;
use std::ops::Range;

use flate2::{Decompress, FlushDecompress, Status};

use crate::error::Error;

const INDEX_MAGIC: [u8; 4] = *b"TSI1";
const INDEX_HEAD: usize = 4 + 4 + 4 + 8 + 4 + 8 + 4;
const INDEX_POINT: usize = 4 + 8 + 8;
/// Bytes of chunk framing between two IDAT chunks' data: CRC, length, type.
const CHUNK_GAP: u64 = 12;
/// Bytes per pixel of the RGB8 images indexed here.
const BPP: usize = 3;

/// A place in the PNG where inflating can start afresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeekPoint {
    /// The first image row whose scanline starts there.
    pub row: u32,
    /// Offset of the point's DEFLATE data in the zlib stream (the IDAT chunks' data joined).
    pub stream: u64,
}

/// Where to start and stop reading for some rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// The first row the data decodes to (at or before the rows asked for).
    pub first_row: u32,
    /// The zlib stream bytes to inflate.
    pub stream: Range<u64>,
    /// The PNG file bytes holding them (IDAT framing included).
    pub file: Range<u64>,
}

/// The random-access points of an RGB8 PNG and the framing of its IDAT chunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeekIndex {
    pub width: u32,
    pub height: u32,
    /// Offset in the file of the first IDAT chunk (its length field).
    pub idat_start: u64,
    /// Data bytes in every IDAT chunk but the last, which holds the rest.
    pub chunk_data: u32,
    /// Length of the zlib stream: the IDAT chunks' data joined.
    pub stream_len: u64,
    /// In order of rows and of offsets; the first is row 0, just after the zlib header.
    pub points: Vec<SeekPoint>,
}

fn bad(what: impl std::fmt::Display) -> Error {
    Error::Decode(what.to_string())
}

impl SeekIndex {
    pub fn new(
        width: u32,
        height: u32,
        idat_start: u64,
        chunk_data: u32,
        stream_len: u64,
        points: Vec<SeekPoint>,
    ) -> Self {
        Self {
            width,
            height,
            idat_start,
            chunk_data,
            stream_len,
            points,
        }
    }

    /// The offset in the file of byte `stream` of the zlib stream.
    pub fn file_offset(&self, stream: u64) -> u64 {
        let c = u64::from(self.chunk_data);
        self.idat_start + (stream / c) * (c + CHUNK_GAP) + 8 + stream % c
    }

    /// The length of the whole PNG file.
    pub fn png_len(&self) -> u64 {
        let c = u64::from(self.chunk_data);
        self.idat_start + self.stream_len.div_ceil(c) * CHUNK_GAP + self.stream_len + 12
    }

    /// What to read to decode `rows` (within the image): from the last point at or before
    /// their first row to the first point after them (or the stream's end).
    pub fn span(&self, rows: Range<u32>) -> Option<Span> {
        if rows.start >= rows.end || rows.end > self.height {
            return None;
        }
        let at = self.points.partition_point(|p| p.row <= rows.start);
        let start = *self.points.get(at.checked_sub(1)?)?;
        let end = self.points[at..]
            .iter()
            .find(|p| p.row >= rows.end)
            .map_or(self.stream_len, |p| p.stream);
        Some(Span {
            first_row: start.row,
            stream: start.stream..end,
            file: self.file_offset(start.stream)..self.file_offset(end - 1) + 1,
        })
    }

    /// A reader of the zlib stream bytes `stream`, over a reader of the file positioned at
    /// `file_offset(stream.start)`: the IDAT framing stripped.
    pub fn idat_data<R: Read>(&self, file: R, stream: Range<u64>) -> IdatData<R> {
        let c = u64::from(self.chunk_data);
        IdatData {
            inner: file,
            chunk_left: c - stream.start % c,
            chunk_data: c,
            remaining: stream.end.saturating_sub(stream.start),
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(INDEX_HEAD + INDEX_POINT * self.points.len());
        out.extend_from_slice(&INDEX_MAGIC);
        out.extend_from_slice(&self.width.to_be_bytes());
        out.extend_from_slice(&self.height.to_be_bytes());
        out.extend_from_slice(&self.idat_start.to_be_bytes());
        out.extend_from_slice(&self.chunk_data.to_be_bytes());
        out.extend_from_slice(&self.stream_len.to_be_bytes());
        out.extend_from_slice(&(self.points.len() as u32).to_be_bytes());
        for p in &self.points {
            out.extend_from_slice(&p.row.to_be_bytes());
            out.extend_from_slice(&p.stream.to_be_bytes());
            out.extend_from_slice(&self.file_offset(p.stream).to_be_bytes());
        }
        out
    }

    /// Reads an index written by [`SeekIndex::to_bytes`], checking that it holds together.
    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        if bytes.len() < INDEX_HEAD || bytes[..4] != INDEX_MAGIC {
            return Err(bad("not a seek index"));
        }
        let u32_at = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().expect("4 bytes"));
        let u64_at = |i: usize| u64::from_be_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
        let count = u32_at(32) as usize;
        if bytes.len() != INDEX_HEAD + INDEX_POINT * count {
            return Err(bad("a seek index of the wrong length"));
        }
        let mut index = Self::new(u32_at(4), u32_at(8), u64_at(12), u32_at(20), u64_at(24), {
            (0..count)
                .map(|i| {
                    let at = INDEX_HEAD + INDEX_POINT * i;
                    SeekPoint {
                        row: u32_at(at),
                        stream: u64_at(at + 4),
                    }
                })
                .collect()
        });
        let ordered = index
            .points
            .windows(2)
            .all(|p| p[0].row < p[1].row && p[0].stream < p[1].stream);
        let first = index.points.first().copied();
        if index.chunk_data == 0
            || !ordered
            || first.is_none_or(|p| p.row != 0)
            || index.points.iter().any(|p| p.row >= index.height)
            || index
                .points
                .last()
                .is_some_and(|p| p.stream >= index.stream_len)
        {
            return Err(bad("an inconsistent seek index"));
        }
        index.points.shrink_to_fit();
        Ok(index)
    }
}

/// The zlib stream bytes of a range of IDAT chunks: reads the file and skips the framing.
pub struct IdatData<R> {
    inner: R,
    chunk_left: u64,
    chunk_data: u64,
    remaining: u64,
}

impl<R: Read> Read for IdatData<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.remaining == 0 || buf.is_empty() {
            return Ok(0);
        }
        if self.chunk_left == 0 {
            let mut gap = [0; CHUNK_GAP as usize];
            self.inner.read_exact(&mut gap)?;
            if &gap[8..] != b"IDAT" {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "the seek index does not match the PNG's chunks",
                ));
            }
            self.chunk_left = self.chunk_data;
        }
        let n = (buf.len() as u64).min(self.chunk_left).min(self.remaining) as usize;
        let n = self.inner.read(&mut buf[..n])?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        self.chunk_left -= n as u64;
        self.remaining -= n as u64;
        Ok(n)
    }
}

/// RGB8 rows inflated and unfiltered from raw DEFLATE data that starts at a random-access
/// point (or at the zlib stream's start, past its two header bytes).
pub struct Scanlines<R> {
    input: R,
    inflate: Decompress,
    inbuf: Vec<u8>,
    in_at: usize,
    in_len: usize,
    /// The scanline being filled: filter byte and row bytes.
    raw: Vec<u8>,
    row: Vec<u8>,
    prev: Vec<u8>,
}

impl<R: Read> Scanlines<R> {
    pub fn new(input: R, width: u32) -> Self {
        let row_bytes = width as usize * BPP;
        Self {
            input,
            inflate: Decompress::new(false),
            inbuf: vec![0; 64 << 10],
            in_at: 0,
            in_len: 0,
            raw: vec![0; row_bytes + 1],
            row: vec![0; row_bytes],
            prev: vec![0; row_bytes],
        }
    }

    /// The next row's pixels.
    pub fn next_row(&mut self) -> Result<&[u8], Error> {
        let mut filled = 0;
        while filled < self.raw.len() {
            if self.in_at == self.in_len {
                self.in_len = self.input.read(&mut self.inbuf).map_err(bad)?;
                self.in_at = 0;
            }
            let (before_in, before_out) = (self.inflate.total_in(), self.inflate.total_out());
            let status = self
                .inflate
                .decompress(
                    &self.inbuf[self.in_at..self.in_len],
                    &mut self.raw[filled..],
                    FlushDecompress::None,
                )
                .map_err(bad)?;
            let took = (self.inflate.total_in() - before_in) as usize;
            let gave = (self.inflate.total_out() - before_out) as usize;
            self.in_at += took;
            filled += gave;
            if filled < self.raw.len()
                && (status == Status::StreamEnd || (took == 0 && gave == 0 && self.in_len == 0))
            {
                return Err(bad("the image data ends before its rows"));
            }
        }
        std::mem::swap(&mut self.row, &mut self.prev);
        self.row.copy_from_slice(&self.raw[1..]);
        unfilter(self.raw[0], &mut self.row, &self.prev)?;
        Ok(&self.row)
    }
}

/// Undoes a PNG filter on one scanline of 3-byte pixels, given the row above (zeros for none).
fn unfilter(kind: u8, line: &mut [u8], prev: &[u8]) -> Result<(), Error> {
    match kind {
        0 => {}
        1 => {
            for i in BPP..line.len() {
                line[i] = line[i].wrapping_add(line[i - BPP]);
            }
        }
        2 => {
            for (x, up) in line.iter_mut().zip(prev) {
                *x = x.wrapping_add(*up);
            }
        }
        3 => {
            for i in 0..line.len() {
                let left = if i >= BPP { line[i - BPP] } else { 0 };
                let avg = ((u16::from(left) + u16::from(prev[i])) / 2) as u8;
                line[i] = line[i].wrapping_add(avg);
            }
        }
        4 => {
            for i in 0..line.len() {
                let (a, c) = if i >= BPP {
                    (line[i - BPP], prev[i - BPP])
                } else {
                    (0, 0)
                };
                let b = prev[i];
                let p = i16::from(a) + i16::from(b) - i16::from(c);
                let (pa, pb, pc) = (
                    (p - i16::from(a)).abs(),
                    (p - i16::from(b)).abs(),
                    (p - i16::from(c)).abs(),
                );
                let pred = if pa <= pb && pa <= pc {
                    a
                } else if pb <= pc {
                    b
                } else {
                    c
                };
                line[i] = line[i].wrapping_add(pred);
            }
        }
        other => return Err(bad(format!("unknown PNG filter {other}"))),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fragment::tests::{fragments, pixels};
    use crate::{fragment::encode_png_fragment, fragment::point_interval};

    fn indexed(px: &[u8], width: u32, cuts: &[usize]) -> (Vec<u8>, SeekIndex) {
        let (mut png, fragments) = fragments(px, width, cuts);
        for fragment in fragments {
            png.write_fragment(&fragment).unwrap();
        }
        png.finish_indexed().unwrap()
    }

    fn rows_from(png: &[u8], index: &SeekIndex, rows: Range<u32>) -> Vec<u8> {
        let span = index.span(rows.clone()).unwrap();
        let file = &png[span.file.start as usize..span.file.end as usize];
        let data = index.idat_data(file, span.stream.clone());
        let mut lines = Scanlines::new(data, index.width);
        let mut out = Vec::new();
        for y in span.first_row..rows.end {
            let line = lines.next_row().unwrap();
            if y >= rows.start {
                out.extend_from_slice(line);
            }
        }
        out
    }

    #[test]
    fn every_point_decodes_its_rows_alone() {
        // Wide enough for points inside fragments, long enough for several IDAT chunks.
        let (width, height) = (6000u32, 700usize);
        let interval = point_interval(width) as usize;
        assert!(interval < 256);
        let px = pixels(width as usize, height, 5);
        let (png, index) = indexed(&px, width, &[100, 101, 500]);
        assert!(png.len() > 2 << 20, "{} bytes", png.len());
        assert_eq!(index.png_len(), png.len() as u64);
        let mut want = vec![0, 100, 101, 500];
        want.extend((1..).map(|k| 101 + k * interval).take_while(|&r| r < 500));
        want.extend(
            (1..)
                .map(|k| 500 + k * interval)
                .take_while(|&r| r < height),
        );
        want.sort();
        let rows: Vec<usize> = index.points.iter().map(|p| p.row as usize).collect();
        assert_eq!(rows, want);
        let parsed = SeekIndex::parse(&index.to_bytes()).unwrap();
        assert_eq!(parsed, index);

        let row = width as usize * 3;
        let points: Vec<u32> = index.points.iter().map(|p| p.row).collect();
        for pair in points.windows(2) {
            let got = rows_from(&png, &index, pair[0]..pair[1]);
            assert!(
                got == px[pair[0] as usize * row..pair[1] as usize * row],
                "{pair:?}"
            );
        }
        // Rows between points, and the image's last rows.
        for rows in [3..7, 250..420, 690..700, 0..700] {
            let got = rows_from(&png, &index, rows.clone());
            assert!(
                got == px[rows.start as usize * row..rows.end as usize * row],
                "{rows:?}"
            );
        }
        assert_eq!(index.span(5..701), None);
        // The file offsets in the bytes are where the points' data sit in the PNG.
        let bytes = index.to_bytes();
        for (i, p) in index.points.iter().enumerate() {
            let at = INDEX_HEAD + INDEX_POINT * i + 12;
            let file = u64::from_be_bytes(bytes[at..at + 8].try_into().unwrap());
            assert_eq!(file, index.file_offset(p.stream));
        }
    }

    #[test]
    fn the_image_decodes_the_same_with_points_inside_fragments() {
        let (width, height) = (6000u32, 300usize);
        let px = pixels(width as usize, height, 9);
        let (png, index) = indexed(&px, width, &[]);
        assert!(index.points.len() > 1);
        let image = image::load_from_memory_with_format(&png, image::ImageFormat::Png)
            .unwrap()
            .to_rgb8();
        assert!(image.into_raw() == px);
    }

    #[test]
    fn fragments_with_points_are_the_same_bytes_for_any_band_split() {
        let (width, height) = (6000u32, 300usize);
        let px = pixels(width as usize, height, 4);
        let whole = encode_png_fragment(&px, width).unwrap();
        let mut banded = crate::fragment::FragmentEncoder::new(width, 0).unwrap();
        for band in px.chunks(width as usize * 3 * 7) {
            banded.write_rows(band).unwrap();
        }
        assert!(banded.finish().unwrap() == whole);
        let header = crate::fragment::FragmentHeader::parse(&whole).unwrap();
        assert_eq!(
            header.points.len(),
            (height - 1) / point_interval(width) as usize
        );
    }

    #[test]
    fn broken_indexes_are_refused() {
        let px = pixels(10, 20, 1);
        let (_, index) = indexed(&px, 10, &[5]);
        let bytes = index.to_bytes();
        assert!(SeekIndex::parse(&bytes[..bytes.len() - 1]).is_err());
        let mut swapped = index.clone();
        swapped.points.swap(0, 1);
        assert!(SeekIndex::parse(&swapped.to_bytes()).is_err());
        assert!(SeekIndex::parse(b"TSI0").is_err());
    }
}
