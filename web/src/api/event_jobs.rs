//! Making an event's mosaics: its approved photos published as its private library, then an
//! ordinary job of that library that keeps the cells of the latest mosaic done. Asked for by
//! the owner (`POST /api/v1/events/{id}/mosaic`) or on its own (`event_auto`).

use std::collections::{BTreeMap, BTreeSet};

use time::OffsetDateTime;
use uuid::Uuid;

use tessera_engine::ImportOptions;
use tessera_shared::error_code::ErrorCode;
use tessera_shared::events::{EventPhoto, EventRecord, Maker, Shelf};
use tessera_shared::jobs::{JobError, JobRecord, JobState, Sharing};
use tessera_shared::libraries::{Publication, Visibility};
use tessera_shared::library_import::import_library_while;
use tessera_shared::spec::JobSpec;

use crate::api::job_broker::{Submission, check_spec, declared_field, enqueue, spec_of};
use crate::api::tile_libraries::{require_index_room, within_budget};
use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;

/// Asks for a new mosaic of event `record` for `maker`: a job of its approved photos, published
/// as its library, that keeps the cells of the latest mosaic done. Returns the job's id.
pub(crate) async fn make_mosaic(
    state: &AppState,
    record: &EventRecord,
    maker: &Maker,
    (address, asked_by): (Option<std::net::IpAddr>, Option<&actix_web::HttpRequest>),
) -> ApiResult<Uuid> {
    let events = state.platform.events();
    let asked_at = OffsetDateTime::now_utc();
    let listed = events.shelf(record.id, Shelf::Approved).await?;
    let approved = events
        .records_of(record.id, listed.iter().map(|p| p.id))
        .await?;
    let library = publish_library(state, record, &approved, asked_by).await?;
    let target = events.target(record.id).await?;
    let (mut spec, mut chosen) = match &record.spec {
        Some(spec) => {
            let chosen = record.chosen.iter().map(|name| declared_field(name));
            (spec.clone(), chosen.collect::<ApiResult<BTreeSet<_>>>()?)
        }
        None => {
            let mut fields = BTreeMap::new();
            for (name, value) in &record.fields {
                fields.insert(declared_field(name)?, value.clone());
            }
            event_job(&fields, record.id, state)?
        }
    };
    // The photos spread as far apart as their number allows, unless the owner chose.
    if chosen.insert("repeat_radius") {
        spec.options.repeat_radius = spread_for(approved.len());
    }
    spec.library.id = library;
    check_spec(&spec, state)?;
    let who = (maker.client, maker.key_holder.clone());
    spec.keep_cells_of = latest_mosaics(state, record).await?.done.map(|r| r.id);
    // Seen by its owner and by the event's guests (the contribute link's secret is its share
    // link's), never by anyone who only knows its id.
    let job_asked = Submission {
        image: (target, record.input_name.clone()),
        spec,
        chosen,
        sharing: Sharing {
            private: true,
            token: Some(record.token.clone()),
        },
    };
    let job = Uuid::new_v4();
    enqueue(state, job, who, address, job_asked).await?;
    events
        .update(record.id, |r| {
            r.mosaics.push(job);
            r.mosaic_asked_at = Some(asked_at);
            r.maker = Some(maker.clone());
            true
        })
        .await?;
    Ok(job)
}

/// The job of event `id`'s mosaics that the owner's `fields` ask for, checked, and the names
/// of the fields given: its library is the event's own, and every guest's photo is in each
/// mosaic where the grid has room for them all unless the owner chose a floor of uses.
pub(crate) fn event_job(
    fields: &BTreeMap<&'static str, String>,
    id: Uuid,
    state: &AppState,
) -> ApiResult<(JobSpec, BTreeSet<&'static str>)> {
    let mut fields = fields.clone();
    fields.insert("library", EventRecord::library_id_of(id));
    if !fields.contains_key("min_uses") {
        fields.entry("every_tile").or_insert_with(|| "true".into());
    }
    let spec = spec_of(&fields, state)?;
    Ok((spec, fields.keys().copied().collect()))
}

/// The widest distance (at most 2 cells) within which no photo repeats that `photos` photos
/// allow everywhere: a block of (2r + 1)² cells around each holds as many distinct photos.
fn spread_for(photos: usize) -> u32 {
    match photos {
        25.. => 2,
        9..=24 => 1,
        _ => 0,
    }
}

/// An event's newest mosaic whatever its state, and its newest finished one (most often the
/// same): what its page says, what its wall shows, whose cells the next mosaic keeps.
pub(crate) struct LatestMosaics {
    pub latest: Option<JobRecord>,
    pub done: Option<JobRecord>,
}

/// Reads the event's mosaics from the newest back to the first finished one (a mosaic
/// deleted since is passed over).
pub(crate) async fn latest_mosaics(
    state: &AppState,
    record: &EventRecord,
) -> ApiResult<LatestMosaics> {
    let mut found = LatestMosaics {
        latest: None,
        done: None,
    };
    for &job in record.mosaics.iter().rev() {
        let job = match state.platform.jobs().get(job).await {
            Ok(job) => job,
            Err(JobError::NotFound(_)) => continue,
            Err(e) => return Err(e.into()),
        };
        if job.state == JobState::Done {
            found.latest.get_or_insert_with(|| job.clone());
            found.done = Some(job);
            break;
        }
        found.latest.get_or_insert(job);
    }
    Ok(found)
}

/// Publishes the event's library, private to its owner: its approved photos, each captioned
/// with the name its guest sent. Returns its id. It is held to a library upload's limits: the
/// file cap, room for its index, the import queue and its time budget (`asked_by` the owner's
/// request, whose going away calls it off; none when made on its own).
async fn publish_library(
    state: &AppState,
    record: &EventRecord,
    approved: &[EventPhoto],
    asked_by: Option<&actix_web::HttpRequest>,
) -> ApiResult<String> {
    if approved.is_empty() {
        return Err(ApiError::unprocessable(
            ErrorCode::InvalidParameter,
            "no photo is approved yet: approve some before making the mosaic",
        ));
    }
    let max_files = state.settings.max_library_files;
    if approved.len() > max_files as usize {
        return Err(ApiError::unprocessable(
            ErrorCode::TooManyFiles,
            format!(
                "{} photos are approved, and a mosaic's library takes at most {max_files}: \
                 leave some out",
                approved.len()
            ),
        ));
    }
    let options = ImportOptions::default();
    let all = state.platform.libraries().list().await?;
    // The event's earlier version is replaced, so it does not count against the room.
    let others: Vec<_> = all
        .into_iter()
        .filter(|l| l.id != record.library_id())
        .collect();
    require_index_room(
        state,
        (&others, &record.owner),
        &options,
        approved.len() as u64,
    )
    .await?;
    let dir = tempfile::tempdir_in(&state.spool).map_err(ApiError::internal)?;
    let mut captions = String::from("file,caption\n");
    for photo in approved {
        let bytes = state.platform.events().photo(record.id, photo.id).await?;
        let tile = photo.tile_name();
        tokio::fs::write(dir.path().join(&tile), bytes)
            .await
            .map_err(ApiError::internal)?;
        captions.push_str(&format!("{tile},\"{}\"\n", photo.name.replace('"', "\"\"")));
    }
    tokio::fs::write(
        dir.path().join(tessera_engine::library::CAPTIONS_FILE),
        captions,
    )
    .await
    .map_err(ApiError::internal)?;
    let how = Publication {
        replace: true,
        by: record.owner.clone(),
        visibility: Some(Visibility::Private),
        based_on: None,
    };
    let id = record.library_id();
    let (library, _) = within_budget(asked_by, state, &id, |keep_going| {
        import_library_while(&state.platform, dir.path(), &id, options, &how, move || {
            keep_going.holds()
        })
    })
    .await?;
    Ok(library.id)
}
