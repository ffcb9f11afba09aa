//! The subcommands that are not long-running roles.

pub mod bench;
pub mod job_flags;
pub mod library;
pub mod queues;
pub mod render;
pub mod storage;
