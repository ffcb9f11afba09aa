//! What an event's mosaics are made of: each photo's tile (a one-tile library index made when
//! it was prepared) and, for each mosaic, the list of its photos.

use bytes::Bytes;
use uuid::Uuid;

use super::{EventError, EventStore, forget};
use crate::keys::BlobKey;
use crate::storage::PutMode;

impl EventStore {
    /// Stores a photo prepared as a tile of its event's library (a one-tile index).
    pub async fn put_tile(&self, event: Uuid, photo: Uuid, index: Bytes) -> Result<(), EventError> {
        let key = BlobKey::EventTile { event, photo }.path();
        self.blobs.put(&key, index, PutMode::Overwrite).await?;
        Ok(())
    }

    /// A photo's tile (a one-tile index), if it was prepared as one.
    pub async fn tile(&self, event: Uuid, photo: Uuid) -> Result<Option<Bytes>, EventError> {
        self.optional(&BlobKey::EventTile { event, photo }).await
    }

    /// Lists the photos mosaic `job` of the event is made of.
    pub async fn put_edition(
        &self,
        event: Uuid,
        job: Uuid,
        photos: &[Uuid],
    ) -> Result<(), EventError> {
        let key = BlobKey::EventEdition { event, job }.path();
        let lines: String = photos.iter().map(|id| format!("{id}\n")).collect();
        self.blobs
            .put(&key, Bytes::from(lines), PutMode::Overwrite)
            .await?;
        Ok(())
    }

    /// The photos mosaic `job` of the event is made of; `None` if they were never listed (or
    /// the event is gone). A line that is not a photo's id is passed over.
    pub async fn edition(&self, event: Uuid, job: Uuid) -> Result<Option<Vec<Uuid>>, EventError> {
        let lines = self.optional(&BlobKey::EventEdition { event, job }).await?;
        Ok(lines.map(|lines| {
            String::from_utf8_lossy(&lines)
                .lines()
                .filter_map(|line| line.trim().parse().ok())
                .collect()
        }))
    }

    /// Forgets the photos mosaic `job` was made of, once its library is made.
    pub async fn delete_edition(&self, event: Uuid, job: Uuid) -> Result<(), EventError> {
        let key = BlobKey::EventEdition { event, job }.path();
        forget(self.blobs.delete(&key).await)?;
        Ok(())
    }
}
