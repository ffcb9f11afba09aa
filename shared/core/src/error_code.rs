//! Every error code the service answers with, each declared once in `error_codes!`'s list:
//! the variant's doc comment is what it means, its stable name (what clients branch on) is the
//! variant's in `snake_case`, and `#[field = "..."]` names the form field it is about, if any
//! (the page marks that field and shows the server's message beside it).

use serde::{Serialize, Serializer};

/// One code's declaration.
pub struct Declared {
    pub code: ErrorCode,
    /// What it means (the variant's doc comment).
    meaning: &'static str,
    /// The request's field an error of this code is about, whatever its message says (`None`:
    /// the message names it, or none).
    pub field: Option<&'static str>,
}

impl Declared {
    /// What the code means.
    pub fn meaning(&self) -> &'static str {
        self.meaning.trim()
    }
}

/// Declares [`ErrorCode`] and [`CODES`] from one list of documented variants.
macro_rules! error_codes {
    ($( #[doc = $meaning:literal] $(#[field = $field:literal])? $code:ident, )*) => {
        /// A stable, machine-readable error code (`snake_case` on the wire).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr, strum::EnumCount)]
        #[strum(serialize_all = "snake_case")]
        pub enum ErrorCode {
            $( #[doc = $meaning] $code, )*
        }

        /// Every code, in the order of its declaration.
        pub const CODES: &[Declared] = &[
            $( Declared {
                code: ErrorCode::$code,
                meaning: $meaning,
                field: error_codes!(@field $($field)?),
            }, )*
        ];
    };
    (@field $field:literal) => { Some($field) };
    (@field) => { None };
}

error_codes! {
    /// Adaptive tile sizes were asked for with a background other than the library's.
    #[field = "adaptive"]
    AdaptiveBackground,
    /// Grout was asked for with adaptive tile sizes.
    #[field = "grout"]
    AdaptiveGrout,
    /// A floor on uses was asked for with adaptive tile sizes.
    #[field = "min_uses"]
    AdaptiveMinUses,
    /// The largest adaptive size is not the smallest doubled.
    #[field = "adaptive"]
    AdaptiveNotDoubling,
    /// Adaptive tile sizes were asked for with tiles that are not square.
    #[field = "adaptive"]
    AdaptiveNotSquare,
    /// The largest adaptive squares alone are more than the uniform grid's tiles.
    #[field = "adaptive"]
    AdaptiveTooCoarse,
    /// The archive holds more files or bytes than a library upload may.
    #[field = "files"]
    ArchiveTooLarge,
    /// The archive cannot be read.
    #[field = "files"]
    BadArchive,
    /// The contribute link's token is missing or wrong.
    BadContributeToken,
    /// The multipart body cannot be read.
    BadMultipart,
    /// The classifier's token is missing or wrong.
    BadReviewToken,
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
    /// The event asks each guest to agree to its consent line first.
    #[field = "consent"]
    ConsentRequired,
    /// The event takes no more photos.
    ContributionsClosed,
    /// The image cannot be decoded.
    #[field = "image"]
    CorruptImage,
    /// A change was asked from another site.
    CrossSiteRequest,
    /// A field was given twice.
    DuplicateField,
    /// The upload is empty.
    #[field = "image"]
    EmptyUpload,
    /// There is no such event.
    EventNotFound,
    /// The event holds as many photos as its owner lets it take.
    #[field = "files"]
    EventPhotoLimit,
    /// The guest has sent as many photos as the event takes from one guest.
    #[field = "files"]
    GuestPhotoLimit,
    /// The image decodes larger than this service takes.
    #[field = "image"]
    ImageTooLarge,
    /// The library import took longer than an upload may.
    #[field = "files"]
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
    #[field = "webhook"]
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
    /// The job is private: only its owner, or whoever holds its share link, may see it.
    JobPrivate,
    /// The mosaic is over the size made unasked.
    #[field = "allow_large"]
    LargeOutput,
    /// The library changed while it was being edited: send the edit again.
    LibraryChanged,
    /// A library of that name exists.
    #[field = "name"]
    LibraryExists,
    /// The library is in use by a job.
    LibraryInUse,
    /// No such library.
    #[field = "library"]
    LibraryNotFound,
    /// The library has too few tiles for the repetition radius.
    #[field = "repeat_radius"]
    LibraryTooSmall,
    /// The JSON body cannot be read.
    MalformedJson,
    /// The path does not take that method.
    MethodNotAllowed,
    /// A required field is missing.
    MissingParameter,
    /// The upload holds no images.
    #[field = "files"]
    NoImages,
    /// No such path.
    NoRoute,
    /// The file is not an image.
    #[field = "image"]
    NotAnImage,
    /// The event belongs to someone else.
    NotEventOwner,
    /// Not found.
    NotFound,
    /// The library belongs to someone else.
    NotLibraryOwner,
    /// The service is not ready.
    NotReady,
    /// The job belongs to someone else.
    NotYourJob,
    /// The photo was sent by someone else.
    NotYourPhoto,
    /// A field is out of its range.
    OutOfRange,
    /// The mosaic would be over the largest this service makes.
    #[field = "cells"]
    OutputTooLarge,
    /// There is no such photo in the event.
    PhotoNotFound,
    /// The preview could not be made.
    PreviewFailed,
    /// A preview is being made for this client already.
    PreviewInProgress,
    /// The paper size or resolution is out of range.
    #[field = "print"]
    PrintOutOfRange,
    /// The print needs more cells across than this service makes.
    #[field = "print"]
    PrintTooManyCells,
    /// Not one tile fits on the paper.
    #[field = "print"]
    PrintTooSmall,
    /// The range is past the end.
    RangeNotSatisfiable,
    /// The job's result is not there.
    ResultMissing,
    /// The service has as many jobs waiting as it takes.
    ServiceBusy,
    /// The tile size's shape is not the library's.
    #[field = "tile_size"]
    ShapeMismatch,
    /// The tile shape is too elongated.
    #[field = "shape"]
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
    #[field = "min_uses"]
    TooFewCells,
    /// The library's tiles times the cap cannot fill the grid.
    #[field = "max_uses"]
    TooFewUses,
    /// This client has as many jobs running as it may.
    TooManyActiveJobs,
    /// The client's address has as many jobs running as it may.
    TooManyActiveJobsFromAddress,
    /// The owner has as many events as one may keep.
    TooManyEvents,
    /// Too many wrong keys from this address.
    TooManyFailedKeys,
    /// The upload has more files than a library may.
    #[field = "files"]
    TooManyFiles,
    /// The owner has as many libraries as one may keep.
    TooManyLibraries,
    /// Photos are coming from this address or through this link faster than the service takes them.
    TooManyPhotos,
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
    #[field = "library"]
    UnknownLibrary,
    /// An archive entry points outside the archive.
    #[field = "files"]
    UnsafeArchive,
    /// The image's format is not one this service reads.
    #[field = "image"]
    UnsupportedFormat,
    /// The body's media type is not one this request takes.
    UnsupportedMediaType,
    /// The upload stopped sending.
    UploadStalled,
    /// The upload is over its size limit.
    #[field = "image"]
    UploadTooLarge,
    /// The upload's images hold more pixels than one upload may decode.
    #[field = "files"]
    UploadTooManyPixels,
    /// The upload was sent too slowly.
    UploadTooSlow,
    /// The webhook's host is not on the operator's allow-list.
    #[field = "webhook"]
    WebhookNotAllowed,
}

impl ErrorCode {
    fn declared(self) -> &'static Declared {
        // CODES is in the enum's order.
        &CODES[self as usize]
    }

    /// The code as clients see it.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// What the code means.
    pub fn meaning(self) -> &'static str {
        self.declared().meaning()
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
    use strum::EnumCount;

    #[test]
    fn every_code_is_declared_once_in_snake_case_with_its_meaning() {
        assert_eq!(CODES.len(), ErrorCode::COUNT);
        let mut seen = std::collections::BTreeSet::new();
        for (i, declared) in CODES.iter().enumerate() {
            let name = declared.code.as_str();
            assert_eq!(declared.code as usize, i, "{name} out of order");
            assert!(seen.insert(name), "{name} twice");
            assert!(
                name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{name}"
            );
            assert!(declared.meaning().ends_with('.'), "{name}");
        }
        assert_eq!(ErrorCode::NoRoute, "no_route");
        assert_eq!(
            ErrorCode::TooManyActiveJobsFromAddress.as_str(),
            "too_many_active_jobs_from_address"
        );
        assert_eq!(ErrorCode::LargeOutput.field(), Some("allow_large"));
    }
}
