//! What the front end runs beside its handlers: the `imageresponse` listener that finishes jobs,
//! the webhook sender, and the pollers behind live job event streams.

pub(crate) mod job_outcomes;
pub(crate) mod job_streams;
pub mod webhook;
