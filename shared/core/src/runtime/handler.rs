//! What a listener runs: a handler of one message, its context and how it fails.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use time::OffsetDateTime;
use uuid::Uuid;

use super::shutdown::Shutdown;
use crate::messages::Envelope;
use crate::storage::StorageError;

/// Why a handler did not finish its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// Worth another attempt: the message becomes visible again after `after`, or after a delay
    /// that doubles with each attempt when `None`. The `cause` is logged and travels with the
    /// message (its `last_error`), so that a poison record over the threshold still says why.
    Retry {
        after: Option<Duration>,
        cause: Option<String>,
    },
    /// No attempt can succeed: the message goes to the poison queue with this reason.
    Poison(String),
}

impl Failure {
    pub fn retry() -> Self {
        Failure::Retry {
            after: None,
            cause: None,
        }
    }

    /// A retry that says why.
    pub fn retry_because(cause: impl fmt::Display) -> Self {
        Failure::Retry {
            after: None,
            cause: Some(cause.to_string()),
        }
    }

    pub fn retry_after(after: Duration) -> Self {
        Failure::Retry {
            after: Some(after),
            cause: None,
        }
    }

    pub fn poison(reason: impl fmt::Display) -> Self {
        Failure::Poison(reason.to_string())
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Retry { after, cause } => {
                f.write_str("retry")?;
                if let Some(d) = after {
                    write!(f, " after {d:?}")?;
                }
                if let Some(cause) = cause {
                    write!(f, ": {cause}")?;
                }
                Ok(())
            }
            Failure::Poison(reason) => write!(f, "poison: {reason}"),
        }
    }
}

/// Storage errors are worth retrying: the poison threshold stops a message that never succeeds.
impl From<StorageError> for Failure {
    fn from(e: StorageError) -> Self {
        Failure::retry_because(e)
    }
}

/// What a handler knows about the message in hand.
#[derive(Debug, Clone)]
pub struct Context {
    pub queue: Arc<str>,
    pub message_id: String,
    /// How many times the message has been received, this time included.
    pub dequeue_count: u32,
    /// When the message was first sent.
    pub insertion_time: OffsetDateTime,
    /// The job the message belongs to, when its body names one; storage calls made in the
    /// handler's task are charged to it.
    pub job: Option<Uuid>,
    pub(super) shutdown: Shutdown,
}

impl Context {
    /// Whether the listener is shutting down (a long handler may stop early and ask to retry).
    pub fn is_shutting_down(&self) -> bool {
        self.shutdown.is_fired()
    }

    /// Resolves when the listener starts shutting down.
    pub async fn shutting_down(&self) {
        self.shutdown.fired().await;
    }
}

/// The future a handler returns.
pub type HandlerFuture = Pin<Box<dyn Future<Output = Result<(), Failure>> + Send>>;

/// A message handler: any `Fn(Envelope<M>, Context) -> impl Future<Output = Result<(), Failure>>`.
pub trait Handler<M>: Send + Sync + 'static {
    fn handle(&self, message: Envelope<M>, context: Context) -> HandlerFuture;
}

impl<M, F, Fut> Handler<M> for F
where
    F: Fn(Envelope<M>, Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), Failure>> + Send + 'static,
{
    fn handle(&self, message: Envelope<M>, context: Context) -> HandlerFuture {
        Box::pin(self(message, context))
    }
}
