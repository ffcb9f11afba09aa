//! Sharing a job on purpose. A job is readable by its id, so API clients and links keep working;
//! its owner may make it private: then its page, JSON, result, tiles, cells, events and
//! placements answer 403 `job_private` to anyone but the owner (or the operator) and whoever
//! holds its share link, which can view and find but not change or delete. Who may see a job is
//! checked by `guards::job_access`.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use serde::{Deserialize, Serialize};
use tessera_shared::jobs::{JobRecord, Sharing};
use utoipa::ToSchema;

use crate::api::requested_job::RequestedJob;
use crate::api_error::ApiResult;
use crate::app_state::AppState;
use crate::guards::auth::new_secret;

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
        (status = 415, description = "the body is not JSON", body = crate::api_error::ErrorBody),
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
                    token: r.sharing.token.clone().or_else(|| Some(new_secret())),
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
