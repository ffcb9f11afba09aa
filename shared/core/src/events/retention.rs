//! An event's guests' photos go a set number of days after it stops taking them (its
//! `retention_days`): their files, thumbnails, tiles and records, the markers that list them,
//! and the event's library; its mosaics keep their pixels, without the cell maps that say
//! whose photo is in which cell. The event keeps its record and its target, marked erased.

use time::OffsetDateTime;
use uuid::Uuid;

use super::{EventError, EventRecord, EventStore, forget};
use crate::keys::BlobKey;
use crate::storage::{BlobStoreExt, StorageError};

/// The prefix of every owner's event markers: one per event.
const OWNER_MARKERS: &str = "events/owners/";

impl EventRecord {
    /// When its guests' photos go: its retention after it closed (none while it is open).
    pub fn photos_expire_at(&self) -> Option<OffsetDateTime> {
        let days = i64::from(self.settings.retention_days);
        Some(self.closed_at? + time::Duration::days(days))
    }
}

impl EventStore {
    /// Every event's id, from its owner's marker (one listing).
    pub async fn all_events(&self) -> Result<Vec<Uuid>, EventError> {
        let markers = match self.blobs.list_all(OWNER_MARKERS).await {
            Ok(markers) => markers,
            Err(StorageError::NotFound(_)) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut events: Vec<Uuid> = markers
            .iter()
            .filter_map(|m| m.key.rsplit('/').next()?.parse().ok())
            .collect();
        events.sort();
        events.dedup();
        Ok(events)
    }

    /// Erases the guests' photos of `record`'s event and the cell maps of its mosaics, then
    /// marks it erased. Returns the blobs deleted. Done again, it deletes what is left.
    pub async fn erase_photos(&self, record: &EventRecord) -> Result<u64, EventError> {
        let event = record.id;
        let keep = [
            BlobKey::EventRecord { event }.path(),
            BlobKey::EventTarget { event }.path(),
        ];
        let mut deleted = 0;
        for meta in self.blobs.list_all(&format!("events/{event}/")).await? {
            if !keep.contains(&meta.key) {
                forget(self.blobs.delete(&meta.key).await)?;
                deleted += 1;
            }
        }
        for &job in &record.mosaics {
            forget(self.blobs.delete(&BlobKey::CellMap { job }.path()).await)?;
            deleted += 1;
        }
        let now = OffsetDateTime::now_utc();
        self.update(event, |r| {
            let first = r.erased_at.is_none();
            r.erased_at.get_or_insert(now);
            r.photos.clear();
            r.turn_after = None;
            first
        })
        .await?;
        Ok(deleted)
    }
}
