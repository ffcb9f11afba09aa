//! Operations: `GET /api/v1/queues` and `GET /api/v1/system`.

use actix_web::{HttpResponse, web};

use crate::error::ApiResult;
use crate::state::AppState;
use crate::system::{queue_depths, system_view};

/// `GET /api/v1/queues`: approximate depth of the four work queues and their poison queues.
pub async fn queues(state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let out = queue_depths(&state).await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({ "queues": out })))
}

/// `GET /api/v1/system`: the processors seen recently and the processes listening for slices.
pub async fn system(state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    Ok(HttpResponse::Ok().json(system_view(&state).await?))
}
