//! Tile libraries in storage: a catalogue record per library (`libraries/{id}/library.json`) and
//! one index blob per version (`libraries/{id}/v{version}/index`, the engine's serialized index with
//! its renditions), which processors download once per version and cache.
//!
//! A re-import of the same id writes a new version; a version's index is never overwritten, so a
//! job that names a version renders the same tiles however long it waits in a queue.

use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::keys::BlobKey;
use crate::messages::LibraryRef;
use crate::storage::{BlobStore, BlobStoreExt, PutMode, StorageError};

pub use crate::library_parts::IndexSource;

/// Indexes longer than this are kept in a scratch file while they are read and edited, their
/// renditions read a tile at a time: a 100,000-tile library's index is over a gigabyte.
pub const LARGE_INDEX: u64 = 256 << 20;

/// A version's index as fetched: in memory, or in a scratch file when large.
pub enum FetchedIndex {
    Memory(Bytes),
    File(std::fs::File),
}

impl FetchedIndex {
    /// The library the index holds (blocking: it reads the whole index once to check it). One
    /// in a file keeps its renditions there.
    pub fn open(self) -> Result<tessera_engine::Library, tessera_engine::Error> {
        match self {
            FetchedIndex::Memory(bytes) => tessera_engine::Library::from_vec(bytes.into()),
            FetchedIndex::File(file) => tessera_engine::Library::open_index_in(
                file,
                std::path::Path::new("a library index's scratch file"),
            ),
        }
    }
}

/// An empty file with no name in the system's temporary folder, open for reading and writing:
/// it is gone once closed.
pub fn scratch_file() -> Result<std::fs::File, StorageError> {
    tempfile::tempfile()
        .map_err(|e| StorageError::Other(format!("a scratch file for a library: {e}").into()))
}

pub use crate::owner::Owner;

/// Who may find and use a library besides its owner and the operator.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Visibility {
    /// Its owner and the operator only.
    Private,
    /// Everyone may list it and make mosaics of it; only its owner and the operator may replace
    /// or delete it. Libraries recorded before visibility was kept are shared.
    #[default]
    Shared,
}

impl Visibility {
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "private" => Some(Visibility::Private),
            "shared" => Some(Visibility::Shared),
            _ => None,
        }
    }
}

/// Who publishes a library version, and how.
#[derive(Debug, Clone)]
pub struct Publication {
    /// Publish a new version of a library that exists (else an existing one is refused).
    pub replace: bool,
    /// Who publishes: a new library is theirs; an existing one may be replaced only by its
    /// owner or the operator (it keeps its owner).
    pub by: Owner,
    /// The library's visibility; `None` keeps a replaced library's, and makes a new one shared.
    pub visibility: Option<Visibility>,
    /// For an edit of one version: the version it was made from. The edit becomes the next
    /// version only if no other did meanwhile, else [`LibraryError::Changed`].
    pub based_on: Option<u32>,
}

impl Publication {
    /// The operator's publication (the command line, the default library): shared.
    pub fn operator(replace: bool) -> Self {
        Publication {
            replace,
            by: Owner::operator(),
            visibility: None,
            based_on: None,
        }
    }
}

/// A file the import skipped, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SkippedFile {
    pub name: String,
    pub reason: String,
}

/// What the catalogue knows of a library's current version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[schema(as = Library)]
pub struct LibraryRecord {
    /// Stable id: lowercase letters, digits and hyphens.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Version of the newest index; starts at 1.
    pub version: u32,
    /// Tiles in the index.
    pub tiles: u32,
    /// Shape of the tiles, width:height in lowest terms (`1:1`, `4:3`, `2:3`, ...): each image
    /// is cropped at this shape (by `crop`), and jobs use tiles of this shape.
    #[serde(default = "square")]
    #[schema(
        required = true,
        pattern = r"^[1-9][0-9]*:[1-9][0-9]*$",
        example = "4:3"
    )]
    pub shape: String,
    /// Where each image was cropped to the shape: `attention` (where its detail, skin tones
    /// and colour are, after smartcrop) or `centre`. Libraries recorded before the rule was kept
    /// were cropped at the centre.
    #[serde(default = "centre")]
    #[schema(
        required = true,
        pattern = "^(attention|centre)$",
        example = "attention"
    )]
    pub crop: String,
    /// Pixel-identical duplicates merged on import.
    #[serde(default)]
    #[schema(required = true)]
    pub duplicates: u32,
    /// Every file the import left out, but the duplicates, and why (not an image, a format not
    /// read, corrupt or cut off, too large), in name order.
    #[serde(default)]
    #[schema(required = true)]
    pub skipped: Vec<SkippedFile>,
    /// Some tiles have transparent parts, which each mosaic may lay over a background of its
    /// own (a job's `background`). False for libraries indexed before transparency was kept.
    #[serde(default)]
    #[schema(required = true)]
    pub transparent: bool,
    /// Who the library belongs to: `operator`, `key:NAME` or `client:DIGEST`.
    #[serde(default)]
    #[schema(required = true)]
    pub owner: Owner,
    /// `private`: its owner and the operator alone see and use it; `shared`: everyone may.
    #[serde(default)]
    #[schema(required = true)]
    pub visibility: Visibility,
    /// Size of the index blob in bytes.
    pub index_bytes: u64,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

fn centre() -> String {
    tessera_engine::CropRule::Centre.name().to_string()
}

fn square() -> String {
    tessera_engine::TileShape::SQUARE.to_string()
}

impl LibraryRecord {
    /// How the library's images were cropped (at the centre if the record holds no rule that
    /// reads).
    pub fn crop_rule(&self) -> tessera_engine::CropRule {
        tessera_engine::CropRule::parse(&self.crop).unwrap_or(tessera_engine::CropRule::Centre)
    }

    /// The shape of the library's tiles (square if the record holds none that reads).
    pub fn tile_shape(&self) -> tessera_engine::TileShape {
        tessera_engine::TileShape::parse(&self.shape).unwrap_or_default()
    }

    /// Whether `who` (`None`: a requester that names itself in no way) may list it and make
    /// mosaics of it.
    pub fn visible_to(&self, who: Option<&Owner>) -> bool {
        self.visibility == Visibility::Shared || who.is_some_and(|who| self.may_change(who))
    }

    /// Whether `who` may replace or delete it: its owner and the operator.
    pub fn may_change(&self, who: &Owner) -> bool {
        who.is_operator() || *who == self.owner
    }

    pub fn reference(&self) -> LibraryRef {
        LibraryRef {
            id: self.id.clone(),
            version: self.version,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LibraryError {
    #[error("library {0:?} not found")]
    NotFound(String),
    #[error(
        "a library with id {id:?} exists already ({name:?}): choose another name, or replace it"
    )]
    Exists { id: String, name: String },
    /// Someone else's library: only its owner (or the operator) may replace or delete it.
    #[error(
        "the library {0:?} is not yours: only its owner may replace or delete it (to make a library of your own, choose another name)"
    )]
    NotOwner(String),
    /// An active job renders from it.
    #[error("the library {id:?} is in use by {jobs} active job(s): delete it once they end")]
    InUse { id: String, jobs: usize },
    /// An edit's version was no longer current when it was published.
    #[error("library {0:?} changed while it was being edited")]
    Changed(String),
    #[error("library id {0:?} must be 1 to 48 lowercase letters, digits and hyphens")]
    BadId(String),
    #[error("library record {0} is corrupt: {1}")]
    Corrupt(String, String),
    #[error(transparent)]
    Storage(#[from] StorageError),
}

/// The library catalogue over a blob store.
#[derive(Debug, Clone)]
pub struct LibraryCatalog {
    blobs: Arc<dyn BlobStore>,
}

const PREFIX: &str = "libraries/";

fn record_key(id: &str) -> String {
    format!("{}library.json", BlobKey::library_prefix(id))
}

/// Checks a library id: it becomes part of blob keys and URLs.
pub fn validate_library_id(id: &str) -> Result<(), LibraryError> {
    let ok = !id.is_empty()
        && id.len() <= 48
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !id.starts_with('-');
    if ok {
        Ok(())
    } else {
        Err(LibraryError::BadId(id.to_string()))
    }
}

/// A library id made from a display name: `"Noto Emoji!"` becomes `noto-emoji`.
pub fn library_id_from_name(name: &str) -> String {
    let mut id = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            id.push(c);
        } else if !id.ends_with('-') && !id.is_empty() {
            id.push('-');
        }
        if id.len() >= 48 {
            break;
        }
    }
    let id = id.trim_end_matches('-').to_string();
    if id.is_empty() {
        "library".to_string()
    } else {
        id
    }
}

/// What a library's record says of its index, besides the version the catalogue gives it.
#[derive(Debug, Clone)]
pub struct IndexSummary {
    pub shape: tessera_engine::TileShape,
    pub crop: tessera_engine::CropRule,
    pub tiles: u32,
    /// Pixel-identical duplicates merged.
    pub duplicates: u32,
    pub skipped: Vec<SkippedFile>,
    /// Some tiles have transparent parts.
    pub transparent: bool,
}

impl LibraryCatalog {
    pub fn new(blobs: Arc<dyn BlobStore>) -> Self {
        LibraryCatalog { blobs }
    }

    /// Stores `index` as the next version of library `id` and returns its record. A library that
    /// exists already is refused ([`LibraryError::Exists`]) unless `how.replace`, and then
    /// unless `how.by` may change it ([`LibraryError::NotOwner`]).
    ///
    /// The record moves only forward: it is written under its ETag (or create-only), and a
    /// publish that finds a newer version recorded meanwhile leaves that one current.
    pub async fn publish(
        &self,
        id: &str,
        name: &str,
        summary: IndexSummary,
        index: impl Into<IndexSource>,
        how: &Publication,
    ) -> Result<LibraryRecord, LibraryError> {
        let index = index.into();
        validate_library_id(id)?;
        let replace = how.replace;
        let (version, owner, visibility) = match self.get(id).await {
            Ok(existing) if !existing.may_change(&how.by) => {
                return Err(LibraryError::NotOwner(id.to_string()));
            }
            Ok(existing) if !replace => {
                return Err(LibraryError::Exists {
                    id: id.to_string(),
                    name: existing.name,
                });
            }
            Ok(existing) if how.based_on.is_some_and(|v| v != existing.version) => {
                return Err(LibraryError::Changed(id.to_string()));
            }
            Ok(existing) => (
                existing.version + 1,
                existing.owner,
                how.visibility.unwrap_or(existing.visibility),
            ),
            Err(LibraryError::NotFound(_)) if how.based_on.is_some() => {
                return Err(LibraryError::NotFound(id.to_string()));
            }
            Err(LibraryError::NotFound(_)) => (
                self.retired_version(id).await? + 1,
                how.by.clone(),
                how.visibility.unwrap_or_default(),
            ),
            Err(e) => return Err(e),
        };
        let index_bytes = index.len()?;
        let version = self.claim_version(id, &index, version, how).await?;
        let record = LibraryRecord {
            id: id.to_string(),
            name: name.to_string(),
            version,
            tiles: summary.tiles,
            shape: summary.shape.to_string(),
            crop: summary.crop.name().to_string(),
            duplicates: summary.duplicates,
            skipped: summary.skipped,
            transparent: summary.transparent,
            owner,
            visibility,
            index_bytes,
            created_at: OffsetDateTime::now_utc(),
        };
        self.put_record(record, how).await
    }

    /// Writes `index` (as parts and their manifest: [`crate::library_parts`]) as the first
    /// version of library `id` from `version` on that no upload has claimed: versions are
    /// claimed with create-only writes, so two concurrent imports never share one.
    async fn claim_version(
        &self,
        id: &str,
        index: &IndexSource,
        version: u32,
        how: &Publication,
    ) -> Result<u32, LibraryError> {
        let stored = crate::library_parts::store(&*self.blobs, id, index).await?;
        tracing::debug!(library = %id, written = stored.written, "library index parts stored");
        let claimed = self
            .claim_manifest(id, stored.manifest.clone(), version, how)
            .await;
        stored.done(&*self.blobs).await;
        claimed
    }

    /// [`LibraryCatalog::claim_version`] for the manifest of parts already stored.
    async fn claim_manifest(
        &self,
        id: &str,
        index: Bytes,
        mut version: u32,
        how: &Publication,
    ) -> Result<u32, LibraryError> {
        loop {
            let key = BlobKey::LibraryIndex {
                library: id.to_string(),
                version,
            }
            .path();
            match self
                .blobs
                .put(&key, index.clone(), PutMode::CreateNew)
                .await
            {
                Ok(_) => return Ok(version),
                Err(StorageError::AlreadyExists(_)) if how.based_on.is_some() => {
                    return Err(LibraryError::Changed(id.to_string()));
                }
                Err(StorageError::AlreadyExists(_)) => version += 1,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Makes `record` the library's current version, unless an upload meanwhile took the name
    /// (its index is then deleted) or made a newer version current (which stays so).
    async fn put_record(
        &self,
        record: LibraryRecord,
        how: &Publication,
    ) -> Result<LibraryRecord, LibraryError> {
        let id = record.id.as_str();
        let body = Bytes::from(serde_json::to_vec(&record).expect("records serialize"));
        let index_key = BlobKey::LibraryIndex {
            library: id.to_string(),
            version: record.version,
        }
        .path();
        loop {
            let mode = match self.blobs.head(&record_key(id)).await {
                Ok(meta) => {
                    let current = self.get(id).await?;
                    if current.owner != record.owner && !how.by.is_operator() {
                        // Taken meanwhile by someone else's upload of the same name.
                        let _ = self.blobs.delete(&index_key).await;
                        return Err(LibraryError::NotOwner(id.to_string()));
                    }
                    if !how.replace {
                        // Created by a concurrent upload of the same name.
                        let _ = self.blobs.delete(&index_key).await;
                        return Err(LibraryError::Exists {
                            id: id.to_string(),
                            name: current.name,
                        });
                    }
                    if how.based_on.is_some_and(|v| v != current.version) {
                        // Another edit became current first: this one is made again from it.
                        let _ = self.blobs.delete(&index_key).await;
                        return Err(LibraryError::Changed(id.to_string()));
                    }
                    if current.version >= record.version {
                        // A newer version is current already: it stays so (this one is
                        // collected by the storage sweep).
                        return Ok(record);
                    }
                    PutMode::IfMatch(meta.etag)
                }
                Err(StorageError::NotFound(_)) if how.based_on.is_some() => {
                    // Deleted while it was being edited.
                    let _ = self.blobs.delete(&index_key).await;
                    return Err(LibraryError::NotFound(id.to_string()));
                }
                Err(StorageError::NotFound(_)) => PutMode::CreateNew,
                Err(e) => return Err(e.into()),
            };
            match self.blobs.put(&record_key(id), body.clone(), mode).await {
                Ok(_) => return Ok(record),
                Err(StorageError::Precondition(_) | StorageError::AlreadyExists(_)) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    pub async fn get(&self, id: &str) -> Result<LibraryRecord, LibraryError> {
        validate_library_id(id)?;
        match self.blobs.get(&record_key(id)).await {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| LibraryError::Corrupt(id.to_string(), e.to_string())),
            Err(StorageError::NotFound(_)) => Err(LibraryError::NotFound(id.to_string())),
            Err(e) => Err(e.into()),
        }
    }

    /// Every library, by id.
    pub async fn list(&self) -> Result<Vec<LibraryRecord>, LibraryError> {
        let mut records = Vec::new();
        for meta in self.blobs.list_all(PREFIX).await? {
            if let Some(id) = meta
                .key
                .strip_prefix(PREFIX)
                .and_then(|k| k.strip_suffix("/library.json"))
            {
                records.push(self.get(id).await?);
            }
        }
        records.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(records)
    }

    /// The versions of library `id` that active jobs name, by job: one listing of the active
    /// jobs' markers and a read of each record.
    pub async fn in_use(&self, id: &str) -> Result<Vec<(uuid::Uuid, u32)>, LibraryError> {
        let jobs = crate::jobs::JobStore::new(self.blobs.clone());
        let mut using = Vec::new();
        for marker in self.blobs.list_all(BlobKey::ACTIVE_JOBS_PREFIX).await? {
            if let Some(job) = BlobKey::active_job_of(&marker.key)
                && let Ok(record) = jobs.get(job).await
                && !record.state.is_final()
                && record.params.spec.library.id == id
            {
                using.push((job, record.params.spec.library.version));
            }
        }
        Ok(using)
    }

    /// Deletes library `id`: its record first (no new job can name it), then every version's
    /// index and contact sheet. A library an active job renders from is refused
    /// ([`LibraryError::InUse`]); a version a job named in the meantime is left to the storage
    /// sweep. Returns the blobs deleted.
    pub async fn delete(&self, id: &str) -> Result<usize, LibraryError> {
        validate_library_id(id)?;
        let using = self.in_use(id).await?;
        if !using.is_empty() {
            return Err(LibraryError::InUse {
                id: id.to_string(),
                jobs: using.len(),
            });
        }
        // The last version is remembered first: a library of the same name made later takes
        // versions after it, never one an old job names.
        let last = self
            .get(id)
            .await?
            .version
            .max(self.retired_version(id).await?);
        let retired = BlobKey::RetiredLibrary {
            library: id.to_string(),
        };
        self.blobs
            .put(
                &retired.path(),
                Bytes::from(last.to_string()),
                PutMode::Overwrite,
            )
            .await?;
        match self.blobs.delete(&record_key(id)).await {
            Ok(()) => {}
            Err(StorageError::NotFound(_)) => return Err(LibraryError::NotFound(id.to_string())),
            Err(e) => return Err(e.into()),
        }
        let kept: Vec<u32> = self.in_use(id).await?.into_iter().map(|(_, v)| v).collect();
        let stored = self.stored_of(id).await?;
        let mut deleted = 0;
        let parts = BlobKey::library_parts_prefix(id);
        for meta in stored {
            if meta.key.starts_with(&parts)
                || BlobKey::library_version_of(&meta.key, id).is_some_and(|v| kept.contains(&v))
            {
                continue;
            }
            match self.blobs.delete(&meta.key).await {
                Ok(()) => deleted += 1,
                Err(StorageError::NotFound(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        // The parts that no version kept names.
        let parts = crate::library_parts::collect(&*self.blobs, id).await?;
        Ok(deleted + parts as usize + 1)
    }

    /// The last version library `id` had when it was last deleted (0: never deleted).
    async fn retired_version(&self, id: &str) -> Result<u32, LibraryError> {
        let key = BlobKey::RetiredLibrary {
            library: id.to_string(),
        };
        match self.blobs.get(&key.path()).await {
            Ok(bytes) => Ok(std::str::from_utf8(&bytes)
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(0)),
            Err(StorageError::NotFound(_)) => Ok(0),
            Err(e) => Err(e.into()),
        }
    }

    /// The index blob of one version.
    pub async fn index(&self, library: &LibraryRef) -> Result<Bytes, LibraryError> {
        let blob = self.index_blob(library).await?;
        Ok(crate::library_parts::load(&*self.blobs, &library.id, blob).await?)
    }

    /// A version's index as [`LibraryCatalog::index`] reads it, but one over [`LARGE_INDEX`]
    /// written to a scratch file with no name (gone once closed), never held in memory whole.
    pub async fn fetch_index(&self, library: &LibraryRef) -> Result<FetchedIndex, LibraryError> {
        let blob = self.index_blob(library).await?;
        if crate::library_parts::parts_len(&blob).is_none_or(|len| len <= LARGE_INDEX) {
            let index = crate::library_parts::load(&*self.blobs, &library.id, blob).await?;
            return Ok(FetchedIndex::Memory(index));
        }
        let mut file = scratch_file()?;
        crate::library_parts::load_into(&*self.blobs, &library.id, blob, &mut file).await?;
        Ok(FetchedIndex::File(file))
    }

    /// The blob of a version's index: the index, or the manifest of its parts.
    async fn index_blob(&self, library: &LibraryRef) -> Result<Bytes, LibraryError> {
        validate_library_id(&library.id)?;
        let key = BlobKey::LibraryIndex {
            library: library.id.clone(),
            version: library.version,
        }
        .path();
        match self.blobs.get(&key).await {
            Ok(blob) => Ok(blob),
            Err(StorageError::NotFound(_)) => Err(LibraryError::NotFound(format!(
                "{} version {}",
                library.id, library.version
            ))),
            Err(e) => Err(e.into()),
        }
    }

    /// Every blob library `id` holds: its record, versions, parts and contact sheets.
    async fn stored_of(&self, id: &str) -> Result<Vec<crate::storage::BlobMeta>, StorageError> {
        let mut stored = self.blobs.list_all(&BlobKey::library_prefix(id)).await?;
        stored.extend(
            self.blobs
                .list_all(&BlobKey::library_sheets_prefix(id))
                .await?,
        );
        Ok(stored)
    }

    /// Deletes what library `id` holds that no job needs, at once: versions before the one
    /// preceding the current (a job submitted as the current changed may still name that
    /// one) that no active job names, their contact sheets, and the parts no version left
    /// names. Returns the blobs deleted.
    pub async fn collect_unneeded(&self, id: &str) -> Result<u64, LibraryError> {
        let current = self.get(id).await?.version;
        let using: Vec<u32> = self.in_use(id).await?.into_iter().map(|(_, v)| v).collect();
        let stored = self.stored_of(id).await?;
        let mut deleted = 0;
        for meta in stored {
            let Some(version) = BlobKey::library_version_of(&meta.key, id) else {
                continue;
            };
            if version + 1 >= current || using.contains(&version) {
                continue;
            }
            match self.blobs.delete(&meta.key).await {
                Ok(()) => deleted += 1,
                Err(StorageError::NotFound(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        deleted += crate::library_parts::collect(&*self.blobs, id).await?;
        Ok(deleted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_from_names() {
        assert_eq!(library_id_from_name("Noto Emoji!"), "noto-emoji");
        assert_eq!(library_id_from_name("  ../etc/passwd "), "etc-passwd");
        assert_eq!(library_id_from_name("***"), "library");
        validate_library_id(&library_id_from_name("Ünïcode tiles 2")).unwrap();
    }

    #[test]
    fn bad_ids_are_refused() {
        for id in ["", "UPPER", "a/b", "-x", "a b", &"x".repeat(49)] {
            assert!(validate_library_id(id).is_err(), "{id:?}");
        }
    }
}
