//! What every request handler shares: the platform, the settings, the job-change signal and the
//! API key check.

use std::sync::Arc;

use tokio::sync::{Semaphore, broadcast};
use uuid::Uuid;

use tessera_shared::platform::Platform;

use crate::settings::WebSettings;

/// Shared by every worker thread of the server.
#[derive(Debug, Clone)]
pub struct AppState {
    pub platform: Platform,
    pub settings: WebSettings,
    pub changes: JobChanges,
    /// Image validations decoding at once (each may hold a whole decoded upload in memory).
    pub decodes: Arc<Semaphore>,
    /// Library imports running at once (each decodes every tile of an upload).
    pub imports: Arc<Semaphore>,
    /// The API key check (open when no key is configured).
    pub guard: crate::auth::Guard,
    /// The job event streams: one poller per job, caps, the end at shutdown.
    pub streams: crate::routes::events::StreamHub,
}

/// An in-process signal that a job's record changed (sent by the imageresponse listener), so
/// live event streams answer at once instead of at their next poll.
#[derive(Debug, Clone)]
pub struct JobChanges {
    tx: broadcast::Sender<Uuid>,
}

impl JobChanges {
    pub fn new() -> Self {
        JobChanges {
            tx: broadcast::channel(256).0,
        }
    }

    pub fn changed(&self, job: Uuid) {
        // No receiver is fine: nobody is watching.
        let _ = self.tx.send(job);
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Uuid> {
        self.tx.subscribe()
    }
}

impl Default for JobChanges {
    fn default() -> Self {
        Self::new()
    }
}
