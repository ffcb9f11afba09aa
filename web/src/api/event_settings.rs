//! An event's settings, changed by its owner: closed to new photos or open again, approval
//! first or in at once, the most photos per guest and in all, the quiet interval of automatic
//! mosaics.

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;
use tessera_shared::error_code::ErrorCode;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::api::event_mosaics::{EventView, MAX_PER_GUEST, owned_event};
use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;

/// A change to an event's settings: a field left out keeps its value.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SettingsChange {
    /// Whether guests may still send photos.
    pub open: Option<bool>,
    /// Photos wait for the owner's approval (true), or are in at once. Photos already waiting
    /// keep waiting.
    pub approval: Option<bool>,
    /// Most photos one guest may send, 0 for no limit. Photos already sent stay.
    #[schema(maximum = 10000)]
    #[serde(default, deserialize_with = "whole_number")]
    pub per_guest: Option<u32>,
    /// A new mosaic is made on its own once the photos in it have changed and then stayed as
    /// they are this many seconds; 0 makes mosaics only when asked.
    #[schema(maximum = 86400)]
    #[serde(default, deserialize_with = "whole_number")]
    pub auto_after_seconds: Option<u32>,
    /// Most photos the event holds, from every guest together (1 to 1,000,000). Photos already
    /// sent stay.
    #[schema(minimum = 1, maximum = 1000000)]
    #[serde(default, deserialize_with = "whole_number")]
    pub max_photos: Option<u32>,
}

/// A whole number as JSON Schema's `integer` has it: `7` and `7.0` alike.
fn whole_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    let Some(n) = Option::<f64>::deserialize(d)? else {
        return Ok(None);
    };
    if n.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&n) {
        Ok(Some(n as u32))
    } else {
        Err(serde::de::Error::custom(format!(
            "{n} is not a whole number from 0"
        )))
    }
}

/// The longest quiet interval before a mosaic made on its own: a day.
const MAX_AUTO_AFTER_SECONDS: u32 = 86_400;

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
        (status = 403, description = "not_event_owner", body = crate::api_error::ErrorBody),
        (status = 404, description = "event_not_found", body = crate::api_error::ErrorBody),
        (status = 415, description = "the body is not JSON", body = crate::api_error::ErrorBody),
        (status = 503, description = "storage is unavailable", body = crate::api_error::ErrorBody),
    ),
)]
pub async fn change(
    req: HttpRequest,
    id: web::Path<Uuid>,
    body: web::Json<SettingsChange>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let (record, _, _) = owned_event(&state, &req, *id).await?;
    let change = body.into_inner();
    if change.per_guest.is_some_and(|n| n > MAX_PER_GUEST) {
        return Err(ApiError::bad_request(
            ErrorCode::InvalidParameter,
            format!("per_guest must be 0 (no limit) to {MAX_PER_GUEST}"),
        ));
    }
    if change
        .auto_after_seconds
        .is_some_and(|n| n > MAX_AUTO_AFTER_SECONDS)
    {
        return Err(ApiError::bad_request(
            ErrorCode::InvalidParameter,
            format!("auto_after_seconds must be 0 (only when asked) to {MAX_AUTO_AFTER_SECONDS}"),
        ));
    }
    if let Some(n) = change
        .max_photos
        .filter(|n| !(1..=tessera_shared::events::MAX_PHOTOS_LIMIT).contains(n))
    {
        return Err(crate::api::event_mosaics::max_photos_refused(n));
    }
    let record = state
        .platform
        .events()
        .update(record.id, |r| {
            let before = r.settings.clone();
            let s = &mut r.settings;
            s.open = change.open.unwrap_or(s.open);
            s.approval = change.approval.unwrap_or(s.approval);
            s.per_guest = change.per_guest.unwrap_or(s.per_guest);
            s.auto_after_seconds = change.auto_after_seconds.unwrap_or(s.auto_after_seconds);
            s.max_photos = change.max_photos.unwrap_or(s.max_photos);
            r.settings != before
        })
        .await?;
    crate::api::event_auto::schedule(&state, &record);
    Ok(HttpResponse::build(StatusCode::OK)
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(EventView::of(&record, None)))
}
