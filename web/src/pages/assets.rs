//! The static assets (`static/`), compiled into the binary.

use crate::api_error::{ApiError, ApiResult};
use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use tessera_shared::error_code::ErrorCode;

/// The static assets, compiled in: name, content type, bytes.
pub(super) const ASSETS: [(&str, &str, &str); 13] = [
    (
        "favicon.svg",
        "image/svg+xml",
        include_str!("../../../static/favicon.svg"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("../../../static/style.css"),
    ),
    (
        "home.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../static/home.js"),
    ),
    (
        "job.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../static/job.js"),
    ),
    (
        "libraries.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../static/libraries.js"),
    ),
    (
        "new_event.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../static/new_event.js"),
    ),
    (
        "photos.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../static/photos.js"),
    ),
    (
        "contribute.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../static/contribute.js"),
    ),
    (
        "event.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../static/event.js"),
    ),
    (
        "printer.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../static/printer.js"),
    ),
    (
        "wall.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../static/wall.js"),
    ),
    (
        "jobs.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../static/jobs.js"),
    ),
    (
        "share.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../static/share.js"),
    ),
];

pub(super) async fn asset(req: HttpRequest, path: web::Path<String>) -> ApiResult<HttpResponse> {
    serve_asset(&req, &path)
}

/// The asset `name`, gzipped for a browser that takes it (a phone on a slow network gets the
/// scripts in a third of the bytes).
pub(super) fn serve_asset(req: &HttpRequest, name: &str) -> ApiResult<HttpResponse> {
    let at = ASSETS
        .iter()
        .position(|(n, _, _)| *n == name)
        .ok_or_else(|| ApiError::not_found(ErrorCode::NotFound, format!("no asset {name:?}")))?;
    let (_, content_type, body) = ASSETS[at];
    let gzip = req
        .headers()
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|e| e.trim().starts_with("gzip")));
    let mut response = HttpResponse::Ok();
    response
        .insert_header((header::CONTENT_TYPE, content_type))
        .insert_header((header::CACHE_CONTROL, "public, max-age=300"))
        .insert_header((header::VARY, "Accept-Encoding"));
    if gzip {
        response.insert_header((header::CONTENT_ENCODING, "gzip"));
        return Ok(response.body(gzipped()[at].clone()));
    }
    Ok(response.body(body))
}

/// Every asset gzipped, once.
fn gzipped() -> &'static [bytes::Bytes] {
    static GZIPPED: std::sync::OnceLock<Vec<bytes::Bytes>> = std::sync::OnceLock::new();
    GZIPPED.get_or_init(|| {
        ASSETS
            .iter()
            .map(|(_, _, body)| {
                use std::io::Write;
                let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
                // Writing to a Vec cannot fail.
                let _ = gz.write_all(body.as_bytes());
                bytes::Bytes::from(gz.finish().unwrap_or_default())
            })
            .collect()
    })
}
