//! What an event's pages show besides its record: each contributed photo as a small square (for
//! moderation, to its owner and its guest), and the contribute link as a QR code (to its owner,
//! to print or show at the event).

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use tessera_shared::error_code::ErrorCode;
use uuid::Uuid;

use crate::api::event_mosaics::contribute_path;
use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;
use crate::guards::client::{client_address, known_requester, origin};

/// A contributed photo as a square JPEG of at most 320 px, cropped as its tile is.
///
/// To the event's owner, to the guest who sent it, and to the event's wall (`?token=` its
/// wall link's secret) for an approved photo.
#[utoipa::path(
    get,
    path = "/api/v1/events/{id}/photos/{photo}/thumbnail",
    operation_id = "event_photo_thumbnail",
    tag = "events",
    params(
        ("id" = Uuid, Path, description = "The event's id"),
        ("photo" = Uuid, Path, description = "The photo's id"),
    ),
    responses(
        (status = 200, description = "The photo, a square of at most 320 px", content_type = "image/jpeg", body = crate::api::doc_types::Binary),
        (status = 403, description = "not_event_owner: neither the owner nor the photo's guest", body = crate::api_error::ErrorBody),
        (status = 404, description = "event_not_found, photo_not_found", body = crate::api_error::ErrorBody),
        (status = 422, description = "corrupt_image: the photo cannot be read", body = crate::api_error::ErrorBody),
        (status = 503, description = "storage is unavailable", body = crate::api_error::ErrorBody),
    ),
)]
pub async fn thumbnail(
    req: HttpRequest,
    path: web::Path<(Uuid, Uuid)>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let (id, photo) = path.into_inner();
    let events = state.platform.events();
    let record = events.get(id).await?;
    let who = known_requester(&req);
    let sent = events.find_photo(id, photo).await?.ok_or_else(|| {
        ApiError::not_found(
            ErrorCode::PhotoNotFound,
            format!("event {id} has no photo {photo}"),
        )
    })?;
    let on_wall = sent.state == tessera_shared::events::PhotoState::Approved
        && crate::api::event_wall::holds_wall_link(&req, &record);
    let may = on_wall
        || who
            .as_ref()
            .is_some_and(|w| w.is_operator() || *w == record.owner || *w == sent.contributor);
    if !may {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            ErrorCode::NotEventOwner,
            "only the event's owner and the photo's guest see it",
        ));
    }
    if !sent.prepared || sent.unreadable.is_some() {
        return Err(ApiError::not_found(
            ErrorCode::PhotoNotFound,
            match &sent.unreadable {
                Some(why) => format!("photo {photo} cannot be read: {why}"),
                None => format!("photo {photo} is being prepared: its picture comes next"),
            },
        ));
    }
    let jpeg = match events.thumbnail(id, photo).await? {
        Some(jpeg) => jpeg,
        // A photo sent before thumbnails were kept: made once now, in its turn, and kept.
        None => {
            let address = client_address(&req, state.guard.trusted_proxies());
            let bytes = events.photo(id, photo).await?;
            let _turn = state
                .guests
                .decode_turn(&state.settings.guests, address, id)
                .await;
            let made = crate::imaging::photo_square::thumbnail(bytes).await?;
            events.put_thumbnail(id, photo, made.clone()).await?;
            made
        }
    };
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "image/jpeg"))
        .insert_header((header::CACHE_CONTROL, "private, max-age=86400"))
        .body(jpeg))
}

/// The event's contribute link as a QR code (SVG), to print or show at the event.
///
/// To the event's owner, and to its wall (`?token=` its wall link's secret).
#[utoipa::path(
    get,
    path = "/api/v1/events/{id}/qr",
    operation_id = "event_qr_code",
    tag = "events",
    params(("id" = Uuid, Path, description = "The event's id"), crate::api::event_wall::WallQuery),
    responses(
        (status = 200, description = "The contribute link as a QR code", content_type = "image/svg+xml", body = String),
        crate::api::error_sets::OwnedEventErrors,
        crate::api::error_sets::StorageErrors,
    ),
)]
pub async fn qr_code(
    req: HttpRequest,
    id: web::Path<Uuid>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let (record, _) = crate::api::event_wall::wall_event(&state, &req, *id).await?;
    let link = format!("{}{}", origin(&req), contribute_path(&record));
    let code = qrcode::QrCode::new(link.as_bytes()).map_err(ApiError::internal)?;
    let svg = code
        .render::<qrcode::render::svg::Color>()
        .min_dimensions(256, 256)
        .build();
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "image/svg+xml"))
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .body(svg))
}
