//! Automatic mosaics: once the photos in an event's mosaics have changed and then stayed as they
//! are for the event's quiet interval (`auto_after_seconds`), a new mosaic is made on its own.
//! Each change schedules a check after the interval, in the web process that took it; the check
//! makes the mosaic only if no later change or mosaic came meanwhile, and claims it in the
//! event's record under its ETag first, so that two web processes never make the same one. A
//! check lost with its process (a restart) is made again by the next change.

use std::time::Duration;

use actix_web::web;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::api::event_jobs::make_mosaic;
use crate::api_error::ApiResult;
use crate::app_state::AppState;
use tessera_shared::events::EventRecord;

/// Schedules the check for an automatic mosaic of `record`, just changed.
pub(crate) fn schedule(state: &web::Data<AppState>, record: &EventRecord) {
    let seconds = record.settings.auto_after_seconds;
    if seconds == 0 || record.approved_changed_at.is_none() {
        return;
    }
    let (state, id) = (state.clone(), record.id);
    actix_web::rt::spawn(async move {
        let quiet = Duration::from_secs(u64::from(seconds)) + Duration::from_millis(50);
        tokio::time::sleep(quiet).await;
        if let Err(e) = make_if_due(&state, id).await {
            tracing::warn!(event = %id, error = %e, "no automatic mosaic");
        }
    });
}

/// Makes event `id`'s mosaic if one is due ([`EventRecord::mosaic_due`]) and this process
/// claims it.
async fn make_if_due(state: &AppState, id: Uuid) -> ApiResult<()> {
    let now = OffsetDateTime::now_utc();
    let mut claimed = false;
    let record = state
        .platform
        .events()
        .update(id, |r| {
            claimed = r.mosaic_due(now);
            if claimed {
                r.mosaic_asked_at = Some(now);
            }
            claimed
        })
        .await?;
    let Some(maker) = record.maker.clone().filter(|_| claimed) else {
        return Ok(());
    };
    let job = make_mosaic(state, &record, &maker, (None, None)).await?;
    tracing::info!(event = %id, %job, "a mosaic made on its own");
    Ok(())
}
