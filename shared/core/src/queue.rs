//! The typed facade over the queue port: `Queue<M>` sends and decodes [`Envelope<M>`]s on the one
//! queue `M` is bound to, and nudges that queue's listeners on every send.
//!
//! Messages go out in the queue's [`Encoding`] and are read in either.
//!
//! A body over the queue's 64 KiB limit is stored aside as a blob ([`BlobKey::MessageBody`]) and
//! the message carries a small pointer, `{"v":1,"kind":…,"body_blob":"messagebodies/…"}`; decoding
//! follows the pointer, and the listener deletes the blob once the message has been handled.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::keys::BlobKey;
use crate::messages::{
    DecodeError, ENVELOPE_VERSION, Encoding, Envelope, Message, poison_queue_name,
};
use crate::nudge::Nudges;
use crate::storage::{
    BlobStore, MAX_MESSAGE_BYTES, PutMode, QueueStore, SendOptions, SentMessage, StorageError,
};

/// Why a received body could not be turned into a message.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// The body is not a valid message: poison, never retried.
    #[error(transparent)]
    Undecodable(#[from] DecodeError),
    /// The body lives in a blob that could not be read; retrying may help.
    #[error("message body blob {key}: {source}")]
    Storage { key: String, source: StorageError },
}

/// A decoded message and, when its body was stored aside, the blob that held it.
#[derive(Debug, Clone)]
pub struct Decoded<M> {
    pub envelope: Envelope<M>,
    /// The body's JSON text (after following a pointer).
    pub text: String,
    pub body_blob: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct Pointer {
    v: u32,
    kind: String,
    body_blob: String,
}

/// A typed handle on the queue of message type `M`.
pub struct Queue<M> {
    queues: Arc<dyn QueueStore>,
    blobs: Arc<dyn BlobStore>,
    nudges: Nudges,
    name: Arc<str>,
    encoding: Encoding,
    _message: PhantomData<fn() -> M>,
}

impl<M> Clone for Queue<M> {
    fn clone(&self) -> Self {
        Queue {
            queues: self.queues.clone(),
            blobs: self.blobs.clone(),
            nudges: self.nudges.clone(),
            name: self.name.clone(),
            encoding: self.encoding,
            _message: PhantomData,
        }
    }
}

impl<M> fmt::Debug for Queue<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Queue").field("name", &self.name).finish()
    }
}

impl<M: Message> Queue<M> {
    /// The queue `M` is bound to.
    pub fn new(queues: Arc<dyn QueueStore>, blobs: Arc<dyn BlobStore>, nudges: Nudges) -> Self {
        Queue {
            queues,
            blobs,
            nudges,
            name: Arc::from(M::QUEUE.as_str()),
            encoding: Encoding::default(),
            _message: PhantomData,
        }
    }

    /// The same queue, written in `encoding`.
    pub fn encoded(mut self, encoding: Encoding) -> Self {
        self.encoding = encoding;
        self
    }

    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    /// The same message type on a queue of another name (tests and benchmarks that must not
    /// touch the pipeline's queues).
    pub fn named(mut self, name: &str) -> Self {
        self.name = Arc::from(name);
        self
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn poison_name(&self) -> String {
        poison_queue_name(&self.name)
    }

    pub fn queues(&self) -> &Arc<dyn QueueStore> {
        &self.queues
    }

    pub fn blobs(&self) -> &Arc<dyn BlobStore> {
        &self.blobs
    }

    pub fn nudges(&self) -> &Nudges {
        &self.nudges
    }

    /// Creates the queue and its poison queue if they do not exist.
    pub async fn ensure(&self) -> Result<(), StorageError> {
        self.queues.create_queue(&self.name).await?;
        self.queues.create_queue(&self.poison_name()).await
    }

    pub async fn send(&self, envelope: &Envelope<M>) -> Result<SentMessage, StorageError> {
        self.send_with(envelope, SendOptions::default()).await
    }

    /// Sends `envelope`, storing its body aside when it is over the size limit, then nudges the
    /// queue's listeners (unless the message is hidden for a while).
    pub async fn send_with(
        &self,
        envelope: &Envelope<M>,
        options: SendOptions,
    ) -> Result<SentMessage, StorageError> {
        let text = envelope.encode();
        let wire = self.encoding.to_wire(&text);
        let sent = if wire.len() > MAX_MESSAGE_BYTES {
            let key = BlobKey::MessageBody {
                queue: self.name.to_string(),
                id: Uuid::new_v4(),
            }
            .path();
            self.blobs
                .put(&key, Bytes::from(text), PutMode::Overwrite)
                .await?;
            let pointer = serde_json::to_string(&Pointer {
                v: ENVELOPE_VERSION,
                kind: M::KIND.to_string(),
                body_blob: key,
            })
            .expect("pointers serialize");
            let pointer = self.encoding.to_wire(&pointer);
            self.queues.send(&self.name, &pointer, options).await?
        } else {
            self.queues.send(&self.name, &wire, options).await?
        };
        if options.visibility_delay.is_zero() {
            self.nudges.nudge(&self.name).await;
        }
        Ok(sent)
    }

    /// Decodes a received body in either encoding, following a pointer to a stored-aside body.
    pub async fn decode(&self, body: &str) -> Result<Decoded<M>, BodyError> {
        let body = &*Encoding::from_wire(body)?;
        let pointer = if body.contains("\"body_blob\"") {
            serde_json::from_str::<Pointer>(body).ok()
        } else {
            None
        };
        match pointer {
            None => Ok(Decoded {
                envelope: Envelope::decode(body)?,
                text: body.to_string(),
                body_blob: None,
            }),
            Some(pointer) => {
                if pointer.kind != M::KIND {
                    return Err(DecodeError::WrongKind {
                        expected: M::KIND,
                        found: pointer.kind,
                    }
                    .into());
                }
                let bytes = match self.blobs.get(&pointer.body_blob).await {
                    Ok(bytes) => bytes,
                    Err(StorageError::NotFound(_)) => {
                        return Err(DecodeError::Malformed(format!(
                            "body blob {} does not exist",
                            pointer.body_blob
                        ))
                        .into());
                    }
                    Err(source) => {
                        return Err(BodyError::Storage {
                            key: pointer.body_blob,
                            source,
                        });
                    }
                };
                let text = String::from_utf8(bytes.to_vec())
                    .map_err(|e| DecodeError::Malformed(format!("body blob is not UTF-8: {e}")))?;
                Ok(Decoded {
                    envelope: Envelope::decode(&text)?,
                    text,
                    body_blob: Some(pointer.body_blob),
                })
            }
        }
    }

    /// Messages in the queue, visible or not.
    pub async fn depth(&self) -> Result<u64, StorageError> {
        self.queues.approximate_depth(&self.name).await
    }
}
