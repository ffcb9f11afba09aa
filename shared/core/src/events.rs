//! Events: one mosaic made of many people's photos. An event is a target photo, the job its
//! owner chose (a checked specification), and the photos guests contribute through its link,
//! each waiting, approved, left out or withdrawn. Its mosaics are ordinary jobs of a private
//! library that holds its approved photos.
//!
//! Storage, under `events/{id}/`, so that no write takes every photo:
//! - `event.json`: the event's record (settings, mosaics), changed by its owner and its
//!   mosaics under its ETag, never by a contribution;
//! - `records/{photo}.json`: each photo's own record, made only if absent and then changed
//!   under its own ETag;
//! - `index/{shelf}/{photo}[.{rrggbb}]`: an empty marker per photo on its shelf ([`Shelf`]),
//!   its colour in its name once prepared: counts, lists and the wish list are listings;
//! - `guests/{digest}/{slot}`: a guest's claims on the photos the event takes from them, each
//!   made only if absent, so that the per-guest cap holds whatever arrives at once;
//! - `photos/{photo}`, `thumbnails/{photo}.jpg`, `target`, `changed` (rewritten when the photos
//!   in its mosaics change).
//!
//! A photo's record is what holds; its marker follows it (written after the record, the old
//! one deleted), so a reader that needs a photo's state reads its record.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use uuid::Uuid;

use crate::keys::BlobKey;
use crate::libraries::Owner;
use crate::spec::JobSpec;
use crate::storage::{BlobStore, BlobStoreExt, PutMode, StorageError};

/// The largest side of a photo's thumbnail, in pixels: large enough to judge on the owner's
/// page and to show sharp on the wall.
pub const THUMBNAIL_SIDE: u32 = 320;

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

/// Where a photo is listed: its state once a processor prepared it, `received` before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shelf {
    /// Stored and recorded, waiting for a processor to prepare it.
    Received,
    Waiting,
    Approved,
    Rejected,
}

impl Shelf {
    pub const ALL: [Shelf; 4] = [
        Shelf::Received,
        Shelf::Waiting,
        Shelf::Approved,
        Shelf::Rejected,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Shelf::Received => "received",
            Shelf::Waiting => "waiting",
            Shelf::Approved => "approved",
            Shelf::Rejected => "rejected",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Shelf::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// The shelf `photo` belongs on.
    pub fn of(photo: &EventPhoto) -> Shelf {
        match (photo.prepared, photo.state) {
            (false, _) => Shelf::Received,
            (true, PhotoState::Waiting) => Shelf::Waiting,
            (true, PhotoState::Approved) => Shelf::Approved,
            (true, PhotoState::Rejected) => Shelf::Rejected,
        }
    }

    /// The name of `photo`'s marker: its id, and its colour once it has one.
    fn entry(photo: &EventPhoto) -> String {
        match photo.colour {
            Some([r, g, b]) => format!("{}.{r:02x}{g:02x}{b:02x}", photo.id),
            None => photo.id.to_string(),
        }
    }
}

/// A photo as its shelf lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub id: Uuid,
    pub colour: Option<[u8; 3]>,
    /// When it came onto the shelf.
    pub since: OffsetDateTime,
}

impl Listed {
    fn parse(entry: &str, since: OffsetDateTime) -> Option<Listed> {
        let (id, colour) = match entry.split_once('.') {
            Some((id, hex)) if hex.len() == 6 => {
                let byte = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).ok();
                (id, Some([byte(0)?, byte(2)?, byte(4)?]))
            }
            Some(_) => return None,
            None => (entry, None),
        };
        Some(Listed {
            id: id.parse().ok()?,
            colour,
            since,
        })
    }
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
    /// Whether a processor has prepared it (decoded it once: its colour and thumbnail made);
    /// until then its guest sees it as received and no mosaic takes it. Photos recorded
    /// before preparation was queued were prepared as they came.
    #[serde(default = "prepared_before")]
    pub prepared: bool,
    /// Why it could not be prepared: it is then left out, and gives its guest's slot back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
    /// The slot of its guest's it holds under the per-guest cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<u32>,
    /// Its perceptual hash, once prepared: near duplicates differ in few of its bits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub likeness: Option<u64>,
    /// Why the pre-screen held it for the owner's review (a blank frame, the same photo as
    /// another), if it did: it then waits, whatever the event's approval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<String>,
    /// What the event's classifier said of it, once it was offered to one (`photoreview`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<Review>,
    /// The words of the event's consent line the guest agreed to when sending it, if the
    /// event asks for consent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consent: Option<String>,
    /// Its cell on the event's board, once placed: kept for good.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell: Option<board::Cell>,
}

/// A photo offered to the event's classifier, and its verdict once it came.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Review {
    /// None while the classifier has not answered: the photo waits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// Why, in the classifier's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Review {
    pub fn pending(&self) -> bool {
        self.verdict.is_none()
    }
}

/// What a classifier says of a photo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Fit to show: in at once, unless the event waits for its owner's approval.
    Approve,
    /// Doubtful: it waits for the owner, with the reason.
    Hold,
    /// Not fit to show: left out, with the reason.
    Reject,
}

fn prepared_before() -> bool {
    true
}

impl EventPhoto {
    /// The photo's tile name in the event's library: its id, so that two guests' `IMG_0001.jpg`
    /// are two tiles; the name the guest sent is its caption.
    pub fn tile_name(&self) -> String {
        format!("{}.{}", self.id, self.extension)
    }
}

pub use crate::event_settings::{EventSettings, Overflow};
pub use browse::{PhotoFilter, PhotoPage};
pub use likeness::NEAR_DUPLICATE_BITS;

pub mod board;
pub mod board_pdf;
mod browse;
mod retention;

mod likeness;
use likeness::likeness_markers;
mod tiles;

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
    /// The secret in the printer link, the page a printer station takes sheets of stickers
    /// from; none until the owner makes one, and a new one ends the old.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub printer_token: Option<String>,
    /// The secret a classifier answers with (`photoreview` carries it with each photo);
    /// made when the owner first turns the classifier on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_token: Option<String>,
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
    /// Photos recorded in the event's record by earlier versions: moved to records of their
    /// own the first time the event is read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub photos: Vec<EventPhoto>,
    /// The event's mosaics, oldest first.
    #[serde(default)]
    pub mosaics: Vec<Uuid>,
    /// The board its photos are stuck on, for an event made as one: each photo in gets its
    /// cell at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub board: Option<board::Board>,
    /// The target's colours on a coarse grid ([`crate::wishlist::target_colours`]).
    #[serde(default)]
    pub target_colours: Vec<[u8; 3]>,
    /// Who its mosaics are made for (absent on events made before it was kept: those make
    /// mosaics only when asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maker: Option<Maker>,
    /// When the photos in its mosaics last changed, on events made before the `changed` blob
    /// kept it.
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub approved_changed_at: Option<OffsetDateTime>,
    /// When its latest mosaic was asked for.
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub mosaic_asked_at: Option<OffsetDateTime>,
    /// What its newest mosaics show of the photos, newest last ([`SHOWINGS_KEPT`] at most).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub showing: Vec<Showing>,
    /// The last photo (in id order) the latest turn took, when photos take turns: the next
    /// turn starts after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_after: Option<Uuid>,
    /// When it stopped taking photos (its photos' retention runs from then); none while open.
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub closed_at: Option<OffsetDateTime>,
    /// When its guests' photos went, their retention over: it keeps its record, its target and
    /// its mosaics' pixels.
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub erased_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// The mosaics whose [`Showing`] an event keeps.
pub const SHOWINGS_KEPT: usize = 8;

/// What one of an event's mosaics shows of its approved photos.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Showing {
    pub job: Uuid,
    /// Photos in its library.
    pub photos: u32,
    /// Cells of its grid.
    pub cells: u32,
    /// The photos of its turn, first and last in id order (the range may wrap round past the
    /// largest id), when photos take turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<(Uuid, Uuid)>,
}

impl Showing {
    /// Photos the mosaic shows: every one in its library while its cells allow.
    pub fn shown(&self) -> u32 {
        self.photos.min(self.cells)
    }

    /// Whether `photo` is in this mosaic's turn: `None` when the mosaic is not a turn.
    pub fn in_turn(&self, photo: Uuid) -> Option<bool> {
        let (first, last) = self.turn?;
        Some(if first <= last {
            (first..=last).contains(&photo)
        } else {
            photo >= first || photo <= last
        })
    }
}

/// The next turn of `approved` (in id order) for a grid of `cells`, after the photo `after`:
/// the photos of the turn (wrapping round to the first), and its first and last.
pub fn next_turn(
    approved: &[Uuid],
    cells: usize,
    after: Option<Uuid>,
) -> (Vec<Uuid>, (Uuid, Uuid)) {
    let mut sorted = approved.to_vec();
    sorted.sort();
    let start = after.map_or(0, |after| sorted.partition_point(|p| *p <= after));
    let take = cells.clamp(1, sorted.len().max(1));
    let turn: Vec<Uuid> = (0..take.min(sorted.len()))
        .map(|i| sorted[(start + i) % sorted.len()])
        .collect();
    let ends = (turn[0], turn[turn.len() - 1]);
    (turn, ends)
}

impl EventRecord {
    /// What the mosaic `job` shows, if the record still keeps it.
    pub fn showing_of(&self, job: Uuid) -> Option<&Showing> {
        self.showing.iter().find(|s| s.job == job)
    }

    /// Notes what mosaic `showing.job` shows, keeping the newest [`SHOWINGS_KEPT`].
    pub fn note_showing(&mut self, showing: Showing) {
        self.showing.push(showing);
        let extra = self.showing.len().saturating_sub(SHOWINGS_KEPT);
        self.showing.drain(..extra);
    }

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

    /// Whether a mosaic is due on its own at `now`: automatic mosaics are on, the photos in it
    /// (some are in) `changed` after the latest mosaic was asked for, and have stayed so for
    /// the quiet interval.
    pub fn mosaic_due(&self, now: OffsetDateTime, changed: Option<OffsetDateTime>) -> bool {
        let quiet = time::Duration::seconds(i64::from(self.settings.auto_after_seconds));
        self.settings.auto_after_seconds > 0
            && self.maker.is_some()
            && changed.is_some_and(|changed| {
                changed + quiet <= now && self.mosaic_asked_at.is_none_or(|asked| asked < changed)
            })
    }

    /// The colours its approved photos (`approved`) cannot match yet, most wanted first.
    pub fn wishlist(&self, approved: &[Listed]) -> Vec<crate::wishlist::Wish> {
        let photos: Vec<[u8; 3]> = approved.iter().filter_map(|p| p.colour).collect();
        crate::wishlist::wishlist(&self.target_colours, &photos)
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

/// Photo records read at once when many are listed.
const RECORDS_AT_ONCE: usize = 16;

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

    /// Event `event`'s record; photos an earlier version kept in it are moved to their own
    /// records first.
    pub async fn get(&self, event: Uuid) -> Result<EventRecord, EventError> {
        let record = self.read(event).await?;
        if record.photos.is_empty() {
            return Ok(record);
        }
        self.move_out_photos(&record).await?;
        self.update(event, |r| !std::mem::take(&mut r.photos).is_empty())
            .await
    }

    async fn read(&self, event: Uuid) -> Result<EventRecord, EventError> {
        let key = BlobKey::EventRecord { event }.path();
        let bytes = self
            .blobs
            .get(&key)
            .await
            .map_err(|e| not_found(event, e))?;
        serde_json::from_slice(&bytes).map_err(|e| EventError::Corrupt(event, e.to_string()))
    }

    /// Gives each photo kept in `record` (by an earlier version) its own record, marker and
    /// guest's slot; a photo moved before is left as it is.
    async fn move_out_photos(&self, record: &EventRecord) -> Result<(), EventError> {
        for photo in &record.photos {
            if self.photo_record(record.id, photo.id).await?.is_some() {
                continue;
            }
            let mut photo = photo.clone();
            let claimed = self
                .claim_slots(record.id, &photo.contributor, &[photo.id], 0)
                .await?;
            photo.slot = claimed
                .ok()
                .and_then(|slots| slots.first().copied().flatten());
            self.add_photo(record.id, &photo).await?;
            if photo.state == PhotoState::Approved {
                self.touch_changed(record.id).await?;
            }
        }
        Ok(())
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
            let mut record = self.read(event).await?;
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

    /// Records a new photo (its file stored already) and lists it on its shelf.
    pub async fn add_photo(&self, event: Uuid, photo: &EventPhoto) -> Result<(), EventError> {
        let key = BlobKey::EventPhotoRecord {
            event,
            photo: photo.id,
        };
        self.blobs
            .put(&key.path(), encode(photo), PutMode::CreateNew)
            .await?;
        self.shelve(event, photo).await
    }

    /// Photo `photo`'s record and its ETag, if the event holds it.
    pub async fn photo_record(
        &self,
        event: Uuid,
        photo: Uuid,
    ) -> Result<Option<(EventPhoto, String)>, EventError> {
        let key = BlobKey::EventPhotoRecord { event, photo }.path();
        let meta = match self.blobs.head(&key).await {
            Ok(meta) => meta,
            Err(StorageError::NotFound(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let bytes = match self.blobs.get(&key).await {
            Ok(bytes) => bytes,
            Err(StorageError::NotFound(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let record = serde_json::from_slice(&bytes)
            .map_err(|e| EventError::Corrupt(event, format!("photo {photo}: {e}")))?;
        Ok(Some((record, meta.etag)))
    }

    /// Photo `photo`, if the event holds it.
    pub async fn find_photo(
        &self,
        event: Uuid,
        photo: Uuid,
    ) -> Result<Option<EventPhoto>, EventError> {
        Ok(self.photo_record(event, photo).await?.map(|(p, _)| p))
    }

    /// Applies `change` to photo `photo`'s record and writes it back if `change` returns true
    /// (under its ETag, retrying on a concurrent writer), then moves its marker to its shelf.
    /// Returns the photo as it is afterwards; none if the event does not hold it.
    pub async fn update_photo(
        &self,
        event: Uuid,
        photo: Uuid,
        mut change: impl FnMut(&mut EventPhoto) -> bool,
    ) -> Result<Option<EventPhoto>, EventError> {
        let key = BlobKey::EventPhotoRecord { event, photo }.path();
        for _ in 0..MAX_UPDATE_ATTEMPTS {
            let Some((mut record, etag)) = self.photo_record(event, photo).await? else {
                return Ok(None);
            };
            let before = record.clone();
            if !change(&mut record) {
                return Ok(Some(record));
            }
            match self
                .blobs
                .put(&key, encode(&record), PutMode::IfMatch(etag))
                .await
            {
                Ok(_) => {
                    if marker(event, &record) != marker(event, &before) {
                        self.shelve(event, &record).await?;
                        self.unshelve(event, &before).await?;
                    }
                    return Ok(Some(record));
                }
                Err(StorageError::Precondition(_)) | Err(StorageError::NotFound(_)) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(
            StorageError::Transient(format!("photo {photo}: too many concurrent updates").into())
                .into(),
        )
    }

    /// Takes photo `photo` out of the event: its record, markers, guest's slot, file and
    /// thumbnail (any already gone is fine).
    pub async fn remove_photo(&self, event: Uuid, photo: &EventPhoto) -> Result<(), EventError> {
        let key = BlobKey::EventPhotoRecord {
            event,
            photo: photo.id,
        };
        forget(self.blobs.delete(&key.path()).await)?;
        self.unshelve(event, photo).await?;
        if let Some(likeness) = photo.likeness {
            for key in likeness_markers(event, photo.id, likeness) {
                forget(self.blobs.delete(&key).await)?;
            }
        }
        match photo.slot {
            Some(slot) => self.release_slot(event, &photo.contributor, slot).await?,
            None => {
                for kind in [UNSLOTTED, UNREADABLE] {
                    forget(self.blobs.delete(&guest_marker(event, photo, kind)).await)?;
                }
            }
        }
        self.delete_photo(event, photo.id).await
    }

    /// Writes `photo`'s marker on its shelf.
    async fn shelve(&self, event: Uuid, photo: &EventPhoto) -> Result<(), EventError> {
        self.blobs
            .put(&marker(event, photo), Bytes::new(), PutMode::Overwrite)
            .await?;
        Ok(())
    }

    /// Deletes `photo`'s marker as it was.
    async fn unshelve(&self, event: Uuid, photo: &EventPhoto) -> Result<(), EventError> {
        forget(self.blobs.delete(&marker(event, photo)).await)
    }

    /// The photos on `shelf`, oldest on it first.
    pub async fn shelf(&self, event: Uuid, shelf: Shelf) -> Result<Vec<Listed>, EventError> {
        let prefix = BlobKey::event_shelf_prefix(event, shelf.as_str());
        let mut listed: Vec<Listed> = match self.blobs.list_all(&prefix).await {
            Ok(blobs) => blobs
                .iter()
                .filter_map(|b| Listed::parse(b.key.strip_prefix(&prefix)?, b.last_modified))
                .collect(),
            Err(StorageError::NotFound(_)) => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        listed.sort_by_key(|p| (p.since, p.id));
        Ok(listed)
    }

    /// The records of `listed` photos, in their order (those gone since are left out), read a
    /// few at once.
    pub async fn records_of(
        &self,
        event: Uuid,
        listed: impl IntoIterator<Item = Uuid>,
    ) -> Result<Vec<EventPhoto>, EventError> {
        use futures_util::stream::{self, StreamExt, TryStreamExt};
        let found: Vec<Option<EventPhoto>> = stream::iter(listed)
            .map(|photo| self.find_photo(event, photo))
            .buffered(RECORDS_AT_ONCE)
            .try_collect()
            .await?;
        Ok(found.into_iter().flatten().collect())
    }

    /// How many photos are on `shelf`, and the records of the newest `limit` of them, newest
    /// first (a photo that moved shelf since is left out).
    pub async fn newest_on(
        &self,
        event: Uuid,
        shelf: Shelf,
        limit: usize,
    ) -> Result<(usize, Vec<EventPhoto>), EventError> {
        let listed = self.shelf(event, shelf).await?;
        let newest = listed.iter().rev().take(limit).map(|p| p.id);
        let mut photos = self.records_of(event, newest).await?;
        photos.retain(|p| Shelf::of(p) == shelf);
        Ok((listed.len(), photos))
    }

    /// How many photos the event holds, on every shelf.
    pub async fn count_photos(&self, event: Uuid) -> Result<usize, EventError> {
        let mut count = 0;
        for shelf in Shelf::ALL {
            count += self.shelf(event, shelf).await?.len();
        }
        Ok(count)
    }

    /// The photos `guest` sent that are still there, oldest first.
    pub async fn photos_of(
        &self,
        event: Uuid,
        guest: &Owner,
    ) -> Result<Vec<EventPhoto>, EventError> {
        let mut photos = Vec::new();
        for (_, photo) in self.slots(event, guest).await? {
            if let Some(photo) = self.find_photo(event, photo).await? {
                photos.push(photo);
            }
        }
        photos.sort_by_key(|p| p.added_at);
        Ok(photos)
    }

    /// Gives `photo`'s slot back while its guest still lists it (a photo that cannot be read,
    /// kept for its guest to see why): its marker among the guest's then counts for no cap.
    pub async fn free_slot(&self, event: Uuid, photo: &EventPhoto) -> Result<(), EventError> {
        self.blobs
            .put(
                &guest_marker(event, photo, UNREADABLE),
                Bytes::new(),
                PutMode::Overwrite,
            )
            .await?;
        match photo.slot {
            Some(slot) => self.release_slot(event, &photo.contributor, slot).await,
            None => forget(
                self.blobs
                    .delete(&guest_marker(event, photo, UNSLOTTED))
                    .await,
            ),
        }
    }

    /// `guest`'s slots taken, and the photo each holds (`u32::MAX` for a photo of theirs that
    /// holds none).
    async fn slots(&self, event: Uuid, guest: &Owner) -> Result<Vec<(u32, Uuid)>, EventError> {
        let prefix = BlobKey::event_guest_prefix(event, &owner_digest(guest));
        let blobs = match self.blobs.list_all(&prefix).await {
            Ok(blobs) => blobs,
            Err(StorageError::NotFound(_)) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut slots = Vec::new();
        for blob in blobs {
            let name = blob.key.strip_prefix(&prefix).unwrap_or_default();
            let unslotted = name
                .strip_prefix(UNSLOTTED)
                .or(name.strip_prefix(UNREADABLE));
            if let Some(photo) = unslotted.and_then(|id| id.parse().ok()) {
                slots.push((u32::MAX, photo));
                continue;
            }
            let Some(slot) = name.parse().ok() else {
                continue;
            };
            let photo = match self.blobs.get(&blob.key).await {
                Ok(bytes) => std::str::from_utf8(&bytes)
                    .ok()
                    .and_then(|t| t.parse().ok()),
                Err(StorageError::NotFound(_)) => None,
                Err(e) => return Err(e.into()),
            };
            if let Some(photo) = photo {
                slots.push((slot, photo));
            }
        }
        Ok(slots)
    }

    /// Claims one of `guest`'s slots for each of `photos`, within `cap` slots: the slots, or,
    /// when the cap has no room for them all, how many the guest holds (none are kept then).
    /// Each slot is made only if absent, so that guests sending at once, to any number of web
    /// processes, never pass the cap. Without a cap (0) nothing is listed: each photo is
    /// listed among the guest's without a slot (`None`), and still counts if a cap comes later.
    pub async fn claim_slots(
        &self,
        event: Uuid,
        guest: &Owner,
        photos: &[Uuid],
        cap: u32,
    ) -> Result<Result<Vec<Option<u32>>, u32>, EventError> {
        let digest = owner_digest(guest);
        if cap == 0 {
            let prefix = BlobKey::event_guest_prefix(event, &digest);
            for photo in photos {
                let key = format!("{prefix}{UNSLOTTED}{photo}");
                self.blobs
                    .put(&key, Bytes::new(), PutMode::Overwrite)
                    .await?;
            }
            return Ok(Ok(vec![None; photos.len()]));
        }
        let (mut taken, unslotted) = self.slot_numbers(event, &digest).await?;
        let mut claimed = Vec::with_capacity(photos.len());
        for &photo in photos {
            loop {
                if (taken.len() + unslotted) as u32 >= cap {
                    let held = (taken.len() + unslotted - claimed.len()) as u32;
                    for &slot in &claimed {
                        self.release_slot(event, guest, slot).await?;
                    }
                    return Ok(Err(held));
                }
                let slot = (0..).find(|n| !taken.contains(n)).unwrap_or_default();
                taken.insert(slot);
                let key = BlobKey::EventGuestSlot {
                    event,
                    guest: digest.clone(),
                    slot,
                };
                let id = Bytes::from(photo.to_string());
                match self.blobs.put(&key.path(), id, PutMode::CreateNew).await {
                    Ok(_) => {
                        claimed.push(slot);
                        break;
                    }
                    // Another photo of the guest's took it first: the next one.
                    Err(StorageError::AlreadyExists(_)) => continue,
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(Ok(claimed.into_iter().map(Some).collect()))
    }

    /// The numbers of `guest`'s slots taken, and how many of their photos count without one.
    async fn slot_numbers(
        &self,
        event: Uuid,
        digest: &str,
    ) -> Result<(BTreeSet<u32>, usize), EventError> {
        let prefix = BlobKey::event_guest_prefix(event, digest);
        let blobs = match self.blobs.list_all(&prefix).await {
            Ok(blobs) => blobs,
            Err(StorageError::NotFound(_)) => return Ok((BTreeSet::new(), 0)),
            Err(e) => return Err(e.into()),
        };
        let names = blobs.iter().filter_map(|b| b.key.strip_prefix(&prefix));
        let (mut numbers, mut unslotted) = (BTreeSet::new(), 0);
        for name in names {
            match name.parse() {
                Ok(n) => {
                    numbers.insert(n);
                }
                Err(_) if name.starts_with(UNSLOTTED) => unslotted += 1,
                Err(_) => {}
            }
        }
        Ok((numbers, unslotted))
    }

    /// Gives `guest`'s slot back.
    pub async fn release_slot(
        &self,
        event: Uuid,
        guest: &Owner,
        slot: u32,
    ) -> Result<(), EventError> {
        let key = BlobKey::EventGuestSlot {
            event,
            guest: owner_digest(guest),
            slot,
        };
        forget(self.blobs.delete(&key.path()).await)
    }

    /// Notes that the photos in the event's mosaics changed now. The time is written in the
    /// blob, to the nanosecond: a blob's own time (Azure's) is to the second, which would
    /// place a change within the second after a mosaic was asked for before it.
    pub async fn touch_changed(&self, event: Uuid) -> Result<(), EventError> {
        let key = BlobKey::EventChanged { event }.path();
        let now = OffsetDateTime::now_utc().unix_timestamp_nanos().to_string();
        self.blobs
            .put(&key, Bytes::from(now), PutMode::Overwrite)
            .await?;
        Ok(())
    }

    /// When the photos in `record`'s mosaics last changed.
    pub async fn changed_at(
        &self,
        record: &EventRecord,
    ) -> Result<Option<OffsetDateTime>, EventError> {
        let key = BlobKey::EventChanged { event: record.id }.path();
        match self.blobs.get(&key).await {
            Ok(body) => {
                let at = std::str::from_utf8(&body)
                    .ok()
                    .and_then(|s| s.parse::<i128>().ok())
                    .and_then(|n| OffsetDateTime::from_unix_timestamp_nanos(n).ok());
                match at {
                    Some(at) => Ok(Some(at)),
                    // Written before the time was kept in it.
                    None => Ok(Some(self.blobs.head(&key).await?.last_modified)),
                }
            }
            Err(StorageError::NotFound(_)) => Ok(record.approved_changed_at),
            Err(e) => Err(e.into()),
        }
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
            BlobKey::EventTile { event, photo },
        ] {
            forget(self.blobs.delete(&key.path()).await)?;
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
        self.optional(&BlobKey::EventThumbnail { event, photo })
            .await
    }

    /// The blob at `key`, if it is there.
    async fn optional(&self, key: &BlobKey) -> Result<Option<Bytes>, EventError> {
        match self.blobs.get(&key.path()).await {
            Ok(bytes) => Ok(Some(bytes)),
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

/// How the name of a guest's photo that holds no slot starts, among the guest's slots: one
/// sent where no cap was set (it counts if one is set later)...
const UNSLOTTED: &str = "x";
/// ... and one that cannot be read (it counts for no cap).
const UNREADABLE: &str = "u";

/// The key that lists `photo` among its guest's photos without a slot, as `kind`.
fn guest_marker(event: Uuid, photo: &EventPhoto, kind: &str) -> String {
    let prefix = BlobKey::event_guest_prefix(event, &owner_digest(&photo.contributor));
    format!("{prefix}{kind}{}", photo.id)
}

/// The key of `photo`'s marker on its shelf.
fn marker(event: Uuid, photo: &EventPhoto) -> String {
    BlobKey::EventShelf {
        event,
        shelf: Shelf::of(photo).as_str().into(),
        entry: Shelf::entry(photo),
    }
    .path()
}

/// A deletion's outcome, the blob already gone counted as done.
fn forget(deleted: Result<(), StorageError>) -> Result<(), EventError> {
    match deleted {
        Ok(()) | Err(StorageError::NotFound(_)) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

fn encode(record: &impl Serialize) -> Bytes {
    Bytes::from(serde_json::to_vec(record).expect("event records serialize"))
}
