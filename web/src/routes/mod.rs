//! The REST API under `/api/v1`.

pub mod events;
pub mod jobs;
mod libraries;
pub mod ops;
pub mod preview;
pub mod result;
pub mod sheet;
pub mod tiles;

use actix_web::web;

use crate::error::no_route;

/// Registers the REST API under `/api/v1` (the app adds the pages, sign-in and health checks).
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/api/v1")
            .route("/jobs", web::post().to(jobs::submit))
            .route("/jobs/{id}", web::get().to(jobs::get))
            .route("/jobs/{id}", web::delete().to(jobs::delete))
            .route("/jobs/{id}/result", web::get().to(result::get))
            .route("/jobs/{id}/events", web::get().to(events::events))
            .route("/jobs/{id}/preview", web::get().to(preview::get))
            .route(
                "/jobs/{id}/tiles/{level}/{x}/{y}",
                web::get().to(tiles::get),
            )
            .route("/libraries", web::get().to(libraries::list))
            .route("/libraries", web::post().to(libraries::create))
            .route("/libraries/{id}", web::get().to(libraries::get))
            .route("/libraries/{id}/sheet", web::get().to(sheet::get))
            .route("/queues", web::get().to(ops::queues))
            .route("/system", web::get().to(ops::system))
            .default_service(web::to(no_route)),
    );
}
