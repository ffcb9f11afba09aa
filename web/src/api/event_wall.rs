//! An event's wall link (`/api/v1/events/{id}/wall`): a view-only page for a screen at the
//! venue, opened by its own secret (`?token=`) so that the couple can hand any PC or TV the
//! wall without signing it in. The owner makes it (a new one ends the old) and ends it; the
//! screen reads what the wall shows: the latest finished mosaic, the newest photos and the
//! guests' link.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use serde::Serialize;
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use tessera_shared::error_code::ErrorCode;
use tessera_shared::events::{EventRecord, Shelf};
use tessera_shared::jobs::JobRecord;

use crate::api::event_jobs::latest_mosaics;
use crate::api::event_mosaics::contribute_path;
use crate::api::owned_event::{OwnedEvent, is_owner, requester};
use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;
use crate::guards::auth::{new_secret, same_secret};
use crate::guards::client::origin;

/// The newest photos a wall shows in turn.
const WALL_NEWEST: usize = 8;

/// The wall link the owner hands a screen.
#[derive(Debug, Serialize, ToSchema)]
pub struct WallLink {
    /// The wall's page, with its secret (`/events/{id}/wall?token=...`).
    pub url: String,
}

/// What an event's wall shows.
#[derive(Debug, Serialize, ToSchema)]
pub struct WallView {
    pub name: String,
    /// The page guests open to send photos, whole (scheme and host), for the wall's QR code.
    pub contribute_url: String,
    /// The latest finished mosaic, once there is one.
    pub mosaic: Option<WallMosaic>,
    /// The newest photos in the mosaics, newest first.
    pub newest: Vec<WallPhoto>,
    /// The board filling in, for an event made as one.
    pub board: Option<WallBoard>,
}

/// A board as the wall draws it: the target's colour in each cell, faint until a sticker fills
/// it, and the colours the free cells still want.
#[derive(Debug, Serialize, ToSchema)]
pub struct WallBoard {
    pub cols: u32,
    pub rows: u32,
    /// The target's colour in each cell (`#rrggbb`), row by row.
    pub cells: Vec<String>,
    /// The cells filled, in the order they were, each with its sticker's colour.
    pub filled: Vec<FilledCell>,
    /// The colours the free cells want, most first.
    pub wishlist: Vec<tessera_shared::wishlist::Wish>,
}

/// A filled cell of a board.
#[derive(Debug, Serialize, ToSchema)]
pub struct FilledCell {
    pub row: u32,
    pub col: u32,
    /// Its sticker's colour (`#rrggbb`), as printed; its target's for cells placed before
    /// the colour was kept.
    pub colour: String,
}

fn hex(c: [u8; 3]) -> String {
    format!("#{:02x}{:02x}{:02x}", c[0], c[1], c[2])
}

impl WallBoard {
    async fn of(state: &AppState, record: &EventRecord) -> ApiResult<Option<WallBoard>> {
        let Some(board) = &record.board else {
            return Ok(None);
        };
        let placed = state.platform.events().placed(record.id).await?;
        let cells: Vec<_> = placed.iter().map(|p| p.cell).collect();
        Ok(Some(WallBoard {
            cols: board.cols,
            rows: board.rows,
            cells: board.cells.iter().map(|&c| hex(c)).collect(),
            filled: placed
                .iter()
                .map(|p| FilledCell {
                    row: p.cell.row,
                    col: p.cell.col,
                    colour: hex(match p.colour {
                        Some(c) => board.sticker_colour(c, p.cell),
                        None => board.colour(p.cell),
                    }),
                })
                .collect(),
            wishlist: board.wishlist(&cells),
        }))
    }
}

/// The mosaic on the wall.
#[derive(Debug, Serialize, ToSchema)]
pub struct WallMosaic {
    pub job: Uuid,
    /// Its picture, as the wall loads it (the mosaic's share link is the guests' link's).
    pub preview_url: String,
    /// Its placements, in which the wall finds where a photo is.
    pub placements_url: String,
    pub cols: u32,
    pub rows: u32,
    pub width: u32,
    pub height: u32,
}

/// A photo on the wall.
#[derive(Debug, Serialize, ToSchema)]
pub struct WallPhoto {
    pub id: Uuid,
    /// Its tile's name in the mosaic, which finds its cells.
    pub tile: String,
    /// The name its guest goes by, if they gave one.
    pub guest_name: Option<String>,
    /// Its cell on the board, for an event made as one, once placed.
    pub cell: Option<tessera_shared::events::board::Cell>,
    /// Its picture, a square of at most 320 px.
    pub picture_url: String,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub added_at: OffsetDateTime,
}

/// The wall link's secret on a request: `?token=` on the event's routes, `?wall=` on its
/// mosaic's (whose `?share=` is the guests' link's).
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
pub struct WallQuery {
    /// The wall link's secret.
    pub token: Option<String>,
    /// The same, beside a mosaic's share link.
    pub wall: Option<String>,
}

/// Whether the request carries the event's wall secret.
pub(crate) fn holds_wall_link(req: &HttpRequest, record: &EventRecord) -> bool {
    let Some(secret) = &record.wall_token else {
        return false;
    };
    web::Query::<WallQuery>::from_query(req.query_string())
        .ok()
        .and_then(|q| {
            let q = q.into_inner();
            q.wall.or(q.token)
        })
        .is_some_and(|t| same_secret(t.as_bytes(), secret.as_bytes()))
}

/// The event `id` to a screen with its wall link (`true`: opened by it) or to its owner
/// (`false`); 403 to anyone else.
pub(crate) async fn wall_event(
    state: &AppState,
    req: &HttpRequest,
    id: Uuid,
) -> ApiResult<(EventRecord, bool)> {
    let record = state.platform.events().get(id).await?;
    if holds_wall_link(req, &record) {
        return Ok((record, true));
    }
    let (who, _, _) = requester(req)?;
    if is_owner(&record, &who) {
        return Ok((record, false));
    }
    Err(ApiError::new(
        StatusCode::FORBIDDEN,
        ErrorCode::NotEventOwner,
        "this wall link is wrong or was ended: ask the event's owner for its wall link",
    ))
}

/// The wall's page path with its secret.
pub(crate) fn wall_path(record: &EventRecord) -> Option<String> {
    let secret = record.wall_token.as_ref()?;
    Some(format!("/events/{}/wall?token={secret}", record.id))
}

/// Make the event's wall link (the owner): a new secret, which ends any earlier link.
#[utoipa::path(
    post,
    path = "/api/v1/events/{id}/wall",
    operation_id = "make_event_wall_link",
    tag = "events",
    params(("id" = Uuid, Path, description = "The event's id")),
    responses(
        (status = 201, description = "The new wall link; the earlier one no longer opens", body = WallLink),
        crate::api::error_sets::OwnedEventErrors,
        crate::api::error_sets::StorageErrors,
    ),
)]
pub async fn make_link(
    req: HttpRequest,
    owned: OwnedEvent,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let id = owned.record.id;
    let secret = new_secret();
    let record = state
        .platform
        .events()
        .update(id, |r| {
            r.wall_token = Some(secret.clone());
            true
        })
        .await?;
    let url = wall_path(&record).ok_or_else(|| ApiError::internal("the wall link was not kept"))?;
    Ok(HttpResponse::Created().json(WallLink {
        url: format!("{}{url}", origin(&req)),
    }))
}

/// End the event's wall link (the owner): screens showing it stop at their next look.
#[utoipa::path(
    delete,
    path = "/api/v1/events/{id}/wall",
    operation_id = "end_event_wall_link",
    tag = "events",
    params(("id" = Uuid, Path, description = "The event's id")),
    responses(
        (status = 204, description = "Ended"),
        crate::api::error_sets::OwnedEventErrors,
        crate::api::error_sets::StorageErrors,
    ),
)]
pub async fn end_link(owned: OwnedEvent, state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let id = owned.record.id;
    state
        .platform
        .events()
        .update(id, |r| r.wall_token.take().is_some())
        .await?;
    Ok(HttpResponse::NoContent().finish())
}

/// What the wall shows: to a screen with the wall link, or to the owner.
#[utoipa::path(
    get,
    path = "/api/v1/events/{id}/wall",
    operation_id = "get_event_wall",
    tag = "events",
    params(("id" = Uuid, Path, description = "The event's id"), WallQuery),
    responses(
        (status = 200, description = "What the wall shows", body = WallView),
        crate::api::error_sets::OwnedEventErrors,
        crate::api::error_sets::StorageErrors,
    ),
)]
pub async fn get(
    req: HttpRequest,
    id: web::Path<Uuid>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let (record, _) = wall_event(&state, &req, *id).await?;
    // The screen reads the photos' pictures and placements with the wall's secret.
    let wall = record.wall_token.clone().unwrap_or_default();
    let (_, newest) = state
        .platform
        .events()
        .newest_on(record.id, Shelf::Approved, WALL_NEWEST)
        .await?;
    let newest = newest
        .into_iter()
        .map(|p| WallPhoto {
            id: p.id,
            tile: p.tile_name(),
            guest_name: p.guest_name.clone(),
            cell: p.cell,
            picture_url: format!(
                "/api/v1/events/{}/photos/{}/thumbnail?token={wall}",
                record.id, p.id
            ),
            added_at: p.added_at,
        })
        .collect();
    let view = WallView {
        name: record.name.clone(),
        contribute_url: format!("{}{}", origin(&req), contribute_path(&record)),
        mosaic: latest_mosaics(&state, &record)
            .await?
            .done
            .and_then(|job| on_the_wall(&record, &job, &wall)),
        newest,
        board: WallBoard::of(&state, &record).await?,
    };
    Ok(HttpResponse::Ok()
        .insert_header(("Cache-Control", "private, no-store"))
        .json(view))
}

/// The finished mosaic `job` of event `record` as the wall loads it: through its share link
/// (the guests' link's), its placements with the wall's secret too.
fn on_the_wall(record: &EventRecord, job: &JobRecord, wall: &str) -> Option<WallMosaic> {
    let (output, id, share) = (job.output?, job.id, &record.token);
    Some(WallMosaic {
        job: id,
        preview_url: format!("/api/v1/jobs/{id}/preview?share={share}"),
        placements_url: format!("/api/v1/jobs/{id}/placements?share={share}&wall={wall}"),
        cols: output.cols,
        rows: output.rows,
        width: output.width,
        height: output.height,
    })
}
