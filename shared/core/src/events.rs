//! Events: one mosaic made of many people's photos. An event is a target photo, the job its
//! owner chose (a checked specification), and the photos guests contribute through its link,
//! each waiting, approved, left out or withdrawn. Its record is one JSON blob (`events/{id}/event.json`), updated under
//! its ETag as a job's is; the target and each photo are blobs beside it. Its mosaics are
//! ordinary jobs of a private library that holds its approved photos.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::keys::BlobKey;
use crate::libraries::Owner;
use crate::spec::JobSpec;
use crate::storage::{BlobStore, BlobStoreExt, PutMode, StorageError};

/// Where a contributed photo is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PhotoState {
    /// Sent, waiting for the owner's approval.
    Waiting,
    /// In the event's mosaics.
    Approved,
    /// Left out by the owner.
    Rejected,
}

impl PhotoState {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "waiting" => Some(PhotoState::Waiting),
            "approved" => Some(PhotoState::Approved),
            "rejected" => Some(PhotoState::Rejected),
            _ => None,
        }
    }
}

/// One contributed photo.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventPhoto {
    pub id: Uuid,
    /// The file name the guest sent.
    pub name: String,
    /// Who sent it: the guest's client id, kept as an owner (a digest, never the id).
    pub contributor: Owner,
    pub state: PhotoState,
    /// The file's extension as sniffed (`jpg`, `png`, `heic`...), for the library's folder.
    pub extension: String,
    /// Its mean colour as a tile shows it, for the wish list.
    #[serde(default)]
    pub colour: Option<[u8; 3]>,
    /// The name the guest gave themselves ("Aunt May"), if any: what the couple and the wall
    /// show for the sender.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest_name: Option<String>,
    #[serde(with = "time::serde::rfc3339")]
    pub added_at: OffsetDateTime,
}

impl EventPhoto {
    /// The photo's tile name in the event's library: its id, so that two guests' `IMG_0001.jpg`
    /// are two tiles; the name the guest sent is its caption.
    pub fn tile_name(&self) -> String {
        format!("{}.{}", self.id, self.extension)
    }
}

pub use crate::event_settings::EventSettings;

/// Who an event's mosaics are made for: the client (and the key, if any) that made the event,
/// as the jobs it submits record them, so that its owner manages them as their own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Maker {
    pub client: Uuid,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_holder: Option<Owner>,
}

/// An event's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    pub id: Uuid,
    pub name: String,
    pub owner: Owner,
    /// The secret in the contribute link.
    pub token: String,
    /// The secret in the wall link, a view-only page for a screen at the venue; none until
    /// the owner makes one, and a new one ends the old.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_token: Option<String>,
    /// The job its mosaics are made with: the owner's fields and the event's defaults, checked
    /// when the event was made (its library the event's own). Absent on events made before it
    /// was kept: those have their `fields`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<JobSpec>,
    /// The names of the job's fields given, by the owner or as the event's defaults (the rest
    /// are the service's defaults).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chosen: Vec<String>,
    /// The job fields the owner gave, as sent, on events made before `spec` was kept.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub fields: BTreeMap<String, String>,
    /// The target's file name, as sent.
    pub input_name: String,
    pub settings: EventSettings,
    pub photos: Vec<EventPhoto>,
    /// The event's mosaics, oldest first.
    #[serde(default)]
    pub mosaics: Vec<Uuid>,
    /// The target's colours on a coarse grid ([`crate::wishlist::target_colours`]).
    #[serde(default)]
    pub target_colours: Vec<[u8; 3]>,
    /// Who its mosaics are made for (absent on events made before it was kept: those make
    /// mosaics only when asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maker: Option<Maker>,
    /// When the photos in its mosaics last changed (one approved, left out after approval, or
    /// taken out).
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub approved_changed_at: Option<OffsetDateTime>,
    /// When its latest mosaic was asked for.
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub mosaic_asked_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

impl EventRecord {
    /// The id of the private library that holds the event's approved photos.
    pub fn library_id(&self) -> String {
        Self::library_id_of(self.id)
    }

    /// [`EventRecord::library_id`] of event `id`.
    pub fn library_id_of(id: Uuid) -> String {
        format!("event-{id}")
    }

    /// The event whose library `library` is ([`EventRecord::library_id`]), if it is one's.
    pub fn event_of_library(library: &str) -> Option<Uuid> {
        library.strip_prefix("event-")?.parse().ok()
    }

    /// Photo `id`, if the event holds it.
    pub fn photo(&self, id: Uuid) -> Option<&EventPhoto> {
        self.photos.iter().find(|p| p.id == id)
    }

    /// Whether a mosaic is due on its own at `now`: automatic mosaics are on, the photos in it
    /// changed after the latest mosaic was asked for, and have stayed so for the quiet interval.
    pub fn mosaic_due(&self, now: OffsetDateTime) -> bool {
        let quiet = time::Duration::seconds(i64::from(self.settings.auto_after_seconds));
        self.settings.auto_after_seconds > 0
            && self.maker.is_some()
            && self.approved().next().is_some()
            && self.approved_changed_at.is_some_and(|changed| {
                changed + quiet <= now && self.mosaic_asked_at.is_none_or(|asked| asked < changed)
            })
    }

    /// The photos in its mosaics.
    pub fn approved(&self) -> impl Iterator<Item = &EventPhoto> {
        self.photos
            .iter()
            .filter(|p| p.state == PhotoState::Approved)
    }

    /// The colours its approved photos cannot match yet, most wanted first.
    pub fn wishlist(&self) -> Vec<crate::wishlist::Wish> {
        let photos: Vec<[u8; 3]> = self.approved().filter_map(|p| p.colour).collect();
        crate::wishlist::wishlist(&self.target_colours, &photos)
    }

    /// How many more photos the event takes before its cap (`max_photos`).
    pub fn room_for_photos(&self) -> usize {
        (self.settings.max_photos as usize).saturating_sub(self.photos.len())
    }

    /// How many photos `guest` has sent that are still there.
    pub fn sent_by(&self, guest: &Owner) -> u32 {
        self.photos
            .iter()
            .filter(|p| &p.contributor == guest)
            .count() as u32
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EventError {
    #[error("there is no event {0}")]
    NotFound(Uuid),
    #[error("event record {0} is corrupt: {1}")]
    Corrupt(Uuid, String),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// Reads and updates events in a blob store.
#[derive(Debug, Clone)]
pub struct EventStore {
    blobs: Arc<dyn BlobStore>,
}

/// Lost races tolerated in one update before giving up (each means another writer progressed).
const MAX_UPDATE_ATTEMPTS: usize = 32;

impl EventStore {
    pub fn new(blobs: Arc<dyn BlobStore>) -> Self {
        EventStore { blobs }
    }

    /// Stores a new event: its target first, then its record.
    pub async fn create(&self, record: &EventRecord, target: Bytes) -> Result<(), EventError> {
        let event = record.id;
        self.blobs
            .put(
                &BlobKey::EventTarget { event }.path(),
                target,
                PutMode::CreateNew,
            )
            .await?;
        self.blobs
            .put(
                &BlobKey::EventRecord { event }.path(),
                encode(record),
                PutMode::CreateNew,
            )
            .await?;
        Ok(())
    }

    pub async fn get(&self, event: Uuid) -> Result<EventRecord, EventError> {
        let key = BlobKey::EventRecord { event }.path();
        let bytes = self
            .blobs
            .get(&key)
            .await
            .map_err(|e| not_found(event, e))?;
        serde_json::from_slice(&bytes).map_err(|e| EventError::Corrupt(event, e.to_string()))
    }

    /// Applies `change` to the record and writes it back if `change` returns true, retrying on
    /// a concurrent writer. Returns the record as stored afterwards.
    pub async fn update(
        &self,
        event: Uuid,
        mut change: impl FnMut(&mut EventRecord) -> bool,
    ) -> Result<EventRecord, EventError> {
        let key = BlobKey::EventRecord { event }.path();
        for _ in 0..MAX_UPDATE_ATTEMPTS {
            let meta = self
                .blobs
                .head(&key)
                .await
                .map_err(|e| not_found(event, e))?;
            let mut record = self.get(event).await?;
            if !change(&mut record) {
                return Ok(record);
            }
            record.updated_at = OffsetDateTime::now_utc();
            match self
                .blobs
                .put(&key, encode(&record), PutMode::IfMatch(meta.etag))
                .await
            {
                Ok(_) => return Ok(record),
                Err(StorageError::Precondition(_)) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(
            StorageError::Transient(format!("event {event}: too many concurrent updates").into())
                .into(),
        )
    }

    pub async fn target(&self, event: Uuid) -> Result<Bytes, EventError> {
        let key = BlobKey::EventTarget { event }.path();
        self.blobs.get(&key).await.map_err(|e| not_found(event, e))
    }

    /// Stores a photo's file before the record names it.
    pub async fn put_photo(
        &self,
        event: Uuid,
        photo: Uuid,
        bytes: Bytes,
    ) -> Result<(), EventError> {
        let key = BlobKey::EventPhoto { event, photo }.path();
        self.blobs.put(&key, bytes, PutMode::Overwrite).await?;
        Ok(())
    }

    pub async fn photo(&self, event: Uuid, photo: Uuid) -> Result<Bytes, EventError> {
        let key = BlobKey::EventPhoto { event, photo }.path();
        Ok(self.blobs.get(&key).await?)
    }

    /// Deletes a photo's file and its thumbnail (either already gone is fine).
    pub async fn delete_photo(&self, event: Uuid, photo: Uuid) -> Result<(), EventError> {
        for key in [
            BlobKey::EventPhoto { event, photo },
            BlobKey::EventThumbnail { event, photo },
        ] {
            match self.blobs.delete(&key.path()).await {
                Ok(()) | Err(StorageError::NotFound(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Stores a photo's thumbnail (a PNG).
    pub async fn put_thumbnail(
        &self,
        event: Uuid,
        photo: Uuid,
        png: Bytes,
    ) -> Result<(), EventError> {
        let key = BlobKey::EventThumbnail { event, photo }.path();
        self.blobs.put(&key, png, PutMode::Overwrite).await?;
        Ok(())
    }

    /// A photo's thumbnail, if it was made.
    pub async fn thumbnail(&self, event: Uuid, photo: Uuid) -> Result<Option<Bytes>, EventError> {
        let key = BlobKey::EventThumbnail { event, photo }.path();
        match self.blobs.get(&key).await {
            Ok(png) => Ok(Some(png)),
            Err(StorageError::NotFound(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The events `owner` made, newest first (by their markers).
    pub async fn of_owner(&self, owner: &Owner) -> Result<Vec<Uuid>, EventError> {
        let prefix = BlobKey::owner_events_prefix(&owner_digest(owner));
        let mut markers = match self.blobs.list_all(&prefix).await {
            Ok(markers) => markers,
            Err(StorageError::NotFound(_)) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        markers.sort_by_key(|m| std::cmp::Reverse(m.last_modified));
        Ok(markers
            .iter()
            .filter_map(|m| m.key.strip_prefix(&prefix)?.parse().ok())
            .collect())
    }

    /// Marks `event` as one of `owner`'s.
    pub async fn mark_owner(&self, owner: &Owner, event: Uuid) -> Result<(), EventError> {
        let key = BlobKey::OwnerEvent {
            owner: owner_digest(owner),
            event,
        };
        self.blobs
            .put(&key.path(), Bytes::new(), PutMode::Overwrite)
            .await?;
        Ok(())
    }
}

/// An owner as a storage key may spell it: the SHA-256 of its name, hex.
fn owner_digest(owner: &Owner) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(owner.as_str().as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn not_found(event: Uuid, e: StorageError) -> EventError {
    match e {
        StorageError::NotFound(_) => EventError::NotFound(event),
        e => e.into(),
    }
}

fn encode(record: &EventRecord) -> Bytes {
    Bytes::from(serde_json::to_vec(record).expect("event records serialize"))
}
