//! The job a request's path names (`/jobs/{id}/...`), loaded from storage: what the job routes
//! begin with. An id that is not a UUID, or names no job, is 404 `job_not_found`; a private job,
//! to someone who may not see it, 403 `job_private`.

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest, web};
use futures_util::future::LocalBoxFuture;
use tessera_shared::jobs::JobRecord;
use uuid::Uuid;

use actix_web::http::StatusCode;
use tessera_shared::error_code::ErrorCode;

use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;
use crate::guards::client::{job_id, manages_job};
use crate::guards::job_access::check_readable;

/// The job named by the path's `{id}`, with its stored record.
pub struct RequestedJob {
    pub id: Uuid,
    pub record: JobRecord,
}

impl FromRequest for RequestedJob {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let id = job_id(req.match_info().get("id").unwrap_or_default());
        let state = req.app_data::<web::Data<AppState>>().cloned();
        let req = req.clone();
        Box::pin(async move {
            let id = id?;
            let state = state.ok_or_else(|| ApiError::internal("the app state is missing"))?;
            let record = state.platform.jobs().get(id).await?;
            check_readable(&req, &record)?;
            Ok(RequestedJob { id, record })
        })
    }
}

impl RequestedJob {
    /// Refuses (403 `not_your_job`) a client that may not `verb` the job: only the client that
    /// submitted it, or the key it was submitted with, may change it.
    pub fn check_managed_by(&self, req: &HttpRequest, verb: &str) -> ApiResult<()> {
        if manages_job(req, &self.record)? {
            return Ok(());
        }
        Err(ApiError::new(
            StatusCode::FORBIDDEN,
            ErrorCode::NotYourJob,
            format!(
                "only the client that submitted a job (or the key it was submitted with) may \
                 {verb} it"
            ),
        ))
    }
}
