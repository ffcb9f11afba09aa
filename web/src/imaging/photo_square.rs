//! A photo sent before thumbnails were kept, decoded once when its picture is first asked for:
//! its square (cropped as its tile is) as a thumbnail. Photos sent since are prepared by the
//! image processors (`photorequest`).

use bytes::Bytes;
use tessera_shared::error_code::ErrorCode;
use tessera_shared::events::THUMBNAIL_SIDE;

use crate::api_error::{ApiError, ApiResult};

/// Decodes a photo on a blocking thread (the decoder takes its room from the shared decode
/// budget before it allocates; the caller holds the photo's turn) into its thumbnail, a JPEG.
/// A photo that cannot be decoded is 422 `corrupt_image` with the reason.
pub(crate) async fn thumbnail(bytes: Bytes) -> ApiResult<Bytes> {
    tokio::task::spawn_blocking(move || {
        tessera_engine::decode::square_thumbnail(&bytes, THUMBNAIL_SIDE, 85)
            .map(|(jpeg, _)| Bytes::from(jpeg))
            .map_err(|e| ApiError::unprocessable(ErrorCode::CorruptImage, e))
    })
    .await
    .map_err(ApiError::internal)?
}
