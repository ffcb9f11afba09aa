//! Blobs as files, written atomically.
//!
//! The blob `container/a/b/c` lives at `blobs/container/a.d/b.d/c.b`: every folder segment gets
//! `.d` and the last one `.b`, so `a/b` and `a/b/c` can both exist, as in Azure. Each file starts
//! with a 32-byte header (magic, a random ETag, the last-modified time) followed by the content,
//! so a blob's ETag is read in the same open as its bytes.
//!
//! A write goes to `blobs/.tmp/<uuid>` and then takes its place under the container's `flock`
//! (`blobs/.locks/<container>.lock`): a rename for overwrites and ETag-checked writes, a hard link
//! for create-only writes (which fails if the name exists, so exactly one of several concurrent
//! creators wins, across processes too). With [`Durability::PowerLoss`] the file is fsynced before
//! and its folder after. Readers never lock: a rename swaps whole files.

use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use bytes::Bytes;
use time::OffsetDateTime;

use super::durability::Durability;
use crate::storage::{
    BlobMeta, BlobStore, BlobUpload, Cause, ListPage, PutMode, Result, StorageError, split_blob_key,
};

const MAGIC: &[u8; 4] = b"TSB1";
const HEADER_LEN: u64 = 32;
/// Longest path segment of a blob name (the file system's 255 less the suffix).
const MAX_SEGMENT: usize = 250;
/// Temporary files older than this are leftovers of a crash, removed at open.
const STALE_TMP: Duration = Duration::from_secs(3600);

/// The blob store of one folder.
#[derive(Debug, Clone)]
pub struct EmbeddedBlobs {
    inner: Arc<Inner>,
    /// Free space kept on the disk: below it, storage counts as full.
    min_free_bytes: u64,
}

#[derive(Debug)]
struct Inner {
    /// Whether to fsync files and folders ([`Durability::PowerLoss`]).
    fsync: bool,
    root: PathBuf,
    tmp: PathBuf,
    locks: PathBuf,
    /// The keys of the last listing that filled more than a page, sorted, for the pages after
    /// it: a listing of many pages walks its folders once, not once a page.
    walked: std::sync::Mutex<Option<Walked>>,
}

/// A listing's keys, as walked.
#[derive(Debug)]
struct Walked {
    prefix: String,
    at: std::time::Instant,
    keys: Arc<Vec<String>>,
}

/// How long a walk serves the pages after its first: about as long as a listing of many pages
/// takes. A blob written meanwhile is listed by the next listing (Azure's listing is no
/// snapshot either); one deleted meanwhile is passed over.
const WALK_REUSE: std::time::Duration = std::time::Duration::from_secs(2);

#[derive(Debug, Clone, Copy)]
struct Header {
    etag: u128,
    modified_us: i64,
}

impl Header {
    fn new() -> Self {
        Header {
            etag: rand::random(),
            modified_us: (OffsetDateTime::now_utc().unix_timestamp_nanos() / 1000) as i64,
        }
    }

    fn encode(&self) -> [u8; HEADER_LEN as usize] {
        let mut out = [0u8; HEADER_LEN as usize];
        out[..4].copy_from_slice(MAGIC);
        out[8..24].copy_from_slice(&self.etag.to_le_bytes());
        out[24..32].copy_from_slice(&self.modified_us.to_le_bytes());
        out
    }

    fn read(file: &mut File) -> io::Result<Header> {
        let mut buf = [0u8; HEADER_LEN as usize];
        file.read_exact(&mut buf)?;
        if &buf[..4] != MAGIC {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not a blob file (bad header)",
            ));
        }
        Ok(Header {
            etag: u128::from_le_bytes(buf[8..24].try_into().expect("16 bytes")),
            modified_us: i64::from_le_bytes(buf[24..32].try_into().expect("8 bytes")),
        })
    }

    fn etag(&self) -> String {
        format!("\"{:032x}\"", self.etag)
    }

    fn meta(&self, key: &str, size: u64) -> BlobMeta {
        BlobMeta {
            key: key.to_string(),
            size,
            etag: self.etag(),
            last_modified: OffsetDateTime::from_unix_timestamp_nanos(
                i128::from(self.modified_us) * 1000,
            )
            .unwrap_or(OffsetDateTime::UNIX_EPOCH),
        }
    }
}

fn io_err(key: &str, e: io::Error) -> StorageError {
    match e.kind() {
        io::ErrorKind::NotFound => StorageError::NotFound(format!("blob {key}")),
        _ if is_full(&e) => StorageError::Full(Cause::with_source(format!("blob {key}: {e}"), e)),
        _ => StorageError::Other(Cause::with_source(format!("blob {key}: {e}"), e)),
    }
}

/// Whether an I/O error says the disk (or the user's quota) is full.
pub(crate) fn is_full(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::StorageFull
        || e.kind() == io::ErrorKind::QuotaExceeded
        || e.raw_os_error() == Some(28)
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StorageError::Other(format!("blob task failed: {e}").into()))?
}

impl EmbeddedBlobs {
    /// Opens (creating if needed) the blob folder, removing temporary files left by a crash.
    pub fn open(root: &Path, durability: Durability, min_free_bytes: u64) -> Result<Self> {
        let inner = Inner {
            fsync: durability == Durability::PowerLoss,
            root: root.to_path_buf(),
            tmp: root.join(".tmp"),
            locks: root.join(".locks"),
            walked: std::sync::Mutex::new(None),
        };
        for dir in [&inner.tmp, &inner.locks] {
            fs::create_dir_all(dir)
                .map_err(|e| StorageError::Other(format!("{}: {e}", dir.display()).into()))?;
        }
        if let Ok(entries) = fs::read_dir(&inner.tmp) {
            for entry in entries.flatten() {
                let stale = entry
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|at| SystemTime::now().duration_since(at).ok())
                    .is_some_and(|age| age > STALE_TMP);
                if stale {
                    let _ = fs::remove_file(entry.path());
                }
            }
        }
        Ok(EmbeddedBlobs {
            inner: Arc::new(inner),
            min_free_bytes,
        })
    }
}

impl Inner {
    /// The file of a blob, after checking its key.
    fn locate(&self, key: &str) -> Result<(String, PathBuf)> {
        let (container, name) = split_blob_key(key)?;
        let mut path = self.root.join(container);
        let segments: Vec<&str> = name.split('/').collect();
        for (i, segment) in segments.iter().enumerate() {
            if segment.len() > MAX_SEGMENT {
                return Err(StorageError::Invalid(format!(
                    "blob key {key:?} has a segment over {MAX_SEGMENT} bytes"
                )));
            }
            let suffix = if i + 1 == segments.len() { "b" } else { "d" };
            path.push(format!("{segment}.{suffix}"));
        }
        Ok((container.to_string(), path))
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        if self.fsync {
            File::open(dir)?.sync_all()
        } else {
            Ok(())
        }
    }

    fn new_tmp(&self) -> PathBuf {
        self.tmp.join(uuid::Uuid::new_v4().simple().to_string())
    }

    /// Writes a complete blob file (header and data) to a new temporary file, fsynced.
    fn write_tmp(&self, header: &Header, data: &[u8]) -> io::Result<PathBuf> {
        let path = self.new_tmp();
        let written = (|| {
            let mut file = File::create_new(&path)?;
            file.write_all(&header.encode())?;
            file.write_all(data)?;
            if self.fsync { file.sync_all() } else { Ok(()) }
        })();
        match written {
            Ok(()) => Ok(path),
            Err(e) => {
                let _ = fs::remove_file(&path);
                Err(e)
            }
        }
    }

    /// Creates the folders of `target`, fsyncing each parent of a folder it created.
    fn ensure_parent(&self, target: &Path) -> io::Result<()> {
        let parent = target.parent().expect("a blob file has a folder");
        if parent.is_dir() {
            return Ok(());
        }
        let mut missing = Vec::new();
        let mut dir = parent;
        while !dir.is_dir() && dir != self.root {
            missing.push(dir.to_path_buf());
            match dir.parent() {
                Some(up) => dir = up,
                None => break,
            }
        }
        fs::create_dir_all(parent)?;
        for dir in missing {
            if let Some(up) = dir.parent() {
                self.sync_dir(up)?;
            }
        }
        Ok(())
    }

    /// Holds the container's exclusive lock until the returned file is dropped.
    fn lock(&self, container: &str) -> io::Result<File> {
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.locks.join(format!("{container}.lock")))?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)?;
        Ok(file)
    }

    /// Puts the temporary file `tmp` in place of the blob, as `mode` allows. `tmp` is gone after.
    fn commit(
        &self,
        key: &str,
        container: &str,
        tmp: &Path,
        target: &Path,
        mode: &PutMode,
    ) -> Result<()> {
        let result = (|| {
            self.ensure_parent(target).map_err(|e| io_err(key, e))?;
            let lock = self.lock(container).map_err(|e| io_err(key, e))?;
            match mode {
                PutMode::Overwrite => fs::rename(tmp, target).map_err(|e| io_err(key, e))?,
                PutMode::CreateNew => match fs::hard_link(tmp, target) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                        return Err(StorageError::AlreadyExists(key.to_string()));
                    }
                    Err(e) => return Err(io_err(key, e)),
                },
                PutMode::IfMatch(etag) => {
                    let current = match File::open(target).and_then(|mut f| Header::read(&mut f)) {
                        Ok(header) => header.etag(),
                        Err(e) if e.kind() == io::ErrorKind::NotFound => {
                            return Err(StorageError::Precondition(format!(
                                "blob {key} does not exist"
                            )));
                        }
                        Err(e) => return Err(io_err(key, e)),
                    };
                    if &current != etag {
                        return Err(StorageError::Precondition(format!(
                            "blob {key} has ETag {current}, not {etag}"
                        )));
                    }
                    fs::rename(tmp, target).map_err(|e| io_err(key, e))?;
                }
            }
            drop(lock);
            self.sync_dir(target.parent().expect("a blob file has a folder"))
                .map_err(|e| io_err(key, e))
        })();
        // After a rename the temporary name is gone; after a link or a failure it is not.
        let _ = fs::remove_file(tmp);
        result
    }

    fn head(&self, key: &str, path: &Path) -> Result<BlobMeta> {
        let mut file = File::open(path).map_err(|e| io_err(key, e))?;
        let header = Header::read(&mut file).map_err(|e| io_err(key, e))?;
        let len = file.metadata().map_err(|e| io_err(key, e))?.len();
        Ok(header.meta(key, len.saturating_sub(HEADER_LEN)))
    }

    /// Every blob key under `dir` (whose keys start with `base`), unsorted.
    fn walk(&self, dir: &Path, base: &str, out: &mut Vec<String>) -> io::Result<()> {
        let entries = match fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some(stem) = name.strip_suffix(".b") {
                out.push(format!("{base}{stem}"));
            } else if let Some(stem) = name.strip_suffix(".d") {
                self.walk(&entry.path(), &format!("{base}{stem}/"), out)?;
            }
        }
        Ok(())
    }

    /// The keys of the walk that listed `prefix`'s first page, if it is recent.
    fn walked_again(&self, prefix: &str) -> Option<Arc<Vec<String>>> {
        let walked = self.walked.lock().unwrap_or_else(|e| e.into_inner());
        let walked = walked.as_ref()?;
        (walked.prefix == prefix && walked.at.elapsed() < WALK_REUSE).then(|| walked.keys.clone())
    }

    /// Every key under `prefix` (`container`, then `name_prefix`), sorted.
    fn walk_prefix(&self, container: &str, name_prefix: &str, prefix: &str) -> Result<Vec<String>> {
        // Descend through the prefix's complete folder segments; the rest filters names.
        let mut dir = self.root.join(container);
        let mut base = format!("{container}/");
        if let Some((folders, _)) = name_prefix.rsplit_once('/') {
            for segment in folders.split('/') {
                if segment.is_empty() || segment == "." || segment == ".." {
                    return Ok(Vec::new());
                }
                dir.push(format!("{segment}.d"));
                base.push_str(segment);
                base.push('/');
            }
        }
        let mut keys = Vec::new();
        self.walk(&dir, &base, &mut keys)
            .map_err(|e| StorageError::Other(format!("listing {prefix}: {e}").into()))?;
        keys.retain(|key| key.starts_with(prefix));
        keys.sort_unstable();
        Ok(keys)
    }

    fn list(&self, prefix: &str, page_size: usize, after: Option<&str>) -> Result<ListPage> {
        if page_size == 0 {
            return Err(StorageError::Invalid(
                "a list page holds at least one blob".into(),
            ));
        }
        let (container, name_prefix) = prefix.split_once('/').unwrap_or((prefix, ""));
        split_blob_key(&format!("{container}/x"))?;
        let keys = match after.and_then(|_| self.walked_again(prefix)) {
            Some(keys) => keys,
            None => Arc::new(self.walk_prefix(container, name_prefix, prefix)?),
        };
        if after.is_none() && keys.len() > page_size {
            *self.walked.lock().unwrap_or_else(|e| e.into_inner()) = Some(Walked {
                prefix: prefix.to_string(),
                at: std::time::Instant::now(),
                keys: keys.clone(),
            });
        }
        let start = after.map_or(0, |after| keys.partition_point(|k| k.as_str() <= after));
        let keys = &keys[start..];
        let mut items = Vec::with_capacity(page_size.min(keys.len()));
        let mut rest = keys.iter();
        for key in rest.by_ref() {
            // A blob deleted since the walk is simply not listed.
            let (_, path) = self.locate(key)?;
            match self.head(key, &path) {
                Ok(meta) => items.push(meta),
                Err(StorageError::NotFound(_)) => continue,
                Err(e) => return Err(e),
            }
            if items.len() == page_size {
                break;
            }
        }
        let next = if rest.next().is_some() {
            items.last().map(|meta| meta.key.clone())
        } else {
            None
        };
        Ok(ListPage { items, next })
    }
}

#[async_trait]
impl BlobStore for EmbeddedBlobs {
    async fn writable_bytes(&self) -> Option<u64> {
        let root = self.inner.root.clone();
        let stat = tokio::task::spawn_blocking(move || rustix::fs::statvfs(&root))
            .await
            .ok()?
            .ok()?;
        let free = stat.f_bavail.saturating_mul(stat.f_frsize);
        Some(free.saturating_sub(self.min_free_bytes))
    }

    async fn put(&self, key: &str, data: Bytes, mode: PutMode) -> Result<BlobMeta> {
        let inner = self.inner.clone();
        let key = key.to_string();
        blocking(move || {
            let (container, target) = inner.locate(&key)?;
            if mode == PutMode::CreateNew && target.exists() {
                return Err(StorageError::AlreadyExists(key));
            }
            let header = Header::new();
            let tmp = inner
                .write_tmp(&header, &data)
                .map_err(|e| io_err(&key, e))?;
            inner.commit(&key, &container, &tmp, &target, &mode)?;
            Ok(header.meta(&key, data.len() as u64))
        })
        .await
    }

    async fn get(&self, key: &str) -> Result<Bytes> {
        let inner = self.inner.clone();
        let key = key.to_string();
        blocking(move || {
            let (_, path) = inner.locate(&key)?;
            let mut file = File::open(&path).map_err(|e| io_err(&key, e))?;
            Header::read(&mut file).map_err(|e| io_err(&key, e))?;
            // Sized up front: a large blob is not copied as the buffer grows.
            let len = file.metadata().map(|m| m.len() as usize).unwrap_or(0);
            let mut data = Vec::with_capacity(len);
            file.read_to_end(&mut data).map_err(|e| io_err(&key, e))?;
            Ok(Bytes::from(data))
        })
        .await
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        if range.start > range.end {
            return Err(StorageError::Invalid(format!(
                "range {range:?} of blob {key} ends before it starts"
            )));
        }
        let inner = self.inner.clone();
        let key = key.to_string();
        blocking(move || {
            let (_, path) = inner.locate(&key)?;
            let mut file = File::open(&path).map_err(|e| io_err(&key, e))?;
            Header::read(&mut file).map_err(|e| io_err(&key, e))?;
            let size = file
                .metadata()
                .map_err(|e| io_err(&key, e))?
                .len()
                .saturating_sub(HEADER_LEN);
            let (start, end) = (range.start.min(size), range.end.min(size));
            let mut data = vec![0u8; (end - start) as usize];
            file.seek(SeekFrom::Start(HEADER_LEN + start))
                .and_then(|_| file.read_exact(&mut data))
                .map_err(|e| io_err(&key, e))?;
            Ok(Bytes::from(data))
        })
        .await
    }

    async fn head(&self, key: &str) -> Result<BlobMeta> {
        let inner = self.inner.clone();
        let key = key.to_string();
        blocking(move || {
            let (_, path) = inner.locate(&key)?;
            inner.head(&key, &path)
        })
        .await
    }

    async fn list(&self, prefix: &str, page_size: usize, page: Option<String>) -> Result<ListPage> {
        let inner = self.inner.clone();
        let prefix = prefix.to_string();
        blocking(move || inner.list(&prefix, page_size, page.as_deref())).await
    }

    async fn delete(&self, key: &str) -> Result<()> {
        let inner = self.inner.clone();
        let key = key.to_string();
        blocking(move || {
            let (container, path) = inner.locate(&key)?;
            let lock = inner.lock(&container).map_err(|e| io_err(&key, e))?;
            fs::remove_file(&path).map_err(|e| io_err(&key, e))?;
            drop(lock);
            inner
                .sync_dir(path.parent().expect("a blob file has a folder"))
                .map_err(|e| io_err(&key, e))
        })
        .await
    }

    async fn upload(&self, key: &str) -> Result<Box<dyn BlobUpload>> {
        let inner = self.inner.clone();
        let key = key.to_string();
        blocking(move || {
            let (container, target) = inner.locate(&key)?;
            let tmp = inner.new_tmp();
            let mut file = File::create_new(&tmp).map_err(|e| io_err(&key, e))?;
            file.write_all(&[0u8; HEADER_LEN as usize])
                .map_err(|e| io_err(&key, e))?;
            Ok(Box::new(EmbeddedUpload {
                inner,
                key,
                container,
                target,
                tmp,
                file: Some(file),
                size: 0,
                done: false,
            }) as Box<dyn BlobUpload>)
        })
        .await
    }
}

/// A blob being written: a temporary file until `finish` renames it into place.
struct EmbeddedUpload {
    inner: Arc<Inner>,
    key: String,
    container: String,
    target: PathBuf,
    tmp: PathBuf,
    file: Option<File>,
    size: u64,
    done: bool,
}

impl EmbeddedUpload {
    fn take_file(&mut self) -> Result<File> {
        self.file.take().ok_or_else(|| {
            StorageError::Other(format!("upload of blob {} failed earlier", self.key).into())
        })
    }
}

#[async_trait]
impl BlobUpload for EmbeddedUpload {
    async fn write(&mut self, chunk: Bytes) -> Result<()> {
        let mut file = self.take_file()?;
        let key = self.key.clone();
        let len = chunk.len() as u64;
        let file = blocking(move || {
            file.write_all(&chunk).map_err(|e| io_err(&key, e))?;
            Ok(file)
        })
        .await?;
        self.file = Some(file);
        self.size += len;
        Ok(())
    }

    async fn finish(mut self: Box<Self>) -> Result<BlobMeta> {
        let file = self.take_file()?;
        self.done = true;
        let (inner, key, container) =
            (self.inner.clone(), self.key.clone(), self.container.clone());
        let (tmp, target, size) = (self.tmp.clone(), self.target.clone(), self.size);
        blocking(move || {
            let header = Header::new();
            let written = file
                .write_all_at(&header.encode(), 0)
                .and_then(|_| if inner.fsync { file.sync_all() } else { Ok(()) });
            drop(file);
            if let Err(e) = written {
                let _ = fs::remove_file(&tmp);
                return Err(io_err(&key, e));
            }
            inner.commit(&key, &container, &tmp, &target, &PutMode::Overwrite)?;
            Ok(header.meta(&key, size))
        })
        .await
    }

    async fn abort(mut self: Box<Self>) -> Result<()> {
        self.done = true;
        drop(self.file.take());
        let (tmp, key) = (self.tmp.clone(), self.key.clone());
        blocking(move || match fs::remove_file(&tmp) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_err(&key, e)),
        })
        .await
    }
}

impl Drop for EmbeddedUpload {
    fn drop(&mut self) {
        if !self.done {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}
