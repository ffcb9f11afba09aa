//! The owner's pages through an event's photos (`GET /api/v1/events/{id}/photos`, and the
//! event's page): a state, a guest, newest or oldest first, a page at a time.

use actix_web::{HttpResponse, web};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use tessera_shared::error_code::ErrorCode;
use tessera_shared::events::{PhotoFilter, Shelf};
use tessera_shared::owner::Owner;

use crate::api::owned_event::OwnedEvent;
use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;

/// Photos on a page unless the request says otherwise, and at most.
pub const PHOTOS_PER_PAGE: usize = 60;
pub const MAX_PHOTOS_PER_PAGE: usize = 500;

/// Which of an event's photos a page shows: its owner's page takes the same.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PhotoQuery {
    /// `received` (not prepared yet), `waiting`, `approved` or `rejected`; absent: every state.
    #[param(pattern = "^(received|waiting|approved|rejected)$")]
    pub state: Option<String>,
    /// One guest's photos only: their `contributor`, as a photo's view gives it.
    #[param(pattern = "^client:[0-9a-f]{24}$")]
    pub guest: Option<String>,
    /// `newest` (the default: newest on their shelf first) or `oldest`.
    #[param(pattern = "^(newest|oldest)$")]
    pub order: Option<String>,
    /// Photos passed over before the page (0 by default).
    #[param(value_type = Option<u32>, minimum = 0, maximum = 10_000_000)]
    pub offset: Option<String>,
    /// Photos on the page: 1 to 500, 60 by default.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 500)]
    pub limit: Option<String>,
}

impl PhotoQuery {
    /// The filter it asks for, each value checked: a clear 400 names the one that is wrong.
    pub fn filter(&self) -> ApiResult<PhotoFilter> {
        fn wrong(field: &'static str, message: String) -> ApiError {
            ApiError::bad_request(ErrorCode::InvalidParameter, message).with_field(field)
        }
        fn given(v: &Option<String>) -> Option<&str> {
            v.as_deref().map(str::trim).filter(|v| !v.is_empty())
        }
        let shelf = match given(&self.state) {
            None => None,
            Some(text) => Some(Shelf::parse(text).ok_or_else(|| {
                wrong(
                    "state",
                    format!("state must be received, waiting, approved or rejected, not {text:?}"),
                )
            })?),
        };
        let guest = match given(&self.guest) {
            None => None,
            Some(text) => Some(Owner::parse_client(text).ok_or_else(|| {
                wrong(
                    "guest",
                    format!("guest must be a photo's contributor (client: and 24 hex digits), not {text:?}"),
                )
            })?),
        };
        let oldest_first = match given(&self.order) {
            None | Some("newest") => false,
            Some("oldest") => true,
            Some(text) => {
                return Err(wrong(
                    "order",
                    format!("order must be newest or oldest, not {text:?}"),
                ));
            }
        };
        let whole = |field: &'static str,
                     v: &Option<String>,
                     default: usize,
                     range: std::ops::RangeInclusive<usize>| {
            let Some(text) = given(v) else {
                return Ok(default);
            };
            text.parse::<usize>()
                .ok()
                .filter(|n| range.contains(n))
                .ok_or_else(|| {
                    wrong(
                        field,
                        format!(
                            "{field} must be a whole number from {} to {}, not {text:?}",
                            range.start(),
                            range.end()
                        ),
                    )
                })
        };
        Ok(PhotoFilter {
            shelf,
            guest,
            oldest_first,
            offset: whole("offset", &self.offset, 0, 0..=10_000_000)?,
            limit: whole(
                "limit",
                &self.limit,
                PHOTOS_PER_PAGE,
                1..=MAX_PHOTOS_PER_PAGE,
            )?,
        })
    }
}

/// A page of an event's photos.
#[derive(Debug, Serialize, ToSchema)]
pub struct PhotoList {
    /// Photos the filter takes, on every page.
    pub total: usize,
    pub offset: usize,
    pub limit: usize,
    pub photos: Vec<crate::api::event_mosaics::PhotoView>,
}

/// A page of the event's photos (the owner): a state, a guest, newest or oldest first.
#[utoipa::path(
    get,
    path = "/api/v1/events/{id}/photos",
    operation_id = "list_event_photos",
    tag = "events",
    params(("id" = Uuid, Path, description = "The event's id"), PhotoQuery),
    responses(
        (status = 200, description = "The page, and how many photos the filter takes", body = PhotoList),
        (status = 400, description = "a filter's value is not one it takes", body = crate::api_error::ErrorBody),
        crate::api::error_sets::OwnedEventErrors,
    ),
)]
pub async fn list(
    owned: OwnedEvent,
    query: web::Query<PhotoQuery>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let filter = query.filter()?;
    let page = state
        .platform
        .events()
        .browse(owned.record.id, &filter)
        .await?;
    Ok(HttpResponse::Ok().json(PhotoList {
        total: page.total,
        offset: filter.offset,
        limit: filter.limit,
        photos: page.photos.iter().map(Into::into).collect(),
    }))
}
