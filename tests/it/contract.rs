//! The API against its own OpenAPI document, as an outsider tests it: Schemathesis (from PyPI,
//! in the test venv) generates requests from the document the server serves, with every check
//! it has (server errors, statuses, content types, headers and bodies as documented, schema-valid
//! requests accepted and schema-violating ones refused, stateful sequences through the links it
//! infers), against a running app with its workers. Its settings, and why each one is there, are
//! in `tests/contract/schemathesis.toml`.

use std::time::Duration;

use tessera_web::WebSettings;

use crate::support::{python, spawn_app_with, test_settings};

/// Cases per operation and phase: enough to find what a new user finds, in a few seconds each.
const MAX_EXAMPLES: &str = "60";
/// Generation is seeded, so a failure replays: the same seed gives the same cases.
const SEED: &str = "20261124";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemathesis_finds_no_disagreement_between_the_document_and_the_server() {
    // As `tessera serve` runs it: a default library, so a job may leave `library` out.
    // One client makes every request: the caps on events per owner and per address would
    // leave event creation untested after the first few.
    let settings = WebSettings {
        default_library: "emoji".into(),
        guests: tessera_web::web_settings::GuestSettings {
            max_events_per_owner: 0,
            events_per_hour_per_address: 0,
            ..Default::default()
        },
        ..test_settings()
    };
    let app = spawn_app_with(settings, true).await;
    let config = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/contract/schemathesis.toml"
    );
    let run = tokio::process::Command::new(python())
        .args([
            "-m",
            "schemathesis.cli",
            "--no-color",
            "--config-file",
            config,
        ])
        .arg("run")
        .arg(app.url("/api/v1/openapi.json"))
        .args(["--max-examples", MAX_EXAMPLES, "--seed", SEED])
        // No examples kept from earlier runs: every run is the seed's alone, as on a fresh
        // clone.
        .args(["--generation-database", "none"])
        .args(["--request-timeout", "30"])
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(600), run)
        .await
        .expect("Schemathesis finished within 10 minutes")
        .expect("Schemathesis runs (scripts/azurite.sh python installs it)");
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "Schemathesis found disagreements:\n{report}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // It ran every operation and generated cases: a run that tested nothing is no pass.
    let words: Vec<&str> = report.split_whitespace().collect();
    let before = |word: &str| -> u32 {
        words
            .windows(2)
            .find(|w| w[1] == word)
            .and_then(|w| w[0].parse().ok())
            .unwrap_or(0)
    };
    let (selected, total) = (before("selected"), before("total"));
    assert!(
        selected > 0 && selected == total,
        "{selected} of {total} operations ran:\n{report}"
    );
    let generated = before("generated,");
    assert!(
        generated >= 500,
        "only {generated} cases generated:\n{report}"
    );
}
