//! What stands between a request and a handler: who the client is and what it may do (keys,
//! sign-in, forgery checks, per-client and per-address admission), and the hard limits on what
//! it sends (multipart fields, uploaded images).

pub mod admission;
pub(crate) mod archive;
pub mod auth;
pub(crate) mod client;
pub mod event_counts;
pub mod guest_limits;
pub mod inspect;
pub(crate) mod job_access;
pub(crate) mod peer;
pub(crate) mod request;
pub(crate) mod upload;
