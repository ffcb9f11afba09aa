//! The test command's closing line cannot lie: a suite that cannot run (a missing binary, a tool
//! that failed to install, a crash before its own summary) counts as failed
//! (`scripts/suites.sh`, which `scripts/test.sh` uses).

use std::path::Path;
use std::process::Command;

/// Runs `body` in bash after sourcing `scripts/suites.sh`, in the repository; its stdout and
/// whether it succeeded.
fn with_suites(body: &str) -> (String, bool) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let script = format!("set -euo pipefail\n. scripts/suites.sh\n{body}");
    let out = Command::new("bash")
        .arg("-c")
        .arg(script)
        .current_dir(root)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.success(),
    )
}

#[test]
fn a_suite_that_cannot_run_or_crashes_counts_as_failed_in_the_closing_line() {
    let (out, ok) = with_suites(
        r#"
log=$(mktemp)
status=0
run_suite good "$log" bash -c 'echo "good: 3 passed, 0 failed"' >/dev/null || status=$?
run_suite cargo "$log" bash -c 'echo "test result: ok. 4 passed; 0 failed; 0 ignored"' >/dev/null || status=$?
run_suite missing "$log" bash -c 'echo "no binary at /nowhere/tessera" >&2; exit 2' >/dev/null 2>&1 || status=$?
run_suite crash "$log" bash -c 'echo "running 5 checks"; kill -SEGV $$' >/dev/null 2>&1 || status=$?
run_suite silent "$log" true >/dev/null 2>&1 || status=$?
run_suite bad "$log" bash -c 'echo "bad: 1 passed, 2 failed"; exit 1' >/dev/null || status=$?
run_suite cargo "$log" bash -c 'echo "error: could not compile"; exit 101' >/dev/null 2>&1 || status=$?
summarize "$log"
rm -f "$log"
echo "status $status"
"#,
    );
    assert!(ok, "{out}");
    // Passed: good 3, cargo 4, bad 1. Failed: missing, crash, silent, the compile error (1 each)
    // and bad's own 2.
    assert!(out.contains("tests: 8 passed, 6 failed"), "{out}");
    assert!(!out.contains("status 0"), "{out}");
}

#[test]
fn the_ui_audit_without_its_binary_is_a_failure_in_the_closing_line() {
    let (out, _) = with_suites(
        r#"
log=$(mktemp)
run_suite audit "$log" env TESSERA_BIN=/nonexistent/tessera scripts/test-audit.sh >/dev/null 2>&1 \
  && echo "audit succeeded" || true
summarize "$log"
rm -f "$log"
"#,
    );
    assert!(!out.contains("audit succeeded"), "{out}");
    assert!(out.contains("tests: 0 passed, 1 failed"), "{out}");
}

#[test]
fn the_suites_find_the_binary_where_cargo_builds_it() {
    let elsewhere = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = crate::support::succeeds(
        Command::new("bash")
            .arg("-c")
            .arg(". scripts/suites.sh && tessera_bin release")
            .current_dir(root)
            .env("CARGO_TARGET_DIR", elsewhere.path()),
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        elsewhere.path().join("release/tessera").to_string_lossy()
    );
}
