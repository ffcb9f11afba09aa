//! Every door of a job takes every field of the job specification: driven by the one list of
//! fields (`tessera_shared::spec::FIELDS`), each must be read by the REST API, documented in its
//! OpenAPI document, offered by the home form (all but slices, the operator's default) and,
//! unless the list says why not, be a flag of
//! `tessera render`. Going the other way, the API documents no field the list lacks, and
//! `tessera render` has no flag that a job cannot ask for but those named below.

use std::collections::BTreeSet;

use serde_json::Value;
use tessera_shared::spec::FIELDS;

use reqwest::multipart::{Form, Part};

use crate::support::{error_code, spawn_app_with, test_settings};

/// Flags of `tessera render` that a job of the service does not take, and why.
const RENDER_ONLY: &[(&str, &str)] = &[
    ("--output", "a job's result is served at /result"),
    ("--dzi", "a job's Deep Zoom pyramid is served at /dzi"),
    ("--plan", "which tile is where is served at /cells"),
    (
        "--placements",
        "where each photo is, is served at /placements",
    ),
    (
        "--max-pixels",
        "the service's limit is the operator's (limits.max_output_pixels)",
    ),
    (
        "--metrics",
        "a job's quality figures are always in its record",
    ),
    ("--quiet", "progress bars exist on a terminal only"),
    ("--help", "clap's own"),
    ("--version", "clap's own"),
    ("--data", "a global option"),
    ("--config", "a global option"),
    ("--log-format", "a global option"),
];

/// A value each field takes, for a submission that is refused for some other reason.
fn sample(field: &str) -> &'static str {
    match field {
        "library" => "no-such-library",
        "tile_size" => "16",
        "cells" => "8",
        "per_pixel" => "false",
        "slices" => "2",
        "repeat_radius" => "1",
        "max_uses" => "3",
        "blend" => "10",
        "min_uses" => "1",
        "overlay" => "30",
        "form" => "70",
        "flip" => "true",
        "rotate" => "true",
        "background" => "auto",
        "adaptive" => "",
        "allow_large" => "true",
        "print" => "A4@150dpi",
        "format" => "tiff",
        "quality" => "85",
        // Empty: none (a URL would be refused first, webhooks being off in the test).
        "webhook" => "",
        other => panic!("no sample value for the job field {other:?}: add one here"),
    }
}

fn render_help() -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["render", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_job_field_is_taken_at_every_door() {
    let app = spawn_app_with(test_settings(), false).await;
    let document: Value =
        serde_json::from_str(tessera_web::routes::openapi::document_json()).unwrap();
    let documented: BTreeSet<String> =
        document["components"]["schemas"]["JobSubmission"]["properties"]
            .as_object()
            .expect("JobSubmission has properties")
            .keys()
            .cloned()
            .collect();
    let home = app.get("/").await.text().await.unwrap();
    let help = render_help();

    for field in FIELDS {
        let name = field.name;
        assert!(documented.contains(name), "the API document lacks {name}");
        // A radio button offers its field as its value (the grid: cells or per_pixel). Slices
        // are the operator's default: the form leaves them to the server.
        let offered = home.contains(&format!("name=\"{name}\""))
            || home.contains(&format!("value=\"{name}\""));
        assert_eq!(
            offered,
            name != "slices",
            "the home form {} {name}",
            if offered { "offers" } else { "does not offer" }
        );
        match field.flag {
            Ok(flag) => assert!(
                help.contains(&format!("{flag} ")) || help.contains(&format!("{flag}\n")),
                "`tessera render` has no {flag} for {name}:\n{help}"
            ),
            Err(why) => assert!(!why.is_empty()),
        }
        // The API reads it: refused for the unknown library, not for an unknown field.
        let form = Form::new()
            .part("image", Part::bytes(vec![1, 2, 3]).file_name("x.png"))
            .text(name, sample(name));
        let res = app.post_job(form).await;
        let (_, code) = error_code(res).await;
        assert_ne!(code, "unknown_field", "the API does not read {name}");
    }

    // Nothing documented or flagged that the list lacks.
    let names: BTreeSet<&str> = FIELDS.iter().map(|f| f.name).collect();
    for property in &documented {
        assert!(
            property == "image" || names.contains(property.as_str()),
            "the API documents {property}, which the job specification lacks"
        );
    }
    let flags: BTreeSet<&str> = FIELDS.iter().filter_map(|f| f.flag.ok()).collect();
    // The options section: lines that start with a flag (`-l, --library <LIBRARY>`).
    let offered = help
        .lines()
        .map(str::trim_start)
        .filter(|line| line.starts_with('-'))
        .filter_map(|line| line.split_whitespace().find(|w| w.starts_with("--")))
        .map(|w| w.trim_end_matches(','));
    for flag in offered {
        assert!(
            flags.contains(flag) || RENDER_ONLY.iter().any(|(f, _)| *f == flag),
            "`tessera render {flag}` is an option a job cannot ask for: add it to the job \
             specification, or to RENDER_ONLY with the reason"
        );
    }
}
