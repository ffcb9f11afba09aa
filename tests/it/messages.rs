//! Golden JSON for every message type: the wire format is a contract between processes and
//! versions, so a change to it must show up here.

use std::path::Path;

use tessera_shared::messages::{
    DecodeError, Envelope, Grid, ImageRequest, ImageResponse, JobOutcome, LibraryRequest, Message,
    PhotoRequest, PhotoReview, QueueName, SliceRequest, SliceResponse,
};

fn golden(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/messages")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Decodes a golden file, checks that its encoding decodes to the same message (the goldens
/// keep the names and the shortness of the messages as first sent; each option is encoded now
/// under its own name, with every option given), and returns it.
fn round_trip<M: Message + PartialEq + std::fmt::Debug>(name: &str) -> Envelope<M> {
    let text = golden(name);
    let envelope = Envelope::<M>::decode(&text).expect("golden message decodes");
    let again = Envelope::<M>::decode(&envelope.encode()).expect("its encoding decodes");
    assert_eq!(again, envelope, "{name} encodes to the same message");
    envelope
}

#[test]
fn image_request_golden() {
    let m = round_trip::<ImageRequest>("image_request.json");
    assert_eq!(ImageRequest::QUEUE, QueueName::ImageRequest);
    assert_eq!(m.body.spec.grid, Grid::Cells { across: 128 });
    assert_eq!(m.body.spec.tile_size, 16);
    assert_eq!(m.body.spec.slices, 8);
    assert_eq!(m.body.spec.library.id, "emoji-noto");
}

/// Oblong tiles: the height beside the width. Square tiles carry no height, so the messages of
/// square jobs read as they always have, and messages from before oblong tiles read as square.
#[test]
fn image_request_with_oblong_tiles_golden() {
    let m = round_trip::<ImageRequest>("image_request_oblong.json");
    assert_eq!(
        (m.body.spec.tile_size, m.body.spec.tile_height),
        (24, Some(18))
    );
    assert_eq!(m.body.spec.tile().to_string(), "24x18");
    let square = round_trip::<ImageRequest>("image_request.json");
    assert_eq!(square.body.spec.tile_height, None);
    assert_eq!(square.body.spec.tile().to_string(), "16");
    let text =
        golden("image_request_oblong.json").replace("\"tile_height\": 18", "\"tile_height\": 300");
    let err = Envelope::<ImageRequest>::decode(&text).unwrap_err();
    assert!(
        err.to_string()
            .contains("tile_height must be 4 to 256 pixels, not 300"),
        "{err}"
    );
    let text = golden("image_request_oblong.json")
        .replace("\"tile_height\": 18", "\"tile_height\": \"18\"");
    assert!(Envelope::<ImageRequest>::decode(&text).is_err());
}

/// Adaptive tile sizes: `"MIN..MAX"` in the options. Jobs without them carry no such field, so
/// their messages read as they always have; sizes that do not double, or adaptive sizes with
/// oblong tiles, do not decode (poison).
#[test]
fn image_request_with_adaptive_sizes_golden() {
    let m = round_trip::<ImageRequest>("image_request_adaptive.json");
    let sizes = m.body.spec.options.adaptive.expect("adaptive sizes");
    assert_eq!((sizes.min, sizes.max), (8, 32));
    let plain = round_trip::<ImageRequest>("image_request.json");
    assert_eq!(plain.body.spec.options.adaptive, None);
    assert!(!plain.encode().contains("adaptive"));
    for (from, to, says) in [
        ("\"8..32\"", "\"8..24\"", "doubled"),
        ("\"8..32\"", "\"8-32\"", "MIN..MAX"),
        ("\"8..32\"", "32", "string"),
        (
            "\"tile_size\": 16,",
            "\"tile_size\": 24, \"tile_height\": 18,",
            "square",
        ),
    ] {
        let text = golden("image_request_adaptive.json").replace(from, to);
        let err = Envelope::<ImageRequest>::decode(&text).unwrap_err();
        assert!(err.to_string().contains(says), "{to}: {err}");
    }
    let null = golden("image_request_adaptive.json").replace("\"8..32\"", "null");
    let decoded = Envelope::<ImageRequest>::decode(&null).unwrap();
    assert_eq!(decoded.body.spec.options.adaptive, None);
}

#[test]
fn slice_request_golden() {
    let m = round_trip::<SliceRequest>("slice_request.json");
    assert_eq!(SliceRequest::QUEUE.as_str(), "slicerequest");
    assert_eq!((m.body.seq, m.body.count), (2, 8));
    assert_eq!(m.body.spec.options.max_uses, Some(40));
    assert_eq!(m.body.spec.options.blend, 25);
    // Sent as `blend_percent`, encoded as the option is named on every door.
    let encoded = m.encode();
    assert!(encoded.contains("\"blend\":25") && !encoded.contains("blend_percent"));
    assert!(m.body.spec.options.flip && m.body.spec.options.rotate);
    // Written before tile transforms existed: both default to off.
    let older = golden("slice_request.json").replace(", \"flip\": true, \"rotate\": true", "");
    let older = Envelope::<SliceRequest>::decode(&older).unwrap();
    assert!(!older.body.spec.options.flip && !older.body.spec.options.rotate);
    let text = golden("slice_request.json").replace("\"flip\": true", "\"flip\": 1");
    assert!(Envelope::<SliceRequest>::decode(&text).is_err());
}

#[test]
fn slice_response_golden() {
    let m = round_trip::<SliceResponse>("slice_response.json");
    assert_eq!(SliceResponse::QUEUE.as_str(), "sliceresponse");
    assert_eq!(m.body.render_ms, 412);
    assert_eq!((m.body.count, m.body.transactions), (8, 6));
    // Written before these fields existed: they default to zero.
    let older = golden("slice_response.json")
        .replace(",\n    \"count\": 8", "")
        .replace(",\n    \"transactions\": 6", "");
    let older = Envelope::<SliceResponse>::decode(&older).unwrap();
    assert_eq!((older.body.count, older.body.transactions), (0, 0));
}

#[test]
fn photo_request_golden() {
    let request = round_trip::<PhotoRequest>("photo_request.json");
    assert_eq!(PhotoRequest::QUEUE.as_str(), "photorequest");
    assert_eq!(
        request.body.photo_id.to_string(),
        "dcde21e3-58cf-4a18-81d9-1e14a9223bb7"
    );
    // Without the photo it names, it is no request.
    let text = golden("photo_request.json").replace(
        ",\n    \"photo_id\": \"dcde21e3-58cf-4a18-81d9-1e14a9223bb7\"",
        "",
    );
    assert!(Envelope::<PhotoRequest>::decode(&text).is_err());
}

#[test]
fn photo_review_golden() {
    let review = round_trip::<PhotoReview>("photo_review.json");
    assert_eq!(PhotoReview::QUEUE.as_str(), "photoreview");
    assert!(review.body.verdict_path.ends_with("/verdict"));
    // Without its token, a classifier could not answer: poison, not a review.
    let text = golden("photo_review.json").replace(
        "0d1e2f3a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6",
        "",
    );
    assert!(Envelope::<PhotoReview>::decode(&text).is_err());
}

#[test]
fn library_request_golden() {
    let request = round_trip::<LibraryRequest>("library_request.json");
    assert_eq!(LibraryRequest::QUEUE.as_str(), "libraryrequest");
    assert_eq!(
        request.body.job_id.to_string(),
        "5b2c3d4e-6f70-4a81-92b3-c4d5e6f70819"
    );
    // Without the job it names, it is no request.
    let text = golden("library_request.json").replace(
        ",\n    \"job_id\": \"5b2c3d4e-6f70-4a81-92b3-c4d5e6f70819\"",
        "",
    );
    assert!(Envelope::<LibraryRequest>::decode(&text).is_err());
}

#[test]
fn image_response_goldens() {
    let done = round_trip::<ImageResponse>("image_response_done.json");
    assert_eq!(ImageResponse::QUEUE.as_str(), "imageresponse");
    assert!(matches!(
        done.body.outcome,
        JobOutcome::Done { width: 2048, .. }
    ));
    let failed = round_trip::<ImageResponse>("image_response_failed.json");
    match failed.body.outcome {
        JobOutcome::Failed { reason } => assert!(reason.contains("slice 3 of 8")),
        other => panic!("expected a failure, got {other:?}"),
    }
}

/// Within a version, a reader ignores fields it does not know, at every level: a newer sender
/// (or an outside producer) may add them.
#[test]
fn unknown_fields_are_ignored_within_a_version() {
    let text = golden("image_request.json")
        .replace("\"v\": 1,", "\"v\": 1, \"trace\": \"abc\",")
        .replace(
            "\"tile_size\": 16,",
            "\"tile_size\": 16, \"notify_email\": \"a@example.com\",",
        )
        .replace("\"version\": 1 }", "\"version\": 1, \"region\": \"eu\" }")
        .replace("\"across\": 128 }", "\"across\": 128, \"hint\": 3 }")
        .replace(
            "\"blend_percent\": 0 }",
            "\"blend_percent\": 0, \"future\": true }",
        );
    assert_eq!(text.matches("trace").count(), 1);
    assert_eq!(text.matches("future").count(), 1);
    let m = Envelope::<ImageRequest>::decode(&text).expect("unknown fields are ignored");
    let plain = Envelope::<ImageRequest>::decode(&golden("image_request.json")).unwrap();
    assert_eq!(m, plain);
    let text = golden("image_response_failed.json").replace(
        "\"status\": \"failed\",",
        "\"status\": \"failed\", \"code\": \"x\",",
    );
    assert!(text.contains("\"code\""), "{text}");
    Envelope::<ImageResponse>::decode(&text).expect("unknown outcome fields are ignored");
}

/// Both encodings read the same, whichever a reader writes; anything else is a clear error.
#[test]
fn messages_read_in_either_encoding() {
    use tessera_shared::messages::Encoding;
    let text = golden("image_request.json");
    let plain = Envelope::<ImageRequest>::decode(&text).unwrap();
    for encoding in [Encoding::Json, Encoding::Base64] {
        let wire = encoding.to_wire(&text);
        assert_eq!(Encoding::of(&wire), encoding);
        let json = Encoding::from_wire(&wire).unwrap();
        assert_eq!(Envelope::<ImageRequest>::decode(&json).unwrap(), plain);
    }
    assert!(!Encoding::Base64.to_wire(&text).contains('{'));
    let err = Encoding::from_wire("not base64 at all!").unwrap_err();
    assert!(
        err.to_string()
            .contains("neither JSON nor base64-encoded JSON"),
        "{err}"
    );
}

#[test]
fn unknown_version_is_a_typed_error() {
    let text = golden("image_request.json").replace("\"v\": 1", "\"v\": 2");
    assert_eq!(
        Envelope::<ImageRequest>::decode(&text).unwrap_err(),
        DecodeError::UnsupportedVersion { found: 2 }
    );
}

#[test]
fn malformed_and_mismatched_messages_are_typed_errors() {
    assert!(matches!(
        Envelope::<ImageRequest>::decode("{not json"),
        Err(DecodeError::Malformed(_))
    ));
    assert!(matches!(
        Envelope::<ImageRequest>::decode(&golden("slice_request.json")),
        Err(DecodeError::WrongKind {
            expected: "ImageRequest",
            ..
        })
    ));
    let missing_field =
        golden("slice_response.json").replace("\"render_ms\": 412", "\"render\": 412");
    assert!(matches!(
        Envelope::<SliceResponse>::decode(&missing_field),
        Err(DecodeError::InvalidBody {
            kind: "SliceResponse",
            ..
        })
    ));
}

#[test]
fn out_of_range_values_are_invalid_bodies() {
    let text = golden("image_request.json").replace("\"tile_size\": 16", "\"tile_size\": 3");
    let err = Envelope::<ImageRequest>::decode(&text).unwrap_err();
    assert!(
        err.to_string()
            .contains("tile_size must be 4 to 256 pixels, not 3"),
        "{err}"
    );
    let text = golden("slice_request.json").replace("\"seq\": 2", "\"seq\": 8");
    assert!(Envelope::<SliceRequest>::decode(&text).is_err());
}

#[test]
fn poison_queue_names() {
    let names: Vec<String> = QueueName::ALL.iter().map(|q| q.poison()).collect();
    assert_eq!(
        names,
        [
            "imagerequest-poison",
            "slicerequest-poison",
            "sliceresponse-poison",
            "imageresponse-poison",
            "photorequest-poison",
            "libraryrequest-poison",
            "photoreview-poison",
        ]
    );
}

/// `tessera queues requeue` sends poison records' bodies back to their queue, and raw messages
/// as Azure tooling leaves them in a poison queue back as they are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requeue_takes_records_and_raw_messages() {
    use tessera_shared::messages::Encoding;
    use tessera_shared::storage::SendOptions;
    use tessera_shared::storage::embedded::EmbeddedStorage;

    let dir = tempfile::tempdir().unwrap();
    let original = golden("image_request.json").replace('\n', "");
    let raw = Encoding::Base64.to_wire(&original);
    {
        let storage = EmbeddedStorage::open(dir.path()).unwrap();
        let queues = storage.queues();
        for q in ["imagerequest", "imagerequest-poison"] {
            queues.create_queue(q).await.unwrap();
        }
        let record = serde_json::json!({
            "reason": "received 6 times, over the poison threshold of 5",
            "queue": "imagerequest", "message_id": "m1", "dequeue_count": 6,
            "insertion_time": "2026-11-01T10:00:00Z", "poisoned_at": "2026-11-01T10:05:00Z",
            "body": original,
        });
        for body in [record.to_string(), raw.clone()] {
            queues
                .send("imagerequest-poison", &body, SendOptions::default())
                .await
                .unwrap();
        }
    }
    crate::support::succeeds(
        std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
            .env("TESSERA_DATA", dir.path())
            .env("TESSERA_LOG", "warn")
            .args(["queues", "requeue", "imagerequest"]),
    );
    let storage = EmbeddedStorage::open(dir.path()).unwrap();
    let queues = storage.queues();
    assert_eq!(
        queues
            .approximate_depth("imagerequest-poison")
            .await
            .unwrap(),
        0
    );
    let mut bodies: Vec<String> = queues
        .peek("imagerequest", 32)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.body)
        .collect();
    bodies.sort();
    let mut want = vec![original, raw];
    want.sort();
    assert_eq!(bodies, want);
}

/// The checked-in JSON Schemas (`docs/schemas/`) are what the types generate, and every golden
/// message is valid under its kind's schema (and a wrong one is not). `TESSERA_BLESS=1` rewrites
/// the files after a deliberate change to the wire format.
#[test]
fn schemas_match_the_types_and_the_golden_messages() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/schemas");
    let schemas = tessera_shared::wire_schema::wire_schemas();
    for (name, schema) in &schemas {
        let text = serde_json::to_string_pretty(schema).unwrap() + "\n";
        let path = dir.join(name);
        if std::env::var_os("TESSERA_BLESS").is_some() {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &text).unwrap();
        }
        let checked_in = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (TESSERA_BLESS=1 writes it)", path.display()));
        assert_eq!(
            checked_in, text,
            "{name} differs from the types (TESSERA_BLESS=1 rewrites it)"
        );
    }
    let validator = |name: &str| {
        let schema = &schemas.iter().find(|(n, _)| n == name).unwrap().1;
        jsonschema::validator_for(schema).unwrap()
    };
    let goldens = [
        ("imagerequest.schema.json", "image_request.json"),
        ("imagerequest.schema.json", "image_request_oblong.json"),
        ("imagerequest.schema.json", "image_request_adaptive.json"),
        ("slicerequest.schema.json", "slice_request.json"),
        ("sliceresponse.schema.json", "slice_response.json"),
        ("imageresponse.schema.json", "image_response_done.json"),
        ("imageresponse.schema.json", "image_response_failed.json"),
        ("photorequest.schema.json", "photo_request.json"),
        ("libraryrequest.schema.json", "library_request.json"),
        ("photoreview.schema.json", "photo_review.json"),
    ];
    for (schema, file) in goldens {
        let message: serde_json::Value = serde_json::from_str(&golden(file)).unwrap();
        let v = validator(schema);
        let errors: Vec<String> = v.iter_errors(&message).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{file} under {schema}: {errors:?}");
        // The same message as another kind, or with a field of the wrong type, is not valid.
        let other = if schema == "imagerequest.schema.json" {
            "slicerequest.schema.json"
        } else {
            "imagerequest.schema.json"
        };
        assert!(!validator(other).is_valid(&message), "{file} under {other}");
        let mut wrong = message.clone();
        wrong["request_id"] = 7.into();
        assert!(!v.is_valid(&wrong), "{file} with a numeric request_id");
    }
    let pointer = serde_json::json!({
        "v": 1, "kind": "SliceRequest",
        "body_blob": "messagebodies/slicerequest/0b7d5e2c-9f4a-4e1b-8c3d-2a6f1e9b7c44"
    });
    assert!(validator("pointer.schema.json").is_valid(&pointer));
    let record = serde_json::json!({
        "reason": "undecodable body: message is not valid JSON", "queue": "imagerequest",
        "message_id": "m1", "dequeue_count": 1,
        "insertion_time": "2026-11-01T10:00:00Z", "poisoned_at": "2026-11-01T10:00:01Z",
        "body": "{not json"
    });
    assert!(validator("poison-record.schema.json").is_valid(&record));
}
