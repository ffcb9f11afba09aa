//! Every error code the service answers with, in one enum, each declared once in [`CODES`]:
//! its stable name (what clients branch on), what it means, and the form field it is about, if
//! any (the page marks that field and shows the server's message beside it).

use serde::{Serialize, Serializer};

/// A stable, machine-readable error code (`snake_case` on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// Adaptive tile sizes were asked for with a background other than the library's.
    AdaptiveBackground,
    /// Grout was asked for with adaptive tile sizes.
    AdaptiveGrout,
    /// A floor on uses was asked for with adaptive tile sizes.
    AdaptiveMinUses,
    /// The largest adaptive size is not the smallest doubled.
    AdaptiveNotDoubling,
    /// Adaptive tile sizes were asked for with tiles that are not square.
    AdaptiveNotSquare,
    /// The largest adaptive squares alone are more than the uniform grid's tiles.
    AdaptiveTooCoarse,
    /// The archive holds more files or bytes than a library upload may.
    ArchiveTooLarge,
    /// The archive cannot be read.
    BadArchive,
    /// The multipart body cannot be read.
    BadMultipart,
    /// The tile address is not a pyramid tile's.
    BadTileName,
    /// The body is larger than this request may send.
    BodyTooLarge,
    /// The cell is outside the mosaic.
    CellOutOfRange,
    /// The job's cell map is not there.
    CellsMissing,
    /// The client went away before the work was done.
    ClientGone,
    /// Two fields were given that exclude each other.
    ConflictingParameters,
    /// The image cannot be decoded.
    CorruptImage,
    /// A change was asked from another site.
    CrossSiteRequest,
    /// A field was given twice.
    DuplicateField,
    /// The upload is empty.
    EmptyUpload,
    /// The image decodes larger than this service takes.
    ImageTooLarge,
    /// The library import took longer than an upload may.
    ImportTooLong,
    /// Storage has no room for it.
    InsufficientStorage,
    /// Something failed on the server's side (the cause is logged).
    Internal,
    /// The client id is not a UUID.
    InvalidClientId,
    /// The library id is malformed.
    InvalidLibraryId,
    /// A field is malformed.
    InvalidParameter,
    /// The webhook is not an address that can be called back.
    InvalidWebhook,
    /// The job is still running.
    JobActive,
    /// The job has ended.
    JobEnded,
    /// The job failed.
    JobFailed,
    /// The job is not done yet.
    JobNotDone,
    /// No such job.
    JobNotFound,
    /// The mosaic is over the size made unasked.
    LargeOutput,
    /// The library changed while it was being edited: send the edit again.
    LibraryChanged,
    /// A library of that name exists.
    LibraryExists,
    /// The library is in use by a job.
    LibraryInUse,
    /// No such library.
    LibraryNotFound,
    /// The library has too few tiles for the repetition radius.
    LibraryTooSmall,
    /// The JSON body cannot be read.
    MalformedJson,
    /// The path does not take that method.
    MethodNotAllowed,
    /// A required field is missing.
    MissingParameter,
    /// The upload holds no images.
    NoImages,
    /// No such path.
    NoRoute,
    /// The file is not an image.
    NotAnImage,
    /// Not found.
    NotFound,
    /// The library belongs to someone else.
    NotLibraryOwner,
    /// The event belongs to someone else.
    NotEventOwner,
    /// The photo was sent by someone else.
    NotYourPhoto,
    /// There is no such event.
    EventNotFound,
    /// There is no such photo in the event.
    PhotoNotFound,
    /// The contribute link's token is missing or wrong.
    BadContributeToken,
    /// The event takes no more photos.
    ContributionsClosed,
    /// The guest has sent as many photos as the event takes from one guest.
    GuestPhotoLimit,
    /// The service is not ready.
    /// The event holds as many photos as its owner lets it take.
    EventPhotoLimit,
    NotReady,
    /// The job belongs to someone else.
    NotYourJob,
    /// The job is private.
    JobPrivate,
    /// A field is out of its range.
    OutOfRange,
    /// The mosaic would be over the largest this service makes.
    OutputTooLarge,
    /// The preview could not be made.
    PreviewFailed,
    /// A preview is being made for this client already.
    PreviewInProgress,
    /// The paper size or resolution is out of range.
    PrintOutOfRange,
    /// The print needs more cells across than this service makes.
    PrintTooManyCells,
    /// Not one tile fits on the paper.
    PrintTooSmall,
    /// The range is past the end.
    RangeNotSatisfiable,
    /// The job's result is not there.
    ResultMissing,
    /// The service has as many jobs waiting as it takes.
    ServiceBusy,
    /// The tile size's shape is not the library's.
    ShapeMismatch,
    /// The tile shape is too elongated.
    ShapeOutOfRange,
    /// The service is shutting down.
    ShuttingDown,
    /// Storage is not answering.
    StorageUnavailable,
    /// No such tile.
    TileNotFound,
    /// The tile is outside the pyramid.
    TileOutOfRange,
    /// The grid has too few cells for the floor on uses.
    TooFewCells,
    /// The library's tiles times the cap cannot fill the grid.
    TooFewUses,
    /// This client has as many jobs running as it may.
    TooManyActiveJobs,
    /// The client's address has as many jobs running as it may.
    TooManyActiveJobsFromAddress,
    /// Too many wrong keys from this address.
    /// Photos are coming from this address or through this link faster than the service takes them.
    TooManyPhotos,
    TooManyFailedKeys,
    /// The upload has more files than a library may.
    TooManyFiles,
    /// The owner has as many libraries as one may keep.
    /// The owner has as many events as one may keep.
    TooManyEvents,
    TooManyLibraries,
    /// This address is reading as many placements as it may.
    TooManyPlacements,
    /// This address asks for previews too fast.
    TooManyPreviews,
    /// This address holds as many event streams as it may.
    TooManyStreams,
    /// As many uploads are in flight as the service takes.
    TooManyUploads,
    /// A key is needed.
    Unauthorized,
    /// A field this request does not take.
    UnknownField,
    /// No such library.
    UnknownLibrary,
    /// An archive entry points outside the archive.
    UnsafeArchive,
    /// The image's format is not one this service reads.
    UnsupportedFormat,
    /// The body's media type is not one this request takes.
    UnsupportedMediaType,
    /// The upload stopped sending.
    UploadStalled,
    /// The upload is over its size limit.
    UploadTooLarge,
    /// The upload's images hold more pixels than one upload may decode.
    UploadTooManyPixels,
    /// The upload was sent too slowly.
    UploadTooSlow,
    /// The webhook's host is not on the operator's allow-list.
    WebhookNotAllowed,
}

/// One code's declaration.
pub struct Declared {
    pub code: ErrorCode,
    /// The code as clients see it.
    pub name: &'static str,
    /// What it means.
    pub meaning: &'static str,
    /// The request's field an error of this code is about, whatever its message says (`None`:
    /// the message names it, or none).
    pub field: Option<&'static str>,
}

/// Every code, declared once.
pub const CODES: &[Declared] = &[
    Declared {
        code: ErrorCode::AdaptiveBackground,
        name: "adaptive_background",
        meaning: "Adaptive tile sizes were asked for with a background other than the library's.",
        field: Some("adaptive"),
    },
    Declared {
        code: ErrorCode::AdaptiveGrout,
        name: "adaptive_grout",
        meaning: "Grout was asked for with adaptive tile sizes.",
        field: None,
    },
    Declared {
        code: ErrorCode::AdaptiveMinUses,
        name: "adaptive_min_uses",
        meaning: "A floor on uses was asked for with adaptive tile sizes.",
        field: None,
    },
    Declared {
        code: ErrorCode::AdaptiveNotDoubling,
        name: "adaptive_not_doubling",
        meaning: "The largest adaptive size is not the smallest doubled.",
        field: Some("adaptive"),
    },
    Declared {
        code: ErrorCode::AdaptiveNotSquare,
        name: "adaptive_not_square",
        meaning: "Adaptive tile sizes were asked for with tiles that are not square.",
        field: Some("adaptive"),
    },
    Declared {
        code: ErrorCode::AdaptiveTooCoarse,
        name: "adaptive_too_coarse",
        meaning: "The largest adaptive squares alone are more than the uniform grid's tiles.",
        field: Some("adaptive"),
    },
    Declared {
        code: ErrorCode::ArchiveTooLarge,
        name: "archive_too_large",
        meaning: "The archive holds more files or bytes than a library upload may.",
        field: Some("files"),
    },
    Declared {
        code: ErrorCode::BadArchive,
        name: "bad_archive",
        meaning: "The archive cannot be read.",
        field: Some("files"),
    },
    Declared {
        code: ErrorCode::BadMultipart,
        name: "bad_multipart",
        meaning: "The multipart body cannot be read.",
        field: None,
    },
    Declared {
        code: ErrorCode::BadTileName,
        name: "bad_tile_name",
        meaning: "The tile address is not a pyramid tile's.",
        field: None,
    },
    Declared {
        code: ErrorCode::BodyTooLarge,
        name: "body_too_large",
        meaning: "The body is larger than this request may send.",
        field: None,
    },
    Declared {
        code: ErrorCode::CellOutOfRange,
        name: "cell_out_of_range",
        meaning: "The cell is outside the mosaic.",
        field: None,
    },
    Declared {
        code: ErrorCode::CellsMissing,
        name: "cells_missing",
        meaning: "The job's cell map is not there.",
        field: None,
    },
    Declared {
        code: ErrorCode::ClientGone,
        name: "client_gone",
        meaning: "The client went away before the work was done.",
        field: None,
    },
    Declared {
        code: ErrorCode::ConflictingParameters,
        name: "conflicting_parameters",
        meaning: "Two fields were given that exclude each other.",
        field: None,
    },
    Declared {
        code: ErrorCode::CorruptImage,
        name: "corrupt_image",
        meaning: "The image cannot be decoded.",
        field: Some("image"),
    },
    Declared {
        code: ErrorCode::CrossSiteRequest,
        name: "cross_site_request",
        meaning: "A change was asked from another site.",
        field: None,
    },
    Declared {
        code: ErrorCode::DuplicateField,
        name: "duplicate_field",
        meaning: "A field was given twice.",
        field: None,
    },
    Declared {
        code: ErrorCode::EmptyUpload,
        name: "empty_upload",
        meaning: "The upload is empty.",
        field: Some("image"),
    },
    Declared {
        code: ErrorCode::ImageTooLarge,
        name: "image_too_large",
        meaning: "The image decodes larger than this service takes.",
        field: Some("image"),
    },
    Declared {
        code: ErrorCode::ImportTooLong,
        name: "import_too_long",
        meaning: "The library import took longer than an upload may.",
        field: Some("files"),
    },
    Declared {
        code: ErrorCode::InsufficientStorage,
        name: "insufficient_storage",
        meaning: "Storage has no room for it.",
        field: None,
    },
    Declared {
        code: ErrorCode::Internal,
        name: "internal",
        meaning: "Something failed on the server's side (the cause is logged).",
        field: None,
    },
    Declared {
        code: ErrorCode::InvalidClientId,
        name: "invalid_client_id",
        meaning: "The client id is not a UUID.",
        field: None,
    },
    Declared {
        code: ErrorCode::InvalidLibraryId,
        name: "invalid_library_id",
        meaning: "The library id is malformed.",
        field: None,
    },
    Declared {
        code: ErrorCode::InvalidParameter,
        name: "invalid_parameter",
        meaning: "A field is malformed.",
        field: None,
    },
    Declared {
        code: ErrorCode::InvalidWebhook,
        name: "invalid_webhook",
        meaning: "The webhook is not an address that can be called back.",
        field: Some("webhook"),
    },
    Declared {
        code: ErrorCode::JobActive,
        name: "job_active",
        meaning: "The job is still running.",
        field: None,
    },
    Declared {
        code: ErrorCode::JobEnded,
        name: "job_ended",
        meaning: "The job has ended.",
        field: None,
    },
    Declared {
        code: ErrorCode::JobFailed,
        name: "job_failed",
        meaning: "The job failed.",
        field: None,
    },
    Declared {
        code: ErrorCode::JobNotDone,
        name: "job_not_done",
        meaning: "The job is not done yet.",
        field: None,
    },
    Declared {
        code: ErrorCode::JobNotFound,
        name: "job_not_found",
        meaning: "No such job.",
        field: None,
    },
    Declared {
        code: ErrorCode::LargeOutput,
        name: "large_output",
        meaning: "The mosaic is over the size made unasked.",
        field: None,
    },
    Declared {
        code: ErrorCode::LibraryChanged,
        name: "library_changed",
        meaning: "The library changed while it was being edited: send the edit again.",
        field: None,
    },
    Declared {
        code: ErrorCode::LibraryExists,
        name: "library_exists",
        meaning: "A library of that name exists.",
        field: Some("name"),
    },
    Declared {
        code: ErrorCode::LibraryInUse,
        name: "library_in_use",
        meaning: "The library is in use by a job.",
        field: None,
    },
    Declared {
        code: ErrorCode::LibraryNotFound,
        name: "library_not_found",
        meaning: "No such library.",
        field: Some("library"),
    },
    Declared {
        code: ErrorCode::LibraryTooSmall,
        name: "library_too_small",
        meaning: "The library has too few tiles for the repetition radius.",
        field: None,
    },
    Declared {
        code: ErrorCode::MalformedJson,
        name: "malformed_json",
        meaning: "The JSON body cannot be read.",
        field: None,
    },
    Declared {
        code: ErrorCode::MethodNotAllowed,
        name: "method_not_allowed",
        meaning: "The path does not take that method.",
        field: None,
    },
    Declared {
        code: ErrorCode::MissingParameter,
        name: "missing_parameter",
        meaning: "A required field is missing.",
        field: None,
    },
    Declared {
        code: ErrorCode::NoImages,
        name: "no_images",
        meaning: "The upload holds no images.",
        field: Some("files"),
    },
    Declared {
        code: ErrorCode::NoRoute,
        name: "no_route",
        meaning: "No such path.",
        field: None,
    },
    Declared {
        code: ErrorCode::NotAnImage,
        name: "not_an_image",
        meaning: "The file is not an image.",
        field: Some("image"),
    },
    Declared {
        code: ErrorCode::NotFound,
        name: "not_found",
        meaning: "Not found.",
        field: None,
    },
    Declared {
        code: ErrorCode::NotLibraryOwner,
        name: "not_library_owner",
        meaning: "The library belongs to someone else.",
        field: None,
    },
    Declared {
        code: ErrorCode::NotEventOwner,
        name: "not_event_owner",
        meaning: "The event belongs to someone else.",
        field: None,
    },
    Declared {
        code: ErrorCode::NotYourPhoto,
        name: "not_your_photo",
        meaning: "The photo was sent by someone else.",
        field: None,
    },
    Declared {
        code: ErrorCode::EventNotFound,
        name: "event_not_found",
        meaning: "There is no such event.",
        field: None,
    },
    Declared {
        code: ErrorCode::PhotoNotFound,
        name: "photo_not_found",
        meaning: "There is no such photo in the event.",
        field: None,
    },
    Declared {
        code: ErrorCode::BadContributeToken,
        name: "bad_contribute_token",
        meaning: "The contribute link's token is missing or wrong.",
        field: None,
    },
    Declared {
        code: ErrorCode::ContributionsClosed,
        name: "contributions_closed",
        meaning: "The event takes no more photos.",
        field: None,
    },
    Declared {
        code: ErrorCode::GuestPhotoLimit,
        name: "guest_photo_limit",
        meaning: "The guest has sent as many photos as the event takes from one guest.",
        field: Some("files"),
    },
    Declared {
        code: ErrorCode::EventPhotoLimit,
        name: "event_photo_limit",
        meaning: "The event holds as many photos as its owner lets it take.",
        field: Some("files"),
    },
    Declared {
        code: ErrorCode::NotReady,
        name: "not_ready",
        meaning: "The service is not ready.",
        field: None,
    },
    Declared {
        code: ErrorCode::JobPrivate,
        name: "job_private",
        meaning: "The job is private: only its owner, or whoever holds its share link, may see it.",
        field: None,
    },
    Declared {
        code: ErrorCode::NotYourJob,
        name: "not_your_job",
        meaning: "The job belongs to someone else.",
        field: None,
    },
    Declared {
        code: ErrorCode::OutOfRange,
        name: "out_of_range",
        meaning: "A field is out of its range.",
        field: None,
    },
    Declared {
        code: ErrorCode::OutputTooLarge,
        name: "output_too_large",
        meaning: "The mosaic would be over the largest this service makes.",
        field: None,
    },
    Declared {
        code: ErrorCode::PreviewFailed,
        name: "preview_failed",
        meaning: "The preview could not be made.",
        field: None,
    },
    Declared {
        code: ErrorCode::PreviewInProgress,
        name: "preview_in_progress",
        meaning: "A preview is being made for this client already.",
        field: None,
    },
    Declared {
        code: ErrorCode::PrintOutOfRange,
        name: "print_out_of_range",
        meaning: "The paper size or resolution is out of range.",
        field: Some("print"),
    },
    Declared {
        code: ErrorCode::PrintTooManyCells,
        name: "print_too_many_cells",
        meaning: "The print needs more cells across than this service makes.",
        field: Some("print"),
    },
    Declared {
        code: ErrorCode::PrintTooSmall,
        name: "print_too_small",
        meaning: "Not one tile fits on the paper.",
        field: Some("print"),
    },
    Declared {
        code: ErrorCode::RangeNotSatisfiable,
        name: "range_not_satisfiable",
        meaning: "The range is past the end.",
        field: None,
    },
    Declared {
        code: ErrorCode::ResultMissing,
        name: "result_missing",
        meaning: "The job's result is not there.",
        field: None,
    },
    Declared {
        code: ErrorCode::ServiceBusy,
        name: "service_busy",
        meaning: "The service has as many jobs waiting as it takes.",
        field: None,
    },
    Declared {
        code: ErrorCode::ShapeMismatch,
        name: "shape_mismatch",
        meaning: "The tile size's shape is not the library's.",
        field: None,
    },
    Declared {
        code: ErrorCode::ShapeOutOfRange,
        name: "shape_out_of_range",
        meaning: "The tile shape is too elongated.",
        field: Some("shape"),
    },
    Declared {
        code: ErrorCode::ShuttingDown,
        name: "shutting_down",
        meaning: "The service is shutting down.",
        field: None,
    },
    Declared {
        code: ErrorCode::StorageUnavailable,
        name: "storage_unavailable",
        meaning: "Storage is not answering.",
        field: None,
    },
    Declared {
        code: ErrorCode::TileNotFound,
        name: "tile_not_found",
        meaning: "No such tile.",
        field: None,
    },
    Declared {
        code: ErrorCode::TileOutOfRange,
        name: "tile_out_of_range",
        meaning: "The tile is outside the pyramid.",
        field: None,
    },
    Declared {
        code: ErrorCode::TooFewCells,
        name: "too_few_cells",
        meaning: "The grid has too few cells for the floor on uses.",
        field: None,
    },
    Declared {
        code: ErrorCode::TooFewUses,
        name: "too_few_uses",
        meaning: "The library's tiles times the cap cannot fill the grid.",
        field: None,
    },
    Declared {
        code: ErrorCode::TooManyActiveJobs,
        name: "too_many_active_jobs",
        meaning: "This client has as many jobs running as it may.",
        field: None,
    },
    Declared {
        code: ErrorCode::TooManyActiveJobsFromAddress,
        name: "too_many_active_jobs_from_address",
        meaning: "The client's address has as many jobs running as it may.",
        field: None,
    },
    Declared {
        code: ErrorCode::TooManyPhotos,
        name: "too_many_photos",
        meaning: "Photos are coming from this address or through this link faster than the service takes them.",
        field: None,
    },
    Declared {
        code: ErrorCode::TooManyFailedKeys,
        name: "too_many_failed_keys",
        meaning: "Too many wrong keys from this address.",
        field: None,
    },
    Declared {
        code: ErrorCode::TooManyFiles,
        name: "too_many_files",
        meaning: "The upload has more files than a library may.",
        field: Some("files"),
    },
    Declared {
        code: ErrorCode::TooManyEvents,
        name: "too_many_events",
        meaning: "The owner has as many events as one may keep.",
        field: None,
    },
    Declared {
        code: ErrorCode::TooManyLibraries,
        name: "too_many_libraries",
        meaning: "The owner has as many libraries as one may keep.",
        field: None,
    },
    Declared {
        code: ErrorCode::TooManyPlacements,
        name: "too_many_placements",
        meaning: "This address is reading as many placements as it may.",
        field: None,
    },
    Declared {
        code: ErrorCode::TooManyPreviews,
        name: "too_many_previews",
        meaning: "This address asks for previews too fast.",
        field: None,
    },
    Declared {
        code: ErrorCode::TooManyStreams,
        name: "too_many_streams",
        meaning: "This address holds as many event streams as it may.",
        field: None,
    },
    Declared {
        code: ErrorCode::TooManyUploads,
        name: "too_many_uploads",
        meaning: "As many uploads are in flight as the service takes.",
        field: None,
    },
    Declared {
        code: ErrorCode::Unauthorized,
        name: "unauthorized",
        meaning: "A key is needed.",
        field: None,
    },
    Declared {
        code: ErrorCode::UnknownField,
        name: "unknown_field",
        meaning: "A field this request does not take.",
        field: None,
    },
    Declared {
        code: ErrorCode::UnknownLibrary,
        name: "unknown_library",
        meaning: "No such library.",
        field: Some("library"),
    },
    Declared {
        code: ErrorCode::UnsafeArchive,
        name: "unsafe_archive",
        meaning: "An archive entry points outside the archive.",
        field: Some("files"),
    },
    Declared {
        code: ErrorCode::UnsupportedFormat,
        name: "unsupported_format",
        meaning: "The image's format is not one this service reads.",
        field: Some("image"),
    },
    Declared {
        code: ErrorCode::UnsupportedMediaType,
        name: "unsupported_media_type",
        meaning: "The body's media type is not one this request takes.",
        field: None,
    },
    Declared {
        code: ErrorCode::UploadStalled,
        name: "upload_stalled",
        meaning: "The upload stopped sending.",
        field: None,
    },
    Declared {
        code: ErrorCode::UploadTooLarge,
        name: "upload_too_large",
        meaning: "The upload is over its size limit.",
        field: Some("image"),
    },
    Declared {
        code: ErrorCode::UploadTooManyPixels,
        name: "upload_too_many_pixels",
        meaning: "The upload's images hold more pixels than one upload may decode.",
        field: Some("files"),
    },
    Declared {
        code: ErrorCode::UploadTooSlow,
        name: "upload_too_slow",
        meaning: "The upload was sent too slowly.",
        field: None,
    },
    Declared {
        code: ErrorCode::WebhookNotAllowed,
        name: "webhook_not_allowed",
        meaning: "The webhook's host is not on the operator's allow-list.",
        field: Some("webhook"),
    },
];

impl ErrorCode {
    fn declared(self) -> &'static Declared {
        // Every variant is declared (a unit test checks it).
        CODES.iter().find(|d| d.code == self).unwrap_or(&CODES[0])
    }

    /// The code as clients see it.
    pub fn as_str(self) -> &'static str {
        self.declared().name
    }

    /// What the code means.
    pub fn meaning(self) -> &'static str {
        self.declared().meaning
    }

    /// The form field an error of this code is about, whatever its message says.
    pub fn field(self) -> Option<&'static str> {
        self.declared().field
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<ErrorCode> for &str {
    fn eq(&self, other: &ErrorCode) -> bool {
        *self == other.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::{CODES, ErrorCode};

    #[test]
    fn every_code_is_declared_once_in_snake_case_with_its_meaning() {
        let mut seen = std::collections::BTreeSet::new();
        for declared in CODES {
            let name = declared.name;
            assert!(seen.insert(name), "{name} twice");
            assert!(
                name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{name}"
            );
            assert!(!declared.meaning.is_empty());
            assert_eq!(
                declared.code.as_str(),
                name,
                "{name} is declared for another code"
            );
        }
        assert_eq!(ErrorCode::NoRoute, "no_route");
    }
}
