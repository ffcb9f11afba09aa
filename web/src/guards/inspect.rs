//! Checks an uploaded target image before anything is stored: a format we read, dimensions
//! within the limit (read from the header, before any pixel is decoded, so a decompression bomb
//! costs nothing), and a body that decodes to the end.

use std::io::Cursor;
use tessera_shared::error_code::ErrorCode;

use image::{ImageDecoder, ImageError, ImageReader, Limits};
use tessera_engine::Format;
use tessera_engine::decode::{FORMAT_NAMES, read_header, unreadable_kind};

use crate::api_error::ApiError;

/// What the broker learns from a valid upload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetInfo {
    pub format: Format,
    /// Width and height as the mosaic sees them (EXIF orientation applied).
    pub width: u32,
    pub height: u32,
}

/// What the header says of an upload, before any pixel is decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    pub format: Format,
    /// Width and height as stored (before EXIF orientation).
    pub width: u32,
    pub height: u32,
    /// Whether EXIF orientation turns it a quarter.
    turned: bool,
    /// Memory the check's decode takes: a few rows for a PNG (checked row by row), the whole
    /// decoded image for the other formats.
    pub decode_bytes: u64,
}

impl Probe {
    /// Width and height as shown (EXIF orientation applied).
    pub fn upright(&self) -> (u32, u32) {
        if self.turned {
            (self.height, self.width)
        } else {
            (self.width, self.height)
        }
    }
}

/// Validates `bytes` as a target image of at most `max_pixels`. CPU-bound: call it off the async
/// threads.
pub fn inspect_target(bytes: &[u8], max_pixels: u64) -> Result<TargetInfo, ApiError> {
    verify_target(bytes, &probe_target(bytes, max_pixels)?)
}

/// Reads the format and the size from the header, and refuses what is over `max_pixels`.
pub fn probe_target(bytes: &[u8], max_pixels: u64) -> Result<Probe, ApiError> {
    if bytes.is_empty() {
        return Err(ApiError::bad_request(
            ErrorCode::EmptyUpload,
            "the image file is empty",
        ));
    }
    if Format::sniff(bytes).is_none() {
        return Err(match unreadable_kind(bytes) {
            Some(kind) => ApiError::unsupported_media(
                ErrorCode::UnsupportedFormat,
                format!(
                    "{kind} files are not read: export the photo as JPEG (Tessera reads {FORMAT_NAMES})"
                ),
            ),
            None => ApiError::unsupported_media(
                ErrorCode::NotAnImage,
                format!("the file is not an image ({FORMAT_NAMES} expected)"),
            ),
        });
    }
    let header = read_header(bytes).map_err(|e| {
        ApiError::unprocessable(
            ErrorCode::CorruptImage,
            format!("the image cannot be read: {e}"),
        )
    })?;
    let (w, h) = (header.width, header.height);
    if w == 0 || h == 0 {
        return Err(ApiError::unprocessable(
            ErrorCode::CorruptImage,
            "the image has no pixels",
        ));
    }
    let pixels = u64::from(w) * u64::from(h);
    if pixels > max_pixels {
        return Err(ApiError::unprocessable(
            ErrorCode::ImageTooLarge,
            format!("the image is {w} x {h} pixels, over the limit of {max_pixels} pixels"),
        ));
    }
    let decode_bytes = if header.format == Format::Png {
        // Rows of up to 8 bytes a pixel, the current and the previous, and the inflater's window.
        u64::from(w) * 16 + (1 << 20)
    } else {
        header.decoded_bytes
    };
    Ok(Probe {
        format: header.format,
        width: w,
        height: h,
        turned: header.turned,
        decode_bytes,
    })
}

/// Decodes the whole upload `probe` describes, to be sure it is complete: a PNG row by row, so
/// that the check holds a few rows whatever the image's size; other formats whole, within
/// room for their pixels.
pub fn verify_target(bytes: &[u8], probe: &Probe) -> Result<TargetInfo, ApiError> {
    let Probe {
        format,
        width: w,
        height: h,
        turned,
        decode_bytes,
    } = *probe;
    let pixels = u64::from(w) * u64::from(h);
    let mut limits = Limits::default();
    limits.max_image_width = Some(w);
    limits.max_image_height = Some(h);
    // Room for the largest pixel type (16-bit RGBA) of an image this size, and no more; a HEIF
    // decode takes what its real structure costs (its coded tiles, then the image twice), which
    // the caller has taken from the decode budget.
    let room = pixels.saturating_mul(8).max(1 << 20);
    limits.max_alloc = Some(if format.is_heif() {
        room.max(decode_bytes)
    } else {
        room
    });
    if format == Format::Jpeg && tessera_engine::jpeg_cut_off(bytes) {
        // The decoder would pad the missing rows with grey.
        return Err(ApiError::unprocessable(
            ErrorCode::CorruptImage,
            "the image is corrupt or truncated: the JPEG ends before its image does",
        ));
    }
    if format == Format::Png {
        read_png_rows(bytes)?;
    } else if format == Format::Tiff {
        tessera_engine::decode::check_tiff_whole(bytes).map_err(|e| {
            ApiError::unprocessable(
                ErrorCode::CorruptImage,
                format!("the image is corrupt or truncated: {e}"),
            )
        })?;
    } else if format.is_heif() {
        tessera_engine::decode::decode_oriented(bytes, Some(limits)).map_err(|e| {
            ApiError::unprocessable(
                ErrorCode::CorruptImage,
                format!("the image is corrupt or truncated: {e}"),
            )
        })?;
    } else if let Some(image_format) = format.image_format() {
        let mut r = ImageReader::new(Cursor::new(bytes));
        r.set_format(image_format);
        r.limits(limits);
        let decoder = r.into_decoder().map_err(corrupt)?;
        let size = usize::try_from(decoder.total_bytes()).map_err(|_| too_big(w, h))?;
        let mut buf = vec![0u8; size];
        decoder.read_image(&mut buf).map_err(corrupt)?;
    }
    let (width, height) = if turned { (h, w) } else { (w, h) };
    Ok(TargetInfo {
        format,
        width,
        height,
    })
}

/// Reads every row of a PNG, keeping none: it decodes to the end, or the error says where not.
fn read_png_rows(bytes: &[u8]) -> Result<(), ApiError> {
    let bad = |e: png::DecodingError| {
        ApiError::unprocessable(
            ErrorCode::CorruptImage,
            format!("the image is corrupt or truncated: {e}"),
        )
    };
    let bad = |e: png::DecodingError| match e {
        png::DecodingError::LimitsExceeded => ApiError::unprocessable(
            ErrorCode::ImageTooLarge,
            tessera_engine::decode::png_over_budget(),
        ),
        e => bad(e),
    };
    // A row at a time, and the metadata within its budget.
    let limits = tessera_engine::decode::png_limits(bytes);
    let mut reader = png::Decoder::new_with_limits(Cursor::new(bytes), limits)
        .read_info()
        .map_err(bad)?;
    while reader.next_row().map_err(bad)?.is_some() {}
    reader.finish().map_err(bad)?;
    Ok(())
}

fn too_big(w: u32, h: u32) -> ApiError {
    ApiError::unprocessable(
        ErrorCode::ImageTooLarge,
        format!("the image is {w} x {h} pixels: too large to decode"),
    )
}

fn corrupt(e: ImageError) -> ApiError {
    match e {
        ImageError::Limits(_) => ApiError::unprocessable(
            ErrorCode::ImageTooLarge,
            "the image needs more memory to decode than the limit allows",
        ),
        ImageError::Unsupported(u) => ApiError::unsupported_media(
            ErrorCode::UnsupportedFormat,
            format!("this image variant is not supported: {u}"),
        ),
        e => ApiError::unprocessable(
            ErrorCode::CorruptImage,
            format!("the image is corrupt or truncated: {e}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(w: u32, h: u32) -> Vec<u8> {
        let img = image::RgbImage::from_pixel(w, h, image::Rgb([10, 20, 30]));
        let mut out = Cursor::new(Vec::new());
        img.write_to(&mut out, image::ImageFormat::Png).unwrap();
        out.into_inner()
    }

    #[test]
    fn a_small_png_passes() {
        let info = inspect_target(&png(7, 5), 1000).unwrap();
        assert_eq!((info.width, info.height, info.format), (7, 5, Format::Png));
    }

    #[test]
    fn each_bad_input_has_its_code() {
        let code = |b: &[u8], max| inspect_target(b, max).unwrap_err().code;
        assert_eq!(code(b"", 1000), "empty_upload");
        assert_eq!(code(b"hello, world, not an image", 1000), "not_an_image");
        assert_eq!(
            code(b"8BPS\0\x01\0\0\0\0\0\0\0\x03", 1000),
            "unsupported_format"
        );
        assert_eq!(code(b"BM\0\0\0\0\0\0\0\0\0\0\0\0", 1000), "corrupt_image");
        let good = png(20, 20);
        assert_eq!(code(&good[..good.len() / 2], 1000), "corrupt_image");
        assert_eq!(code(&good[..good.len() - 12], 1000), "corrupt_image");
        let mut jpeg = Vec::new();
        image::RgbImage::from_pixel(20, 20, image::Rgb([10, 200, 30]))
            .write_to(&mut Cursor::new(&mut jpeg), image::ImageFormat::Jpeg)
            .unwrap();
        assert!(inspect_target(&jpeg, 1000).is_ok());
        assert_eq!(code(&jpeg[..jpeg.len() * 6 / 10], 1000), "corrupt_image");
        assert_eq!(code(&good, 399), "image_too_large");
    }
}
