//! What every role is handed at start-up: the two storage ports (counted), the nudges between
//! senders and listeners, and the transaction accounting. Built once by the binary from the
//! configuration and passed down explicitly.

use std::sync::Arc;

use crate::accounting::Accounting;
use crate::jobs::JobStore;
use crate::libraries::LibraryCatalog;
use crate::messages::{Encoding, Message};
use crate::queue::Queue;
use crate::runtime::Nudges;
use crate::storage::{BlobStore, QueueStore, StorageError};

/// A queue that hears of every job's end (`queues.job_events`), and the service's address for
/// the events' links.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobEventsQueue {
    pub queue: String,
    pub public_url: String,
}

#[derive(Debug, Clone)]
pub struct Platform {
    /// The queue port, every call counted in `accounting`.
    pub queues: Arc<dyn QueueStore>,
    /// The blob port, every call counted in `accounting`.
    pub blobs: Arc<dyn BlobStore>,
    pub nudges: Nudges,
    pub accounting: Accounting,
    /// How messages are written on the queues (`queues.encoding`).
    pub encoding: Encoding,
    /// Where every job's end is also told, for consumers outside Tessera
    /// (`queues.job_events`); none by default.
    pub job_events: Option<JobEventsQueue>,
}

impl Platform {
    /// Wraps raw backends: their calls are counted from here on.
    pub fn new(queues: Arc<dyn QueueStore>, blobs: Arc<dyn BlobStore>, nudges: Nudges) -> Self {
        let accounting = Accounting::new();
        Self::counted(
            Arc::new(accounting.wrap(queues)),
            Arc::new(accounting.wrap(blobs)),
            nudges,
            accounting,
        )
    }

    /// Ports that already count every transaction in `accounting` (wrapped by
    /// [`Accounting::wrap`], or a backend that counts at the wire).
    pub fn counted(
        queues: Arc<dyn QueueStore>,
        blobs: Arc<dyn BlobStore>,
        nudges: Nudges,
        accounting: Accounting,
    ) -> Self {
        Platform {
            queues,
            blobs,
            nudges,
            accounting,
            encoding: Encoding::default(),
            job_events: None,
        }
    }

    /// The same platform, telling every job's end on `queue` too.
    pub fn with_job_events(mut self, queue: Option<JobEventsQueue>) -> Self {
        self.job_events = queue;
        self
    }

    /// The same platform, writing messages in `encoding`.
    pub fn with_encoding(mut self, encoding: Encoding) -> Self {
        self.encoding = encoding;
        self
    }

    /// The typed queue of message type `M`.
    pub fn queue<M: Message>(&self) -> Queue<M> {
        Queue::new(self.queues.clone(), self.blobs.clone(), self.nudges.clone())
            .encoded(self.encoding)
    }

    pub fn jobs(&self) -> JobStore {
        JobStore::new(self.blobs.clone())
    }

    pub fn events(&self) -> crate::events::EventStore {
        crate::events::EventStore::new(self.blobs.clone())
    }

    pub fn libraries(&self) -> LibraryCatalog {
        LibraryCatalog::new(self.blobs.clone())
    }

    /// Creates the four work queues and their poison queues, and the job events queue if one
    /// is kept.
    pub async fn ensure_queues(&self) -> Result<(), StorageError> {
        for name in crate::messages::QueueName::ALL {
            self.queues.create_queue(name.as_str()).await?;
            self.queues.create_queue(&name.poison()).await?;
        }
        if let Some(events) = &self.job_events {
            self.queues.create_queue(&events.queue).await?;
        }
        Ok(())
    }
}
