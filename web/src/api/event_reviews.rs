//! A classifier's verdict on a guest's photo (`POST /api/v1/events/{id}/photos/{photo}/verdict`),
//! for an event that asks for one: the processors offer each prepared photo on `photoreview`
//! with the event's classifier token, and the classifier answers here. Approve puts the photo in
//! (or lets it wait for the owner's approval, when the event asks for it); hold keeps it waiting
//! for the owner, with the reason; reject leaves it out. A photo held is never shown until its
//! owner lets it in.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;
use utoipa::ToSchema;
use uuid::Uuid;

use tessera_shared::error_code::ErrorCode;
use tessera_shared::events::{PhotoState, Review, Verdict};

use crate::api::event_mosaics::{PhotoView, photo_not_found};
use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;
use crate::guards::auth::same_secret;

/// The header that carries the event's classifier token.
pub const REVIEW_TOKEN_HEADER: &str = "X-Review-Token";

/// The longest reason a verdict gives, in characters.
const MAX_REASON_CHARS: usize = 300;

/// A classifier's verdict.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VerdictBody {
    pub verdict: Verdict,
    /// Why, in a few words (at most 300 characters): shown to the event's owner.
    #[serde(default)]
    pub reason: Option<String>,
}

/// Give a classifier's verdict on a photo.
///
/// With the `X-Review-Token` the `photoreview` message carried. Given while the photo waits
/// for it; a verdict given again, or after the owner decided, changes nothing.
#[utoipa::path(
    post,
    path = "/api/v1/events/{id}/photos/{photo}/verdict",
    operation_id = "give_photo_verdict",
    tag = "events",
    params(
        ("id" = Uuid, Path, description = "The event's id"),
        ("photo" = Uuid, Path, description = "The photo's id"),
        ("X-Review-Token" = String, Header, description = "The event's classifier token, as photoreview carries it"),
    ),
    request_body = VerdictBody,
    responses(
        (status = 200, description = "The photo as it is now", body = PhotoView),
        (status = 400, description = "the reason is too long, or the body is not the JSON this route takes", body = crate::api_error::ErrorBody),
        (status = 403, description = "bad_review_token", body = crate::api_error::ErrorBody),
        (status = 404, description = "event_not_found, photo_not_found", body = crate::api_error::ErrorBody),
        (status = 415, description = "the body is not JSON", body = crate::api_error::ErrorBody),
    ),
)]
pub async fn give(
    req: HttpRequest,
    path: web::Path<(Uuid, Uuid)>,
    body: web::Json<VerdictBody>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let (event, photo) = path.into_inner();
    let events = state.platform.events();
    let record = events.get(event).await?;
    let given = req
        .headers()
        .get(REVIEW_TOKEN_HEADER)
        .and_then(|v| v.to_str().ok());
    let trusted = match (&record.review_token, given) {
        (Some(token), Some(given)) => same_secret(token.as_bytes(), given.as_bytes()),
        _ => false,
    };
    if !trusted {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            ErrorCode::BadReviewToken,
            "the classifier's token is missing or wrong: send the one photoreview carried",
        ));
    }
    let VerdictBody { verdict, reason } = body.into_inner();
    let reason = reason_of(reason)?;
    let mut changes_mosaic = false;
    let approval = record.settings.approval;
    let decided = events
        .update_photo(event, photo, |p| {
            if !p.review.as_ref().is_some_and(Review::pending) {
                return false;
            }
            p.review = Some(Review {
                verdict: Some(verdict),
                reason: reason.clone(),
            });
            match verdict {
                Verdict::Approve if !approval && p.held.is_none() => {
                    p.state = PhotoState::Approved;
                    changes_mosaic = true;
                }
                Verdict::Approve => {}
                Verdict::Hold => {
                    let why = reason.as_deref().unwrap_or("doubtful");
                    p.held = Some(format!("the classifier: {why}"));
                    p.state = PhotoState::Waiting;
                }
                Verdict::Reject => p.state = PhotoState::Rejected,
            }
            true
        })
        .await?
        .ok_or_else(|| photo_not_found(photo))?;
    let mut decided = decided;
    if decided.cell.is_none() && record.board.is_some() {
        decided.cell = events.place_if_in(&record, &decided).await?;
    }
    if changes_mosaic {
        events.touch_changed(record.id).await?;
        crate::api::event_auto::schedule(&state, &record);
    }
    Ok(HttpResponse::Ok().json(PhotoView::from(&decided)))
}

/// A verdict's reason as given: trimmed, none if blank; refused when too long or with control
/// characters.
fn reason_of(reason: Option<String>) -> ApiResult<Option<String>> {
    let Some(text) = reason
        .map(|r| r.trim().to_string())
        .filter(|r| !r.is_empty())
    else {
        return Ok(None);
    };
    if text.chars().count() > MAX_REASON_CHARS || text.chars().any(char::is_control) {
        return Err(ApiError::bad_request(
            ErrorCode::InvalidParameter,
            format!("reason must be at most {MAX_REASON_CHARS} characters of text"),
        )
        .with_field("reason"));
    }
    Ok(Some(text))
}
