//! Operations: `GET /api/v1/queues` and `GET /api/v1/system`.

use actix_web::{HttpResponse, web};

use crate::api::system_status::{QueueList, SystemView, queue_depths, system_view};
use crate::api_error::ApiResult;
use crate::app_state::AppState;

/// Approximate depth of the work queues and their poison queues.
#[utoipa::path(
    get,
    path = "/api/v1/queues",
    operation_id = "list_queues",
    tag = "operations",
    responses(
        (status = 200, description = "The queues", body = QueueList),
        crate::api::error_sets::StorageErrors,
    ),
)]
pub async fn queues(state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let queues = queue_depths(&state).await?;
    Ok(HttpResponse::Ok().json(QueueList { queues }))
}

/// The processors seen recently.
///
/// Those credited with slices in the most recently updated job records, and the processes
/// registered to be woken for slice requests.
#[utoipa::path(
    get,
    path = "/api/v1/system",
    operation_id = "get_system",
    tag = "operations",
    responses(
        (status = 200, description = "What storage shows of the processors", body = SystemView),
        crate::api::error_sets::StorageErrors,
    ),
)]
pub async fn system(state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    Ok(HttpResponse::Ok().json(system_view(&state).await?))
}
