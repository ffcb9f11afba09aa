//! The embedded backend, the default: durable on local disk, no server.
//!
//! One data directory holds everything:
//! - `queues.sqlite3`: every queue and message in SQLite (write-ahead log), written by one thread
//!   per store that commits the operations waiting for it together (group commit);
//! - `blobs/<container>/...`: one file per blob, written to `blobs/.tmp/` first, then renamed (or
//!   hard-linked, for create-only puts) into place, so a reader or a crash sees the old blob or the
//!   new one, never a part.
//!
//! Several processes may open the same directory at once: SQLite's locks order their queue
//! operations, and blob writes take a per-container `flock`. An operation that has returned
//! survives a SIGKILL of the process at any moment; with [`Durability::PowerLoss`] it also
//! survives a power cut, at the price of an fsync per commit and per blob (tens of times slower
//! on an ordinary disk).

mod blobs;
mod durability;
mod queues;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use blobs::EmbeddedBlobs;
pub use durability::Durability;
pub use queues::EmbeddedQueues;

use super::{BlobStore, Cause, QueueStore, Result, StorageError};

/// Both stores of one data directory.
#[derive(Debug, Clone)]
pub struct EmbeddedStorage {
    dir: PathBuf,
    queues: Arc<EmbeddedQueues>,
    blobs: Arc<EmbeddedBlobs>,
}

impl EmbeddedStorage {
    /// Opens (creating if needed) the data directory. Blocks briefly on file system calls: call it
    /// at start-up, or from `spawn_blocking`.
    pub fn open(data_dir: &Path) -> Result<Self> {
        Self::open_with(data_dir, Durability::default(), 0)
    }

    /// [`EmbeddedStorage::open`] with a chosen durability, counting the disk as full while less
    /// than `min_free_bytes` are free ([`BlobStore::writable_bytes`]).
    pub fn open_with(data_dir: &Path, durability: Durability, min_free_bytes: u64) -> Result<Self> {
        std::fs::create_dir_all(data_dir).map_err(|e| io_error(data_dir, e))?;
        let queues = Arc::new(EmbeddedQueues::open(
            &data_dir.join("queues.sqlite3"),
            durability,
        )?);
        let blobs = Arc::new(EmbeddedBlobs::open(
            &data_dir.join("blobs"),
            durability,
            min_free_bytes,
        )?);
        Ok(EmbeddedStorage {
            dir: data_dir.to_path_buf(),
            queues,
            blobs,
        })
    }

    pub fn data_dir(&self) -> &Path {
        &self.dir
    }

    pub fn queues(&self) -> Arc<dyn QueueStore> {
        self.queues.clone()
    }

    pub fn blobs(&self) -> Arc<dyn BlobStore> {
        self.blobs.clone()
    }
}

fn io_error(path: &Path, e: std::io::Error) -> StorageError {
    StorageError::Other(Cause::with_source(format!("{}: {e}", path.display()), e))
}
