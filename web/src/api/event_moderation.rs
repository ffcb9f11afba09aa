//! The owner's decisions on many photos at once (`POST /api/v1/events/{id}/decisions`): a
//! list of ids, or every photo in a state, approved or left out in one request. Each photo's
//! record is changed on its own, a few at once; the event's record is not written.

use actix_web::{HttpResponse, web};
use futures_util::stream::{self, StreamExt};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use tessera_shared::error_code::ErrorCode;
use tessera_shared::events::{EventPhoto, EventRecord, EventStore, PhotoState, Shelf};

use crate::api::owned_event::OwnedEvent;
use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;

/// The most photos one request names.
pub const MAX_DECISIONS: usize = 10_000;

/// Photo records changed at once.
const AT_ONCE: usize = 16;

/// A decision on many photos: the ids in `photos`, or every photo now in state `every`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkDecision {
    /// `approved` (in the mosaics) or `rejected` (left out).
    pub state: PhotoState,
    /// The photos, by id: at most 10,000.
    #[serde(default)]
    pub photos: Vec<Uuid>,
    /// Instead of `photos`: every photo now in this state (`waiting`, say), prepared.
    #[serde(default)]
    pub every: Option<PhotoState>,
}

/// What a decision on many photos changed.
#[derive(Debug, Serialize, ToSchema)]
pub struct BulkDecided {
    /// Photos now in the state asked for that were not.
    pub changed: usize,
    /// Photos already in it, or that cannot be read (those stay left out).
    pub unchanged: usize,
    /// Ids the event does not hold.
    pub not_found: Vec<Uuid>,
}

/// Decides `state` for photo `photo`: the photo as it is afterwards (none if the event does
/// not hold it), and whether the photos in the event's mosaics changed. On a board, a photo
/// put in gets its cell at once.
pub(crate) async fn decide_one(
    events: &EventStore,
    record: &EventRecord,
    photo: Uuid,
    state: PhotoState,
) -> ApiResult<Option<(EventPhoto, bool)>> {
    let event = record.id;
    let mut changes_mosaic = false;
    let decided = events
        .update_photo(event, photo, |p| {
            if p.state == state || p.unreadable.is_some() {
                return false;
            }
            let approved = PhotoState::Approved;
            changes_mosaic = p.prepared && (p.state == approved || state == approved);
            p.state = state;
            // The owner's decision is the last word: a verdict still to come changes nothing.
            if p.review
                .as_ref()
                .is_some_and(tessera_shared::events::Review::pending)
            {
                p.review = None;
            }
            true
        })
        .await?;
    let Some(mut decided) = decided else {
        return Ok(None);
    };
    if decided.cell.is_none() && record.board.is_some() {
        decided.cell = events.place_if_in(record, &decided).await?;
    }
    Ok(Some((decided, changes_mosaic)))
}

/// Approve or leave out many photos at once (the owner).
///
/// `{"state": "approved", "photos": [id, ...]}` (at most 10,000 ids), or
/// `{"state": "approved", "every": "waiting"}` for every prepared photo now waiting.
#[utoipa::path(
    post,
    path = "/api/v1/events/{id}/decisions",
    operation_id = "decide_event_photos",
    tag = "events",
    params(("id" = Uuid, Path, description = "The event's id")),
    request_body = BulkDecision,
    responses(
        (status = 200, description = "What changed", body = BulkDecided),
        (status = 400, description = "neither or both of photos and every, too many ids, or not the JSON this route takes", body = crate::api_error::ErrorBody),
        crate::api::error_sets::OwnedEventErrors,
        (status = 415, description = "the body is not JSON", body = crate::api_error::ErrorBody),
    ),
)]
pub async fn decide_many(
    owned: OwnedEvent,
    decision: web::Json<BulkDecision>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let BulkDecision {
        state: to,
        photos,
        every,
    } = decision.into_inner();
    let record = &owned.record;
    let events = state.platform.events();
    let photos = match (photos.is_empty(), every) {
        (false, None) if photos.len() <= MAX_DECISIONS => photos,
        (false, None) => {
            return Err(ApiError::bad_request(
                ErrorCode::InvalidParameter,
                format!("at most {MAX_DECISIONS} photos a request: send the rest in another"),
            )
            .with_field("photos"));
        }
        (true, Some(from)) => {
            let shelf = match from {
                PhotoState::Waiting => Shelf::Waiting,
                PhotoState::Approved => Shelf::Approved,
                PhotoState::Rejected => Shelf::Rejected,
            };
            let listed = events.shelf(record.id, shelf).await?;
            listed.into_iter().map(|p| p.id).collect()
        }
        _ => {
            return Err(ApiError::bad_request(
                ErrorCode::ConflictingParameters,
                "name the photos (photos) or a state (every), one of the two",
            ));
        }
    };
    let outcomes: Vec<_> = stream::iter(photos)
        .map(|photo| {
            let events = &events;
            async move { (photo, decide_one(events, record, photo, to).await) }
        })
        .buffer_unordered(AT_ONCE)
        .collect()
        .await;
    let mut answer = BulkDecided {
        changed: 0,
        unchanged: 0,
        not_found: Vec::new(),
    };
    let mut mosaic_changed = false;
    for (photo, outcome) in outcomes {
        match outcome? {
            None => answer.not_found.push(photo),
            Some((decided, changes_mosaic)) if decided.state == to => {
                answer.changed += 1;
                mosaic_changed |= changes_mosaic;
            }
            Some(_) => answer.unchanged += 1,
        }
    }
    if mosaic_changed {
        events.touch_changed(record.id).await?;
        crate::api::event_auto::schedule(&state, record);
    }
    Ok(HttpResponse::Ok().json(answer))
}
