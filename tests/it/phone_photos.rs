//! Photos at the size phones make them, through every door that takes a photo: a job's target,
//! a preview, a library upload, an event's target and a guest's contribution. The files are
//! made here: an iPhone's 12- and 48-megapixel HEIC (a grid of 512-pixel HEVC tiles, as the
//! phone writes it), a HEIC with alpha and one with a depth map (a portrait photo), a
//! 12-megapixel JPEG turned by its EXIF orientation, and a PNG and a TIFF of 15 megapixels,
//! over the 4096 px a tile is decoded whole at. A ProRAW's DNG is refused by its name
//! (`wedding_guests`).

use reqwest::StatusCode;
use reqwest::multipart::{Form, Part};
use serde_json::Value;
use uuid::Uuid;

use crate::support::*;

/// One phone photo: its name, its bytes, and its size upright.
struct PhonePhoto {
    name: &'static str,
    bytes: Vec<u8>,
    upright: (u32, u32),
}

/// `jpeg` with an EXIF segment that says orientation `o`, after its start marker.
fn with_orientation(jpeg: &[u8], o: u16) -> Vec<u8> {
    let mut tiff = b"II*\0\x08\0\0\0\x01\0".to_vec();
    tiff.extend_from_slice(&0x0112u16.to_le_bytes());
    tiff.extend_from_slice(&3u16.to_le_bytes());
    tiff.extend_from_slice(&1u32.to_le_bytes());
    tiff.extend_from_slice(&u32::from(o).to_le_bytes());
    tiff.extend_from_slice(&0u32.to_le_bytes());
    let body = [&b"Exif\0\0"[..], &tiff].concat();
    let mut out = jpeg[..2].to_vec();
    out.extend_from_slice(&[0xFF, 0xE1]);
    out.extend_from_slice(&((body.len() + 2) as u16).to_be_bytes());
    out.extend_from_slice(&body);
    out.extend_from_slice(&jpeg[2..]);
    out
}

/// A `width` x `height` gradient in `format`: a scan or a camera's export over the 4096 px a
/// tile is decoded whole at.
fn encoded(width: u32, height: u32, format: image::ImageFormat) -> Vec<u8> {
    let img = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x / 20) as u8, (y / 20) as u8, ((x + y) / 40) as u8])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, format).unwrap();
    out.into_inner()
}

fn phone_photos() -> Vec<PhonePhoto> {
    vec![
        PhonePhoto {
            name: "IMG_4032.HEIC",
            bytes: heic_grid((8, 6), 512, (4032, 3024), (4032, 3024)),
            upright: (4032, 3024),
        },
        PhonePhoto {
            name: "IMG_8064.HEIC",
            bytes: heic_grid((16, 12), 512, (8064, 6048), (8064, 6048)),
            upright: (8064, 6048),
        },
        PhonePhoto {
            name: "IMG_ALPHA.HEIC",
            bytes: heic_with_auxiliary(2016, 1512, false),
            upright: (2016, 1512),
        },
        PhonePhoto {
            name: "IMG_DEPTH.HEIC",
            bytes: heic_with_auxiliary(1512, 2016, true),
            upright: (1512, 2016),
        },
        PhonePhoto {
            name: "scan.png",
            bytes: encoded(5000, 3000, image::ImageFormat::Png),
            upright: (5000, 3000),
        },
        PhonePhoto {
            name: "DSC_0001.TIF",
            bytes: encoded(3000, 5000, image::ImageFormat::Tiff),
            upright: (3000, 5000),
        },
        PhonePhoto {
            name: "IMG_0006.JPG",
            bytes: with_orientation(&crate::photos::camera_jpeg(4032, 3024, 40), 6),
            upright: (3024, 4032),
        },
    ]
}

fn target_form(photo: &PhonePhoto) -> Form {
    Form::new()
        .part(
            "image",
            Part::bytes(photo.bytes.clone()).file_name(photo.name),
        )
        .text("library", "emoji")
        .text("tile_size", "8")
        .text("cells", "32")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn phone_photos_pass_every_door_at_the_defaults() {
    let app = spawn_app().await;
    let photos = phone_photos();
    for photo in &photos {
        let header = tessera_engine::decode::read_header(&photo.bytes).unwrap();
        let (w, h) = (header.width, header.height);
        let upright = if header.turned { (h, w) } else { (w, h) };
        assert_eq!(upright, photo.upright, "{}", photo.name);

        // A job's target, made into a mosaic as tall as the photo is.
        let res = app.post_job(target_form(photo)).await;
        let status = res.status();
        let body: Value = res.json().await.unwrap();
        assert_eq!(status, StatusCode::ACCEPTED, "{}: {body}", photo.name);
        let done = app.wait_until_finished(body["id"].as_str().unwrap()).await;
        assert_eq!(done["state"], "done", "{}: {done}", photo.name);
        let (mw, mh) = (
            done["output"]["width"].as_u64().unwrap(),
            done["output"]["height"].as_u64().unwrap(),
        );
        assert_eq!(
            mw > mh,
            photo.upright.0 > photo.upright.1,
            "{}: {done}",
            photo.name
        );

        // A preview of the same job.
        let res = app
            .client
            .post(app.url("/api/v1/previews"))
            .multipart(target_form(photo))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{}: preview", photo.name);
    }

    // A library of them all, each a tile.
    let entries: Vec<(&str, Vec<u8>)> = photos.iter().map(|p| (p.name, p.bytes.clone())).collect();
    let form = Form::new().text("name", "Phone photos").part(
        "files",
        Part::bytes(zip_of(&entries)).file_name("phone.zip"),
    );
    let res = app.post_library(form).await;
    let status = res.status();
    let created: Value = res.json().await.unwrap();
    assert_eq!(status, StatusCode::CREATED, "{created}");
    assert_eq!(created["library"]["tiles"], photos.len(), "{created}");

    // An event whose target is the 12-megapixel HEIC, and each photo sent by a guest.
    let event = make_event(&app, Uuid::new_v4(), photos[0].bytes.clone(), &[]).await;
    for photo in &photos {
        let files = vec![(photo.name, photo.bytes.clone())];
        let (status, body) = send_photos(&app, &event, Uuid::new_v4(), files, &[]).await;
        assert_eq!(status, StatusCode::CREATED, "{}: {body}", photo.name);
    }
}
