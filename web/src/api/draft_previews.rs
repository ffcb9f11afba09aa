//! `POST /api/v1/previews`: a small mosaic of a photo as the job would make it, before the
//! job: the same fields as a submission, answered with a JPEG at a few pixels a tile. Nothing
//! is stored. One preview per client runs at a time, and previews share the decode slots.

use actix_multipart::Multipart;
use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use tessera_shared::error_code::ErrorCode;

use crate::api::doc_types::Binary;
use crate::api::job_broker::{read_form, spec_of, usable_library};
use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;
use crate::guards::client::{client_id, owner_of};
use crate::guards::inspect::probe_target;
use crate::guards::upload::require_multipart;

/// Preview a mosaic before submitting it.
///
/// Takes the fields of a job submission and answers a JPEG of the mosaic at a few pixels a tile
/// (about 800 pixels across): the job's grid up to 200 cells across, its library, repetition
/// rules, transforms, blend and background. Adaptive sizes show in the mosaic only. The headers
/// X-Preview-Cells (`COLSxROWS`), X-Mosaic-Size (`WxH`, the real mosaic's pixels) and
/// X-Photo-Size (`WxH`, the photo upright) say what it shows. Refused as the submission would
/// be; one preview per client at a time (429).
#[utoipa::path(
    post,
    path = "/api/v1/previews",
    operation_id = "preview_job",
    tag = "jobs",
    params(("X-Client-Id" = Option<Uuid>, Header, nullable = false, description = "The client id; otherwise the tessera_client cookie.")),
    request_body(content = crate::api::job_broker::JobSubmission, content_type = "multipart/form-data"),
    responses(
        (status = 200, description = "The preview", content_type = "image/jpeg", body = inline(Binary)),
        crate::api::error_sets::StorageErrors,
        crate::api::error_sets::UploadErrors,
        (status = 429, description = "preview_in_progress: this client's previous preview is still being made", body = crate::api_error::ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
    ),
)]
pub async fn create(
    req: HttpRequest,
    mut payload: Multipart,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    require_multipart(&req, "a preview")?;
    let (client, _) = client_id(&req)?;
    let address = crate::guards::client::client_address(&req, state.guard.trusted_proxies());
    let _seat = state.previews.take(client, address)?;
    let slot = state.uploads.take(address)?;
    let form = read_form(&mut payload, &state).await?;
    drop(slot);
    let settings = &state.settings;
    let (image, _) = form
        .image
        .ok_or_else(|| ApiError::bad_request(ErrorCode::MissingParameter, "image is required"))?;
    let mut spec = spec_of(&form.fields, &state)?;
    let record = usable_library(&state, &spec.library.id, &owner_of(&req, client)).await?;
    spec.library = record.reference();
    let probe = probe_target(&image, settings.max_input_pixels)?;
    let library = state.library(&spec.library).await?;
    // The whole photo is decoded: a decode's share of memory, and a decode slot.
    let pixels = u64::from(probe.width) * u64::from(probe.height);
    let _room = state.decode_memory.room_for(pixels * 4).await?;
    let _decode = state.decodes.acquire().await.map_err(ApiError::internal)?;
    let limits = settings.limits.clone();
    let started = std::time::Instant::now();
    let given = form.fields;
    let sketch = tokio::task::spawn_blocking(move || {
        crate::imaging::draft_mosaic::sketch(&image, &spec, &library, &limits, |name| {
            given.contains_key(name)
        })
    })
    .await
    .map_err(ApiError::internal)??;
    tracing::debug!(ms = started.elapsed().as_millis() as u64, "preview made");
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "image/jpeg"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((
            "X-Preview-Cells",
            format!("{}x{}", sketch.cols, sketch.rows),
        ))
        .insert_header((
            "X-Mosaic-Size",
            format!("{}x{}", sketch.mosaic_width, sketch.mosaic_height),
        ))
        .insert_header((
            "X-Photo-Size",
            format!("{}x{}", sketch.photo_width, sketch.photo_height),
        ))
        .body(sketch.jpeg))
}
