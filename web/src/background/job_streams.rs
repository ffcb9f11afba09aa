//! The job event streams of one web process: one poller per watched job, shared by every stream
//! of that job (it re-reads the record every `events_poll_ms` while anyone watches, and at once
//! when the imageresponse listener here finishes the job); the caps on streams per client and in
//! all; and their end at shutdown. The route is `routes::events`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tessera_shared::error_code::ErrorCode;

use actix_web::http::StatusCode;
use tokio::sync::{broadcast, watch};
use uuid::Uuid;

use tessera_shared::jobs::{JobError, JobStore};
use tessera_shared::lifecycle::RetentionSettings;

use crate::api_error::{ApiError, ApiResult};
use crate::job_view::JobView;

/// Failures to read a job a poller rides out before its streams hear of it.
const ERROR_AFTER: Duration = Duration::from_secs(15);

/// What the poller of one job last saw.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Seen {
    Nothing,
    Job {
        json: Arc<str>,
        ended: bool,
    },
    Error {
        code: &'static str,
        message: &'static str,
        ended: bool,
    },
}

/// The pollers and stream counts of one web process.
#[derive(Clone)]
pub struct StreamHub {
    inner: Arc<Hub>,
}

struct Hub {
    jobs: JobStore,
    changes: JobChanges,
    poll: Duration,
    retention: RetentionSettings,
    max_total: usize,
    max_per_client: usize,
    max_per_address: usize,
    state: Mutex<HubState>,
    /// True once the server is shutting down: every stream ends.
    closing: watch::Sender<bool>,
}

#[derive(Default)]
struct HubState {
    pollers: HashMap<Uuid, watch::Receiver<Seen>>,
    /// Open streams by `client ID` and by `address IP`.
    per_client: HashMap<String, usize>,
    total: usize,
    /// Pollers started since the process started (what sharing saves shows here).
    started: u64,
}

/// A stream's place in the counts, given back when the stream ends.
pub(crate) struct Seat {
    hub: Arc<Hub>,
    /// The counts it is in: its client's, its address's.
    counted: Vec<String>,
}

impl Drop for Seat {
    fn drop(&mut self) {
        let mut state = self.hub.state.lock().unwrap_or_else(|e| e.into_inner());
        state.total -= 1;
        for key in &self.counted {
            if let Some(n) = state.per_client.get_mut(key) {
                *n -= 1;
                if *n == 0 {
                    state.per_client.remove(key);
                }
            }
        }
    }
}

impl std::fmt::Debug for StreamHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (open, pollers) = self.counts();
        f.debug_struct("StreamHub")
            .field("open", &open)
            .field("pollers_started", &pollers)
            .finish()
    }
}

impl StreamHub {
    pub fn new(
        jobs: JobStore,
        changes: JobChanges,
        settings: &crate::web_settings::WebSettings,
    ) -> Self {
        StreamHub {
            inner: Arc::new(Hub {
                jobs,
                changes,
                poll: Duration::from_millis(settings.events_poll_ms.max(50)),
                retention: settings.retention.clone(),
                max_total: settings.max_streams,
                max_per_client: settings.max_streams_per_client,
                max_per_address: settings.max_streams_per_address,
                state: Mutex::default(),
                closing: watch::channel(false).0,
            }),
        }
    }

    /// Ends every stream (the server is shutting down) and refuses new ones.
    pub fn close(&self) {
        self.inner.closing.send_replace(true);
    }

    /// Ends with the server: true once it is shutting down.
    pub(crate) fn closing(&self) -> watch::Receiver<bool> {
        self.inner.closing.subscribe()
    }

    /// Streams open now, and pollers started so far.
    pub fn counts(&self) -> (usize, u64) {
        let state = self.inner.state.lock().unwrap_or_else(|e| e.into_inner());
        (state.total, state.started)
    }

    /// Takes a seat for a stream of `client` (when it names itself) from `address`, or says why
    /// not: each is capped.
    pub(crate) fn seat(
        &self,
        client: Option<Uuid>,
        address: Option<std::net::IpAddr>,
    ) -> ApiResult<Seat> {
        let address = address.map(crate::guards::client::limited_network);
        let hub = &self.inner;
        if *hub.closing.borrow() {
            return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::ShuttingDown,
                "the server is shutting down",
            ));
        }
        let mut state = hub.state.lock().unwrap_or_else(|e| e.into_inner());
        let counted: Vec<(String, usize)> = client
            .map(|c| (format!("client {c}"), hub.max_per_client))
            .into_iter()
            .chain(address.map(|a| (format!("address {a}"), hub.max_per_address)))
            .collect();
        let full = counted
            .iter()
            .map(|(key, max)| (state.per_client.get(key).copied().unwrap_or(0), *max))
            .find(|(open, max)| open >= max);
        let refused = if let Some((open, _)) = full {
            Some(format!(
                "{open} event streams of yours (or of your address) are open, the most \
                 allowed: close one first"
            ))
        } else if state.total >= hub.max_total {
            Some("this server has as many event streams open as it serves".to_string())
        } else {
            None
        };
        if let Some(message) = refused {
            return Err(ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                ErrorCode::TooManyStreams,
                message,
            )
            .retry_after(Duration::from_secs(5)));
        }
        state.total += 1;
        for (key, _) in &counted {
            *state.per_client.entry(key.clone()).or_default() += 1;
        }
        Ok(Seat {
            hub: hub.clone(),
            counted: counted.into_iter().map(|(key, _)| key).collect(),
        })
    }

    /// What the poller of `job` sees, starting one if nobody watches the job yet.
    pub(crate) fn watch(&self, job: Uuid) -> watch::Receiver<Seen> {
        let mut state = self.inner.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(rx) = state.pollers.get(&job)
            && rx.has_changed().is_ok()
        {
            return rx.clone();
        }
        let (tx, rx) = watch::channel(Seen::Nothing);
        state.pollers.insert(job, rx.clone());
        state.started += 1;
        let hub = self.inner.clone();
        tokio::spawn(async move { hub.poll(job, tx).await });
        rx
    }
}

impl Hub {
    /// Reads the job while anyone watches it and it has not ended, publishing what changed.
    async fn poll(self: Arc<Self>, job: Uuid, tx: watch::Sender<Seen>) {
        let mut changes = self.changes.subscribe();
        let mut closing = self.closing.subscribe();
        let mut failing_since: Option<tokio::time::Instant> = None;
        loop {
            let seen = match self.jobs.get(job).await {
                Ok(record) => {
                    failing_since = None;
                    let json = serde_json::to_string(&JobView::new(&record, &self.retention))
                        .expect("job views serialize");
                    Some(Seen::Job {
                        json: json.into(),
                        ended: record.state.is_final(),
                    })
                }
                Err(JobError::NotFound(_)) => Some(Seen::Error {
                    code: "job_not_found",
                    message: "the job no longer exists",
                    ended: true,
                }),
                Err(e) => {
                    tracing::warn!(%job, error = %e, "event streams cannot read the job");
                    // Storage may come back: the streams hear of it only if it stays away.
                    let since = *failing_since.get_or_insert_with(tokio::time::Instant::now);
                    (since.elapsed() >= ERROR_AFTER).then_some(Seen::Error {
                        code: "internal",
                        message: "the job could not be read",
                        ended: false,
                    })
                }
            };
            let ended = matches!(
                seen,
                Some(Seen::Job { ended: true, .. } | Seen::Error { ended: true, .. })
            );
            if let Some(seen) = seen {
                tx.send_if_modified(|current| {
                    let changed = *current != seen;
                    *current = seen;
                    changed
                });
            }
            if ended || *closing.borrow() || self.unwatched(job, &tx) {
                break;
            }
            let woken = async {
                loop {
                    match changes.recv().await {
                        Ok(j) if j == job => return,
                        Ok(_) => continue,
                        Err(broadcast::error::RecvError::Lagged(_)) => return,
                        Err(broadcast::error::RecvError::Closed) => {
                            std::future::pending::<()>().await
                        }
                    }
                }
            };
            tokio::select! {
                _ = tokio::time::timeout(self.poll, woken) => {}
                _ = closing.changed() => break,
            }
        }
        self.forget(job, &tx);
    }

    /// Whether no stream watches the job any more (the hub's own receiver aside); if so, the
    /// poller is forgotten, under the lock new streams find it with.
    fn unwatched(&self, job: Uuid, tx: &watch::Sender<Seen>) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if tx.receiver_count() > 1 {
            return false;
        }
        Self::remove_poller(&mut state, job, tx);
        true
    }

    fn forget(&self, job: Uuid, tx: &watch::Sender<Seen>) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        Self::remove_poller(&mut state, job, tx);
    }

    fn remove_poller(state: &mut HubState, job: Uuid, tx: &watch::Sender<Seen>) {
        if state
            .pollers
            .get(&job)
            .is_some_and(|rx| rx.same_channel(&tx.subscribe()))
        {
            state.pollers.remove(&job);
        }
    }
}

/// An in-process signal that a job's record changed (sent by the imageresponse listener), so
/// live event streams answer at once instead of at their next poll.
#[derive(Debug, Clone)]
pub struct JobChanges {
    tx: broadcast::Sender<Uuid>,
}

impl JobChanges {
    pub fn new() -> Self {
        JobChanges {
            tx: broadcast::channel(256).0,
        }
    }

    pub fn changed(&self, job: Uuid) {
        // No receiver is fine: nobody is watching.
        let _ = self.tx.send(job);
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Uuid> {
        self.tx.subscribe()
    }
}

impl Default for JobChanges {
    fn default() -> Self {
        Self::new()
    }
}
