//! A folder or .zip of images becomes a tile library in the store (`tessera library import`, the
//! web's library upload, the default library of `tessera serve`).

use std::path::Path;

use bytes::Bytes;
use tessera_engine::{ImportOptions, ImportReport, Library};

use crate::libraries::{
    IndexSummary, LibraryError, LibraryRecord, SkippedFile, library_id_from_name,
};
use crate::platform::Platform;

/// Why an import made no library.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The files were read, but none is a usable tile.
    #[error("{src} holds no usable images ({skipped} skipped, {ignored} files ignored)")]
    NoImages {
        src: String,
        skipped: usize,
        ignored: usize,
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
}

/// Imports the images at `src` (a folder, searched recursively, or a .zip) and publishes them as
/// the next version of the library named `name` (its id made from the name), each image prepared
/// as `options` say (cropped to their shape, transparent parts laid over their background); an
/// existing library is refused unless `replace`. Decoding and describing the tiles
/// runs on a blocking thread.
pub async fn import_library(
    platform: &Platform,
    src: &Path,
    name: &str,
    options: ImportOptions,
    replace: bool,
) -> Result<(LibraryRecord, ImportReport), ImportError> {
    let path = src.to_path_buf();
    let shape = options.shape;
    let (index, tiles, transparent, report) = tokio::task::spawn_blocking(move || {
        let (library, report) = Library::import(&path, &options)?;
        let (tiles, transparent) = (library.len(), library.is_transparent());
        Ok::<_, tessera_engine::Error>((library.to_bytes(), tiles, transparent, report))
    })
    .await
    .map_err(|e| ImportError::Stopped(e.to_string()))?
    .map_err(|source| ImportError::Source {
        src: src.display().to_string(),
        source,
    })?;
    if tiles == 0 {
        return Err(ImportError::NoImages {
            src: src.display().to_string(),
            skipped: report.skipped.len(),
            ignored: report.ignored,
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
            replace,
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
