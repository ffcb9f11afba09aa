//! The four message types that travel between Tessera's roles, each bound to exactly one queue.
//!
//! On the wire every message is UTF-8 JSON in a versioned envelope:
//! `{"v":1,"kind":"ImageRequest","client_id":"…","request_id":"…","body":{…}}`, written as is or
//! base64-encoded ([`Encoding`]); readers take either. Messages carry ids and blob keys, never
//! image bytes. Decoding checks the version, the kind and the body; any failure is a
//! [`DecodeError`], which the queue runtime treats as poison (never retried). Unknown fields are
//! ignored within a version. `docs/messages.md` is the contract, with a JSON Schema per kind.

use crate::keys::BlobKey;
use crate::spec::{GridSize, JobSpec};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use uuid::Uuid;

/// The envelope version this build writes and the only one it reads.
pub const ENVELOPE_VERSION: u32 = 1;

/// How message text is written on a queue. Readers accept both, whatever they write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    /// The JSON text as is.
    Json,
    /// The JSON text's UTF-8 bytes in standard base64: what an Azure Functions queue trigger
    /// expects and its output binding writes, on their default settings.
    #[default]
    Base64,
}

impl Encoding {
    /// `json` as it goes on the queue.
    pub fn to_wire(self, json: &str) -> String {
        use base64::Engine;
        match self {
            Encoding::Json => json.to_string(),
            Encoding::Base64 => base64::engine::general_purpose::STANDARD.encode(json),
        }
    }

    /// The encoding a received body is in: JSON when it opens with `{` (base64 never does).
    pub fn of(body: &str) -> Encoding {
        if body.trim_start().starts_with('{') {
            Encoding::Json
        } else {
            Encoding::Base64
        }
    }

    /// The JSON text of a received body, in either encoding.
    pub fn from_wire(body: &str) -> Result<std::borrow::Cow<'_, str>, DecodeError> {
        use base64::Engine;
        if Encoding::of(body) == Encoding::Json {
            return Ok(std::borrow::Cow::Borrowed(body));
        }
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(body.trim())
            .map_err(|e| {
                DecodeError::Malformed(cut(format!(
                    "the message is neither JSON nor base64-encoded JSON ({e})"
                )))
            })?;
        String::from_utf8(bytes)
            .map(std::borrow::Cow::Owned)
            .map_err(|e| DecodeError::Malformed(format!("base64 body is not UTF-8 text: {e}")))
    }
}

/// The work queues: the pipeline's four, guests' photos to prepare, events' libraries to
/// make, and guests' photos offered to a classifier outside Tessera.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QueueName {
    ImageRequest,
    SliceRequest,
    SliceResponse,
    ImageResponse,
    PhotoRequest,
    LibraryRequest,
    PhotoReview,
}

impl QueueName {
    pub const ALL: [QueueName; 7] = [
        QueueName::ImageRequest,
        QueueName::SliceRequest,
        QueueName::SliceResponse,
        QueueName::ImageResponse,
        QueueName::PhotoRequest,
        QueueName::LibraryRequest,
        QueueName::PhotoReview,
    ];

    /// The queue's name in storage.
    pub fn as_str(self) -> &'static str {
        match self {
            QueueName::ImageRequest => "imagerequest",
            QueueName::SliceRequest => "slicerequest",
            QueueName::SliceResponse => "sliceresponse",
            QueueName::ImageResponse => "imageresponse",
            QueueName::PhotoRequest => "photorequest",
            QueueName::LibraryRequest => "libraryrequest",
            QueueName::PhotoReview => "photoreview",
        }
    }

    /// The dead-letter queue that holds this queue's poison messages.
    pub fn poison(self) -> String {
        poison_queue_name(self.as_str())
    }
}

impl std::fmt::Display for QueueName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `<queue>-poison`: where a queue's undeliverable messages go.
pub fn poison_queue_name(queue: &str) -> String {
    format!("{queue}-poison")
}

/// A message type, bound at compile time to the one queue it travels on.
pub trait Message: Serialize + DeserializeOwned + Send + Sync + 'static {
    const QUEUE: QueueName;
    /// The `kind` written in the envelope.
    const KIND: &'static str;

    /// Checks the body's values beyond their types; an invalid body is poison.
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

/// Characters of a reason kept: a decoding error may quote the message (a field's value), and a
/// message may be as long as a queue takes; reasons go to logs and poison records.
const MAX_REASON_CHARS: usize = 400;

/// `reason`, cut to [`MAX_REASON_CHARS`] with a note of what was left out.
fn cut(reason: String) -> String {
    match reason.char_indices().nth(MAX_REASON_CHARS) {
        None => reason,
        Some((at, _)) => format!("{}... ({} more bytes)", &reason[..at], reason.len() - at),
    }
}

/// Why a queue message could not be decoded. Always poison: retrying cannot fix it.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DecodeError {
    #[error("message is not valid JSON: {0}")]
    Malformed(String),
    #[error("unsupported envelope version {found} (this build reads version {ENVELOPE_VERSION})")]
    UnsupportedVersion { found: u64 },
    #[error("message kind is {found:?}, expected {expected:?}")]
    WrongKind {
        expected: &'static str,
        found: String,
    },
    #[error("invalid {kind} body: {reason}")]
    InvalidBody { kind: &'static str, reason: String },
}

/// A message with its envelope fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope<M> {
    /// Who asked for the work (the browser or API client behind the job).
    pub client_id: Uuid,
    /// Unique per message sent; a redelivered message keeps its request id.
    pub request_id: Uuid,
    pub body: M,
}

#[derive(Serialize)]
struct WireOut<'a, M> {
    v: u32,
    kind: &'static str,
    client_id: Uuid,
    request_id: Uuid,
    body: &'a M,
}

#[derive(Deserialize)]
struct WireIn {
    v: serde_json::Value,
    kind: String,
    client_id: Uuid,
    request_id: Uuid,
    body: serde_json::Value,
}

impl<M: Message> Envelope<M> {
    /// A new envelope with a fresh request id.
    pub fn new(client_id: Uuid, body: M) -> Self {
        Envelope {
            client_id,
            request_id: Uuid::new_v4(),
            body,
        }
    }

    pub fn encode(&self) -> String {
        serde_json::to_string(&WireOut {
            v: ENVELOPE_VERSION,
            kind: M::KIND,
            client_id: self.client_id,
            request_id: self.request_id,
            body: &self.body,
        })
        .expect("message types serialize infallibly")
    }

    pub fn decode(text: &str) -> Result<Self, DecodeError> {
        let wire: WireIn =
            serde_json::from_str(text).map_err(|e| DecodeError::Malformed(cut(e.to_string())))?;
        match wire.v.as_u64() {
            Some(v) if v == u64::from(ENVELOPE_VERSION) => {}
            Some(found) => return Err(DecodeError::UnsupportedVersion { found }),
            None => {
                return Err(DecodeError::Malformed(format!(
                    "version {} is not a number",
                    wire.v
                )));
            }
        }
        if wire.kind != M::KIND {
            return Err(DecodeError::WrongKind {
                expected: M::KIND,
                found: wire.kind,
            });
        }
        let body: M = serde_json::from_value(wire.body).map_err(|e| DecodeError::InvalidBody {
            kind: M::KIND,
            reason: cut(e.to_string()),
        })?;
        body.validate().map_err(|reason| DecodeError::InvalidBody {
            kind: M::KIND,
            reason: cut(reason),
        })?;
        Ok(Envelope {
            client_id: wire.client_id,
            request_id: wire.request_id,
            body,
        })
    }
}

pub use crate::spec::{Grid, LibraryRef, RenderOptions, tile_height_field, tile_size};

/// `imagerequest`: a new job, from the front end to the job controller. Its job specification's
/// fields sit beside the job's (`library`, `tile_size`, `grid`, ...). Unknown body fields are
/// ignored, as in every message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ImageRequest {
    pub job_id: Uuid,
    /// Blob key of the uploaded target image: always `imageinput/{job_id}`; the controller
    /// reads that key whatever this says.
    pub input_blob: String,
    /// What the job asks for.
    #[serde(flatten)]
    pub spec: JobSpec,
    /// The grid the door that took the job sized it to: the controller plans exactly this
    /// grid. Absent (a request written by hand), the controller sizes the job itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sized_to: Option<GridSize>,
    /// Sent again for a stalled job: plan it again even if it was sliced before.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redrive: bool,
}

/// `slicerequest`: one band of rows to render, from the controller to any image processor,
/// with the job's specification beside the slice's fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SliceRequest {
    pub job_id: Uuid,
    /// 0-based sequence number of this slice.
    pub seq: u32,
    pub count: u32,
    /// Blob key of the plan for this slice's rows of cells: always `sliceinput/{job_id}/{seq}`;
    /// the processor reads that key whatever this says.
    pub plan_blob: String,
    /// What the job asks for.
    #[serde(flatten)]
    pub spec: JobSpec,
}

/// `sliceresponse`: a rendered slice, from a processor back to the controller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SliceResponse {
    pub job_id: Uuid,
    pub seq: u32,
    /// Blob key of the rendered slice.
    pub output_blob: String,
    /// Which processor rendered it.
    pub processor: String,
    /// Time spent rendering, in milliseconds.
    pub render_ms: u64,
    /// Slices in the job (as the slice request said).
    #[serde(default)]
    pub count: u32,
    /// Storage transactions the processor spent on this slice.
    #[serde(default)]
    pub transactions: u64,
}

/// `imageresponse`: a finished (or failed) job, from the controller to the front end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ImageResponse {
    pub job_id: Uuid,
    pub outcome: JobOutcome,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case", tag = "status")]
pub enum JobOutcome {
    Done {
        /// Blob key of the mosaic, `imageoutput/<job>.png` (`imageoutput/<job>` from earlier
        /// versions).
        output_blob: String,
        width: u32,
        height: u32,
    },
    Failed {
        reason: String,
    },
}

/// `photorequest`: a guest's photo, stored and recorded by the front end, for any image
/// processor to prepare: decoded once, within the decode budget, into its colour and its
/// thumbnail, then listed as waiting or in. Sent again, it finds the photo prepared and does
/// nothing; a photo withdrawn meanwhile is passed over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PhotoRequest {
    pub event_id: Uuid,
    pub photo_id: Uuid,
}

impl Message for PhotoRequest {
    const QUEUE: QueueName = QueueName::PhotoRequest;
    const KIND: &'static str = "PhotoRequest";
}

/// `libraryrequest`: an event's mosaic, its job recorded by the front end, for the job
/// controller to make the event's library version from the photos the mosaic lists (each
/// prepared once as a tile: the new ones put in, the left ones taken out), then to send the
/// job's `ImageRequest`. Sent again once the version is made, it sends the request again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LibraryRequest {
    pub event_id: Uuid,
    pub job_id: Uuid,
}

impl Message for LibraryRequest {
    const QUEUE: QueueName = QueueName::LibraryRequest;
    const KIND: &'static str = "LibraryRequest";
}

/// `photoreview`: a guest's photo, prepared, offered to a classifier outside Tessera (an
/// Azure Function calling a content-safety service, say) for an event that asks for one. The
/// classifier reads the photo at `photo_blob` (or its thumbnail, `thumbnail_blob`) in the
/// storage account, then answers `POST {verdict_path}` with the header `X-Review-Token:
/// {token}` and `{"verdict": "approve" | "hold" | "reject", "reason": "..."}`. Until then the
/// photo waits. Sent again for the same photo, a second verdict changes nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PhotoReview {
    pub event_id: Uuid,
    pub photo_id: Uuid,
    /// The photo's file as its guest sent it, in the blob store.
    pub photo_blob: String,
    /// Its thumbnail (a JPEG at most 320 px on its long side), in the blob store.
    pub thumbnail_blob: String,
    /// The API path the verdict goes to, on the service's address.
    pub verdict_path: String,
    /// The event's classifier token, the verdict's credential.
    pub token: String,
}

impl Message for PhotoReview {
    const QUEUE: QueueName = QueueName::PhotoReview;
    const KIND: &'static str = "PhotoReview";

    fn validate(&self) -> Result<(), String> {
        if self.token.is_empty() || self.photo_blob.is_empty() || self.verdict_path.is_empty() {
            return Err("a photo review names its photo, its verdict's path and its token".into());
        }
        Ok(())
    }
}

/// Output pixels of one slice at most, unless the controller is set otherwise: a job asking for
/// fewer slices gets more (and never more slices than rows of cells).
pub const DEFAULT_MAX_SLICE_PIXELS: u64 = 1 << 25;

impl Message for ImageRequest {
    const QUEUE: QueueName = QueueName::ImageRequest;
    const KIND: &'static str = "ImageRequest";

    fn validate(&self) -> Result<(), String> {
        self.spec.check_fields().map_err(|e| e.to_string())?;
        if let Some(GridSize { cols, rows }) = self.sized_to
            && (cols == 0 || rows == 0)
        {
            return Err(format!(
                "a grid of {cols} x {rows} cells: at least one each way"
            ));
        }
        own_key(
            "input_blob",
            &self.input_blob,
            BlobKey::ImageInput { job: self.job_id },
        )
    }
}

/// A blob key a message carries must be the one its job and kind name: a message never points
/// at another job's blobs (roles derive the key themselves and read no other).
fn own_key(field: &str, given: &str, expected: BlobKey) -> Result<(), String> {
    let expected = expected.path();
    if given == expected {
        return Ok(());
    }
    let shown: String = given.chars().take(120).collect();
    Err(format!(
        "{field} {shown:?} is not this message's own blob key (expected {expected:?})"
    ))
}
impl Message for SliceRequest {
    const QUEUE: QueueName = QueueName::SliceRequest;
    const KIND: &'static str = "SliceRequest";

    fn validate(&self) -> Result<(), String> {
        self.spec.check_fields().map_err(|e| e.to_string())?;
        if self.seq >= self.count {
            return Err(format!(
                "slice {} of {} does not exist",
                self.seq, self.count
            ));
        }
        own_key(
            "plan_blob",
            &self.plan_blob,
            BlobKey::SliceInput {
                job: self.job_id,
                seq: self.seq,
            },
        )
    }
}
impl Message for SliceResponse {
    const QUEUE: QueueName = QueueName::SliceResponse;
    const KIND: &'static str = "SliceResponse";

    fn validate(&self) -> Result<(), String> {
        own_key(
            "output_blob",
            &self.output_blob,
            BlobKey::SliceOutput {
                job: self.job_id,
                seq: self.seq,
            },
        )
    }
}
impl Message for ImageResponse {
    const QUEUE: QueueName = QueueName::ImageResponse;
    const KIND: &'static str = "ImageResponse";

    fn validate(&self) -> Result<(), String> {
        match &self.outcome {
            // A controller of an earlier version names the mosaic without its extension.
            JobOutcome::Done { output_blob, .. }
                if *output_blob == BlobKey::unnamed_image_output(self.job_id) =>
            {
                Ok(())
            }
            JobOutcome::Done { output_blob, .. } => own_key(
                "output_blob",
                output_blob,
                BlobKey::ImageOutput { job: self.job_id },
            ),
            JobOutcome::Failed { .. } => Ok(()),
        }
    }
}
