//! Tessera's integration tests, in one binary so they link once.

mod conformance;
mod crash;
mod messages;
mod pipeline;
