//! An event's settings, changed by its owner: closed to new photos or open again, approval
//! first or in at once, the most photos per guest and in all, the quiet interval of automatic
//! mosaics, the classifier, the consent line and how long photos are kept after closing.

use actix_web::http::{StatusCode, header};
use actix_web::{HttpResponse, web};
use utoipa::ToSchema;

use crate::api::event_mosaics::EventView;
use crate::api::owned_event::OwnedEvent;
use crate::api_error::ApiResult;
use crate::app_state::AppState;

/// A change to an event's settings: a setting left out keeps its value. The API document
/// describes it from the settings' declarations ([`tessera_shared::events::EventSettings::change_schema`]).
#[derive(ToSchema)]
pub struct SettingsChange {}

/// Change an event's settings.
///
/// Only its owner (or the operator): 403 not_event_owner otherwise.
#[utoipa::path(
    patch,
    path = "/api/v1/events/{id}",
    operation_id = "change_event",
    tag = "events",
    params(("id" = Uuid, Path, description = "The event's id")),
    request_body = SettingsChange,
    responses(
        (status = 200, description = "The event as it is now", body = EventView),
        (status = 400, description = "invalid_parameter, or the body is not the JSON this route takes", body = crate::api_error::ErrorBody),
        crate::api::error_sets::OwnedEventErrors,
        (status = 415, description = "the body is not JSON", body = crate::api_error::ErrorBody),
        crate::api::error_sets::StorageErrors,
    ),
)]
pub async fn change(
    owned: OwnedEvent,
    body: web::Json<serde_json::Map<String, serde_json::Value>>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let record = owned.record;
    let change = body.into_inner();
    // Checked before the write, which applies it again to the record as it is then.
    record.settings.change(&change)?;
    let record = state
        .platform
        .events()
        .update(record.id, |r| {
            let changed = r
                .settings
                .change(&change)
                .unwrap_or_else(|_| r.settings.clone());
            let differs = changed != r.settings;
            // Closing starts the photos' retention; opening again stops it.
            if changed.open != r.settings.open {
                r.closed_at = (!changed.open).then(time::OffsetDateTime::now_utc);
                if changed.open {
                    r.erased_at = None;
                }
            }
            if changed.review && r.review_token.is_none() {
                r.review_token = Some(crate::guards::auth::new_secret());
            }
            r.settings = changed;
            differs
        })
        .await?;
    crate::api::event_auto::schedule(&state, &record);
    Ok(HttpResponse::build(StatusCode::OK)
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(EventView::of(&state, &record, None).await?))
}
