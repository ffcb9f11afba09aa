//! Reading TIFF photos within their pixels' size. The image crate's TIFF decoder fills a buffer
//! of its own with the whole image and then copies it into the caller's, so a 100-megapixel
//! photo takes twice its pixels. Grey and RGB(A) photos of 8 or 16 bits, stored chunky (the
//! samples of a pixel together), which is nearly every photo, are read here straight into
//! the image's own buffer; the rest go through the image crate and are budgeted at twice.
//! A check that a file decodes reads it a strip or tile at a time.

use std::io::Cursor;

use tiff::decoder::{Decoder, Limits};
use tiff::tags::Tag;

use crate::budget::{MAX_METADATA_BYTES, check_side};
use crate::profile::Declared;

/// How a TIFF's pixels are laid out, when they can be read straight into an image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Direct {
    color: image::ColorType,
}

fn decoder(bytes: &[u8]) -> Result<Decoder<Cursor<&[u8]>>, String> {
    let mut limits = Limits::default();
    // Tag values (the colour profile, the strip offsets) within the metadata's budget.
    limits.ifd_value_size = MAX_METADATA_BYTES;
    Decoder::new(Cursor::new(bytes))
        .map(|d| d.with_limits(limits))
        .map_err(|e| format!("the TIFF is corrupt: {e}"))
}

/// The layout `d` reads straight into an image, if it is one of those.
fn direct(d: &mut Decoder<Cursor<&[u8]>>) -> Option<Direct> {
    let tag = |d: &mut Decoder<Cursor<&[u8]>>, t: Tag| d.find_tag_unsigned::<u16>(t).ok();
    let chunky = tag(d, Tag::PlanarConfiguration)?.unwrap_or(1) == 1;
    // One sample format per sample.
    let unsigned = d
        .find_tag_unsigned_vec::<u16>(Tag::SampleFormat)
        .ok()?
        .is_none_or(|formats| formats.iter().all(|&f| f == 1));
    let photometric = tag(d, Tag::PhotometricInterpretation)??;
    if !chunky || !unsigned {
        return None;
    }
    use image::ColorType as C;
    use tiff::ColorType as T;
    let color = match (d.colortype().ok()?, photometric) {
        // Grey with black as zero (1); RGB (2).
        (T::Gray(8), 1) => C::L8,
        (T::Gray(16), 1) => C::L16,
        (T::GrayA(8), 1) => C::La8,
        (T::GrayA(16), 1) => C::La16,
        (T::RGB(8), 2) => C::Rgb8,
        (T::RGB(16), 2) => C::Rgb16,
        (T::RGBA(8), 2) => C::Rgba8,
        (T::RGBA(16), 2) => C::Rgba16,
        _ => return None,
    };
    Some(Direct { color })
}

/// The bytes decoding a `total_bytes` TIFF holds at its peak: its pixels once when read
/// straight into the image, twice through the image crate.
pub(crate) fn decode_bytes(bytes: &[u8], total_bytes: u64) -> u64 {
    let straight = decoder(bytes).ok().and_then(|mut d| direct(&mut d));
    if straight.is_some() {
        total_bytes
    } else {
        total_bytes.saturating_mul(2)
    }
}

/// A decoded TIFF in its own pixel type, with its colour profile and orientation; `None` when
/// its layout is not read here (the image crate reads it).
pub(crate) struct Read {
    pub(crate) image: image::DynamicImage,
    pub(crate) declared: Declared,
    pub(crate) orientation: image::metadata::Orientation,
}

/// Reads a TIFF straight into its image when its layout allows ([`direct`]), within `limits`.
pub(crate) fn read(bytes: &[u8], limits: Option<&image::Limits>) -> Result<Option<Read>, String> {
    let mut d = decoder(bytes)?;
    let Some(Direct { color }) = direct(&mut d) else {
        return Ok(None);
    };
    let (w, h) = d.dimensions().map_err(|e| e.to_string())?;
    if let Some(limits) = limits {
        check_side(w, h, limits)?;
    }
    let max_alloc = limits.and_then(|l| l.max_alloc);
    let total = u64::from(w) * u64::from(h) * u64::from(color.bytes_per_pixel());
    if max_alloc.is_some_and(|max| total > max) {
        return Err(format!(
            "a {w}x{h} image needs {total} bytes, over the {} allowed",
            max_alloc.unwrap_or_default()
        ));
    }
    let total = usize::try_from(total).map_err(|_| format!("a {w}x{h} image is too large"))?;
    let corrupt = |e: tiff::TiffError| format!("the TIFF is corrupt or cut off: {e}");
    let image = if color.bytes_per_pixel() / color.channel_count() == 1 {
        let mut pixels = vec![0u8; total];
        d.read_image_bytes(&mut pixels).map_err(corrupt)?;
        eight_bit(color, w, h, pixels)
    } else {
        let mut pixels = vec![0u16; total / 2];
        d.read_image_bytes(bytemuck::cast_slice_mut(&mut pixels))
            .map_err(corrupt)?;
        sixteen_bit(color, w, h, pixels)
    }
    .ok_or("the TIFF's pixels do not fill its image")?;
    let declared = match d.get_tag_u8_vec(Tag::IccProfile) {
        Ok(icc) => Declared::icc(&icc),
        Err(_) => Declared::SRGB,
    };
    let orientation = d
        .find_tag_unsigned::<u8>(Tag::Orientation)
        .ok()
        .flatten()
        .and_then(image::metadata::Orientation::from_exif)
        .unwrap_or(image::metadata::Orientation::NoTransforms);
    Ok(Some(Read {
        image,
        declared,
        orientation,
    }))
}

fn eight_bit(color: image::ColorType, w: u32, h: u32, p: Vec<u8>) -> Option<image::DynamicImage> {
    use image::DynamicImage as D;
    Some(match color {
        image::ColorType::L8 => D::ImageLuma8(image::ImageBuffer::from_raw(w, h, p)?),
        image::ColorType::La8 => D::ImageLumaA8(image::ImageBuffer::from_raw(w, h, p)?),
        image::ColorType::Rgb8 => D::ImageRgb8(image::ImageBuffer::from_raw(w, h, p)?),
        _ => D::ImageRgba8(image::ImageBuffer::from_raw(w, h, p)?),
    })
}

fn sixteen_bit(
    color: image::ColorType,
    w: u32,
    h: u32,
    p: Vec<u16>,
) -> Option<image::DynamicImage> {
    use image::DynamicImage as D;
    Some(match color {
        image::ColorType::L16 => D::ImageLuma16(image::ImageBuffer::from_raw(w, h, p)?),
        image::ColorType::La16 => D::ImageLumaA16(image::ImageBuffer::from_raw(w, h, p)?),
        image::ColorType::Rgb16 => D::ImageRgb16(image::ImageBuffer::from_raw(w, h, p)?),
        _ => D::ImageRgba16(image::ImageBuffer::from_raw(w, h, p)?),
    })
}

/// Decodes every strip or tile of a TIFF, one at a time, to be sure the file is whole: the
/// check holds one chunk, whatever the image's size.
pub fn check_whole(bytes: &[u8]) -> Result<(), String> {
    let mut d = decoder(bytes)?;
    let corrupt = |e: tiff::TiffError| format!("the TIFF is corrupt or cut off: {e}");
    let chunks = match d.get_chunk_type() {
        tiff::decoder::ChunkType::Strip => d.strip_count(),
        tiff::decoder::ChunkType::Tile => d.tile_count(),
    }
    .map_err(corrupt)?;
    if chunks == 0 {
        return Err("the TIFF has no pixels".into());
    }
    for chunk in 0..chunks {
        d.read_chunk(chunk).map_err(corrupt)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use tiff::encoder::{TiffEncoder, colortype};

    fn encoded<C: colortype::ColorType>(w: u32, h: u32, data: &[C::Inner]) -> Vec<u8>
    where
        [C::Inner]: tiff::encoder::TiffValue,
    {
        let mut out = std::io::Cursor::new(Vec::new());
        TiffEncoder::new(&mut out)
            .unwrap()
            .write_image::<C>(w, h, data)
            .unwrap();
        out.into_inner()
    }

    /// Read straight into the image, each layout gives the pixels the image crate gives.
    #[test]
    fn straight_reads_match_the_image_crate() {
        let (w, h) = (37u32, 23u32);
        let n = (w * h) as usize;
        let bytes8 = |c: usize| (0..n * c).map(|i| (i * 7 % 256) as u8).collect::<Vec<u8>>();
        let words = |c: usize| {
            (0..n * c)
                .map(|i| (i * 2741 % 65536) as u16)
                .collect::<Vec<u16>>()
        };
        let files = [
            encoded::<colortype::RGB8>(w, h, &bytes8(3)),
            encoded::<colortype::RGBA8>(w, h, &bytes8(4)),
            encoded::<colortype::Gray8>(w, h, &bytes8(1)),
            encoded::<colortype::RGB16>(w, h, &words(3)),
            encoded::<colortype::RGBA16>(w, h, &words(4)),
            encoded::<colortype::Gray16>(w, h, &words(1)),
        ];
        for file in files {
            let straight = super::read(&file, None).unwrap().expect("read straight");
            let reference = image::load_from_memory(&file).unwrap();
            assert_eq!(straight.image.color(), reference.color());
            assert_eq!(straight.image.as_bytes(), reference.as_bytes());
            let budget = super::decode_bytes(&file, u64::from(w * h) * 3);
            assert_eq!(budget, u64::from(w * h) * 3, "{:?}", reference.color());
        }
        // Over the caller's allocation budget: refused before reading.
        let file = encoded::<colortype::RGB8>(w, h, &bytes8(3));
        let mut limits = image::Limits::default();
        limits.max_alloc = Some(1000);
        assert!(super::read(&file, Some(&limits)).is_err());
        // A cut-off file fails the strip-by-strip check.
        assert!(super::check_whole(&file).is_ok());
        assert!(super::check_whole(&file[..file.len() / 2]).is_err());
    }

    /// Layouts not read here (CMYK) go through the image crate and are budgeted at twice.
    #[test]
    fn other_layouts_are_left_to_the_image_crate() {
        let file = encoded::<colortype::CMYK8>(8, 8, &[9u8; 256]);
        assert!(super::read(&file, None).unwrap().is_none());
        assert_eq!(super::decode_bytes(&file, 192), 384);
    }
}
