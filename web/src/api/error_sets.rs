//! The error answers operations share, each a set named once for the API document: an
//! operation lists the sets it may answer with (`responses(..., FinishedJobErrors)`) instead of
//! one line per status. Each answer is the document's `ErrorBody` response.

use utoipa::IntoResponses;

use crate::api_error::ErrorBody;

/// Storage is unavailable: 503.
#[derive(IntoResponses)]
pub enum StorageErrors {
    #[response(status = 503)]
    Unavailable(#[ref_response] ErrorBody<'static>),
}

/// A job or library looked up by id: no such one (404), or storage unavailable (503).
#[derive(IntoResponses)]
pub enum LookupErrors {
    /// job_private: a private job, to someone neither its owner nor holding its share link.
    #[response(status = 403)]
    Private(#[ref_response] ErrorBody<'static>),
    #[response(status = 404)]
    NotFound(#[ref_response] ErrorBody<'static>),
    #[response(status = 503)]
    Unavailable(#[ref_response] ErrorBody<'static>),
}

/// What a finished job's mosaic is read from: no such job (404), a job not done (409), or
/// storage unavailable (503).
#[derive(IntoResponses)]
pub enum FinishedJobErrors {
    /// job_private: a private job, to someone neither its owner nor holding its share link.
    #[response(status = 403)]
    Private(#[ref_response] ErrorBody<'static>),
    #[response(status = 404)]
    NotFound(#[ref_response] ErrorBody<'static>),
    #[response(status = 409)]
    NotDone(#[ref_response] ErrorBody<'static>),
    #[response(status = 503)]
    Unavailable(#[ref_response] ErrorBody<'static>),
}

/// A part of a finished mosaic by its address (a cell, a tile, a level): as
/// [`FinishedJobErrors`], and a malformed address (400).
#[derive(IntoResponses)]
pub enum AddressedErrors {
    /// job_private: a private job, to someone neither its owner nor holding its share link.
    #[response(status = 403)]
    Private(#[ref_response] ErrorBody<'static>),
    #[response(status = 400)]
    BadAddress(#[ref_response] ErrorBody<'static>),
    #[response(status = 404)]
    NotFound(#[ref_response] ErrorBody<'static>),
    #[response(status = 409)]
    NotDone(#[ref_response] ErrorBody<'static>),
    #[response(status = 503)]
    Unavailable(#[ref_response] ErrorBody<'static>),
}

/// A change to something that has an owner (cancel, delete): a malformed or forged request
/// (400), not its owner (403), no such one (404), a state that does not allow it (409), or
/// storage unavailable (503).
#[derive(IntoResponses)]
pub enum ChangeErrors {
    #[response(status = 400)]
    BadRequest(#[ref_response] ErrorBody<'static>),
    #[response(status = 403)]
    NotTheOwner(#[ref_response] ErrorBody<'static>),
    #[response(status = 404)]
    NotFound(#[ref_response] ErrorBody<'static>),
    #[response(status = 409)]
    Conflict(#[ref_response] ErrorBody<'static>),
    #[response(status = 503)]
    Unavailable(#[ref_response] ErrorBody<'static>),
}

/// An upload: a malformed form (400), a body too slow (408) or too large (413), a file of a
/// kind not read (415), or content that cannot be used (422).
#[derive(IntoResponses)]
pub enum UploadErrors {
    #[response(status = 400)]
    BadForm(#[ref_response] ErrorBody<'static>),
    #[response(status = 408)]
    TooSlow(#[ref_response] ErrorBody<'static>),
    #[response(status = 413)]
    TooLarge(#[ref_response] ErrorBody<'static>),
    #[response(status = 415)]
    UnsupportedType(#[ref_response] ErrorBody<'static>),
    #[response(status = 422)]
    Unusable(#[ref_response] ErrorBody<'static>),
}
