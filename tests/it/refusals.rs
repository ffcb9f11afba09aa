//! Every bad input the front end can be sent, one test each: the refusal's status, its stable
//! code, a message that says what is wrong in plain words, nothing stored or queued for it, and
//! a server that still answers afterwards. The app runs without workers, so the request queue
//! holds exactly what the broker sent.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::multipart::{Form, Part};
use serde_json::Value;
use tessera_shared::messages::ImageRequest;
use tessera_shared::storage::BlobStoreExt;
use tessera_web::WebSettings;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use uuid::Uuid;

use crate::support::{
    TestApp, astronaut, job_form, png, png_bomb_header, spawn_app_with, test_settings, tiles,
    zip_of,
};

const UPLOAD_LIMIT: u64 = 64 * 1024;
const UNPACKED_LIMIT: u64 = 1024 * 1024;

/// Small limits, so the tests that pass them stay small.
fn settings() -> WebSettings {
    WebSettings {
        max_upload_bytes: UPLOAD_LIMIT,
        max_input_pixels: 1_000_000,
        max_library_uncompressed_bytes: UNPACKED_LIMIT,
        limits: tessera_shared::spec::JobLimits {
            max_output_pixels: 1_000_000,
            ..Default::default()
        },
        ..test_settings()
    }
}

async fn app() -> TestApp {
    spawn_app_with(settings(), false).await
}

/// What a refused request must leave untouched: every input, job record, client index and
/// library blob, and the depth of the request queue.
#[derive(Debug, PartialEq)]
struct Stored {
    blobs: Vec<String>,
    queued: u64,
}

async fn stored(app: &TestApp) -> Stored {
    let mut blobs = Vec::new();
    for prefix in ["imageinput/", "jobs/", "clients/", "libraries/"] {
        let listed = app.platform.blobs.list_all(prefix).await.unwrap();
        blobs.extend(listed.into_iter().map(|b| b.key));
    }
    blobs.sort();
    let queued = app.platform.queue::<ImageRequest>().depth().await.unwrap();
    Stored { blobs, queued }
}

/// Asserts the refusal (status, code, and a message holding each of `says`), that nothing was
/// stored or queued since `before`, and that the server still answers.
async fn assert_refused(
    app: &TestApp,
    before: &Stored,
    res: reqwest::Response,
    status: StatusCode,
    code: &str,
    says: &[&str],
) {
    let got = res.status();
    let content_type = res
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let text = res.text().await.unwrap();
    assert_eq!(got, status, "{text}");
    assert_eq!(content_type, "application/json", "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["error"]["code"], code, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    for words in says {
        assert!(
            message.to_lowercase().contains(&words.to_lowercase()),
            "the message {message:?} should say {words:?}"
        );
    }
    assert_eq!(
        &stored(app).await,
        before,
        "a refused request stored something"
    );
    assert_still_serving(app).await;
}

async fn assert_still_serving(app: &TestApp) {
    assert_eq!(app.healthz().await.status(), StatusCode::OK);
    assert_eq!(app.get_libraries().await.status(), StatusCode::OK);
}

fn image(bytes: Vec<u8>, name: &str) -> Part {
    Part::bytes(bytes).file_name(name.to_string())
}

/// A submission of `bytes` with the defaults for everything but the library.
fn with_image(bytes: Vec<u8>) -> Form {
    Form::new()
        .part("image", image(bytes, "x.png"))
        .text("library", "emoji")
}

/// Submits `form` and expects the refusal described.
async fn refuse_job(form: Form, status: StatusCode, code: &str, says: &[&str]) {
    let app = app().await;
    let before = stored(&app).await;
    let res = app.post_job(form).await;
    assert_refused(&app, &before, res, status, code, says).await;
}

fn library_form(archive: Vec<u8>) -> Form {
    Form::new()
        .text("name", "bad")
        .part("file", Part::bytes(archive).file_name("bad.zip"))
}

/// Sends a library upload and expects the refusal described; no library is created.
async fn refuse_library(form: Form, status: StatusCode, code: &str, says: &[&str]) {
    let app = app().await;
    let before = stored(&app).await;
    let res = app.post_library(form).await;
    assert_refused(&app, &before, res, status, code, says).await;
    assert_eq!(app.get_library("bad").await.status(), StatusCode::NOT_FOUND);
}

// ---- the target image ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_is_not_an_image_is_415_not_an_image() {
    refuse_job(
        with_image(b"just some text, honestly".to_vec()),
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "not_an_image",
        &["not an image", "PNG"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncated_image_is_422_corrupt_image() {
    let whole = png(200, 200);
    refuse_job(
        with_image(whole[..whole.len() / 2].to_vec()),
        StatusCode::UNPROCESSABLE_ENTITY,
        "corrupt_image",
        &["corrupt or truncated"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_with_garbled_pixel_data_is_422_corrupt_image() {
    // A whole file, every chunk present, but the compressed pixels overwritten with noise.
    let mut bytes = png(64, 64);
    let idat = bytes.windows(4).position(|w| w == b"IDAT").unwrap();
    let end = bytes.len() - 12 - 12; // before the IDAT's CRC and the IEND chunk
    for (i, b) in bytes[idat + 6..end].iter_mut().enumerate() {
        *b = (i as u32).wrapping_mul(2_654_435_761).to_be_bytes()[0];
    }
    refuse_job(
        with_image(bytes),
        StatusCode::UNPROCESSABLE_ENTITY,
        "corrupt_image",
        &["corrupt"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_file_is_400_empty_upload() {
    refuse_job(
        with_image(Vec::new()),
        StatusCode::BAD_REQUEST,
        "empty_upload",
        &["image file is empty"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decompression_bomb_is_422_image_too_large_before_any_pixel_is_decoded() {
    refuse_job(
        with_image(png_bomb_header()),
        StatusCode::UNPROCESSABLE_ENTITY,
        "image_too_large",
        &["60000 x 60000 pixels", "over the limit of 1000000 pixels"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_format_we_do_not_read_is_415_unsupported_format() {
    // A Photoshop header: recognised, but not a format the service reads.
    refuse_job(
        with_image(b"8BPS\0\x01\0\0\0\0\0\0\0\x03\0\0\0\x10".to_vec()),
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_format",
        &[
            "Photoshop (PSD) files are not read",
            "export the photo as JPEG",
            "HEIC",
        ],
    )
    .await;
}

/// Writes one HTTP/1.1 chunk; false once the server has closed the connection.
async fn write_chunk(stream: &mut tokio::net::TcpStream, data: &[u8]) -> bool {
    let mut chunk = format!("{:x}\r\n", data.len()).into_bytes();
    chunk.extend_from_slice(data);
    chunk.extend_from_slice(b"\r\n");
    stream.write_all(&chunk).await.is_ok()
}

/// Reads one HTTP/1.1 response with a Content-Length: its status and body.
async fn read_response(stream: &mut tokio::net::TcpStream) -> (u16, Vec<u8>) {
    let mut buf = Vec::new();
    let mut piece = [0u8; 8192];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = stream.read(&mut piece).await.unwrap();
        assert!(n > 0, "the connection closed before a response");
        buf.extend_from_slice(&piece[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let status: u16 = head.split(' ').nth(1).unwrap().parse().unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().unwrap())
        })
        .expect("a Content-Length");
    while buf.len() < head_end + length {
        let n = stream.read(&mut piece).await.unwrap();
        assert!(n > 0, "the connection closed mid-response");
        buf.extend_from_slice(&piece[..n]);
    }
    (status, buf[head_end..head_end + length].to_vec())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_over_the_limit_is_cut_off_mid_stream_with_413_upload_too_large() {
    // A chunked upload with no length announced: the server can only learn its size by reading.
    // It must stop reading and answer while the body is still arriving: a server that buffered
    // the whole upload could not answer before the last chunk, which is never sent here.
    let app = app().await;
    let before = stored(&app).await;
    let address = app.address.trim_start_matches("http://").to_string();
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let boundary = "tessera-test-boundary";
    let head = format!(
        "POST /api/v1/jobs HTTP/1.1\r\nHost: {address}\r\n\
         Content-Type: multipart/form-data; boundary={boundary}\r\n\
         Transfer-Encoding: chunked\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let fields = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"library\"\r\n\r\nemoji\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"image\"; filename=\"big.png\"\r\n\
         Content-Type: image/png\r\n\r\n"
    );
    assert!(write_chunk(&mut stream, fields.as_bytes()).await);
    // Sixty-five times the limit, and the body stays open: no closing boundary, no last chunk.
    let noise: Vec<u8> = (0..64 * 1024u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    for _ in 0..65 {
        if !write_chunk(&mut stream, &noise).await {
            break; // the server hung up: it stopped reading, which is allowed
        }
    }
    // A guard against hanging, not a timing assertion.
    let (status, body) = tokio::time::timeout(Duration::from_secs(60), read_response(&mut stream))
        .await
        .expect("no answer while the upload was still open: the server waits for the whole body");
    assert_eq!(status, 413, "{}", String::from_utf8_lossy(&body));
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["error"]["code"], "upload_too_large", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("over the upload limit of {UPLOAD_LIMIT} bytes")),
        "{message}"
    );
    drop(stream);
    assert_eq!(stored(&app).await, before);
    assert_still_serving(&app).await;
    // Uploads under the limit are still taken.
    let res = app.post_job(job_form(astronaut())).await;
    assert_eq!(res.status(), StatusCode::ACCEPTED);
}

// ---- the parameters ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_without_an_image_is_400_missing_parameter() {
    refuse_job(
        Form::new().text("library", "emoji"),
        StatusCode::BAD_REQUEST,
        "missing_parameter",
        &["image is required"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_without_a_library_is_400_missing_parameter_when_there_is_no_default() {
    refuse_job(
        Form::new().part("image", image(astronaut(), "a.png")),
        StatusCode::BAD_REQUEST,
        "missing_parameter",
        &["library is required"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parameters_out_of_range_are_400_out_of_range_naming_the_range() {
    let app = app().await;
    let before = stored(&app).await;
    for (name, value, says) in [
        ("tile_size", "1000", "tile_size must be"),
        ("cells", "0", "cells must be 1 to 4096, not 0"),
        ("slices", "0", "slices must be"),
        (
            "repeat_radius",
            "17",
            "repeat_radius must be 0 to 16, not 17",
        ),
        ("blend", "101", "blend must be 0 to 100, not 101"),
    ] {
        let res = app
            .post_job(with_image(astronaut()).text(name, value))
            .await;
        assert_refused(
            &app,
            &before,
            res,
            StatusCode::BAD_REQUEST,
            "out_of_range",
            &[says],
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parameters_of_the_wrong_type_are_400_invalid_parameter() {
    let app = app().await;
    let before = stored(&app).await;
    for (name, value, says) in [
        (
            "tile_size",
            "abc",
            "tile_size must be a whole number of pixels (16) or width x height (24x18), not \"abc\"",
        ),
        (
            "repeat_radius",
            "-1",
            "repeat_radius must be a whole number",
        ),
        ("blend", "0.5", "blend must be a whole number"),
        ("per_pixel", "maybe", "per_pixel must be true or false"),
        // As the OpenAPI document says: a boolean is `true` or `false`, a number is digits.
        ("per_pixel", "1", "per_pixel must be true or false"),
        ("per_pixel", "", "per_pixel must be true or false"),
        ("flip", "yes", "flip must be true or false, not \"yes\""),
        ("rotate", "1", "rotate must be true or false"),
        (
            "background",
            "black",
            "background: \"black\" is not library, auto or a colour as RRGGBB hex",
        ),
        ("background", "#12345", "background:"),
        ("cells", "", "cells must be a whole number, not \"\""),
    ] {
        let res = app
            .post_job(with_image(astronaut()).text(name, value))
            .await;
        assert_refused(
            &app,
            &before,
            res,
            StatusCode::BAD_REQUEST,
            "invalid_parameter",
            &[says],
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cells_and_per_pixel_together_are_400_conflicting_parameters() {
    refuse_job(
        with_image(astronaut())
            .text("cells", "10")
            .text("per_pixel", "true"),
        StatusCode::BAD_REQUEST,
        "conflicting_parameters",
        &["either cells or per_pixel"],
    )
    .await;
}

/// Adaptive tile sizes are checked as they enter: malformed or a side out of range is 400 (as a
/// tile size is), sizes that do not double, oblong tiles and a largest size whose squares alone
/// are more than the grid's tiles are 422, with per_pixel 400 conflicting_parameters; and the
/// output limit counts the adaptive mosaic, rounded up to whole largest squares.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adaptive_sizes_are_refused_clearly_where_they_enter() {
    let app = app().await;
    let before = stored(&app).await;
    // The fields sent, and the refusal: status, code and words of its message.
    type Case<'a> = (&'a [(&'a str, &'a str)], StatusCode, &'a str, &'a str);
    let cases: [Case; 12] = [
        (
            &[("adaptive", "8-32")],
            StatusCode::BAD_REQUEST,
            "invalid_parameter",
            "adaptive must be MIN..MAX",
        ),
        (
            &[("adaptive", "8..")],
            StatusCode::BAD_REQUEST,
            "invalid_parameter",
            "not \"8..\"",
        ),
        (
            &[("adaptive", "+8..16")],
            StatusCode::BAD_REQUEST,
            "invalid_parameter",
            "MIN..MAX",
        ),
        (
            &[("adaptive", "2..8")],
            StatusCode::BAD_REQUEST,
            "out_of_range",
            "4 to 256 pixels a side, not 2",
        ),
        (
            &[("adaptive", "8..512")],
            StatusCode::BAD_REQUEST,
            "out_of_range",
            "not 512",
        ),
        (
            &[("adaptive", "8..24")],
            StatusCode::UNPROCESSABLE_ENTITY,
            "adaptive_not_doubling",
            "doubled",
        ),
        (
            &[("adaptive", "32..8")],
            StatusCode::UNPROCESSABLE_ENTITY,
            "adaptive_not_doubling",
            "doubled",
        ),
        (
            &[("adaptive", "8..8")],
            StatusCode::UNPROCESSABLE_ENTITY,
            "adaptive_not_doubling",
            "doubled",
        ),
        (
            &[("adaptive", "8..32"), ("per_pixel", "true")],
            StatusCode::BAD_REQUEST,
            "conflicting_parameters",
            "adaptive or per_pixel",
        ),
        (
            &[("adaptive", "8..32"), ("tile_size", "24x18")],
            StatusCode::UNPROCESSABLE_ENTITY,
            "adaptive_not_square",
            "tile_size 24x18 is not square",
        ),
        // 4 cells of 64 px: 16 tiles, but 1,024 blocks of 8 px.
        (
            &[("adaptive", "4..8"), ("tile_size", "64"), ("cells", "4")],
            StatusCode::UNPROCESSABLE_ENTITY,
            "adaptive_too_coarse",
            "1024 blocks of 8 px already exceed the 16 tiles",
        ),
        // 992 x 992 px fits the limit of a million pixels; rounded up to squares of 256 px,
        // 1024 x 1024 does not.
        (
            &[("adaptive", "8..256"), ("tile_size", "16"), ("cells", "62")],
            StatusCode::UNPROCESSABLE_ENTITY,
            "output_too_large",
            "1024 x 1024",
        ),
    ];
    for (fields, status, code, says) in cases {
        let mut form = with_image(astronaut());
        for (name, value) in fields {
            form = form.text(*name, value.to_string());
        }
        let res = app.post_job(form).await;
        assert_refused(&app, &before, res, status, code, &[says]).await;
    }
    // The same uniform mosaic is accepted: the limit above was the adaptive rounding's.
    let res = app
        .post_job(
            with_image(astronaut())
                .text("tile_size", "16")
                .text("cells", "62"),
        )
        .await;
    assert_eq!(res.status(), StatusCode::ACCEPTED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_field_is_400_unknown_field() {
    refuse_job(
        with_image(astronaut()).text("colour", "red"),
        StatusCode::BAD_REQUEST,
        "unknown_field",
        &["unknown field \"colour\""],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_field_given_twice_is_400_duplicate_field() {
    refuse_job(
        with_image(astronaut()).text("library", "emoji"),
        StatusCode::BAD_REQUEST,
        "duplicate_field",
        &["\"library\" is given twice"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mosaic_over_the_output_limit_is_422_output_too_large() {
    refuse_job(
        with_image(astronaut())
            .text("per_pixel", "true")
            .text("tile_size", "64"),
        StatusCode::UNPROCESSABLE_ENTITY,
        "output_too_large",
        &[
            "limit",
            "limits.max_output_pixels",
            "TESSERA_LIMITS__MAX_OUTPUT_PIXELS",
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_id_that_is_not_a_uuid_is_400_invalid_client_id() {
    let app = app().await;
    let before = stored(&app).await;
    let res = app
        .client
        .post(app.url("/api/v1/jobs"))
        .header("x-client-id", "me")
        .multipart(job_form(astronaut()))
        .send()
        .await
        .unwrap();
    assert_refused(
        &app,
        &before,
        res,
        StatusCode::BAD_REQUEST,
        "invalid_client_id",
        &["X-Client-Id must be a UUID"],
    )
    .await;
}

// ---- the library a job names ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_library_is_422_unknown_library() {
    refuse_job(
        Form::new()
            .part("image", image(astronaut(), "a.png"))
            .text("library", "nope"),
        StatusCode::UNPROCESSABLE_ENTITY,
        "unknown_library",
        &["there is no library \"nope\""],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_library_too_small_for_the_repetition_radius_is_422_library_too_small() {
    let app = app().await;
    let tiles = app.platform.libraries().get("emoji").await.unwrap().tiles;
    // 12 x 12 cells with radius 16: every cell sees every other, so all 144 must differ.
    assert!(tiles < 144, "the fixture library has grown: {tiles} tiles");
    let before = stored(&app).await;
    let res = app
        .post_job(job_form(astronaut()).text("repeat_radius", "16"))
        .await;
    assert_refused(
        &app,
        &before,
        res,
        StatusCode::UNPROCESSABLE_ENTITY,
        "library_too_small",
        &[
            &format!("has {tiles} pictures"),
            "16 cells away",
            "12 x 12 grid",
            "at least 144 different pictures",
        ],
    )
    .await;
    // The same grid with a radius the library can serve is taken.
    let res = app
        .post_job(job_form(astronaut()).text("repeat_radius", "1"))
        .await;
    assert_eq!(res.status(), StatusCode::ACCEPTED);
}

// ---- jobs that do not exist ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_job_id_is_404_job_not_found_on_every_job_route() {
    let app = app().await;
    let before = stored(&app).await;
    let unknown = Uuid::new_v4();
    for path in [
        format!("/api/v1/jobs/{unknown}"),
        format!("/api/v1/jobs/{unknown}/result"),
        format!("/api/v1/jobs/{unknown}/events"),
        "/api/v1/jobs/not-a-uuid".to_string(),
    ] {
        let res = app.get(&path).await;
        assert_refused(
            &app,
            &before,
            res,
            StatusCode::NOT_FOUND,
            "job_not_found",
            &["no job"],
        )
        .await;
    }
}

// ---- the body's format ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_sent_as_json_is_415_unsupported_media_type_naming_multipart() {
    let app = app().await;
    let before = stored(&app).await;
    for (content_type, body) in [
        (Some("application/json"), r#"{"library": "emoji"}"#),
        (Some("application/json"), r#"{"library": "#),
        (Some("application/x-www-form-urlencoded"), "library=emoji"),
        (None, "library=emoji"),
    ] {
        let mut req = app.client.post(app.url("/api/v1/jobs")).body(body);
        if let Some(content_type) = content_type {
            req = req.header("content-type", content_type);
        }
        let res = req.send().await.unwrap();
        assert_refused(
            &app,
            &before,
            res,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            &["multipart/form-data"],
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_library_sent_as_json_is_415_unsupported_media_type_naming_multipart() {
    refuse_library_raw("application/json", r#"{"name": "bad"}"#).await;
}

async fn refuse_library_raw(content_type: &str, body: &'static str) {
    let app = app().await;
    let before = stored(&app).await;
    let res = app
        .client
        .post(app.url("/api/v1/libraries"))
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_refused(
        &app,
        &before,
        res,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        &["a library must be sent as multipart/form-data"],
    )
    .await;
}

#[tokio::test]
async fn malformed_json_is_400_malformed_json_on_any_json_route() {
    // No route of the API takes a JSON body today (uploads are multipart); the extractor
    // settings every route gets are checked here, on a route that takes one.
    use actix_web::{App, HttpResponse, test, web};
    let app = test::init_service(
        App::new()
            .configure(tessera_web::api_error::configure_extractors)
            .route(
                "/echo",
                web::post().to(|body: web::Json<Value>| async move {
                    HttpResponse::Ok().json(body.into_inner())
                }),
            ),
    )
    .await;
    let post = |content_type: &'static str, body: &'static str| {
        test::TestRequest::post()
            .uri("/echo")
            .insert_header(("content-type", content_type))
            .set_payload(body)
            .to_request()
    };
    let res = test::call_service(&app, post("application/json", r#"{"a": "#)).await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST.as_u16());
    let body: Value = test::read_body_json(res).await;
    assert_eq!(body["error"]["code"], "malformed_json", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("not valid JSON"), "{message}");

    let res = test::call_service(&app, post("text/plain", r#"{"a": 1}"#)).await;
    assert_eq!(res.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE.as_u16());
    let body: Value = test::read_body_json(res).await;
    assert_eq!(body["error"]["code"], "unsupported_media_type", "{body}");

    // The route still answers good JSON.
    let res = test::call_service(&app, post("application/json", r#"{"a": 1}"#)).await;
    assert_eq!(res.status(), StatusCode::OK.as_u16());
    let body: Value = test::read_body_json(res).await;
    assert_eq!(body["a"], 1);
}

// ---- library uploads ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zip_with_path_traversal_names_is_422_unsafe_archive() {
    for name in ["../evil.png", "tiles/../../evil.png", "/etc/evil.png"] {
        refuse_library(
            library_form(zip_of(&[
                ("good.png", tiles(1)[0].1.clone()),
                (name, tiles(1)[0].1.clone()),
            ])),
            StatusCode::UNPROCESSABLE_ENTITY,
            "unsafe_archive",
            &[&format!("{name:?} points outside the archive")],
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zip_bomb_is_422_archive_too_large() {
    // Compresses to a few kilobytes, unpacks past the 1 MiB limit.
    refuse_library(
        library_form(zip_of(&[(
            "big.png",
            vec![0u8; 2 * UNPACKED_LIMIT as usize],
        )])),
        StatusCode::UNPROCESSABLE_ENTITY,
        "archive_too_large",
        &[&format!("unpacks to more than {UNPACKED_LIMIT} bytes")],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zip_with_no_images_is_422_no_images() {
    refuse_library(
        library_form(zip_of(&[("notes.txt", b"no pictures".to_vec())])),
        StatusCode::UNPROCESSABLE_ENTITY,
        "no_images",
        &["holds no images"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_named_zip_that_is_not_one_is_422_bad_archive() {
    refuse_library(
        library_form(b"PK\x03\x04 not really a zip".to_vec()),
        StatusCode::UNPROCESSABLE_ENTITY,
        "bad_archive",
        &["archive cannot be read"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_library_without_a_name_is_400_missing_parameter() {
    refuse_library(
        Form::new().part("file", image(tiles(1)[0].1.clone(), "a.png")),
        StatusCode::BAD_REQUEST,
        "missing_parameter",
        &["name is required"],
    )
    .await;
}

// ---- the pages ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upload_forms_carry_their_limits_so_the_page_refuses_a_file_too_large() {
    // A browser sending a file far over the limit may see the connection close before the 413
    // arrives: the pages' scripts compare the file's size with the form's limit first.
    let app = app().await;
    let settings = settings();
    for (path, limit) in [
        ("/", settings.max_upload_bytes),
        ("/libraries", settings.max_library_upload_bytes),
    ] {
        let html = app.get(path).await.text().await.unwrap();
        assert!(
            html.contains(&format!("data-max-upload=\"{limit}\"")),
            "{path} does not carry its upload limit"
        );
    }
    let home = app.get("/static/home.js").await.text().await.unwrap();
    assert!(home.contains("over the upload limit"), "{home}");
    let libraries = app.get("/static/libraries.js").await.text().await.unwrap();
    assert!(libraries.contains("over the upload limit"), "{libraries}");
}

/// A PNG of `side` x `side` black pixels that really decodes to that: a few hundred kilobytes
/// for 8000 x 8000 (192 MB of pixels), written row by row.
fn chunk(out: &mut Vec<u8>, kind: &[u8], data: &[u8]) {
    let mut crc = flate2::Crc::new();
    crc.update(kind);
    crc.update(data);
    out.extend((data.len() as u32).to_be_bytes());
    out.extend(kind);
    out.extend(data);
    out.extend(crc.sum().to_be_bytes());
}

/// A black RGB PNG that declares `side` x `side` pixels and holds `rows` rows of them: with
/// one row, a decode bomb's header; with all, an image that inflates to `side`² x 3 bytes.
fn png_of_black_rows(side: u32, rows: u32) -> Vec<u8> {
    use std::io::Write;
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut ihdr = Vec::new();
    ihdr.extend(side.to_be_bytes());
    ihdr.extend(side.to_be_bytes());
    ihdr.extend([8, 2, 0, 0, 0]);
    chunk(&mut out, b"IHDR", &ihdr);
    let mut idat = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    let row = vec![0u8; 1 + side as usize * 3];
    for _ in 0..rows {
        idat.write_all(&row).unwrap();
    }
    chunk(&mut out, b"IDAT", &idat.finish().unwrap());
    chunk(&mut out, b"IEND", &[]);
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tile_that_declares_a_huge_image_is_skipped_with_the_reason() {
    let app = spawn_app_with(test_settings(), false).await;
    let huge = png_of_black_rows(20_000, 1);
    assert!(huge.len() < 512 * 1024, "{} bytes", huge.len());
    let mut entries: Vec<(String, Vec<u8>)> = tiles(30);
    entries.push(("huge.png".into(), huge));
    let refs: Vec<(&str, Vec<u8>)> = entries
        .iter()
        .map(|(n, b)| (n.as_str(), b.clone()))
        .collect();
    let res = app.post_library(library_form(zip_of(&refs))).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let created: serde_json::Value = res.json().await.unwrap();
    let skipped = created["report"]["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{created}");
    assert_eq!(skipped[0]["name"], "huge.png");
    let reason = skipped[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("20000x20000") && reason.contains("200 megapixels"),
        "{reason}"
    );
    assert_eq!(created["library"]["tiles"], 30, "{created}");
}

#[test]
fn tiles_that_decode_to_huge_images_are_read_in_bounded_memory() {
    // A PNG of 8000 x 8000 pixels, 190 kB that inflate to 192 MB, is a tile as a camera's PNG
    // is: read a row at a time and reduced as it is read, never whole. Twenty of them in a
    // folder indexed by a process of its own. Its peak memory is the high
    // water mark of its own address space (VmHWM), read while it runs: that mark starts afresh
    // at exec, whereas the peak wait4 reports also counts the test process it was spawned from
    // (a posix_spawn child shares its parent's memory until exec), which grows with the tests
    // running beside this one.
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in tiles(30) {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    let huge = png_of_black_rows(8000, 8000);
    for i in 0..20 {
        std::fs::write(dir.path().join(format!("huge-{i:02}.png")), &huge).unwrap();
    }
    let out = dir.path().join("index.tsl");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["library", "index"])
        .arg(dir.path())
        .arg("-o")
        .arg(&out)
        .env("TESSERA_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0u64;
    let status = loop {
        // The mark only rises, so the last reading before the process ends is its peak (to
        // within the polling interval).
        if let Ok(text) = std::fs::read_to_string(&status_file)
            && let Some(kib) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            peak_kib = peak_kib.max(kib);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    assert!(status.success(), "{status}");
    assert!(out.exists());
    assert!(peak_kib > 0, "the indexer's memory was read");
    let peak_mib = peak_kib / 1024;
    assert!(peak_mib < 120, "peak resident memory {peak_mib} MiB");
}
