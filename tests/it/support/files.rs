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

/// One ISO box: size, type, body.
pub(crate) fn iso_box(kind: &[u8; 4], body: &[u8]) -> Vec<u8> {
    let mut out = ((body.len() + 8) as u32).to_be_bytes().to_vec();
    out.extend_from_slice(kind);
    out.extend_from_slice(body);
    out
}

/// A full box: version and flags, then the body.
pub(crate) fn full_box(kind: &[u8; 4], version: u8, flags: u32, body: &[u8]) -> Vec<u8> {
    let mut head = (u32::from(version) << 24 | flags).to_be_bytes().to_vec();
    head.extend_from_slice(body);
    iso_box(kind, &head)
}

/// The boxes in `bytes`, by type, with their bodies.
pub(crate) fn boxes(bytes: &[u8]) -> Vec<([u8; 4], &[u8])> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 8 <= bytes.len() {
        let size = u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        let kind = bytes[at + 4..at + 8].try_into().unwrap();
        out.push((kind, &bytes[at + 8..at + size]));
        at += size;
    }
    out
}

/// A HEIC whose primary image is a grid of `cols x rows` tiles of `tile` pixels, all the same
/// coded picture (a gradient libheif encodes once), whose grid makes `output` pixels and whose
/// `ispe` declares `declared`: an iPhone's 12-megapixel photo is 8 x 6 tiles of 512 for 4032 x
/// 3024, declared so; a lying file declares less than its grid makes.
pub(crate) fn heic_grid(
    (cols, rows): (u16, u16),
    tile: u32,
    output: (u32, u32),
    declared: (u32, u32),
) -> Vec<u8> {
    use libheif_rs::{
        Channel, ColorSpace, CompressionFormat, HeifContext, Image, LibHeif, RgbChroma,
    };
    // One real HEVC tile, from libheif's own encoder.
    let mut image = Image::new(tile, tile, ColorSpace::Rgb(RgbChroma::Rgb)).unwrap();
    image
        .create_plane(Channel::Interleaved, tile, tile, 8)
        .unwrap();
    let plane = image.planes_mut().interleaved.unwrap();
    for (i, v) in plane.data.iter_mut().enumerate() {
        *v = (i % 251) as u8;
    }
    let mut context = HeifContext::new().unwrap();
    let heif = LibHeif::new();
    let mut encoder = heif.encoder_for_format(CompressionFormat::Hevc).unwrap();
    context.encode_image(&image, &mut encoder, None).unwrap();
    let one = context.write_to_bytes().unwrap();
    let top = boxes(&one);
    let mdat = top.iter().find(|(k, _)| k == b"mdat").unwrap().1.to_vec();
    let meta = top.iter().find(|(k, _)| k == b"meta").unwrap().1;
    let iprp = boxes(&meta[4..])
        .into_iter()
        .find(|(k, _)| k == b"iprp")
        .unwrap()
        .1;
    let ipco = boxes(iprp)
        .into_iter()
        .find(|(k, _)| k == b"ipco")
        .unwrap()
        .1;
    let hvcc = boxes(ipco)
        .into_iter()
        .find(|(k, _)| k == b"hvcC")
        .unwrap()
        .1;

    let tiles = cols * rows;
    let ids = 2..=tiles + 1;
    let hdlr = full_box(b"hdlr", 0, 0, &[&[0; 4], &b"pict"[..], &[0; 13]].concat());
    let pitm = full_box(b"pitm", 0, 0, &1u16.to_be_bytes());
    let infe = |id: u16, kind: &[u8; 4]| {
        full_box(
            b"infe",
            2,
            0,
            &[&id.to_be_bytes()[..], &[0, 0], kind, &[0]].concat(),
        )
    };
    let mut iinf = (tiles + 1).to_be_bytes().to_vec();
    iinf.extend(infe(1, b"grid"));
    for id in ids.clone() {
        iinf.extend(infe(id, b"hvc1"));
    }
    let mut dimg = 1u16.to_be_bytes().to_vec();
    dimg.extend_from_slice(&tiles.to_be_bytes());
    for id in ids.clone() {
        dimg.extend_from_slice(&id.to_be_bytes());
    }
    let iref = full_box(b"iref", 0, 0, &iso_box(b"dimg", &dimg));
    let ispe =
        |w: u32, h: u32| full_box(b"ispe", 0, 0, &[w.to_be_bytes(), h.to_be_bytes()].concat());
    let ipco = iso_box(
        b"ipco",
        &[
            iso_box(b"hvcC", hvcc),
            ispe(tile, tile),
            ispe(declared.0, declared.1),
        ]
        .concat(),
    );
    let mut ipma = u32::from(tiles + 1).to_be_bytes().to_vec();
    ipma.extend_from_slice(&[0, 1, 1, 0x83]);
    for id in ids.clone() {
        ipma.extend_from_slice(&id.to_be_bytes());
        ipma.extend_from_slice(&[2, 0x81, 0x02]);
    }
    let iprp = iso_box(b"iprp", &[ipco, full_box(b"ipma", 0, 0, &ipma)].concat());
    // The grid's description: 32-bit sizes, rows and columns less one.
    let mut grid_data = vec![0, 1, (rows - 1) as u8, (cols - 1) as u8];
    grid_data.extend_from_slice(&output.0.to_be_bytes());
    grid_data.extend_from_slice(&output.1.to_be_bytes());
    let idat = iso_box(b"idat", &grid_data);
    let iloc = |mdat_at: u32| {
        let mut body = vec![0x44, 0x00];
        body.extend_from_slice(&(tiles + 1).to_be_bytes());
        body.extend_from_slice(&[0, 1, 0, 1, 0, 0, 0, 1]);
        body.extend_from_slice(&0u32.to_be_bytes());
        body.extend_from_slice(&(grid_data.len() as u32).to_be_bytes());
        for id in ids.clone() {
            body.extend_from_slice(&id.to_be_bytes());
            body.extend_from_slice(&[0, 0, 0, 0, 0, 1]);
            body.extend_from_slice(&mdat_at.to_be_bytes());
            body.extend_from_slice(&(mdat.len() as u32).to_be_bytes());
        }
        full_box(b"iloc", 1, 0, &body)
    };
    let ftyp = iso_box(b"ftyp", &[&b"heic"[..], &[0; 4], b"mif1", b"heic"].concat());
    let meta_of = |mdat_at: u32| {
        full_box(
            b"meta",
            0,
            0,
            &[
                hdlr.clone(),
                pitm.clone(),
                full_box(b"iinf", 0, 0, &iinf),
                iref.clone(),
                iprp.clone(),
                idat.clone(),
                iloc(mdat_at),
            ]
            .concat(),
        )
    };
    let mdat_at = (ftyp.len() + meta_of(0).len() + 8) as u32;
    [ftyp, meta_of(mdat_at), iso_box(b"mdat", &mdat)].concat()
}

/// A `width` x `height` HEIC with an auxiliary picture, as libheif writes it: its alpha, or
/// (`depth`) the same picture marked as the depth map a phone's portrait photo carries (the
/// auxiliary type `urn:mpeg:hevc:2015:auxid:2` in place of `:1`, one byte apart).
pub(crate) fn heic_with_auxiliary(width: u32, height: u32, depth: bool) -> Vec<u8> {
    use libheif_rs::{
        Channel, ColorSpace, CompressionFormat, HeifContext, Image, LibHeif, RgbChroma,
    };
    let mut image = Image::new(width, height, ColorSpace::Rgb(RgbChroma::Rgba)).unwrap();
    image
        .create_plane(Channel::Interleaved, width, height, 8)
        .unwrap();
    let plane = image.planes_mut().interleaved.unwrap();
    let stride = plane.stride;
    for y in 0..height as usize {
        for x in 0..width as usize {
            let at = y * stride + x * 4;
            plane.data[at..at + 4].copy_from_slice(&[
                (x / 8) as u8,
                (y / 8) as u8,
                128,
                (x + y) as u8 | 0x80,
            ]);
        }
    }
    let mut context = HeifContext::new().unwrap();
    let heif = LibHeif::new();
    let mut encoder = heif.encoder_for_format(CompressionFormat::Hevc).unwrap();
    context.encode_image(&image, &mut encoder, None).unwrap();
    let mut bytes = context.write_to_bytes().unwrap();
    if depth {
        let alpha = b"urn:mpeg:hevc:2015:auxid:1";
        let at = bytes
            .windows(alpha.len())
            .position(|w| w == alpha)
            .expect("libheif marks the alpha picture");
        bytes[at + alpha.len() - 1] = b'2';
    }
    bytes
}
