//! The static assets (`static/`), compiled into the binary.

use crate::api_error::{ApiError, ApiResult};
use actix_web::http::header;
use actix_web::{HttpResponse, web};
use tessera_shared::error_code::ErrorCode;

/// The static assets, compiled in: name, content type, bytes.
pub(super) const ASSETS: [(&str, &str, &str); 6] = [
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
        "jobs.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../static/jobs.js"),
    ),
];

pub(super) async fn asset(path: web::Path<String>) -> ApiResult<HttpResponse> {
    serve_asset(&path)
}

pub(super) fn serve_asset(name: &str) -> ApiResult<HttpResponse> {
    let (_, content_type, body) = ASSETS
        .iter()
        .find(|(n, _, _)| *n == name)
        .ok_or_else(|| ApiError::not_found(ErrorCode::NotFound, format!("no asset {name:?}")))?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, *content_type))
        .insert_header((header::CACHE_CONTROL, "public, max-age=300"))
        .body(*body))
}
