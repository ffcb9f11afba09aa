//! A library's contact sheet: a PNG grid of a spread of its tiles' renditions, so people can see
//! what a library holds before choosing it. Made once per library version from the index and
//! kept as a blob ([`BlobKey::LibrarySheet`]); a version's sheet never changes, so it is served
//! with an ETag naming the version, and as immutable when the URL names the version.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use bytes::Bytes;
use image::ImageEncoder as _;
use serde::Deserialize;
use tessera_shared::error_code::ErrorCode;

use tessera_engine::library::Library;
use tessera_shared::keys::BlobKey;
use tessera_shared::libraries::{Visibility, validate_library_id};
use tessera_shared::messages::LibraryRef;
use tessera_shared::storage::{PutMode, StorageError};

use crate::api::doc_types::Binary;
use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;
use crate::imaging::sheet_layout::{SHEET_TILE, sheet_size, spread};

#[derive(Debug, Deserialize)]
pub struct SheetQuery {
    /// A version of the library; its current one when absent.
    version: Option<u32>,
}

fn etag(library: &str, version: u32) -> String {
    format!("\"sheet-{library}-v{version}\"")
}

/// A library's contact sheet: a PNG grid of a spread of its tiles.
///
/// At most 12 x 8 tiles of 32 px, filled down the columns, made once per version.
#[utoipa::path(
    get,
    path = "/api/v1/libraries/{id}/sheet",
    operation_id = "get_library_sheet",
    tag = "libraries",
    params(
        ("id" = String, Path, pattern = r"^[a-z0-9][a-z0-9-]{0,47}$", description = "The library's id"),
        ("version" = Option<u32>, Query, minimum = 1, maximum = 4294967295_u64, description = "A version of the library (then served as immutable); its current version when absent."),
        ("If-None-Match" = Option<String>, Header, nullable = false, description = "The ETag of a sheet held; answered 304 when it is the one asked for."),
    ),
    responses(
        (status = 200, description = "The sheet, with an ETag naming the library version", content_type = "image/png", body = inline(Binary),
            headers(("ETag" = String))),
        (status = 304, description = "The sheet named by If-None-Match is current"),
        (status = 400, response = crate::api_error::ErrorBody),
        crate::api::error_sets::LookupErrors,
    ),
)]
pub async fn get(
    req: HttpRequest,
    path: web::Path<String>,
    query: web::Query<SheetQuery>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let id = path.into_inner();
    validate_library_id(&id)?;
    // Another's private library is not found; a private one's sheet is for the browser alone.
    let record = crate::api::tile_libraries::visible_library(&state, &req, &id).await?;
    let scope = if state.guard.required() || record.visibility == Visibility::Private {
        "private"
    } else {
        "public"
    };
    if query.version == Some(0) {
        return Err(ApiError::bad_request(
            ErrorCode::OutOfRange,
            "version must be 1 or more (versions start at 1)",
        ));
    }
    let (version, cache_control) = match query.version {
        Some(v) => (v, format!("{scope}, max-age=31536000, immutable")),
        // The current version may move on with a re-import: revalidate after a minute.
        None => (record.version, format!("{scope}, max-age=60")),
    };
    let tag = etag(&id, version);
    let unchanged = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        // `*` matches a sheet known to exist: the current version's (a version named in the
        // query may not exist, and is only matched by its own tag).
        .is_some_and(|v| {
            v.split(',')
                .any(|t| t.trim() == tag || (t.trim() == "*" && query.version.is_none()))
        });
    let response = |builder: &mut actix_web::HttpResponseBuilder| {
        builder
            .insert_header((header::ETAG, tag.clone()))
            .insert_header((header::CACHE_CONTROL, cache_control.clone()));
    };
    if unchanged {
        let mut b = HttpResponse::NotModified();
        response(&mut b);
        return Ok(b.finish());
    }
    let png = sheet(&state, &id, version).await?;
    let mut b = HttpResponse::Ok();
    response(&mut b);
    Ok(b.insert_header((header::CONTENT_TYPE, "image/png"))
        .body(png))
}

/// The kept sheet of one version, made (and kept) from the index when there is none yet.
async fn sheet(state: &AppState, id: &str, version: u32) -> ApiResult<Bytes> {
    let blobs = &state.platform.blobs;
    let key = BlobKey::LibrarySheet {
        library: id.to_string(),
        version,
    }
    .path();
    match blobs.get(&key).await {
        Ok(png) => return Ok(png),
        Err(StorageError::NotFound(_)) => {}
        Err(e) => return Err(e.into()),
    }
    let index = state
        .platform
        .libraries()
        .index(&LibraryRef {
            id: id.to_string(),
            version,
        })
        .await?;
    let _slot = state.decodes.acquire().await.map_err(ApiError::internal)?;
    let png = tokio::task::spawn_blocking(move || -> ApiResult<Bytes> {
        let library = Library::from_bytes(&index).map_err(ApiError::internal)?;
        make_sheet(&library).map(Bytes::from)
    })
    .await
    .map_err(ApiError::internal)??;
    // Deterministic: a sheet another request kept meanwhile holds the same bytes.
    match blobs.put(&key, png.clone(), PutMode::CreateNew).await {
        Ok(_) | Err(StorageError::AlreadyExists(_)) => {}
        // Failing to keep it costs only a later rebuild.
        Err(e) => tracing::warn!(error = %e, "contact sheet not kept"),
    }
    Ok(png)
}

/// Draws the sheet. Tiles go down the columns in library order, so every row (the home page's
/// strip shows the first) is itself a spread of the whole library. Empty places show the
/// library's background colour. Tiles that are not square are drawn whole, centred in their
/// square place on the background.
pub fn make_sheet(library: &Library) -> ApiResult<Vec<u8>> {
    let tiles = u32::try_from(library.len()).unwrap_or(u32::MAX);
    let picks = spread(tiles);
    let (width, height) = sheet_size(tiles);
    let cols = width / SHEET_TILE;
    let rows = height / SHEET_TILE;
    let mut sheet = image::RgbImage::from_pixel(width, height, image::Rgb(library.background()));
    let (rw, rh) = library.rendition_dims();
    let (fw, fh) = library.shape().fit(SHEET_TILE);
    let (dx, dy) = ((SHEET_TILE - fw) / 2, (SHEET_TILE - fh) / 2);
    for (n, &tile) in picks.iter().enumerate() {
        let n = n as u32;
        let (col, row) = (n / rows, n % rows);
        if col >= cols {
            break;
        }
        let rendition = image::RgbImage::from_raw(rw, rh, library.rendition(tile).to_vec())
            .ok_or_else(|| ApiError::internal("a rendition has the wrong size"))?;
        let small =
            image::imageops::resize(&rendition, fw, fh, image::imageops::FilterType::Triangle);
        image::imageops::replace(
            &mut sheet,
            &small,
            i64::from(col * SHEET_TILE + dx),
            i64::from(row * SHEET_TILE + dy),
        );
    }
    let mut out = Vec::new();
    image::codecs::png::PngEncoder::new(&mut out)
        .write_image(
            sheet.as_raw(),
            width,
            height,
            image::ExtendedColorType::Rgb8,
        )
        .map_err(ApiError::internal)?;
    Ok(out)
}
