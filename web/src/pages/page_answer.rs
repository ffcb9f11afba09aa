//! A page's answer: its template rendered as HTML that no cache keeps.

use actix_web::HttpResponse;
use actix_web::http::header;
use askama::Template;

use crate::api_error::{ApiError, ApiResult};

/// The page `template` renders.
pub(super) fn page(template: &impl Template) -> ApiResult<HttpResponse> {
    let body = template.render().map_err(ApiError::internal)?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "text/html; charset=utf-8"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .body(body))
}
