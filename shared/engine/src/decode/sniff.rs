//! What a file is: its format by its first bytes or its name, why one that is not an image
//! is not read, and its header (size, orientation) without decoding it.

use super::*;

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
pub(super) const NOT_READ: [(&[&str], &str); 6] = [
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
pub(super) fn not_image_reason(ext: Option<&str>) -> String {
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
pub(super) fn heif_brand(bytes: &[u8]) -> Option<Option<Format>> {
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
