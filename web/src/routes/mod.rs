//! The REST API under `/api/v1`.

pub mod cells;
pub mod dzi;
pub mod events;
pub mod jobs;
pub mod libraries;
pub mod openapi;
pub mod ops;
pub mod options;
pub mod preview;
pub mod previews;
pub mod result;
pub mod sheet;
pub mod tiles;

use actix_web::web;
use tessera_shared::error_code::ErrorCode;

use actix_web::http::StatusCode;

use crate::error::{ApiError, no_route};

/// Registers the REST API under `/api/v1` (the app adds the pages, sign-in and health checks).
/// A method a path does not serve answers 405 with `Allow`; a path that does not exist, 404.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::scope("/api/v1")
            .service(resource("/jobs", "POST").route(web::post().to(jobs::submit)))
            .service(resource("/previews", "POST").route(web::post().to(previews::create)))
            .service(
                resource("/jobs/{id}", "GET, DELETE")
                    .route(web::get().to(jobs::get))
                    .route(web::delete().to(jobs::delete)),
            )
            .service(resource("/jobs/{id}/cancel", "POST").route(web::post().to(jobs::cancel)))
            .service(resource("/jobs/{id}/result", "GET").route(web::get().to(result::get)))
            .service(resource("/jobs/{id}/events", "GET").route(web::get().to(events::events)))
            .service(resource("/jobs/{id}/preview", "GET").route(web::get().to(preview::get)))
            .service(
                resource("/jobs/{id}/tiles/{level}/{x}/{y}", "GET")
                    .route(web::get().to(tiles::get)),
            )
            .service(
                resource("/jobs/{id}/cells/{row}/{col}", "GET").route(web::get().to(cells::get)),
            )
            .service(
                resource("/jobs/{id}/cells/{row}/{col}/thumbnail", "GET")
                    .route(web::get().to(cells::thumbnail)),
            )
            .service(
                resource("/jobs/{id}/cells/{row}/{col}/picture", "GET")
                    .route(web::get().to(cells::picture)),
            )
            .service(
                resource("/jobs/{id}/placements", "GET").route(web::get().to(cells::placements)),
            )
            .service(resource("/jobs/{id}/dzi", "GET").route(web::get().to(dzi::descriptor)))
            .service(
                resource("/jobs/{id}/dzi_files/{level}/{tile}", "GET")
                    .route(web::get().to(dzi::tile)),
            )
            .service(
                resource("/libraries", "GET, POST")
                    .route(web::get().to(libraries::list))
                    .route(web::post().to(libraries::create)),
            )
            .service(
                resource("/libraries/{id}", "GET, DELETE")
                    .route(web::get().to(libraries::get))
                    .route(web::delete().to(libraries::delete)),
            )
            .service(resource("/libraries/{id}/sheet", "GET").route(web::get().to(sheet::get)))
            .service(resource("/options", "GET").route(web::get().to(options::list)))
            .service(resource("/queues", "GET").route(web::get().to(ops::queues)))
            .service(resource("/system", "GET").route(web::get().to(ops::system)))
            .service(resource("/openapi.json", "GET").route(web::get().to(openapi::document)))
            .default_service(web::to(no_route)),
    );
}

/// A path of the API whose other methods answer 405, naming the ones it serves (`allow`).
fn resource(path: &str, allow: &'static str) -> actix_web::Resource {
    web::resource(path).default_service(web::to(move || async move {
        let error = ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            ErrorCode::MethodNotAllowed,
            format!("this path serves {allow}"),
        );
        let mut response = actix_web::ResponseError::error_response(&error);
        response.headers_mut().insert(
            actix_web::http::header::ALLOW,
            actix_web::http::header::HeaderValue::from_static(allow),
        );
        response
    }))
}
