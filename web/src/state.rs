//! What every request handler shares: the platform, the settings, the job-change signal and the
//! API key check.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::Semaphore;

use tessera_engine::CellMap;
use tessera_shared::platform::Platform;
use uuid::Uuid;

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
    pub cell_maps: CellMaps,
    /// The job event streams: one poller per job, caps, the end at shutdown.
    pub streams: crate::streams::StreamHub,
}

/// Cell maps read lately (they never change once written).
#[derive(Debug, Default, Clone)]
pub struct CellMaps(Arc<Mutex<VecDeque<HeldMap>>>);

/// A job's map, read once.
type HeldMap = (Uuid, Arc<CellMap>);

/// Maps kept at once.
const KEPT_MAPS: usize = 8;

impl CellMaps {
    pub(crate) fn get(&self, job: Uuid) -> Option<Arc<CellMap>> {
        let held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        held.iter()
            .find(|(id, _)| *id == job)
            .map(|(_, m)| m.clone())
    }

    pub(crate) fn keep(&self, job: Uuid, map: Arc<CellMap>) {
        let mut held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if held.len() >= KEPT_MAPS {
            held.pop_front();
        }
        held.push_back((job, map));
    }
}
