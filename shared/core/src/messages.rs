//! The four message types that travel between Tessera's roles, each bound to exactly one queue.
//!
//! On the wire every message is UTF-8 JSON in a versioned envelope:
//! `{"v":1,"kind":"ImageRequest","client_id":"…","request_id":"…","body":{…}}`. Messages carry ids
//! and blob keys, never image bytes. Decoding checks the version, the kind and the body; any failure
//! is a [`DecodeError`], which the queue runtime treats as poison (never retried).

use serde::{Deserialize, Serialize, de::DeserializeOwned};
use tessera_engine::{AdaptiveSizes, TileBackground, TileSize};
use uuid::Uuid;

/// The envelope version this build writes and the only one it reads.
pub const ENVELOPE_VERSION: u32 = 1;

/// The four work queues of the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QueueName {
    ImageRequest,
    SliceRequest,
    SliceResponse,
    ImageResponse,
}

impl QueueName {
    pub const ALL: [QueueName; 4] = [
        QueueName::ImageRequest,
        QueueName::SliceRequest,
        QueueName::SliceResponse,
        QueueName::ImageResponse,
    ];

    /// The queue's name in storage.
    pub fn as_str(self) -> &'static str {
        match self {
            QueueName::ImageRequest => "imagerequest",
            QueueName::SliceRequest => "slicerequest",
            QueueName::SliceResponse => "sliceresponse",
            QueueName::ImageResponse => "imageresponse",
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
            serde_json::from_str(text).map_err(|e| DecodeError::Malformed(e.to_string()))?;
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
            reason: e.to_string(),
        })?;
        body.validate().map_err(|reason| DecodeError::InvalidBody {
            kind: M::KIND,
            reason,
        })?;
        Ok(Envelope {
            client_id: wire.client_id,
            request_id: wire.request_id,
            body,
        })
    }
}

/// A tile library at one version: processors cache a library's index by this pair.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LibraryRef {
    pub id: String,
    #[schema(minimum = 1)]
    pub version: u32,
}

/// How the target is cut into cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "mode", deny_unknown_fields)]
pub enum Grid {
    /// So many cells across; rows follow the target's aspect ratio.
    Cells { across: u32 },
    /// One tile per source pixel: the output is the source size times the tile size.
    PerPixel,
}

/// Matching and rendering options a job carries from the upload to every slice.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RenderOptions {
    /// No identical tile within this Chebyshev distance (0: unlimited repeats).
    pub repeat_radius: u32,
    /// How far each tile is moved toward its cell's colour, 0 to 100 %.
    pub blend_percent: u8,
    /// An optional cap on the number of uses of any one tile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_uses: Option<u32>,
    /// Tiles may be mirrored left-right (absent: false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flip: bool,
    /// Tiles may be turned by quarter turns (absent: false).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rotate: bool,
    /// What transparent tiles lie over: `library`, `auto` or a colour as `rrggbb` hex
    /// (absent: the library's own background, as `library`). Not with `adaptive`.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "wire_text")]
    pub background: Option<TileBackground>,
    /// Adaptive tile sizes, `"MIN..MAX"` (as `"8..32"`): square tiles of several sizes, large
    /// where the photo is flat and small where it is detailed, no more of them than the uniform
    /// grid has. Absent: the uniform grid, and the messages read as they did before.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "wire_text")]
    pub adaptive: Option<AdaptiveSizes>,
}

impl RenderOptions {
    /// The background transparent tiles lie over.
    pub fn tile_background(&self) -> TileBackground {
        self.background.unwrap_or_default()
    }
}

/// An option that travels as text (`"8..32"`, `"auto"`): written as it displays, parsed (and
/// so checked) as it is read.
trait WireText: std::fmt::Display + Sized {
    fn from_wire(text: &str) -> Result<Self, String>;
}

impl WireText for TileBackground {
    fn from_wire(text: &str) -> Result<Self, String> {
        TileBackground::parse(text)
    }
}

impl WireText for AdaptiveSizes {
    fn from_wire(text: &str) -> Result<Self, String> {
        text.parse().map_err(|e| format!("adaptive: {e}"))
    }
}

/// Serde for an optional [`WireText`] field.
mod wire_text {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::WireText;

    pub fn serialize<T: WireText, S: Serializer>(
        value: &Option<T>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(value) => s.collect_str(value),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, T: WireText, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<T>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|text| T::from_wire(&text).map_err(serde::de::Error::custom))
            .transpose()
    }
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            repeat_radius: 1,
            blend_percent: 0,
            max_uses: None,
            flip: false,
            rotate: false,
            background: None,
            adaptive: None,
        }
    }
}

/// `imagerequest`: a new job, from the front end to the job controller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageRequest {
    pub job_id: Uuid,
    /// Blob key of the uploaded target image.
    pub input_blob: String,
    pub library: LibraryRef,
    /// Width of one tile in output pixels.
    pub tile_size: u32,
    /// Height of one tile in output pixels; absent for square tiles (the width).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tile_height: Option<u32>,
    pub grid: Grid,
    /// Into how many slices (bands of cell rows) the job is cut.
    pub slices: u32,
    pub options: RenderOptions,
    /// Sent again for a stalled job: plan it again even if it was sliced before.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redrive: bool,
}

/// `slicerequest`: one band of rows to render, from the controller to any image processor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SliceRequest {
    pub job_id: Uuid,
    /// 0-based sequence number of this slice.
    pub seq: u32,
    pub count: u32,
    /// Blob key of the plan for this slice's rows of cells.
    pub plan_blob: String,
    pub library: LibraryRef,
    /// Width of one tile in output pixels.
    pub tile_size: u32,
    /// Height of one tile in output pixels; absent for square tiles (the width).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tile_height: Option<u32>,
    pub options: RenderOptions,
}

/// `sliceresponse`: a rendered slice, from a processor back to the controller.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageResponse {
    pub job_id: Uuid,
    pub outcome: JobOutcome,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "status", deny_unknown_fields)]
pub enum JobOutcome {
    Done {
        output_blob: String,
        width: u32,
        height: u32,
    },
    Failed {
        reason: String,
    },
}

/// Tile edges a job may ask for, in output pixels.
pub const TILE_SIZE_RANGE: std::ops::RangeInclusive<u32> = 4..=256;
/// Slices a job may be cut into.
pub const SLICES_RANGE: std::ops::RangeInclusive<u32> = 1..=1024;
/// Output pixels of one slice at most, unless the controller is set otherwise: a job asking for
/// fewer slices gets more (and never more slices than rows of cells).
pub const DEFAULT_MAX_SLICE_PIXELS: u64 = 1 << 25;

/// The tile size of `tile_size` (the width) and `tile_height` (absent: square), as the
/// messages and job records carry it.
pub fn tile_size(tile_size: u32, tile_height: Option<u32>) -> TileSize {
    TileSize {
        width: tile_size,
        height: tile_height.unwrap_or(tile_size),
    }
}

/// The `tile_height` field for `size`: none for square tiles, so that their messages and records
/// read as they always have (and as processors from before oblong tiles read them).
pub fn tile_height_field(size: TileSize) -> Option<u32> {
    (!size.is_square()).then_some(size.height)
}

fn check_common(size: TileSize, options: &RenderOptions) -> Result<(), String> {
    for (name, side) in [("tile_size", size.width), ("tile_height", size.height)] {
        if !TILE_SIZE_RANGE.contains(&side) {
            return Err(format!(
                "{name} {side} is outside {}..={}",
                TILE_SIZE_RANGE.start(),
                TILE_SIZE_RANGE.end()
            ));
        }
    }
    if options.blend_percent > 100 {
        return Err(format!(
            "blend_percent {} is over 100",
            options.blend_percent
        ));
    }
    if let Some(sizes) = options.adaptive
        && !size.is_square()
    {
        return Err(format!(
            "adaptive {sizes} takes square tiles, not {size} px ones"
        ));
    }
    if let Some(sizes) = options.adaptive
        && options.tile_background() != TileBackground::Library
    {
        return Err(format!(
            "adaptive {sizes} lays tiles over the library's own background, not {}",
            options.tile_background()
        ));
    }
    Ok(())
}

impl ImageRequest {
    /// The job's tile size.
    pub fn tile(&self) -> TileSize {
        tile_size(self.tile_size, self.tile_height)
    }
}

impl SliceRequest {
    /// The job's tile size.
    pub fn tile(&self) -> TileSize {
        tile_size(self.tile_size, self.tile_height)
    }
}

impl Message for ImageRequest {
    const QUEUE: QueueName = QueueName::ImageRequest;
    const KIND: &'static str = "ImageRequest";

    fn validate(&self) -> Result<(), String> {
        check_common(self.tile(), &self.options)?;
        if !SLICES_RANGE.contains(&self.slices) {
            return Err(format!(
                "slices {} is outside {}..={}",
                self.slices,
                SLICES_RANGE.start(),
                SLICES_RANGE.end()
            ));
        }
        if let Grid::Cells { across: 0 } = self.grid {
            return Err("grid must be at least one cell across".into());
        }
        if let (Some(sizes), Grid::PerPixel) = (self.options.adaptive, self.grid) {
            return Err(format!(
                "adaptive {sizes} needs a grid of cells across, not one tile per pixel"
            ));
        }
        Ok(())
    }
}
impl Message for SliceRequest {
    const QUEUE: QueueName = QueueName::SliceRequest;
    const KIND: &'static str = "SliceRequest";

    fn validate(&self) -> Result<(), String> {
        check_common(self.tile(), &self.options)?;
        if self.seq >= self.count {
            return Err(format!(
                "slice {} of {} does not exist",
                self.seq, self.count
            ));
        }
        Ok(())
    }
}
impl Message for SliceResponse {
    const QUEUE: QueueName = QueueName::SliceResponse;
    const KIND: &'static str = "SliceResponse";
}
impl Message for ImageResponse {
    const QUEUE: QueueName = QueueName::ImageResponse;
    const KIND: &'static str = "ImageResponse";
}
