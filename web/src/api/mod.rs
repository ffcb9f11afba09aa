//! The REST API under `/api/v1`: one module per resource, the OpenAPI document, and the types
//! that exist to describe bodies in it.

pub mod cell_lookup;
pub mod contact_sheet;
pub mod doc_types;
pub mod draft_previews;
pub mod dzi;
pub mod error_sets;
pub mod event_auto;
pub mod event_boards;
pub mod event_jobs;
pub mod event_moderation;
pub mod event_mosaics;
pub mod event_photo_pages;
pub mod event_photos;
pub mod event_pictures;
pub mod event_reviews;
pub mod event_settings;
pub mod event_wall;
pub mod job_broker;
pub mod job_options;
pub mod job_sharing;
pub mod job_stream;
pub mod library_tiles;
pub mod openapi;
pub mod owned_event;
pub(crate) mod path_target;
pub mod queue_status;
pub mod requested_job;
pub mod result;
pub mod result_preview;
pub mod sizing;
pub(crate) mod system_status;
pub mod tile_libraries;
pub mod zoom_tiles;

use actix_web::web;
use tessera_shared::error_code::ErrorCode;

use actix_web::http::StatusCode;

use crate::api_error::{ApiError, no_route};

/// Registers the REST API under `/api/v1` (the app adds the pages, sign-in and health checks).
/// A method a path does not serve answers 405 with `Allow`; a path that does not exist, 404.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        event_routes(web::scope("/api/v1"))
            .service(resource("/jobs", "POST").route(web::post().to(job_broker::submit)))
            .service(resource("/previews", "POST").route(web::post().to(draft_previews::create)))
            .service(resource("/sizing", "POST").route(web::post().to(sizing::create)))
            .service(
                resource("/jobs/{id}", "GET, DELETE")
                    .route(web::get().to(job_broker::get))
                    .route(web::delete().to(job_broker::delete)),
            )
            .service(
                resource("/jobs/{id}/cancel", "POST").route(web::post().to(job_broker::cancel)),
            )
            .service(
                resource("/jobs/{id}/sharing", "POST").route(web::post().to(job_sharing::change)),
            )
            .service(resource("/jobs/{id}/result", "GET").route(web::get().to(result::get)))
            .service(resource("/jobs/{id}/events", "GET").route(web::get().to(job_stream::events)))
            .service(
                resource("/jobs/{id}/preview", "GET").route(web::get().to(result_preview::get)),
            )
            .service(
                resource("/jobs/{id}/tiles/{level}/{x}/{y}", "GET")
                    .route(web::get().to(zoom_tiles::get)),
            )
            .service(
                resource("/jobs/{id}/cells/{row}/{col}", "GET")
                    .route(web::get().to(cell_lookup::get)),
            )
            .service(
                resource("/jobs/{id}/cells/{row}/{col}/thumbnail", "GET")
                    .route(web::get().to(cell_lookup::thumbnail)),
            )
            .service(
                resource("/jobs/{id}/cells/{row}/{col}/picture", "GET")
                    .route(web::get().to(cell_lookup::picture)),
            )
            .service(
                resource("/jobs/{id}/placements", "GET")
                    .route(web::get().to(cell_lookup::placements)),
            )
            .service(resource("/jobs/{id}/dzi", "GET").route(web::get().to(dzi::descriptor)))
            .service(
                resource("/jobs/{id}/dzi_files/{level}/{tile}", "GET")
                    .route(web::get().to(dzi::tile)),
            )
            .service(
                resource("/libraries", "GET, POST")
                    .route(web::get().to(tile_libraries::list))
                    .route(web::post().to(tile_libraries::create)),
            )
            .service(
                resource("/libraries/{id}", "GET, DELETE")
                    .route(web::get().to(tile_libraries::get))
                    .route(web::delete().to(tile_libraries::delete)),
            )
            .service(
                resource("/libraries/{id}/tiles", "GET, POST, DELETE")
                    .route(web::get().to(library_tiles::list))
                    .route(web::post().to(library_tiles::edit))
                    .route(web::delete().to(library_tiles::remove)),
            )
            .service(
                resource("/libraries/{id}/sheet", "GET").route(web::get().to(contact_sheet::get)),
            )
            .service(resource("/options", "GET").route(web::get().to(job_options::list)))
            .service(resource("/queues", "GET").route(web::get().to(queue_status::queues)))
            .service(resource("/system", "GET").route(web::get().to(queue_status::system)))
            .service(resource("/openapi.json", "GET").route(web::get().to(openapi::document)))
            .default_service(web::to(no_route)),
    );
}

/// The events' routes: an event, its guests' photos, its pictures, its wall and its mosaics.
fn event_routes(scope: actix_web::Scope) -> actix_web::Scope {
    scope
        .service(resource("/events", "POST").route(web::post().to(event_mosaics::create)))
        .service(
            resource("/events/{id}", "GET, PATCH")
                .route(web::get().to(event_mosaics::get))
                .route(web::patch().to(event_settings::change)),
        )
        .service(
            resource("/events/{id}/photos", "GET, POST, DELETE")
                .route(web::get().to(event_photo_pages::list))
                .route(web::post().to(event_photos::contribute))
                .route(web::delete().to(event_photos::erase_mine)),
        )
        .service(
            resource("/events/{id}/board.pdf", "GET").route(web::get().to(event_boards::board_pdf)),
        )
        .service(
            resource("/events/{id}/sheets", "GET, POST")
                .route(web::get().to(event_boards::list_sheets))
                .route(web::post().to(event_boards::take_sheet)),
        )
        .service(
            resource("/events/{id}/sheets/{number}", "GET")
                .route(web::get().to(event_boards::reprint_sheet)),
        )
        .service(
            resource("/events/{id}/sheets/{number}/keepsakes", "GET")
                .route(web::get().to(event_boards::sheet_keepsakes)),
        )
        .service(
            resource("/events/{id}/board/fill", "POST").route(web::post().to(event_boards::fill)),
        )
        .service(
            resource("/events/{id}/printer", "POST, DELETE")
                .route(web::post().to(event_boards::make_printer_link))
                .route(web::delete().to(event_boards::end_printer_link)),
        )
        .service(
            resource("/events/{id}/decisions", "POST")
                .route(web::post().to(event_moderation::decide_many)),
        )
        .service(
            resource("/events/{id}/photos/{photo}/verdict", "POST")
                .route(web::post().to(event_reviews::give)),
        )
        .service(
            resource("/events/{id}/photos/{photo}", "PATCH, DELETE")
                .route(web::patch().to(event_mosaics::decide))
                .route(web::delete().to(event_mosaics::withdraw)),
        )
        .service(
            resource("/events/{id}/photos/{photo}/thumbnail", "GET")
                .route(web::get().to(event_pictures::thumbnail)),
        )
        .service(resource("/events/{id}/qr", "GET").route(web::get().to(event_pictures::qr_code)))
        .service(
            resource("/events/{id}/wall", "GET, POST, DELETE")
                .route(web::get().to(event_wall::get))
                .route(web::post().to(event_wall::make_link))
                .route(web::delete().to(event_wall::end_link)),
        )
        .service(
            resource("/events/{id}/mosaic", "POST").route(web::post().to(event_mosaics::mosaic)),
        )
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
