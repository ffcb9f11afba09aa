//! Targets: the photo a mosaic is made of, decoded whole to sRGB over a background.

use super::*;

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
pub(super) fn decode_png_rows(
    bytes: &[u8],
    background: [u8; 3],
) -> Result<Option<image::RgbImage>, Error> {
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
