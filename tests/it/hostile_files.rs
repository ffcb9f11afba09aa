//! Files that lie about themselves, against `tessera serve` as it ships: a HEIC grid whose header
//! declares 64 x 64 but whose tiles make 15360 x 15360, and a small PNG whose colour profile
//! inflates to a gigabyte. Each is refused, as a target and as a tile, and the process's peak
//! memory (`VmHWM` from /proc) rises by less than [`MOST_ADDED`]. An honest 100-megapixel TIFF
//! costs its pixels once, not twice.

use std::io::Write;

use reqwest::StatusCode;
use reqwest::multipart::{Form, Part};
use serde_json::Value;

use crate::support::{Serve, ended, no_redirect_client, zip_of};

/// The most one hostile file may add to the service's peak memory.
const MOST_ADDED: u64 = 400 << 20;

/// A HEIC whose primary image is a grid of `grid x grid` tiles of `tile` pixels, all the same
/// coded picture, making `grid * tile` pixels a side, while its `ispe` declares 64 x 64.
fn lying_heic_grid(grid: u16, tile: u32) -> Vec<u8> {
    let side = u32::from(grid) * tile;
    crate::support::heic_grid((grid, grid), tile, (side, side), (64, 64))
}

/// A 64 x 64 PNG with an `iCCP` chunk of `inflated` zero bytes, deflated.
fn png_with_profile_bomb(inflated: usize) -> Vec<u8> {
    let mut plain = Vec::new();
    image::RgbImage::from_pixel(64, 64, image::Rgb([200, 40, 40]))
        .write_to(
            &mut std::io::Cursor::new(&mut plain),
            image::ImageFormat::Png,
        )
        .unwrap();
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..inflated >> 20 {
        z.write_all(&zeros).unwrap();
    }
    let mut body = b"bomb\0\0".to_vec();
    body.extend(z.finish().unwrap());
    let mut chunk = (body.len() as u32).to_be_bytes().to_vec();
    let mut crc = flate2::Crc::new();
    crc.update(b"iCCP");
    crc.update(&body);
    chunk.extend_from_slice(b"iCCP");
    chunk.extend_from_slice(&body);
    chunk.extend_from_slice(&crc.sum().to_be_bytes());
    // After the signature and the IHDR chunk (8 + 25 bytes).
    [&plain[..33], &chunk, &plain[33..]].concat()
}

async fn refused_as_target(serve: &Serve, name: &str, bytes: Vec<u8>) -> (u16, Value) {
    let form = Form::new()
        .part("image", Part::bytes(bytes).file_name(name.to_string()))
        .text("tile_size", "8")
        .text("cells", "40");
    serve.submit(form).await
}

async fn imported_as_tile(serve: &Serve, name: &str, bytes: Vec<u8>) -> Value {
    let mut entries = vec![(name, bytes)];
    let tiles = crate::support::tiles(12);
    for (file, tile) in &tiles {
        entries.push((file.as_str(), tile.clone()));
    }
    let form = Form::new().text("name", "With a bomb").part(
        "files",
        Part::bytes(zip_of(&entries)).file_name("tiles.zip"),
    );
    let res = no_redirect_client()
        .post(format!("{}/api/v1/libraries", serve.base))
        .header("X-Client-Id", uuid::Uuid::new_v4().to_string())
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED, "{:?}", res.text().await);
    res.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heic_grid_that_lies_about_its_size_is_refused_in_bounded_memory() {
    let bomb = lying_heic_grid(30, 512);
    assert!(bomb.len() < 100_000, "{} bytes", bomb.len());
    // libheif itself reads the header as 64 x 64.
    let header = tessera_engine::decode::read_header(&lying_heic_grid(2, 64));
    assert!(header.is_err(), "{header:?}");
    let serve = Serve::start(&[]).await;
    let before = serve.peak();
    let (status, body) = refused_as_target(&serve, "grid.heic", bomb.clone()).await;
    assert_eq!(status, 422, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("64 x 64") && message.contains("15360"),
        "{message}"
    );
    let created = imported_as_tile(&serve, "grid.heic", bomb).await;
    let skipped = created["report"]["skipped"].as_array().unwrap();
    assert!(
        skipped.iter().any(|s| s["name"] == "grid.heic"),
        "{created}"
    );
    let added = serve.peak().saturating_sub(before);
    eprintln!("the lying HEIC added {} MiB to the peak", added >> 20);
    assert!(
        added < MOST_ADDED,
        "the lying HEIC added {} MiB",
        added >> 20
    );
}

/// The `png` crate reads a profile within the budget it is given and drops one over it: the
/// photo is read as sRGB, through the web's check, the planner and the processors, and the
/// gigabyte is never allocated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_png_whose_profile_inflates_to_a_gigabyte_costs_no_more_than_its_pixels() {
    let bomb = png_with_profile_bomb(1 << 30);
    assert!(bomb.len() < 2 << 20, "{} bytes", bomb.len());
    let serve = Serve::start(&[]).await;
    let before = serve.peak();
    let (status, body) = refused_as_target(&serve, "profile.png", bomb.clone()).await;
    assert_eq!(status, 202, "{body}");
    let view = ended(&serve, body["id"].as_str().unwrap()).await;
    assert_eq!(view["state"], "done", "{view}");

    let created = imported_as_tile(&serve, "profile.png", bomb).await;
    assert_eq!(created["library"]["tiles"], 13, "{created}");
    let added = serve.peak().saturating_sub(before);
    eprintln!("the profile bomb added {} MiB to the peak", added >> 20);
    assert!(
        added < MOST_ADDED,
        "the profile bomb added {} MiB",
        added >> 20
    );
}

/// A `side` x `side` RGB TIFF, deflated in strips of 16 rows: a gradient across, one shade of
/// it per strip, so that 100 megapixels fit in a megabyte or two.
fn large_tiff(side: u32) -> Vec<u8> {
    use tiff::encoder::{Compression, DeflateLevel, TiffEncoder, colortype::RGB8};
    let side_px = side as usize;
    let mut pixels = Vec::with_capacity(side_px * side_px * 3);
    for y in 0..side {
        let shade = (y / 16 * 16 * 255 / side) as u8;
        pixels.extend((0..side).flat_map(|x| [(x * 255 / side) as u8, shade, 255 - shade]));
    }
    let mut out = std::io::Cursor::new(Vec::new());
    let mut encoder = TiffEncoder::new(&mut out)
        .unwrap()
        .with_compression(Compression::Deflate(DeflateLevel::Fast));
    let mut image = encoder.new_image::<RGB8>(side, side).unwrap();
    image.rows_per_strip(16).unwrap();
    // Whole, as only `write_data` compresses.
    image.write_data(&pixels).unwrap();
    out.into_inner()
}

/// The image crate's TIFF decoder fills its own buffer and copies it into the image, so a
/// 100-megapixel photo (300 MB of pixels) cost 739 MB; read straight into the image, and
/// checked at the web a strip at a time, it costs its pixels once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_megapixel_tiff_costs_its_pixels_once() {
    let photo = large_tiff(10_000);
    assert!(photo.len() < 20 << 20, "{} bytes", photo.len());
    let serve = Serve::start(&[]).await;
    let before = serve.peak();
    let (status, body) = refused_as_target(&serve, "large.tif", photo).await;
    assert_eq!(status, 202, "{body}");
    let view = ended(&serve, body["id"].as_str().unwrap()).await;
    assert_eq!(view["state"], "done", "{view}");
    let added = serve.peak().saturating_sub(before);
    eprintln!(
        "the 100-megapixel TIFF added {} MiB to the peak",
        added >> 20
    );
    assert!(
        added < MOST_ADDED,
        "the 100-megapixel TIFF added {} MiB",
        added >> 20
    );
}
