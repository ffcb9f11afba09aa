//! A name prefix for every queue and container (`storage.name_prefix`), so that one storage
//! account holds several environments (`dev-`, `prod-`) side by side. The roles and tools see
//! the names without it; the transaction counters, which count what storage bills, the names
//! with it.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

use super::{
    BlobMeta, BlobStore, BlobUpload, ListPage, MessageUpdate, PeekedMessage, PutMode, QueueStore,
    ReceivedMessage, Result, SendOptions, SentMessage, UpdatedMessage,
};

/// Longest prefix: the longest of Tessera's names (`sliceresponse-poison`, 20 characters) must
/// stay within the 63 characters Azure allows queues and containers.
pub const MAX_PREFIX_CHARS: usize = 40;

/// Checks a prefix: lowercase letters, digits and hyphens, starting with a letter or digit,
/// ending with a hyphen (so names read `dev-imagerequest`), at most [`MAX_PREFIX_CHARS`].
pub fn check_prefix(prefix: &str) -> std::result::Result<(), String> {
    let ok_chars = prefix
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    let starts = prefix
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric());
    if prefix.len() > MAX_PREFIX_CHARS || !ok_chars || !starts || !prefix.ends_with('-') {
        return Err(format!(
            "storage.name_prefix {prefix:?} must be lowercase letters, digits and hyphens, start \
             with a letter or digit, end with a hyphen and be at most {MAX_PREFIX_CHARS} \
             characters (as \"dev-\")"
        ));
    }
    Ok(())
}

/// Queues and blobs of `inner` under `prefix`.
#[derive(Debug)]
pub struct Prefixed<T: ?Sized> {
    inner: Arc<T>,
    prefix: String,
}

impl<T: ?Sized> Prefixed<T> {
    pub fn new(inner: Arc<T>, prefix: &str) -> Self {
        Prefixed {
            inner,
            prefix: prefix.to_string(),
        }
    }

    fn name(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    fn strip(&self, meta: BlobMeta) -> BlobMeta {
        unprefixed(&self.prefix, meta)
    }
}

/// `meta` with its key named without `prefix`.
fn unprefixed(prefix: &str, meta: BlobMeta) -> BlobMeta {
    BlobMeta {
        key: meta
            .key
            .strip_prefix(prefix)
            .map_or(meta.key.clone(), str::to_string),
        ..meta
    }
}

#[async_trait]
impl<T: QueueStore + ?Sized> QueueStore for Prefixed<T> {
    async fn create_queue(&self, queue: &str) -> Result<()> {
        self.inner.create_queue(&self.name(queue)).await
    }
    async fn delete_queue(&self, queue: &str) -> Result<()> {
        self.inner.delete_queue(&self.name(queue)).await
    }
    async fn list_queues(&self) -> Result<Vec<String>> {
        Ok(self
            .inner
            .list_queues()
            .await?
            .into_iter()
            .filter_map(|q| q.strip_prefix(&self.prefix).map(str::to_string))
            .collect())
    }
    async fn send(&self, queue: &str, body: &str, options: SendOptions) -> Result<SentMessage> {
        self.inner.send(&self.name(queue), body, options).await
    }
    async fn receive(
        &self,
        queue: &str,
        max: usize,
        visibility_timeout: Duration,
    ) -> Result<Vec<ReceivedMessage>> {
        self.inner
            .receive(&self.name(queue), max, visibility_timeout)
            .await
    }
    async fn update(&self, queue: &str, change: MessageUpdate<'_>) -> Result<UpdatedMessage> {
        self.inner.update(&self.name(queue), change).await
    }
    async fn delete(&self, queue: &str, id: &str, pop_receipt: &str) -> Result<()> {
        self.inner.delete(&self.name(queue), id, pop_receipt).await
    }
    async fn peek(&self, queue: &str, max: usize) -> Result<Vec<PeekedMessage>> {
        self.inner.peek(&self.name(queue), max).await
    }
    async fn approximate_depth(&self, queue: &str) -> Result<u64> {
        self.inner.approximate_depth(&self.name(queue)).await
    }
    async fn get_metadata(&self, queue: &str) -> Result<HashMap<String, String>> {
        self.inner.get_metadata(&self.name(queue)).await
    }
    async fn set_metadata(&self, queue: &str, metadata: &HashMap<String, String>) -> Result<()> {
        self.inner.set_metadata(&self.name(queue), metadata).await
    }
    async fn clear(&self, queue: &str) -> Result<()> {
        self.inner.clear(&self.name(queue)).await
    }
}

/// A block upload whose result names the key without the prefix.
struct PrefixedUpload {
    inner: Box<dyn BlobUpload>,
    prefix: String,
}

#[async_trait]
impl BlobUpload for PrefixedUpload {
    async fn write(&mut self, chunk: Bytes) -> Result<()> {
        self.inner.write(chunk).await
    }
    async fn finish(self: Box<Self>) -> Result<BlobMeta> {
        let prefix = self.prefix.clone();
        Ok(unprefixed(&prefix, self.inner.finish().await?))
    }
    async fn abort(self: Box<Self>) -> Result<()> {
        self.inner.abort().await
    }
}

#[async_trait]
impl<T: BlobStore + ?Sized> BlobStore for Prefixed<T> {
    async fn put(&self, key: &str, data: Bytes, mode: PutMode) -> Result<BlobMeta> {
        let meta = self.inner.put(&self.name(key), data, mode).await?;
        Ok(self.strip(meta))
    }
    async fn get(&self, key: &str) -> Result<Bytes> {
        self.inner.get(&self.name(key)).await
    }
    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        self.inner.get_range(&self.name(key), range).await
    }
    async fn head(&self, key: &str) -> Result<BlobMeta> {
        Ok(self.strip(self.inner.head(&self.name(key)).await?))
    }
    async fn list(&self, prefix: &str, page_size: usize, page: Option<String>) -> Result<ListPage> {
        let got = self.inner.list(&self.name(prefix), page_size, page).await?;
        Ok(ListPage {
            items: got.items.into_iter().map(|m| self.strip(m)).collect(),
            next: got.next,
        })
    }
    async fn delete(&self, key: &str) -> Result<()> {
        self.inner.delete(&self.name(key)).await
    }
    async fn upload(&self, key: &str) -> Result<Box<dyn BlobUpload>> {
        let inner = self.inner.upload(&self.name(key)).await?;
        Ok(Box::new(PrefixedUpload {
            inner,
            prefix: self.prefix.clone(),
        }))
    }
    async fn writable_bytes(&self) -> Option<u64> {
        self.inner.writable_bytes().await
    }
    fn read_link(
        &self,
        key: &str,
        lifetime: std::time::Duration,
        disposition: Option<&str>,
    ) -> Option<String> {
        self.inner.read_link(&self.name(key), lifetime, disposition)
    }
}
