//! `GET /api/v1/jobs/{id}/tiles/{level}/{x}/{y}`: the finished mosaic as a pyramid of 256 px PNG
//! tiles (geometry in `crate::imaging::stored_mosaic`).
//!
//! A tile is made from the rows it needs alone: the result's seek index (written by the
//! stitcher) names the nearest random-access point above them, one ranged read fetches the
//! compressed bytes from there to the next point past them, and only those rows are inflated.
//! A result without an index (an older job) is decoded from its start as a stream. Memory holds
//! a few rows and the tiles being made. A tile is kept as a blob once made; a level above 0
//! makes (and keeps) its whole row of tiles at once, since it inflates their rows anyway.

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use bytes::Bytes;
use tessera_shared::error_code::ErrorCode;

use tessera_engine::pyramid::dzi_max_level;
use tessera_shared::keys::BlobKey;
use tessera_shared::storage::{PutMode, StorageError};
use uuid::Uuid;

use crate::api::doc_types::Binary;
use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;
use crate::guards::client::job_id;
use crate::imaging::stored_mosaic::*;
use crate::imaging::zoom_levels::upper_levels;

/// One 256 px PNG tile of the finished mosaic's pyramid, made from the rows it needs.
///
/// Level 0 is the full resolution; level l is the mosaic shrunk by 2^l (each pixel the rounded
/// mean of a 2^l square block, cut short at the right and bottom edges). Tile (x, y) of a level
/// covers its pixels 256x to 256(x+1) across and 256y to 256(y+1) down; edge tiles are smaller.
/// The top level is the smallest whose image fits in one tile. Tiles are immutable: a strong
/// ETag and a year of caching.
#[utoipa::path(
    get,
    path = "/api/v1/jobs/{id}/tiles/{level}/{x}/{y}",
    operation_id = "get_tile",
    tag = "results",
    params(
        ("id" = uuid::Uuid, Path, description = "The job's id"),
        ("level" = u32, Path, description = "0 is the full resolution"),
        ("x" = u32, Path, description = "The tile's column"),
        ("y" = u32, Path, description = "The tile's row"),
        ("If-None-Match" = Option<String>, Header, nullable = false, description = "The ETag of the tile held"),
    ),
    responses(
        (status = 200, description = "The tile", content_type = "image/png", body = inline(Binary),
            headers(("ETag" = String))),
        (status = 304, description = "The tile named by If-None-Match has not changed"),
        crate::api::error_sets::AddressedErrors,
    ),
)]
pub async fn get(
    req: HttpRequest,
    path: web::Path<(String, u32, u32, u32)>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let (id, level, x, y) = path.into_inner();
    serve(&req, &state, &id, Levels::Zoom, level, x, y).await
}

/// Which levels an address may name.
#[derive(Clone, Copy)]
pub(crate) enum Levels {
    /// The zoom pyramid: up to the first level that fits in one tile.
    Zoom,
    /// Deep Zoom's, numbered from one pixel (0) to the full resolution.
    DeepZoom,
}

impl Levels {
    /// The pyramid's level (0: full resolution) that `level`, numbered this way, names: 404
    /// past the levels the mosaic has (`top` in the zoom pyramid, `deepest` in Deep Zoom's).
    fn zoom_level(self, level: u32, top: u32, deepest: u32) -> ApiResult<u32> {
        match self {
            Levels::Zoom if level <= top => Ok(level),
            Levels::DeepZoom if level <= deepest => Ok(deepest - level),
            Levels::Zoom => Err(ApiError::not_found(
                ErrorCode::TileOutOfRange,
                format!("the mosaic has levels 0 to {top}, not {level}"),
            )),
            Levels::DeepZoom => Err(ApiError::not_found(
                ErrorCode::TileOutOfRange,
                format!("the mosaic has Deep Zoom levels 0 to {deepest}, not {level}"),
            )),
        }
    }
}

/// Answers for tile `(x, y)` of `level` of job `id`'s mosaic, numbered as `levels` says.
pub(crate) async fn serve(
    req: &HttpRequest,
    state: &AppState,
    id: &str,
    levels: Levels,
    level: u32,
    x: u32,
    y: u32,
) -> ApiResult<HttpResponse> {
    let id = job_id(id)?;
    let record = state.platform.jobs().get(id).await?;
    crate::guards::job_access::check_readable(req, &record)?;
    let key = done_result(&record)?;
    let blobs = state.platform.blobs.clone();
    let (width, height) = result_size(&*blobs, &key, &record).await?;
    let top = top_level(width, height);
    let deepest = dzi_max_level(width, height);
    let level = levels.zoom_level(level, top, deepest)?;
    let (lw, lh) = level_size(width, height, level);
    if x >= lw.div_ceil(TILE) || y >= lh.div_ceil(TILE) {
        return Err(ApiError::not_found(
            ErrorCode::TileOutOfRange,
            format!(
                "that level of the mosaic is {} x {} tiles",
                lw.div_ceil(TILE),
                lh.div_ceil(TILE)
            ),
        ));
    }
    // The result of a job never changes once done: the tile's address is its version.
    let etag = format!("\"{id}-{level}-{x}-{y}\"");
    let response = |status: StatusCode| {
        let mut r = HttpResponse::build(status);
        r.insert_header((header::CONTENT_TYPE, "image/png"))
            .insert_header((header::ETAG, etag.clone()))
            .insert_header((header::CACHE_CONTROL, "public, max-age=31536000, immutable"))
            .insert_header((header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"));
        r
    };
    if let Some(tags) = req.headers().get(header::IF_NONE_MATCH) {
        let tags = tags.to_str().unwrap_or_default();
        if tags.trim() == "*" || tags.split(',').any(|t| t.trim() == etag) {
            return Ok(response(StatusCode::NOT_MODIFIED).finish());
        }
    }
    let cached = BlobKey::ImageTile {
        job: id,
        level,
        x,
        y,
    }
    .path();
    match blobs.get(&cached).await {
        Ok(tile) => return Ok(response(StatusCode::OK).body(tile)),
        Err(StorageError::NotFound(_)) => {}
        Err(e) => return Err(e.into()),
    }
    let source = Source {
        blobs: blobs.clone(),
        key,
        index: Default::default(),
        width,
        height,
    };
    let wanted = make_and_keep(state, source, id, (top, deepest), (level, x, y)).await?;
    Ok(response(StatusCode::OK).body(wanted))
}

/// Makes tile `(x, y)` of `level` of job `id`'s mosaic, with the tiles made by the same decode
/// (the rest of its row, or every level past `top`), and keeps them all for the next viewer.
async fn make_and_keep(
    state: &AppState,
    mut source: Source,
    id: Uuid,
    (top, deepest): (u32, u32),
    (level, x, y): (u32, u32, u32),
) -> ApiResult<Bytes> {
    let _slot = state.decodes.acquire().await.map_err(ApiError::internal)?;
    let blobs = source.blobs.clone();
    // Only a tile not kept yet needs the seek index.
    source.index = read_index(&*blobs, &source.key).await?;
    let handle = tokio::runtime::Handle::current();
    let tiles = tokio::task::spawn_blocking(move || {
        if level > top {
            // Levels past the top are a few small tiles, all made from one decode.
            let mut made = Vec::new();
            upper_levels(&source, &handle, (top + 1, deepest), |l, tx, ty, png| {
                made.push((l, tx, ty, png));
                Ok(())
            })?;
            Ok(made)
        } else {
            make_tiles(&source, &handle, level, x, y).map(|row| {
                row.into_iter()
                    .map(|(tx, png)| (level, tx, y, png))
                    .collect()
            })
        }
    })
    .await
    .map_err(ApiError::internal)??;
    let mut wanted = Bytes::new();
    for (l, tx, ty, png) in tiles {
        if (l, tx, ty) == (level, x, y) {
            wanted = png.clone();
        }
        let key = BlobKey::ImageTile {
            job: id,
            level: l,
            x: tx,
            y: ty,
        }
        .path();
        // Kept for the next viewer; failing to keep it costs only a later decode.
        if let Err(e) = blobs.put(&key, png, PutMode::Overwrite).await {
            tracing::warn!(error = %e, "tile not kept");
        }
    }
    Ok(wanted)
}

/// Makes tile `(x, y)` of `level` (level 0), or the whole row `y` of tiles of `level` (above 0),
/// as PNGs with their column numbers.
pub(crate) fn make_tiles(
    source: &Source,
    handle: &tokio::runtime::Handle,
    level: u32,
    x: u32,
    y: u32,
) -> ApiResult<Vec<(u32, Bytes)>> {
    let (width, height) = (source.width, source.height);
    let (lw, lh) = level_size(width, height, level);
    let out_rows = y * TILE..((y + 1) * TILE).min(lh);
    let tile_h = out_rows.len() as u32;
    let first = out_rows.start << level;
    let last = ((u64::from(out_rows.end) << level).min(u64::from(height))) as u32;
    // The columns made: the one tile at level 0, the row of tiles above.
    let cols = if level == 0 {
        x * TILE..((x + 1) * TILE).min(lw)
    } else {
        0..lw
    };
    let out_w = cols.len();
    let mut band = Vec::with_capacity(out_w * 3 * tile_h as usize);
    if level == 0 {
        let (a, b) = (cols.start as usize * 3, cols.end as usize * 3);
        source.rows(handle, first..last, |_, row| {
            band.extend_from_slice(&row[a..b])
        })?;
    } else {
        let mut shrink = Shrink::new((0..width).map(|c| c >> level).collect());
        let mut current = first >> level;
        source.rows(handle, first..last, |row_y, row| {
            if row_y >> level != current {
                band.extend(shrink.take().unwrap_or_default());
                current = row_y >> level;
            }
            shrink.add(row);
        })?;
        band.extend(shrink.take().unwrap_or_default());
    }
    if band.len() != out_w * 3 * tile_h as usize {
        return Err(decode_err("the rows decoded do not make the tile"));
    }
    let mut tiles = Vec::new();
    for tx in cols.start / TILE..cols.end.div_ceil(TILE) {
        let tile_cols = (tx * TILE).max(cols.start)..((tx + 1) * TILE).min(cols.end);
        let (a, b) = (
            (tile_cols.start - cols.start) as usize * 3,
            (tile_cols.end - cols.start) as usize * 3,
        );
        let pixels: Vec<u8> = band
            .chunks_exact(out_w * 3)
            .flat_map(|row| &row[a..b])
            .copied()
            .collect();
        tiles.push((tx, encode_png(&pixels, tile_cols.len() as u32, tile_h)?));
    }
    Ok(tiles)
}
