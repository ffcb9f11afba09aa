//! The queue port on Azure Queue Storage.
//!
//! Message bodies travel as the SDK sends them: plain XML-escaped text, no base64 (the Python
//! SDK v12 does the same unless an encode policy is set), so other SDKs read them as sent.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use azure_core::http::{DeserializeWith, RequestContent, Response, StatusCode, XmlFormat};
use azure_storage_queue::QueueClient;
use azure_storage_queue::models::{
    QueueClientGetPropertiesResultHeaders, QueueClientPeekMessagesOptions,
    QueueClientReceiveMessagesOptions, QueueClientSendMessageOptions,
    QueueClientUpdateMessageOptions, QueueMessage, QueueServiceClientListQueuesOptions,
};
use futures::StreamExt;
use tessera_shared::storage::{
    DEFAULT_TIME_TO_LIVE, MessageUpdate, PeekedMessage, QueueStore, ReceivedMessage, Result,
    SendOptions, SentMessage, StorageError, UpdatedMessage, check_batch, check_body,
    check_visibility, validate_queue_name,
};
use time::OffsetDateTime;

use crate::error::{has_code, map};
use crate::{AzureStorage, join_url};

/// The model of an answer about `what` (a queue's name), its errors mapped as the port's.
fn model_of<T: DeserializeWith<XmlFormat>>(
    answer: azure_core::Result<Response<T, XmlFormat>>,
    what: &str,
) -> Result<T> {
    answer
        .map_err(|e| map(e, what))?
        .into_model()
        .map_err(|e| map(e, what))
}

impl AzureStorage {
    /// The cached client of one queue.
    fn queue(&self, name: &str) -> Result<Arc<QueueClient>> {
        validate_queue_name(name)?;
        let mut queues = self.inner.queues.lock().expect("queue cache lock poisoned");
        if let Some(client) = queues.get(name) {
            return Ok(client.clone());
        }
        let client = QueueClient::new(
            join_url(&self.inner.queue_endpoint, [name]),
            self.inner.credential.clone(),
            Some(azure_storage_queue::QueueClientOptions {
                client_options: self.inner.client_options.clone(),
                ..Default::default()
            }),
        )
        .map_err(|e| map(e, name))?;
        let client = Arc::new(client);
        queues.insert(name.to_owned(), client.clone());
        Ok(client)
    }
}

/// Whole seconds, rounded up, checked against Azure's longest visibility.
fn visibility_seconds(d: Duration, what: &str) -> Result<i32> {
    check_visibility(what, d)?;
    Ok(ceil_seconds(d) as i32)
}

fn ceil_seconds(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

fn message_content(body: &str) -> Result<RequestContent<QueueMessage, XmlFormat>> {
    RequestContent::try_from(QueueMessage {
        message_text: Some(body.to_owned()),
    })
    .map_err(|e| StorageError::Invalid(format!("message body: {e}")))
}

fn missing(field: &str) -> StorageError {
    StorageError::Other(format!("the service's answer has no {field}").into())
}

fn time_or_now(t: Option<OffsetDateTime>) -> OffsetDateTime {
    t.unwrap_or_else(OffsetDateTime::now_utc)
}

/// A body over the limit: the size is known here, not in the service's answer.
fn with_size(e: StorageError, body: &str) -> StorageError {
    match e {
        StorageError::TooLarge { limit, .. } => StorageError::TooLarge {
            size: body.len(),
            limit,
        },
        other => other,
    }
}

#[async_trait]
impl QueueStore for AzureStorage {
    async fn create_queue(&self, queue: &str) -> Result<()> {
        match self.queue(queue)?.create(None).await {
            Ok(_) => Ok(()),
            // Exists already (with other metadata): creating is idempotent.
            Err(e) if has_code(&e, "QueueAlreadyExists") => Ok(()),
            Err(e) => Err(map(e, queue)),
        }
    }

    async fn delete_queue(&self, queue: &str) -> Result<()> {
        self.queue(queue)?
            .delete(None)
            .await
            .map_err(|e| map(e, queue))?;
        Ok(())
    }

    async fn list_queues(&self) -> Result<Vec<String>> {
        let mut pages = self
            .inner
            .queue_service
            .list_queues(Some(QueueServiceClientListQueuesOptions {
                maxresults: Some(5000),
                ..Default::default()
            }))
            .map_err(|e| map(e, "queue list"))?
            .into_pages();
        let mut names = Vec::new();
        while let Some(page) = pages.next().await {
            let page = model_of(page, "queue list")?;
            names.extend(page.queue_items.into_iter().filter_map(|q| q.name));
        }
        names.sort();
        Ok(names)
    }

    async fn send(&self, queue: &str, body: &str, options: SendOptions) -> Result<SentMessage> {
        check_body(body)?;
        let client = self.queue(queue)?;
        let delay = visibility_seconds(options.visibility_delay, "visibility delay")?;
        let ttl = options.time_to_live.unwrap_or(DEFAULT_TIME_TO_LIVE);
        if ttl.is_zero() {
            return Err(StorageError::Invalid("a time to live of zero".into()));
        }
        let ttl = i32::try_from(ceil_seconds(ttl)).unwrap_or(i32::MAX);
        let sent = client
            .send_message(
                message_content(body)?,
                Some(QueueClientSendMessageOptions {
                    visibility_timeout: (delay > 0).then_some(delay),
                    message_time_to_live: Some(ttl),
                    ..Default::default()
                }),
            )
            .await
            .map_err(|e| with_size(map(e, queue), body))?
            .into_model()
            .map_err(|e| map(e, queue))?
            .into_message()
            .map_err(|e| map(e, queue))?;
        Ok(SentMessage {
            id: sent.message_id.ok_or_else(|| missing("message id"))?,
            pop_receipt: sent.pop_receipt.ok_or_else(|| missing("pop receipt"))?,
            insertion_time: time_or_now(sent.insertion_time),
            expiration_time: time_or_now(sent.expiration_time),
            next_visible: time_or_now(sent.time_next_visible),
        })
    }

    async fn receive(
        &self,
        queue: &str,
        max: usize,
        visibility_timeout: Duration,
    ) -> Result<Vec<ReceivedMessage>> {
        check_batch(max)?;
        let client = self.queue(queue)?;
        // Azure hides a received message for at least a second.
        let visibility = visibility_seconds(visibility_timeout, "visibility timeout")?.max(1);
        let got = client
            .receive_messages(Some(QueueClientReceiveMessagesOptions {
                number_of_messages: Some(max as i32),
                visibility_timeout: Some(visibility),
                ..Default::default()
            }))
            .await;
        model_of(got, queue)?
            .items
            .unwrap_or_default()
            .into_iter()
            .map(|m| {
                Ok(ReceivedMessage {
                    id: m.message_id.ok_or_else(|| missing("message id"))?,
                    pop_receipt: m.pop_receipt.ok_or_else(|| missing("pop receipt"))?,
                    dequeue_count: m.dequeue_count.unwrap_or(1).clamp(0, i64::from(u32::MAX))
                        as u32,
                    insertion_time: time_or_now(m.insertion_time),
                    expiration_time: time_or_now(m.expiration_time),
                    next_visible: time_or_now(m.time_next_visible),
                    body: m.message_text.unwrap_or_default(),
                })
            })
            .collect()
    }

    async fn update(&self, queue: &str, change: MessageUpdate<'_>) -> Result<UpdatedMessage> {
        let MessageUpdate {
            id,
            pop_receipt,
            visibility_timeout,
            body,
        } = change;
        if let Some(body) = body {
            check_body(body)?;
        }
        let client = self.queue(queue)?;
        let visibility = visibility_seconds(visibility_timeout, "visibility timeout")?;
        let queue_message = body.map(message_content).transpose()?;
        let response = client
            .update_message(
                id,
                pop_receipt,
                visibility,
                Some(QueueClientUpdateMessageOptions {
                    queue_message,
                    ..Default::default()
                }),
            )
            .await
            .map_err(|e| with_size(map(e, id), body.unwrap_or("")))?;
        // The new receipt comes only in a header.
        let headers = response.headers();
        let pop_receipt = headers
            .get_optional_str(&azure_core::http::headers::HeaderName::from_static(
                "x-ms-popreceipt",
            ))
            .ok_or_else(|| missing("x-ms-popreceipt header"))?
            .to_owned();
        let next_visible = headers
            .get_optional_str(&azure_core::http::headers::HeaderName::from_static(
                "x-ms-time-next-visible",
            ))
            .and_then(|s| azure_core::time::parse_rfc7231(s).ok())
            .unwrap_or_else(|| OffsetDateTime::now_utc() + visibility_timeout);
        Ok(UpdatedMessage {
            pop_receipt,
            next_visible,
        })
    }

    async fn delete(&self, queue: &str, id: &str, pop_receipt: &str) -> Result<()> {
        self.queue(queue)?
            .delete_message(id, pop_receipt, None)
            .await
            .map_err(|e| map(e, id))?;
        Ok(())
    }

    async fn peek(&self, queue: &str, max: usize) -> Result<Vec<PeekedMessage>> {
        check_batch(max)?;
        let got = self
            .queue(queue)?
            .peek_messages(Some(QueueClientPeekMessagesOptions {
                number_of_messages: Some(max as i32),
                ..Default::default()
            }))
            .await;
        model_of(got, queue)?
            .items
            .unwrap_or_default()
            .into_iter()
            .map(|m| {
                Ok(PeekedMessage {
                    id: m.message_id.ok_or_else(|| missing("message id"))?,
                    dequeue_count: m.dequeue_count.unwrap_or(0).clamp(0, i64::from(u32::MAX))
                        as u32,
                    insertion_time: time_or_now(m.insertion_time),
                    expiration_time: time_or_now(m.expiration_time),
                    body: m.message_text.unwrap_or_default(),
                })
            })
            .collect()
    }

    async fn approximate_depth(&self, queue: &str) -> Result<u64> {
        let response = self
            .queue(queue)?
            .get_properties(None)
            .await
            .map_err(|e| map(e, queue))?;
        let count = response
            .approximate_messages_count()
            .map_err(|e| map(e, queue))?
            .unwrap_or(0);
        Ok(count.max(0) as u64)
    }

    async fn get_metadata(&self, queue: &str) -> Result<HashMap<String, String>> {
        let response = self
            .queue(queue)?
            .get_properties(None)
            .await
            .map_err(|e| map(e, queue))?;
        response.metadata().map_err(|e| map(e, queue))
    }

    async fn set_metadata(&self, queue: &str, metadata: &HashMap<String, String>) -> Result<()> {
        for key in metadata.keys() {
            let ok = key
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !ok {
                return Err(StorageError::Invalid(format!(
                    "metadata name {key:?} must be a C identifier"
                )));
            }
        }
        self.queue(queue)?
            .set_metadata(metadata, None)
            .await
            .map_err(|e| map(e, queue))?;
        Ok(())
    }

    async fn clear(&self, queue: &str) -> Result<()> {
        let client = self.queue(queue)?;
        // Azure may answer 500 OperationTimedOut on a huge queue having deleted part of it:
        // the documented remedy is to call again.
        for _ in 0..10 {
            match client.clear(None).await {
                Ok(_) => return Ok(()),
                Err(e)
                    if e.http_status() == Some(StatusCode::InternalServerError)
                        && has_code(&e, "OperationTimedOut") => {}
                Err(e) => return Err(map(e, queue)),
            }
        }
        Err(StorageError::Transient(
            format!("{queue}: clearing timed out repeatedly").into(),
        ))
    }
}
