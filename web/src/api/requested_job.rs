//! The job a request's path names (`/jobs/{id}/...`), loaded from storage: what the job routes
//! begin with. An id that is not a UUID, or names no job, is 404 `job_not_found`; a private job,
//! to someone who may not see it, 403 `job_private`.

use actix_web::HttpRequest;
use tessera_shared::jobs::JobRecord;
use uuid::Uuid;

use actix_web::http::StatusCode;
use tessera_shared::error_code::ErrorCode;

use crate::api::path_target::from_path;
use crate::api_error::{ApiError, ApiResult};
use crate::guards::client::{job_id, manages_job};
use crate::guards::job_access::check_readable;

/// The job named by the path's `{id}`, with its stored record.
pub struct RequestedJob {
    pub id: Uuid,
    pub record: JobRecord,
}

from_path!(RequestedJob, |state, req, id| async move {
    let id = job_id(&id)?;
    let record = state.platform.jobs().get(id).await?;
    check_readable(&req, &record)?;
    Ok(RequestedJob { id, record })
});

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
