//! The job broker (`POST /api/v1/jobs`) and job status (`GET /api/v1/jobs/{id}`).
//!
//! A submission is checked in full before anything is stored: every parameter, the library, the
//! image (format, header dimensions, a complete decode) and the mosaic's size. Then the input blob,
//! the job record (queued) and the `ImageRequest` are written, in that order, so a message never
//! names a job or an input that does not exist.

use actix_multipart::{Field, Multipart};
use actix_web::cookie::{Cookie, SameSite};
use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use futures_util::StreamExt;
use utoipa::ToSchema;
use uuid::Uuid;

use tessera_engine::{
    AdaptiveSizes, AdaptiveSizing, Grid as EngineGrid, PlanOptions, Sizing, TileBackground,
    TileSize,
};
use tessera_shared::accounting;
use tessera_shared::jobs::{JobParams, JobRecord, OutputSize};
use tessera_shared::keys::BlobKey;
use tessera_shared::libraries::{LibraryError, validate_library_id};
use tessera_shared::lifecycle::{delete_job, release_intermediates};
use tessera_shared::messages::{
    Envelope, Grid, ImageRequest, RenderOptions, SLICES_RANGE, TILE_SIZE_RANGE, tile_height_field,
};
use tessera_shared::storage::PutMode;

use crate::client::{CLIENT_COOKIE, client_id, job_id, named_client};
use crate::error::{ApiError, ApiResult};
use crate::inspect::inspect_target;
use crate::state::AppState;
use crate::upload::{
    DRAIN_SLACK, drain, field_name, file_name, parse_bool, read_limited, read_text,
    require_multipart,
};
use crate::view::{JobView, job_path};

/// How long a client over its quota of active jobs is asked to wait (`Retry-After`).
const QUOTA_RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(10);

/// The fields of a submission, as sent.
#[derive(Debug, Default)]
struct Form {
    image: Option<(bytes::Bytes, String)>,
    library: Option<String>,
    tile_size: Option<String>,
    cells: Option<String>,
    per_pixel: Option<String>,
    slices: Option<String>,
    repeat_radius: Option<String>,
    blend: Option<String>,
    flip: Option<String>,
    rotate: Option<String>,
    background: Option<String>,
    adaptive: Option<String>,
}

// The fields of a job submission as the API documents them; the handler reads them as they
// stream in (`Form`) and checks each against the same bounds.
/// A job submission (`multipart/form-data`).
#[derive(serde::Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JobSubmission {
    /// The target image: PNG, JPEG, WebP or GIF.
    #[schema(value_type = String, format = Binary, min_length = 1)]
    pub image: Vec<u8>,
    /// Library id (the configured default when omitted or empty).
    #[schema(required = false, pattern = r"^([a-z0-9][a-z0-9-]{0,47})?$")]
    pub library: String,
    /// Tile size in pixels: `16` for square tiles, or width x height such as `24x18` (each
    /// side 4 to 256). The tiles' shape must be the library's (`24x18` is 4:3; a square library
    /// takes square tiles).
    #[schema(value_type = String, required = false, default = "16", example = "24x18", pattern = r"^(?:[4-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-6])(?:x(?:[4-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-6]))?$")]
    pub tile_size: String,
    /// Cells across (at most web.max_cells, 4096 by default); not with per_pixel.
    #[schema(required = false, minimum = 1, maximum = 4096, default = 128)]
    pub cells: u32,
    /// One tile per pixel of the target.
    #[schema(required = false, default = false)]
    pub per_pixel: bool,
    /// Slices to render in parallel (rounded to whole rows of cells; the default suits the size).
    #[schema(required = false, minimum = 1, maximum = 1024)]
    pub slices: u32,
    /// No tile repeats within this many cells (at most web.max_repeat_radius, 16 by default).
    #[schema(required = false, minimum = 0, maximum = 16, default = 1)]
    pub repeat_radius: u32,
    /// Percent of each cell's colour error corrected by tinting its tile.
    #[schema(required = false, minimum = 0, maximum = 100, default = 0)]
    pub blend: u8,
    /// Tiles may be mirrored left-right where that fits their cell better.
    #[schema(required = false, default = false)]
    pub flip: bool,
    /// Tiles may be turned by 90, 180 or 270 degrees where that fits their cell better (with
    /// flip: all 8 symmetries of the square); tiles that are not square turn by 180 degrees
    /// only. A turned tile still counts as itself for the repetition radius.
    #[schema(required = false, default = false)]
    pub rotate: bool,
    /// What the transparent parts of tiles (emoji, cut-outs) lie over: `library` (the colour the
    /// library was imported over), `auto` (black, a grey, white or the photo's mean colour,
    /// whichever brings the tiles nearest the photo) or a colour as `rrggbb` or `#rrggbb`.
    /// Opaque tiles look the same under all. Not with adaptive (422 adaptive_background).
    #[schema(
        required = false,
        default = "library",
        example = "auto",
        pattern = r"^(?:[Ll][Ii][Bb][Rr][Aa][Rr][Yy]|[Aa][Uu][Tt][Oo]|#?[0-9A-Fa-f]{6})$"
    )]
    pub background: String,
    /// Adaptive tile sizes, MIN..MAX pixels (as `8..32`; each 4 to 256, and the largest the
    /// smallest doubled one or more times): square tiles of several sizes, large where the photo
    /// is flat and small where it is detailed, with no more tiles than the uniform grid of
    /// `cells` and `tile_size` would have; the output is that grid's size rounded up to whole
    /// squares of MAX. Needs a square tile_size and cells across (not per_pixel). Empty or
    /// absent: the uniform grid. Sizes that do not double are 422 adaptive_not_doubling, an
    /// oblong tile_size 422 adaptive_not_square, and a largest size whose squares alone are
    /// more than the uniform grid's tiles 422 adaptive_too_coarse.
    #[schema(
        required = false,
        example = "8..32",
        pattern = r"^(?:(?:[4-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-6])\.\.(?:[4-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-6]))?$"
    )]
    pub adaptive: String,
}

/// Submit a mosaic job.
///
/// Queued when every parameter, the library and the image check out; `Location` names the job.
#[utoipa::path(
    post,
    path = "/api/v1/jobs",
    operation_id = "submit_job",
    tag = "jobs",
    params(("X-Client-Id" = Option<Uuid>, Header, nullable = false, description = "The client id; otherwise the tessera_client cookie, minted when absent.")),
    request_body(content = JobSubmission, content_type = "multipart/form-data"),
    responses(
        (status = 202, description = "Queued; Location names the job", body = JobView,
            headers(("Location" = String, description = "The job's path"))),
        (status = 400, response = crate::error::ErrorBody),
        (status = 403, response = crate::error::ErrorBody),
        (status = 413, response = crate::error::ErrorBody),
        (status = 415, response = crate::error::ErrorBody),
        (status = 422, response = crate::error::ErrorBody),
        (status = 429, description = "too_many_active_jobs: the client (its cookie or X-Client-Id) has web.max_active_jobs_per_client jobs running", body = crate::error::ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
        (status = 503, response = crate::error::ErrorBody),
        (status = 507, description = "insufficient_storage: no room for the job (the embedded backend keeps storage.min_free_bytes free)", body = crate::error::ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
    ),
)]
pub async fn submit(
    req: HttpRequest,
    mut payload: Multipart,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    require_multipart(&req, "a job")?;
    let (client, minted) = client_id(&req)?;
    let form = read_form(&mut payload, &state).await?;
    let job = Uuid::new_v4();
    let span = tracing::info_span!("submit", %job, %client);
    let record = tracing::Instrument::instrument(
        accounting::with_job(job, enqueue(&state, job, client, form)),
        span,
    )
    .await?;
    let mut response = HttpResponse::Accepted();
    response.insert_header((header::LOCATION, job_path(job)));
    if minted {
        let cookie = Cookie::build(CLIENT_COOKIE, client.to_string())
            .path("/")
            .http_only(true)
            .same_site(SameSite::Lax)
            .permanent()
            .finish();
        response.cookie(cookie);
    }
    Ok(response.json(JobView::new(&record, &state.settings.retention)))
}

/// Reads every field; on a refusal, drains a bounded amount of what is left (see [`drain`]).
async fn read_form(payload: &mut Multipart, state: &AppState) -> ApiResult<Form> {
    let mut form = Form::default();
    let limit = state.settings.max_upload_bytes;
    while let Some(field) = payload.next().await {
        let mut field = field?;
        if let Err(e) = read_field(&mut form, &mut field, limit).await {
            // A broken multipart stream has ended and must not be polled again.
            if e.code != "bad_multipart" {
                drain(payload, field, limit.saturating_add(DRAIN_SLACK)).await;
            }
            return Err(e);
        }
    }
    Ok(form)
}

async fn read_field(form: &mut Form, field: &mut Field, limit: u64) -> ApiResult<()> {
    let name = field_name(field);
    let slot = match name.as_str() {
        "image" => {
            if form.image.is_some() {
                return Err(duplicate(&name));
            }
            let input_name = file_name(field).unwrap_or_default();
            let bytes = read_limited(field, limit, || {
                ApiError::too_large(
                    "upload_too_large",
                    format!("the image is over the upload limit of {limit} bytes"),
                )
            })
            .await?;
            form.image = Some((bytes.freeze(), input_name));
            return Ok(());
        }
        "library" => &mut form.library,
        "tile_size" => &mut form.tile_size,
        "cells" => &mut form.cells,
        "per_pixel" => &mut form.per_pixel,
        "slices" => &mut form.slices,
        "repeat_radius" => &mut form.repeat_radius,
        "blend" => &mut form.blend,
        "flip" => &mut form.flip,
        "rotate" => &mut form.rotate,
        "background" => &mut form.background,
        "adaptive" => &mut form.adaptive,
        _ => {
            return Err(ApiError::bad_request(
                "unknown_field",
                format!("unknown field {name:?}"),
            ));
        }
    };
    if slot.is_some() {
        return Err(duplicate(&name));
    }
    *slot = Some(read_text(field, &name).await?);
    Ok(())
}

fn duplicate(name: &str) -> ApiError {
    ApiError::bad_request("duplicate_field", format!("field {name:?} is given twice"))
}

fn missing(name: &str) -> ApiError {
    ApiError::bad_request("missing_parameter", format!("{name} is required"))
}

/// Reads `tile_size`: `16` or `24x18` (16 when absent).
fn parse_tile_size(text: Option<&str>) -> ApiResult<TileSize> {
    let Some(text) = text else {
        return Ok(TileSize::square(16));
    };
    TileSize::parse(text).map_err(|e| match e {
        tessera_engine::Error::TileSize(side) => ApiError::bad_request(
            "out_of_range",
            format!(
                "tile_size must be {} to {} pixels a side, not {side} (in {text:?})",
                TILE_SIZE_RANGE.start(),
                TILE_SIZE_RANGE.end()
            ),
        ),
        _ => ApiError::bad_request(
            "invalid_parameter",
            format!(
                "tile_size must be a whole number of pixels (16) or width x height (24x18), not \
                 {text:?}"
            ),
        ),
    })
}

/// Reads `adaptive`: `MIN..MAX` (none when absent or empty). Malformed or a side out of range:
/// 400, as for `tile_size`; sides that do not double: 422.
fn parse_adaptive(text: Option<&str>) -> ApiResult<Option<AdaptiveSizes>> {
    let Some(text) = text.filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    let side = |v: &str| {
        (!v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
            .then(|| v.parse::<u32>().ok())
            .flatten()
    };
    let Some((min, max)) = text
        .split_once("..")
        .and_then(|(min, max)| Some((side(min)?, side(max)?)))
    else {
        return Err(ApiError::bad_request(
            "invalid_parameter",
            format!("adaptive must be MIN..MAX in pixels (as 8..32), not {text:?}"),
        ));
    };
    if let Some(side) = [min, max]
        .into_iter()
        .find(|s| !TILE_SIZE_RANGE.contains(s))
    {
        return Err(ApiError::bad_request(
            "out_of_range",
            format!(
                "adaptive must be {} to {} pixels a side, not {side} (in {text:?})",
                TILE_SIZE_RANGE.start(),
                TILE_SIZE_RANGE.end()
            ),
        ));
    }
    AdaptiveSizes::new(min, max).map(Some).map_err(|_| {
        ApiError::unprocessable(
            "adaptive_not_doubling",
            format!(
                "adaptive {text}: the largest size must be the smallest doubled one or more \
                 times (as 8..16, 8..32 or 8..64)"
            ),
        )
    })
}

fn parse_u32(
    name: &str,
    text: Option<&str>,
    default: u32,
    range: std::ops::RangeInclusive<u32>,
) -> ApiResult<u32> {
    let Some(text) = text else {
        return Ok(default);
    };
    let value: u32 = text.parse().map_err(|_| {
        ApiError::bad_request(
            "invalid_parameter",
            format!("{name} must be a whole number, not {text:?}"),
        )
    })?;
    if !range.contains(&value) {
        return Err(ApiError::bad_request(
            "out_of_range",
            format!(
                "{name} must be {} to {}, not {value}",
                range.start(),
                range.end()
            ),
        ));
    }
    Ok(value)
}

/// Checks everything, then stores the input and the record and sends the request.
async fn enqueue(state: &AppState, job: Uuid, client: Uuid, form: Form) -> ApiResult<JobRecord> {
    let settings = &state.settings;
    let quota = settings.max_active_jobs_per_client;
    if quota > 0 {
        let active = state.platform.jobs().active_of_client(client).await?;
        if active >= quota as usize {
            return Err(ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too_many_active_jobs",
                format!(
                    "{active} of your jobs are still running, the most allowed at once: submit \
                     again when one has ended"
                ),
            )
            .retry_after(QUOTA_RETRY_AFTER));
        }
    }
    let (image, input_name) = form.image.ok_or_else(|| missing("image"))?;
    let library_id = match form.library.filter(|l| !l.is_empty()) {
        Some(id) => id,
        None if !settings.default_library.is_empty() => settings.default_library.clone(),
        None => return Err(missing("library")),
    };
    let tile_size = parse_tile_size(form.tile_size.as_deref())?;
    let per_pixel = parse_bool("per_pixel", form.per_pixel.as_deref())?;
    let cells_given = form.cells.is_some();
    if per_pixel && cells_given {
        return Err(ApiError::bad_request(
            "conflicting_parameters",
            "give either cells or per_pixel, not both",
        ));
    }
    let adaptive = parse_adaptive(form.adaptive.as_deref())?;
    if per_pixel && adaptive.is_some() {
        return Err(ApiError::bad_request(
            "conflicting_parameters",
            "adaptive needs cells across: give either adaptive or per_pixel, not both",
        ));
    }
    let cells = parse_u32("cells", form.cells.as_deref(), 128, 1..=settings.max_cells)?;
    let slices = parse_u32(
        "slices",
        form.slices.as_deref(),
        settings
            .default_slices
            .clamp(*SLICES_RANGE.start(), *SLICES_RANGE.end()),
        SLICES_RANGE,
    )?;
    let repeat_radius = parse_u32(
        "repeat_radius",
        form.repeat_radius.as_deref(),
        1,
        0..=settings.max_repeat_radius,
    )?;
    let blend = parse_u32("blend", form.blend.as_deref(), 0, 0..=100)? as u8;
    let flip = parse_bool("flip", form.flip.as_deref())?;
    let rotate = parse_bool("rotate", form.rotate.as_deref())?;
    // `library`, as an empty field, is the default: none asked for.
    let background =
        match form.background.as_deref() {
            None | Some("") => None,
            Some(text) => Some(TileBackground::parse(text).map_err(|e| {
                ApiError::bad_request("invalid_parameter", format!("background: {e}"))
            })?),
        }
        .filter(|bg| *bg != TileBackground::Library);
    if let Some(sizes) = adaptive
        && !tile_size.is_square()
    {
        return Err(ApiError::unprocessable(
            "adaptive_not_square",
            format!(
                "adaptive {sizes} makes square tiles, but tile_size {tile_size} is not square: \
                 give a square tile_size (and a square library), or no adaptive sizes"
            ),
        ));
    }
    if let Some(sizes) = adaptive
        && background.is_some()
    {
        return Err(ApiError::unprocessable(
            "adaptive_background",
            format!(
                "adaptive {sizes} lays tiles over the library's own background: leave background \
                 out (or library), or give no adaptive sizes"
            ),
        ));
    }
    if validate_library_id(&library_id).is_err() {
        return Err(ApiError::unprocessable(
            "unknown_library",
            format!("there is no library {library_id:?}"),
        ));
    }
    let library = match state.platform.libraries().get(&library_id).await {
        Ok(record) => record,
        Err(LibraryError::NotFound(_)) => {
            return Err(ApiError::unprocessable(
                "unknown_library",
                format!("there is no library {library_id:?}"),
            ));
        }
        Err(e) => return Err(e.into()),
    };

    let max_pixels = settings.max_input_pixels;
    let bytes = image.clone();
    let _slot = state.decodes.acquire().await.map_err(ApiError::internal)?;
    let info = tokio::task::spawn_blocking(move || inspect_target(&bytes, max_pixels))
        .await
        .map_err(ApiError::internal)??;

    let grid = if per_pixel {
        Grid::PerPixel
    } else {
        Grid::Cells { across: cells }
    };
    let plan_options = PlanOptions {
        tile_size,
        grid: match grid {
            Grid::PerPixel => EngineGrid::PerPixel,
            Grid::Cells { across } => EngineGrid::Cells(across),
        },
        repeat_radius,
        blend,
        max_output_pixels: settings.max_output_pixels,
        ..PlanOptions::default()
    };
    let refused = |e: tessera_engine::Error| match e {
        tessera_engine::Error::OutputTooLarge { .. } => {
            ApiError::unprocessable("output_too_large", e.to_string())
        }
        tessera_engine::Error::AdaptiveBudget { .. } => {
            ApiError::unprocessable("adaptive_too_coarse", format!("adaptive: {e}"))
        }
        e => ApiError::bad_request("invalid_parameter", e.to_string()),
    };
    let sizing = Sizing::new(info.width, info.height, &plan_options).map_err(refused)?;
    // The mosaic as it will be: the uniform grid, or the adaptive squares within its budget,
    // counted in cells of the smallest square (as the cell lookup counts them).
    let output = match adaptive {
        None => OutputSize {
            width: sizing.width,
            height: sizing.height,
            cols: sizing.cols,
            rows: sizing.rows,
        },
        Some(sizes) => {
            let adaptive = AdaptiveSizing::new(info.width, info.height, &plan_options, sizes)
                .map_err(refused)?;
            let (cols, rows) = adaptive.grid();
            OutputSize {
                width: adaptive.width,
                height: adaptive.height,
                cols,
                rows,
            }
        }
    };
    // The engine's own rule: each cell's tile differs from every tile already placed within the
    // radius. Caught here, a job that could never render is refused instead of failing later.
    let needed = tessera_engine::plan::tiles_needed(sizing.cols, sizing.rows, repeat_radius);
    if (library.tiles as usize) < needed {
        return Err(ApiError::unprocessable(
            "library_too_small",
            format!(
                "the library {:?} has {} tiles, but a repetition radius of {repeat_radius} on a \
                 {} x {} grid needs at least {needed} different tiles: lower the repetition \
                 radius, use fewer cells or choose a larger library",
                library.id, library.tiles, sizing.cols, sizing.rows
            ),
        ));
    }
    if tile_size.shape() != library.tile_shape() {
        return Err(ApiError::unprocessable(
            "shape_mismatch",
            format!(
                "tile_size {tile_size} makes {} tiles, but the library {:?} holds {} tiles: give \
                 a tile_size of shape {} or choose a library of shape {}",
                tile_size.shape(),
                library.id,
                library.shape,
                library.shape,
                tile_size.shape()
            ),
        ));
    }
    let library = library.reference();

    let input_blob = BlobKey::ImageInput { job }.path();
    let platform = &state.platform;
    // Room for the upload, the slices and the result (the raw pixels are about both).
    let needed = image.len() as u64 + u64::from(output.width) * u64::from(output.height) * 3;
    if let Some(writable) = platform.blobs.writable_bytes().await
        && writable < needed
    {
        return Err(ApiError::insufficient_storage(format!(
            "{writable} bytes writable, the job needs about {needed}"
        )));
    }
    platform
        .blobs
        .put(&input_blob, image, PutMode::CreateNew)
        .await?;
    let options = RenderOptions {
        repeat_radius,
        blend_percent: blend,
        max_uses: None,
        flip,
        rotate,
        background,
        adaptive,
    };
    let mut record = JobRecord::new(
        job,
        client,
        JobParams {
            library: library.clone(),
            tile_size: tile_size.width,
            tile_height: tile_height_field(tile_size),
            grid,
            slices,
            options,
            input_name: input_name.chars().take(255).collect(),
        },
    );
    record.output = Some(output);
    platform.jobs().create(&record).await?;
    // The client's index of its jobs (the "my jobs" page lists it by prefix).
    platform
        .blobs
        .put(
            &BlobKey::ClientJob { client, job }.path(),
            bytes::Bytes::new(),
            PutMode::Overwrite,
        )
        .await?;
    let request = ImageRequest {
        job_id: job,
        input_blob,
        library,
        tile_size: tile_size.width,
        tile_height: tile_height_field(tile_size),
        grid,
        slices,
        options,
        redrive: false,
    };
    if let Err(e) = platform
        .queue::<ImageRequest>()
        .send(&Envelope::new(client, request))
        .await
    {
        // The record exists: say why the job will never start rather than leave it queued.
        let _ = platform
            .jobs()
            .update(job, |r| r.fail("the job could not be queued"))
            .await;
        return Err(e.into());
    }
    tracing::info!(
        width = output.width,
        height = output.height,
        format = ?info.format,
        "job queued"
    );
    Ok(record)
}

/// A job's state and progress.
#[utoipa::path(
    get,
    path = "/api/v1/jobs/{id}",
    operation_id = "get_job",
    tag = "jobs",
    params(("id" = Uuid, Path, description = "The job's id")),
    responses(
        (status = 200, description = "The job", body = JobView),
        (status = 404, response = crate::error::ErrorBody),
        (status = 503, response = crate::error::ErrorBody),
    ),
)]
pub async fn get(path: web::Path<String>, state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let id = job_id(&path)?;
    let record = state.platform.jobs().get(id).await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(JobView::new(&record, &state.settings.retention)))
}

/// Delete an ended job and everything it holds.
///
/// Removes the job's record, result, preview, zoom tiles and anything left of its upload and
/// slices; afterwards the job answers 404. Only the client that submitted the job may delete it
/// (its tessera_client cookie or X-Client-Id): 403 not_your_job otherwise. A job still running
/// answers 409 job_active. Without a deletion, an ended job is kept for retention.result_days
/// (its expires_at).
#[utoipa::path(
    delete,
    path = "/api/v1/jobs/{id}",
    operation_id = "delete_job",
    tag = "jobs",
    params(
        ("id" = Uuid, Path, description = "The job's id"),
        ("X-Client-Id" = Option<Uuid>, Header, nullable = false, description = "The client that submitted the job (or its tessera_client cookie)."),
    ),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, response = crate::error::ErrorBody),
        (status = 403, response = crate::error::ErrorBody),
        (status = 404, response = crate::error::ErrorBody),
        (status = 409, response = crate::error::ErrorBody),
        (status = 503, response = crate::error::ErrorBody),
    ),
)]
pub async fn delete(
    req: HttpRequest,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let id = job_id(&path)?;
    let record = state.platform.jobs().get(id).await?;
    if named_client(&req)? != Some(record.client_id) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "not_your_job",
            "only the client that submitted a job may delete it",
        ));
    }
    if !record.state.is_final() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "job_active",
            "the job is still running: delete it once it is done or failed",
        ));
    }
    let deleted = delete_job(&*state.platform.blobs, &record)
        .await
        .map_err(ApiError::storage)?;
    tracing::info!(job = %id, blobs = deleted, "job deleted");
    state.changes.changed(id);
    Ok(HttpResponse::NoContent().finish())
}

/// The reason a cancelled job gives.
pub const CANCELLED: &str = "cancelled by the client that submitted it";

/// Cancel a running job.
///
/// The job ends at once as failed, with the reason "cancelled by the client that submitted it";
/// slices already rendering finish and are dropped, and what the job left in storage is freed.
/// Only the client that submitted the job may cancel it (its tessera_client cookie or
/// X-Client-Id): 403 not_your_job otherwise. A job that has already ended answers 409
/// job_ended.
#[utoipa::path(
    post,
    path = "/api/v1/jobs/{id}/cancel",
    operation_id = "cancel_job",
    tag = "jobs",
    params(
        ("id" = Uuid, Path, description = "The job's id"),
        ("X-Client-Id" = Option<Uuid>, Header, nullable = false, description = "The client that submitted the job (or its tessera_client cookie)."),
    ),
    responses(
        (status = 200, description = "Cancelled: the job, failed", body = JobView),
        (status = 400, response = crate::error::ErrorBody),
        (status = 403, response = crate::error::ErrorBody),
        (status = 404, response = crate::error::ErrorBody),
        (status = 409, response = crate::error::ErrorBody),
        (status = 503, response = crate::error::ErrorBody),
    ),
)]
pub async fn cancel(
    req: HttpRequest,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let id = job_id(&path)?;
    let record = state.platform.jobs().get(id).await?;
    if named_client(&req)? != Some(record.client_id) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "not_your_job",
            "only the client that submitted a job may cancel it",
        ));
    }
    let mut cancelled = false;
    let record = state
        .platform
        .jobs()
        .update(id, |r| {
            cancelled = r.fail(CANCELLED);
            cancelled
        })
        .await?;
    if !cancelled {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "job_ended",
            format!("the job has already ended ({})", record.state.as_str()),
        ));
    }
    tracing::info!(job = %id, "job cancelled");
    // Best effort: the reconciler's sweep frees what is left of an ended job anyway.
    if let Err(e) = release_intermediates(&*state.platform.blobs, id, true).await {
        tracing::warn!(job = %id, error = %e, "the cancelled job's intermediates are left to the sweep");
    }
    state.changes.changed(id);
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(JobView::new(&record, &state.settings.retention)))
}
