//! From the SDK's errors to the ports' semantic ones.
//!
//! Messages carry the status and the service's error code, never a URL (it would hold the SAS);
//! for the same reason the SDK's error is not kept as the source.

use azure_core::error::ErrorKind;
use azure_core::http::StatusCode;
use tessera_shared::storage::StorageError;

/// What can go wrong before the first request: configuration.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum AzureError {
    #[error("Azure storage configuration: {0}")]
    Config(String),
}

/// The status and error code of a failed request, when the service answered.
pub(crate) fn http_failure(e: &azure_core::Error) -> Option<(u16, Option<&str>)> {
    match e.kind() {
        ErrorKind::HttpResponse {
            status, error_code, ..
        } => Some((u16::from(*status), error_code.as_deref())),
        _ => None,
    }
}

/// Maps an SDK error about `what` (a queue, a message id, a blob key) to a port error.
pub(crate) fn map(e: azure_core::Error, what: &str) -> StorageError {
    let Some((status, code)) = http_failure(&e) else {
        return match e.kind() {
            ErrorKind::Connection | ErrorKind::Io => {
                StorageError::Transient(format!("{what}: {}", describe(&e)).into())
            }
            _ => StorageError::Other(format!("{what}: {}", describe(&e)).into()),
        };
    };
    let code_str = code.unwrap_or("");
    let detail = format!("{what}: HTTP {status} {code_str}");
    match (status, code_str) {
        (_, "PopReceiptMismatch") => StorageError::ReceiptMismatch(what.to_owned()),
        (404, _) => StorageError::NotFound(what.to_owned()),
        (409, "BlobAlreadyExists" | "QueueAlreadyExists" | "ContainerAlreadyExists") => {
            StorageError::AlreadyExists(what.to_owned())
        }
        (409, "QueueBeingDeleted" | "ContainerBeingDeleted") => {
            StorageError::Transient(detail.into())
        }
        (412, _) => StorageError::Precondition(what.to_owned()),
        (413, _) | (_, "RequestBodyTooLarge" | "MessageTooLarge") => StorageError::TooLarge {
            size: 0,
            limit: tessera_shared::storage::MAX_MESSAGE_BYTES,
        },
        (400, _) => StorageError::Invalid(detail),
        (408 | 429, _) => StorageError::Transient(detail.into()),
        (500..=599, _) => StorageError::Transient(detail.into()),
        _ => StorageError::Other(detail.into()),
    }
}

/// True when the service answered with this status.
pub(crate) fn is_status(e: &azure_core::Error, status: StatusCode) -> bool {
    e.http_status() == Some(status)
}

/// True when the service answered with this error code.
pub(crate) fn has_code(e: &azure_core::Error, code: &str) -> bool {
    http_failure(e).and_then(|(_, c)| c) == Some(code)
}

/// The error's text with its causes, without the query of any URL (which would carry the SAS).
fn describe(e: &azure_core::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    redact_queries(&text)
}

/// Drops the query of every URL in `text` (where a SAS would be).
fn redact_queries(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("http") {
        out.push_str(&rest[..start]);
        let url = &rest[start..];
        let end = url
            .find(|c: char| c.is_whitespace() || c == ')' || c == '"')
            .unwrap_or(url.len());
        match url[..end].find('?') {
            Some(q) => {
                out.push_str(&url[..q]);
                out.push_str("?<redacted>");
            }
            None => out.push_str(&url[..end]),
        }
        rest = &url[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: StatusCode, code: &str) -> azure_core::Error {
        ErrorKind::HttpResponse {
            status,
            error_code: Some(code.into()),
            raw_response: None,
        }
        .into_error()
    }

    #[test]
    fn queries_of_urls_in_messages_are_redacted() {
        assert_eq!(
            redact_queries(
                "error sending request for url (http://h:1/a/q?sv=1&sig=abc%3D): refused"
            ),
            "error sending request for url (http://h:1/a/q?<redacted>): refused"
        );
        assert_eq!(redact_queries("no url here"), "no url here");
    }

    #[test]
    fn statuses_and_codes_map_to_meanings() {
        assert!(matches!(
            map(http(StatusCode::NotFound, "QueueNotFound"), "q"),
            StorageError::NotFound(_)
        ));
        assert!(matches!(
            map(http(StatusCode::Conflict, "BlobAlreadyExists"), "c/b"),
            StorageError::AlreadyExists(_)
        ));
        assert!(matches!(
            map(
                http(StatusCode::PreconditionFailed, "ConditionNotMet"),
                "c/b"
            ),
            StorageError::Precondition(_)
        ));
        assert!(matches!(
            map(http(StatusCode::BadRequest, "PopReceiptMismatch"), "id"),
            StorageError::ReceiptMismatch(_)
        ));
        assert!(matches!(
            map(
                http(StatusCode::PayloadTooLarge, "RequestBodyTooLarge"),
                "q"
            ),
            StorageError::TooLarge { .. }
        ));
        assert!(matches!(
            map(http(StatusCode::ServiceUnavailable, "ServerBusy"), "q"),
            StorageError::Transient(_)
        ));
        assert!(matches!(
            map(http(StatusCode::InternalServerError, "InternalError"), "q"),
            StorageError::Transient(_)
        ));
        assert!(matches!(
            map(
                http(StatusCode::BadRequest, "OutOfRangeQueryParameterValue"),
                "q"
            ),
            StorageError::Invalid(_)
        ));
        assert!(matches!(
            map(http(StatusCode::Forbidden, "AuthenticationFailed"), "q"),
            StorageError::Other(_)
        ));
        assert!(matches!(
            map(ErrorKind::Connection.into_error(), "q"),
            StorageError::Transient(_)
        ));
        assert!(matches!(
            map(ErrorKind::Io.into_error(), "q"),
            StorageError::Transient(_)
        ));
    }
}
