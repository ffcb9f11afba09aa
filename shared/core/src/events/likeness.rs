//! Near duplicates among an event's photos, found without reading them: each prepared photo's
//! perceptual hash is filed under its four 16-bit bands as marker names, and two hashes within
//! [`NEAR_DUPLICATE_BITS`] of each other share a band.

use bytes::Bytes;
use uuid::Uuid;

use super::{EventError, EventStore};
use crate::keys::BlobKey;
use crate::storage::{BlobStoreExt, PutMode, StorageError};

/// Bits of 64 in which two photos' perceptual hashes may differ and the photos still be the
/// same, near enough ([`EventStore::alike`]).
pub const NEAR_DUPLICATE_BITS: u32 = 3;

impl EventStore {
    /// Files `photo`'s perceptual hash (`likeness`) under its event's four bands of 16 bits,
    /// and returns an earlier photo of the event within [`NEAR_DUPLICATE_BITS`] of it, if one:
    /// two such hashes share a band, so four listings find it. Filed before it looks, so that
    /// of two alike photos prepared at once, each finds the other.
    pub async fn alike(
        &self,
        event: Uuid,
        photo: Uuid,
        likeness: u64,
    ) -> Result<Option<Uuid>, EventError> {
        for key in likeness_markers(event, photo, likeness) {
            self.blobs
                .put(&key, Bytes::new(), PutMode::Overwrite)
                .await?;
        }
        for band in 0..4 {
            let prefix = likeness_prefix(event, band, likeness);
            let listed = match self.blobs.list_all(&prefix).await {
                Ok(listed) => listed,
                Err(StorageError::NotFound(_)) => continue,
                Err(e) => return Err(e.into()),
            };
            let found = listed.iter().find_map(|meta| {
                let (other, theirs) = meta.key.strip_prefix(&prefix)?.split_once('.')?;
                let (other, theirs): (Uuid, u64) =
                    (other.parse().ok()?, u64::from_str_radix(theirs, 16).ok()?);
                (other != photo && (theirs ^ likeness).count_ones() <= NEAR_DUPLICATE_BITS)
                    .then_some(other)
            });
            if found.is_some() {
                return Ok(found);
            }
        }
        Ok(None)
    }
}

/// Where photos whose hash has `likeness`'s bits in band `band` (0 to 3) are filed.
fn likeness_prefix(event: Uuid, band: u32, likeness: u64) -> String {
    BlobKey::event_likeness_prefix(event, band, (likeness >> (band * 16)) as u16)
}

/// The markers filing `photo` under each band of its hash.
pub(super) fn likeness_markers(event: Uuid, photo: Uuid, likeness: u64) -> Vec<String> {
    (0..4)
        .map(|band| {
            BlobKey::EventLikeness {
                event,
                band,
                bits: (likeness >> (band * 16)) as u16,
                entry: format!("{photo}.{likeness:016x}"),
            }
            .path()
        })
        .collect()
}
