//! Decoding the images people have: PNG, JPEG, WebP, GIF, TIFF and BMP through the image
//! crate, HEIC/HEIF and AVIF through libheif. EXIF orientation is applied (HEIF's own rotation
//! and mirroring by libheif), colours are converted to sRGB from the file's profile
//! (the `profile` module, with moxcms), and a cut-off JPEG is refused rather than padded with grey.

pub use crate::budget::MAX_METADATA_BYTES;
use crate::budget::check_side;
use crate::error::Error;
use crate::profile::{Declared, image_to_srgb};
use crate::shape::TileShape;

mod heif;
mod sniff;
mod targets;
mod tiles;

pub use sniff::*;
pub use targets::*;
pub use tiles::*;

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
