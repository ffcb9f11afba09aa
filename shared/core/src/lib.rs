//! The layer every Tessera role stands on: the typed messages of the four queues, the storage
//! ports with their embedded and Azure backends, typed blob keys, the queue runtime, and
//! the metrics and readiness every role exposes.

pub mod accounting;
pub mod error_code;
pub mod event_settings;
pub mod events;
pub mod holds;
pub mod jobs;
pub mod keys;
pub mod libraries;
pub mod library_cache;
pub mod library_import;
pub mod library_parts;
pub mod lifecycle;
pub mod messages;
pub mod metric_names;
pub mod nudge;
pub mod outbox;
pub mod owner;
pub mod platform;
pub mod print;
pub mod queue;
pub mod registry;
pub mod runtime;
pub mod spec;
pub mod storage;
pub mod telemetry;
pub mod wire_schema;
pub mod wishlist;
