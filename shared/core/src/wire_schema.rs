//! The wire contract as JSON Schemas (draft 2020-12), generated from the message types: each
//! message kind whole (envelope and body), the large-body pointer and the poison record.
//! Checked in under `docs/schemas/` (see `docs/messages.md`); a test keeps them equal to what
//! the types generate.

use schemars::JsonSchema;
use uuid::Uuid;

use crate::messages::{
    ENVELOPE_VERSION, ImageRequest, ImageResponse, LibraryRequest, Message, PhotoRequest,
    PhotoReview, SliceRequest, SliceResponse,
};

/// A whole message of kind `M` on the wire, for its schema: the envelope around the body.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct WireSchema<M> {
    /// The envelope version.
    v: u32,
    /// The message kind.
    kind: String,
    /// Who asked for the work.
    client_id: Uuid,
    /// Unique per message sent; a redelivered message keeps it.
    request_id: Uuid,
    body: M,
    /// The cause of the last failed attempt, noted by a retry.
    #[serde(default)]
    last_error: Option<String>,
}

/// The pointer sent in place of a message whose text is over the queue's 64 KiB: the text
/// is in the blob it names.
#[derive(JsonSchema)]
#[allow(dead_code)]
struct PointerSchema {
    /// The envelope version.
    v: u32,
    /// The message kind.
    kind: String,
    /// The blob holding the message's JSON text: `messagebodies/{queue}/{uuid}`.
    body_blob: String,
}

/// The schemas, by file name.
pub fn wire_schemas() -> Vec<(String, serde_json::Value)> {
    fn message<M: Message + JsonSchema>() -> (String, serde_json::Value) {
        let mut schema = schemars::schema_for!(WireSchema<M>).to_value();
        schema["title"] = format!("{} message", M::KIND).into();
        schema["properties"]["v"] = serde_json::json!({ "const": ENVELOPE_VERSION });
        schema["properties"]["kind"] = serde_json::json!({ "const": M::KIND });
        (format!("{}.schema.json", M::QUEUE.as_str()), schema)
    }
    let mut pointer = schemars::schema_for!(PointerSchema).to_value();
    pointer["title"] = "Large-body pointer".into();
    pointer["properties"]["v"] = serde_json::json!({ "const": ENVELOPE_VERSION });
    let mut poison = schemars::schema_for!(crate::runtime::PoisonRecord).to_value();
    poison["title"] = "Poison record".into();
    vec![
        message::<ImageRequest>(),
        message::<SliceRequest>(),
        message::<SliceResponse>(),
        message::<ImageResponse>(),
        message::<PhotoRequest>(),
        message::<LibraryRequest>(),
        message::<PhotoReview>(),
        ("pointer.schema.json".into(), pointer),
        ("poison-record.schema.json".into(), poison),
    ]
}
