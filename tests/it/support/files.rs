//! Fixtures and made-up files: the astronaut, tiles, PNGs (bombs too) and zips.

use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};

/// A file under `tests/fixtures`.
pub(crate) fn fixture(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path)
}

/// The astronaut target (48 px), the jobs' usual upload.
pub(crate) fn astronaut() -> Vec<u8> {
    std::fs::read(fixture("engine/astronaut-48.png")).unwrap()
}

/// A `width` x `height` PNG of a colour gradient.
pub(crate) fn png(width: u32, height: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x * 7) as u8, (y * 5) as u8, ((x + y) * 3) as u8])
    });
    let mut out = Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

/// A PNG whose header claims 60000 x 60000 pixels, with almost no data behind it.
pub(crate) fn png_bomb_header() -> Vec<u8> {
    fn crc32(bytes: &[u8]) -> u32 {
        let mut crc = !0u32;
        for &b in bytes {
            crc ^= u32::from(b);
            for _ in 0..8 {
                crc = if crc & 1 == 1 {
                    (crc >> 1) ^ 0xEDB8_8320
                } else {
                    crc >> 1
                };
            }
        }
        !crc
    }
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut chunk = |kind: &[u8], data: &[u8]| {
        out.extend((data.len() as u32).to_be_bytes());
        let mut body = kind.to_vec();
        body.extend(data);
        out.extend(&body);
        out.extend(crc32(&body).to_be_bytes());
    };
    let mut ihdr = Vec::new();
    ihdr.extend(60_000u32.to_be_bytes());
    ihdr.extend(60_000u32.to_be_bytes());
    ihdr.extend([8, 2, 0, 0, 0]);
    chunk(b"IHDR", &ihdr);
    // The start of a zlib stream of zeros: a real bomb goes on like this for megabytes.
    chunk(
        b"IDAT",
        &[0x78, 0x9c, 0xed, 0xc1, 0x01, 0x0d, 0x00, 0x00, 0x00],
    );
    chunk(b"IEND", &[]);
    out
}

/// A zip of `(name, bytes)` entries, deflated.
pub(crate) fn zip_of(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
    use zip::write::SimpleFileOptions;
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in entries {
        zip.start_file(*name, options).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

/// The first `n` tiles of the fixture library, by name: `(file name, bytes)`.
pub(crate) fn tiles(n: usize) -> Vec<(String, Vec<u8>)> {
    let mut names: Vec<_> = std::fs::read_dir(fixture("engine/tiles"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "png"))
        .collect();
    names.sort();
    names
        .into_iter()
        .take(n)
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            (name, std::fs::read(&p).unwrap())
        })
        .collect()
}

/// A folder `tiles` in `dir` of twelve one-colour `side` px PNGs, all colours apart: a small
/// library.
pub(crate) fn one_colour_tiles(dir: &std::path::Path, side: u32) -> PathBuf {
    let tiles = dir.join("tiles");
    std::fs::create_dir(&tiles).unwrap();
    for i in 0..12u8 {
        let colour = image::Rgb([i * 20, 255 - i * 20, i.wrapping_mul(71)]);
        image::RgbImage::from_pixel(side, side, colour)
            .save(tiles.join(format!("tile-{i:02}.png")))
            .unwrap();
    }
    tiles
}
