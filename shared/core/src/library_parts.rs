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
    let mut parts = Vec::new();
    let mut start = 0;
    while start < bytes.len() {
        let cut = start + first_cut(&bytes[start..]);
        parts.push(start..cut);
        start = cut;
    }
    parts
}

/// Where the first part of `bytes` ends. It looks at no more than [`MAX_PART`] bytes, so a
/// file is cut a part at a time as [`cuts`] cuts it whole.
fn first_cut(bytes: &[u8]) -> usize {
    let mask = (AVERAGE_PART as u64).next_power_of_two() - 1;
    let end = MAX_PART.min(bytes.len());
    let mut hash: u64 = 0;
    let mut i = MIN_PART.min(end);
    // The hash looks at the 64 bytes before each place: warmed up over them.
    for &b in &bytes[i.saturating_sub(64)..i] {
        hash = (hash << 1).wrapping_add(GEAR[b as usize]);
    }
    while i < end {
        hash = (hash << 1).wrapping_add(GEAR[bytes[i] as usize]);
        i += 1;
        if hash & mask == 0 {
            return i;
        }
    }
    end
}

/// An index to store: in memory, or in a file (one larger than memory) read a part at a time.
pub enum IndexSource {
    Memory(Bytes),
    File(std::sync::Arc<std::fs::File>),
}

impl From<Bytes> for IndexSource {
    fn from(bytes: Bytes) -> Self {
        IndexSource::Memory(bytes)
    }
}

impl IndexSource {
    /// The index's length in bytes.
    pub fn len(&self) -> Result<u64, StorageError> {
        match self {
            IndexSource::Memory(bytes) => Ok(bytes.len() as u64),
            IndexSource::File(file) => Ok(file.metadata().map_err(io_error)?.len()),
        }
    }

    /// True for an index of no bytes.
    pub fn is_empty(&self) -> bool {
        self.len().is_ok_and(|len| len == 0)
    }

    /// The index's parts: each one's SHA-256, where it starts and its length.
    async fn parts(&self) -> Result<Vec<(String, u64, usize)>, StorageError> {
        let named = |at: u64, part: &[u8]| (hex(&sha2::Sha256::digest(part)), at, part.len());
        match self {
            IndexSource::Memory(bytes) => Ok(cuts(bytes)
                .into_iter()
                .map(|r| named(r.start as u64, &bytes[r]))
                .collect()),
            IndexSource::File(file) => {
                let file = file.clone();
                tokio::task::spawn_blocking(move || {
                    let len = file.metadata()?.len();
                    let (mut parts, mut at, mut buf) = (Vec::new(), 0u64, Vec::new());
                    while at < len {
                        let want = (MAX_PART as u64).min(len - at) as usize;
                        buf.resize(want, 0);
                        std::os::unix::fs::FileExt::read_exact_at(&*file, &mut buf, at)?;
                        let cut = first_cut(&buf);
                        parts.push(named(at, &buf[..cut]));
                        at += cut as u64;
                    }
                    Ok(parts)
                })
                .await
                .map_err(|e| StorageError::Other(e.to_string().into()))?
                .map_err(io_error)
            }
        }
    }

    /// `len` bytes from `at`.
    async fn read(&self, at: u64, len: usize) -> Result<Bytes, StorageError> {
        match self {
            IndexSource::Memory(bytes) => Ok(bytes.slice(at as usize..at as usize + len)),
            IndexSource::File(file) => {
                let file = file.clone();
                tokio::task::spawn_blocking(move || {
                    let mut part = vec![0u8; len];
                    std::os::unix::fs::FileExt::read_exact_at(&*file, &mut part, at)?;
                    Ok(Bytes::from(part))
                })
                .await
                .map_err(|e| StorageError::Other(e.to_string().into()))?
                .map_err(io_error)
            }
        }
    }
}

fn io_error(e: std::io::Error) -> StorageError {
    StorageError::Other(format!("a library index's scratch file: {e}").into())
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
/// named first in a pending manifest. A part at a time is held in memory.
pub async fn store(
    blobs: &dyn BlobStore,
    library: &str,
    index: &IndexSource,
) -> Result<Stored, StorageError> {
    let parts = index.parts().await?;
    let mut manifest = MAGIC.to_vec();
    for (digest, _, len) in &parts {
        manifest.extend_from_slice(format!("{digest} {len}\n").as_bytes());
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
    for (digest, at, len) in parts {
        if !seen.insert(digest.clone()) {
            continue;
        }
        let key = BlobKey::LibraryPart {
            library: library.to_string(),
            digest,
        }
        .path();
        let put = match index.read(at, len).await {
            Ok(part) => blobs.put(&key, part, PutMode::CreateNew).await.map(|_| ()),
            Err(e) => Err(e),
        };
        match put {
            Ok(()) => written += len as u64,
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

/// The length of the index a version's blob names as parts; `None` for an index stored whole
/// (the blob is the index) or a manifest that does not read.
pub fn parts_len(blob: &[u8]) -> Option<u64> {
    let parts = named_parts(blob)?.ok()?;
    Some(parts.iter().map(|(_, len)| *len as u64).sum())
}

/// The index a version's blob holds: its parts put together (each checked against its name),
/// or the blob as it is when it was stored whole.
pub async fn load(
    blobs: &dyn BlobStore,
    library: &str,
    blob: Bytes,
) -> Result<Bytes, StorageError> {
    if named_parts(&blob).is_none() {
        return Ok(blob);
    }
    let mut index = Vec::with_capacity(parts_len(&blob).unwrap_or(0) as usize);
    for_each_part(blobs, library, &blob, |part| {
        index.extend_from_slice(&part);
        Ok(())
    })
    .await?;
    Ok(Bytes::from(index))
}

/// [`load`] into `file`, a part at a time.
pub async fn load_into(
    blobs: &dyn BlobStore,
    library: &str,
    blob: Bytes,
    file: &mut std::fs::File,
) -> Result<(), StorageError> {
    use std::io::Write as _;
    if named_parts(&blob).is_none() {
        return file.write_all(&blob).map_err(io_error);
    }
    for_each_part(blobs, library, &blob, |part| {
        file.write_all(&part).map_err(io_error)
    })
    .await?;
    file.flush().map_err(io_error)
}

/// Hands each part a manifest names to `take`, in order, each checked against its name.
async fn for_each_part(
    blobs: &dyn BlobStore,
    library: &str,
    manifest: &[u8],
    mut take: impl FnMut(Bytes) -> Result<(), StorageError>,
) -> Result<(), StorageError> {
    let Some(parts) = named_parts(manifest) else {
        return Ok(());
    };
    let parts = parts.map_err(|e| StorageError::Other(e.into()))?;
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
        take(part)?;
    }
    Ok(())
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

    #[tokio::test]
    async fn an_index_in_a_file_is_stored_and_loaded_as_one_in_memory() {
        use std::io::Write as _;
        let dir = tempfile::tempdir().unwrap();
        use crate::storage::embedded::{Durability, EmbeddedBlobs};
        let blobs = EmbeddedBlobs::open(dir.path(), Durability::default(), 0).unwrap();
        let bytes = Bytes::from(noise(13 << 20, 5));
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&bytes).unwrap();
        let from_file = store(&blobs, "lib", &IndexSource::File(file.into()))
            .await
            .unwrap();
        let from_memory = store(&blobs, "lib", &IndexSource::Memory(bytes.clone()))
            .await
            .unwrap();
        assert_eq!(from_file.manifest, from_memory.manifest);
        assert_eq!(from_file.written, bytes.len() as u64);
        assert_eq!(from_memory.written, 0, "the parts were stored already");
        assert_eq!(parts_len(&from_file.manifest), Some(bytes.len() as u64));
        let loaded = load(&blobs, "lib", from_file.manifest.clone())
            .await
            .unwrap();
        assert_eq!(loaded, bytes);
        let mut into = tempfile::tempfile().unwrap();
        load_into(&blobs, "lib", from_file.manifest, &mut into)
            .await
            .unwrap();
        let mut back = vec![0u8; bytes.len()];
        std::os::unix::fs::FileExt::read_exact_at(&into, &mut back, 0).unwrap();
        assert_eq!(back, bytes);
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
