//! Tessera's integration tests, in one binary so they link once.

// Test helpers unwrap and print too: a panic is a failed test, with its cause.
#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

mod api;
mod browser;
mod campaign_events;
mod cli;
mod conformance;
mod contract;
mod crash;
mod doors;
mod event_boards;
mod event_mosaics;
mod event_owners;
mod function_length;
mod growing_libraries;
mod hostile_files;
mod hostile_guests;
mod interop;
mod job_outputs;
mod job_spec;
mod journeys;
mod keys;
mod library_uploads;
mod messages;
mod module_cycles;
mod notifications;
mod openapi;
mod ops;
mod pages;
mod phone_photos;
mod photos;
mod pipeline;
mod print;
mod refusals;
mod roles_on_one_host;
mod runtime;
mod scripts;
mod security;
mod support;
mod transaction_counts;
mod viewer;
mod wedding_evening;
mod wedding_guests;
