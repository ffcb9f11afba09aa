//! Reading multipart fields with hard limits: a field is streamed and cut off at its limit, so no
//! request can make the server buffer more than the limit allows.

use std::time::{Duration, Instant};
use tessera_shared::error_code::ErrorCode;

use actix_multipart::{Field, Multipart};
use actix_web::HttpRequest;
use actix_web::http::{StatusCode, header};
use bytes::{Bytes, BytesMut};
use futures_util::StreamExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::api_error::{ApiError, ApiResult};
use crate::web_settings::WebSettings;

/// Times a request body as it arrives: it is cut off (408) when nothing comes for `idle`, or
/// when, past the first `idle`, it averages under `min_rate` bytes a second. A client that
/// stalls cannot hold its buffers, its upload slot or its spool file for long.
#[derive(Debug, Clone)]
pub struct BodyClock {
    started: Instant,
    idle: Duration,
    min_rate: u64,
    received: u64,
}

impl BodyClock {
    pub fn new(settings: &WebSettings) -> Self {
        BodyClock {
            started: Instant::now(),
            idle: Duration::from_secs(settings.body_read_timeout_secs.max(1)),
            min_rate: settings.min_upload_bytes_per_sec,
            received: 0,
        }
    }

    /// The next chunk of `field`, in time.
    pub async fn chunk(&mut self, field: &mut Field) -> ApiResult<Option<Bytes>> {
        let Ok(next) = tokio::time::timeout(self.idle, field.next()).await else {
            return Err(self.stalled());
        };
        let Some(chunk) = next.transpose()? else {
            return Ok(None);
        };
        self.received += chunk.len() as u64;
        let elapsed = self.started.elapsed();
        if elapsed > self.idle
            && (self.received as f64) < self.min_rate as f64 * elapsed.as_secs_f64()
        {
            return Err(ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                ErrorCode::UploadTooSlow,
                format!(
                    "the upload came at {} bytes a second, under the {} the service needs",
                    (self.received as f64 / elapsed.as_secs_f64()) as u64,
                    self.min_rate
                ),
            ));
        }
        Ok(Some(chunk))
    }

    /// The next field of `payload`, in time.
    pub async fn field(&mut self, payload: &mut Multipart) -> ApiResult<Option<Field>> {
        match tokio::time::timeout(self.idle, payload.next()).await {
            Ok(next) => Ok(next.transpose()?),
            Err(_) => Err(self.stalled()),
        }
    }

    fn stalled(&self) -> ApiError {
        ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            ErrorCode::UploadStalled,
            format!(
                "nothing of the upload arrived for {} s: send it again",
                self.idle.as_secs()
            ),
        )
    }
}

/// Whether a refusal leaves a body that may still be read (a stalled or broken one may not).
pub fn drainable(e: &ApiError) -> bool {
    !matches!(
        e.code,
        ErrorCode::BadMultipart | ErrorCode::UploadStalled | ErrorCode::UploadTooSlow
    )
}

/// The uploads read at once: `web.max_uploads_in_flight` in all, and at most half of them (at
/// least one) from one address (an IPv6 /64), so that slow uploads from one place cannot hold
/// every slot.
#[derive(Debug, Clone)]
pub struct UploadSlots {
    all: std::sync::Arc<Semaphore>,
    per_address: usize,
    held: crate::guards::client::AddressCounts,
}

/// One upload's slot, given back when dropped.
pub struct UploadSlot {
    _permit: OwnedSemaphorePermit,
    _address: crate::guards::client::AddressHold,
}

impl UploadSlots {
    pub fn new(total: usize) -> Self {
        let total = total.max(1);
        UploadSlots {
            all: std::sync::Arc::new(Semaphore::new(total)),
            per_address: (total / 2).max(1),
            held: Default::default(),
        }
    }

    /// A slot for an upload from `address`, or 503.
    pub fn take(&self, address: Option<std::net::IpAddr>) -> ApiResult<UploadSlot> {
        let busy = |why: &str| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::TooManyUploads,
                why,
            )
            .retry_after(Duration::from_secs(5))
        };
        let held = self.held.hold(address, self.per_address).ok_or_else(|| {
            busy(
                "your address is sending as many uploads as one address may at once: try \
                 again when one has finished",
            )
        })?;
        let permit = self.all.clone().try_acquire_owned().map_err(|_| {
            busy("the service is reading as many uploads as it takes at once: try again shortly")
        })?;
        Ok(UploadSlot {
            _permit: permit,
            _address: held,
        })
    }
}

/// Largest plain text field (a number, a name).
pub const MAX_TEXT_FIELD: usize = 1024;

/// Refuses, before any of the body is read, a request whose body is not `multipart/form-data`
/// (`what` names the upload in the message: "a job", "a library").
pub fn require_multipart(req: &HttpRequest, what: &str) -> ApiResult<()> {
    let given = req
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).to_string())
        .unwrap_or_default();
    let essence = given.split(';').next().unwrap_or_default().trim();
    if essence.eq_ignore_ascii_case("multipart/form-data") {
        return Ok(());
    }
    let sent = if essence.is_empty() {
        "a body without a Content-Type".to_string()
    } else {
        format!("{:?}", essence.chars().take(100).collect::<String>())
    };
    Err(ApiError::unsupported_media(
        ErrorCode::UnsupportedMediaType,
        format!("{what} must be sent as multipart/form-data (a form with files), not {sent}"),
    ))
}

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
    clock: &mut BodyClock,
    limit: u64,
    too_large: impl Fn() -> ApiError,
) -> ApiResult<BytesMut> {
    let mut buf = BytesMut::new();
    while let Some(chunk) = clock.chunk(field).await? {
        if (buf.len() + chunk.len()) as u64 > limit {
            return Err(too_large());
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf)
}

/// Reads a short text field.
pub async fn read_text(field: &mut Field, clock: &mut BodyClock, name: &str) -> ApiResult<String> {
    let bytes = read_limited(field, clock, MAX_TEXT_FIELD as u64, || {
        ApiError::bad_request(
            ErrorCode::InvalidParameter,
            format!("{name} is longer than {MAX_TEXT_FIELD} bytes"),
        )
    })
    .await?;
    let text = String::from_utf8(bytes.to_vec()).map_err(|_| {
        ApiError::bad_request(
            ErrorCode::InvalidParameter,
            format!("{name} is not UTF-8 text"),
        )
    })?;
    Ok(text.trim().to_string())
}

/// How much of a refused request is read after the refusal, beyond the upload limit.
pub const DRAIN_SLACK: u64 = 1 << 20;

/// After a refusal mid-request: reads and discards what is left, the refused `field` first, but
/// at most `budget` bytes, then stops. A client still sending a body it was refused for usually
/// only sees the answer once the server has read its body; past the budget the server answers
/// anyway and the connection closes, so an endless upload is cut off instead of read through.
///
/// The refused field is drained through the field itself: asking the multipart stream for the
/// next field would skip the rest of this one without counting it.
pub async fn drain(payload: &mut Multipart, field: Field, budget: u64) {
    // However slowly the rest comes, the answer waits no longer than this.
    let _ = tokio::time::timeout(
        Duration::from_secs(10),
        drain_within(payload, field, budget),
    )
    .await;
}

async fn drain_within(payload: &mut Multipart, field: Field, budget: u64) {
    let mut left = budget;
    let mut next = Some(field);
    while let Some(mut field) = next.take() {
        while let Some(Ok(chunk)) = field.next().await {
            left = left.saturating_sub(chunk.len() as u64);
            if left == 0 {
                return;
            }
        }
        // A field must be gone before the next is asked for, or the next never yields.
        drop(field);
        next = match payload.next().await {
            Some(Ok(field)) => Some(field),
            _ => None,
        };
    }
}

/// A form's yes-or-no field: `true` or `false`, absent is `false`.
pub(crate) fn parse_bool(name: &str, text: Option<&str>) -> ApiResult<bool> {
    match text {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(other) => Err(ApiError::bad_request(
            ErrorCode::InvalidParameter,
            format!("{name} must be true or false, not {other:?}"),
        )),
    }
}

#[cfg(test)]
mod slot_tests {
    use super::*;

    #[test]
    fn one_address_holds_at_most_half_of_the_upload_slots() {
        let slots = UploadSlots::new(8);
        let a: std::net::IpAddr = "10.0.0.1".parse().unwrap();
        let b: std::net::IpAddr = "2001:db8::1".parse().unwrap();
        let held: Vec<_> = (0..4).map(|_| slots.take(Some(a)).unwrap()).collect();
        assert_eq!(slots.take(Some(a)).err().unwrap().code, "too_many_uploads");
        // Another address still gets in, and one of the same /64 counts with it.
        let others: Vec<_> = (0..4).map(|_| slots.take(Some(b)).unwrap()).collect();
        let same_net: std::net::IpAddr = "2001:db8::2".parse().unwrap();
        assert!(slots.take(Some(same_net)).is_err());
        drop(held);
        assert!(slots.take(Some(a)).is_ok());
        drop(others);
    }
}
