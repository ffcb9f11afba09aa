//! Automatic mosaics: once the photos in an event's mosaics have changed and then stayed as they
//! are for the event's quiet interval (`auto_after_seconds`), a new mosaic is made on its own.
//! A change (a photo approved, prepared while approved, left out or taken out) rewrites the
//! event's `changed` blob; the web process that took it checks after the interval, once per
//! event however many changes come, and again while the photos keep changing or wait to be
//! prepared. The check makes the mosaic only if no later change or mosaic came meanwhile, and
//! claims it in the event's record under its ETag first, so that two web processes never make
//! the same one. A check lost with its process (a restart) is made again by the next change.
//! Photos taking turns (more than the cells) have the next turn made each quiet interval while
//! some wait for one, so that the wall shows every photo in time.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use actix_web::web;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::api::event_jobs::make_mosaic;
use crate::api_error::ApiResult;
use crate::app_state::AppState;
use tessera_shared::events::{EventRecord, Overflow, Shelf};

/// The events this process has a check scheduled for, and when each is due.
static SCHEDULED: Mutex<Option<HashMap<Uuid, Instant>>> = Mutex::new(None);

/// Tries of a check that failed (storage busy, say) before the event waits for its next change.
const CHECK_TRIES: u32 = 3;

/// Notes a check of `event` due at `due`, unless one is due sooner: whether this is the
/// event's next check (`since` the check that reschedules itself, if any). A check whose time
/// has come may be under way with what it read before this change, so a new one is booked.
fn book(event: Uuid, due: Instant, since: Option<Instant>) -> bool {
    let mut scheduled = SCHEDULED.lock().unwrap_or_else(|e| e.into_inner());
    let scheduled = scheduled.get_or_insert_with(HashMap::new);
    match scheduled.get(&event) {
        Some(&booked) if Some(booked) != since && booked <= due && booked > Instant::now() => false,
        _ => {
            scheduled.insert(event, due);
            true
        }
    }
}

/// Whether the check due at `due` is still `event`'s next one.
fn still_booked(event: Uuid, due: Instant) -> bool {
    let scheduled = SCHEDULED.lock().unwrap_or_else(|e| e.into_inner());
    scheduled
        .as_ref()
        .and_then(|s| s.get(&event))
        .is_some_and(|&booked| booked == due)
}

/// Schedules the check for an automatic mosaic of `record`, whose photos may have just
/// changed (none if one is due sooner already).
pub(crate) fn schedule(state: &web::Data<AppState>, record: &EventRecord) {
    let seconds = record.settings.auto_after_seconds;
    if seconds == 0 || record.maker.is_none() {
        return;
    }
    let id = record.id;
    let mut due = Instant::now() + Duration::from_secs(u64::from(seconds));
    if !book(id, due, None) {
        return;
    }
    let state = state.clone();
    actix_web::rt::spawn(async move {
        let mut failed = 0;
        loop {
            tokio::time::sleep_until((due + Duration::from_millis(50)).into()).await;
            if !still_booked(id, due) {
                // A check due sooner took over.
                return;
            }
            let again = match check(&state, id).await {
                Ok(again) => again,
                Err(e) if failed + 1 < CHECK_TRIES => {
                    failed += 1;
                    tracing::info!(event = %id, error = %e, "an automatic mosaic's check tried again");
                    Some(Duration::from_secs(u64::from(failed)))
                }
                Err(e) => {
                    tracing::warn!(event = %id, error = %e, "no automatic mosaic");
                    None
                }
            };
            let Some(again) = again else { break };
            let next = Instant::now() + again;
            if !book(id, next, Some(due)) {
                return;
            }
            due = next;
        }
        let mut scheduled = SCHEDULED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(scheduled) = scheduled.as_mut()
            && scheduled.get(&id) == Some(&due)
        {
            scheduled.remove(&id);
        }
    });
}

/// Makes event `id`'s mosaic if one is due ([`EventRecord::mosaic_due`]) and this process
/// claims it; says how long to wait before looking again while its photos are still
/// changing or being prepared.
async fn check(state: &AppState, id: Uuid) -> ApiResult<Option<Duration>> {
    let events = state.platform.events();
    let record = events.get(id).await?;
    let quiet = Duration::from_secs(u64::from(record.settings.auto_after_seconds));
    let changed = events.changed_at(&record).await?;
    let now = OffsetDateTime::now_utc();
    if let Some(changed) = changed
        && record.mosaic_asked_at.is_none_or(|asked| asked < changed)
        && !record.mosaic_due(now, Some(changed))
    {
        // Changed within the quiet interval: looked at again once it has passed.
        let left = (changed + quiet - now).max(time::Duration::ZERO);
        return Ok(Some(left.try_into().unwrap_or(quiet)));
    }
    let turns = turn_waits(state, &record).await?;
    let turn_due =
        |r: &EventRecord| turns && r.mosaic_asked_at.is_none_or(|asked| asked + quiet <= now);
    if !record.mosaic_due(now, changed) && !turn_due(&record) {
        let preparing = !events.shelf(id, Shelf::Received).await?.is_empty();
        let next_turn = record
            .mosaic_asked_at
            .map_or(time::Duration::ZERO, |asked| asked + quiet - now)
            .max(time::Duration::ZERO);
        return Ok(match (turns, preparing) {
            (true, _) => Some(next_turn.try_into().unwrap_or(quiet)),
            (false, true) if record.settings.auto_after_seconds > 0 => Some(quiet),
            _ => None,
        });
    }
    let mut claimed = false;
    let record = events
        .update(id, |r| {
            claimed = r.mosaic_due(now, changed) || turn_due(r);
            if claimed {
                r.mosaic_asked_at = Some(now);
            }
            claimed
        })
        .await?;
    let Some(maker) = record.maker.clone().filter(|_| claimed) else {
        return Ok(None);
    };
    let job = make_mosaic(state, &record, &maker, None).await?;
    tracing::info!(event = %id, %job, "a mosaic made on its own");
    // Photos taking turns: the next turn after another quiet interval.
    Ok(turns.then_some(quiet))
}

/// Whether `record`'s photos take turns on their own and some wait for one: more approved
/// than its latest mosaic's turn took.
async fn turn_waits(state: &AppState, record: &EventRecord) -> ApiResult<bool> {
    let on = record.settings.overflow == Overflow::Turns
        && record.settings.auto_after_seconds > 0
        && record.maker.is_some();
    let Some(latest) = record
        .mosaics
        .last()
        .and_then(|&job| record.showing_of(job))
    else {
        return Ok(false);
    };
    if !on || latest.turn.is_none() {
        return Ok(false);
    }
    let approved = state
        .platform
        .events()
        .shelf(record.id, Shelf::Approved)
        .await?
        .len();
    Ok(approved as u32 > latest.shown())
}
