//! Tessera's integration tests, in one binary so they link once.

// Test helpers unwrap and print too: a panic is a failed test, with its cause.
#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

mod abuse;
mod api;
mod bad_input;
mod browser;
mod cli;
mod conformance;
mod contract;
mod costs;
mod crash;
mod doors;
mod function_length;
mod hostile_files;
mod interop;
mod job_spec;
mod messages;
mod module_cycles;
mod notifications;
mod openapi;
mod ops;
mod pages;
mod photos;
mod pipeline;
mod print;
mod runtime;
mod scripts;
mod shared_machine;
mod support;
mod viewer;
mod web_features;
