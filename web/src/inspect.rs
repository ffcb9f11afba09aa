//! Checks an uploaded target image before anything is stored: a format we read, dimensions
//! within the limit (read from the header, before any pixel is decoded, so a decompression bomb
//! costs nothing), and a body that decodes to the end.

use std::io::Cursor;

use image::metadata::Orientation;
use image::{ImageDecoder, ImageError, ImageFormat, ImageReader, Limits};

use crate::error::ApiError;

/// What the broker learns from a valid upload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetInfo {
    pub format: ImageFormat,
    /// Width and height as the mosaic sees them (EXIF orientation applied).
    pub width: u32,
    pub height: u32,
}

/// What the header says of an upload, before any pixel is decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    pub format: ImageFormat,
    /// Width and height as stored (before EXIF orientation).
    pub width: u32,
    pub height: u32,
    /// Memory the check's decode takes: a few rows for a PNG (checked row by row), the whole
    /// decoded image for the other formats.
    pub decode_bytes: u64,
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
            "empty_upload",
            "the image file is empty",
        ));
    }
    let format = image::guess_format(bytes).map_err(|_| {
        ApiError::unsupported_media(
            "not_an_image",
            "the file is not an image (PNG, JPEG, WebP or GIF expected)",
        )
    })?;
    if !format.reading_enabled() {
        return Err(ApiError::unsupported_media(
            "unsupported_format",
            format!(
                "{} images are not supported: use PNG, JPEG, WebP or GIF",
                format
                    .extensions_str()
                    .first()
                    .unwrap_or(&"these")
                    .to_uppercase()
            ),
        ));
    }
    let mut r = ImageReader::new(Cursor::new(bytes));
    r.set_format(format);
    let decoder = r.into_decoder().map_err(corrupt)?;
    let (w, h) = decoder.dimensions();
    if w == 0 || h == 0 {
        return Err(ApiError::unprocessable(
            "corrupt_image",
            "the image has no pixels",
        ));
    }
    let pixels = u64::from(w) * u64::from(h);
    if pixels > max_pixels {
        return Err(ApiError::unprocessable(
            "image_too_large",
            format!("the image is {w} x {h} pixels, over the limit of {max_pixels} pixels"),
        ));
    }
    let decode_bytes = if format == ImageFormat::Png {
        // Rows of up to 8 bytes a pixel, the current and the previous, and the inflater's window.
        u64::from(w) * 16 + (1 << 20)
    } else {
        decoder.total_bytes()
    };
    Ok(Probe {
        format,
        width: w,
        height: h,
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
        ..
    } = *probe;
    let reader = || {
        let mut r = ImageReader::new(Cursor::new(bytes));
        r.set_format(format);
        r
    };
    let pixels = u64::from(w) * u64::from(h);
    let mut limits = Limits::default();
    limits.max_image_width = Some(w);
    limits.max_image_height = Some(h);
    // Room for the largest pixel type (16-bit RGBA) of an image this size, and no more.
    limits.max_alloc = Some(pixels.saturating_mul(8).max(1 << 20));
    let mut r = reader();
    r.limits(limits);
    let mut decoder = r.into_decoder().map_err(corrupt)?;
    let orientation = decoder.orientation().unwrap_or(Orientation::NoTransforms);
    if format == ImageFormat::Jpeg && tessera_engine::jpeg_cut_off(bytes) {
        // The decoder would pad the missing rows with grey.
        return Err(ApiError::unprocessable(
            "corrupt_image",
            "the image is corrupt or truncated: the JPEG ends before its image does",
        ));
    }
    if format == ImageFormat::Png {
        drop(decoder);
        read_png_rows(bytes)?;
    } else {
        let size = usize::try_from(decoder.total_bytes()).map_err(|_| too_big(w, h))?;
        let mut buf = vec![0u8; size];
        decoder.read_image(&mut buf).map_err(corrupt)?;
    }
    let (width, height) = match orientation {
        Orientation::Rotate90
        | Orientation::Rotate270
        | Orientation::Rotate90FlipH
        | Orientation::Rotate270FlipH => (h, w),
        _ => (w, h),
    };
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
            "corrupt_image",
            format!("the image is corrupt or truncated: {e}"),
        )
    };
    // The rows are the limit here (checked above): the decoder's own would refuse large images.
    let limits = png::Limits { bytes: usize::MAX };
    let mut reader = png::Decoder::new_with_limits(Cursor::new(bytes), limits)
        .read_info()
        .map_err(bad)?;
    while reader.next_row().map_err(bad)?.is_some() {}
    reader.finish().map_err(bad)?;
    Ok(())
}

fn too_big(w: u32, h: u32) -> ApiError {
    ApiError::unprocessable(
        "image_too_large",
        format!("the image is {w} x {h} pixels: too large to decode"),
    )
}

fn corrupt(e: ImageError) -> ApiError {
    match e {
        ImageError::Limits(_) => ApiError::unprocessable(
            "image_too_large",
            "the image needs more memory to decode than the limit allows",
        ),
        ImageError::Unsupported(u) => ApiError::unsupported_media(
            "unsupported_format",
            format!("this image variant is not supported: {u}"),
        ),
        e => ApiError::unprocessable(
            "corrupt_image",
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
        img.write_to(&mut out, ImageFormat::Png).unwrap();
        out.into_inner()
    }

    #[test]
    fn a_small_png_passes() {
        let info = inspect_target(&png(7, 5), 1000).unwrap();
        assert_eq!(
            (info.width, info.height, info.format),
            (7, 5, ImageFormat::Png)
        );
    }

    #[test]
    fn each_bad_input_has_its_code() {
        let code = |b: &[u8], max| inspect_target(b, max).unwrap_err().code;
        assert_eq!(code(b"", 1000), "empty_upload");
        assert_eq!(code(b"hello, world, not an image", 1000), "not_an_image");
        assert_eq!(
            code(b"BM\0\0\0\0\0\0\0\0\0\0\0\0", 1000),
            "unsupported_format"
        );
        let good = png(20, 20);
        assert_eq!(code(&good[..good.len() / 2], 1000), "corrupt_image");
        assert_eq!(code(&good[..good.len() - 12], 1000), "corrupt_image");
        let mut jpeg = Vec::new();
        image::RgbImage::from_pixel(20, 20, image::Rgb([10, 200, 30]))
            .write_to(&mut Cursor::new(&mut jpeg), ImageFormat::Jpeg)
            .unwrap();
        assert!(inspect_target(&jpeg, 1000).is_ok());
        assert_eq!(code(&jpeg[..jpeg.len() * 6 / 10], 1000), "corrupt_image");
        assert_eq!(code(&good, 399), "image_too_large");
    }
}
