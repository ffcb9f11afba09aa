//! Reading multipart fields with hard limits: a field is streamed and cut off at its limit, so no
//! request can make the server buffer more than the limit allows.

use actix_multipart::Field;
use bytes::BytesMut;
use futures_util::StreamExt;

use crate::error::{ApiError, ApiResult};

/// Largest plain text field (a number, a name).
pub const MAX_TEXT_FIELD: usize = 1024;

/// The field's name (`""` when it has none).
pub fn field_name(field: &Field) -> String {
    field.name().unwrap_or_default().to_string()
}

/// The file name the client gave, if any.
pub fn file_name(field: &Field) -> Option<String> {
    field
        .content_disposition()
        .and_then(|cd| cd.get_filename())
        .map(str::to_string)
}

/// Reads a whole field, failing with `too_large` as soon as it passes `limit` bytes.
pub async fn read_limited(
    field: &mut Field,
    limit: u64,
    too_large: impl Fn() -> ApiError,
) -> ApiResult<BytesMut> {
    let mut buf = BytesMut::new();
    while let Some(chunk) = field.next().await {
        let chunk = chunk?;
        if (buf.len() + chunk.len()) as u64 > limit {
            return Err(too_large());
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf)
}

/// Reads a short text field.
pub async fn read_text(field: &mut Field, name: &str) -> ApiResult<String> {
    let bytes = read_limited(field, MAX_TEXT_FIELD as u64, || {
        ApiError::bad_request(
            "invalid_parameter",
            format!("{name} is longer than {MAX_TEXT_FIELD} bytes"),
        )
    })
    .await?;
    let text = String::from_utf8(bytes.to_vec()).map_err(|_| {
        ApiError::bad_request("invalid_parameter", format!("{name} is not UTF-8 text"))
    })?;
    Ok(text.trim().to_string())
}
