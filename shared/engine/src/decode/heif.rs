//! HEIC/HEIF and AVIF through libheif, which applies the file's rotation and mirroring.

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
