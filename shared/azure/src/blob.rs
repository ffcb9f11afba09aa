//! The blob port on Azure Blob Storage: block blobs, containers created on first write.

use std::num::NonZero;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use azure_core::http::{Etag, NoFormat, RequestContent, StatusCode};
use azure_storage_blob::models::{
    BlobClientDownloadOptions, BlobClientGetPropertiesResultHeaders,
    BlobContainerClientListBlobsOptions, BlockBlobClientCommitBlockListOptions,
    BlockBlobClientCommitBlockListResultHeaders, BlockBlobClientUploadOptions, BlockLookupList,
};
use azure_storage_blob::{BlobClient, BlobContainerClient, BlockBlobClient};
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use tessera_shared::storage::describe;
use tessera_shared::storage::{
    BlobMeta, BlobStore, BlobUpload, ListPage, PutMode, Result, StorageError, split_blob_key,
};
use time::OffsetDateTime;

use crate::error::{has_code, is_status, map};
use crate::{AzureStorage, Inner, join_url};

/// Most results one list request may ask for (Azure's limit).
const MAX_LIST_PAGE: usize = 5000;

impl AzureStorage {
    fn container(&self, name: &str) -> Result<Arc<BlobContainerClient>> {
        container_client(&self.inner, name)
    }
}

fn container_client(inner: &Inner, name: &str) -> Result<Arc<BlobContainerClient>> {
    let mut containers = inner
        .containers
        .lock()
        .expect("container cache lock poisoned");
    if let Some(client) = containers.get(name) {
        return Ok(client.clone());
    }
    let client = BlobContainerClient::new(
        join_url(&inner.blob_endpoint, [name]),
        inner.credential.clone(),
        Some(azure_storage_blob::BlobContainerClientOptions {
            client_options: inner.client_options.clone(),
            ..Default::default()
        }),
    )
    .map_err(|e| map(e, name))?;
    let client = Arc::new(client);
    containers.insert(name.to_owned(), client.clone());
    Ok(client)
}

/// A blob's URL, its name's `/`-separated segments encoded one by one.
fn blob_url(inner: &Inner, container: &str, name: &str) -> url::Url {
    join_url(
        &inner.blob_endpoint,
        std::iter::once(container).chain(name.split('/')),
    )
}

/// A client for one blob.
fn blob_client(inner: &Inner, key: &str) -> Result<BlobClient> {
    let (container, name) = split_blob_key(key)?;
    BlobClient::new(
        blob_url(inner, container, name),
        inner.credential.clone(),
        Some(azure_storage_blob::BlobClientOptions {
            client_options: inner.client_options.clone(),
            ..Default::default()
        }),
    )
    .map_err(|e| map(e, key))
}

/// Creates the container unless it is known to exist.
async fn ensure_container(inner: &Inner, container: &str) -> Result<()> {
    if inner
        .known_containers
        .lock()
        .expect("container set lock poisoned")
        .contains(container)
    {
        return Ok(());
    }
    match container_client(inner, container)?.create(None).await {
        Ok(_) => {}
        Err(e) if has_code(&e, "ContainerAlreadyExists") => {}
        Err(e) => return Err(map(e, container)),
    }
    inner
        .known_containers
        .lock()
        .expect("container set lock poisoned")
        .insert(container.to_owned());
    Ok(())
}

fn forget_container(inner: &Inner, container: &str) {
    inner
        .known_containers
        .lock()
        .expect("container set lock poisoned")
        .remove(container);
}

/// ETags in one form, quoted as HTTP headers carry them: blob listings give them bare.
fn etag_string(etag: Option<Etag>) -> Result<String> {
    etag.map(|e| quoted(e.as_ref()))
        .ok_or_else(|| StorageError::Other("the service's answer has no ETag".into()))
}

fn quoted(etag: &str) -> String {
    format!("\"{}\"", etag.trim_matches('"'))
}

fn missing(field: &str) -> StorageError {
    StorageError::Other(format!("the service's answer has no {field}").into())
}

/// The blob's metadata: the job its key names, if any.
fn describe_job(key: &str) -> Option<std::collections::HashMap<String, String>> {
    describe::job_of(key)
        .map(|job| std::collections::HashMap::from([("tessera_job".into(), job.to_string())]))
}

/// Runs a write, creating the container and trying once more if it did not exist.
macro_rules! with_container {
    ($inner:expr, $container:expr, $key:expr, $op:expr) => {{
        match $op.await {
            Err(e) if has_code(&e, "ContainerNotFound") => {
                forget_container($inner, $container);
                ensure_container($inner, $container).await?;
                $op.await.map_err(|e| map(e, $key))
            }
            other => other.map_err(|e| map(e, $key)),
        }
    }};
}

#[async_trait]
impl BlobStore for AzureStorage {
    fn read_link(
        &self,
        key: &str,
        lifetime: std::time::Duration,
        disposition: Option<&str>,
    ) -> Option<String> {
        let (signer, https_only) = self.inner.link_signer.as_ref()?;
        let (container, name) = split_blob_key(key).ok()?;
        let now = time::OffsetDateTime::now_utc();
        let window = (now - crate::sas::CLOCK_SKEW, now + lifetime);
        let mut url = blob_url(&self.inner, container, name);
        let sas =
            crate::sas::blob_read_sas(signer, container, name, window, *https_only, disposition);
        url.query_pairs_mut()
            .extend_pairs(sas.iter().map(|(k, v)| (*k, v.as_str())));
        Some(url.into())
    }

    async fn put(&self, key: &str, data: Bytes, mode: PutMode) -> Result<BlobMeta> {
        let (container, _) = split_blob_key(key)?;
        let inner = &*self.inner;
        ensure_container(inner, container).await?;
        let client = blob_client(inner, key)?;
        let size = data.len() as u64;
        let content_type = describe::content_type(key, &data);
        let metadata = describe::job_of(key).map(|job| {
            std::collections::HashMap::from([("tessera_job".to_string(), job.to_string())])
        });
        let options = || BlockBlobClientUploadOptions {
            blob_content_type: Some(content_type.to_string()),
            metadata: metadata.clone(),
            if_none_match: matches!(mode, PutMode::CreateNew).then(|| Etag::from("*")),
            if_match: match &mode {
                PutMode::IfMatch(etag) => Some(Etag::from(quoted(etag))),
                _ => None,
            },
            parallel: NonZero::new(2),
            partition_size: NonZero::new(inner.options.block_size as u64),
            ..Default::default()
        };
        let result = with_container!(
            inner,
            container,
            key,
            client.upload(
                <RequestContent<Bytes, NoFormat> as From<Bytes>>::from(data.clone()),
                Some(options())
            )
        );
        let uploaded = match result {
            Ok(uploaded) => uploaded,
            // A create-only write on an existing blob gets 409 BlobAlreadyExists; a 412 to
            // `If-None-Match: *` means the same.
            Err(StorageError::Precondition(_)) if mode == PutMode::CreateNew => {
                return Err(StorageError::AlreadyExists(key.to_owned()));
            }
            // If-Match on a blob that does not exist: the precondition fails.
            Err(StorageError::NotFound(_)) if matches!(mode, PutMode::IfMatch(_)) => {
                return Err(StorageError::Precondition(key.to_owned()));
            }
            Err(e) => return Err(e),
        };
        Ok(BlobMeta {
            key: key.to_owned(),
            size,
            etag: etag_string(uploaded.etag)?,
            last_modified: uploaded
                .last_modified
                .unwrap_or_else(OffsetDateTime::now_utc),
        })
    }

    async fn get(&self, key: &str) -> Result<Bytes> {
        let client = blob_client(&self.inner, key)?;
        let downloaded = client.download(None).await.map_err(|e| map(e, key))?;
        downloaded.body.collect().await.map_err(|e| map(e, key))
    }

    async fn get_range(&self, key: &str, range: Range<u64>) -> Result<Bytes> {
        let client = blob_client(&self.inner, key)?;
        if range.start >= range.end {
            // Nothing to read, but a missing blob is still missing.
            client.get_properties(None).await.map_err(|e| map(e, key))?;
            return Ok(Bytes::new());
        }
        let options = BlobClientDownloadOptions {
            range: Some((range.start..range.end).into()),
            parallel: NonZero::new(1),
            ..Default::default()
        };
        match client.download(Some(options)).await {
            Ok(downloaded) => downloaded.body.collect().await.map_err(|e| map(e, key)),
            // The range starts at or past the end: nothing of it exists.
            Err(e) if is_status(&e, StatusCode::RequestedRangeNotSatisfiable) => Ok(Bytes::new()),
            Err(e) => Err(map(e, key)),
        }
    }

    async fn head(&self, key: &str) -> Result<BlobMeta> {
        let client = blob_client(&self.inner, key)?;
        let props = client.get_properties(None).await.map_err(|e| map(e, key))?;
        Ok(BlobMeta {
            key: key.to_owned(),
            size: props
                .content_length()
                .map_err(|e| map(e, key))?
                .ok_or_else(|| missing("Content-Length"))?,
            etag: etag_string(props.etag().map_err(|e| map(e, key))?)?,
            last_modified: props
                .last_modified()
                .map_err(|e| map(e, key))?
                .ok_or_else(|| missing("Last-Modified"))?,
        })
    }

    async fn list(&self, prefix: &str, page_size: usize, page: Option<String>) -> Result<ListPage> {
        let (container, name_prefix) = match prefix.split_once('/') {
            Some((container, rest)) => (container, rest),
            None => (prefix, ""),
        };
        // Checks the container's name the way keys are checked.
        split_blob_key(&format!("{container}/x"))?;
        if page_size == 0 {
            return Err(StorageError::Invalid("a page of zero blobs".into()));
        }
        let client = self.container(container)?;
        let options = BlobContainerClientListBlobsOptions {
            prefix: (!name_prefix.is_empty()).then(|| name_prefix.to_owned()),
            maxresults: Some(page_size.min(MAX_LIST_PAGE) as i32),
            marker: page,
            ..Default::default()
        };
        let mut pages = client
            .list_blobs(Some(options))
            .map_err(|e| map(e, prefix))?
            .into_pages();
        let first = match pages.next().await {
            None => return Ok(ListPage::default()),
            Some(Err(e)) if has_code(&e, "ContainerNotFound") => return Ok(ListPage::default()),
            Some(Err(e)) => return Err(map(e, prefix)),
            Some(Ok(response)) => response.into_model().map_err(|e| map(e, prefix))?,
        };
        let items = first
            .blob_items
            .into_iter()
            .map(|item| {
                let name = item.name.ok_or_else(|| missing("blob name"))?;
                let props = item.properties.ok_or_else(|| missing("blob properties"))?;
                Ok(BlobMeta {
                    key: format!("{container}/{name}"),
                    size: props.content_length.unwrap_or(0),
                    etag: etag_string(props.etag)?,
                    last_modified: props
                        .last_modified
                        .ok_or_else(|| missing("Last-Modified"))?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(ListPage {
            items,
            next: first.next_marker.filter(|m| !m.is_empty()),
        })
    }

    async fn delete(&self, key: &str) -> Result<()> {
        let client = blob_client(&self.inner, key)?;
        client.delete(None).await.map_err(|e| map(e, key))?;
        Ok(())
    }

    async fn upload(&self, key: &str) -> Result<Box<dyn BlobUpload>> {
        let (container, _) = split_blob_key(key)?;
        ensure_container(&self.inner, container).await?;
        let client = blob_client(&self.inner, key)?.block_blob_client();
        Ok(Box::new(AzureUpload {
            inner: self.inner.clone(),
            key: key.to_owned(),
            client,
            // Every block id of a blob has the same length: a prefix unique to this upload and
            // a fixed-width counter.
            id_prefix: uuid::Uuid::new_v4().simple().to_string(),
            blocks: Vec::new(),
            buffer: BytesMut::new(),
            size: 0,
            head: Vec::new(),
        }))
    }
}

/// A block upload: blocks staged as the buffer fills, committed by `finish`.
struct AzureUpload {
    inner: Arc<Inner>,
    key: String,
    client: BlockBlobClient,
    id_prefix: String,
    blocks: Vec<Vec<u8>>,
    buffer: BytesMut,
    size: u64,
    /// The first bytes written, from which the content type is sniffed.
    head: Vec<u8>,
}

impl AzureUpload {
    async fn stage(&mut self, data: Bytes) -> Result<()> {
        let id = format!("{}-{:08}", self.id_prefix, self.blocks.len()).into_bytes();
        let (container, _) = split_blob_key(&self.key)?;
        let inner = &*self.inner;
        let len = data.len() as u64;
        with_container!(
            inner,
            container,
            &self.key,
            self.client.stage_block(
                &id,
                len,
                <RequestContent<Bytes, NoFormat> as From<Bytes>>::from(data.clone()),
                None
            )
        )?;
        self.blocks.push(id);
        Ok(())
    }
}

#[async_trait]
impl BlobUpload for AzureUpload {
    async fn write(&mut self, chunk: Bytes) -> Result<()> {
        self.size += chunk.len() as u64;
        let want = 16usize.saturating_sub(self.head.len()).min(chunk.len());
        self.head.extend_from_slice(&chunk[..want]);
        let block = self.inner.options.block_size;
        if self.buffer.is_empty() && chunk.len() == block {
            return self.stage(chunk).await;
        }
        self.buffer.extend_from_slice(&chunk);
        while self.buffer.len() >= block {
            let data = self.buffer.split_to(block).freeze();
            self.stage(data).await?;
        }
        Ok(())
    }

    async fn finish(mut self: Box<Self>) -> Result<BlobMeta> {
        if !self.buffer.is_empty() || self.blocks.is_empty() {
            let data = std::mem::take(&mut self.buffer).freeze();
            self.stage(data).await?;
        }
        let list = BlockLookupList {
            latest: Some(self.blocks.clone()),
            ..Default::default()
        };
        let content = RequestContent::try_from(list)
            .map_err(|e| StorageError::Other(format!("block list: {e}").into()))?;
        let committed = self
            .client
            .commit_block_list(
                content,
                Some(BlockBlobClientCommitBlockListOptions {
                    blob_content_type: Some(describe::content_type(&self.key, &self.head).into()),
                    metadata: describe_job(&self.key),
                    ..Default::default()
                }),
            )
            .await
            .map_err(|e| map(e, &self.key))?;
        Ok(BlobMeta {
            key: self.key.clone(),
            size: self.size,
            etag: etag_string(committed.etag().map_err(|e| map(e, &self.key))?)?,
            last_modified: committed
                .last_modified()
                .map_err(|e| map(e, &self.key))?
                .unwrap_or_else(OffsetDateTime::now_utc),
        })
    }

    async fn abort(self: Box<Self>) -> Result<()> {
        // Staged blocks that are never committed are invisible and the service discards them.
        Ok(())
    }
}
