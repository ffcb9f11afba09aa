//! What every request handler shares: the platform, the settings, the job-change signal and the
//! API key check.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use tessera_shared::error_code::ErrorCode;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use tessera_engine::{CellMap, Library};
use tessera_shared::library_cache::{LibraryCache, LibraryLoadError};
use tessera_shared::messages::LibraryRef;
use tessera_shared::platform::Platform;
use uuid::Uuid;

use crate::web_settings::WebSettings;

/// Shared by every worker thread of the server.
#[derive(Debug, Clone)]
pub struct AppState {
    pub platform: Platform,
    pub settings: WebSettings,
    pub changes: crate::background::job_streams::JobChanges,
    /// Image validations decoding at once (each may hold a whole decoded upload in memory).
    pub decodes: Arc<Semaphore>,
    /// Library imports running at once (each decodes every tile of an upload).
    pub imports: Arc<Semaphore>,
    /// The memory the checks of uploaded targets share (`web.decode_memory_bytes`).
    pub decode_memory: DecodeMemory,
    /// Uploads read at once (`web.max_uploads_in_flight`).
    pub uploads: crate::guards::upload::UploadSlots,
    /// Active jobs per client, per address and in all.
    pub admission: Arc<crate::guards::admission::Admission>,
    /// Where uploads are spooled (emptied at start).
    pub spool: std::path::PathBuf,
    /// The API key check (open when no key is configured).
    pub guard: crate::guards::auth::Guard,
    /// Cell maps read lately, for viewers asking which tile is where.
    pub cell_maps: CellMaps,
    /// The clients with a preview being made.
    pub previews: PreviewSeats,
    /// Placements being sent, per address (an IPv6 /64).
    pub(crate) placements: crate::guards::client::AddressCounts,
    /// Guests' photos per address and per event, and their decodes at once.
    pub guests: crate::guards::guest_limits::GuestLimits,
    /// How many photos each event holds, as this process counts them.
    pub event_counts: crate::guards::event_counts::EventCounts,
    /// Library versions decoded lately, for the pictures of their tiles and previews.
    pub loaded_libraries: Arc<LibraryCache>,
    /// The job event streams: one poller per job, caps, the end at shutdown.
    pub streams: crate::background::job_streams::StreamHub,
}

/// The clients with a preview being made, and how many each address (an IPv6 /64) has.
#[derive(Debug, Default, Clone)]
pub struct PreviewSeats {
    clients: Arc<Mutex<std::collections::HashSet<Uuid>>>,
    addresses: crate::guards::client::AddressCounts,
}

/// Previews one address may have made at once: fresh client ids from one place cannot take
/// every decode from the others.
const PREVIEWS_PER_ADDRESS: usize = 2;

/// A client's place while its preview is made.
pub(crate) struct PreviewSeat {
    seats: PreviewSeats,
    client: Uuid,
    _address: crate::guards::client::AddressHold,
}

impl Drop for PreviewSeat {
    fn drop(&mut self) {
        let mut held = self.seats.clients.lock().unwrap_or_else(|e| e.into_inner());
        held.remove(&self.client);
    }
}

impl PreviewSeats {
    pub(crate) fn take(
        &self,
        client: Uuid,
        address: Option<std::net::IpAddr>,
    ) -> crate::api_error::ApiResult<PreviewSeat> {
        let busy = |why: &str| {
            crate::api_error::ApiError::new(
                actix_web::http::StatusCode::TOO_MANY_REQUESTS,
                ErrorCode::PreviewInProgress,
                why,
            )
            .retry_after(std::time::Duration::from_secs(1))
        };
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if clients.contains(&client) {
            return Err(busy(
                "a preview of yours is being made: ask again once it has come",
            ));
        }
        let held = self
            .addresses
            .hold(address, PREVIEWS_PER_ADDRESS)
            .ok_or_else(|| {
                busy("previews from your address are being made: ask again once one has come")
            })?;
        clients.insert(client);
        Ok(PreviewSeat {
            seats: self.clone(),
            client,
            _address: held,
        })
    }
}

#[cfg(test)]
mod preview_tests {
    use super::*;

    #[test]
    fn fresh_client_ids_from_one_address_share_its_previews() {
        let seats = PreviewSeats::default();
        let here: std::net::IpAddr = "192.0.2.7".parse().unwrap();
        let a = seats.take(Uuid::new_v4(), Some(here)).unwrap();
        let _b = seats.take(Uuid::new_v4(), Some(here)).unwrap();
        assert!(seats.take(Uuid::new_v4(), Some(here)).is_err());
        // Another address is not held up; one client still has one preview at a time.
        let elsewhere: std::net::IpAddr = "198.51.100.1".parse().unwrap();
        let client = Uuid::new_v4();
        let _c = seats.take(client, Some(elsewhere)).unwrap();
        assert!(seats.take(client, Some(elsewhere)).is_err());
        drop(a);
        assert!(seats.take(Uuid::new_v4(), Some(here)).is_ok());
    }
}

/// A budget of memory, in MiB, that decodes take their share of before they start: big images
/// wait for each other instead of adding up past the process's limit.
#[derive(Debug, Clone)]
pub struct DecodeMemory {
    mib: Arc<Semaphore>,
    total: u32,
}

const MIB: u64 = 1 << 20;

impl DecodeMemory {
    pub fn new(bytes: u64) -> Self {
        let total = (bytes / MIB).clamp(1, u64::from(u32::MAX >> 3)) as u32;
        DecodeMemory {
            mib: Arc::new(Semaphore::new(total as usize)),
            total,
        }
    }

    /// Waits until `bytes` (at most the whole budget: one decode larger than it runs alone) are
    /// free, and holds them until the permit is dropped.
    pub async fn room_for(&self, bytes: u64) -> crate::api_error::ApiResult<OwnedSemaphorePermit> {
        let mib = bytes.div_ceil(MIB).clamp(1, u64::from(self.total)) as u32;
        self.mib
            .clone()
            .acquire_many_owned(mib)
            .await
            .map_err(crate::api_error::ApiError::internal)
    }
}

/// Library versions kept decoded for the web role's own use (the pictures of tiles, previews),
/// and the bytes they may take.
pub const KEPT_LIBRARIES: usize = 2;
pub const KEPT_LIBRARY_BYTES: u64 = 512 << 20;

impl AppState {
    /// Library version `library`, decoded once and kept ([`LibraryCache`]).
    pub(crate) async fn library(
        &self,
        library: &LibraryRef,
    ) -> crate::api_error::ApiResult<Arc<Library>> {
        use crate::api_error::ApiError;
        self.loaded_libraries
            .get(library)
            .await
            .map_err(|e| match e {
                LibraryLoadError::Permanent(reason) => {
                    ApiError::not_found(ErrorCode::LibraryNotFound, reason)
                }
                LibraryLoadError::Transient(reason) => ApiError::internal(reason),
            })
    }

    /// 507 unless storage can take `bytes` more (where its room is known): `what` names what
    /// needs it, in the message.
    pub(crate) async fn require_room(
        &self,
        bytes: u64,
        what: &str,
    ) -> crate::api_error::ApiResult<()> {
        match self.platform.blobs.writable_bytes().await {
            Some(writable) if writable < bytes => {
                Err(crate::api_error::ApiError::insufficient_storage(format!(
                    "{writable} bytes writable, {what} needs about {bytes}"
                )))
            }
            _ => Ok(()),
        }
    }
}

/// Cell maps read lately (they never change once written).
#[derive(Debug, Default, Clone)]
pub struct CellMaps(Arc<Mutex<VecDeque<HeldMap>>>);

/// A job's map, read once.
type HeldMap = (Uuid, Arc<HeldCellMap>);

/// A job's cell map, and the index of its placements once asked for (made once, shared by
/// every placements request).
#[derive(Debug)]
pub struct HeldCellMap {
    map: CellMap,
    index: std::sync::OnceLock<Arc<tessera_engine::PlacementIndex>>,
    /// The job's record as last read, and when: who may see the job is checked against it
    /// while it is fresh ([`HeldCellMap::record_seen_within`]).
    seen: Mutex<(std::time::Instant, Arc<tessera_shared::jobs::JobRecord>)>,
}

impl HeldCellMap {
    pub fn new(map: CellMap, record: Arc<tessera_shared::jobs::JobRecord>) -> Self {
        HeldCellMap {
            map,
            index: Default::default(),
            seen: Mutex::new((std::time::Instant::now(), record)),
        }
    }

    /// The job's record if it was read within `age`.
    pub fn record_seen_within(
        &self,
        age: std::time::Duration,
    ) -> Option<Arc<tessera_shared::jobs::JobRecord>> {
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        (seen.0.elapsed() < age).then(|| seen.1.clone())
    }

    /// The job's record as last read.
    pub fn record(&self) -> Arc<tessera_shared::jobs::JobRecord> {
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .1
            .clone()
    }

    /// Keeps `record` as the job's record, read now.
    pub fn saw(&self, record: Arc<tessera_shared::jobs::JobRecord>) {
        *self.seen.lock().unwrap_or_else(|e| e.into_inner()) = (std::time::Instant::now(), record);
    }

    /// The tiles and their cells (made on the first call: CPU work, for a blocking thread).
    pub fn placement_index(&self) -> Arc<tessera_engine::PlacementIndex> {
        self.index
            .get_or_init(|| Arc::new(self.map.placement_index()))
            .clone()
    }
}

impl std::ops::Deref for HeldCellMap {
    type Target = CellMap;
    fn deref(&self) -> &CellMap {
        &self.map
    }
}

/// Maps kept at once.
const KEPT_MAPS: usize = 8;

impl CellMaps {
    pub(crate) fn get(&self, job: Uuid) -> Option<Arc<HeldCellMap>> {
        let held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        held.iter()
            .find(|(id, _)| *id == job)
            .map(|(_, m)| m.clone())
    }

    /// Drops job `job`'s map, if kept (its sharing changed).
    pub(crate) fn forget(&self, job: Uuid) {
        let mut held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        held.retain(|(id, _)| *id != job);
    }

    pub(crate) fn keep(&self, job: Uuid, map: Arc<HeldCellMap>) {
        let mut held = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if held.len() >= KEPT_MAPS {
            held.pop_front();
        }
        held.push_back((job, map));
    }
}
