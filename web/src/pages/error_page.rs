//! The error page: what a browser is shown for an error answer (the API answers JSON).

use super::words::capitalised;
use crate::api_error::ApiError;
use actix_web::HttpResponse;
use actix_web::http::header;
use askama::Template;

#[derive(Template)]
#[template(path = "error.html")]
pub(super) struct ErrorPage {
    title: String,
    message: String,
}

/// Errors answered to a browser (a request that accepts HTML, outside the API) as a page in
/// words, with the status kept; the API's errors stay JSON.
pub fn error_page<B>(
    res: actix_web::dev::ServiceResponse<B>,
) -> actix_web::Result<actix_web::middleware::ErrorHandlerResponse<B>> {
    use actix_web::middleware::ErrorHandlerResponse;
    let request = res.request();
    let wants_html = request
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/html"));
    let path = request.path();
    let is_api = path.starts_with("/api/") || path.starts_with("/static/");
    let json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !wants_html || is_api || !json {
        return Ok(ErrorHandlerResponse::Response(res.map_into_left_body()));
    }
    let status = res.status();
    let error = res
        .response()
        .error()
        .and_then(|e| e.as_error::<ApiError>());
    let (title, message) = match status.as_u16() {
        404 => (
            "Not found".to_string(),
            match error {
                Some(e) if e.code != "no_route" => format!("{}.", capitalised(&e.message)),
                _ => format!("There is no page at {path}."),
            },
        ),
        500..=599 => (
            "Something went wrong".to_string(),
            error.map_or_else(
                || "The server could not answer. Try again in a moment.".to_string(),
                |e| format!("{}. Try again in a moment.", capitalised(&e.message)),
            ),
        ),
        _ => (
            status.canonical_reason().unwrap_or("Error").to_string(),
            error.map_or_else(String::new, |e| format!("{}.", capitalised(&e.message))),
        ),
    };
    let body = ErrorPage { title, message }
        .render()
        .unwrap_or_else(|_| "<!doctype html><title>Error</title><p>Error</p>".into());
    let (req, res) = res.into_parts();
    let mut html = HttpResponse::build(res.status());
    for (name, value) in res.headers() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            html.append_header((name.clone(), value.clone()));
        }
    }
    let html = html
        .insert_header((header::CONTENT_TYPE, "text/html; charset=utf-8"))
        .body(body);
    Ok(ErrorHandlerResponse::Response(
        actix_web::dev::ServiceResponse::new(req, html).map_into_right_body(),
    ))
}
