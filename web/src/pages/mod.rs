//! The browser UI: server-rendered pages (askama templates in `templates/`), their static assets
//! (`static/`, compiled into the binary) and the error page. One file per page.
//!
//! The pages only read; everything they change goes through the JSON API with `fetch`.

use actix_web::{HttpResponse, web};

use crate::api_error::ApiResult;

mod api_page;
mod assets;
mod contribute_page;
mod error_page;
mod event_page;
mod events_page;
mod home_page;
mod job_page;
mod jobs_page;
mod libraries_page;
mod page_answer;
mod system_page;
mod words;

use api_page::api;
pub use api_page::documented_operations;
use assets::{asset, serve_asset};
use contribute_page::contribute;
pub use error_page::error_page;
use event_page::{event, printer, wall};
use events_page::{my_events, new_event};
use home_page::home;
use job_page::{job, quality_card};
use jobs_page::jobs;
use libraries_page::libraries;
use system_page::system;

/// Registers the pages and the static assets.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(home))
        .route("/jobs", web::get().to(jobs))
        .route("/jobs/{id}", web::get().to(job))
        .route("/jobs/{id}/quality", web::get().to(quality_card))
        .route("/libraries", web::get().to(libraries))
        .route("/events", web::get().to(my_events))
        .route("/events/new", web::get().to(new_event))
        .route("/events/{id}", web::get().to(event))
        .route("/events/{id}/contribute", web::get().to(contribute))
        .route("/events/{id}/wall", web::get().to(wall))
        .route("/events/{id}/printer", web::get().to(printer))
        .route("/system", web::get().to(system))
        .route("/api", web::get().to(api))
        .route("/static/{file}", web::get().to(asset))
        .route("/favicon.ico", web::get().to(favicon));
}

/// Browsers ask for `/favicon.ico` whatever the page names: the icon is an SVG.
async fn favicon(req: actix_web::HttpRequest) -> ApiResult<HttpResponse> {
    serve_asset(&req, "favicon.svg")
}
