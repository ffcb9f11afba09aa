//! Tessera's integration tests, in one binary so they link once.

mod api;
mod bad_input;
mod browser;
mod conformance;
mod crash;
mod interop;
mod messages;
mod openapi;
mod pages;
mod pipeline;
mod runtime;
mod viewer;
mod web_features;
