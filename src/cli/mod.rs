//! The subcommands that are not long-running roles.

pub mod bench;
pub mod library;
pub mod queues;
pub mod render;
pub mod storage;
