//! Making an event's mosaics: an ordinary job that keeps the cells of the latest mosaic done,
//! of the event's approved photos listed for it; the job controller makes the event's private
//! library of them (its photos prepared once as tiles) before it plans the job. Asked for by
//! the owner (`POST /api/v1/events/{id}/mosaic`) or on its own (`event_auto`).

use std::collections::{BTreeMap, BTreeSet};

use time::OffsetDateTime;
use uuid::Uuid;

use tessera_engine::ImportOptions;
use tessera_shared::error_code::ErrorCode;
use tessera_shared::events::{EventRecord, Maker, Overflow, Shelf, Showing, next_turn};
use tessera_shared::jobs::{JobError, JobRecord, JobState, Sharing};
use tessera_shared::spec::{Grid, JobSpec};

use crate::api::job_broker::{
    EventLibrary, Submission, check_spec, declared_field, enqueue, spec_of,
};
use crate::api::tile_libraries::require_index_room;
use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;
use crate::guards::inspect::probe_target;

/// Asks for a new mosaic of event `record` for `maker`: a job of its approved photos, listed for
/// it, that keeps the cells of the latest mosaic done; the controller makes the event's library
/// of them before it plans the job. Returns the job's id at once.
pub(crate) async fn make_mosaic(
    state: &AppState,
    record: &EventRecord,
    maker: &Maker,
    address: Option<std::net::IpAddr>,
) -> ApiResult<Uuid> {
    let events = state.platform.events();
    let asked_at = OffsetDateTime::now_utc();
    let approved: Vec<Uuid> = events
        .shelf(record.id, Shelf::Approved)
        .await?
        .iter()
        .map(|p| p.id)
        .collect();
    let before = library_room(state, record, approved.len()).await?;
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
    spec.library.id = record.library_id();
    let (photos, mut showing) = photos_of_mosaic(state, record, &mut spec, approved, &target)?;
    // The photos spread as far apart as their number allows, unless the owner chose.
    if chosen.insert("repeat_radius") {
        spec.options.repeat_radius = spread_for(photos.len());
    }
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
        event: Some(EventLibrary {
            event: record.id,
            tiles: photos.len() as u32,
            before,
        }),
    };
    let job = Uuid::new_v4();
    events.put_edition(record.id, job, &photos).await?;
    enqueue(state, job, who, address, job_asked).await?;
    showing.job = job;
    events
        .update(record.id, |r| {
            r.mosaics.push(job);
            r.mosaic_asked_at = Some(asked_at);
            r.maker = Some(maker.clone());
            if let Some((_, last)) = showing.turn {
                r.turn_after = Some(last);
            }
            r.note_showing(showing.clone());
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

/// The photos of the event's next mosaic, of its `approved` ones, by the owner's choice for
/// more photos than cells: all of them, the grid grown to give each a cell (up to the output
/// limit); all of them, the grid kept (the planner takes the best-fitting); or the next turn
/// of them, as many as the grid has cells. Says what the mosaic will show (its job unset).
fn photos_of_mosaic(
    state: &AppState,
    record: &EventRecord,
    spec: &mut JobSpec,
    approved: Vec<Uuid>,
    target: &[u8],
) -> ApiResult<(Vec<Uuid>, Showing)> {
    let limits = &state.settings.limits;
    let probe = probe_target(target, state.settings.max_input_pixels)?;
    let (width, height) = probe.upright();
    let cells_of = |spec: &JobSpec| -> ApiResult<usize> {
        let grid = spec.size(width, height, limits)?.grid();
        Ok(grid.cols as usize * grid.rows as usize)
    };
    let mut cells = cells_of(spec)?;
    let mut showing = Showing {
        job: Uuid::nil(),
        photos: approved.len() as u32,
        cells: 0,
        turn: None,
    };
    let photos = match record.settings.overflow {
        _ if approved.len() <= cells => approved,
        Overflow::Grow => {
            // A tenth more cells than photos: with every photo to place and barely a cell to
            // spare, the planner's search outgrows its budget (99,000 photos in 99,120 cells).
            let wanted = approved.len() + approved.len() / GROWN_SLACK;
            if let Some(grown) = grown_grid(spec, wanted, limits.max_cells, &cells_of) {
                spec.grid = Grid::Cells { across: grown };
                cells = cells_of(spec)?;
            }
            approved
        }
        Overflow::Best => approved,
        Overflow::Turns => {
            let (turn, ends) = next_turn(&approved, cells, record.turn_after);
            showing.photos = turn.len() as u32;
            showing.turn = Some(ends);
            turn
        }
    };
    showing.cells = cells as u32;
    Ok((photos, showing))
}

/// A grown grid has this many photos per spare cell, at most.
const GROWN_SLACK: usize = 10;

/// The fewest cells across (more than `spec` has) that give `photos` photos a cell each, or
/// failing that the most the service's limits allow; `None` when the grid cannot grow (a print
/// size, adaptive cells, one cell a pixel).
fn grown_grid(
    spec: &JobSpec,
    photos: usize,
    max_across: u32,
    cells_of: &dyn Fn(&JobSpec) -> ApiResult<usize>,
) -> Option<u32> {
    if spec.print.is_some() || spec.options.adaptive.is_some() || spec.grid == Grid::PerPixel {
        return None;
    }
    let with = |across: u32| {
        let mut grown = spec.clone();
        grown.grid = Grid::Cells { across };
        cells_of(&grown).ok()
    };
    // The most across the limits allow (at most the service's cells across): every count up
    // to it makes a job.
    let (mut fits, mut over) = (1u32, max_across.max(1) + 1);
    while over - fits > 1 {
        let mid = fits + (over - fits) / 2;
        if with(mid).is_some() {
            fits = mid;
        } else {
            over = mid;
        }
    }
    if with(fits).is_none_or(|cells| cells < photos) {
        return Some(fits);
    }
    // The fewest across that give every photo a cell.
    let (mut short, mut enough) = (0u32, fits);
    while enough - short > 1 {
        let mid = short + (enough - short) / 2;
        if with(mid).is_some_and(|cells| cells >= photos) {
            enough = mid;
        } else {
            short = mid;
        }
    }
    Some(enough)
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

/// Checks that `approved` photos make a library the service has room for: some, no more than
/// a library's file cap, and room for its index. Returns the version of the event's library
/// now, if it has one: the controller makes the next from it (`libraryrequest`).
async fn library_room(
    state: &AppState,
    record: &EventRecord,
    approved: usize,
) -> ApiResult<Option<u32>> {
    if approved == 0 {
        return Err(ApiError::unprocessable(
            ErrorCode::InvalidParameter,
            "no photo is approved yet: approve some before making the mosaic",
        ));
    }
    let max_files = state.settings.max_library_files;
    if approved > max_files as usize {
        return Err(ApiError::unprocessable(
            ErrorCode::TooManyFiles,
            format!(
                "{approved} photos are approved, and a mosaic's library takes at most \
                 {max_files}: leave some out"
            ),
        ));
    }
    let all = state.platform.libraries().list().await?;
    let id = record.library_id();
    let before = all.iter().find(|l| l.id == id).map(|l| l.version);
    // The event's earlier version is replaced, so it does not count against the room.
    let others: Vec<_> = all.into_iter().filter(|l| l.id != id).collect();
    let options = ImportOptions::default();
    require_index_room(state, (&others, &record.owner), &options, approved as u64).await?;
    Ok(before)
}
