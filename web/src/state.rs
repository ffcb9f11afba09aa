//! What every request handler shares: the platform, the settings, the job-change signal and the
//! API key check.

use std::sync::Arc;

use tokio::sync::Semaphore;

use tessera_shared::platform::Platform;

use crate::settings::WebSettings;

/// Shared by every worker thread of the server.
#[derive(Debug, Clone)]
pub struct AppState {
    pub platform: Platform,
    pub settings: WebSettings,
    pub changes: crate::streams::JobChanges,
    /// Image validations decoding at once (each may hold a whole decoded upload in memory).
    pub decodes: Arc<Semaphore>,
    /// Library imports running at once (each decodes every tile of an upload).
    pub imports: Arc<Semaphore>,
    /// The API key check (open when no key is configured).
    pub guard: crate::auth::Guard,
    /// Cell maps read lately, for viewers asking which tile is where.
    pub cell_maps: crate::routes::cells::CellMaps,
    /// The job event streams: one poller per job, caps, the end at shutdown.
    pub streams: crate::streams::StreamHub,
}
