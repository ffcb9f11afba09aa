//! Tessera's front end: the REST API under `/api/v1`, the job broker that turns an upload into an
//! `ImageRequest` on the `imagerequest` queue, and the `imageresponse` listener that finishes jobs.
//!
//! [`Application::build`] binds the server and starts the listener; [`Application::run`] runs both
//! until shutdown. Handlers share an [`state::AppState`] (the platform, the settings, and an in-process
//! signal of job changes that live event streams wake on).

pub mod admission;
pub mod auth;
mod client;
pub mod error;
pub mod inspect;
pub mod library_sheet;
pub mod listen;
mod listener;
pub mod mosaic;
pub mod ops_endpoint;
pub mod pages;
mod peer;
mod pyramid;
mod request;
pub mod routes;
pub mod schema;
pub mod settings;
pub mod sketch;
mod startup;
pub mod state;
mod streams;
mod system;
mod upload;
pub mod view;
pub mod webhook;

pub use actix_web::dev::ServerHandle;
pub use error::ApiError;
pub use ops_endpoint::{Probes, run_ops_endpoint};
pub use settings::WebSettings;
pub use startup::{Application, CONTENT_SECURITY_POLICY};
pub use streams::StreamHub;
