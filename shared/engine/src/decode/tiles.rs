//! Tiles: a library's photo decoded at the size its tile needs (reduced in the decoder where
//! the format allows), large decodes within the process's one budget.

use super::*;

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
    crop_decoded(&decode_for_tile(bytes, need)?, background, (shape, rule))
}

/// Decodes an image file as [`decode_crop`] does, before its crop: at least `need` pixels on
/// its short side where the file has them.
pub(crate) fn decode_for_tile(bytes: &[u8], need: u32) -> Result<image::RgbaImage, String> {
    match Format::sniff(bytes) {
        Some(Format::Jpeg) => match jpeg_reduced(bytes, need)? {
            Some(reduced) => Ok(reduced),
            None => decode_tile_whole(bytes, need),
        },
        _ => decode_tile_whole(bytes, need),
    }
}

/// The largest crop of `shape` in a decoded image, where `rule` places it, composited onto
/// `background`.
pub(crate) fn crop_decoded(
    rgba: &image::RgbaImage,
    background: [u8; 3],
    (shape, rule): (TileShape, crate::crop::CropRule),
) -> Result<Cropped, String> {
    let (w, h) = (rgba.width() as usize, rgba.height() as usize);
    if w == 0 || h == 0 {
        return Err("empty image".into());
    }
    let (x0, y0, cw, ch) = rule.crop(rgba, shape);
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
pub(super) fn decode_tile_whole(bytes: &[u8], need: u32) -> Result<image::RgbaImage, String> {
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
pub(super) fn png_rows_reduced(bytes: &[u8], factor: u32) -> Result<Option<AsStored>, String> {
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
pub(super) struct DecodeBudget {
    pub(super) free: std::sync::Mutex<u64>,
    pub(super) freed: std::sync::Condvar,
}

pub(super) static LARGE_DECODES: DecodeBudget = DecodeBudget {
    free: std::sync::Mutex::new(LARGE_DECODE_BUDGET),
    freed: std::sync::Condvar::new(),
};

impl DecodeBudget {
    /// Waits until `bytes` (at most the whole budget) are free, and holds them until the
    /// guard is dropped.
    pub(super) fn hold(&'static self, bytes: u64) -> HeldBytes {
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
pub(super) struct HeldBytes {
    pub(super) budget: &'static DecodeBudget,
    pub(super) bytes: u64,
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

/// A photo's square as [`square_tile_pixels`] decodes it, made at most `side` pixels a side:
/// a JPEG of `quality` (1 to 100), and its pixels' mean colour.
pub fn square_thumbnail(
    bytes: &[u8],
    side: u32,
    quality: u8,
) -> Result<(Vec<u8>, [u8; 3]), String> {
    thumbnail_of(square_tile_pixels(bytes, side)?, side, quality)
}

/// A square of packed RGB8 `pixels` made at most `side` pixels a side: a JPEG of `quality`,
/// and its pixels' mean colour.
pub(crate) fn thumbnail_of(
    pixels: Vec<u8>,
    side: u32,
    quality: u8,
) -> Result<(Vec<u8>, [u8; 3]), String> {
    // The square as decoded (at least the side asked where the photo has it), then made the
    // thumbnail's side at most.
    let got = ((pixels.len() / 3) as f64).sqrt() as u32;
    let square =
        image::RgbImage::from_raw(got, got, pixels).ok_or("the photo's square is not square")?;
    let small = if got > side {
        image::imageops::thumbnail(&square, side, side)
    } else {
        square
    };
    let mut sum = [0u64; 3];
    for p in small.pixels() {
        for (total, v) in sum.iter_mut().zip(p.0) {
            *total += u64::from(v);
        }
    }
    let n = u64::from(small.width() * small.height()).max(1);
    let colour = sum.map(|s| (s / n) as u8);
    let mut jpeg = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, quality)
        .encode(
            small.as_raw(),
            small.width(),
            small.height(),
            image::ExtendedColorType::Rgb8,
        )
        .map_err(|e| e.to_string())?;
    Ok((jpeg, colour))
}

/// Refuses a photo whose square tile of `side` pixels cannot be decoded, judged from its header
/// alone (a JPEG over the pixels a tile may have, or that needs more memory than a photo may,
/// or cut off), with the reason; nothing is decoded. What passes may still fail to decode.
pub fn check_tile_header(bytes: &[u8], side: u32) -> Result<(), String> {
    if Format::sniff(bytes) == Some(Format::Jpeg) {
        reduced_jpeg(bytes, side)?;
    }
    Ok(())
}

/// The image crate's limits for a tile decoded whole.
pub(super) fn tile_limits() -> image::Limits {
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
pub(super) fn jpeg_reduced(bytes: &[u8], need: u32) -> Result<Option<image::RgbaImage>, String> {
    use jpeg_decoder::PixelFormat;
    let Some(ReducedJpeg {
        mut decoder,
        info,
        scaled: (sw, sh),
        cost,
    }) = reduced_jpeg(bytes, need)?
    else {
        return Ok(None);
    };
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

/// Reads a JPEG's header to decode it reduced for a tile of `need` pixels, as [`jpeg_reduced`]
/// does, refusing what it refuses; nothing is decoded.
fn reduced_jpeg(bytes: &[u8], need: u32) -> Result<Option<ReducedJpeg<'_>>, String> {
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
    Ok(Some(ReducedJpeg {
        decoder,
        info,
        scaled: (sw, sh),
        cost,
    }))
}

/// A JPEG about to be decoded reduced: its decoder past the header, the size it decodes at, and
/// the bytes the decoder will hold.
struct ReducedJpeg<'a> {
    decoder: jpeg_decoder::Decoder<std::io::Cursor<&'a [u8]>>,
    info: jpeg_decoder::ImageInfo,
    scaled: (u32, u32),
    cost: u64,
}
