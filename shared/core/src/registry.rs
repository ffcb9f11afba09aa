//! Where every running role can be found. Each long-running process registers what it is and the
//! base URL of its `/healthz`, `/readyz` and `/metrics` as a small blob
//! ([`BlobKey::RoleRegistration`]), rewritten every [`REFRESH`] and withdrawn when it stops.
//! Readers ([`RoleRegistry::list`]) skip registrations not rewritten within [`TTL`]: a process
//! killed without a chance to withdraw its own. It costs one blob write per process per refresh
//! and one listing per reader.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use tokio::task::JoinHandle;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::keys::BlobKey;
use crate::storage::{BlobStore, BlobStoreExt as _, PutMode, StorageError, rewrite_periodically};

/// How often a process rewrites its registration.
pub const REFRESH: Duration = Duration::from_secs(10 * 60);
/// A registration not rewritten for this long is ignored (its process is presumed gone).
pub const TTL: Duration = Duration::from_secs(30 * 60);

/// One running process: its role and where its health and metrics endpoints answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RoleRegistration {
    /// The process's registration id (new at every start).
    pub id: Uuid,
    /// `serve`, `web`, `controller` or `processor`.
    pub role: String,
    /// The machine's host name.
    pub host: String,
    pub pid: u32,
    /// Base URL of `/healthz`, `/readyz` and `/metrics` (the web port for `serve` and `web`,
    /// the ops port for the others).
    pub ops_url: String,
    #[serde(with = "time::serde::rfc3339")]
    pub started_at: OffsetDateTime,
    /// When the registration was last rewritten (read from storage, not stored).
    #[serde(with = "time::serde::rfc3339", default = "OffsetDateTime::now_utc")]
    pub last_seen: OffsetDateTime,
}

impl RoleRegistration {
    /// A registration of this process as `role`, with its endpoints at `ops_url`.
    pub fn of_this_process(role: &str, ops_url: String) -> Self {
        let now = OffsetDateTime::now_utc();
        RoleRegistration {
            id: Uuid::new_v4(),
            role: role.to_string(),
            host: host_name(),
            pid: std::process::id(),
            ops_url,
            started_at: now,
            last_seen: now,
        }
    }
}

/// The registrations in a blob store.
#[derive(Debug, Clone)]
pub struct RoleRegistry {
    blobs: Arc<dyn BlobStore>,
}

/// A registration kept fresh until [`Registered::withdraw`] (or drop, best effort).
#[derive(Debug)]
pub struct Registered {
    key: String,
    blobs: Arc<dyn BlobStore>,
    refresher: Option<JoinHandle<()>>,
}

impl RoleRegistry {
    pub fn new(blobs: Arc<dyn BlobStore>) -> Self {
        RoleRegistry { blobs }
    }

    /// Writes `registration` now and every [`REFRESH`] after. A failed first write is returned
    /// (the caller logs it: being findable is not worth failing a role for); later ones retry
    /// at the next refresh.
    pub async fn register(
        &self,
        registration: RoleRegistration,
    ) -> Result<Registered, StorageError> {
        let key = BlobKey::RoleRegistration {
            id: registration.id,
        }
        .path();
        let body = Bytes::from(serde_json::to_vec(&registration).unwrap_or_default());
        self.blobs
            .put(&key, body.clone(), PutMode::Overwrite)
            .await?;
        let refresher = rewrite_periodically(self.blobs.clone(), key.clone(), body, REFRESH);
        Ok(Registered {
            key,
            blobs: self.blobs.clone(),
            refresher: Some(refresher),
        })
    }

    /// The registrations rewritten within [`TTL`], by role, then host, then start. One listing,
    /// and one read per registration.
    pub async fn list(&self) -> Result<Vec<RoleRegistration>, StorageError> {
        let listed = match self
            .blobs
            .list_all(BlobKey::ROLE_REGISTRATIONS_PREFIX)
            .await
        {
            Ok(items) => items,
            Err(StorageError::NotFound(_)) => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let now = OffsetDateTime::now_utc();
        let mut out = Vec::new();
        for meta in listed {
            if meta.last_modified + TTL <= now {
                continue;
            }
            let bytes = match self.blobs.get(&meta.key).await {
                Ok(b) => b,
                // Withdrawn since the listing.
                Err(StorageError::NotFound(_)) => continue,
                Err(e) => return Err(e),
            };
            // Whatever does not parse is not a registration this version wrote: skipped.
            if let Ok(mut registration) = serde_json::from_slice::<RoleRegistration>(&bytes) {
                registration.last_seen = meta.last_modified;
                out.push(registration);
            }
        }
        out.sort_by(|a, b| {
            (role_rank(&a.role), &a.host, a.started_at).cmp(&(
                role_rank(&b.role),
                &b.host,
                b.started_at,
            ))
        });
        Ok(out)
    }
}

impl Registered {
    /// Stops refreshing and deletes the registration.
    pub async fn withdraw(mut self) {
        if let Some(task) = self.refresher.take() {
            task.abort();
        }
        if let Err(e) = self.blobs.delete(&self.key).await {
            tracing::debug!(key = %self.key, error = %e, "role registration not withdrawn");
        }
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        if let Some(task) = self.refresher.take() {
            task.abort();
            let (blobs, key) = (self.blobs.clone(), self.key.clone());
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                handle.spawn(async move {
                    let _ = blobs.delete(&key).await;
                });
            }
        }
    }
}

fn role_rank(role: &str) -> usize {
    ["serve", "web", "controller", "processor"]
        .iter()
        .position(|r| *r == role)
        .unwrap_or(usize::MAX)
}

/// The machine's host name: `HOSTNAME`, else the kernel's, else `localhost`.
pub fn host_name() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}
