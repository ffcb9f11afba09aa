//! Who is asking, and about what: the client id a request carries (the browser's cookie or an
//! API client's `X-Client-Id`), and the job id in a path.

use actix_web::HttpRequest;
use uuid::Uuid;

use crate::error::{ApiError, ApiResult};

/// The cookie that names a browser's client id.
pub const CLIENT_COOKIE: &str = "tessera_client";
/// The header an API client may name its client id with.
pub const CLIENT_HEADER: &str = "X-Client-Id";

/// The client id of a request, and whether it was minted here (then the response sets the cookie).
pub(crate) fn client_id(req: &HttpRequest) -> ApiResult<(Uuid, bool)> {
    if let Some(value) = req.headers().get(CLIENT_HEADER) {
        let id = value
            .to_str()
            .ok()
            .and_then(|v| Uuid::parse_str(v.trim()).ok())
            .ok_or_else(|| {
                ApiError::bad_request(
                    "invalid_client_id",
                    format!("{CLIENT_HEADER} must be a UUID"),
                )
            })?;
        return Ok((id, false));
    }
    if let Some(id) = req
        .cookie(CLIENT_COOKIE)
        .and_then(|c| Uuid::parse_str(c.value()).ok())
    {
        return Ok((id, false));
    }
    Ok((Uuid::new_v4(), true))
}

/// The client a request names (`X-Client-Id`, or the browser's cookie), if any.
pub(crate) fn named_client(req: &HttpRequest) -> ApiResult<Option<Uuid>> {
    let (client, minted) = client_id(req)?;
    Ok((!minted).then_some(client))
}

/// Parses a job id from a path; anything that is not a UUID names no job.
pub fn job_id(raw: &str) -> ApiResult<Uuid> {
    Uuid::parse_str(raw)
        .map_err(|_| ApiError::not_found("job_not_found", format!("no job {raw:?}")))
}

/// The client a stream or a quota counts against: its id (header or cookie), else its address.
pub(crate) fn client_or_address(req: &HttpRequest) -> String {
    let named = req
        .headers()
        .get(CLIENT_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.trim().to_string())
        .or_else(|| req.cookie(CLIENT_COOKIE).map(|c| c.value().to_string()));
    match named {
        Some(id) => format!("client {id}"),
        None => format!("address {:?}", req.peer_addr().map(|a| a.ip())),
    }
}
