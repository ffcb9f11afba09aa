//! `tessera library import`: a folder or .zip of images becomes a tile library in the store.

use std::path::Path;

use anyhow::Context as _;
use bytes::Bytes;
use tessera_engine::{ImportOptions, ImportReport, Library};
use tessera_shared::libraries::{LibraryRecord, SkippedFile, library_id_from_name};
use tessera_shared::platform::Platform;

/// Imports the images at `src` (a folder, searched recursively, or a .zip) and publishes them as
/// the next version of the library named `name` (its id made from the name). Decoding and
/// describing the tiles runs on a blocking thread.
pub async fn import_library(
    platform: &Platform,
    src: &Path,
    name: &str,
    replace: bool,
) -> anyhow::Result<(LibraryRecord, ImportReport)> {
    let path = src.to_path_buf();
    let (index, tiles, report) = tokio::task::spawn_blocking(move || {
        let (library, report) = Library::import(&path, &ImportOptions::default())?;
        Ok::<_, tessera_engine::Error>((library.to_bytes(), library.len(), report))
    })
    .await
    .context("the import stopped")?
    .with_context(|| format!("cannot import a tile library from {}", src.display()))?;
    if tiles == 0 {
        anyhow::bail!(
            "{} holds no usable images ({} skipped, {} files ignored)",
            src.display(),
            report.skipped.len(),
            report.ignored
        );
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
            tiles as u32,
            report.duplicates.len() as u32,
            skipped,
            Bytes::from(index),
            replace,
        )
        .await
        .with_context(|| format!("cannot store the tile library {id}"))?;
    tracing::info!(
        library = %record.id,
        version = record.version,
        tiles = record.tiles,
        bytes = record.index_bytes,
        "tile library imported"
    );
    Ok((record, report))
}
