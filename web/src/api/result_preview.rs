//! `GET /api/v1/jobs/{id}/preview`: the finished mosaic as a JPEG at most [`crate::imaging::stored_mosaic::PREVIEW_MAX_SIDE`]
//! pixels on its longest side, made once and then kept beside the result.
//!
//! Made as a stream whatever the mosaic's size: the result is read in ranges and decoded row by
//! row, each row added into the output row it falls in (an area mean), so memory holds a few
//! rows of the mosaic and the preview.

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use bytes::Bytes;

use tessera_shared::keys::BlobKey;
use tessera_shared::storage::{PutMode, StorageError};

use crate::api::doc_types::Binary;
use crate::api::requested_job::RequestedJob;
use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;
use crate::imaging::stored_mosaic::{
    Shrink, Source, done_result, missing, preview_bin, preview_size, result_size,
};

/// The finished mosaic as a JPEG at most 1024 px on its longest side.
#[utoipa::path(
    get,
    path = "/api/v1/jobs/{id}/preview",
    operation_id = "get_preview",
    tag = "results",
    params(("id" = uuid::Uuid, Path, description = "The job's id")),
    responses(
        (status = 200, description = "The preview", content_type = "image/jpeg", body = inline(Binary)),
        crate::api::error_sets::FinishedJobErrors,
    ),
)]
pub async fn get(job: RequestedJob, state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let RequestedJob { id, record } = job;
    let key = done_result(&record)?;
    let blobs = state.platform.blobs.clone();
    let cached = BlobKey::ImagePreview { job: id }.path();
    let jpeg = match blobs.get(&cached).await {
        Ok(jpeg) => jpeg,
        Err(StorageError::NotFound(_)) => {
            match blobs.head(&key).await {
                Ok(_) => {}
                Err(StorageError::NotFound(_)) => return Err(missing()),
                Err(e) => return Err(e.into()),
            }
            let (width, height) = result_size(&*blobs, &key, &record).await?;
            // Decoding from the start: the index only saves work for a part of the rows.
            let source = Source {
                blobs: blobs.clone(),
                key,
                index: None,
                width,
                height,
            };
            let _slot = state.decodes.acquire().await.map_err(ApiError::internal)?;
            let handle = tokio::runtime::Handle::current();
            let jpeg = tokio::task::spawn_blocking(move || make_preview(&source, &handle))
                .await
                .map_err(ApiError::internal)??;
            // Kept for the next viewer; failing to keep it costs only a later decode.
            if let Err(e) = blobs.put(&cached, jpeg.clone(), PutMode::Overwrite).await {
                tracing::warn!(error = %e, "preview not kept");
            }
            jpeg
        }
        Err(e) => return Err(e.into()),
    };
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "image/jpeg"))
        .insert_header((header::CACHE_CONTROL, "public, max-age=31536000, immutable"))
        .body(jpeg))
}

/// Decodes the result row by row into a preview-sized area mean, encoded as a JPEG.
fn make_preview(source: &Source, handle: &tokio::runtime::Handle) -> ApiResult<Bytes> {
    let (width, height) = (source.width, source.height);
    let (out_w, out_h) = preview_size(width, height);
    let mut shrink = Shrink::new((0..width).map(|x| preview_bin(x, width, out_w)).collect());
    let mut pixels = Vec::with_capacity(out_w as usize * out_h as usize * 3);
    let mut current = 0;
    source.rows(handle, 0..height, |y, row| {
        let bin = preview_bin(y, height, out_h);
        if bin != current {
            pixels.extend(shrink.take().unwrap_or_default());
            current = bin;
        }
        shrink.add(row);
    })?;
    pixels.extend(shrink.take().unwrap_or_default());
    if pixels.len() != out_w as usize * out_h as usize * 3 {
        return Err(ApiError::internal("the preview's rows do not add up"));
    }
    // Quality 75: the first picture of the job page, quick to come on a phone's connection;
    // zooming in brings the full-resolution tiles.
    crate::imaging::stored_mosaic::encode_jpeg(&pixels, (out_w, out_h), 75)
}
