//! Operations: queue depths, liveness and readiness.

use actix_web::{HttpResponse, web};
use serde::Serialize;

use tessera_shared::messages::QueueName;
use tessera_shared::storage::{BlobStoreExt, StorageError};

use crate::error::{ApiError, ApiResult};
use crate::state::AppState;

#[derive(Debug, Serialize)]
struct QueueDepth {
    name: &'static str,
    depth: u64,
    poison: String,
    poison_depth: u64,
}

/// `GET /api/v1/queues`: approximate depth of the four work queues and their poison queues.
pub async fn queues(state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let store = &state.platform.queues;
    let mut out = Vec::new();
    for name in QueueName::ALL {
        let poison = name.poison();
        out.push(QueueDepth {
            name: name.as_str(),
            depth: depth(store.approximate_depth(name.as_str()).await)?,
            poison_depth: depth(store.approximate_depth(&poison).await)?,
            poison,
        });
    }
    Ok(HttpResponse::Ok().json(serde_json::json!({ "queues": out })))
}

/// A queue that does not exist yet holds nothing.
fn depth(result: Result<u64, StorageError>) -> ApiResult<u64> {
    match result {
        Ok(n) => Ok(n),
        Err(StorageError::NotFound(_)) => Ok(0),
        Err(e) => Err(e.into()),
    }
}

/// `GET /healthz`: the process is alive and serving.
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({ "status": "ok" }))
}

/// `GET /readyz`: storage answers (a queue depth and a blob lookup).
pub async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    let platform = &state.platform;
    let queue = platform
        .queues
        .approximate_depth(QueueName::ImageRequest.as_str())
        .await;
    let blob = platform.blobs.exists("jobs/readiness-probe").await;
    let problem = match (queue, blob) {
        (Ok(_), Ok(_)) => None,
        (Err(e), _) | (_, Err(e)) => Some(e),
    };
    match problem {
        None => HttpResponse::Ok().json(serde_json::json!({ "status": "ready" })),
        Some(e) => {
            tracing::warn!(error = %e, "not ready: storage unreachable");
            let mut r = actix_web::ResponseError::error_response(&ApiError::new(
                actix_web::http::StatusCode::SERVICE_UNAVAILABLE,
                "not_ready",
                "storage is unreachable",
            ));
            r.headers_mut().insert(
                actix_web::http::header::RETRY_AFTER,
                actix_web::http::header::HeaderValue::from_static("5"),
            );
            r
        }
    }
}
