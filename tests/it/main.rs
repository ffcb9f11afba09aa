//! Tessera's integration tests, in one binary so they link once.

// Test helpers unwrap and print too: a panic is a failed test, with its cause.
#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

mod api;
mod bad_input;
mod browser;
mod conformance;
mod crash;
mod interop;
mod messages;
mod openapi;
mod ops;
mod pages;
mod pipeline;
mod runtime;
mod viewer;
mod web_features;

/// A free port on the loopback interface.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The test venv's Python (`scripts/azurite.sh python`), or `TESSERA_TEST_PYTHON`.
fn python() -> std::path::PathBuf {
    let path = std::env::var_os("TESSERA_TEST_PYTHON")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".tools/venv/bin/python")
        });
    assert!(
        path.exists(),
        "no Python at {}: run scripts/test.sh, or scripts/azurite.sh python (or set TESSERA_TEST_PYTHON)",
        path.display()
    );
    path
}
