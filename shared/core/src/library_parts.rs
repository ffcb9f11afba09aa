//! A library version's index stored as content-addressed parts, so that versions share what
//! did not change: an edit that adds or takes out a few tiles writes the parts around them and
//! a new manifest, not a copy of every rendition.
//!
//! The index is cut where a rolling hash of its bytes says (content-defined chunking with a
//! gear hash, as FastCDC does), so a tile taken out or added moves no cut away from it: the
//! parts before and after are the same bytes, with the same SHA-256, as in the version before.
//! A version's blob (`libraries/{id}/v{n}/index`) is then a manifest naming its parts in order;
//! an index stored whole (before parts) still reads as it is.

use std::collections::HashSet;

use bytes::Bytes;
use sha2::Digest;
use time::OffsetDateTime;

use crate::keys::BlobKey;
use crate::storage::{BlobStore, BlobStoreExt, PutMode, StorageError};

/// The first line of a manifest.
const MAGIC: &[u8] = b"tessera-index-parts 1\n";
/// Parts are at least this long (but the last), about [`AVERAGE_PART`] and at most [`MAX_PART`].
const MIN_PART: usize = 256 << 10;
const AVERAGE_PART: usize = 1 << 20;
const MAX_PART: usize = 4 << 20;
/// A version being published names its parts in a pending manifest before it writes them, so
/// that a collection running meanwhile keeps them; one left behind by a publish that never
/// ended names nothing after this long.
const PENDING_LIFETIME: time::Duration = time::Duration::hours(1);

/// The gear hash's table: one pseudo-random word per byte value (SplitMix64 from a fixed seed,
/// so every process cuts the same bytes at the same places).
const GEAR: [u64; 256] = {
    let mut table = [0u64; 256];
    let mut state: u64 = 0x7e55_e7a0_1dec_0de5;
    let mut i = 0;
    while i < 256 {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        table[i] = z ^ (z >> 31);
        i += 1;
    }
    table
};

/// Where `bytes` are cut into parts.
pub fn cuts(bytes: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mask = (AVERAGE_PART as u64).next_power_of_two() - 1;
    let mut parts = Vec::new();
    let mut start = 0;
    while start < bytes.len() {
        let end = (start + MAX_PART).min(bytes.len());
        let mut cut = end;
        let mut hash: u64 = 0;
        let mut i = start + MIN_PART.min(end - start);
        // The hash looks at the 64 bytes before each place: warmed up over them.
        for &b in &bytes[i.saturating_sub(64).max(start)..i] {
            hash = (hash << 1).wrapping_add(GEAR[b as usize]);
        }
        while i < end {
            hash = (hash << 1).wrapping_add(GEAR[bytes[i] as usize]);
            i += 1;
            if hash & mask == 0 {
                cut = i;
                break;
            }
        }
        parts.push(start..cut);
        start = cut;
    }
    parts
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// An index stored as parts, its manifest not yet a version's.
pub struct Stored {
    /// What the version's blob holds.
    pub manifest: Bytes,
    /// Bytes of the parts written (those stored already were not).
    pub written: u64,
    /// The pending manifest that keeps the parts from a collection until the version names
    /// them: [`Stored::done`] once it does (or once the version is given up).
    pending: String,
}

impl Stored {
    /// The version's blob is written (or will never be): the pending manifest goes.
    pub async fn done(self, blobs: &dyn BlobStore) {
        if let Err(e) = blobs.delete(&self.pending).await {
            tracing::debug!(key = self.pending, error = %e, "a pending manifest is left to expire");
        }
    }
}

/// Stores `index` as parts of library `library` (those already stored are not written again),
/// named first in a pending manifest.
pub async fn store(
    blobs: &dyn BlobStore,
    library: &str,
    index: &Bytes,
) -> Result<Stored, StorageError> {
    let ranges = cuts(index);
    let mut manifest = MAGIC.to_vec();
    let mut parts = Vec::with_capacity(ranges.len());
    for range in ranges {
        let part = index.slice(range);
        let digest = hex(&sha2::Sha256::digest(&part));
        manifest.extend_from_slice(format!("{digest} {}\n", part.len()).as_bytes());
        parts.push((digest, part));
    }
    let manifest = Bytes::from(manifest);
    let pending = BlobKey::LibraryPending {
        library: library.to_string(),
        id: uuid::Uuid::new_v4(),
    }
    .path();
    blobs
        .put(&pending, manifest.clone(), PutMode::CreateNew)
        .await?;
    let mut written = 0;
    let mut seen = HashSet::new();
    for (digest, part) in parts {
        if !seen.insert(digest.clone()) {
            continue;
        }
        let key = BlobKey::LibraryPart {
            library: library.to_string(),
            digest,
        }
        .path();
        let len = part.len() as u64;
        match blobs.put(&key, part, PutMode::CreateNew).await {
            Ok(_) => written += len,
            Err(StorageError::AlreadyExists(_)) => {}
            Err(e) => {
                let _ = blobs.delete(&pending).await;
                return Err(e);
            }
        }
    }
    Ok(Stored {
        manifest,
        written,
        pending,
    })
}

/// The parts a manifest names, in order, with their lengths; `None` for an index stored whole.
fn named_parts(manifest: &[u8]) -> Option<Result<Vec<(String, usize)>, String>> {
    let body = manifest.strip_prefix(MAGIC)?;
    let text = match std::str::from_utf8(body) {
        Ok(text) => text,
        Err(e) => return Some(Err(format!("the manifest is not text: {e}"))),
    };
    Some(
        text.lines()
            .map(|line| {
                let (digest, len) = line
                    .split_once(' ')
                    .ok_or("a manifest line is not two words")?;
                let ok = digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit());
                let len = len.parse().map_err(|_| "a part's length is not a number")?;
                ok.then(|| (digest.to_string(), len))
                    .ok_or("a part's name is not a SHA-256")
            })
            .collect::<Result<_, _>>()
            .map_err(str::to_string),
    )
}

/// The index a version's blob holds: its parts put together (each checked against its name),
/// or the blob as it is when it was stored whole.
pub async fn load(
    blobs: &dyn BlobStore,
    library: &str,
    blob: Bytes,
) -> Result<Bytes, StorageError> {
    let Some(parts) = named_parts(&blob) else {
        return Ok(blob);
    };
    let parts = parts.map_err(|e| StorageError::Other(e.into()))?;
    let mut index = Vec::with_capacity(parts.iter().map(|p| p.1).sum());
    for (digest, len) in parts {
        let key = BlobKey::LibraryPart {
            library: library.to_string(),
            digest: digest.clone(),
        }
        .path();
        let part = blobs.get(&key).await?;
        if part.len() != len || hex(&sha2::Sha256::digest(&part)) != digest {
            return Err(StorageError::Other(
                format!("{key} is not the part its manifest names").into(),
            ));
        }
        index.extend_from_slice(&part);
    }
    Ok(Bytes::from(index))
}

/// Deletes the parts of library `library` that no stored version names, nor a version being
/// published (its pending manifest), and the pending manifests of publishes that never ended.
/// Returns the blobs deleted.
pub async fn collect(blobs: &dyn BlobStore, library: &str) -> Result<u64, StorageError> {
    let parts_prefix = BlobKey::library_parts_prefix(library);
    let parts = match blobs.list_all(&parts_prefix).await {
        Ok(parts) => parts,
        Err(StorageError::NotFound(_)) => return Ok(0),
        Err(e) => return Err(e),
    };
    if parts.is_empty() {
        return Ok(0);
    }
    let mut named = HashSet::new();
    let mut deleted = 0;
    let pending_prefix = BlobKey::library_pending_prefix(library);
    let expired = OffsetDateTime::now_utc() - PENDING_LIFETIME;
    for meta in blobs.list_all(&BlobKey::library_prefix(library)).await? {
        let pending = meta.key.starts_with(&pending_prefix);
        if pending && meta.last_modified < expired {
            deleted += u64::from(blobs.delete(&meta.key).await.is_ok());
            continue;
        }
        if !pending && BlobKey::library_version_of(&meta.key, library).is_none() {
            continue;
        }
        let blob = match blobs.get(&meta.key).await {
            Ok(blob) => blob,
            Err(StorageError::NotFound(_)) => continue,
            Err(e) => return Err(e),
        };
        if let Some(Ok(list)) = named_parts(&blob) {
            named.extend(list.into_iter().map(|(digest, _)| digest));
        }
    }
    for meta in parts {
        let digest = &meta.key[parts_prefix.len()..];
        if named.contains(digest) {
            continue;
        }
        match blobs.delete(&meta.key).await {
            Ok(()) => deleted += 1,
            Err(StorageError::NotFound(_)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noise(n: usize, seed: u64) -> Vec<u8> {
        let mut x = seed;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    }

    #[test]
    fn parts_cover_the_bytes_within_their_bounds() {
        let bytes = noise(20 << 20, 7);
        let parts = cuts(&bytes);
        assert_eq!(parts.first().unwrap().start, 0);
        assert_eq!(parts.last().unwrap().end, bytes.len());
        for pair in parts.windows(2) {
            assert_eq!(pair[0].end, pair[1].start);
        }
        for part in &parts[..parts.len() - 1] {
            assert!((MIN_PART..=MAX_PART).contains(&part.len()), "{part:?}");
        }
        assert!((8..=60).contains(&parts.len()), "{} parts", parts.len());
    }

    #[test]
    fn taking_bytes_out_changes_only_the_parts_around_them() {
        let before = noise(24 << 20, 11);
        let mut after = before.clone();
        after.drain(9_000_000..9_070_000);
        let digests = |b: &[u8]| -> HashSet<Vec<u8>> {
            cuts(b)
                .into_iter()
                .map(|r| sha2::Sha256::digest(&b[r]).to_vec())
                .collect()
        };
        let (old, new) = (digests(&before), digests(&after));
        let fresh = new.difference(&old).count();
        assert!(fresh <= 2, "{fresh} new parts of {}", new.len());
    }
}
