//! Decoded tile libraries, cached by id and version: each version is downloaded and decoded once
//! per process however many slices ask for it at the same time, and only a few versions are kept.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use crate::libraries::{LibraryCatalog, LibraryError};
use crate::messages::LibraryRef;
use tessera_engine::{Library, TileCache, TileSize};
use tokio::sync::OnceCell;

/// Why a library could not be had.
#[derive(Debug, thiserror::Error)]
pub enum LibraryLoadError {
    /// The library or version does not exist, or its index is unusable: no retry can help.
    #[error("{0}")]
    Permanent(String),
    /// Storage failed; a retry may succeed.
    #[error("{0}")]
    Transient(String),
}

type Slot = Arc<OnceCell<Arc<Library>>>;

/// Tile renditions kept at one size for one library version.
type Tiles = Arc<TileCache<'static>>;

/// A library version's tiles at one size over one background (`None`: the library's own).
type TilesKey = (LibraryRef, TileSize, Option<[u8; 3]>);

/// Tile sizes kept resized at once (each holds only the tiles its jobs used): enough for an
/// adaptive job's squares of 8 to 64 px, rendered with all of them.
const TILE_CACHES: usize = 4;
/// Largest tile area kept between slices: a library's tiles at 64 x 64 px take about as much
/// memory as its renditions; larger ones are resized per slice (their render dwarfs the
/// resizing).
const MAX_KEPT_TILE_AREA: u64 = 64 * 64;

/// A small least-recently-used cache of decoded libraries, and of their tiles resized for the
/// most recent tile sizes. It keeps at most `capacity` versions and, past the one in use, no more
/// than `budget` bytes of them: one version of a 100,000-tile library holds over a gigabyte.
pub struct LibraryCache {
    catalog: LibraryCatalog,
    capacity: usize,
    budget: u64,
    slots: Mutex<VecDeque<(LibraryRef, Slot)>>,
    tiles: Mutex<VecDeque<(TilesKey, Tiles)>>,
}

impl std::fmt::Debug for LibraryCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LibraryCache")
            .field("capacity", &self.capacity)
            .field("budget", &self.budget)
            .finish_non_exhaustive()
    }
}

impl LibraryCache {
    /// At most `capacity` versions and `budget` bytes of them (the one in use is kept whatever
    /// its size).
    pub fn new(catalog: LibraryCatalog, capacity: usize, budget: u64) -> Self {
        LibraryCache {
            catalog,
            capacity: capacity.max(1),
            budget,
            slots: Mutex::new(VecDeque::new()),
            tiles: Mutex::new(VecDeque::new()),
        }
    }

    /// The library's tiles at `size`, over `background` if its tiles are transparent (a plan
    /// says which, [`tessera_engine::Plan::background`]), shared by every slice (and the
    /// controller, in one process) that renders them: a tile is resized once, not once per
    /// slice. A library laid over another background shares the renditions of the version
    /// cached here (only its descriptors are its own) and is kept with the resized tiles.
    pub async fn tiles(
        &self,
        reference: &LibraryRef,
        size: TileSize,
        background: Option<[u8; 3]>,
    ) -> Result<Tiles, LibraryLoadError> {
        let library = self.get(reference).await?;
        let background = background.filter(|&bg| library.looks_different_over(bg));
        let key = (reference.clone(), size, background);
        if size.area() <= MAX_KEPT_TILE_AREA {
            let mut tiles = self.tiles.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(at) = tiles.iter().position(|(k, _)| *k == key) {
                let entry = tiles.remove(at).expect("position is in range");
                let cache = entry.1.clone();
                tiles.push_back(entry);
                return Ok(cache);
            }
        }
        let library = match background {
            Some(bg) => {
                let over = tokio::task::spawn_blocking(move || library.over(bg))
                    .await
                    .map_err(|e| LibraryLoadError::Transient(e.to_string()))?;
                Arc::new(over.expect("a transparent library over another background"))
            }
            None => library,
        };
        let cache = Arc::new(TileCache::shared(library, size));
        if size.area() <= MAX_KEPT_TILE_AREA {
            let mut tiles = self.tiles.lock().unwrap_or_else(|e| e.into_inner());
            tiles.push_back((key, cache.clone()));
            while tiles.len() > TILE_CACHES {
                tiles.pop_front();
            }
        }
        Ok(cache)
    }

    /// The library at `reference`, downloading and decoding it on first use.
    pub async fn get(&self, reference: &LibraryRef) -> Result<Arc<Library>, LibraryLoadError> {
        let slot = self.slot(reference);
        // Only a load changes what the cache holds, so only a load can take it over budget.
        let loaded = std::sync::atomic::AtomicBool::new(false);
        let library = slot
            .get_or_try_init(|| async {
                let index = self
                    .catalog
                    .fetch_index(reference)
                    .await
                    .map_err(|e| match e {
                        LibraryError::NotFound(_) | LibraryError::BadId(_) => {
                            LibraryLoadError::Permanent(format!("tile {e}"))
                        }
                        other => LibraryLoadError::Transient(other.to_string()),
                    })?;
                let library = tokio::task::spawn_blocking(move || index.open())
                    .await
                    .map_err(|e| LibraryLoadError::Transient(e.to_string()))?
                    .map_err(|e| {
                        LibraryLoadError::Permanent(format!(
                            "tile library {} version {}: {e}",
                            reference.id, reference.version
                        ))
                    })?;
                tracing::info!(
                    library = %reference.id,
                    version = reference.version,
                    tiles = library.len(),
                    "tile library loaded"
                );
                loaded.store(true, std::sync::atomic::Ordering::Relaxed);
                Ok::<_, LibraryLoadError>(Arc::new(library))
            })
            .await;
        match library {
            Ok(library) => {
                if loaded.into_inner() {
                    self.trim(reference);
                }
                Ok(library.clone())
            }
            Err(e) => {
                // A failed load is not cached: the next request tries again.
                self.forget(reference);
                Err(e)
            }
        }
    }

    fn slot(&self, reference: &LibraryRef) -> Slot {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = slots.iter().position(|(r, _)| r == reference) {
            let entry = slots.remove(at).expect("position is in range");
            let slot = entry.1.clone();
            slots.push_back(entry);
            return slot;
        }
        let slot: Slot = Arc::new(OnceCell::new());
        slots.push_back((reference.clone(), slot.clone()));
        while slots.len() > self.capacity {
            slots.pop_front();
        }
        slot
    }

    /// Drops the least recently used versions other than `keep` while those loaded hold more
    /// than the budget, with their resized tiles (which would hold them alive).
    fn trim(&self, keep: &LibraryRef) {
        let dropped: Vec<LibraryRef> = {
            let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            let bytes = |slot: &Slot| slot.get().map_or(0, |library| library.memory_bytes());
            let mut held: u64 = slots.iter().map(|(_, slot)| bytes(slot)).sum();
            let mut dropped = Vec::new();
            while held > self.budget {
                let Some(at) = slots
                    .iter()
                    .position(|(r, slot)| r != keep && slot.initialized())
                else {
                    break;
                };
                let (reference, slot) = slots.remove(at).expect("position is in range");
                held -= bytes(&slot);
                dropped.push(reference);
            }
            dropped
        };
        if dropped.is_empty() {
            return;
        }
        let mut tiles = self.tiles.lock().unwrap_or_else(|e| e.into_inner());
        tiles.retain(|((r, _, _), _)| !dropped.contains(r));
        for reference in &dropped {
            tracing::info!(
                library = %reference.id,
                version = reference.version,
                "tile library let go: the cache is over its memory budget"
            );
        }
    }

    /// Versions held decoded now, least recently used first.
    pub fn held(&self) -> Vec<LibraryRef> {
        let slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots
            .iter()
            .filter(|(_, slot)| slot.initialized())
            .map(|(r, _)| r.clone())
            .collect()
    }

    /// Lets go of every version of library `id` (it was deleted): nothing is served from it
    /// again by this process.
    pub fn drop_library(&self, id: &str) {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.retain(|(r, _)| r.id != id);
        drop(slots);
        let mut tiles = self.tiles.lock().unwrap_or_else(|e| e.into_inner());
        tiles.retain(|(key, _)| key.0.id != id);
    }

    fn forget(&self, reference: &LibraryRef) {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        slots.retain(|(r, slot)| r != reference || slot.initialized());
    }
}
