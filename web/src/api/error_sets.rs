//! The error answers operations share, each a set named once for the API document: an
//! operation lists the sets it may answer with (`responses(..., FinishedJobErrors)`) instead of
//! one line per status. Each answer is the document's `ErrorBody` response.

use utoipa::IntoResponses;

use crate::api_error::ErrorBody;

/// A set of error answers: its doc, its name, and each answer's status and name (with its
/// own doc where the status alone does not say it).
macro_rules! error_set {
    ($(#[$doc:meta])* $name:ident { $($(#[$answer_doc:meta])* $status:literal $answer:ident),* $(,)? }) => {
        $(#[$doc])*
        #[derive(IntoResponses)]
        pub enum $name {
            $(
                $(#[$answer_doc])*
                #[response(status = $status)]
                $answer(#[ref_response] ErrorBody<'static>),
            )*
        }
    };
}

error_set! {
    /// Storage is unavailable: 503.
    StorageErrors { 503 Unavailable }
}

error_set! {
    /// A job or library looked up by id: no such one (404), or storage unavailable (503).
    LookupErrors {
        /// job_private: a private job, to someone neither its owner nor holding its share link.
        403 Private,
        404 NotFound,
        503 Unavailable,
    }
}

error_set! {
    /// What a finished job's mosaic is read from: no such job (404), a job not done (409), or
    /// storage unavailable (503).
    FinishedJobErrors {
        /// job_private: a private job, to someone neither its owner nor holding its share link.
        403 Private,
        404 NotFound,
        409 NotDone,
        503 Unavailable,
    }
}

error_set! {
    /// A part of a finished mosaic by its address (a cell, a tile, a level): as
    /// [`FinishedJobErrors`], and a malformed address (400).
    AddressedErrors {
        /// job_private: a private job, to someone neither its owner nor holding its share link.
        403 Private,
        400 BadAddress,
        404 NotFound,
        409 NotDone,
        503 Unavailable,
    }
}

error_set! {
    /// A change to something that has an owner (cancel, delete): a malformed or forged request
    /// (400), not its owner (403), no such one (404), a state that does not allow it (409), or
    /// storage unavailable (503).
    ChangeErrors {
        400 BadRequest,
        403 NotTheOwner,
        404 NotFound,
        409 Conflict,
        503 Unavailable,
    }
}

error_set! {
    /// An upload: a malformed form (400), a body too slow (408) or too large (413), a file of a
    /// kind not read (415), or content that cannot be used (422).
    UploadErrors {
        400 BadForm,
        408 TooSlow,
        413 TooLarge,
        415 UnsupportedType,
        422 Unusable,
    }
}

error_set! {
    /// An owner's route of an event: not its owner (403), no such event (404).
    OwnedEventErrors {
        /// not_event_owner: neither the event's owner nor, where the route takes one, its wall
        /// link or a guest's token.
        403 NotEventOwner,
        /// event_not_found
        404 NotFound,
    }
}
