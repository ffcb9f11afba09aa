//! Deep Zoom for any viewer that reads it (OpenSeadragon and others): the descriptor at
//! `GET /api/v1/jobs/{id}/dzi` and its tiles where such viewers look for them,
//! `GET /api/v1/jobs/{id}/dzi_files/{level}/{x}_{y}.png`. The tiles are the zoom pyramid's
//! (`routes::tiles`), numbered the Deep Zoom way: level 0 is one pixel, the last level is the full
//! resolution.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use tessera_shared::error_code::ErrorCode;

use tessera_engine::pyramid::dzi_descriptor;

use crate::api::doc_types::Binary;
use crate::api::requested_job::RequestedJob;
use crate::api::zoom_tiles::{Levels, serve};
use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;
use crate::imaging::stored_mosaic::{done_result, result_size};

/// The finished mosaic's Deep Zoom descriptor (XML): its size, 256 px PNG tiles, no overlap.
///
/// Give this address to a Deep Zoom viewer: it finds the tiles at `dzi_files/` beside it.
#[utoipa::path(
    get,
    path = "/api/v1/jobs/{id}/dzi",
    operation_id = "get_dzi",
    tag = "results",
    params(("id" = uuid::Uuid, Path, description = "The job's id")),
    responses(
        (status = 200, description = "The Deep Zoom descriptor", content_type = "application/xml",
            body = String),
        crate::api::error_sets::AddressedErrors,
    ),
)]
pub async fn descriptor(job: RequestedJob, state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let RequestedJob { record, .. } = job;
    let key = done_result(&record)?;
    let (width, height) = result_size(&*state.platform.blobs, &key, &record).await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "application/xml"))
        .insert_header((header::CACHE_CONTROL, "public, max-age=31536000, immutable"))
        .insert_header((header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"))
        .body(dzi_descriptor(width, height)))
}

/// One tile of the Deep Zoom pyramid: level 0 is one pixel, each level doubles the one below,
/// the last is the full resolution. Tile `X_Y.png` of a level covers its pixels 256X to
/// 256(X+1) across and 256Y to 256(Y+1) down; edge tiles are smaller. Tiles are immutable: a
/// strong ETag and a year of caching.
#[utoipa::path(
    get,
    path = "/api/v1/jobs/{id}/dzi_files/{level}/{tile}",
    operation_id = "get_dzi_tile",
    tag = "results",
    params(
        ("id" = uuid::Uuid, Path, description = "The job's id"),
        ("level" = u32, Path, description = "The Deep Zoom level: 0 is one pixel"),
        ("tile" = String, Path, description = "The tile, `X_Y.png` (column and row)",
            example = "0_0.png", pattern = r"^[0-9]{1,9}_[0-9]{1,9}\.png$"),
        ("If-None-Match" = Option<String>, Header, nullable = false, description = "The ETag of the tile held"),
    ),
    responses(
        (status = 200, description = "The tile", content_type = "image/png", body = inline(Binary),
            headers(("ETag" = String))),
        (status = 304, description = "The tile named by If-None-Match has not changed"),
        crate::api::error_sets::AddressedErrors,
    ),
)]
pub async fn tile(
    req: HttpRequest,
    path: web::Path<(String, u32, String)>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let (id, level, tile) = path.into_inner();
    let (x, y) = parse_tile(&tile)?;
    serve(&req, &state, &id, Levels::DeepZoom, level, x, y).await
}

/// `X_Y.png` as its column and row.
fn parse_tile(name: &str) -> ApiResult<(u32, u32)> {
    name.strip_suffix(".png")
        .and_then(|xy| xy.split_once('_'))
        .and_then(|(x, y)| Some((x.parse().ok()?, y.parse().ok()?)))
        .ok_or_else(|| {
            ApiError::bad_request(
                ErrorCode::BadTileName,
                format!("{name:?} is not a tile's name: tiles are named X_Y.png, as 3_1.png"),
            )
        })
}

#[cfg(test)]
mod tests {
    #[test]
    fn tile_names_are_column_underscore_row_dot_png() {
        assert_eq!(super::parse_tile("3_14.png").ok(), Some((3, 14)));
        for bad in [
            "3_14.jpg",
            "3-14.png",
            "_1.png",
            "1_.png",
            "a_b.png",
            "99999999999_0.png",
        ] {
            assert!(super::parse_tile(bad).is_err(), "{bad}");
        }
    }
}
