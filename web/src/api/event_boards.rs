//! An event made as a board (a sticker wall): its fields when the event is made, the board to
//! stick on (`GET /api/v1/events/{id}/board.pdf`) and the printer stations' sheets of stickers
//! (`POST /api/v1/events/{id}/sheets`), each sticker printed once whoever asks.

use std::collections::BTreeMap;

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use futures_util::stream::{self, StreamExt, TryStreamExt};
use serde::Deserialize;
use utoipa::IntoParams;

use tessera_shared::error_code::ErrorCode;
use tessera_shared::events::board::{self, Board, Cell};
use tessera_shared::events::board_pdf::{self, Paper, Sticker};

use crate::api::owned_event::OwnedEvent;
use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;

/// The fields that make an event a board, besides the job's.
pub const BOARD_FIELDS: &[&str] = &[
    "board_cols",
    "board_rows",
    "sticker_mm",
    "sticker_dpi",
    "shift_cap",
];

/// Stickers read at once for a sheet.
const READS_AT_ONCE: usize = 8;

/// The board the creation's `fields` ask for over `target`, none when they name no board.
pub(crate) fn board_from(
    fields: &BTreeMap<&'static str, String>,
    target: &image::RgbImage,
) -> ApiResult<Option<Board>> {
    if fields.is_empty() {
        return Ok(None);
    }
    let number = |name: &'static str, range: std::ops::RangeInclusive<f64>, unit: &str| {
        let text = fields.get(name).ok_or_else(|| {
            ApiError::bad_request(
                ErrorCode::InvalidParameter,
                format!("a board needs {name} as well: board_cols and board_rows, its cells across and down"),
            )
            .with_field(name)
        })?;
        match text.trim().parse::<f64>() {
            Ok(v) if range.contains(&v) => Ok(v),
            _ => Err(ApiError::bad_request(
                ErrorCode::InvalidParameter,
                format!(
                    "{name} must be a number from {} to {}{unit}, not {text:?}",
                    range.start(),
                    range.end()
                ),
            )
            .with_field(name)),
        }
    };
    let side = f64::from(*board::BOARD_SIDE.start())..=f64::from(*board::BOARD_SIDE.end());
    let cols = number("board_cols", side.clone(), " cells")?;
    let rows = number("board_rows", side, " cells")?;
    if cols.fract() != 0.0 || rows.fract() != 0.0 {
        return Err(ApiError::bad_request(
            ErrorCode::InvalidParameter,
            "board_cols and board_rows are whole numbers of cells",
        )
        .with_field("board_cols"));
    }
    let (cols, rows) = (cols as u32, rows as u32);
    if cols * rows > board::MAX_BOARD_CELLS {
        return Err(ApiError::bad_request(
            ErrorCode::InvalidParameter,
            format!(
                "a board of {cols} x {rows} has {} cells: at most {} ",
                cols * rows,
                board::MAX_BOARD_CELLS
            ),
        )
        .with_field("board_cols"));
    }
    let given = |name: &'static str, range, unit: &str, default: f64| match fields.get(name) {
        Some(_) => number(name, range, unit),
        None => Ok(default),
    };
    let sticker_mm = given("sticker_mm", board::STICKER_MM, " mm", 25.0)?;
    let dpi_range = f64::from(*tessera_shared::print::DPI_RANGE.start())..=600.0;
    let dpi = given(
        "sticker_dpi",
        dpi_range,
        " dpi",
        f64::from(tessera_shared::print::DEFAULT_DPI),
    )?;
    let cap = given(
        "shift_cap",
        0.0..=50.0,
        " (CIEDE2000)",
        f64::from(board::DEFAULT_SHIFT_CAP),
    )?;
    let mut made = Board::new(
        cols,
        rows,
        sticker_mm,
        Board::cells_over(target, cols, rows),
    );
    made.dpi = dpi.round() as u32;
    made.shift_cap = cap as f32;
    Ok(Some(made))
}

/// The paper a print asks for.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PaperQuery {
    /// `A4` (the default), `A3`, `Letter` or `Tabloid`.
    pub paper: Option<String>,
    /// Sheets only: `false` prints the stickers without their colour shift (a proof).
    pub shifted: Option<bool>,
}

fn paper_of(query: &PaperQuery) -> ApiResult<Paper> {
    let name = query.paper.as_deref().unwrap_or("A4");
    Paper::named(name).ok_or_else(|| {
        let known: Vec<&str> = board_pdf::PAPERS.iter().map(|p| p.name).collect();
        ApiError::bad_request(
            ErrorCode::InvalidParameter,
            format!("paper {name:?} is not one of {}", known.join(", ")),
        )
        .with_field("paper")
    })
}

fn board_of(owned: &OwnedEvent) -> ApiResult<&Board> {
    owned.record.board.as_ref().ok_or_else(|| {
        ApiError::bad_request(
            ErrorCode::InvalidParameter,
            "this event is not a board: make one with board_cols and board_rows",
        )
    })
}

fn pdf(bytes: Vec<u8>, name: &str) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/pdf")
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((
            header::CONTENT_DISPOSITION,
            format!("inline; filename=\"{name}\""),
        ))
        .body(bytes)
}

/// The board to stick on (the owner): its panels on the paper asked for, each cell a
/// sticker's size with its row and column and a faint print of the target's colour.
#[utoipa::path(
    get,
    path = "/api/v1/events/{id}/board.pdf",
    operation_id = "get_event_board",
    tag = "events",
    params(("id" = uuid::Uuid, Path, description = "The event's id"), PaperQuery),
    responses(
        (status = 200, description = "The board's panels", content_type = "application/pdf", body = Vec<u8>),
        (status = 400, description = "not a board, or a paper not known", body = crate::api_error::ErrorBody),
        crate::api::error_sets::OwnedEventErrors,
    ),
)]
pub async fn board_pdf(
    owned: OwnedEvent,
    query: web::Query<PaperQuery>,
) -> ApiResult<HttpResponse> {
    let paper = paper_of(&query)?;
    let board = board_of(&owned)?.clone();
    let name = owned.record.name.clone();
    let bytes = web::block(move || board_pdf::board_panels(&board, paper, &name))
        .await
        .map_err(ApiError::internal)?;
    Ok(pdf(bytes, "board.pdf"))
}

/// The next sheet of stickers (the owner, or a printer station with the owner's client):
/// the stickers placed and not yet printed, as many as one sheet holds, each printed once
/// across every caller. 204 when none waits.
#[utoipa::path(
    post,
    path = "/api/v1/events/{id}/sheets",
    operation_id = "take_event_sheet",
    tag = "events",
    params(("id" = uuid::Uuid, Path, description = "The event's id"), PaperQuery),
    responses(
        (status = 200, description = "A sheet of stickers", content_type = "application/pdf", body = Vec<u8>),
        (status = 204, description = "No sticker waits to be printed"),
        (status = 400, description = "not a board, or a paper not known", body = crate::api_error::ErrorBody),
        crate::api::error_sets::OwnedEventErrors,
    ),
)]
pub async fn take_sheet(
    owned: OwnedEvent,
    query: web::Query<PaperQuery>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let paper = paper_of(&query)?;
    let board = board_of(&owned)?.clone();
    let event = owned.record.id;
    let events = state.platform.events();
    let printed: std::collections::HashSet<Cell> =
        events.printed(event).await?.into_iter().collect();
    let (cols, rows) = board_pdf::sheet_grid(&board, paper);
    let waiting: Vec<board::Placed> = events
        .placed(event)
        .await?
        .into_iter()
        .filter(|p| !printed.contains(&p.cell))
        .collect();
    let want: Vec<Cell> = waiting
        .iter()
        .map(|p| p.cell)
        .take((cols * rows) as usize)
        .collect();
    let mine = events.claim_printing(event, &want).await?;
    if mine.is_empty() {
        return Ok(HttpResponse::NoContent().finish());
    }
    let photos: Vec<(Cell, uuid::Uuid)> = waiting
        .iter()
        .filter(|p| mine.contains(&p.cell))
        .map(|p| (p.cell, p.photo))
        .collect();
    let squares: Vec<(Cell, Option<bytes::Bytes>)> = stream::iter(photos)
        .map(|(cell, photo)| {
            let events = &events;
            async move { Ok::<_, ApiError>((cell, events.thumbnail(event, photo).await?)) }
        })
        .buffered(READS_AT_ONCE)
        .try_collect()
        .await?;
    let shifted = query.shifted.unwrap_or(true);
    let name = owned.record.name.clone();
    let bytes = web::block(move || {
        let stickers: Vec<Sticker> = squares
            .into_iter()
            .filter_map(|(cell, square)| {
                let (jpeg, px) = board_pdf::sticker_of(&board, cell, &square?, shifted).ok()?;
                Some(Sticker { cell, jpeg, px })
            })
            .collect();
        board_pdf::sticker_sheets(&board, paper, &name, &stickers)
    })
    .await
    .map_err(ApiError::internal)?;
    Ok(pdf(bytes, "stickers.pdf"))
}
