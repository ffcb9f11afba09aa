//! The name of every metric Tessera records, defined once (Prometheus conventions: base units,
//! `_total` counters, the `tessera_` prefix). The exporter ([`crate::telemetry`]) describes them.

/// Messages finished by a listener, by `queue` and `outcome` (`ok`, `retry`, `poison`).
pub const MESSAGES_HANDLED: &str = "tessera_messages_handled_total";
/// Time a handler took for one message, by `queue`.
pub const HANDLER_DURATION: &str = "tessera_handler_duration_seconds";
/// Handlers running now, by `queue`.
pub const HANDLERS_IN_FLIGHT: &str = "tessera_handlers_in_flight";
/// Receive calls, by `queue`.
pub const RECEIVES: &str = "tessera_receives_total";
/// Receive calls that came back empty, by `queue`.
pub const IDLE_RECEIVES: &str = "tessera_idle_receives_total";
/// Wake-up nudges that arrived from other processes, by `queue` and `outcome` (`woken`, or
/// `deferred`/`folded` when the per-queue rate limit held them back).
pub const NUDGES_RECEIVED: &str = "tessera_nudges_received_total";
/// Approximate messages waiting, by `queue` (work queues and their poison queues).
pub const QUEUE_DEPTH: &str = "tessera_queue_depth_messages";
/// Storage transactions made by this process, by `role` and `op` (as Azure bills them).
pub const STORAGE_TRANSACTIONS: &str = "tessera_storage_transactions_total";
/// Jobs that reached a final state, by `state` (`done`, `failed`).
pub const JOBS_FINISHED: &str = "tessera_jobs_finished_total";
/// Time a processor took to render and compress one slice.
pub const SLICE_RENDER: &str = "tessera_slice_render_seconds";
/// Job notifications (webhook calls) made, by `outcome` (`delivered`, `failed` for an attempt
/// that will be tried again, `undelivered` for one set aside when its retry period ended).
pub const NOTIFICATIONS: &str = "tessera_notifications_total";
