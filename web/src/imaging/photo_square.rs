//! A contributed photo decoded once as it comes: its square (cropped as its tile is) as a
//! thumbnail, and its colour for the wish list.

use bytes::Bytes;
use tessera_shared::error_code::ErrorCode;

use crate::api_error::{ApiError, ApiResult};
use crate::imaging::stored_mosaic::encode_jpeg;

/// The largest side of a photo's thumbnail, in pixels.
pub const THUMBNAIL_SIDE: u32 = 320;

/// What a contributed photo gives once decoded: its thumbnail and its colour.
pub(crate) struct Prepared {
    /// A JPEG square of at most [`THUMBNAIL_SIDE`] pixels, cropped as its tile is: large
    /// enough to judge on the owner's page and to show sharp on the wall.
    pub thumbnail: Bytes,
    /// Its mean colour as its tile shows it, for the wish list.
    pub colour: [u8; 3],
}

/// Decodes a photo on a blocking thread (the decoder takes its room from the shared decode
/// budget before it allocates; the caller holds the photo's turn) into its thumbnail and
/// colour. A photo that cannot be decoded is 422 `corrupt_image` with the reason.
pub(crate) async fn prepare(bytes: Bytes) -> ApiResult<Prepared> {
    tokio::task::spawn_blocking(move || {
        let pixels = tessera_engine::decode::square_tile_pixels(&bytes, THUMBNAIL_SIDE)
            .map_err(|e| ApiError::unprocessable(ErrorCode::CorruptImage, e))?;
        // The square as decoded (at least the side asked where the photo has it), then made
        // the thumbnail's side at most.
        let side = ((pixels.len() / 3) as f64).sqrt() as u32;
        let square = image::RgbImage::from_raw(side, side, pixels)
            .ok_or_else(|| ApiError::internal("the photo's square is not square"))?;
        let small = if side > THUMBNAIL_SIDE {
            image::imageops::thumbnail(&square, THUMBNAIL_SIDE, THUMBNAIL_SIDE)
        } else {
            square
        };
        let colour = tessera_shared::wishlist::mean_colour(small.as_raw());
        let thumbnail = encode_jpeg(small.as_raw(), small.dimensions(), 85)?;
        Ok(Prepared { thumbnail, colour })
    })
    .await
    .map_err(ApiError::internal)?
}
