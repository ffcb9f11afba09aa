//! Liveness, readiness and metrics: `GET /healthz`, `GET /readyz` and `GET /metrics`, served on
//! the web port by the front end and on their own port ([`run_ops_endpoint`]) by the controller
//! and the processors, so every role can be probed and scraped.

use std::net::TcpListener;
use std::time::Duration;
use tessera_shared::error_code::ErrorCode;

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{App, HttpResponse, HttpServer, web};
use anyhow::Context as _;

use tessera_shared::platform::Platform;
use tessera_shared::runtime::Shutdown;
use tessera_shared::storage::StorageError;
use tessera_shared::telemetry::{Exporter, Readiness, Role};

use crate::api_error::ApiError;

/// What the three endpoints need: the process's readiness check and its metrics.
#[derive(Clone)]
pub struct Probes {
    pub readiness: Readiness,
    pub exporter: Exporter,
}

impl Probes {
    /// Probes of `role` over `platform`: readiness trusted for `readiness_interval` after a
    /// success, queue depths read at most once per `depth_interval`.
    pub fn new(
        platform: &Platform,
        role: Role,
        readiness_interval: Duration,
        depth_interval: Duration,
    ) -> Self {
        Probes {
            readiness: Readiness::new(platform.clone(), role, readiness_interval),
            exporter: Exporter::new(platform.clone(), role, depth_interval),
        }
    }
}

/// Registers the three endpoints (the caller adds `Probes` as app data).
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/healthz", web::get().to(healthz))
        .route("/readyz", web::get().to(readyz))
        .route("/metrics", web::get().to(metrics));
}

/// `GET /healthz`: the process is alive and serving.
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(serde_json::json!({ "status": "ok" }))
}

/// `GET /readyz`: this process can do its work now: storage answers and takes writes.
pub async fn readyz(probes: web::Data<Probes>) -> HttpResponse {
    match probes.readiness.check().await {
        Ok(()) => HttpResponse::Ok().json(serde_json::json!({ "status": "ready" })),
        Err(e) => {
            tracing::warn!(error = %e, "not ready: storage unreachable, not writable or full");
            let reason = match e {
                StorageError::Full(_) => "storage is full: less free space than it keeps",
                _ => "storage is unreachable or not writable",
            };
            let mut r = actix_web::ResponseError::error_response(&ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::NotReady,
                reason,
            ));
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
            r
        }
    }
}

/// `GET /metrics`: every metric of this process, in the Prometheus text format.
pub async fn metrics(probes: web::Data<Probes>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(probes.exporter.render().await)
}

/// Serves the three endpoints on `tcp` (bound by [`crate::port::bind_port`]) until
/// `shutdown` fires; the address is logged.
pub async fn run_ops_endpoint(
    probes: Probes,
    tcp: TcpListener,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let addr = tcp.local_addr()?;
    let data = web::Data::new(probes);
    let server = HttpServer::new(move || App::new().app_data(data.clone()).configure(configure))
        .workers(1)
        .disable_signals()
        .shutdown_timeout(1)
        .listen(tcp)?
        .run();
    tracing::info!("ops endpoint (healthz, readyz, metrics) listening on http://{addr}");
    let handle = server.handle();
    let stopper = tokio::spawn(async move {
        shutdown.fired().await;
        handle.stop(true).await;
    });
    let result = server.await;
    stopper.abort();
    result.context("ops endpoint")
}
