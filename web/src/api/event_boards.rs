//! An event made as a board (a sticker wall): its fields when the event is made, the board to
//! stick on (`GET /api/v1/events/{id}/board.pdf`), the printer stations' sheets of stickers
//! (`POST /api/v1/events/{id}/sheets`, each sticker printed once whoever asks; each sheet kept
//! to be printed again), the printer link a station opens without signing in, and the owner's
//! end game (`POST /api/v1/events/{id}/board/fill`).

use std::collections::BTreeMap;

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use futures_util::stream::{self, StreamExt, TryStreamExt};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use tessera_shared::error_code::ErrorCode;
use tessera_shared::events::board::{self, Board, Cell, Filling, Sheet};
use tessera_shared::events::board_pdf::{self, Paper, Sticker};
use tessera_shared::events::{EventError, EventRecord, Shelf};

use crate::api::owned_event::{OwnedEvent, is_owner, requester};
use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;
use crate::guards::auth::{new_secret, same_secret};
use crate::guards::client::origin;

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
/// The sheets whose stickers the list names (the older ones by number and time only).
const SHEETS_LISTED_WHOLE: usize = 20;

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

/// The paper a print asks for, and the printer link's secret for a station.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PaperQuery {
    /// `A4` (the default), `A3`, `Letter` or `Tabloid`.
    #[param(value_type = Option<PaperName>)]
    pub paper: Option<String>,
    /// Sheets only: `false` prints the stickers without their colour shift (a proof).
    pub shifted: Option<bool>,
    /// Taking a sheet only: `true` takes one only when enough stickers wait to fill it (204
    /// until then); otherwise whatever waits, as when the owner asks for a sheet now.
    pub full: Option<bool>,
    /// The printer link's secret, for a printer station not signed in as the owner.
    pub token: Option<String>,
}
/// The papers known, as the document names them.
#[derive(ToSchema)]
#[allow(dead_code)]
pub enum PaperName {
    A4,
    A3,
    Letter,
    Tabloid,
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

fn board_of(record: &EventRecord) -> ApiResult<&Board> {
    record.board.as_ref().ok_or_else(|| {
        ApiError::bad_request(
            ErrorCode::InvalidParameter,
            "this event is not a board: make one with board_cols and board_rows",
        )
    })
}

/// The event `id` to its owner, or to a printer station with its printer link; 403 to anyone
/// else.
pub(crate) async fn printer_event(
    state: &AppState,
    req: &HttpRequest,
    id: Uuid,
    token: Option<&str>,
) -> ApiResult<EventRecord> {
    let record = state.platform.events().get(id).await?;
    if let (Some(secret), Some(token)) = (&record.printer_token, token)
        && same_secret(token.as_bytes(), secret.as_bytes())
    {
        return Ok(record);
    }
    let (who, _, _) = requester(req)?;
    if is_owner(&record, &who) {
        return Ok(record);
    }
    Err(ApiError::new(
        StatusCode::FORBIDDEN,
        ErrorCode::NotEventOwner,
        "this printer link is wrong or was ended: ask the event's owner for its printer link",
    ))
}

/// The printer station's page path with its secret.
pub(crate) fn printer_path(record: &EventRecord) -> Option<String> {
    let secret = record.printer_token.as_ref()?;
    Some(format!("/events/{}/printer?token={secret}", record.id))
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
    let board = board_of(&owned.record)?.clone();
    let name = owned.record.name.clone();
    let bytes = web::block(move || board_pdf::board_panels(&board, paper, &name))
        .await
        .map_err(ApiError::internal)?;
    Ok(pdf(bytes, "board.pdf"))
}

/// The next sheet of stickers (the owner, or a printer station with the printer link): the
/// stickers placed and not yet printed, as many as one sheet holds, each printed once across
/// every caller; the sheet is kept under its number (`Tessera-Sheet`) to be printed again. 204
/// when none waits (or, with `full=true`, fewer than fill a sheet).
#[utoipa::path(
    post,
    path = "/api/v1/events/{id}/sheets",
    operation_id = "take_event_sheet",
    tag = "events",
    params(("id" = uuid::Uuid, Path, description = "The event's id"), PaperQuery),
    responses(
        (status = 200, description = "A sheet of stickers", content_type = "application/pdf", body = Vec<u8>,
         headers(("Tessera-Sheet" = u32, description = "The sheet's number, to print it again"))),
        (status = 204, description = "No sticker waits to be printed (or too few to fill a sheet, with full=true)"),
        (status = 400, description = "not a board, or a paper not known", body = crate::api_error::ErrorBody),
        crate::api::error_sets::OwnedEventErrors,
    ),
)]
pub async fn take_sheet(
    req: HttpRequest,
    id: web::Path<Uuid>,
    query: web::Query<PaperQuery>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let paper = paper_of(&query)?;
    let record = printer_event(&state, &req, *id, query.token.as_deref()).await?;
    let board = board_of(&record)?.clone();
    let event = record.id;
    let events = state.platform.events();
    let printed: std::collections::HashSet<Cell> =
        events.printed(event).await?.into_iter().collect();
    let (cols, rows) = board_pdf::sheet_grid(&board, paper);
    let per_sheet = (cols * rows) as usize;
    let waiting: Vec<board::Placed> = events
        .placed(event)
        .await?
        .into_iter()
        .filter(|p| !printed.contains(&p.cell))
        .collect();
    if query.full == Some(true) && waiting.len() < per_sheet {
        return Ok(HttpResponse::NoContent().finish());
    }
    let want: Vec<Cell> = waiting.iter().map(|p| p.cell).take(per_sheet).collect();
    let mine = events.claim_printing(event, &want).await?;
    if mine.is_empty() {
        return Ok(HttpResponse::NoContent().finish());
    }
    let shifted = query.shifted.unwrap_or(true);
    let sheet = events
        .record_sheet(event, mine, paper.name, shifted)
        .await?;
    let bytes = print_sheet(&state, &record, &board, paper, &sheet).await?;
    let mut answer = pdf(bytes, &format!("stickers-{}.pdf", sheet.number));
    answer.headers_mut().insert(
        header::HeaderName::from_static("tessera-sheet"),
        header::HeaderValue::from(sheet.number),
    );
    Ok(answer)
}

/// What each placed cell of `event`'s board holds: its photo, or none for a cell the owner
/// filled with the target's colour.
async fn photos_on(
    state: &AppState,
    event: Uuid,
) -> ApiResult<std::collections::HashMap<Cell, Option<Uuid>>> {
    let placed = state.platform.events().placed(event).await?;
    Ok(placed.into_iter().map(|p| (p.cell, p.photo)).collect())
}

/// The PDF of `sheet`'s stickers, each from its photo's square (or its cell's colour, for a
/// cell the owner filled so).
async fn print_sheet(
    state: &AppState,
    record: &EventRecord,
    board: &Board,
    paper: Paper,
    sheet: &Sheet,
) -> ApiResult<Vec<u8>> {
    let event = record.id;
    let events = state.platform.events();
    let on = photos_on(state, event).await?;
    let photos: Vec<(Cell, Option<Uuid>)> = sheet
        .cells
        .iter()
        .filter_map(|cell| Some((*cell, *on.get(cell)?)))
        .collect();
    let squares: Vec<(Cell, Option<Option<bytes::Bytes>>)> = stream::iter(photos)
        .map(|(cell, photo)| {
            let events = &events;
            async move {
                Ok::<_, ApiError>(match photo {
                    Some(photo) => (cell, Some(events.thumbnail(event, photo).await?)),
                    None => (cell, None),
                })
            }
        })
        .buffered(READS_AT_ONCE)
        .try_collect()
        .await?;
    let (board, shifted, name) = (board.clone(), sheet.shifted, record.name.clone());
    web::block(move || {
        let stickers: Vec<Sticker> = squares
            .into_iter()
            .filter_map(|(cell, square)| {
                let (jpeg, px) = match square {
                    Some(square) => board_pdf::sticker_of(&board, cell, &square?, shifted).ok()?,
                    None => board_pdf::patch_of(&board, cell).ok()?,
                };
                Some(Sticker { cell, jpeg, px })
            })
            .collect();
        board_pdf::sticker_sheets(&board, paper, &name, &stickers)
    })
    .await
    .map_err(ApiError::internal)
}

/// What a printer station sees of the board's printing.
#[derive(Debug, Serialize, ToSchema)]
pub struct SheetsView {
    /// Stickers placed and not printed yet.
    pub waiting: usize,
    /// Stickers one sheet of the paper asked for holds.
    pub per_sheet: usize,
    /// Stickers printed so far.
    pub printed: usize,
    /// Cells filled so far, and the board's cells.
    pub placed: usize,
    pub cells: usize,
    /// The sheets taken, newest first (the newest with their stickers' cells).
    pub sheets: Vec<SheetView>,
}

/// A sheet taken.
#[derive(Debug, Serialize, ToSchema)]
pub struct SheetView {
    pub number: u32,
    /// Its stickers' cells (listed for the newest sheets only).
    pub cells: Vec<Cell>,
    /// Where to print it again.
    pub pdf_url: String,
    /// Where to print its photos' keepsakes.
    pub keepsakes_url: String,
    #[serde(with = "time::serde::rfc3339")]
    #[schema(value_type = String, format = DateTime)]
    pub taken_at: OffsetDateTime,
}

/// The board's printing (the owner, or a printer station): stickers waiting, sheets taken.
#[utoipa::path(
    get,
    path = "/api/v1/events/{id}/sheets",
    operation_id = "list_event_sheets",
    tag = "events",
    params(("id" = uuid::Uuid, Path, description = "The event's id"), PaperQuery),
    responses(
        (status = 200, description = "The board's printing", body = SheetsView),
        (status = 400, description = "not a board, or a paper not known", body = crate::api_error::ErrorBody),
        crate::api::error_sets::OwnedEventErrors,
    ),
)]
pub async fn list_sheets(
    req: HttpRequest,
    id: web::Path<Uuid>,
    query: web::Query<PaperQuery>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let paper = paper_of(&query)?;
    let record = printer_event(&state, &req, *id, query.token.as_deref()).await?;
    let board = board_of(&record)?;
    let events = state.platform.events();
    let printed = events.printed(record.id).await?.len();
    let placed = events.placed(record.id).await?.len();
    let (cols, rows) = board_pdf::sheet_grid(board, paper);
    let token = query
        .token
        .as_deref()
        .map(|t| format!("?token={t}"))
        .unwrap_or_default();
    let sheets = events
        .sheets(record.id, SHEETS_LISTED_WHOLE)
        .await?
        .into_iter()
        .map(|s| SheetView {
            pdf_url: format!("/api/v1/events/{}/sheets/{}{token}", record.id, s.number),
            keepsakes_url: format!(
                "/api/v1/events/{}/sheets/{}/keepsakes{token}",
                record.id, s.number
            ),
            number: s.number,
            cells: s.cells,
            taken_at: s.taken_at,
        })
        .collect();
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .json(SheetsView {
            waiting: placed.saturating_sub(printed),
            per_sheet: (cols * rows) as usize,
            printed,
            placed,
            cells: board.len(),
            sheets,
        }))
}

/// A sheet taken before, printed again as it was (the owner, or a printer station): a sticker
/// spoiled or lost.
#[utoipa::path(
    get,
    path = "/api/v1/events/{id}/sheets/{number}",
    operation_id = "reprint_event_sheet",
    tag = "events",
    params(
        ("id" = uuid::Uuid, Path, description = "The event's id"),
        ("number" = u32, Path, description = "The sheet's number"),
        PaperQuery,
    ),
    responses(
        (status = 200, description = "The sheet again", content_type = "application/pdf", body = Vec<u8>),
        (status = 400, description = "not a board", body = crate::api_error::ErrorBody),
        (status = 404, description = "no sheet of that number", body = crate::api_error::ErrorBody),
        crate::api::error_sets::OwnedEventErrors,
    ),
)]
pub async fn reprint_sheet(
    req: HttpRequest,
    path: web::Path<(Uuid, u32)>,
    query: web::Query<PaperQuery>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let (id, number) = path.into_inner();
    let (record, sheet) = taken_sheet(&state, &req, (id, number), query.token.as_deref()).await?;
    let board = board_of(&record)?.clone();
    let paper = Paper::named(&sheet.paper).unwrap_or(board_pdf::PAPERS[0]);
    let bytes = print_sheet(&state, &record, &board, paper, &sheet).await?;
    Ok(pdf(bytes, &format!("stickers-{number}.pdf")))
}

/// Board event `id` (to its owner or a printer station) and its sheet `number`: 404 when no
/// such sheet was taken.
async fn taken_sheet(
    state: &AppState,
    req: &HttpRequest,
    (id, number): (Uuid, u32),
    token: Option<&str>,
) -> ApiResult<(EventRecord, Sheet)> {
    let record = printer_event(state, req, id, token).await?;
    board_of(&record)?;
    let sheet = state
        .platform
        .events()
        .sheet(record.id, number)
        .await?
        .ok_or_else(|| {
            ApiError::not_found(
                ErrorCode::InvalidParameter,
                format!("no sheet {number} was taken of this board"),
            )
        })?;
    Ok((record, sheet))
}

/// The keepsakes of a sheet's photos (the owner, or a printer station): each guest's photo
/// whole on 4 x 6 inch photo paper, a page each, with the event's name and the row and column
/// of its sticker, to hand the guest with the sticker; 204 when none of its cells holds a
/// photo (filled with a colour, or taken back by its guest).
#[utoipa::path(
    get,
    path = "/api/v1/events/{id}/sheets/{number}/keepsakes",
    operation_id = "print_event_sheet_keepsakes",
    tag = "events",
    params(
        ("id" = uuid::Uuid, Path, description = "The event's id"),
        ("number" = u32, Path, description = "The sheet's number"),
        PaperQuery,
    ),
    responses(
        (status = 200, description = "The sheet's keepsakes", content_type = "application/pdf", body = Vec<u8>),
        (status = 204, description = "None of the sheet's cells holds a photo (filled with a colour, or taken back)"),
        (status = 400, description = "not a board", body = crate::api_error::ErrorBody),
        (status = 404, description = "no sheet of that number", body = crate::api_error::ErrorBody),
        crate::api::error_sets::OwnedEventErrors,
    ),
)]
pub async fn sheet_keepsakes(
    req: HttpRequest,
    path: web::Path<(Uuid, u32)>,
    query: web::Query<PaperQuery>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let (id, number) = path.into_inner();
    let (record, sheet) = taken_sheet(&state, &req, (id, number), query.token.as_deref()).await?;
    let events = state.platform.events();
    let on = photos_on(&state, record.id).await?;
    // A photo at a time: a camera's original decoded is tens of megabytes.
    let mut prints = Vec::new();
    for cell in &sheet.cells {
        let Some(&Some(photo)) = on.get(cell) else {
            continue;
        };
        let bytes = match events.photo(record.id, photo).await {
            Ok(bytes) => bytes,
            // Taken back by its guest since.
            Err(EventError::NotFound(_)) => continue,
            Err(e) => return Err(e.into()),
        };
        let cell = *cell;
        let print = web::block(move || {
            let decoded = tessera_engine::decode::decode_target(&bytes, [255, 255, 255])
                .map_err(|e| e.to_string())?;
            board_pdf::keepsake_of(&decoded, Some(cell))
        })
        .await
        .map_err(ApiError::internal)?;
        match print {
            Ok(print) => prints.push(print),
            Err(e) => tracing::warn!(event = %record.id, %photo, error = %e, "no keepsake"),
        }
    }
    if prints.is_empty() {
        return Ok(HttpResponse::NoContent().finish());
    }
    let name = record.name.clone();
    let bytes = web::block(move || board_pdf::keepsakes(&name, &prints))
        .await
        .map_err(ApiError::internal)?;
    Ok(pdf(bytes, &format!("keepsakes-{number}.pdf")))
}

/// The owner's end game: how to fill the board's free cells.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FillRequest {
    /// `photos`: a second print of the photo in that costs least in each cell; `colour`: a
    /// plain sticker of the target's colour.
    pub with: Filling,
}

/// The cells an end game filled.
#[derive(Debug, Serialize, ToSchema)]
pub struct FillView {
    pub filled: Vec<Cell>,
}

/// Fill the board's free cells (the owner), at the event's end: with the photos in, each in
/// the cell it costs least, or with the target's colour. Their stickers print as the others.
#[utoipa::path(
    post,
    path = "/api/v1/events/{id}/board/fill",
    operation_id = "fill_event_board",
    tag = "events",
    params(("id" = uuid::Uuid, Path, description = "The event's id")),
    request_body = FillRequest,
    responses(
        (status = 200, description = "The cells filled", body = FillView),
        (status = 400, description = "not a board, or no photo in to fill with", body = crate::api_error::ErrorBody),
        crate::api::error_sets::OwnedEventErrors,
        (status = 415, description = "the body is not JSON", body = crate::api_error::ErrorBody),
    ),
)]
pub async fn fill(
    owned: OwnedEvent,
    body: web::Json<FillRequest>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let board = board_of(&owned.record)?;
    let events = state.platform.events();
    let photos: Vec<(Uuid, [u8; 3])> = match body.with {
        Filling::Colour => Vec::new(),
        Filling::Photos => events
            .shelf(owned.record.id, Shelf::Approved)
            .await?
            .iter()
            .filter_map(|p| Some((p.id, p.colour?)))
            .collect(),
    };
    if body.with == Filling::Photos && photos.is_empty() {
        return Err(ApiError::bad_request(
            ErrorCode::InvalidParameter,
            "no photo is in yet to fill the board with: fill it with the target's colour",
        )
        .with_field("with"));
    }
    let filled = events
        .fill_free(owned.record.id, board, body.with, &photos)
        .await?;
    Ok(HttpResponse::Ok().json(FillView { filled }))
}

/// The printer link the owner hands a printer station.
#[derive(Debug, Serialize, ToSchema)]
pub struct PrinterLink {
    /// The station's page, with its secret (`/events/{id}/printer?token=...`).
    pub url: String,
}

/// Make the event's printer link (the owner): a new secret, which ends any earlier link.
#[utoipa::path(
    post,
    path = "/api/v1/events/{id}/printer",
    operation_id = "make_event_printer_link",
    tag = "events",
    params(("id" = Uuid, Path, description = "The event's id")),
    responses(
        (status = 201, description = "The new printer link; the earlier one no longer opens", body = PrinterLink),
        (status = 400, description = "not a board", body = crate::api_error::ErrorBody),
        crate::api::error_sets::OwnedEventErrors,
        crate::api::error_sets::StorageErrors,
    ),
)]
pub async fn make_printer_link(
    req: HttpRequest,
    owned: OwnedEvent,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    board_of(&owned.record)?;
    let secret = new_secret();
    let record = state
        .platform
        .events()
        .update(owned.record.id, |r| {
            r.printer_token = Some(secret.clone());
            true
        })
        .await?;
    let url =
        printer_path(&record).ok_or_else(|| ApiError::internal("the printer link was not kept"))?;
    Ok(HttpResponse::Created().json(PrinterLink {
        url: format!("{}{url}", origin(&req)),
    }))
}

/// End the event's printer link (the owner): a station holding it takes no more sheets.
#[utoipa::path(
    delete,
    path = "/api/v1/events/{id}/printer",
    operation_id = "end_event_printer_link",
    tag = "events",
    params(("id" = Uuid, Path, description = "The event's id")),
    responses(
        (status = 204, description = "Ended"),
        crate::api::error_sets::OwnedEventErrors,
        crate::api::error_sets::StorageErrors,
    ),
)]
pub async fn end_printer_link(
    owned: OwnedEvent,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    state
        .platform
        .events()
        .update(owned.record.id, |r| r.printer_token.take().is_some())
        .await?;
    Ok(HttpResponse::NoContent().finish())
}
