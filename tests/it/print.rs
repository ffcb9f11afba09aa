//! Print sizes: `print=A5@72dpi` (and `--print`) sizes the grid from the paper, every output
//! carries its resolution (PNG pHYs, JPEG JFIF density, TIFF resolution tags), and tiles that
//! print under about 1 cm are warned of at the door.

use std::process::Command;

use reqwest::StatusCode;
use reqwest::multipart::{Form, Part};
use serde_json::Value;

use crate::support::{astronaut, error_code, spawn_app_with, test_settings};

/// The resolution a PNG's pHYs chunk gives, in dots per inch (rounded), if it has one.
pub(crate) fn png_dpi(png: &[u8]) -> Option<u32> {
    let at = png.windows(4).position(|w| w == b"pHYs")? + 4;
    let data = png.get(at..at + 9)?;
    let x = u32::from_be_bytes(data[0..4].try_into().ok()?);
    let y = u32::from_be_bytes(data[4..8].try_into().ok()?);
    assert_eq!(x, y, "pHYs differs across and down");
    assert_eq!(data[8], 1, "pHYs is not per metre");
    Some((f64::from(x) * 0.0254).round() as u32)
}

/// The resolution a JPEG's JFIF header gives, in dots per inch, if it gives one in inches.
fn jpeg_dpi(jpeg: &[u8]) -> Option<u16> {
    let at = jpeg.windows(5).position(|w| w == b"JFIF\0")? + 5;
    let data = jpeg.get(at..at + 7)?;
    (data[2] == 1).then(|| u16::from_be_bytes([data[3], data[4]]))
}

fn render(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tessera"))
        .arg("render")
        .args(args)
        .output()
        .unwrap()
}

/// A5 at 72 dpi is 420 x 595 px: tiles of 1 cm are 29 px, so a square photo takes 14 x 14 of
/// them; the PNG, the JPEG and the TIFF carry 72 dpi, and smaller tiles draw the warning.
#[test]
fn render_sizes_a_print_and_writes_its_resolution() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("astronaut.png");
    std::fs::write(&target, astronaut()).unwrap();
    let tiles = crate::support::fixture("engine/tiles");
    // `tessera render` of the astronaut from the fixture tiles into `out`, with `extra`.
    let run = |out: &std::path::Path, extra: &[&str]| {
        let mut args = vec![
            target.to_str().unwrap(),
            "-l",
            tiles.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "-q",
        ];
        args.extend_from_slice(extra);
        render(&args)
    };
    let (png, jpg, tif) = (
        dir.path().join("a5.png"),
        dir.path().join("a5.jpg"),
        dir.path().join("a5.tif"),
    );
    for out in [&png, &jpg, &tif] {
        let done = run(out, &["--print", "A5@72dpi"]);
        let stderr = String::from_utf8_lossy(&done.stderr);
        assert!(done.status.success(), "{stderr}");
        assert!(stderr.contains("14 x 14 cells of 29 px"), "{stderr}");
        assert!(
            stderr.contains("prints 14.3 x 14.3 cm on A5@72dpi"),
            "{stderr}"
        );
        assert!(!stderr.contains("warning"), "{stderr}");
    }
    let png_bytes = std::fs::read(&png).unwrap();
    assert_eq!(
        image::load_from_memory(&png_bytes).unwrap().width(),
        14 * 29
    );
    assert_eq!(png_dpi(&png_bytes), Some(72));
    assert_eq!(jpeg_dpi(&std::fs::read(&jpg).unwrap()), Some(72));
    // The TIFF as Pillow reads it: size, resolution, deflate, the pyramid's levels, and the
    // pixels of the PNG.
    let read = Command::new(crate::support::python())
        .args([
            "-c",
            "import sys\nfrom PIL import Image\nim = Image.open(sys.argv[1])\n\
             png = Image.open(sys.argv[2]).convert('RGB')\n\
             print(im.size, im.info['dpi'], im.info['compression'], im.n_frames, \
             im.convert('RGB').tobytes() == png.tobytes())",
            tif.to_str().unwrap(),
            png.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&read.stdout).trim(),
        "(406, 406) (72.0, 72.0) tiff_adobe_deflate 2 True",
        "{}",
        String::from_utf8_lossy(&read.stderr)
    );

    // Without a print: 300 dpi. With tiles of 8 px on A5 at 300 dpi: the warning.
    let plain = dir.path().join("plain.png");
    assert!(run(&plain, &["--cells", "6"]).status.success());
    assert_eq!(png_dpi(&std::fs::read(&plain).unwrap()), Some(300));
    let small = run(&plain, &["--print", "A5", "--tile-size", "8"]);
    let stderr = String::from_utf8_lossy(&small.stderr);
    assert!(small.status.success(), "{stderr}");
    assert!(
        stderr.contains("warning: tiles of 8 px print 0.07 cm wide at 300 dpi")
            && stderr.contains("at least 119 px"),
        "{stderr}"
    );
    // A print and a grid of cells exclude each other.
    assert!(
        !run(&plain, &["--print", "A5", "--cells", "10"])
            .status
            .success()
    );
}

fn print_form(print: &str) -> Form {
    Form::new()
        .part("image", Part::bytes(astronaut()).file_name("astronaut.png"))
        .text("library", "emoji")
        .text("print", print.to_string())
}

/// Through the API: the grid and the resolution follow the print, the answer and the job page
/// carry the warning, and the result PNG carries the print's resolution.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_print_job_is_sized_warned_and_made_at_its_resolution() {
    let app = spawn_app_with(test_settings(), true).await;

    let res = app.post_job(print_form("A5@72dpi")).await;
    assert_eq!(res.status(), StatusCode::ACCEPTED);
    let job: Value = res.json().await.unwrap();
    assert_eq!(job["params"]["print"], "A5@72dpi");
    assert_eq!(job["params"]["grid"], "print");
    assert_eq!(job["params"]["tile_size"], 29);
    assert_eq!(job["resolved"]["cols"], 14);
    assert_eq!(job["resolved"]["width"], 14 * 29);
    assert_eq!(job["resolved"]["dpi"], 72);
    assert_eq!(job["resolved"]["width_cm"], 14.32);
    assert_eq!(job["warnings"], serde_json::json!([]));
    let id = job["id"].as_str().unwrap().to_string();
    let done = app.wait_until_finished(&id).await;
    assert_eq!(done["state"], "done", "{done}");
    let result = app.get_result(&id, &[]).await.bytes().await.unwrap();
    assert_eq!(png_dpi(&result), Some(72));
    let page = app.get(&format!("/jobs/{id}")).await.text().await.unwrap();
    assert!(
        page.contains("14.3 x 14.3 cm"),
        "the job page states the print size"
    );
    assert!(page.contains("on A5@72dpi"));

    // Tiles of 8 px on A5 at 150 dpi print 0.14 cm: accepted, with the warning.
    let res = app
        .post_job(print_form("A5@150dpi").text("tile_size", "8"))
        .await;
    assert_eq!(res.status(), StatusCode::ACCEPTED);
    let job: Value = res.json().await.unwrap();
    let warning = job["warnings"][0].as_str().expect("a warning");
    assert!(
        warning.contains("0.14 cm") && warning.contains("at least 60 px"),
        "{warning}"
    );
    let id = job["id"].as_str().unwrap();
    let page = app.get(&format!("/jobs/{id}")).await.text().await.unwrap();
    assert!(page.contains("0.14 cm wide at 150 dpi"));

    // A TIFF result, served as one, at the print's resolution.
    let id = app
        .submit(print_form("A5@72dpi").text("format", "tiff"))
        .await;
    let done = app.wait_until_finished(&id).await;
    assert_eq!(done["state"], "done", "{done}");
    assert_eq!(done["params"]["format"], "tiff");
    let res = app.get_result(&id, &[]).await;
    assert_eq!(res.headers()["content-type"], "image/tiff");
    let disposition = res.headers()["content-disposition"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        disposition.contains("astronaut-mosaic.tif"),
        "{disposition}"
    );
    let tiff = res.bytes().await.unwrap();
    let image = image::load_from_memory_with_format(&tiff, image::ImageFormat::Tiff).unwrap();
    assert_eq!((image.width(), image.height()), (406, 406));

    for (print, extra, status, code) in [
        ("A9", None, StatusCode::BAD_REQUEST, "invalid_parameter"),
        (
            "60x40cm@10dpi",
            None,
            StatusCode::UNPROCESSABLE_ENTITY,
            "print_out_of_range",
        ),
        (
            "A4",
            Some(("cells", "10")),
            StatusCode::UNPROCESSABLE_ENTITY,
            "conflicting_parameters",
        ),
        (
            "2x2cm@72dpi",
            Some(("tile_size", "200")),
            StatusCode::UNPROCESSABLE_ENTITY,
            "print_too_small",
        ),
    ] {
        let mut form = print_form(print);
        if let Some((name, value)) = extra {
            form = form.text(name, value);
        }
        let (got, got_code) = error_code(app.post_job(form).await).await;
        assert_eq!((got, got_code.as_str()), (status, code), "print={print}");
    }
}
