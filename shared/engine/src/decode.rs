//! Decoding the images people have: PNG, JPEG, WebP, GIF, TIFF and BMP through the image
//! crate, HEIC/HEIF and AVIF through libheif. EXIF orientation is applied (HEIF's own rotation
//! and mirroring by libheif), colours are converted to sRGB from the file's profile
//! (the `profile` module, with moxcms), and a cut-off JPEG is refused rather than padded with grey.

pub use crate::budget::MAX_METADATA_BYTES;
use crate::budget::check_side;
use crate::error::Error;
use crate::profile::{Declared, image_to_srgb};
use crate::shape::TileShape;

/// An image format Tessera reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Png,
    Jpeg,
    WebP,
    Gif,
    Tiff,
    Bmp,
    /// HEIC and other HEIF images (an iPhone's photos).
    Heif,
    Avif,
}

/// File extensions of the formats read, lower case.
pub const IMAGE_EXTENSIONS: [&str; 13] = [
    "png", "jpg", "jpeg", "jfif", "webp", "gif", "tif", "tiff", "bmp", "heic", "heif", "hif",
    "avif",
];

/// What the formats read are called, for messages and documents.
pub const FORMAT_NAMES: &str = "JPEG, PNG, HEIC, AVIF, WebP, TIFF, BMP or GIF";

impl Format {
    /// The format of `bytes`, by their content.
    pub fn sniff(bytes: &[u8]) -> Option<Format> {
        if let Some(heif) = heif_brand(bytes) {
            return heif;
        }
        Some(match image::guess_format(bytes).ok()? {
            image::ImageFormat::Png => Format::Png,
            image::ImageFormat::Jpeg => Format::Jpeg,
            image::ImageFormat::WebP => Format::WebP,
            image::ImageFormat::Gif => Format::Gif,
            image::ImageFormat::Tiff => Format::Tiff,
            image::ImageFormat::Bmp => Format::Bmp,
            image::ImageFormat::Avif => Format::Avif,
            _ => return None,
        })
    }

    /// The format's usual name.
    pub fn name(self) -> &'static str {
        match self {
            Format::Png => "PNG",
            Format::Jpeg => "JPEG",
            Format::WebP => "WebP",
            Format::Gif => "GIF",
            Format::Tiff => "TIFF",
            Format::Bmp => "BMP",
            Format::Heif => "HEIC",
            Format::Avif => "AVIF",
        }
    }

    /// Whether libheif decodes it (else the image crate does).
    pub fn is_heif(self) -> bool {
        matches!(self, Format::Heif | Format::Avif)
    }

    /// The image crate's format for it; `None` for those libheif decodes.
    pub fn image_format(self) -> Option<image::ImageFormat> {
        Some(match self {
            Format::Png => image::ImageFormat::Png,
            Format::Jpeg => image::ImageFormat::Jpeg,
            Format::WebP => image::ImageFormat::WebP,
            Format::Gif => image::ImageFormat::Gif,
            Format::Tiff => image::ImageFormat::Tiff,
            Format::Bmp => image::ImageFormat::Bmp,
            Format::Heif | Format::Avif => return None,
        })
    }
}

/// Kinds of file people mistake for photos Tessera reads, by extension: what to call them.
const NOT_READ: [(&[&str], &str); 6] = [
    (
        &[
            "cr2", "cr3", "nef", "arw", "dng", "orf", "rw2", "raf", "pef", "srw",
        ],
        "camera RAW",
    ),
    (&["psd", "psb"], "Photoshop"),
    (&["jxl"], "JPEG XL"),
    (&["svg"], "SVG drawing"),
    (&["mov", "mp4", "m4v", "avi", "mkv", "webm", "3gp"], "video"),
    (
        &[
            "ico", "tga", "pcx", "ppm", "pgm", "exr", "hdr", "jp2", "qoi",
        ],
        "image format not read",
    ),
];

/// Why a file called `name` is not taken as an image, by its extension: `None` for an image's
/// extension ([`IMAGE_EXTENSIONS`]), else its kind and what to do.
pub fn not_an_image(name: &str) -> Option<String> {
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .filter(|e| !e.contains('/'));
    match ext.as_deref() {
        Some(e) if IMAGE_EXTENSIONS.contains(&e) => None,
        ext => Some(not_image_reason(ext)),
    }
}

/// Why a file with extension `ext` (lower case) is not imported: its kind and what to do.
fn not_image_reason(ext: Option<&str>) -> String {
    let Some(ext) = ext else {
        return "not an image (no extension)".into();
    };
    match NOT_READ.iter().find(|(exts, _)| exts.contains(&ext)) {
        Some((_, kind)) => format!("{kind} (.{ext}): export it as JPEG or PNG"),
        None => format!("not an image (.{ext})"),
    }
}

/// What a file Tessera does not read is, by its content, when it is a kind people mistake for a
/// photo (a PSD, a JPEG XL, a video, an image format the image crate knows but Tessera does not
/// read): `None` for anything else.
pub fn unreadable_kind(bytes: &[u8]) -> Option<String> {
    if Format::sniff(bytes).is_some() {
        return None;
    }
    if bytes.starts_with(b"8BPS") {
        return Some("Photoshop (PSD)".into());
    }
    if bytes.starts_with(&[0xFF, 0x0A]) || bytes.get(4..12) == Some(b"JXL \r\n\x87\n") {
        return Some("JPEG XL".into());
    }
    if heif_brand(bytes) == Some(None) {
        return Some("video".into());
    }
    let start = String::from_utf8_lossy(&bytes[..bytes.len().min(256)]).to_ascii_lowercase();
    if start.trim_start().starts_with("<svg") || start.contains("<svg") {
        return Some("SVG drawing".into());
    }
    image::guess_format(bytes).ok().map(|f| {
        f.extensions_str()
            .first()
            .unwrap_or(&"these")
            .to_uppercase()
    })
}

/// The HEIF family by the file's `ftyp` box: `Some(Some(..))` for a HEIF or AVIF image,
/// `Some(None)` for another ISO media file (a video), `None` when there is no `ftyp`.
fn heif_brand(bytes: &[u8]) -> Option<Option<Format>> {
    if bytes.get(4..8) != Some(b"ftyp") {
        return None;
    }
    let size = u32::from_be_bytes(bytes[0..4].try_into().ok()?) as usize;
    let end = size.clamp(16, 4096).min(bytes.len());
    let major = bytes.get(8..12)?;
    // The major brand, then the compatible brands after the minor version.
    let brands = std::iter::once(major).chain(bytes.get(16..end).unwrap_or(&[]).chunks_exact(4));
    let mut found = None;
    for brand in brands {
        match brand {
            b"avif" | b"avis" => return Some(Some(Format::Avif)),
            b"heic" | b"heix" | b"heim" | b"heis" | b"hevc" | b"hevx" | b"mif1" | b"msf1" => {
                found = Some(Format::Heif)
            }
            _ => {}
        }
    }
    Some(found)
}

/// What a file's header says, before any pixel is decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub format: Format,
    /// Width and height as stored (before EXIF orientation).
    pub width: u32,
    pub height: u32,
    /// Whether the image turns a quarter (EXIF orientation 5 to 8): shown as `height x width`.
    pub turned: bool,
    /// Bytes the decoder holds: its output, and a progressive JPEG's coefficients.
    pub decoded_bytes: u64,
}

/// The width and height of the image file at `path` (as stored), from its header: the first
/// bytes for the image crate's formats, the whole file for HEIF and AVIF (libheif reads the
/// container). `None` when it cannot be read.
pub fn image_size(path: &std::path::Path) -> Option<(u32, u32)> {
    use std::io::Read;
    let mut head = Vec::with_capacity(64);
    std::fs::File::open(path)
        .ok()?
        .take(64)
        .read_to_end(&mut head)
        .ok()?;
    match Format::sniff(&head) {
        Some(f) if f.is_heif() => {
            let header = read_header(&std::fs::read(path).ok()?).ok()?;
            return Some((header.width, header.height));
        }
        // The IHDR's own numbers: the image crate would read the metadata on its way there.
        Some(Format::Png) => return png_ihdr_size(&head),
        _ => {}
    }
    image::ImageReader::open(path)
        .and_then(|r| r.with_guessed_format())
        .ok()?
        .into_dimensions()
        .ok()
}

pub use crate::tiff_read::check_whole as check_tiff_whole;

/// Reads the header of an image in a format Tessera reads.
pub fn read_header(bytes: &[u8]) -> Result<Header, String> {
    use image::ImageDecoder;
    use image::metadata::Orientation;
    let format = Format::sniff(bytes).ok_or("not an image Tessera reads")?;
    if format.is_heif() {
        let (width, height, _, decoded_bytes) = heif::header(bytes)?;
        return Ok(Header {
            format,
            width,
            height,
            turned: false,
            decoded_bytes,
        });
    }
    let mut reader = image::ImageReader::new(std::io::Cursor::new(bytes));
    reader.set_format(format.image_format().expect("not HEIF"));
    reader.limits(header_limits(format, bytes));
    let mut decoder = reader.into_decoder().map_err(|e| e.to_string())?;
    let (width, height) = decoder.dimensions();
    let turned = matches!(
        decoder.orientation().unwrap_or(Orientation::NoTransforms),
        Orientation::Rotate90
            | Orientation::Rotate270
            | Orientation::Rotate90FlipH
            | Orientation::Rotate270FlipH
    );
    let decoded_bytes = match format {
        Format::Tiff => crate::tiff_read::decode_bytes(bytes, decoder.total_bytes()),
        // A progressive JPEG holds its coefficients besides its pixels.
        Format::Jpeg => decoder
            .total_bytes()
            .saturating_add(crate::jpeg_frame::coefficient_bytes(bytes)),
        _ => decoder.total_bytes(),
    };
    Ok(Header {
        format,
        width,
        height,
        turned,
        decoded_bytes,
    })
}

/// Largest tile image decoded as it is, on either side. A larger JPEG is decoded reduced
/// ([`MAX_JPEG_TILE_PIXELS`]); a larger image in another format is decoded whole within a share
/// of [`LARGE_DECODE_BUDGET`] and reduced at once ([`MAX_LARGE_TILE_PIXELS`]).
pub const MAX_TILE_SIDE: u32 = 4096;
/// Most memory one tile's decoder may allocate as it is (a 4096 x 4096 RGBA8 image).
pub const MAX_TILE_DECODE_BYTES: u64 = 64 << 20;
/// Largest tile in a format other than JPEG, in pixels as stored (200 megapixels, as for JPEG).
pub const MAX_LARGE_TILE_PIXELS: u64 = 200_000_000;
/// Memory that the decodes of tiles over [`MAX_TILE_SIDE`] hold together (1 GiB): a decode
/// waits for others to finish rather than add to them, and one that needs more is refused.
pub const LARGE_DECODE_BUDGET: u64 = 1 << 30;
/// Largest JPEG tile accepted, in pixels as stored (200 megapixels: every camera's and phone's):
/// it is decoded reduced, at the scale its rendition needs.
pub const MAX_JPEG_TILE_PIXELS: u64 = 200_000_000;
/// Most memory the JPEG decoder may hold for a reduced tile (a progressive file keeps its
/// coefficients, two bytes each, at full size: [`crate::jpeg_frame`]), checked from its frame
/// before it decodes and taken from [`LARGE_DECODE_BUDGET`] while it does.
pub const MAX_JPEG_TILE_BUFFER: usize = 512 << 20;

/// An image cropped to a tile's shape and composited onto a background.
pub(crate) struct Cropped {
    pub(crate) width: usize,
    pub(crate) height: usize,
    /// Packed RGB8.
    pub(crate) rgb: Vec<u8>,
    /// A byte of opacity per pixel, if any pixel is not opaque.
    pub(crate) alpha: Option<Vec<u8>>,
}

/// Decodes an image file into its largest crop of `shape` (where `rule` places it)
/// with at least `need` pixels on the crop's short side where the file has them. Tiles are
/// decoded within [`MAX_TILE_SIDE`] and [`MAX_TILE_DECODE_BYTES`] (a tiny file that declares a
/// huge image is refused from its header); a larger JPEG is decoded reduced ([`jpeg_reduced`]).
pub(crate) fn decode_crop(
    bytes: &[u8],
    background: [u8; 3],
    (shape, rule): (TileShape, crate::crop::CropRule),
    need: u32,
) -> Result<Cropped, String> {
    let rgba = match Format::sniff(bytes) {
        Some(Format::Jpeg) => match jpeg_reduced(bytes, need)? {
            Some(reduced) => reduced,
            None => decode_tile_whole(bytes, need)?,
        },
        _ => decode_tile_whole(bytes, need)?,
    };
    let (w, h) = (rgba.width() as usize, rgba.height() as usize);
    if w == 0 || h == 0 {
        return Err("empty image".into());
    }
    let (x0, y0, cw, ch) = rule.crop(&rgba, shape);
    let raw = rgba.as_raw();
    let mut out = Vec::with_capacity(cw * ch * 3);
    let mut alpha = Vec::with_capacity(cw * ch);
    for y in y0..y0 + ch {
        for p in raw[(y * w + x0) * 4..(y * w + x0 + cw) * 4].chunks_exact(4) {
            let a = p[3] as u32;
            for c in 0..3 {
                let v = (p[c] as u32 * a + background[c] as u32 * (255 - a) + 127) / 255;
                out.push(v as u8);
            }
            alpha.push(p[3]);
        }
    }
    let opaque = alpha.iter().all(|&a| a == 255);
    Ok(Cropped {
        width: cw,
        height: ch,
        rgb: out,
        alpha: (!opaque).then_some(alpha),
    })
}

/// A tile decoded whole: within [`tile_limits`] when its header fits them; otherwise (a camera's
/// HEIC, PNG, TIFF or WebP) within a share of [`LARGE_DECODE_BUDGET`] sized from the header
/// (from the file's real structure for HEIF), and reduced at once to twice `need` on its
/// short side, before its colours are converted and it is turned upright.
fn decode_tile_whole(bytes: &[u8], need: u32) -> Result<image::RgbaImage, String> {
    let header = match read_header(bytes) {
        Ok(header)
            if header.width > MAX_TILE_SIDE
                || header.height > MAX_TILE_SIDE
                || header.decoded_bytes > MAX_TILE_DECODE_BYTES =>
        {
            header
        }
        // Within the limits: its room is held all the same, so that many small decodes at
        // once stay within the budget too.
        Ok(header) => {
            let _held = LARGE_DECODES.hold(header.decoded_bytes.saturating_mul(2));
            return decode_rgba_within(bytes, Some(tile_limits()));
        }
        // Unreadable: the decoder's own answer says why.
        Err(_) => return decode_rgba_within(bytes, Some(tile_limits())),
    };
    let (w, h) = (header.width, header.height);
    if u64::from(w) * u64::from(h) > MAX_LARGE_TILE_PIXELS {
        return Err(format!(
            "{w}x{h} pixels is over the {} megapixels a tile may have",
            MAX_LARGE_TILE_PIXELS / 1_000_000
        ));
    }
    let wanted = need.saturating_mul(2).max(1);
    let factor = w.min(h) / wanted;
    if header.format == Format::Png
        && factor >= 2
        && let Some(reduced) = png_rows_reduced(bytes, factor)?
    {
        return Ok(reduced.upright_srgb().into_rgba8());
    }
    // The decoder's output, and as much again for its own buffers and the colour conversion.
    let cost = header.decoded_bytes.saturating_mul(2);
    if cost > LARGE_DECODE_BUDGET {
        return Err(format!(
            "{w}x{h} pixels takes {} MB to decode, over the {} MB a tile may: save it as JPEG",
            cost >> 20,
            LARGE_DECODE_BUDGET >> 20
        ));
    }
    let held = LARGE_DECODES.hold(cost);
    let mut limits = image::Limits::default();
    limits.max_alloc = Some(cost);
    let stored = decode_as_stored(bytes, Some(limits))?;
    let (sw, sh) = (stored.image.width(), stored.image.height());
    let short = sw.min(sh).max(1);
    let image = if short > wanted {
        let scale = |side: u32| (u64::from(side) * u64::from(wanted) / u64::from(short)).max(1);
        stored
            .image
            .thumbnail_exact(scale(sw) as u32, scale(sh) as u32)
    } else {
        stored.image
    };
    drop(held);
    let reduced = AsStored { image, ..stored };
    Ok(reduced.upright_srgb().into_rgba8())
}

/// A non-interlaced PNG read a row at a time and averaged over blocks of `factor` x `factor`
/// pixels as the rows come, so that it holds a row and the reduced image, never the whole;
/// `None` for an interlaced one. RGBA8, in the colours the file declares.
fn png_rows_reduced(bytes: &[u8], factor: u32) -> Result<Option<AsStored>, String> {
    let bad = |e: png::DecodingError| match e {
        png::DecodingError::LimitsExceeded => png_over_budget(),
        e => format!("the PNG is corrupt or cut off: {e}"),
    };
    let mut decoder = png::Decoder::new_with_limits(std::io::Cursor::new(bytes), png_limits(bytes));
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().map_err(bad)?;
    if reader.info().interlaced {
        return Ok(None);
    }
    let declared = Declared::png(reader.info());
    let orientation = reader
        .info()
        .exif_metadata
        .as_deref()
        .and_then(image::metadata::Orientation::from_exif_chunk)
        .unwrap_or(image::metadata::Orientation::NoTransforms);
    let (w, h) = (reader.info().width, reader.info().height);
    let channels = reader.output_color_type().0.samples();
    let k = factor as usize;
    let (ow, oh) = (w as usize / k, h as usize / k);
    let mut sums = vec![0u32; ow * 4];
    let mut out = Vec::with_capacity(ow * oh * 4);
    let mut y = 0;
    while let Some(row) = reader.next_row().map_err(bad)? {
        if y / k >= oh {
            break;
        }
        for (x, p) in row.data().chunks_exact(channels).take(ow * k).enumerate() {
            let rgba = match *p {
                [g] => [g, g, g, 255],
                [g, a] => [g, g, g, a],
                [r, g, b] => [r, g, b, 255],
                [r, g, b, a] => [r, g, b, a],
                _ => return Err("unexpected PNG colour type".into()),
            };
            for (sum, v) in sums[x / k * 4..][..4].iter_mut().zip(rgba) {
                *sum += u32::from(v);
            }
        }
        y += 1;
        if y % k == 0 {
            let n = (k * k) as u32;
            out.extend(sums.iter().map(|&s| ((s + n / 2) / n) as u8));
            sums.fill(0);
        }
    }
    if out.len() != ow * oh * 4 {
        return Err("the PNG ended before its last row".into());
    }
    let image = image::RgbaImage::from_raw(ow as u32, oh as u32, out).expect("sized buffer");
    Ok(Some(AsStored {
        image: image::DynamicImage::ImageRgba8(image),
        declared,
        orientation,
    }))
}

/// Memory held by the decodes of large tiles, shared by every thread of the process.
struct DecodeBudget {
    free: std::sync::Mutex<u64>,
    freed: std::sync::Condvar,
}

static LARGE_DECODES: DecodeBudget = DecodeBudget {
    free: std::sync::Mutex::new(LARGE_DECODE_BUDGET),
    freed: std::sync::Condvar::new(),
};

impl DecodeBudget {
    /// Waits until `bytes` (at most the whole budget) are free, and holds them until the
    /// guard is dropped.
    fn hold(&'static self, bytes: u64) -> HeldBytes {
        let bytes = bytes.min(LARGE_DECODE_BUDGET);
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free < bytes {
            free = self.freed.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        *free -= bytes;
        HeldBytes {
            budget: self,
            bytes,
        }
    }
}

/// A share of a [`DecodeBudget`], given back when dropped.
struct HeldBytes {
    budget: &'static DecodeBudget,
    bytes: u64,
}

impl Drop for HeldBytes {
    fn drop(&mut self) {
        *self.budget.free.lock().unwrap_or_else(|e| e.into_inner()) += self.bytes;
        self.budget.freed.notify_all();
    }
}

/// The pixels a photo shows as a square tile: its centre square over white, packed RGB8,
/// decoded as a tile is (reduced where it is large, within the same bounds) with at least
/// `side` pixels a side where the photo has them.
pub fn square_tile_pixels(bytes: &[u8], side: u32) -> Result<Vec<u8>, String> {
    let square = (TileShape::SQUARE, crate::crop::CropRule::Centre);
    decode_crop(bytes, [255; 3], square, side).map(|cropped| cropped.rgb)
}

/// The image crate's limits for a tile decoded whole.
fn tile_limits() -> image::Limits {
    let mut limits = image::Limits::default();
    limits.max_image_width = Some(MAX_TILE_SIDE);
    limits.max_image_height = Some(MAX_TILE_SIDE);
    limits.max_alloc = Some(MAX_TILE_DECODE_BYTES);
    limits
}

/// A JPEG tile decoded at the smallest of the decoder's scales (1/8, 1/4, 1/2) that keeps `need`
/// pixels on its short side, colour-managed and turned upright as a whole decode is; `None`
/// when no scale below 1 does (or for pixel formats other than grey and RGB), so that it is
/// decoded whole. Refused when it declares more than [`MAX_JPEG_TILE_PIXELS`], when even the
/// smallest scale leaves a side over [`MAX_TILE_SIDE`], or when it is cut off.
fn jpeg_reduced(bytes: &[u8], need: u32) -> Result<Option<image::RgbaImage>, String> {
    use jpeg_decoder::PixelFormat;
    let mut decoder = jpeg_decoder::Decoder::new(std::io::Cursor::new(bytes));
    decoder
        .read_info()
        .map_err(|e| format!("the JPEG is corrupt or cut off: {e}"))?;
    let info = decoder.info().ok_or("the JPEG has no header")?;
    let (w, h) = (u32::from(info.width), u32::from(info.height));
    let short = w.min(h).max(1);
    // Twice the rendition's side, so that the last resize still averages over pixels.
    let wanted = need.saturating_mul(2).max(1);
    if short / 2 < wanted || !matches!(info.pixel_format, PixelFormat::L8 | PixelFormat::RGB24) {
        return Ok(None);
    }
    if u64::from(w) * u64::from(h) > MAX_JPEG_TILE_PIXELS {
        return Err(format!(
            "{w}x{h} pixels is over the {} megapixels a tile may have",
            MAX_JPEG_TILE_PIXELS / 1_000_000
        ));
    }
    if jpeg_cut_off(bytes) {
        return Err("the JPEG ends before its image does: the file was cut off".into());
    }
    // The decoder picks the smallest scale that gives at least the size asked, on one side.
    let asked = |side: u32| {
        let scaled = u64::from(side) * u64::from(wanted) / u64::from(short);
        u16::try_from(scaled.max(1)).unwrap_or(u16::MAX)
    };
    let (sw, sh) = decoder
        .scale(asked(w), asked(h))
        .map_err(|e| format!("the JPEG cannot be reduced: {e}"))?;
    let (sw, sh) = (u32::from(sw), u32::from(sh));
    if sw > MAX_TILE_SIDE || sh > MAX_TILE_SIDE {
        return Err(format!(
            "{w}x{h} pixels is over the {MAX_TILE_SIDE}x{MAX_TILE_SIDE} a tile may be decoded at"
        ));
    }
    // What the decoder will hold, known from the frame before it allocates: a progressive
    // file's coefficients at full size, and the reduced pixels with a copy for the conversion.
    let channels = if info.pixel_format == PixelFormat::L8 {
        1
    } else {
        3
    };
    let coefficients = crate::jpeg_frame::coefficient_bytes(bytes);
    let cost = coefficients + u64::from(sw) * u64::from(sh) * channels * 2;
    if cost > MAX_JPEG_TILE_BUFFER as u64 {
        return Err(format!(
            "this progressive JPEG of {w}x{h} pixels needs {} MB to decode, over the {} MB a \
             photo may: save it as a standard (baseline) JPEG, or smaller",
            cost >> 20,
            MAX_JPEG_TILE_BUFFER >> 20
        ));
    }
    let held = LARGE_DECODES.hold(cost);
    decoder.set_max_decoding_buffer_size(MAX_JPEG_TILE_BUFFER);
    let pixels = decoder
        .decode()
        .map_err(|e| format!("the JPEG is corrupt or cut off: {e}"))?;
    drop(held);
    let img = match info.pixel_format {
        PixelFormat::L8 => {
            image::GrayImage::from_raw(sw, sh, pixels).map(image::DynamicImage::ImageLuma8)
        }
        _ => image::RgbImage::from_raw(sw, sh, pixels).map(image::DynamicImage::ImageRgb8),
    }
    .ok_or("the JPEG's pixels do not fill its image")?;
    let declared = match decoder.icc_profile() {
        Some(icc) => Declared::icc(&icc),
        None => Declared::SRGB,
    };
    // The TIFF structure of the EXIF segment, with or without its `Exif\0\0` mark.
    let orientation = decoder
        .exif_data()
        .map(|exif| exif.strip_prefix(b"Exif\0\0").unwrap_or(exif))
        .and_then(image::metadata::Orientation::from_exif_chunk)
        .unwrap_or(image::metadata::Orientation::NoTransforms);
    let mut img = image_to_srgb(img, &declared);
    img.apply_orientation(orientation);
    Ok(Some(img.into_rgba8()))
}

/// Decodes any supported image (first frame of a GIF) to RGBA8 with EXIF orientation applied,
/// within `limits` (the image crate's defaults when `None`).
fn decode_rgba_within(
    bytes: &[u8],
    limits: Option<image::Limits>,
) -> Result<image::RgbaImage, String> {
    decode_oriented(bytes, limits).map(image::DynamicImage::into_rgba8)
}

/// Decodes any supported image in its own pixel type (RGB8 or RGBA8 once converted to sRGB),
/// EXIF orientation applied, within `limits` (the image crate's defaults when `None`).
pub fn decode_oriented(
    bytes: &[u8],
    limits: Option<image::Limits>,
) -> Result<image::DynamicImage, String> {
    decode_as_stored(bytes, limits).map(AsStored::upright_srgb)
}

/// An image as its file stores it: in its own colours and not yet turned by its EXIF.
struct AsStored {
    image: image::DynamicImage,
    declared: Declared,
    orientation: image::metadata::Orientation,
}

impl AsStored {
    /// The image in sRGB, turned upright.
    fn upright_srgb(self) -> image::DynamicImage {
        let mut img = image_to_srgb(self.image, &self.declared);
        img.apply_orientation(self.orientation);
        img
    }
}

/// [`decode_oriented`] before its colour conversion and orientation.
fn decode_as_stored(bytes: &[u8], limits: Option<image::Limits>) -> Result<AsStored, String> {
    use image::ImageDecoder;
    let format = Format::sniff(bytes).ok_or_else(|| match unreadable_kind(bytes) {
        Some(kind) => format!("{kind} files are not read: export it as JPEG or PNG"),
        None => "not an image: its content is no format Tessera reads".to_string(),
    })?;
    if format.is_heif() {
        let (image, declared) = heif::decode(bytes, limits.as_ref())?;
        return Ok(AsStored {
            image,
            declared,
            // libheif turns the image itself.
            orientation: image::metadata::Orientation::NoTransforms,
        });
    }
    if format == Format::Tiff
        && let Some(read) = crate::tiff_read::read(bytes, limits.as_ref())?
    {
        return Ok(AsStored {
            image: read.image,
            declared: read.declared,
            orientation: read.orientation,
        });
    }
    // The JPEG decoder pads a cut-off file with grey rather than failing.
    if format == Format::Jpeg && jpeg_cut_off(bytes) {
        return Err("the JPEG ends before its image does: the file was cut off".into());
    }
    // A PNG's profile and text are read within their own budget before the decoder reads them.
    let png_declared = match format {
        Format::Png => Some(png_declared(bytes)?),
        _ => None,
    };
    let mut reader = image::ImageReader::new(std::io::Cursor::new(bytes));
    reader.set_format(format.image_format().expect("not HEIF"));
    if format == Format::Png {
        // The PNG decoder reads the metadata as it opens, within what is left of the allocation
        // limit once the image's pixels are counted: at most those pixels (8 bytes each) and
        // the metadata's budget, or the caller's limit if lower.
        let (w, h) = png_ihdr_size(bytes).unwrap_or((0, 0));
        if let Some(limits) = &limits {
            check_side(w, h, limits)?;
        }
        let own = (u64::from(w) * u64::from(h) * 8).saturating_add(png_limits(bytes).bytes as u64);
        let mut png = image::Limits::default();
        png.max_alloc = Some(
            limits
                .as_ref()
                .and_then(|l| l.max_alloc)
                .map_or(own, |max| max.min(own)),
        );
        reader.limits(png);
    }
    // The header only; the limits are checked here, so that the reason names the size.
    let mut decoder = reader.into_decoder().map_err(|e| e.to_string())?;
    if let Some(limits) = limits {
        let (w, h) = decoder.dimensions();
        check_side(w, h, &limits)?;
        decoder.set_limits(limits).map_err(|e| e.to_string())?;
    }
    let declared = match png_declared {
        Some(declared) => declared,
        None => match decoder.icc_profile() {
            Ok(Some(icc)) => Declared::icc(&icc),
            _ => Declared::SRGB,
        },
    };
    let orientation = decoder
        .orientation()
        .unwrap_or(image::metadata::Orientation::NoTransforms);
    let image = image::DynamicImage::from_decoder(decoder).map_err(|e| match e {
        image::ImageError::Limits(e) => e.to_string(),
        e => format!("the {} is corrupt or cut off: {e}", format.name()),
    })?;
    Ok(AsStored {
        image,
        declared,
        orientation,
    })
}

/// The `png` crate's allocation budget for `bytes`: the metadata's, and two rows of the
/// widest pixels for the image the IHDR declares (the decoder holds a row, not the image).
pub fn png_limits(bytes: &[u8]) -> png::Limits {
    let width = bytes
        .get(16..20)
        .map_or(0, |w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]));
    png::Limits {
        bytes: MAX_METADATA_BYTES.saturating_add((width as usize).saturating_mul(16)),
    }
}

/// The width and height a PNG's IHDR declares.
fn png_ihdr_size(bytes: &[u8]) -> Option<(u32, u32)> {
    let be = |at: usize| Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?));
    (bytes.get(12..16) == Some(b"IHDR")).then_some(())?;
    Some((be(16)?, be(20)?))
}

/// The image crate's limits for reading a header: a PNG's metadata within its budget.
fn header_limits(format: Format, bytes: &[u8]) -> image::Limits {
    let mut limits = image::Limits::default();
    if format == Format::Png {
        limits.max_alloc = Some(png_limits(bytes).bytes as u64);
    }
    limits
}

/// Why a PNG is refused when the `png` crate's budget ran out: its metadata is too large.
pub fn png_over_budget() -> String {
    format!(
        "the PNG's metadata (colour profile or text) is over the {} MB allowed",
        MAX_METADATA_BYTES >> 20
    )
}

/// The colour space a PNG declares, from its header chunks, read within
/// [`MAX_METADATA_BYTES`]: a profile or text over it is refused; a PNG whose header cannot be
/// read otherwise is left to the decoder (sRGB here).
fn png_declared(bytes: &[u8]) -> Result<Declared, String> {
    let limits = png::Limits {
        bytes: MAX_METADATA_BYTES,
    };
    let decoder = png::Decoder::new_with_limits(std::io::Cursor::new(bytes), limits);
    match decoder.read_info() {
        Ok(reader) => Ok(Declared::png(reader.info())),
        Err(png::DecodingError::LimitsExceeded) => Err(png_over_budget()),
        Err(_) => Ok(Declared::SRGB),
    }
}

/// Whether `bytes` are a JPEG that ends before its end-of-image marker: its segments are walked
/// from the start (a thumbnail inside an APP segment is skipped with it), then the scans'
/// entropy-coded data, until EOI or the end of the bytes. Not a JPEG: false.
pub fn jpeg_cut_off(bytes: &[u8]) -> bool {
    if !bytes.starts_with(&[0xFF, 0xD8]) {
        return false;
    }
    let mut i = 2;
    loop {
        // The next marker: 0xFF, any fill bytes, then its code.
        while i < bytes.len() && bytes[i] != 0xFF {
            i += 1;
        }
        while i < bytes.len() && bytes[i] == 0xFF {
            i += 1;
        }
        let Some(&code) = bytes.get(i) else {
            return true;
        };
        i += 1;
        match code {
            0xD9 => return false,
            // Markers without a length: restarts, SOI, TEM.
            0xD0..=0xD8 | 0x01 => continue,
            _ => {}
        }
        let Some(length) = bytes.get(i..i + 2) else {
            return true;
        };
        i += usize::from(u16::from_be_bytes([length[0], length[1]]));
        if i > bytes.len() {
            return true;
        }
        if code == 0xDA {
            // Entropy-coded data: up to the next marker that is not a stuffed 0xFF00 or a
            // restart.
            loop {
                match bytes.get(i..i + 2) {
                    None => return true,
                    Some([0xFF, next]) if *next != 0x00 && !(0xD0..=0xD7).contains(next) => break,
                    _ => i += 1,
                }
            }
        }
    }
}

/// Decodes a target image to RGB8 (EXIF orientation applied; transparency onto `background`).
/// A non-interlaced PNG is decoded a row at a time straight into the RGB8 image, so a 16-bit
/// RGBA photo takes 3 bytes a pixel rather than 8 and then 4 on its way there.
pub fn decode_target(bytes: &[u8], background: [u8; 3]) -> Result<image::RgbImage, Error> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n")
        && let Some(img) = decode_png_rows(bytes, background)?
    {
        return Ok(img);
    }
    let img = decode_oriented(bytes, None).map_err(Error::Decode)?;
    if !img.color().has_alpha() {
        // Nothing to lay over the background: straight to RGB8 (no copy for RGB8 itself).
        return Ok(img.into_rgb8());
    }
    let rgba = img.into_rgba8();
    let (w, h) = rgba.dimensions();
    let mut out = Vec::with_capacity((w * h * 3) as usize);
    for p in rgba.as_raw().chunks_exact(4) {
        let a = p[3] as u32;
        for c in 0..3 {
            out.push(((p[c] as u32 * a + background[c] as u32 * (255 - a) + 127) / 255) as u8);
        }
    }
    Ok(image::RgbImage::from_raw(w, h, out).expect("sized buffer"))
}

/// [`decode_target`] for a non-interlaced PNG, row by row: `None` for an interlaced one (its
/// rows come in passes; the whole-image path takes it).
fn decode_png_rows(bytes: &[u8], background: [u8; 3]) -> Result<Option<image::RgbImage>, Error> {
    use image::ImageDecoder;
    let bad = |e: png::DecodingError| match e {
        png::DecodingError::LimitsExceeded => Error::Decode(png_over_budget()),
        e => Error::Decode(e.to_string()),
    };
    let mut decoder = png::Decoder::new_with_limits(std::io::Cursor::new(bytes), png_limits(bytes));
    // Palettes, low bit depths and transparency chunks expanded; 16-bit samples are narrowed
    // below, rounded as the image crate rounds them.
    decoder.set_transformations(png::Transformations::EXPAND);
    let mut reader = decoder.read_info().map_err(bad)?;
    if reader.info().interlaced {
        return Ok(None);
    }
    let to_srgb = Declared::png(reader.info()).to_srgb(false);
    let (w, h) = (reader.info().width, reader.info().height);
    let (colour, depth) = reader.output_color_type();
    let channels = colour.samples();
    let deep = depth == png::BitDepth::Sixteen;
    let mut narrowed = Vec::new();
    let mut out = Vec::with_capacity(w as usize * h as usize * 3);
    // Each row goes into `out` as RGB8, is converted to sRGB there, and then laid over the
    // background with its opacity (kept apart meanwhile).
    let mut alpha = Vec::new();
    let blend = |v: u8, a: u8, bg: u8| {
        let a = u32::from(a);
        ((u32::from(v) * a + u32::from(bg) * (255 - a) + 127) / 255) as u8
    };
    while let Some(row) = reader.next_row().map_err(bad)? {
        let data = if deep {
            narrowed.clear();
            narrowed.extend(
                row.data()
                    .chunks_exact(2)
                    .map(|b| ((u32::from(u16::from_be_bytes([b[0], b[1]])) + 128) / 257) as u8),
            );
            &narrowed[..]
        } else {
            row.data()
        };
        let start = out.len();
        alpha.clear();
        for p in data.chunks_exact(channels) {
            match *p {
                [g] => out.extend_from_slice(&[g, g, g]),
                [g, a] => {
                    out.extend_from_slice(&[g, g, g]);
                    alpha.push(a);
                }
                [r, g, b] => out.extend_from_slice(&[r, g, b]),
                [r, g, b, a] => {
                    out.extend_from_slice(&[r, g, b]);
                    alpha.push(a);
                }
                _ => return Err(Error::Decode("unexpected PNG colour type".into())),
            }
        }
        let row = &mut out[start..];
        if let Some(convert) = &to_srgb {
            convert.run(row);
        }
        for (p, &a) in row.chunks_exact_mut(3).zip(&alpha) {
            for c in 0..3 {
                p[c] = blend(p[c], a, background[c]);
            }
        }
    }
    if out.len() != w as usize * h as usize * 3 {
        return Err(Error::Decode("the PNG ended before its last row".into()));
    }
    let img = image::RgbImage::from_raw(w, h, out).expect("sized buffer");
    // The orientation an eXIf chunk gives, read as the whole-image path reads it.
    let limits = header_limits(Format::Png, bytes);
    let orientation =
        image::codecs::png::PngDecoder::with_limits(std::io::Cursor::new(bytes), limits)
            .ok()
            .and_then(|mut d| d.orientation().ok())
            .unwrap_or(image::metadata::Orientation::NoTransforms);
    if orientation == image::metadata::Orientation::NoTransforms {
        return Ok(Some(img));
    }
    let mut dynamic = image::DynamicImage::ImageRgb8(img);
    dynamic.apply_orientation(orientation);
    Ok(Some(dynamic.into_rgb8()))
}

/// HEIC/HEIF and AVIF through libheif, which applies the file's rotation and mirroring.
mod heif {
    use crate::libheif::{Context, Handle, Profile};
    use crate::profile::Declared;

    /// Width, height (rotation applied), whether there is an alpha channel, and the bytes the
    /// decode takes, from the file's real structure (`heif_items`), not from what it declares.
    pub(super) fn header(bytes: &[u8]) -> Result<(u32, u32, bool, u64), String> {
        let context = Context::read(bytes)?;
        let handle = context.primary_image()?;
        sized(bytes, &handle)
    }

    /// [`header`] of the primary image `handle` of the file `bytes`.
    fn sized(bytes: &[u8], handle: &Handle) -> Result<(u32, u32, bool, u64), String> {
        let real = crate::heif_items::real_size(bytes)?;
        let ((w, h), alpha) = (handle.size(), handle.has_alpha());
        // libheif's size turns with the image; the real one is as stored.
        let (rw, rh) = if (w < h) == (real.width < real.height) {
            (real.width, real.height)
        } else {
            (real.height, real.width)
        };
        let (w, h) = (w.max(rw), h.max(rh));
        let channels = if alpha { 4 } else { 3 };
        // Every coded pixel in YUV (1.5 bytes) on the way, then the image in RGB twice:
        // libheif's and ours.
        let decoded = real
            .decoded_pixels
            .saturating_mul(2)
            .saturating_add(u64::from(w) * u64::from(h) * 2 * channels);
        Ok((w, h, alpha, decoded))
    }

    /// The primary image of `bytes`, turned by libheif, in the colours its profile declares.
    pub(super) fn decode(
        bytes: &[u8],
        limits: Option<&image::Limits>,
    ) -> Result<(image::DynamicImage, Declared), String> {
        let context = Context::read(bytes)?;
        let handle = context.primary_image()?;
        let (w, h, alpha, decoded) = sized(bytes, &handle)?;
        if let Some(limits) = limits {
            crate::budget::check_side(w, h, limits)?;
            if limits.max_alloc.is_some_and(|max| decoded > max) {
                return Err(format!("{w}x{h} pixels is over the memory allowed"));
            }
        }
        let declared = match handle.profile() {
            Some(Profile::Icc(icc)) => Declared::icc(&icc),
            Some(Profile::Nclx {
                primaries,
                transfer,
            }) => Declared::cicp(primaries, transfer),
            None => Declared::SRGB,
        };
        let (pw, ph, pixels) = handle.decode_rgb(alpha)?;
        let img = if alpha {
            image::RgbaImage::from_raw(pw, ph, pixels).map(image::DynamicImage::ImageRgba8)
        } else {
            image::RgbImage::from_raw(pw, ph, pixels).map(image::DynamicImage::ImageRgb8)
        }
        .ok_or("libheif's pixels do not fill the image")?;
        Ok((img, declared))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A JPEG of `width` x `height`, red on its left half and blue on its right, with the EXIF
    /// orientation `orientation` (1: as stored).
    fn halves_jpeg(width: u16, height: u16, orientation: u8) -> Vec<u8> {
        let mut pixels = Vec::with_capacity(usize::from(width) * usize::from(height) * 3);
        for _ in 0..height {
            for x in 0..width {
                pixels.extend_from_slice(if x < width / 2 {
                    &[220, 30, 30]
                } else {
                    &[30, 30, 220]
                });
            }
        }
        let mut out = Vec::new();
        let mut encoder = jpeg_encoder::Encoder::new(&mut out, 85);
        // EXIF, big-endian: one IFD entry, Orientation (0x0112), SHORT.
        let exif = [
            b"Exif\0\0".as_slice(),
            b"MM\0\x2a\0\0\0\x08\0\x01\x01\x12\0\x03\0\0\0\x01\0",
            &[orientation, 0, 0, 0, 0, 0, 0],
        ]
        .concat();
        encoder.add_app_segment(1, &exif).unwrap();
        encoder
            .encode(&pixels, width, height, jpeg_encoder::ColorType::Rgb)
            .unwrap();
        out
    }

    #[test]
    fn camera_sized_jpegs_are_tiles_decoded_reduced_and_upright() {
        const CENTRE_SQUARE: (TileShape, crate::crop::CropRule) =
            (TileShape::SQUARE, crate::crop::CropRule::Centre);
        // 24 megapixels, over the side a tile is decoded whole at: read at 1/8.
        let wide = halves_jpeg(6000, 4000, 1);
        let cropped = decode_crop(&wide, [255; 3], CENTRE_SQUARE, 64).unwrap();
        assert_eq!((cropped.width, cropped.height), (500, 500));
        let at = |c: &Cropped, x: usize, y: usize| {
            let i = (y * c.width + x) * 3;
            [c.rgb[i], c.rgb[i + 1], c.rgb[i + 2]]
        };
        let left = at(&cropped, 10, 250);
        let right = at(&cropped, 490, 250);
        assert!(left[0] > 180 && left[2] < 80, "left {left:?}");
        assert!(right[2] > 180 && right[0] < 80, "right {right:?}");
        // Turned by its EXIF (a phone held upright: 90 degrees clockwise): the red half on top.
        let turned = halves_jpeg(6000, 4000, 6);
        let cropped = decode_crop(&turned, [255; 3], CENTRE_SQUARE, 64).unwrap();
        let top = at(&cropped, 250, 10);
        let bottom = at(&cropped, 250, 490);
        assert!(top[0] > 180 && top[2] < 80, "top {top:?}");
        assert!(bottom[2] > 180 && bottom[0] < 80, "bottom {bottom:?}");
        // A small JPEG is decoded whole, as before.
        let small = halves_jpeg(200, 100, 1);
        let cropped = decode_crop(&small, [255; 3], CENTRE_SQUARE, 64).unwrap();
        assert_eq!((cropped.width, cropped.height), (100, 100));
        // A cut-off one is refused, reduced or not.
        let cut = &wide[..wide.len() / 2];
        assert!(decode_crop(cut, [255; 3], CENTRE_SQUARE, 64).is_err());
    }

    /// A PNG that is only its header: IHDR for `width` x `height` at `depth` bits and colour
    /// type `colour` (Adam7-interlaced if `interlaced`), then no pixels, as a decode bomb
    /// declares its size.
    fn png_header_only(
        width: u32,
        height: u32,
        (depth, colour): (u8, u8),
        interlaced: bool,
    ) -> Vec<u8> {
        fn crc32(bytes: &[u8]) -> u32 {
            let mut crc = !0u32;
            for &b in bytes {
                crc ^= u32::from(b);
                for _ in 0..8 {
                    crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
                }
            }
            !crc
        }
        let chunk = |kind: &[u8], data: &[u8]| {
            let body = [kind, data].concat();
            [
                &(data.len() as u32).to_be_bytes()[..],
                &body,
                &crc32(&body).to_be_bytes(),
            ]
            .concat()
        };
        let ihdr = [
            &width.to_be_bytes()[..],
            &height.to_be_bytes(),
            &[depth, colour, 0, 0, u8::from(interlaced)],
        ]
        .concat();
        [
            &b"\x89PNG\r\n\x1a\n"[..],
            &chunk(b"IHDR", &ihdr),
            // An empty zlib stream: the decoder reads the header up to here.
            &chunk(b"IDAT", &[0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01]),
            &chunk(b"IEND", b""),
        ]
        .concat()
    }

    #[test]
    fn camera_sized_images_in_other_formats_are_tiles_decoded_whole_then_reduced() {
        const CENTRE_SQUARE: (TileShape, crate::crop::CropRule) =
            (TileShape::SQUARE, crate::crop::CropRule::Centre);
        // Over the side a tile is decoded as it is at: red on the left, blue on the right.
        let halves = image::RgbImage::from_fn(4400, 2800, |x, _| {
            image::Rgb(if x < 2200 {
                [220, 30, 30]
            } else {
                [30, 30, 220]
            })
        });
        let halves = image::DynamicImage::ImageRgb8(halves);
        for format in [
            image::ImageFormat::Png,
            image::ImageFormat::Tiff,
            image::ImageFormat::WebP,
        ] {
            let bytes = encoded(halves.clone(), format);
            let cropped = decode_crop(&bytes, [255; 3], CENTRE_SQUARE, 64)
                .unwrap_or_else(|e| panic!("{format:?}: {e}"));
            // Reduced to at least twice the rendition's side on its short side (a PNG by whole
            // blocks of pixels as its rows come), then cropped.
            let side = cropped.width;
            assert!(
                cropped.height == side && (128..256).contains(&side),
                "{format:?} {side}"
            );
            let left = &cropped.rgb[(side / 2 * side + 4) * 3..][..3];
            let right = &cropped.rgb[(side / 2 * side + side - 5) * 3..][..3];
            assert!(left[0] > 180 && left[2] < 80, "{format:?} left {left:?}");
            assert!(
                right[2] > 180 && right[0] < 80,
                "{format:?} right {right:?}"
            );
        }
        // A header declaring 20000 x 20000 pixels is refused before anything is decoded.
        let bomb = png_header_only(20_000, 20_000, (8, 2), false);
        let err = decode_crop(&bomb, [255; 3], CENTRE_SQUARE, 64)
            .err()
            .unwrap();
        assert!(err.contains("200 megapixels"), "{err}");
        // A PNG is read a row at a time, unless it is interlaced: then it is decoded whole, and
        // 16-bit RGBA at 12000 x 10000 would take 1.8 GB. Refused, saying what to do.
        let heavy = png_header_only(12_000, 10_000, (16, 6), true);
        let err = decode_crop(&heavy, [255; 3], CENTRE_SQUARE, 64)
            .err()
            .unwrap();
        assert!(err.contains("save it as JPEG"), "{err}");
    }

    /// What `decode_target` gave before it took PNGs row by row and opaque images straight to
    /// RGB8: the whole image as RGBA8, laid over the background.
    fn decode_target_whole(bytes: &[u8], background: [u8; 3]) -> image::RgbImage {
        let rgba = decode_rgba_within(bytes, None).unwrap();
        image::RgbImage::from_fn(rgba.width(), rgba.height(), |x, y| {
            let p = rgba.get_pixel(x, y).0;
            let a = u32::from(p[3]);
            image::Rgb(std::array::from_fn(|c| {
                ((u32::from(p[c]) * a + u32::from(background[c]) * (255 - a) + 127) / 255) as u8
            }))
        })
    }

    fn encoded(img: image::DynamicImage, format: image::ImageFormat) -> Vec<u8> {
        let mut out = Vec::new();
        img.write_to(&mut std::io::Cursor::new(&mut out), format)
            .unwrap();
        out
    }

    #[test]
    fn a_cut_off_jpeg_is_refused_and_a_whole_one_is_not() {
        let img = image::RgbImage::from_fn(64, 48, |x, y| {
            image::Rgb([(x * 4) as u8, (y * 5) as u8, 90])
        });
        let mut bytes = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut bytes, 90)
            .encode(img.as_raw(), 64, 48, image::ExtendedColorType::Rgb8)
            .unwrap();
        assert!(!jpeg_cut_off(&bytes));
        assert!(decode_target(&bytes, [255, 255, 255]).is_ok());
        // Trailing bytes after the end (as some cameras write) are no cut.
        let mut trailed = bytes.clone();
        trailed.extend_from_slice(b"trailer");
        assert!(!jpeg_cut_off(&trailed));
        for keep in [bytes.len() * 6 / 10, bytes.len() - 2, 40] {
            assert!(
                jpeg_cut_off(&bytes[..keep]),
                "cut at {keep} of {}",
                bytes.len()
            );
            let err = decode_target(&bytes[..keep], [255, 255, 255]).unwrap_err();
            assert!(err.to_string().contains("cut off"), "{err}");
        }
        assert!(!jpeg_cut_off(b"\x89PNG\r\n\x1a\n"));
    }

    #[test]
    fn targets_decode_as_the_whole_image_path_decodes_them() {
        let (w, h) = (37, 23);
        let rgba8 = image::RgbaImage::from_fn(w, h, |x, y| {
            image::Rgba([
                (x * 7) as u8,
                (y * 11) as u8,
                (x ^ y) as u8,
                ((x + y) * 9) as u8,
            ])
        });
        let rgba16 = image::ImageBuffer::<image::Rgba<u16>, _>::from_fn(w, h, |x, y| {
            image::Rgba([
                (x * 1771) as u16,
                (y * 2851) as u16,
                ((x ^ y) * 997) as u16,
                ((x + y) * 1100) as u16,
            ])
        });
        let bg = [200, 40, 90];
        let exact = [
            image::DynamicImage::ImageRgba8(rgba8.clone()),
            image::DynamicImage::ImageRgba8(rgba8.clone())
                .to_rgb8()
                .into(),
            image::DynamicImage::ImageRgba8(rgba8.clone())
                .to_luma8()
                .into(),
            image::DynamicImage::ImageRgba8(rgba8.clone())
                .to_luma_alpha8()
                .into(),
        ];
        for img in exact {
            let colour = img.color();
            for format in [image::ImageFormat::Png, image::ImageFormat::Tiff] {
                let mut bytes = Vec::new();
                if format == image::ImageFormat::Tiff
                    && img
                        .write_to(&mut std::io::Cursor::new(&mut bytes), format)
                        .is_err()
                {
                    // The TIFF encoder does not write every colour type.
                    continue;
                }
                let bytes = encoded(img.clone(), format);
                assert_eq!(
                    decode_target(&bytes, bg).unwrap(),
                    decode_target_whole(&bytes, bg),
                    "{colour:?} as {format:?}"
                );
            }
        }
        // 16 bits a channel, rounded to 8 alike.
        let bytes = encoded(
            image::DynamicImage::ImageRgba16(rgba16),
            image::ImageFormat::Png,
        );
        assert_eq!(
            decode_target(&bytes, bg).unwrap(),
            decode_target_whole(&bytes, bg)
        );
        // A truncated PNG is an error, not a short image.
        let bytes = encoded(
            image::DynamicImage::ImageRgba8(rgba8),
            image::ImageFormat::Png,
        );
        assert!(decode_target(&bytes[..bytes.len() * 2 / 3], bg).is_err());
    }
}
