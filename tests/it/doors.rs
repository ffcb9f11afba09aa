//! Every door of a job takes every field of the job specification: driven by the one list of
//! fields (`tessera_shared::spec::FIELDS`), each must be read by the REST API, documented in its
//! OpenAPI document, offered by the home form (all but slices, the operator's default) and,
//! unless the list says why not, be a flag of
//! `tessera render`. Going the other way, the API documents no field the list lacks, and
//! `tessera render` has no flag that a job cannot ask for but those named below.

use std::collections::BTreeSet;

use serde_json::Value;
use tessera_shared::spec::{FIELDS, Kind};

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
    tessera_shared::spec::field(field).map_or_else(
        || panic!("no job field {field:?}"),
        |declared| declared.sample,
    )
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
    let document: Value = serde_json::from_str(tessera_web::api::openapi::document_json()).unwrap();
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

/// The input of `name` in the home page's HTML (from `<input` to its `>`).
fn input_tag<'a>(home: &'a str, name: &str) -> Option<&'a str> {
    let at = home.find(&format!("name=\"{name}\""))?;
    let start = home[..at].rfind('<')?;
    let end = at + home[at..].find('>')?;
    Some(&home[start..=end])
}

/// Every whole-number option has one range and one default, and every door says the same: the
/// API document, the home form's input, `tessera render --help`, and the API itself, which
/// takes the bounds and refuses one past them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_door_has_the_declared_ranges_and_defaults() {
    let settings = test_settings();
    let limits = settings.limits.clone();
    let app = spawn_app_with(settings, false).await;
    let document: Value = serde_json::from_str(tessera_web::api::openapi::document_json()).unwrap();
    let schemas = &document["components"]["schemas"]["JobSubmission"]["properties"];
    let home = app.get("/").await.text().await.unwrap();
    let help = render_help();
    let served: Vec<Value> = app.get("/api/v1/options").await.json().await.unwrap();
    let mut checked = 0;
    for field in FIELDS {
        let name = field.name;
        let doc = served
            .iter()
            .find(|o| o["name"] == name)
            .unwrap_or_else(|| panic!("the options document lacks {name}"));
        assert_eq!(doc["label"], field.label, "{name}");
        assert_eq!(doc["default"], field.default_text(), "{name}");
        let Kind::Whole {
            min, max, default, ..
        } = field.kind
        else {
            continue;
        };
        checked += 1;
        let served_max = field.max(&limits).filter(|m| *m != u32::MAX);
        assert_eq!(doc["min"], min, "{name}");
        assert_eq!(doc["max"].as_u64(), served_max.map(u64::from), "{name}");
        // The API document.
        let schema = &schemas[name];
        assert_eq!(schema["minimum"], min, "{name}: {schema}");
        assert_eq!(schema["maximum"], max, "{name}: {schema}");
        assert_eq!(schema["default"].as_u64(), default.map(u64::from), "{name}");
        // The home form's input, where it has one made from the declaration.
        if let Some(tag) = input_tag(&home, name).filter(|t| t.contains("type=\"number\"")) {
            assert!(tag.contains(&format!("min=\"{min}\"")), "{tag}");
            if let Some(max) = served_max {
                assert!(tag.contains(&format!("max=\"{max}\"")), "{tag}");
            }
            if let Some(d) = default {
                assert!(tag.contains(&format!("value=\"{d}\"")), "{tag}");
            }
        }
        // `tessera render --help`: the flag's paragraph gives the range and the default.
        if let Ok(flag) = field.flag {
            let at = help.find(&format!("{flag} ")).expect(flag);
            let paragraph = &help[at..at + help[at..].find("\n  ").unwrap_or(help.len() - at)];
            let paragraph = paragraph.split_whitespace().collect::<Vec<_>>().join(" ");
            if max != u32::MAX {
                assert!(
                    paragraph.contains(&format!("{min} to {max}")),
                    "{paragraph}"
                );
            }
            if let Some(d) = default {
                assert!(paragraph.contains(&format!("default: {d}")), "{paragraph}");
            }
        }
        // The API: the bounds are taken (refused only for the unknown library), one past is not.
        let bound = served_max.unwrap_or(min);
        for (value, taken) in [(min, true), (bound, true)]
            .into_iter()
            .chain(served_max.map(|m| (m + 1, false)))
            .chain(min.checked_sub(1).map(|m| (m, false)))
        {
            let form = Form::new()
                .part("image", Part::bytes(vec![1, 2, 3]).file_name("x.png"))
                .text("library", "no-such-library")
                .text(name, value.to_string());
            let (_, code) = error_code(app.post_job(form).await).await;
            assert_eq!(
                code != "out_of_range",
                taken,
                "{name}={value}: {code} (range {min} to {bound})"
            );
        }
    }
    assert!(checked >= 10, "only {checked} whole-number options checked");
}

/// An error about one field names it (`error.field`), so a form can mark that field and show
/// the server's message beside it without knowing the codes: from the code itself (an image
/// that is not one, a cap the library cannot meet) or from the field the message names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_about_a_field_names_the_field() {
    let app = spawn_app_with(test_settings(), false).await;
    let field_of = |form: Form| {
        let app = &app;
        async move {
            let body: Value = app.post_job(form).await.json().await.unwrap();
            body["error"]["field"].as_str().map(str::to_string)
        }
    };
    let not_an_image = Form::new()
        .part("image", Part::bytes(vec![1, 2, 3]).file_name("x.png"))
        .text("library", "emoji");
    assert_eq!(field_of(not_an_image).await.as_deref(), Some("image"));
    for (name, value) in [("blend", "101"), ("cells", "0"), ("tile_size", "x")] {
        let form = Form::new()
            .part("image", Part::bytes(vec![1, 2, 3]).file_name("x.png"))
            .text("library", "emoji")
            .text(name, value);
        assert_eq!(
            field_of(form).await.as_deref(),
            Some(name),
            "{name}={value}"
        );
    }
    // Not about a field: none named.
    let res = app
        .get("/api/v1/jobs/00000000-0000-4000-8000-000000000000")
        .await;
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["code"], "job_not_found");
    assert!(body["error"].get("field").is_none(), "{body}");
}
