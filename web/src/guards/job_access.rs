//! Who may see a job: anyone with its id, unless its owner made it private; then its owner (or
//! the operator) and whoever holds its share link. The link's secret comes as `?share=`, as
//! `X-Share-Token`, or as the cookie the job's page sets when opened from the link. A private
//! job's answers are cached by the browser alone.

use actix_web::cookie::{Cookie, SameSite};
use actix_web::http::StatusCode;
use actix_web::{HttpMessage, HttpRequest, web};
use serde::Deserialize;
use tessera_shared::error_code::ErrorCode;
use tessera_shared::jobs::JobRecord;
use uuid::Uuid;

use crate::api_error::{ApiError, ApiResult};
use crate::guards::auth::{PrivateAnswer, same_secret};
use crate::guards::client::manages_job;

/// The header that carries a share link's secret (or `?share=`).
pub const SHARE_HEADER: &str = "X-Share-Token";

/// The cookie a private job's page sets when opened from its share link.
pub(crate) fn share_cookie_name(job: Uuid) -> String {
    format!("tessera_share_{}", job.simple())
}

/// The share secret a request carries for `job`, from the query, the header or the cookie.
fn presented_secret(req: &HttpRequest, job: Uuid) -> Option<String> {
    let from_query = web::Query::<ShareQuery>::from_query(req.query_string())
        .ok()
        .and_then(|q| q.into_inner().share);
    from_query
        .or_else(|| {
            req.headers()
                .get(SHARE_HEADER)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        })
        .or_else(|| {
            req.cookie(&share_cookie_name(job))
                .map(|c| c.value().to_string())
        })
}

/// Whether the request holds `record`'s share link.
pub(crate) fn holds_share_link(req: &HttpRequest, record: &JobRecord) -> bool {
    let Some(token) = &record.sharing.token else {
        return false;
    };
    presented_secret(req, record.id).is_some_and(|t| same_secret(t.as_bytes(), token.as_bytes()))
}

/// Refuses (403 `job_private`) a request that may not see `record`: a private job is seen by its
/// owner and by whoever holds its share link. A private job's request is marked, so that its
/// answer is cached by the browser alone.
pub(crate) fn check_readable(req: &HttpRequest, record: &JobRecord) -> ApiResult<()> {
    if !record.sharing.private {
        return Ok(());
    }
    req.extensions_mut().insert(PrivateAnswer);
    if manages_job(req, record)? || holds_share_link(req, record) {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::FORBIDDEN,
        ErrorCode::JobPrivate,
        "this mosaic is private: open it from the link its owner shared",
    ))
}

/// `?share=`: a share link's secret.
#[derive(Debug, Deserialize)]
pub struct ShareQuery {
    pub share: Option<String>,
}

/// The cookie that lets a private job's page, opened from its share link, read the rest of
/// the job (its JSON, tiles, cells) without the secret in each address.
pub(crate) fn share_cookie(record: &JobRecord) -> Option<Cookie<'static>> {
    let token = record.sharing.token.clone()?;
    Some(
        Cookie::build(share_cookie_name(record.id), token)
            .path("/")
            .http_only(true)
            .same_site(SameSite::Lax)
            .finish(),
    )
}
