//! Sharing a job on purpose. A job is readable by its id, so API clients and links keep working;
//! its owner may make it private: then its page, JSON, result, tiles, cells, events and
//! placements answer 403 `job_private` to anyone but the owner (or the operator) and whoever
//! holds its share link, which can view and find but not change or delete. The link's secret
//! comes as `?share=`, as `X-Share-Token`, or as the cookie the job's page sets when opened
//! from the link. A private job's answers are cached by the browser alone.

use actix_web::cookie::{Cookie, SameSite};
use actix_web::http::{StatusCode, header};
use actix_web::{HttpMessage, HttpRequest, HttpResponse, web};
use serde::{Deserialize, Serialize};
use tessera_shared::error_code::ErrorCode;
use tessera_shared::jobs::{JobRecord, Sharing};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::api::requested_job::RequestedJob;
use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;
use crate::guards::auth::same_secret;
use crate::guards::client::manages_job;

/// The header that carries a share link's secret (or `?share=`).
pub const SHARE_HEADER: &str = "X-Share-Token";

/// Marks a request for a private job: its answer is cached by the browser alone.
#[derive(Clone, Copy)]
pub(crate) struct PrivateJob;

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
    req.extensions_mut().insert(PrivateJob);
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

/// Whether a job is private.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SharingChange {
    /// `true`: only the owner and holders of the share link see the job; `false`: anyone with
    /// its id, as a new job.
    pub private: bool,
}

/// A job's sharing, as its owner sees it.
#[derive(Debug, Serialize, ToSchema)]
pub struct SharingView {
    pub private: bool,
    /// The job's page with the share link's secret: it views and finds, but does not change
    /// or delete (a private job's only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub share_url: Option<String>,
}

impl SharingView {
    fn of(record: &JobRecord) -> Self {
        SharingView {
            private: record.sharing.private,
            share_url: record
                .sharing
                .token
                .as_ref()
                .map(|t| format!("/jobs/{}?share={t}", record.id)),
        }
    }
}

/// Make a job private, or readable by its id again.
///
/// Only the client that submitted the job (or the key it was submitted with, or the operator's)
/// may change it: 403 not_your_job otherwise. Making a job private gives it a share link, kept
/// while it stays private (asked again, the same link); making it readable again drops the link.
#[utoipa::path(
    post,
    path = "/api/v1/jobs/{id}/sharing",
    operation_id = "share_job",
    tag = "jobs",
    params(
        ("id" = Uuid, Path, description = "The job's id"),
        ("X-Client-Id" = Option<Uuid>, Header, nullable = false, description = "The client that submitted the job (or its tessera_client cookie)."),
    ),
    request_body(content = SharingChange, content_type = "application/json"),
    responses(
        (status = 200, description = "The job's sharing", body = SharingView),
        crate::api::error_sets::ChangeErrors,
    ),
)]
pub async fn change(
    req: HttpRequest,
    job: RequestedJob,
    body: web::Json<SharingChange>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    job.check_managed_by(&req, "share")?;
    let private = body.private;
    let record = state
        .platform
        .jobs()
        .update(job.id, |r| {
            let sharing = if private {
                Sharing {
                    private: true,
                    token: r.sharing.token.clone().or_else(|| {
                        Some(format!(
                            "{}{}",
                            Uuid::new_v4().simple(),
                            Uuid::new_v4().simple()
                        ))
                    }),
                }
            } else {
                Sharing::default()
            };
            let changed = r.sharing != sharing;
            r.sharing = sharing;
            changed
        })
        .await?;
    state.cell_maps.forget(job.id);
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(SharingView::of(&record)))
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
