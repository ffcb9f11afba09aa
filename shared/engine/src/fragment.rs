//! PNG fragments: a band of rows filtered and compressed on its own, so several processes can
//! compress the bands of one image in parallel and a stitcher only concatenates their bytes.
//!
//! A fragment is the band's PNG scanlines (a filter byte per row: Sub for the band's first row,
//! which must not look at the previous band, Up for the others) compressed as raw DEFLATE that
//! ends with a sync flush (byte-aligned, no final block), behind a small header with the adler32
//! and the length of the uncompressed scanlines. [`FragmentPngWriter`] writes the PNG around
//! fragments given in order: signature, IHDR, the zlib header, the fragments' DEFLATE bytes in
//! IDAT chunks, a final empty block, the adler32 combined from the fragments' checksums, IEND.
//!
//! Random access: a fragment starts a fresh DEFLATE stream, and every [`point_interval`] rows
//! within it the encoder ends the data so far with a full flush (byte-aligned, dictionary
//! reset) and filters the next row with Sub, so inflating can start there with no earlier byte.
//! The header lists these points; the writer gathers them, with the fragments' starts, into a
//! [`SeekIndex`] of the whole PNG.

use std::io::Write;

use flate2::{Compress, Compression, Crc, FlushCompress};

use crate::error::Error;
use crate::seek::{SeekIndex, SeekPoint};

/// The first bytes of a fragment with random-access points.
pub const FRAGMENT_MAGIC: [u8; 4] = *b"TPF2";
/// The first bytes of a fragment of the first format (no random-access points), still read.
const FRAGMENT_MAGIC_V1: [u8; 4] = *b"TPF1";
/// Length of the fixed start of a fragment's header: magic, adler32 (big-endian u32), scanline
/// bytes (big-endian u64). A `TPF2` header goes on with the number of random-access points
/// (big-endian u32) and each point: its row in the fragment (u32) and the offset of its DEFLATE
/// data from the start of the fragment's DEFLATE data (u64).
pub const FRAGMENT_HEADER_BYTES: usize = 16;
/// Bytes of one random-access point in a fragment's header.
const POINT_BYTES: usize = 12;
/// Uncompressed bytes between a fragment's random-access points, about.
const POINT_SCAN_BYTES: usize = 4 << 20;
/// Data bytes per IDAT chunk.
const IDAT_BYTES: usize = 1 << 20;
/// Where the first IDAT chunk starts: after the signature, IHDR (25 bytes), sRGB (13 bytes)
/// and pHYs (21 bytes).
const IDAT_START: u64 = 8 + 25 + 13 + 21;
/// Uncompressed bytes handed to the compressor at a time.
const FILTER_BATCH: usize = 1 << 18;

/// Rows between a fragment's random-access points for rows `width` px wide: about
/// 4 MiB of scanlines, and never more than 256 rows nor fewer than 16.
pub fn point_interval(width: u32) -> u32 {
    let row_scan = 1 + width as usize * 3;
    (POINT_SCAN_BYTES / row_scan).clamp(16, 256) as u32
}

/// A place inside a fragment where inflating can start afresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragmentPoint {
    /// The first row after the point, counted from the fragment's first row.
    pub row: u32,
    /// Where the point's DEFLATE data starts, counted from the fragment's first DEFLATE byte.
    pub offset: u64,
}

/// What a fragment's header says about its scanlines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FragmentHeader {
    /// adler32 of the uncompressed scanlines (filter bytes included).
    pub adler: u32,
    /// Length of the uncompressed scanlines: rows x (1 + row bytes).
    pub raw_len: u64,
    /// The random-access points after the fragment's start, in order.
    pub points: Vec<FragmentPoint>,
}

impl FragmentHeader {
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len());
        out.extend_from_slice(&FRAGMENT_MAGIC);
        out.extend_from_slice(&self.adler.to_be_bytes());
        out.extend_from_slice(&self.raw_len.to_be_bytes());
        out.extend_from_slice(&(self.points.len() as u32).to_be_bytes());
        for p in &self.points {
            out.extend_from_slice(&p.row.to_be_bytes());
            out.extend_from_slice(&p.offset.to_be_bytes());
        }
        out
    }

    /// The length of this header in a fragment.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        FRAGMENT_HEADER_BYTES + 4 + POINT_BYTES * self.points.len()
    }

    /// The length of the header at the start of `bytes` (which must hold its first 20 bytes),
    /// to know how much to read before [`FragmentHeader::parse`].
    pub fn len_at(bytes: &[u8]) -> Result<usize, Error> {
        if bytes.len() >= 4 && bytes[..4] == FRAGMENT_MAGIC_V1 {
            return Ok(FRAGMENT_HEADER_BYTES);
        }
        if bytes.len() < FRAGMENT_HEADER_BYTES + 4 || bytes[..4] != FRAGMENT_MAGIC {
            return Err(Error::Encode("not a PNG fragment".into()));
        }
        let count = u32::from_be_bytes(bytes[16..20].try_into().expect("4 bytes"));
        Ok(FRAGMENT_HEADER_BYTES + 4 + POINT_BYTES * count as usize)
    }

    /// Reads the header at the start of `bytes`.
    pub fn parse(bytes: &[u8]) -> Result<Self, Error> {
        let len = Self::len_at(bytes)?;
        if bytes.len() < len {
            return Err(Error::Encode("a PNG fragment's header is cut short".into()));
        }
        let adler = u32::from_be_bytes(bytes[4..8].try_into().expect("4 bytes"));
        let raw_len = u64::from_be_bytes(bytes[8..16].try_into().expect("8 bytes"));
        let points = bytes[FRAGMENT_HEADER_BYTES.min(len)..len]
            .get(4..)
            .unwrap_or_default()
            .chunks_exact(POINT_BYTES)
            .map(|p| FragmentPoint {
                row: u32::from_be_bytes(p[..4].try_into().expect("4 bytes")),
                offset: u64::from_be_bytes(p[4..].try_into().expect("8 bytes")),
            })
            .collect();
        Ok(Self {
            adler,
            raw_len,
            points,
        })
    }
}

/// adler32 of `data`, continuing from `adler` (1 for an empty start).
pub fn adler32_update(adler: u32, data: &[u8]) -> u32 {
    zlib_rs::adler32::adler32(adler, data)
}

/// The adler32 of two byte runs one after the other, from the first run's adler32 and the
/// second's adler32 and length (zlib's `adler32_combine`).
pub fn adler32_combine(adler1: u32, adler2: u32, len2: u64) -> u32 {
    zlib_rs::adler32::adler32_combine(adler1, adler2, len2)
}

fn enc_err(e: impl std::fmt::Display) -> Error {
    Error::Encode(e.to_string())
}

/// Encodes whole RGB8 rows of an image `width` px wide as a fragment (header and DEFLATE
/// bytes), with fast compression. The same rows always give the same bytes.
pub fn encode_png_fragment(rows: &[u8], width: u32) -> Result<Vec<u8>, Error> {
    let mut encoder = FragmentEncoder::new(width, rows.len() / 4)?;
    encoder.write_rows(rows)?;
    encoder.finish()
}

/// Builds a fragment from rows given a band at a time (top to bottom), so a slice can be
/// rendered and compressed in small bands: memory holds a band and the compressed bytes. Any
/// split of the same rows gives the same bytes as [`encode_png_fragment`].
pub struct FragmentEncoder {
    compress: Compress,
    row_bytes: usize,
    adler: u32,
    raw_len: u64,
    /// Rows taken so far.
    rows: u32,
    /// Rows between random-access points.
    interval: u32,
    points: Vec<FragmentPoint>,
    /// Filtered scanlines waiting for the compressor.
    scan: Vec<u8>,
    /// The last row taken (empty before the first).
    prev: Vec<u8>,
    out: Vec<u8>,
    /// The compressor's output buffer (see [`deflate`]).
    window: Vec<u8>,
}

impl FragmentEncoder {
    /// An encoder for rows `width` px wide, expecting about `capacity` compressed bytes.
    pub fn new(width: u32, capacity: usize) -> Result<Self, Error> {
        let row_bytes = width as usize * 3;
        if row_bytes == 0 {
            return Err(Error::Encode("a fragment of an empty row".into()));
        }
        let mut out = Vec::with_capacity(FRAGMENT_HEADER_BYTES + capacity + 1024);
        out.extend_from_slice(&[0; FRAGMENT_HEADER_BYTES]);
        Ok(Self {
            compress: Compress::new(Compression::fast(), false),
            row_bytes,
            adler: 1,
            raw_len: 0,
            rows: 0,
            interval: point_interval(width),
            points: Vec::new(),
            scan: Vec::with_capacity(FILTER_BATCH + row_bytes + 1),
            prev: Vec::with_capacity(row_bytes),
            out,
            window: Vec::new(),
        })
    }

    /// Takes the next whole rows.
    pub fn write_rows(&mut self, rows: &[u8]) -> Result<(), Error> {
        let row_bytes = self.row_bytes;
        if !rows.len().is_multiple_of(row_bytes) {
            return Err(Error::Encode("a fragment must hold whole rows".into()));
        }
        for row in rows.chunks_exact(row_bytes) {
            let point = self.rows > 0 && self.rows.is_multiple_of(self.interval);
            if point {
                // Everything so far out and forgotten: inflating can start here afresh.
                self.compress_scan(FlushCompress::Full)?;
                self.points.push(FragmentPoint {
                    row: self.rows,
                    offset: (self.out.len() - FRAGMENT_HEADER_BYTES) as u64,
                });
            }
            self.rows += 1;
            if self.prev.is_empty() || point {
                // Sub: the band's first row, and each point's, stands alone.
                self.scan.push(1);
                self.scan.extend_from_slice(&row[..row_bytes.min(3)]);
                self.scan.extend(
                    row[3..]
                        .iter()
                        .zip(row)
                        .map(|(x, left)| x.wrapping_sub(*left)),
                );
            } else {
                // Up, as the whole-image encoder does.
                self.scan.push(2);
                self.scan.extend(
                    row.iter()
                        .zip(&self.prev)
                        .map(|(x, up)| x.wrapping_sub(*up)),
                );
            }
            self.prev.clear();
            self.prev.extend_from_slice(row);
            if self.scan.len() >= FILTER_BATCH {
                self.compress_scan(FlushCompress::None)?;
            }
        }
        Ok(())
    }

    fn compress_scan(&mut self, flush: FlushCompress) -> Result<(), Error> {
        self.adler = adler32_update(self.adler, &self.scan);
        self.raw_len += self.scan.len() as u64;
        deflate(
            &mut self.compress,
            &self.scan,
            (&mut self.out, &mut self.window),
            flush,
        )?;
        self.scan.clear();
        Ok(())
    }

    /// The fragment: header and DEFLATE bytes ending on a sync flush.
    pub fn finish(mut self) -> Result<Vec<u8>, Error> {
        if self.prev.is_empty() {
            return Err(Error::Encode("a fragment without rows".into()));
        }
        self.compress_scan(FlushCompress::Sync)?;
        let header = FragmentHeader {
            adler: self.adler,
            raw_len: self.raw_len,
            points: std::mem::take(&mut self.points),
        };
        self.out.splice(..FRAGMENT_HEADER_BYTES, header.to_bytes());
        Ok(self.out)
    }
}

/// Compresses all of `input` onto the end of `out`; with a sync flush, everything is out and
/// the stream ends on a byte boundary.
///
/// The compressor writes into `window`, a buffer kept from call to call and zeroed only when it
/// grows, and its output is copied onto `out`: the backend zeroes any uninitialised room before
/// every call, which cost more than the compression.
fn deflate(
    compress: &mut Compress,
    mut input: &[u8],
    (out, window): (&mut Vec<u8>, &mut Vec<u8>),
    flush: FlushCompress,
) -> Result<(), Error> {
    let room = (input.len() + input.len() / 8).max(1 << 16);
    if window.len() < room {
        window.resize(room, 0);
    }
    loop {
        let (before_in, before_out) = (compress.total_in(), compress.total_out());
        let done = compress.compress(input, window, flush);
        let written = (compress.total_out() - before_out) as usize;
        out.extend_from_slice(&window[..written]);
        done.map_err(enc_err)?;
        input = &input[(compress.total_in() - before_in) as usize..];
        // Room left over means the compressor had nothing more to give.
        if input.is_empty() && written < window.len() {
            return Ok(());
        }
    }
}

/// Writes a PNG (RGB8, 8 bits) from fragments given in order, top to bottom.
pub struct FragmentPngWriter<W: Write> {
    w: W,
    idat: Vec<u8>,
    adler: u32,
    raw_len: u64,
    expected: u64,
    row_scan: u64,
    /// Whether a fragment's header has come (data before any header is refused).
    in_fragment: bool,
    width: u32,
    height: u32,
    /// Bytes of the zlib stream so far (its header included).
    stream_len: u64,
    points: Vec<SeekPoint>,
}

impl<W: Write> FragmentPngWriter<W> {
    /// Writes the signature and the header of a `width` x `height` image printed at `dpi`.
    pub fn new(mut w: W, width: u32, height: u32, dpi: u32) -> Result<Self, Error> {
        if width == 0 || height == 0 || width > i32::MAX as u32 || height > i32::MAX as u32 {
            return Err(Error::Encode(format!("a {width} x {height} PNG")));
        }
        w.write_all(b"\x89PNG\r\n\x1a\n").map_err(enc_err)?;
        let mut ihdr = Vec::with_capacity(13);
        ihdr.extend_from_slice(&width.to_be_bytes());
        ihdr.extend_from_slice(&height.to_be_bytes());
        // 8 bits, RGB, deflate, adaptive filtering, no interlace.
        ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
        write_chunk(&mut w, b"IHDR", &ihdr)?;
        // The pixels are sRGB (perceptual intent).
        write_chunk(&mut w, b"sRGB", &[0])?;
        write_chunk(&mut w, b"pHYs", &phys(dpi))?;
        let row_scan = 1 + u64::from(width) * 3;
        let mut idat = Vec::with_capacity(IDAT_BYTES);
        // zlib header: deflate with a 32 KiB window, fast compression, no dictionary.
        idat.extend_from_slice(&[0x78, 0x01]);
        Ok(Self {
            w,
            idat,
            adler: 1,
            raw_len: 0,
            expected: row_scan * u64::from(height),
            row_scan,
            in_fragment: false,
            width,
            height,
            stream_len: 2,
            points: Vec::new(),
        })
    }

    /// The writer underneath (e.g. to take away what has been written so far).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.w
    }

    /// Starts the next fragment, from its header.
    pub fn begin_fragment(&mut self, header: &FragmentHeader) -> Result<(), Error> {
        if header.raw_len == 0 || !header.raw_len.is_multiple_of(self.row_scan) {
            return Err(Error::Encode(format!(
                "a fragment of {} scanline bytes does not hold whole rows of {} bytes",
                header.raw_len, self.row_scan
            )));
        }
        if self.raw_len + header.raw_len > self.expected {
            return Err(Error::Encode("more rows than the image has".into()));
        }
        let first = self.raw_len / self.row_scan;
        let rows = header.raw_len / self.row_scan;
        let mut last = 0;
        self.points.push(SeekPoint {
            row: first as u32,
            stream: self.stream_len,
        });
        for p in &header.points {
            if p.row <= last || u64::from(p.row) >= rows {
                return Err(Error::Encode(format!(
                    "a fragment of {rows} rows lists a point at row {}",
                    p.row
                )));
            }
            last = p.row;
            self.points.push(SeekPoint {
                row: first as u32 + p.row,
                stream: self.stream_len + p.offset,
            });
        }
        self.adler = adler32_combine(self.adler, header.adler, header.raw_len);
        self.raw_len += header.raw_len;
        self.in_fragment = true;
        Ok(())
    }

    /// Takes the next DEFLATE bytes of the current fragment (any split).
    pub fn write_deflate(&mut self, mut data: &[u8]) -> Result<(), Error> {
        if !self.in_fragment {
            return Err(Error::Encode("fragment data before its header".into()));
        }
        self.stream_len += data.len() as u64;
        while !data.is_empty() {
            let n = (IDAT_BYTES - self.idat.len()).min(data.len());
            self.idat.extend_from_slice(&data[..n]);
            data = &data[n..];
            if self.idat.len() == IDAT_BYTES {
                self.flush_idat()?;
            }
        }
        Ok(())
    }

    /// Takes a whole fragment (header and DEFLATE bytes).
    pub fn write_fragment(&mut self, fragment: &[u8]) -> Result<(), Error> {
        let header = FragmentHeader::parse(fragment)?;
        self.begin_fragment(&header)?;
        self.write_deflate(&fragment[header.len()..])
    }

    fn flush_idat(&mut self) -> Result<(), Error> {
        if !self.idat.is_empty() {
            write_chunk(&mut self.w, b"IDAT", &self.idat)?;
            self.idat.clear();
        }
        Ok(())
    }

    /// Ends the image; an error if the fragments did not hold every row.
    pub fn finish(self) -> Result<W, Error> {
        self.finish_indexed().map(|(w, _)| w)
    }

    /// Ends the image and gives its seek index: where inflating can start afresh.
    pub fn finish_indexed(mut self) -> Result<(W, SeekIndex), Error> {
        if self.points.windows(2).any(|p| p[1].stream <= p[0].stream)
            || self
                .points
                .last()
                .is_some_and(|p| p.stream >= self.stream_len)
        {
            return Err(Error::Encode(
                "a fragment lists a point past its own data".into(),
            ));
        }
        if self.raw_len != self.expected {
            return Err(Error::Encode(format!(
                "the fragments hold {} of the image's {} scanline bytes",
                self.raw_len, self.expected
            )));
        }
        // An empty final block (fixed Huffman codes, only the end-of-block code), then adler32.
        self.idat.extend_from_slice(&[0x03, 0x00]);
        self.idat.extend_from_slice(&self.adler.to_be_bytes());
        self.flush_idat()?;
        write_chunk(&mut self.w, b"IEND", &[])?;
        self.w.flush().map_err(enc_err)?;
        let index = SeekIndex::new(
            self.width,
            self.height,
            IDAT_START,
            IDAT_BYTES as u32,
            self.stream_len + 6,
            std::mem::take(&mut self.points),
        );
        Ok((self.w, index))
    }
}

/// A `pHYs` chunk's data: `dpi` as pixels per metre on both axes, unit the metre.
pub(crate) fn phys(dpi: u32) -> [u8; 9] {
    let per_metre = (f64::from(dpi) / 0.0254).round() as u32;
    let mut data = [1u8; 9];
    data[..4].copy_from_slice(&per_metre.to_be_bytes());
    data[4..8].copy_from_slice(&per_metre.to_be_bytes());
    data
}

fn write_chunk<W: Write>(w: &mut W, kind: &[u8; 4], data: &[u8]) -> Result<(), Error> {
    let mut crc = Crc::new();
    crc.update(kind);
    crc.update(data);
    w.write_all(&(data.len() as u32).to_be_bytes())
        .and_then(|()| w.write_all(kind))
        .and_then(|()| w.write_all(data))
        .and_then(|()| w.write_all(&crc.sum().to_be_bytes()))
        .map_err(enc_err)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    fn decode(png_bytes: &[u8]) -> (u32, u32, Vec<u8>) {
        let image = image::load_from_memory_with_format(png_bytes, image::ImageFormat::Png)
            .unwrap()
            .to_rgb8();
        (image.width(), image.height(), image.into_raw())
    }

    /// Pixels with runs and noise, so both matches and literals occur.
    pub(crate) fn pixels(width: usize, height: usize, seed: u64) -> Vec<u8> {
        let mut state = seed | 1;
        (0..width * height * 3)
            .map(|i| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                if (i / 3 / width).is_multiple_of(5) {
                    (i % 7) as u8
                } else {
                    (state >> 56) as u8
                }
            })
            .collect()
    }

    /// A writer for the image of `pixels`, and the fragments of its bands cut at rows `cuts`.
    pub(crate) fn fragments(
        pixels: &[u8],
        width: u32,
        cuts: &[usize],
    ) -> (FragmentPngWriter<Vec<u8>>, Vec<Vec<u8>>) {
        let row = width as usize * 3;
        let height = pixels.len() / row;
        let png = FragmentPngWriter::new(Vec::new(), width, height as u32, 300).unwrap();
        let mut bounds = vec![0];
        bounds.extend_from_slice(cuts);
        bounds.push(height);
        let fragments = bounds
            .windows(2)
            .map(|pair| encode_png_fragment(&pixels[pair[0] * row..pair[1] * row], width).unwrap())
            .collect();
        (png, fragments)
    }

    fn assemble(pixels: &[u8], width: u32, cuts: &[usize]) -> Vec<u8> {
        let (mut png, fragments) = fragments(pixels, width, cuts);
        for fragment in fragments {
            let header = FragmentHeader::parse(&fragment).unwrap();
            png.begin_fragment(&header).unwrap();
            // Fed in uneven pieces, as ranged reads would.
            for piece in fragment[header.len()..].chunks(777) {
                png.write_deflate(piece).unwrap();
            }
        }
        png.finish().unwrap()
    }

    #[test]
    fn adler32_matches_a_direct_computation_and_combines() {
        let data = pixels(100, 60, 3);
        // The textbook definition.
        let (mut a, mut b) = (1u64, 0u64);
        for &x in &data {
            a = (a + u64::from(x)) % 65_521;
            b = (b + a) % 65_521;
        }
        let whole = adler32_update(1, &data);
        assert_eq!(whole, ((b << 16) | a) as u32);
        for cut in [0, 1, 5551, 5552, 9000, data.len()] {
            let (x, y) = data.split_at(cut);
            let combined =
                adler32_combine(adler32_update(1, x), adler32_update(1, y), y.len() as u64);
            assert_eq!(combined, whole, "cut at {cut}");
        }
    }

    #[test]
    fn one_fragment_makes_the_image() {
        let (width, height) = (37u32, 91usize);
        let px = pixels(width as usize, height, 7);
        assert_eq!(
            decode(&assemble(&px, width, &[])),
            (width, height as u32, px)
        );
    }

    #[test]
    fn large_fragments_span_batches_and_idat_chunks() {
        // 1.5 MB of rows: several compressor batches per fragment, several IDAT chunks.
        let (width, height) = (1000u32, 500usize);
        let px = pixels(width as usize, height, 11);
        let png = assemble(&px, width, &[130, 131, 400]);
        assert!(png.len() > IDAT_BYTES);
        assert_eq!(decode(&png), (width, height as u32, px));
    }

    #[test]
    fn fragments_are_deterministic_and_checked() {
        let px = pixels(20, 10, 9);
        let a = encode_png_fragment(&px, 20).unwrap();
        assert_eq!(a, encode_png_fragment(&px, 20).unwrap());
        let header = FragmentHeader::parse(&a).unwrap();
        assert_eq!(header.raw_len, 10 * 61);
        assert_eq!(header.points, []);
        assert!(encode_png_fragment(&px[1..], 20).is_err());
        assert!(encode_png_fragment(&[], 20).is_err());
        // Given in bands, the same bytes.
        let mut banded = FragmentEncoder::new(20, 0).unwrap();
        for band in px.chunks(20 * 3 * 3) {
            banded.write_rows(band).unwrap();
        }
        assert_eq!(banded.finish().unwrap(), a);
        assert!(FragmentHeader::parse(&px).is_err());

        // Too few rows, too many, rows of another width.
        let png = FragmentPngWriter::new(Vec::new(), 20, 11, 300).unwrap();
        let mut short = png;
        short.write_fragment(&a).unwrap();
        assert!(short.finish().is_err());
        let mut over = FragmentPngWriter::new(Vec::new(), 20, 9, 300).unwrap();
        assert!(over.write_fragment(&a).is_err());
        let mut other = FragmentPngWriter::new(Vec::new(), 21, 10, 300).unwrap();
        assert!(other.write_fragment(&a).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        #[test]
        fn fragments_of_any_band_split_decode_to_the_pixels(
            width in 1u32..70,
            height in 1usize..120,
            cuts in proptest::collection::btree_set(1usize..120, 0..8),
            seed in any::<u64>(),
        ) {
            let px = pixels(width as usize, height, seed);
            let cuts: Vec<usize> = cuts.into_iter().filter(|&c| c < height).collect();
            let png = assemble(&px, width, &cuts);
            prop_assert_eq!(decode(&png), (width, height as u32, px));
        }
    }
}
