//! The queue listener runtime every role consumes its queues through.
//!
//! A [`Listener`] runs a typed handler, `async fn(Envelope<M>, Context) -> Result<(), Failure>`,
//! over one queue, with the practices of queue-centric cloud applications built in:
//! - messages are received in batches and each runs in its own task: a panic is a failed attempt,
//!   never a dead worker;
//! - while a handler runs, its message's visibility is renewed on an interval, and the message is
//!   deleted, with the latest receipt, only after success;
//! - [`Failure::Retry`] makes the message visible again after a delay; [`Failure::Poison`], a body
//!   that does not decode, or a dequeue count over the threshold moves it to `<queue>-poison`
//!   ([`poison`]) and calls the listener's poison hook;
//! - an idle listener is one poller with randomised exponential back-off ([`backoff`]), woken at
//!   once by a [`nudge`](crate::nudge) from whoever sends; with depth, more receive loops and handlers start, up
//!   to the configured concurrency, and stop again when the queue drains;
//! - transient storage errors are retried with capped back-off and logged once per streak;
//! - shutdown stops receiving, lets running handlers finish within a deadline and makes every
//!   other message it holds visible again at once.
//!
//! Every storage call can be counted with [`crate::accounting`]; the listener charges each
//! message's calls to its job.

pub mod backoff;
mod handler;
mod listener;
pub mod listener_settings;
pub mod poison;
pub mod shutdown;

pub use crate::nudge::{NudgeEndpoint, NudgeSettings, Nudges};
pub use handler::{Context, Failure, Handler, HandlerFuture};
pub use listener::{Listener, ListenerHandle, ListenerStats};
pub use listener_settings::ListenerSettings;
pub use poison::{PoisonHook, PoisonRecord};
pub use shutdown::Shutdown;
