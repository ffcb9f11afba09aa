//! Tessera's front end: the REST API under `/api/v1`, the job broker that turns an upload into an
//! `ImageRequest` on the `imagerequest` queue, and the `imageresponse` listener that finishes jobs.
//!
//! [`Application::build`] binds the server and starts the listener; [`Application::run`] runs both
//! until shutdown. Handlers share an [`app_state::AppState`] (the platform, the settings, and an in-process
//! signal of job changes that live event streams wake on).
//!
//! The rooms, from the top down (a room uses only those below it):
//! - `startup`: the HTTP app with its middleware, and the roles beside it;
//! - `pages/` (the browser UI, one file per page) and `api/` (the REST API, one file per
//!   resource, and its OpenAPI document);
//! - `background/`: the `imageresponse` listener, the webhook sender, the job event streams;
//! - `app_state`, `imaging/` (stored mosaics, zoom levels, drafts, contact sheets), `job_view`;
//! - `guards/` (keys, clients, admission, upload limits), `api_error`, `web_settings`, `port`,
//!   `probes`.

pub mod api;
pub mod api_error;
pub mod app_state;
pub mod background;
pub mod guards;
pub mod imaging;
pub mod job_view;
pub mod pages;
pub mod port;
pub mod probes;
mod startup;
pub mod web_settings;

pub use actix_web::dev::ServerHandle;
pub use api_error::ApiError;
pub use background::job_streams::StreamHub;
pub use probes::{Probes, run_ops_endpoint};
pub use startup::{Application, CONTENT_SECURITY_POLICY};
pub use web_settings::WebSettings;
