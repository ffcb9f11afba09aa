//! Events' libraries made by the job controller (`libraryrequest`): an event's mosaic names
//! the photos it is made of, and the next version of the event's library is made from the
//! version before with the new photos' tiles put in and the left ones taken out. Each photo was
//! decoded once, when it was prepared (its tile is a one-tile index); none is decoded here,
//! but a photo prepared before tiles were kept, whose tile is made now from its file once.
//! Then the job's `ImageRequest` is sent, and the job goes on as any other.

use std::collections::HashSet;

use bytes::Bytes;
use futures_util::{StreamExt, TryStreamExt};
use tessera_engine::{ImportOptions, Library};
use tessera_shared::events::{EventError, EventPhoto, EventRecord, EventStore};
use tessera_shared::jobs::{JobError, JobRecord};
use tessera_shared::keys::BlobKey;
use tessera_shared::libraries::{
    IndexSource, IndexSummary, LARGE_INDEX, LibraryError, LibraryRecord, Publication, Visibility,
    scratch_file,
};
use tessera_shared::messages::{Envelope, ImageRequest, LibraryRequest};
use tessera_shared::platform::Platform;
use tessera_shared::runtime::Failure;
use tessera_shared::spec::LibraryRef;
use uuid::Uuid;

use crate::job_work::{give_up, job_failure, on_background_thread};

/// New tiles put in a large library at a time (each batch about 250 MB of renditions).
const EDIT_BATCH: usize = 20_000;

/// Tiles read from storage at once.
const TILE_READS: usize = 16;

/// The CPU priority an event's library is assembled at (a nice value), below the web's.
const ASSEMBLY_NICE: i32 = 5;

/// Makes the library of the mosaic `request` names, then sends the mosaic's job on.
pub(crate) async fn on_library_request(
    platform: &Platform,
    message: Envelope<LibraryRequest>,
) -> Result<(), Failure> {
    let (client, LibraryRequest { event_id, job_id }) = (message.client_id, message.body);
    let record = match platform.jobs().get(job_id).await {
        Ok(record) => record,
        // Deleted meanwhile: nothing to make.
        Err(JobError::NotFound(_)) => return Ok(()),
        Err(e) => return Err(job_failure(job_id, e)),
    };
    if record.state.is_final() {
        return Ok(());
    }
    let record = match record.library_of_event {
        Some(event) if event == event_id => make_version(platform, event, record).await?,
        // Made already (this is a redelivery): the job's request is sent again, which the
        // controller takes once.
        None => record,
        Some(_) => {
            let reason = "the request names another event than the job's".to_string();
            return Err(give_up(platform, job_id, reason).await);
        }
    };
    let request = ImageRequest {
        job_id,
        input_blob: BlobKey::ImageInput { job: job_id }.path(),
        spec: record.params.spec.clone(),
        sized_to: record.sized_to,
        redrive: false,
    };
    platform
        .queue::<ImageRequest>()
        .send(&Envelope::new(client, request))
        .await?;
    Ok(())
}

/// Publishes the event's library of the photos listed for job `record` (unless the version
/// now holds exactly them), and records it as the job's. Returns the job's record.
async fn make_version(
    platform: &Platform,
    event_id: Uuid,
    record: JobRecord,
) -> Result<JobRecord, Failure> {
    let job = record.id;
    let events = platform.events();
    let stored = |e: EventError| Failure::retry_because(format!("job {job}: {e}"));
    let event = match events.get(event_id).await {
        Ok(event) => event,
        Err(EventError::NotFound(_)) => {
            return Err(give_up(platform, job, "the event is gone".into()).await);
        }
        Err(e) => return Err(stored(e)),
    };
    let Some(photos) = events.edition(event_id, job).await.map_err(stored)? else {
        let reason = "the list of the mosaic's photos is missing".to_string();
        return Err(give_up(platform, job, reason).await);
    };
    let library = match edited_library(platform, &event, &photos).await? {
        Ok(library) => library,
        Err(reason) => return Err(give_up(platform, job, reason).await),
    };
    let record = platform
        .jobs()
        .update(job, |r| {
            let first = r.library_of_event.is_some();
            r.params.spec.library = library.clone();
            r.library_of_event = None;
            first
        })
        .await
        .map_err(|e| job_failure(job, e))?;
    if let Err(e) = events.delete_edition(event_id, job).await {
        tracing::debug!(%job, error = %e, "the list of a mosaic's photos stays");
    }
    Ok(record)
}

/// The version of `event`'s library that holds `photos`: the current one if it does, else a new
/// one edited from it. `Err` (the inner one) when no photo is left to make it of.
async fn edited_library(
    platform: &Platform,
    event: &EventRecord,
    photos: &[Uuid],
) -> Result<Result<LibraryRef, String>, Failure> {
    let catalog = platform.libraries();
    let id = event.library_id();
    let current = match catalog.get(&id).await {
        Ok(current) => Some(current),
        Err(LibraryError::NotFound(_)) => None,
        Err(e) => return Err(Failure::retry_because(format!("library {id}: {e}"))),
    };
    let base = match &current {
        Some(current) => {
            let index = catalog
                .fetch_index(&current.reference())
                .await
                .map_err(|e| Failure::retry_because(format!("library {id}: {e}")))?;
            on_background_thread(ASSEMBLY_NICE, move || index.open())
                .await
                .map_err(Failure::retry_because)?
                .map_err(|e| Failure::poison(format!("library {id}: {e}")))?
        }
        None => Library::empty(&ImportOptions::default()).map_err(Failure::poison)?,
    };
    // A tile is named by its photo's id (and the extension the photo came with).
    let wanted: HashSet<Uuid> = photos.iter().copied().collect();
    let had: HashSet<Uuid> = base.names().iter().filter_map(|n| photo_of(n)).collect();
    let removed: Vec<String> = base
        .names()
        .iter()
        .filter(|name| photo_of(name).is_none_or(|p| !wanted.contains(&p)))
        .cloned()
        .collect();
    let new: Vec<Uuid> = photos
        .iter()
        .copied()
        .filter(|p| !had.contains(p))
        .collect();
    if let Some(current) = &current
        && removed.is_empty()
        && new.is_empty()
    {
        return Ok(Ok(current.reference()));
    }
    // A large library is edited into a scratch file and stored from there, a part at a time,
    // its new tiles read and put in a batch at a time.
    let large = base.index_len_estimate(base.len() + new.len()) > LARGE_INDEX;
    let (mut library, mut duplicates) = (base, 0);
    let mut removed = Some(removed);
    for batch in new.chunks(if large { EDIT_BATCH } else { new.len().max(1) }) {
        let added = tiles_of(&platform.events(), event.id, batch).await?;
        let scratch = match large {
            true => Some(scratch_file().map_err(|e| Failure::retry_because(e.to_string()))?),
            false => None,
        };
        let removed = removed.take().unwrap_or_default();
        let (edited, left_out) = on_background_thread(ASSEMBLY_NICE, move || {
            let added: Vec<&Library> = added.iter().collect();
            match scratch {
                Some(scratch) => library.edited_on_disk(&added, &removed, scratch),
                None => library.edited(&added, &removed),
            }
        })
        .await
        .map_err(Failure::retry_because)?
        .map_err(|e| Failure::poison(format!("library {id}: {e}")))?;
        (library, duplicates) = (edited, duplicates + left_out.len());
    }
    if let Some(removed) = removed.filter(|r| !r.is_empty()) {
        // No photo added: only some taken out.
        let scratch = match large {
            true => Some(scratch_file().map_err(|e| Failure::retry_because(e.to_string()))?),
            false => None,
        };
        let (edited, _) = on_background_thread(ASSEMBLY_NICE, move || match scratch {
            Some(scratch) => library.edited_on_disk(&[], &removed, scratch),
            None => library.edited(&[], &removed),
        })
        .await
        .map_err(Failure::retry_because)?
        .map_err(|e| Failure::poison(format!("library {id}: {e}")))?;
        library = edited;
    }
    if library.is_empty() {
        return Ok(Err(
            "none of the mosaic's photos is left: they were withdrawn".into(),
        ));
    }
    let published = publish(platform, event, (library, duplicates), current).await?;
    Ok(Ok(published.reference()))
}

/// The photo a tile of an event's library is of, by its name (`{id}.{extension}`).
fn photo_of(tile: &str) -> Option<Uuid> {
    tile.split('.').next()?.parse().ok()
}

/// The tiles of `photos` that are still there (one withdrawn since is passed over). A photo
/// prepared before tiles were kept has its tile made from its file now, and kept.
async fn tiles_of(
    events: &EventStore,
    event: Uuid,
    photos: &[Uuid],
) -> Result<Vec<Library>, Failure> {
    let tiles: Vec<Option<Library>> = futures_util::stream::iter(photos.iter().copied())
        .map(|photo| tile_of(events, event, photo))
        .buffered(TILE_READS)
        .try_collect()
        .await?;
    Ok(tiles.into_iter().flatten().collect())
}

/// One photo's tile, if the photo is still there.
async fn tile_of(
    events: &EventStore,
    event: Uuid,
    photo: Uuid,
) -> Result<Option<Library>, Failure> {
    let stored = |e: EventError| Failure::retry_because(format!("photo {photo}: {e}"));
    let bytes = match events.tile(event, photo).await.map_err(stored)? {
        Some(bytes) => bytes,
        None => match events.find_photo(event, photo).await.map_err(stored)? {
            Some(record) => match tile_made_now(events, event, &record).await? {
                Some(bytes) => bytes,
                None => return Ok(None),
            },
            None => return Ok(None),
        },
    };
    let tile = on_background_thread(ASSEMBLY_NICE, move || Library::from_vec(bytes.to_vec()))
        .await
        .map_err(Failure::retry_because)?;
    match tile {
        Ok(tile) => Ok(Some(tile)),
        Err(e) => {
            tracing::warn!(%event, %photo, error = %e, "a photo's tile is unreadable: left out");
            Ok(None)
        }
    }
}

/// The tile of a photo prepared before tiles were kept, made from its file and stored; `None`
/// when its file is gone or cannot be decoded.
async fn tile_made_now(
    events: &EventStore,
    event: Uuid,
    photo: &EventPhoto,
) -> Result<Option<Bytes>, Failure> {
    let id = photo.id;
    let stored = |e: EventError| Failure::retry_because(format!("photo {id}: {e}"));
    let bytes = match events.photo(event, id).await {
        Ok(bytes) => bytes,
        Err(EventError::Storage(tessera_shared::storage::StorageError::NotFound(_))) => {
            return Ok(None);
        }
        Err(e) => return Err(stored(e)),
    };
    let (photo_tile, caption) = (photo.tile_name(), photo.name.clone());
    let made = on_background_thread(ASSEMBLY_NICE, move || {
        crate::photo_preparation::prepared_photo(
            &photo_tile,
            &caption,
            &bytes,
            tessera_shared::events::THUMBNAIL_SIDE,
        )
    })
    .await
    .map_err(Failure::retry_because)?;
    let Ok(made) = made else {
        return Ok(None);
    };
    let index = Bytes::from(made.tile.to_bytes());
    events
        .put_tile(event, id, index.clone())
        .await
        .map_err(stored)?;
    Ok(Some(index))
}

/// Publishes `library` as the event's next version after `current`, private to the event's
/// owner; a version published meanwhile makes the request be taken again.
async fn publish(
    platform: &Platform,
    event: &EventRecord,
    (library, duplicates): (Library, usize),
    current: Option<LibraryRecord>,
) -> Result<LibraryRecord, Failure> {
    let id = event.library_id();
    let summary = IndexSummary {
        shape: library.shape(),
        crop: ImportOptions::default().crop,
        tiles: library.len() as u32,
        duplicates: duplicates as u32,
        skipped: Vec::new(),
        transparent: library.is_transparent(),
    };
    let how = Publication {
        replace: true,
        by: event.owner.clone(),
        visibility: Some(Visibility::Private),
        based_on: current.as_ref().map(|c| c.version),
    };
    let index = on_background_thread(ASSEMBLY_NICE, move || index_of(&library))
        .await
        .map_err(Failure::retry_because)?
        .map_err(Failure::retry_because)?;
    match platform
        .libraries()
        .publish(&id, &id, summary, index, &how)
        .await
    {
        Ok(record) => {
            tracing::info!(
                library = %record.id,
                version = record.version,
                tiles = record.tiles,
                "an event's library made"
            );
            tessera_shared::library_import::collect_unneeded(platform, &id).await;
            Ok(record)
        }
        Err(LibraryError::Changed(_)) => Err(Failure::retry_because(format!(
            "library {id} changed meanwhile: made again"
        ))),
        Err(e) => Err(Failure::retry_because(format!("library {id}: {e}"))),
    }
}

/// The index to store of `library`: in memory, or saved to a scratch file when its renditions
/// are in one (a library larger than memory).
fn index_of(library: &Library) -> Result<IndexSource, String> {
    if !library.renditions_on_disk() {
        return Ok(IndexSource::Memory(Bytes::from(library.to_bytes())));
    }
    let mut file = scratch_file().map_err(|e| e.to_string())?;
    library
        .write_index(&mut file)
        .map_err(|e| format!("a library index's scratch file: {e}"))?;
    Ok(IndexSource::File(std::sync::Arc::new(file)))
}
