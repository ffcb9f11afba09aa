//! `GET /api/v1/jobs/{id}/result`: the finished mosaic, streamed from its blob in ranged reads
//! (a gigapixel PNG never sits in memory), with a strong ETag, immutable caching and single byte
//! ranges (206).

use std::sync::Arc;
use tessera_shared::error_code::ErrorCode;

use actix_web::body::SizedStream;
use actix_web::http::{StatusCode, header};
use actix_web::{HttpMessage as _, HttpRequest, HttpResponse, web};
use bytes::Bytes;

use tessera_shared::jobs::JobState;
use tessera_shared::keys::BlobKey;
use tessera_shared::spec::FileFormat;
use tessera_shared::storage::{BlobStore, StorageError};

use crate::api::doc_types::Binary;
use crate::api::requested_job::RequestedJob;
use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;
use crate::guards::request::HeadRequest;
use crate::imaging::stored_mosaic::{done_result, missing};

/// Bytes read from the blob per chunk of the response.
const CHUNK: u64 = 1 << 20;

/// The finished mosaic in the format the job asked for (PNG, JPEG or TIFF), with byte ranges
/// and ETag.
#[utoipa::path(
    get,
    path = "/api/v1/jobs/{id}/result",
    operation_id = "get_result",
    tag = "results",
    params(
        ("id" = uuid::Uuid, Path, description = "The job's id"),
        ("Range" = Option<String>, Header, nullable = false, description = "One byte range, e.g. bytes=0-1023"),
        ("If-None-Match" = Option<String>, Header, nullable = false, description = "The ETag of the mosaic held"),
    ),
    responses(
        (status = 200, description = "The mosaic", content(
            (inline(Binary) = "image/png"), (inline(Binary) = "image/jpeg"), (inline(Binary) = "image/tiff")),
            headers(("ETag" = String), ("Accept-Ranges" = String))),
        (status = 206, description = "The requested range (Content-Range names it)", content(
            (inline(Binary) = "image/png"), (inline(Binary) = "image/jpeg"), (inline(Binary) = "image/tiff")),
            headers(("Content-Range" = String))),
        (status = 302, description = "With `web.result_link_secs` set: a short-lived read-only link to the mosaic in storage (Location)"),
        (status = 304, description = "Not modified"),
        crate::api::error_sets::FinishedJobErrors,
        (status = 416, description = "The range is outside the mosaic (Content-Range: bytes */size)", body = crate::api_error::ErrorBody),
    ),
)]
pub async fn get(
    req: HttpRequest,
    job: RequestedJob,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let RequestedJob { record, .. } = job;
    if record.state == JobState::Failed {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            ErrorCode::JobFailed,
            format!(
                "the job failed: {}",
                record.error.as_deref().unwrap_or("no reason given")
            ),
        ));
    }
    let format = record.params.spec.format;
    // The PNG is the result itself; another format is a file made beside it.
    let png = done_result(&record)?;
    let key = match format {
        FileFormat::Png => png,
        other => BlobKey::ImageFile {
            job: record.id,
            extension: other.extension(),
        }
        .path(),
    };
    let disposition = content_disposition(&record.params.input_name, format.extension());
    if state.settings.result_link_secs > 0 {
        let lifetime = std::time::Duration::from_secs(state.settings.result_link_secs);
        if let Some(link) = state
            .platform
            .blobs
            .read_link(&key, lifetime, Some(&disposition))
        {
            return Ok(HttpResponse::Found()
                .insert_header((header::LOCATION, link))
                .insert_header((header::CACHE_CONTROL, "private, no-store"))
                .finish());
        }
    }
    let meta = match state.platform.blobs.head(&key).await {
        Ok(meta) => meta,
        Err(StorageError::NotFound(_)) => return Err(missing()),
        Err(e) => return Err(e.into()),
    };
    serve(
        &req,
        state.platform.blobs.clone(),
        key,
        meta.size,
        &meta.etag,
        (format.media_type(), disposition),
    )
}

/// Serves `size` bytes of blob `key` (its `etag`) as `media_type`, with the conditional and
/// ranged answers HTTP gives: 304 for a tag the client holds, 206 for one range, 416 for a
/// range past the end; a HEAD without a read.
fn serve(
    req: &HttpRequest,
    blobs: Arc<dyn BlobStore>,
    key: String,
    size: u64,
    etag: &str,
    (media_type, disposition): (&'static str, String),
) -> ApiResult<HttpResponse> {
    let etag = format!("\"{}\"", etag.trim_matches('"'));

    let response = |status: StatusCode| {
        let mut r = HttpResponse::build(status);
        r.insert_header((header::CONTENT_TYPE, media_type))
            .insert_header((header::ETAG, etag.clone()))
            .insert_header((header::CACHE_CONTROL, "public, max-age=31536000, immutable"))
            .insert_header((header::ACCEPT_RANGES, "bytes"))
            .insert_header((header::CONTENT_DISPOSITION, disposition.clone()));
        r
    };

    if let Some(tags) = req.headers().get(header::IF_NONE_MATCH) {
        let tags = tags.to_str().unwrap_or_default();
        if tags.trim() == "*"
            || tags
                .split(',')
                .any(|t| t.trim().trim_start_matches("W/") == etag)
        {
            return Ok(response(StatusCode::NOT_MODIFIED).finish());
        }
    }

    // A Range that does not apply (If-Range names another version, several ranges) is ignored:
    // the whole body is the correct answer then.
    let if_range_ok = req
        .headers()
        .get(header::IF_RANGE)
        .is_none_or(|v| v.to_str().is_ok_and(|v| v.trim() == etag));
    let range = match req.headers().get(header::RANGE) {
        Some(value) if if_range_ok => parse_range(value.to_str().unwrap_or_default(), size),
        _ => RangeRequest::Whole,
    };
    // A HEAD gets the headers (the size among them) without a read of the mosaic.
    if req.extensions().contains::<HeadRequest>() {
        let empty = || Box::pin(futures_util::stream::empty::<Result<Bytes, actix_web::Error>>());
        match range {
            RangeRequest::Whole => {
                return Ok(response(StatusCode::OK).body(SizedStream::new(size, empty())));
            }
            RangeRequest::Part(start, end) => {
                return Ok(response(StatusCode::PARTIAL_CONTENT)
                    .insert_header((
                        header::CONTENT_RANGE,
                        format!("bytes {start}-{}/{size}", end - 1),
                    ))
                    .body(SizedStream::new(end - start, empty())));
            }
            RangeRequest::Unsatisfiable => {}
        }
    }
    match range {
        RangeRequest::Whole => {
            Ok(response(StatusCode::OK).body(SizedStream::new(size, stream(blobs, key, 0, size))))
        }
        RangeRequest::Part(start, end) => Ok(response(StatusCode::PARTIAL_CONTENT)
            .insert_header((
                header::CONTENT_RANGE,
                format!("bytes {start}-{}/{size}", end - 1),
            ))
            .body(SizedStream::new(
                end - start,
                stream(blobs, key, start, end),
            ))),
        RangeRequest::Unsatisfiable => {
            let mut r = response(StatusCode::RANGE_NOT_SATISFIABLE);
            r.insert_header((header::CONTENT_RANGE, format!("bytes */{size}")));
            r.insert_header((header::CONTENT_TYPE, "application/json"));
            Ok(r.json(serde_json::json!({"error": {
                "code": "range_not_satisfiable",
                "message": format!("the result is {size} bytes long"),
            }})))
        }
    }
}

/// Streams bytes `start..end` of a blob, one ranged read per chunk.
fn stream(
    blobs: Arc<dyn BlobStore>,
    key: String,
    start: u64,
    end: u64,
) -> impl futures_util::Stream<Item = Result<Bytes, actix_web::Error>> + 'static {
    futures_util::stream::unfold(start, move |at| {
        let blobs = blobs.clone();
        let key = key.clone();
        async move {
            if at >= end {
                return None;
            }
            let to = (at + CHUNK).min(end);
            match blobs.get_range(&key, at..to).await {
                Ok(bytes) if !bytes.is_empty() => {
                    let next = at + bytes.len() as u64;
                    Some((Ok(bytes), next))
                }
                Ok(_) => {
                    tracing::error!(%key, at, "result blob ended early");
                    Some((
                        Err(actix_web::error::ErrorInternalServerError("short read")),
                        end,
                    ))
                }
                Err(e) => {
                    tracing::error!(%key, error = %e, "reading the result failed mid-stream");
                    Some((
                        Err(actix_web::error::ErrorInternalServerError("read failed")),
                        end,
                    ))
                }
            }
        }
    })
}

/// What a `Range` header asks of a body of some size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeRequest {
    /// No usable range: send everything.
    Whole,
    /// Bytes `start..end` (end exclusive).
    Part(u64, u64),
    /// A single byte range that lies wholly past the end.
    Unsatisfiable,
}

/// Parses a single `bytes=` range (`a-b`, `a-`, `-n`). Several ranges, other units and syntax
/// errors give [`RangeRequest::Whole`], as RFC 9110 allows.
pub fn parse_range(header: &str, size: u64) -> RangeRequest {
    let Some(spec) = header.trim().strip_prefix("bytes=") else {
        return RangeRequest::Whole;
    };
    if spec.contains(',') {
        return RangeRequest::Whole;
    }
    let Some((a, b)) = spec.trim().split_once('-') else {
        return RangeRequest::Whole;
    };
    let (a, b) = (a.trim(), b.trim());
    let parsed = match (a.is_empty(), b.is_empty()) {
        (false, _) => {
            let Ok(start) = a.parse::<u64>() else {
                return RangeRequest::Whole;
            };
            let end = if b.is_empty() {
                Some(u64::MAX)
            } else {
                b.parse::<u64>().ok().map(|e| e.saturating_add(1))
            };
            match end {
                Some(end) if end > start => (start, end),
                _ => return RangeRequest::Whole,
            }
        }
        (true, false) => {
            let Ok(n) = b.parse::<u64>() else {
                return RangeRequest::Whole;
            };
            if n == 0 {
                return RangeRequest::Unsatisfiable;
            }
            (size.saturating_sub(n), size)
        }
        (true, true) => return RangeRequest::Whole,
    };
    let (start, end) = (parsed.0, parsed.1.min(size));
    if start >= size {
        RangeRequest::Unsatisfiable
    } else {
        RangeRequest::Part(start, end)
    }
}

/// `inline`, named after the photo: an ASCII `filename` for every client, and the name as it
/// is (`filename*`, RFC 8187) for those that read it.
fn content_disposition(input_name: &str, extension: &str) -> String {
    let name = crate::job_view::download_name_as(input_name, extension);
    let ascii: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let encoded: String = name
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    format!("inline; filename=\"{ascii}\"; filename*=UTF-8''{encoded}")
}

#[cfg(test)]
mod tests {
    use super::RangeRequest::*;
    use super::parse_range;

    #[test]
    fn single_ranges() {
        assert_eq!(parse_range("bytes=0-9", 100), Part(0, 10));
        assert_eq!(parse_range("bytes=90-", 100), Part(90, 100));
        assert_eq!(parse_range("bytes=-10", 100), Part(90, 100));
        assert_eq!(parse_range("bytes=-500", 100), Part(0, 100));
        assert_eq!(parse_range("bytes=50-500", 100), Part(50, 100));
        assert_eq!(parse_range("bytes=100-", 100), Unsatisfiable);
        assert_eq!(parse_range("bytes=0-1,5-6", 100), Whole);
        assert_eq!(parse_range("items=0-1", 100), Whole);
        assert_eq!(parse_range("bytes=9-3", 100), Whole);
        assert_eq!(parse_range("bytes=x-", 100), Whole);
    }
}
