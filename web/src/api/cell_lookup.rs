//! "Which photo is this?": `GET /api/v1/jobs/{id}/cells/{row}/{col}` names the tile in one cell
//! of a finished mosaic, from the cell map the controller keeps with the job, and
//! `.../thumbnail` shows that cell as it is in the mosaic. "Where is my photo?":
//! `GET /api/v1/jobs/{id}/placements` lists every tile used and its cells, from the same map.
//!
//! A viewer asks as the pointer moves, so the web role keeps the last few maps it read. In an
//! event's mosaic a guest sees their own photos by name and picture, the others' only as cells.

use crate::api::requested_job::RequestedJob;
use crate::guards::job_access::check_readable;
use std::sync::Arc;
use tessera_shared::error_code::ErrorCode;

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use tessera_engine::CellMap;
use tessera_shared::events::{EventError, EventRecord};
use tessera_shared::jobs::JobRecord;
use tessera_shared::keys::BlobKey;
use tessera_shared::storage::StorageError;

use crate::api::doc_types::Binary;
use crate::api_error::{ApiError, ApiResult};
use crate::app_state::{AppState, HeldCellMap};
use crate::guards::client::job_id;
use crate::imaging::stored_mosaic::{Source, done_result, encode_png, read_index, result_size};

/// One cell of a finished mosaic and the tile in it. In a mosaic of adaptive tile sizes the
/// cells are those of the smallest square, and a larger square covers several: the position
/// and size given are the tile's, the square's that covers the cell.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[schema(as = Cell)]
pub struct CellView {
    pub row: u32,
    pub col: u32,
    /// The tile's left edge in the mosaic, in pixels.
    pub x: u32,
    /// The tile's top edge in the mosaic, in pixels.
    pub y: u32,
    /// The tile's width in pixels (its side, for square tiles).
    pub size: u32,
    /// The tile's height in pixels (`size`, for square tiles).
    pub height: u32,
    /// The tile's index in the library version the job used.
    pub tile: u32,
    /// The tile's file name in its library.
    pub name: String,
    /// Its caption: from the library's captions.csv, else made from the file name.
    pub caption: String,
    /// How the tile is placed: `none`, or mirrored and/or turned (`flip`, `rot90`, `flip+rot90`,
    /// ...; the mirror left-right first, then the clockwise turn) when the job allowed it.
    pub transform: String,
    /// The cell as it is in the mosaic, as PNG.
    pub thumbnail: String,
    /// The tile's own picture, as its library keeps it (untinted, unturned), as PNG.
    pub picture: String,
}

/// The tile in one cell of the finished mosaic: its file name and caption.
///
/// Rows and columns count cells from the top left, from 0 (the job's `output.cols` and
/// `output.rows` give the grid; with adaptive tile sizes, cells of the smallest square, and the
/// answer names the square that covers the cell).
#[utoipa::path(
    get,
    path = "/api/v1/jobs/{id}/cells/{row}/{col}",
    operation_id = "get_cell",
    tag = "results",
    params(CellAddress),
    responses(
        (status = 200, description = "The cell and its tile", body = CellView),
        crate::api::error_sets::AddressedErrors,
    ),
)]
pub async fn get(
    req: HttpRequest,
    path: web::Path<(String, u32, u32)>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let (id, row, col) = path.into_inner();
    let id = job_id(&id)?;
    let map = cell_map(&state, &req, id, None).await?;
    let own = own_tiles(&state, &req, &map.record()).await?;
    let source = map.at(row, col).ok_or_else(|| out_of_range(&map))?;
    let shown = own.as_ref().is_none_or(|own| own.contains(&source.name));
    let [x, y, width, height] = map.square(row, col).ok_or_else(|| out_of_range(&map))?;
    let view = CellView {
        row,
        col,
        x,
        y,
        size: width,
        height,
        tile: source.tile,
        name: if shown {
            source.name.clone()
        } else {
            String::new()
        },
        caption: if shown {
            source.caption.clone()
        } else {
            OTHER_GUESTS_PHOTO.to_string()
        },
        transform: map
            .transform(row, col)
            .map_or("none", |t| t.name())
            .to_string(),
        thumbnail: format!("/api/v1/jobs/{id}/cells/{row}/{col}/thumbnail"),
        picture: format!("/api/v1/jobs/{id}/cells/{row}/{col}/picture"),
    };
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, cache_for(own.is_some())))
        .json(view))
}

/// A cell of a done job that a request's path names (`/jobs/{id}/cells/{row}/{col}/...`),
/// with the job's record, its result's blob key and its cell map.
pub struct DoneCell {
    record: JobRecord,
    key: String,
    map: Arc<HeldCellMap>,
    row: u32,
    col: u32,
}

impl actix_web::FromRequest for DoneCell {
    type Error = ApiError;
    type Future = futures_util::future::LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut actix_web::dev::Payload) -> Self::Future {
        let job = RequestedJob::from_request(req, payload);
        let address = web::Path::<(String, u32, u32)>::extract(req);
        let req = req.clone();
        Box::pin(async move {
            let RequestedJob { id, record } = job.await?;
            let (_, row, col) = address
                .await
                .map_err(|e| ApiError::bad_request(ErrorCode::InvalidParameter, e.to_string()))?
                .into_inner();
            let key = done_result(&record)?;
            let state = req
                .app_data::<web::Data<AppState>>()
                .ok_or_else(|| ApiError::internal("the app state is missing"))?;
            let map = cell_map(state, &req, id, Some(&record)).await?;
            Ok(DoneCell {
                record,
                key,
                map,
                row,
                col,
            })
        })
    }
}

/// What a guest reads in place of another guest's photo's caption.
const OTHER_GUESTS_PHOTO: &str = "another guest's photo";

/// An answer that never changes, unless it was cut to what one guest may see.
fn cache_for(cut_to_a_guest: bool) -> &'static str {
    if cut_to_a_guest {
        "private, no-store"
    } else {
        "public, max-age=31536000, immutable"
    }
}

/// The tiles of event mosaic `record` that the requester may see by name and picture: `None`
/// for all of them (not an event's mosaic, or its owner or the operator asks), else the
/// requester's own photos (a guest sees what is theirs; another guest's photo is a cell of the
/// mosaic, without its name, caption or picture).
async fn own_tiles(
    state: &AppState,
    req: &HttpRequest,
    record: &JobRecord,
) -> ApiResult<Option<std::collections::HashSet<String>>> {
    let Some(event) = EventRecord::event_of_library(&record.params.spec.library.id) else {
        return Ok(None);
    };
    if crate::guards::client::manages_job(req, record)? {
        return Ok(None);
    }
    let event = match state.platform.events().get(event).await {
        Ok(event) => event,
        Err(EventError::NotFound(_)) => return Ok(Some(Default::default())),
        Err(e) => return Err(e.into()),
    };
    let who = crate::guards::client::known_requester(req);
    let wall = crate::api::event_wall::holds_wall_link(req, &event);
    if wall
        || who
            .as_ref()
            .is_some_and(|w| w.is_operator() || *w == event.owner)
    {
        return Ok(None);
    }
    let Some(who) = who else {
        return Ok(Some(Default::default()));
    };
    let theirs = state.platform.events().photos_of(event.id, &who).await?;
    Ok(Some(theirs.iter().map(|p| p.tile_name()).collect()))
}

/// One cell of the finished mosaic as PNG, as it is in the mosaic (a tile, tinted if the job
/// blended; with adaptive tile sizes, the whole square that covers the cell).
#[utoipa::path(
    get,
    path = "/api/v1/jobs/{id}/cells/{row}/{col}/thumbnail",
    operation_id = "get_cell_thumbnail",
    tag = "results",
    params(CellAddress),
    responses(
        (status = 200, description = "The cell", content_type = "image/png", body = inline(Binary)),
        crate::api::error_sets::AddressedErrors,
    ),
)]
pub async fn thumbnail(cell: DoneCell, state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let DoneCell {
        record,
        key,
        map,
        row,
        col,
        ..
    } = cell;
    let [x0, y0, w, h] = map.square(row, col).ok_or_else(|| out_of_range(&map))?;
    let blobs = state.platform.blobs.clone();
    let (width, height) = result_size(&*blobs, &key, &record).await?;
    let (x1, y1) = ((x0 + w).min(width), (y0 + h).min(height));
    if x0 >= x1 || y0 >= y1 {
        return Err(out_of_range(&map));
    }
    let _slot = state.decodes.acquire().await.map_err(ApiError::internal)?;
    let index = read_index(&*blobs, &key).await?;
    let source = Source {
        blobs,
        key,
        index,
        width,
        height,
    };
    let handle = tokio::runtime::Handle::current();
    let png = tokio::task::spawn_blocking(move || {
        let mut pixels = Vec::with_capacity(((x1 - x0) * (y1 - y0) * 3) as usize);
        source.rows(&handle, y0..y1, |_, row| {
            pixels.extend_from_slice(&row[x0 as usize * 3..x1 as usize * 3]);
        })?;
        encode_png(&pixels, x1 - x0, y1 - y0)
    })
    .await
    .map_err(ApiError::internal)??;
    Ok(immutable_png(png))
}

/// The picture of the tile in one cell, as its library keeps it: the tile's own rendition
/// (64 pixels on its long side), neither tinted nor turned as the mosaic may show it.
#[utoipa::path(
    get,
    path = "/api/v1/jobs/{id}/cells/{row}/{col}/picture",
    operation_id = "get_cell_picture",
    tag = "results",
    params(CellAddress),
    responses(
        (status = 200, description = "The tile's picture", content_type = "image/png", body = inline(Binary)),
        crate::api::error_sets::AddressedErrors,
    ),
)]
pub async fn picture(
    req: HttpRequest,
    cell: DoneCell,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let DoneCell {
        record,
        map,
        row,
        col,
        ..
    } = cell;
    let source = map.at(row, col).ok_or_else(|| out_of_range(&map))?;
    if own_tiles(&state, &req, &record)
        .await?
        .is_some_and(|own| !own.contains(&source.name))
    {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            ErrorCode::NotYourPhoto,
            "this cell holds another guest's photo: only its guest and the event's owner see it",
        ));
    }
    let tile = source.tile;
    let library = state.library(&record.params.spec.library).await?;
    if tile as usize >= library.len() {
        return Err(ApiError::not_found(
            ErrorCode::TileNotFound,
            "the library no longer holds this tile",
        ));
    }
    let png = tokio::task::spawn_blocking(move || {
        let (w, h) = library.rendition_dims();
        encode_png(&library.rendition(tile), w, h)
    })
    .await
    .map_err(ApiError::internal)??;
    Ok(immutable_png(png))
}

/// A PNG that never changes (a done job's cells and tiles do not).
fn immutable_png(png: impl actix_web::body::MessageBody + 'static) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "image/png"))
        .insert_header((header::CACHE_CONTROL, "public, max-age=31536000, immutable"))
        .body(png)
}

/// One tile of a finished mosaic and where it is.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct TilePlacement {
    /// The tile's index in the library version the job used.
    pub tile: u32,
    /// Its file name in its library.
    pub name: String,
    /// Its caption.
    pub caption: String,
    /// How many times the mosaic uses it (squares, with adaptive tile sizes).
    pub uses: u32,
    /// The cells it fills, `[row, column]` from 0 at the top left, in reading order (with
    /// adaptive tile sizes, each square's top-left cell).
    pub cells: Vec<[u32; 2]>,
}

/// Every tile a finished mosaic uses, or those a search names.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
pub struct Placements {
    /// The grid, cells across and down.
    pub cols: u32,
    pub rows: u32,
    /// Uses of all the tiles listed, added up: with no search, the grid's cells (its squares,
    /// with adaptive tile sizes).
    pub uses: u64,
    /// The tiles, by file name; with `q`, those whose name or caption is `q` first.
    pub tiles: Vec<TilePlacement>,
}

/// A cell of a job's mosaic, as its routes' paths name it (read by the handlers as
/// `(id, row, col)`; this describes them for the API document).
#[derive(utoipa::IntoParams)]
#[into_params(parameter_in = Path)]
#[allow(dead_code)]
pub struct CellAddress {
    /// The job's id
    id: uuid::Uuid,
    /// The cell's row, from 0 at the top
    row: u32,
    /// The cell's column, from 0 at the left
    col: u32,
}

/// What a placements request may ask.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PlacementsQuery {
    /// Only the tiles whose file name or caption holds this text, in any case; those it names
    /// exactly (the whole name, the name without folders and extension, or the caption) first.
    #[param(max_length = 200)]
    pub q: Option<String>,
    /// `csv` for CSV, as `Accept: text/csv` asks (for a link, which cannot set the header);
    /// `json` for JSON whatever `Accept` says.
    #[param(inline)]
    pub format: Option<PlacementsFormat>,
}

/// What a placements answer is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PlacementsFormat {
    Csv,
    Json,
}

/// Where each photo is in a finished mosaic: every tile used, how many times, and its cells
/// (JSON, rows and columns from 0; CSV with `Accept: text/csv` or `format=csv`:
/// `tile,name,caption,uses,cells`, the cells as `R1C1` (row and column from 1, as the job page
/// counts them) separated by spaces). With `q`, only the tiles it names: "find my
/// photo". Answered from the job's cell map, without reading the mosaic.
#[utoipa::path(
    get,
    path = "/api/v1/jobs/{id}/placements",
    operation_id = "get_placements",
    tag = "results",
    params(("id" = uuid::Uuid, Path, description = "The job's id"), PlacementsQuery),
    responses(
        (status = 200, description = "The tiles and their cells", content(
            (Placements = "application/json"),
            (String = "text/csv"),
        )),
        crate::api::error_sets::AddressedErrors,
        (status = 429, description = "too_many_placements: two placements answers are being sent to the address already", body = crate::api_error::ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
    ),
)]
pub async fn placements(
    req: HttpRequest,
    path: web::Path<String>,
    query: web::Query<PlacementsQuery>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let id = job_id(&path)?;
    let q = query.q.as_deref().map(str::trim).filter(|q| !q.is_empty());
    if q.is_some_and(|q| q.chars().count() > 200) {
        return Err(ApiError::bad_request(
            ErrorCode::InvalidParameter,
            "q: at most 200 characters",
        ));
    }
    let csv = match query.format {
        None => req
            .headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("text/csv")),
        Some(format) => format == PlacementsFormat::Csv,
    };
    let map = cell_map(&state, &req, id, None).await?;
    let address = crate::guards::client::client_address(&req, state.guard.trusted_proxies());
    let seat = state
        .placements
        .hold(address, PLACEMENTS_PER_ADDRESS)
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                ErrorCode::TooManyPlacements,
                "placements are being sent to your address already: ask again once one has come",
            )
            .retry_after(std::time::Duration::from_secs(1))
        })?;
    let index = {
        let map = map.clone();
        tokio::task::spawn_blocking(move || map.placement_index())
            .await
            .map_err(ApiError::internal)?
    };
    let mut tiles = index.by_name().to_vec();
    let own = own_tiles(&state, &req, &map.record()).await?;
    if let Some(own) = &own {
        let sources = map.sources();
        tiles.retain(|&t| own.contains(&sources[t as usize].name));
    }
    if let Some(q) = q {
        let sources = map.sources();
        tiles.retain(|&t| sources[t as usize].matches(q));
        // Stable: the exact names first, each part still by file name.
        tiles.sort_by_key(|&t| !sources[t as usize].is_named(q));
    }
    let mut response = HttpResponse::Ok();
    response
        .insert_header((header::CACHE_CONTROL, cache_for(own.is_some())))
        .insert_header((header::VARY, "Accept"));
    if csv {
        // The photo's name, for the file's: the record is read for a download only.
        let record = state.platform.jobs().get(id).await?;
        let name = crate::job_view::named_after(&record.params.input_name, "placements.csv");
        response
            .insert_header((header::CONTENT_TYPE, "text/csv; charset=utf-8"))
            .insert_header((
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ));
    } else {
        response.insert_header((header::CONTENT_TYPE, "application/json"));
    }
    let body = PlacementsBody {
        map,
        index,
        tiles,
        csv,
        at: (0, 0),
        begun: false,
        tile_open: false,
        ended: false,
        _seat: seat,
    };
    Ok(
        response.streaming(futures_util::stream::unfold(body, |mut body| async move {
            body.chunk()
                .map(|chunk| (Ok::<_, actix_web::Error>(chunk), body))
        })),
    )
}

/// Placements sent at once to one address: a large mosaic's run to tens of megabytes.
const PLACEMENTS_PER_ADDRESS: usize = 2;

/// About how much of a placements answer is made at a time: the answer is written as it is
/// sent, so a request holds this much, whatever the mosaic's size.
const PLACEMENTS_CHUNK: usize = 64 << 10;

/// A placements answer (JSON or CSV), written a chunk at a time from the map's index.
struct PlacementsBody {
    map: Arc<HeldCellMap>,
    index: Arc<tessera_engine::PlacementIndex>,
    /// The tiles to list, in order.
    tiles: Vec<u32>,
    csv: bool,
    /// The next tile (in `tiles`) and cell (in its cells) to write.
    at: (usize, usize),
    begun: bool,
    tile_open: bool,
    ended: bool,
    /// The address's place, given back when the answer is sent or dropped.
    _seat: crate::guards::client::AddressHold,
}

impl PlacementsBody {
    fn chunk(&mut self) -> Option<bytes::Bytes> {
        use std::io::Write;
        if self.ended {
            return None;
        }
        let mut out = Vec::with_capacity(PLACEMENTS_CHUNK + 1024);
        if !self.begun {
            self.begun = true;
            if self.csv {
                out.extend_from_slice(tessera_engine::PLACEMENTS_CSV_HEADER.as_bytes());
            } else {
                let uses: usize = self
                    .tiles
                    .iter()
                    .map(|&t| self.index.cells_of(t).len())
                    .sum();
                let (cols, rows) = (self.map.cols(), self.map.rows());
                let _ = write!(
                    out,
                    r#"{{"cols":{cols},"rows":{rows},"uses":{uses},"tiles":["#
                );
            }
        }
        while out.len() < PLACEMENTS_CHUNK {
            let (tile, cell) = self.at;
            let Some(&source) = self.tiles.get(tile) else {
                if !self.csv {
                    out.extend_from_slice(b"]}");
                }
                self.ended = true;
                break;
            };
            let cells = self.index.cells_of(source);
            if !self.tile_open {
                self.tile_open = true;
                self.open_tile(&mut out, tile, source, cells.len());
            }
            let mut next = cell;
            while next < cells.len() && out.len() < PLACEMENTS_CHUNK {
                let [row, col] = self.map.position(cells[next]);
                let _ = match (self.csv, next) {
                    (true, 0) => write!(out, "{}", tessera_engine::csv_cell(row, col)),
                    (true, _) => write!(out, " {}", tessera_engine::csv_cell(row, col)),
                    (false, 0) => write!(out, "[{row},{col}]"),
                    (false, _) => write!(out, ",[{row},{col}]"),
                };
                next += 1;
            }
            self.at = (tile, next);
            if next == cells.len() {
                out.extend_from_slice(if self.csv { b"\n" } else { b"]}" });
                self.tile_open = false;
                self.at = (tile + 1, 0);
            }
        }
        Some(out.into())
    }

    /// A tile's line (CSV) or object (JSON), up to its cells.
    fn open_tile(&self, out: &mut Vec<u8>, tile: usize, source: u32, uses: usize) {
        use std::io::Write;
        let s = &self.map.sources()[source as usize];
        if self.csv {
            let (name, caption) = (
                tessera_engine::csv_field(&s.name),
                tessera_engine::csv_field(&s.caption),
            );
            let _ = write!(out, "{},{name},{caption},{uses},", s.tile);
        } else {
            if tile > 0 {
                out.push(b',');
            }
            let json = |text: &str| serde_json::to_string(text).unwrap_or_default();
            let _ = write!(
                out,
                r#"{{"tile":{},"name":{},"caption":{},"uses":{uses},"cells":["#,
                s.tile,
                json(&s.name),
                json(&s.caption)
            );
        }
    }
}

fn out_of_range(map: &CellMap) -> ApiError {
    ApiError::not_found(
        ErrorCode::CellOutOfRange,
        format!(
            "the mosaic is {} cells across and {} down, counted from 0",
            map.cols(),
            map.rows()
        ),
    )
}

/// How long a kept map's record answers who may see the job before it is read again: a job
/// made private on another web process is private here within this.
const ACCESS_RECHECK: std::time::Duration = std::time::Duration::from_secs(10);

/// The cell map of done job `job` (whose record the caller may have read already), to a
/// request that may see the job: 409 while it is not done, 404 for a job made before maps were
/// kept, 403 for a private job.
async fn cell_map(
    state: &AppState,
    req: &HttpRequest,
    job: Uuid,
    record: Option<&JobRecord>,
) -> ApiResult<Arc<HeldCellMap>> {
    let kept = state.cell_maps.get(job);
    if let Some(map) = &kept
        && let Some(seen) = map.record_seen_within(ACCESS_RECHECK)
    {
        check_readable(req, &seen)?;
        return Ok(map.clone());
    }
    let record = Arc::new(match record {
        Some(record) => record.clone(),
        None => state.platform.jobs().get(job).await?,
    });
    check_readable(req, &record)?;
    if let Some(map) = kept {
        map.saw(record);
        return Ok(map);
    }
    done_result(&record)?;
    let bytes = match state
        .platform
        .blobs
        .get(&BlobKey::CellMap { job }.path())
        .await
    {
        Ok(bytes) => bytes,
        Err(StorageError::NotFound(_)) => {
            return Err(ApiError::not_found(
                ErrorCode::CellsMissing,
                "this job keeps no record of its cells: it was made before they were kept",
            ));
        }
        Err(e) => return Err(e.into()),
    };
    let map = tokio::task::spawn_blocking(move || CellMap::from_bytes(&bytes))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)?;
    let map = Arc::new(HeldCellMap::new(map, record));
    state.cell_maps.keep(job, map.clone());
    Ok(map)
}
