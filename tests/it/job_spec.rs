//! One job specification from the form to the processor: the use cap through the API, sizing
//! that suits any photo, outputs over the size made unasked, a job that says how it was made,
//! and the same limits in the web role and the controller.

use std::io::Cursor;

use reqwest::StatusCode;
use serde_json::Value;
use tessera_engine::{Grid as EngineGrid, Sizing};
use tessera_shared::messages::LibraryRef;
use tessera_shared::spec::{JobLimits, JobSpec};
use tessera_web::WebSettings;

use crate::support::{
    assert_refused, astronaut, job_form, spawn_app, spawn_app_with, test_settings,
};

/// A PNG of `width` x `height` pixels, a gradient.
fn png(width: u32, height: u32) -> Vec<u8> {
    let image = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x % 256) as u8, (y % 256) as u8, ((x + y) % 256) as u8])
    });
    let mut out = Cursor::new(Vec::new());
    image.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

fn form(image: Vec<u8>) -> reqwest::multipart::Form {
    form_for(image, "emoji")
}

/// A submission of `image` from `library`.
fn form_for(image: Vec<u8>, library: &str) -> reqwest::multipart::Form {
    reqwest::multipart::Form::new()
        .part(
            "image",
            reqwest::multipart::Part::bytes(image).file_name("photo.png"),
        )
        .text("library", library.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tile_at_most_once_through_the_api_and_a_cap_too_low_is_422_with_the_numbers() {
    let app = spawn_app().await;
    // 6 x 6 cells from a library of 41 tiles, each used once at most.
    let id = app
        .submit(
            form(astronaut())
                .text("cells", "6")
                .text("tile_size", "8")
                .text("max_uses", "1"),
        )
        .await;
    let job = app.wait_until_finished(&id).await;
    assert_eq!(job["state"], "done", "{job:#}");
    assert_eq!(job["quality"]["max_uses"], 1, "{job:#}");
    assert_eq!(job["params"]["max_uses"], 1);

    // 12 x 12 cells cannot be filled by 41 tiles used at most 3 times.
    let res = app
        .post_job(
            form(astronaut())
                .text("cells", "12")
                .text("tile_size", "8")
                .text("max_uses", "3"),
        )
        .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["code"], "too_few_uses");
    let message = body["error"]["message"].as_str().unwrap();
    for number in [
        "144 cells",
        "41 pictures",
        "up to 4 times",
        "123 cells",
        "48 pictures",
    ] {
        assert!(message.contains(number), "{number}: {message}");
    }
}

/// `min_uses=1` puts every tile of the library in the mosaic, and the placements say where; a
/// grid too small for every tile is 422 `too_few_cells`, naming the cells across that fit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_photo_in_through_the_api_and_a_grid_too_small_is_422_with_the_numbers() {
    let app = spawn_app().await;
    let id = app
        .submit(
            form(astronaut())
                .text("cells", "10")
                .text("tile_size", "8")
                .text("min_uses", "1")
                .text("max_uses", "3"),
        )
        .await;
    let job = app.wait_until_finished(&id).await;
    assert_eq!(job["state"], "done", "{job:#}");
    let quality = &job["quality"];
    assert_eq!(quality["distinct"], quality["library_tiles"], "{job:#}");
    assert!(quality["min_uses"].as_u64().unwrap() >= 1, "{job:#}");
    assert!(quality["max_uses"].as_u64().unwrap() <= 3, "{job:#}");
    assert_eq!(job["params"]["min_uses"], 1);
    let placements = app.get_placements(&id).await;
    assert_eq!(
        placements["tiles"].as_array().unwrap().len() as u64,
        quality["library_tiles"].as_u64().unwrap()
    );

    // 41 tiles twice each need 82 cells; 6 x 6 has 36.
    let res = app
        .post_job(
            form(astronaut())
                .text("cells", "6")
                .text("tile_size", "8")
                .text("min_uses", "2"),
        )
        .await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["code"], "too_few_cells", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    for said in [
        "41 pictures",
        "82 cells",
        "36 (6 x 6)",
        "about 10 cells across",
    ] {
        assert!(message.contains(said), "{said}: {message}");
    }
    // Over the cap: a request that contradicts itself.
    let res = app
        .post_job(
            form(astronaut())
                .text("min_uses", "3")
                .text("max_uses", "2"),
        )
        .await;
    assert_refused(res, StatusCode::UNPROCESSABLE_ENTITY, "out_of_range").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn done_is_never_seen_without_the_quality_figures_and_the_job_says_how_it_was_made() {
    let app = spawn_app().await;
    for _ in 0..2 {
        let id = app
            .submit(job_form(astronaut()).text("background", "auto"))
            .await;
        // Polled, so that any view between the states would be seen.
        let job = crate::support::wait_for(std::time::Duration::from_secs(120), async || {
            let job: Value = app.get_job(&id).await.json().await.unwrap();
            assert_ne!(job["state"], "failed", "{job:#}");
            if job["state"] == "done" {
                Ok(job)
            } else {
                Err(format!("{job:#}"))
            }
        })
        .await;
        assert!(job["quality"].is_object(), "done without quality: {job:#}");
        // As asked and as resolved.
        assert_eq!(job["params"]["grid"], "cells");
        assert_eq!(job["params"]["cells"], 12);
        assert_eq!(job["params"]["background"], "auto");
        let resolved = &job["resolved"];
        assert_eq!(
            (resolved["cols"].as_u64(), resolved["rows"].as_u64()),
            (Some(12), Some(12))
        );
        assert_eq!(
            (resolved["width"].as_u64(), resolved["height"].as_u64()),
            (Some(96), Some(96))
        );
        let page = app.get(&format!("/jobs/{id}")).await.text().await.unwrap();
        for shown in [
            "Settings",
            "12 cells across, 12 rows",
            "96 x 96 px",
            "Use each tile at most",
        ] {
            assert!(page.contains(shown), "the job page lacks {shown:?}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tall_photo_with_the_defaults_gets_a_mosaic_of_sensible_size() {
    let app = spawn_app_with(test_settings(), false).await;
    let res = app.post_job(form(png(100, 20_000))).await;
    assert_eq!(res.status(), StatusCode::ACCEPTED);
    let job: Value = res.json().await.unwrap();
    assert_eq!(job["params"]["grid"], "auto");
    let (w, h) = (
        job["output"]["width"].as_u64().unwrap(),
        job["output"]["height"].as_u64().unwrap(),
    );
    assert!(w * h <= 200_000_000, "{w} x {h}");
    // A square photo keeps the grid it always had.
    let res = app.post_job(form(astronaut())).await;
    let job: Value = res.json().await.unwrap();
    assert_eq!(job["resolved"]["cols"], 128, "{job:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mosaic_over_the_size_made_unasked_needs_allow_large() {
    let settings = WebSettings {
        limits: JobLimits {
            large_output_pixels: 100_000,
            ..JobLimits::default()
        },
        ..test_settings()
    };
    let app = spawn_app_with(settings, false).await;
    let big = || {
        form(astronaut())
            .text("cells", "24")
            .text("tile_size", "16")
    };
    assert_refused(
        app.post_job(big()).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "large_output",
    )
    .await;
    let res = app.post_job(big().text("allow_large", "true")).await;
    assert_eq!(res.status(), StatusCode::ACCEPTED);
    let job: Value = res.json().await.unwrap();
    assert_eq!(job["params"]["allow_large"], true);
    // Left to choose, the grid stays within the size made unasked.
    let res = app
        .post_job(form(astronaut()).text("tile_size", "16"))
        .await;
    assert_eq!(res.status(), StatusCode::ACCEPTED);
    let job: Value = res.json().await.unwrap();
    let pixels =
        job["output"]["width"].as_u64().unwrap() * job["output"]["height"].as_u64().unwrap();
    assert!(pixels <= 100_000, "{job:#}");
}

/// The web role and the controller size a job under the same limits: raised above the engine's
/// default, a job over that default is sized and planned, not refused at planning.
#[test]
fn limits_above_the_engines_default_hold_in_the_plan_options() {
    let limits = JobLimits {
        max_output_pixels: 4 << 30,
        large_output_pixels: 4 << 30,
        ..JobLimits::default()
    };
    let spec = JobSpec::cells(
        LibraryRef {
            id: "emoji".into(),
            version: 1,
        },
        256,
        160,
        8,
    );
    // 40,960 x 40,960 px: about 1.7 gigapixels, over the engine's default of one.
    let size = spec.size(1000, 1000, &limits).unwrap();
    assert!(
        u64::from(size.output.width) * u64::from(size.output.height)
            > tessera_engine::DEFAULT_MAX_OUTPUT_PIXELS
    );
    let options = spec.plan_options(1000, 1000, &limits);
    assert_eq!(options.max_output_pixels, limits.max_output_pixels);
    assert_eq!(options.grid, EngineGrid::Cells(160));
    Sizing::new(1000, 1000, &options).unwrap();
    // Under the defaults the same job is refused at the door, with the reason.
    let err = spec.size(1000, 1000, &JobLimits::default()).unwrap_err();
    assert_eq!(err.code(), "output_too_large");
}

/// The floor that kept the planner busy for minutes (every tile 100 times, none within 16
/// cells of itself, on a 720-across grid of a 600-tile library) is refused at the door, from
/// the numbers alone, and nothing is queued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_floor_the_planner_cannot_place_in_bounded_work_is_refused_at_the_door() {
    let app = spawn_app().await;
    let mut form = reqwest::multipart::Form::new().text("name", "Six hundred");
    for i in 0..600u32 {
        let colour = image::Rgb([
            (i % 10 * 25) as u8,
            (i / 10 % 10 * 25) as u8,
            (i / 100 * 40) as u8,
        ]);
        let mut png = Vec::new();
        image::RgbImage::from_pixel(8, 8, colour)
            .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
            .unwrap();
        form = form.part(
            "files",
            reqwest::multipart::Part::bytes(png).file_name(format!("t{i}.png")),
        );
    }
    let res = app.post_library(form).await;
    assert_eq!(res.status(), StatusCode::CREATED, "{:?}", res.text().await);
    let res = app
        .post_job(
            form_for(astronaut(), "six-hundred")
                .text("cells", "720")
                .text("tile_size", "4")
                .text("min_uses", "100")
                .text("repeat_radius", "16"),
        )
        .await;
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["code"], "too_few_cells", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("more than the planner places"),
        "{message}"
    );
}

/// `every_tile`: every picture of the library in the mosaic where the grid has a cell for each
/// (a floor of one use each), and, where it has not, the mosaic made all the same with a note
/// saying that not every picture is in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tile_puts_each_picture_in_where_there_is_room_and_says_so_where_not() {
    let app = spawn_app().await;
    let room = app
        .submit(job_form(astronaut()).text("every_tile", "true"))
        .await;
    let done = app.wait_until_finished(&room).await;
    assert_eq!(done["state"], "done", "{done:#}");
    let quality = &done["quality"];
    assert!(quality["min_uses"].as_u64() >= Some(1), "{done:#}");
    assert_eq!(quality["distinct"], quality["library_tiles"], "{done:#}");
    assert_eq!(done["adapted"], serde_json::json!([]), "{done:#}");

    // 4 x 4 cells for a library of more pictures than that.
    let crowded = app
        .submit(crate::support::sized_job_form(astronaut(), 8, 4, 1).text("every_tile", "true"))
        .await;
    let done = app.wait_until_finished(&crowded).await;
    assert_eq!(done["state"], "done", "{done:#}");
    assert_eq!(done["quality"]["min_uses"], 0, "{done:#}");
    let adapted = done["adapted"].to_string();
    assert!(
        adapted.contains("not every picture is in the mosaic"),
        "{done:#}"
    );
}
