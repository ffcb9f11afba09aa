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
    /// The import was asked to stop (`keep_going` said no): nothing was published.
    #[error("the import was called off; nothing was published")]
    CalledOff,
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
    let shape = options.shape;
    let keep_going = std::sync::Arc::new(keep_going);
    let asked = keep_going.clone();
    let (index, tiles, transparent, report) = tokio::task::spawn_blocking(move || {
        let (library, report) = Library::import_with_progress(&path, &options, &|_, _| asked())?;
        let (tiles, transparent) = (library.len(), library.is_transparent());
        Ok::<_, tessera_engine::Error>((library.to_bytes(), tiles, transparent, report))
    })
    .await
    .map_err(|e| ImportError::Stopped(e.to_string()))?
    .map_err(|source| match source {
        tessera_engine::Error::Stopped => ImportError::CalledOff,
        source => ImportError::Source {
            src: src.display().to_string(),
            source,
        },
    })?;
    if !keep_going() {
        return Err(ImportError::CalledOff);
    }
    if tiles == 0 {
        return Err(ImportError::NoImages {
            src: src.display().to_string(),
            why: if report.skipped.is_empty() {
                "there are no files".into()
            } else {
                tessera_engine::summarise_skipped(&report.skipped)
            },
        });
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
    Ok((record, report))
}
