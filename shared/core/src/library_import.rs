//! A folder or .zip of images becomes a tile library in the store (`tessera library import`, the
//! web's library upload, the default library of `tessera serve`).

use std::path::Path;

use bytes::Bytes;
use tessera_engine::{ImportOptions, ImportReport, Library};

use crate::libraries::{
    IndexSummary, LibraryError, LibraryRecord, Publication, SkippedFile, library_id_from_name,
};
use crate::platform::Platform;

/// Why an import made no library.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The files were read, but none is a usable tile.
    #[error("{src} holds no images Tessera can use: {why}")]
    NoImages {
        src: String,
        /// Every file and why it was skipped, in a line ([`tessera_engine::summarise_skipped`]).
        why: String,
    },
    /// The source could not be read as a folder or archive of images.
    #[error("cannot import a tile library from {src}: {source}")]
    Source {
        src: String,
        #[source]
        source: tessera_engine::Error,
    },
    /// Publishing failed: a name taken, a bad id, storage.
    #[error(transparent)]
    Library(#[from] LibraryError),
    /// The import's thread went away (a panic): our failure, not the files'.
    #[error("the import stopped: {0}")]
    Stopped(String),
    /// Tiles an edit would take out that the library does not hold.
    #[error("the library holds no tile named {0}")]
    UnknownTiles(String),
    /// An edit would take out every tile.
    #[error("a library keeps at least one tile: to take out every tile, delete the library")]
    WouldBeEmpty,
    /// The import was asked to stop (`keep_going` said no): nothing was published.
    #[error("the import was called off; nothing was published")]
    CalledOff,
}

impl ImportError {
    /// The engine's failure to read the images at `src` (asked to stop: called off).
    fn reading(src: &Path, source: tessera_engine::Error) -> ImportError {
        match source {
            tessera_engine::Error::Stopped => ImportError::CalledOff,
            source => ImportError::Source {
                src: src.display().to_string(),
                source,
            },
        }
    }

    /// The images at `src` gave no tile: every file and why, in a line.
    fn no_images(src: &Path, report: &ImportReport) -> ImportError {
        ImportError::NoImages {
            src: src.display().to_string(),
            why: if report.skipped.is_empty() {
                "there are no files".into()
            } else {
                tessera_engine::summarise_skipped(&report.skipped)
            },
        }
    }
}

/// Imports the images at `src` (a folder, searched recursively, or a .zip) and publishes them as
/// the next version of the library named `name` (its id made from the name), each image prepared
/// as `options` say (cropped to their shape, transparent parts laid over their background),
/// published as `how` says (a new library, or a new version of one `how.by` may change).
/// Decoding and describing the tiles runs on a blocking thread.
pub async fn import_library(
    platform: &Platform,
    src: &Path,
    name: &str,
    options: ImportOptions,
    how: &Publication,
) -> Result<(LibraryRecord, ImportReport), ImportError> {
    import_library_while(platform, src, name, options, how, || true).await
}

/// [`import_library`] asking `keep_going` as each file is done and before publishing: once it
/// says no, the import stops and publishes nothing ([`ImportError::CalledOff`]).
pub async fn import_library_while(
    platform: &Platform,
    src: &Path,
    name: &str,
    options: ImportOptions,
    how: &Publication,
    keep_going: impl Fn() -> bool + Send + Sync + 'static,
) -> Result<(LibraryRecord, ImportReport), ImportError> {
    let path = src.to_path_buf();
    let (shape, crop) = (options.shape, options.crop);
    let keep_going = std::sync::Arc::new(keep_going);
    let asked = keep_going.clone();
    let (index, tiles, transparent, report) = tokio::task::spawn_blocking(move || {
        let (library, report) = Library::import_with_progress(&path, &options, &|_, _| asked())?;
        let (tiles, transparent) = (library.len(), library.is_transparent());
        Ok::<_, tessera_engine::Error>((library.to_bytes(), tiles, transparent, report))
    })
    .await
    .map_err(|e| ImportError::Stopped(e.to_string()))?
    .map_err(|source| ImportError::reading(src, source))?;
    if !keep_going() {
        return Err(ImportError::CalledOff);
    }
    if tiles == 0 {
        return Err(ImportError::no_images(src, &report));
    }
    let skipped = report
        .skipped
        .iter()
        .map(|(name, reason)| SkippedFile {
            name: name.clone(),
            reason: reason.clone(),
        })
        .collect();
    let id = library_id_from_name(name);
    let record = platform
        .libraries()
        .publish(
            &id,
            name,
            IndexSummary {
                shape,
                crop,
                tiles: tiles as u32,
                duplicates: report.duplicates.len() as u32,
                skipped,
                transparent,
            },
            Bytes::from(index),
            how,
        )
        .await?;
    tracing::info!(
        library = %record.id,
        version = record.version,
        tiles = record.tiles,
        shape = %record.shape,
        bytes = record.index_bytes,
        "tile library imported"
    );
    if record.version > 1 {
        collect_unneeded(platform, &record.id).await;
    }
    Ok((record, report))
}

/// What library `id` holds that no job needs goes at once
/// ([`crate::libraries::LibraryCatalog::collect_unneeded`]); what cannot go now is left to
/// the storage sweep.
pub async fn collect_unneeded(platform: &Platform, id: &str) {
    match platform.libraries().collect_unneeded(id).await {
        Ok(deleted) => tracing::debug!(library = %id, deleted, "unneeded library blobs deleted"),
        Err(e) => {
            tracing::warn!(library = %id, error = %e, "unneeded library blobs left to the sweep")
        }
    }
}

/// A change to a library's tiles: images to add (a folder or .zip; one with the name of a tile
/// replaces it) and tiles to take out, by name.
#[derive(Debug, Clone, Default)]
pub struct LibraryEdit {
    pub add: Option<std::path::PathBuf>,
    pub remove: Vec<String>,
}

/// What an edit did.
#[derive(Debug, Clone, Default)]
pub struct EditReport {
    /// Images added (a tile they replaced counted as added).
    pub added: usize,
    /// Tiles taken out.
    pub removed: usize,
    /// The added files left out, as an import reports them ([`ImportReport::skipped`]).
    pub skipped: Vec<(String, String)>,
    /// Added images identical to a tile kept (or to another added one): the name dropped and
    /// the name kept.
    pub duplicates: Vec<(String, String)>,
    /// How many of the skipped files are not images by their name.
    pub ignored: usize,
}

/// Edits made from a version that another edit replaced meanwhile are made again from the new
/// one, this many times at most.
const EDIT_ATTEMPTS: usize = 5;

/// Publishes library `id` with `edit` applied as its next version, for `by` (its owner or the
/// operator): the added images are prepared as the library's tiles were, the other tiles are
/// kept as they are, and jobs that named an earlier version keep rendering it. `keep_going` is
/// asked as files are decoded and before publishing, as in [`import_library_while`]. An edit
/// made again from a newer version decodes the added images again only if that version
/// prepares its tiles otherwise.
pub async fn edit_library_while(
    platform: &Platform,
    id: &str,
    mut edit: LibraryEdit,
    by: &crate::libraries::Owner,
    keep_going: impl Fn() -> bool + Send + Sync + 'static,
) -> Result<(LibraryRecord, EditReport), ImportError> {
    edit.remove.sort();
    edit.remove.dedup();
    let catalog = platform.libraries();
    let keep_going = std::sync::Arc::new(keep_going);
    let edit = std::sync::Arc::new(edit);
    let mut prepared: Option<std::sync::Arc<Added>> = None;
    let mut attempt = 0;
    loop {
        attempt += 1;
        let current = catalog.get(id).await?;
        if !current.may_change(by) {
            return Err(LibraryError::NotOwner(id.to_string()).into());
        }
        let index = catalog.index(&current.reference()).await?;
        let asked = keep_going.clone();
        let (job, before) = (edit.clone(), prepared.take());
        let crop = current.crop_rule();
        let (library, added, report) = tokio::task::spawn_blocking(move || {
            apply_edit(index.to_vec(), &job, (crop, before), &|_, _| asked())
        })
        .await
        .map_err(|e| ImportError::Stopped(e.to_string()))??;
        if !keep_going() {
            return Err(ImportError::CalledOff);
        }
        let summary = IndexSummary {
            shape: library.shape(),
            crop,
            tiles: library.len() as u32,
            duplicates: current.duplicates + report.duplicates.len() as u32,
            skipped: skipped_after(&current.skipped, &library, &report),
            transparent: library.is_transparent(),
        };
        let how = Publication {
            replace: true,
            by: by.clone(),
            visibility: None,
            based_on: Some(current.version),
        };
        let bytes = Bytes::from(library.to_bytes());
        match catalog
            .publish(id, &current.name, summary, bytes, &how)
            .await
        {
            Ok(record) => {
                tracing::info!(
                    library = %record.id,
                    version = record.version,
                    added = report.added,
                    removed = report.removed,
                    tiles = record.tiles,
                    "tile library edited"
                );
                collect_unneeded(platform, id).await;
                return Ok((record, report));
            }
            Err(LibraryError::Changed(_)) if attempt < EDIT_ATTEMPTS => prepared = added,
            Err(e) => return Err(e.into()),
        }
    }
}

/// The added images of an edit, prepared as tiles, with what their import reported.
struct Added {
    library: Library,
    report: tessera_engine::ImportReport,
}

/// The edited library made from the index of the version edited, and the added images as
/// tiles: `before` when they were prepared as this version's tiles are, else decoded again
/// (cropped by the library's rule `crop`).
fn apply_edit(
    index: Vec<u8>,
    edit: &LibraryEdit,
    (crop, before): (tessera_engine::CropRule, Option<std::sync::Arc<Added>>),
    progress: &(dyn Fn(usize, usize) -> bool + Sync),
) -> Result<(Library, Option<std::sync::Arc<Added>>, EditReport), ImportError> {
    let base = Library::from_vec(index).map_err(|e| ImportError::Stopped(e.to_string()))?;
    let missing: Vec<&str> = edit
        .remove
        .iter()
        .filter(|name| !base.names().contains(name))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        return Err(ImportError::UnknownTiles(missing.join(", ")));
    }
    let added = match (&edit.add, before) {
        (None, _) => None,
        (Some(_), Some(before)) if before.library.import_options() == base.import_options() => {
            Some(before)
        }
        (Some(path), _) => Some(std::sync::Arc::new(prepare_added(
            path, &base, crop, progress,
        )?)),
    };
    let (library, copies) = base
        .edited(added.as_ref().map(|a| &a.library).as_slice(), &edit.remove)
        .map_err(|e| ImportError::Stopped(e.to_string()))?;
    if library.is_empty() {
        return Err(ImportError::WouldBeEmpty);
    }
    let mut report = EditReport {
        added: added.as_ref().map_or(0, |a| a.library.len()) - copies.len(),
        removed: edit.remove.len(),
        ..EditReport::default()
    };
    if let Some(added) = &added {
        report.skipped = added.report.skipped.clone();
        report.duplicates = added.report.duplicates.clone();
        report.ignored = added.report.ignored;
    }
    report.duplicates.extend(copies);
    Ok((library, added, report))
}

/// Decodes the images at `path` as tiles of `base` (its shape, size and background), cropped
/// by `crop`: refused when none is usable.
fn prepare_added(
    path: &Path,
    base: &Library,
    crop: tessera_engine::CropRule,
    progress: &(dyn Fn(usize, usize) -> bool + Sync),
) -> Result<Added, ImportError> {
    let options = tessera_engine::ImportOptions {
        crop,
        ..base.import_options()
    };
    let (library, report) = Library::import_with_progress(path, &options, progress)
        .map_err(|source| ImportError::reading(path, source))?;
    if library.is_empty() {
        return Err(ImportError::no_images(path, &report));
    }
    Ok(Added { library, report })
}

/// The files a library's record names as skipped after an edit: those skipped before that are
/// neither tiles now nor taken out, and those the edit skipped, in name order.
fn skipped_after(
    before: &[SkippedFile],
    library: &Library,
    report: &EditReport,
) -> Vec<SkippedFile> {
    let tiles: std::collections::HashSet<&str> =
        library.names().iter().map(String::as_str).collect();
    let mut skipped: Vec<SkippedFile> = before
        .iter()
        .filter(|s| !tiles.contains(s.name.as_str()))
        .filter(|s| !report.skipped.iter().any(|(name, _)| *name == s.name))
        .cloned()
        .chain(report.skipped.iter().map(|(name, reason)| SkippedFile {
            name: name.clone(),
            reason: reason.clone(),
        }))
        .collect();
    skipped.sort_by(|a, b| a.name.cmp(&b.name));
    skipped
}
