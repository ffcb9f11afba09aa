//! Tessera's integration tests, in one binary so they link once.

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
