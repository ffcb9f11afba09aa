//! The API's one error type. Every failure maps to a status on purpose and a stable `code`;
//! clients get `{"error":{"code":"…","message":"…"}}`. Internal failures are 500 with a safe
//! message, their cause logged here and never sent.
//!
//! # Error policy
//!
//! What a client sees:
//! - its own mistakes: 400 (a parameter), 404 (an id), 409 (a name taken, a job still running),
//!   413/415/422 (what it uploaded), with the field or the reason in the message;
//! - limits: 429 with `Retry-After` (active jobs, event streams, sign-ins), 507 with
//!   `Retry-After` when storage is full;
//! - storage that is away for a moment (`StorageError::Transient`): 503 `storage_unavailable`
//!   with `Retry-After`, worth retrying as is;
//! - anything else on our side: 500 `internal`, the cause in the log, never in the answer.
//!
//! Behind the queues (the listener runtime, `tessera_shared::runtime`): a storage error is retried
//! with back-off, its cause logged and carried with the message (`last_error`); a message whose
//! handler says no attempt can succeed (it does not decode, names what does not exist, breaks a
//! rule) is poison at once; a message over the poison threshold is poison with its last error. A
//! poisoned message's job is failed with the reason, and a job that stalls anyway is failed by
//! the reconciler: no job is left unfinished.

use actix_web::error::JsonPayloadError;
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError, web};
use serde::Serialize;
use utoipa::{ToResponse, ToSchema};

use tessera_shared::error_code::ErrorCode;
use tessera_shared::jobs::JobError;
use tessera_shared::libraries::LibraryError;
use tessera_shared::storage::StorageError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    /// Stable, machine-readable: clients branch on it.
    pub code: ErrorCode,
    /// For a person; never carries internal details.
    pub message: String,
    /// Seconds a client should wait before trying again (`Retry-After`).
    pub retry_after: Option<u64>,
    /// The request's field the error is about, when the code and the message do not say.
    pub about: Option<&'static str>,
}

/// The body of every error answer.
#[derive(Serialize, ToSchema, ToResponse)]
#[schema(as = Error)]
#[response(description = "An error: a stable code and a message for people")]
pub struct ErrorBody<'a> {
    error: ErrorDetail<'a>,
}

impl<'a> ErrorBody<'a> {
    pub fn new(code: &'a str, message: &'a str) -> Self {
        ErrorBody {
            error: ErrorDetail {
                code,
                message,
                field: None,
            },
        }
    }
}

#[derive(Serialize, ToSchema)]
struct ErrorDetail<'a> {
    /// Stable and machine-readable: clients branch on it (`ErrorCode`).
    code: &'a str,
    /// For a person.
    message: &'a str,
    /// The request's field the error is about, when it is about one (`image`, `cells`, ...):
    /// a form marks that field and shows the message beside it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    field: Option<&'a str>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            retry_after: None,
            about: None,
        }
    }

    /// The request's field the error is about: the code's own, else the first word of the
    /// message that names a job's option (`blend must be 0 to 100`, `give either print or
    /// cells`).
    pub fn field(&self) -> Option<&'static str> {
        self.about.or(self.code.field()).or_else(|| {
            self.message
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .find_map(|word| match word {
                    "tile_height" => Some("tile_size"),
                    word => tessera_shared::spec::field(word).map(|f| f.name),
                })
        })
    }

    /// The same error, about the request's field `field`.
    pub fn with_field(mut self, field: &'static str) -> Self {
        self.about = Some(field);
        self
    }

    /// The same error, its message after `prefix` (a client's error only: ours stay as they
    /// are).
    pub fn prefixed(mut self, prefix: &str) -> Self {
        if !self.status.is_server_error() {
            self.message = format!("{prefix}{}", self.message);
        }
        self
    }

    /// The same error, asking the client to wait `after` before trying again.
    pub fn retry_after(mut self, after: std::time::Duration) -> Self {
        self.retry_after = Some(after.as_secs().max(1));
        self
    }

    /// A request that cannot be understood: a missing, malformed or out-of-range parameter.
    pub fn bad_request(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// Well-formed but unusable content (a corrupt image, an unknown library, ...).
    pub fn unprocessable(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, code, message)
    }

    pub fn not_found(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, code, message)
    }

    pub fn too_large(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, code, message)
    }

    pub fn unsupported_media(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, code, message)
    }

    /// Something on our side failed: logs `cause` and answers with a safe message.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            ErrorCode::Internal,
            "internal error; the cause has been logged",
        )
    }

    /// 507: storage has no room for what was sent; worth trying again later.
    pub fn insufficient_storage(cause: impl std::fmt::Display) -> Self {
        tracing::warn!(error = %cause, "storage full");
        Self::new(
            StatusCode::INSUFFICIENT_STORAGE,
            ErrorCode::InsufficientStorage,
            "storage is full; try again later",
        )
        .retry_after(std::time::Duration::from_secs(60))
    }

    /// Storage failures: full is 507, transient ones are 503 (worth retrying), the rest internal.
    pub fn storage(cause: StorageError) -> Self {
        if let StorageError::Full(_) = cause {
            return Self::insufficient_storage(cause);
        }
        if cause.is_transient() {
            tracing::warn!(error = %cause, "storage unavailable");
            Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::StorageUnavailable,
                "storage is unavailable; try again shortly",
            )
        } else {
            Self::internal(cause)
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {}: {}",
            self.status.as_u16(),
            self.code,
            self.message
        )
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status);
        match self.retry_after {
            Some(seconds) => {
                response.insert_header(("Retry-After", seconds.to_string()));
            }
            None if self.status == StatusCode::SERVICE_UNAVAILABLE => {
                response.insert_header(("Retry-After", "1"));
            }
            None => {}
        }
        response.json(ErrorBody {
            error: ErrorDetail {
                code: self.code.as_str(),
                message: &self.message,
                field: self.field(),
            },
        })
    }
}

/// A job specification refused: malformed fields are 400, unusable ones 422, each with its code.
impl From<tessera_shared::spec::SpecError> for ApiError {
    fn from(e: tessera_shared::spec::SpecError) -> Self {
        use tessera_shared::spec::SpecError;
        let about = e.field();
        let error = match e {
            SpecError::Invalid { code, message } => ApiError::bad_request(code, message),
            SpecError::Unusable { code, message } => ApiError::unprocessable(code, message),
        };
        ApiError { about, ..error }
    }
}

impl From<StorageError> for ApiError {
    fn from(e: StorageError) -> Self {
        ApiError::storage(e)
    }
}

impl From<JobError> for ApiError {
    fn from(e: JobError) -> Self {
        match e {
            JobError::NotFound(id) => {
                ApiError::not_found(ErrorCode::JobNotFound, format!("no job {id}"))
            }
            JobError::Corrupt(..) => ApiError::internal(e),
            JobError::Storage(e) => ApiError::storage(e),
        }
    }
}

impl From<LibraryError> for ApiError {
    fn from(e: LibraryError) -> Self {
        match e {
            LibraryError::NotFound(id) => {
                ApiError::not_found(ErrorCode::LibraryNotFound, format!("no library {id:?}"))
            }
            LibraryError::BadId(_) => {
                ApiError::bad_request(ErrorCode::InvalidLibraryId, e.to_string())
            }
            LibraryError::Exists { .. } => ApiError::new(
                StatusCode::CONFLICT,
                ErrorCode::LibraryExists,
                e.to_string(),
            ),
            LibraryError::NotOwner(_) => ApiError::new(
                StatusCode::FORBIDDEN,
                ErrorCode::NotLibraryOwner,
                e.to_string(),
            ),
            LibraryError::Changed(_) => ApiError::new(
                StatusCode::CONFLICT,
                ErrorCode::LibraryChanged,
                e.to_string(),
            ),
            LibraryError::InUse { .. } => {
                ApiError::new(StatusCode::CONFLICT, ErrorCode::LibraryInUse, e.to_string())
            }
            LibraryError::Corrupt(..) => ApiError::internal(e),
            LibraryError::Storage(e) => ApiError::storage(e),
        }
    }
}

impl From<tessera_shared::events::EventError> for ApiError {
    fn from(e: tessera_shared::events::EventError) -> Self {
        use tessera_shared::events::EventError;
        match e {
            EventError::NotFound(_) => ApiError::not_found(ErrorCode::EventNotFound, e.to_string()),
            EventError::Corrupt(..) => ApiError::internal(e),
            EventError::Storage(e) => ApiError::storage(e),
        }
    }
}

impl From<actix_multipart::MultipartError> for ApiError {
    fn from(e: actix_multipart::MultipartError) -> Self {
        use actix_multipart::MultipartError as M;
        match e {
            M::ContentTypeMissing | M::ContentTypeParse | M::ContentTypeIncompatible => {
                ApiError::unsupported_media(
                    ErrorCode::UnsupportedMediaType,
                    "send the request as multipart/form-data",
                )
            }
            e => ApiError::bad_request(
                ErrorCode::BadMultipart,
                format!("the multipart body is unreadable: {e}"),
            ),
        }
    }
}

/// A body that is not JSON, or not the JSON a route expects.
fn json_error(e: JsonPayloadError) -> ApiError {
    match e {
        JsonPayloadError::ContentType => ApiError::unsupported_media(
            ErrorCode::UnsupportedMediaType,
            "send the request body as application/json",
        ),
        JsonPayloadError::Overflow { limit }
        | JsonPayloadError::OverflowKnownLength { limit, .. } => ApiError::too_large(
            ErrorCode::BodyTooLarge,
            format!("the JSON body is over the limit of {limit} bytes"),
        ),
        JsonPayloadError::Deserialize(e) if e.is_data() => ApiError::bad_request(
            ErrorCode::InvalidParameter,
            format!("the JSON body does not have the expected fields: {e}"),
        ),
        JsonPayloadError::Deserialize(e) => ApiError::bad_request(
            ErrorCode::MalformedJson,
            format!("the request body is not valid JSON: {e}"),
        ),
        e => ApiError::bad_request(
            ErrorCode::MalformedJson,
            format!("the JSON body could not be read: {e}"),
        ),
    }
}

/// Makes the extractors' own refusals (a JSON body, a query string, a path segment that does
/// not parse) answer in the API's error shape instead of actix's plain text. Registered app-wide,
/// so every route that takes `web::Json`, `web::Query` or a typed `web::Path` gets them.
pub fn configure_extractors(cfg: &mut web::ServiceConfig) {
    cfg.app_data(web::JsonConfig::default().error_handler(|e, _| json_error(e).into()))
        .app_data(web::QueryConfig::default().error_handler(|e, _| {
            ApiError::bad_request(
                ErrorCode::InvalidParameter,
                format!("the query string is invalid: {e}"),
            )
            .into()
        }))
        .app_data(web::FormConfig::default().error_handler(|e, _| {
            use actix_web::error::UrlencodedError;
            match e {
                UrlencodedError::ContentType => ApiError::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    ErrorCode::UnsupportedMediaType,
                    "send the form as application/x-www-form-urlencoded",
                ),
                e => ApiError::bad_request(
                    ErrorCode::InvalidParameter,
                    format!("the form is invalid: {e}"),
                ),
            }
            .into()
        }))
        .app_data(web::PathConfig::default().error_handler(|e, _| {
            ApiError::not_found(ErrorCode::NotFound, format!("no such resource: {e}")).into()
        }));
}

/// A JSON 404 for paths no route matches.
pub async fn no_route() -> Result<HttpResponse, ApiError> {
    Err(ApiError::not_found(ErrorCode::NoRoute, "no such endpoint"))
}

pub type ApiResult<T> = Result<T, ApiError>;
