//! `GET /api/v1/options`: every option a job takes, as the job specification declares it, with
//! this service's limits applied. The home page reads its labels, bounds and defaults here.

use actix_web::{HttpResponse, web};
use tessera_shared::spec::{OptionDoc, options_document};

use crate::app_state::AppState;

/// The options a job takes: name, kind, label, hint, unit, bounds, default and choices.
#[utoipa::path(
    get,
    path = "/api/v1/options",
    operation_id = "list_options",
    tag = "jobs",
    responses((status = 200, description = "Every option of a job submission", body = Vec<OptionDoc>)),
)]
pub async fn list(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok().json(options_document(&state.settings.limits))
}
