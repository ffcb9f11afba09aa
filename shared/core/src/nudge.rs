//! Wake-up nudges: whoever sends a message tells that queue's listeners, so an idle listener picks
//! the message up at once instead of sleeping out its back-off.
//!
//! In one process a [`Nudges`] handle keeps a [`Notify`] per queue. Across processes and hosts it
//! is best effort: a listening process binds one UDP socket ([`NudgeEndpoint`]: by default on the
//! address of the network interface that reaches storage, so other hosts can reach it too; on
//! loopback when storage is local) and registers the address it advertises per queue as a small
//! blob, `nudges/listeners/<queue>/<listener>_<ip>_<port>`, rewritten every
//! [`NudgeSettings::refresh`]; a publisher lists a queue's registrations at most once per
//! [`NudgeSettings::peer_cache`], skips those not rewritten within [`NudgeSettings::ttl`], and sends
//! each a datagram naming the queue.
//!
//! A nudge is only a hint. A lost one costs latency; a forged one costs at most one receive, and
//! datagrams wake a queue's listeners at most once per [`NudgeSettings::min_wake_interval`] (later
//! ones within the interval are folded into one wake at its end), so a flood of datagrams cannot
//! multiply billed receives. Polling stays the safety net. The blob calls are few by design: one
//! write per listener per refresh, one list per publisher per cache period while it sends.

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use time::OffsetDateTime;
use tokio::net::UdpSocket;
use tokio::sync::{Notify, OnceCell};
use tokio::task::JoinHandle;
use uuid::Uuid;

use crate::storage::{BlobStore, PutMode, StorageError, rewrite_periodically};

/// The container that holds listener registrations.
pub const CONTAINER: &str = "nudges";
const DATAGRAM_PREFIX: &[u8] = b"tessera-nudge:";

/// Where a process receives nudges and the timing of cross-process nudges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NudgeSettings {
    pub endpoint: NudgeEndpoint,
    /// A registration not rewritten for this long is ignored (its process is presumed gone).
    pub ttl: Duration,
    /// How often a listener rewrites its registration.
    pub refresh: Duration,
    /// How long a publisher trusts its list of a queue's listeners.
    pub peer_cache: Duration,
    /// Datagrams wake a queue's listeners in this process at most once per interval.
    pub min_wake_interval: Duration,
}

impl Default for NudgeSettings {
    fn default() -> Self {
        NudgeSettings {
            endpoint: NudgeEndpoint::loopback(),
            ttl: Duration::from_secs(45 * 60),
            refresh: Duration::from_secs(15 * 60),
            peer_cache: Duration::from_secs(5),
            min_wake_interval: Duration::from_millis(250),
        }
    }
}

/// The UDP endpoint a process receives nudges on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NudgeEndpoint {
    /// The address the socket binds to (`0.0.0.0` for every interface).
    pub bind: IpAddr,
    /// The address registered for publishers: one they can reach.
    pub advertise: IpAddr,
    /// The UDP port; 0 picks a free one.
    pub port: u16,
}

impl NudgeEndpoint {
    /// This machine only: bound and advertised on 127.0.0.1.
    pub fn loopback() -> Self {
        NudgeEndpoint {
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            advertise: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
        }
    }

    /// Bound and advertised on `ip`.
    pub fn on(ip: IpAddr, port: u16) -> Self {
        NudgeEndpoint {
            bind: ip,
            advertise: ip,
            port,
        }
    }
}

/// The address of this machine's interface that traffic to `host:port` leaves from: the one
/// a peer that reaches the same storage can most likely reach. Sends nothing (a connected UDP
/// socket only asks the routing table).
pub fn local_address_towards(host: &str, port: u16) -> std::io::Result<IpAddr> {
    let target = (host, port).to_socket_addrs()?.next().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("{host} has no address"),
        )
    })?;
    let any = match target {
        SocketAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        SocketAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    let socket = std::net::UdpSocket::bind((any, 0))?;
    socket.connect(target)?;
    Ok(socket.local_addr()?.ip())
}

/// The nudge fabric of one process; cheap to clone, pass it to every queue and listener.
#[derive(Clone)]
pub struct Nudges {
    inner: Arc<Inner>,
}

struct Inner {
    local: Mutex<HashMap<String, Arc<Notify>>>,
    remote: Option<Remote>,
}

struct Remote {
    blobs: Arc<dyn BlobStore>,
    id: Uuid,
    settings: NudgeSettings,
    /// The address listeners in this process are nudged on (as advertised), bound by the first
    /// subscription.
    inbox: OnceCell<SocketAddr>,
    inbox_task: Mutex<Option<JoinHandle<()>>>,
    /// Sockets nudges are sent from: IPv4 and IPv6.
    outbox_v4: OnceCell<UdpSocket>,
    outbox_v6: OnceCell<UdpSocket>,
    peers: tokio::sync::Mutex<HashMap<String, Peers>>,
}

struct Peers {
    fetched: Instant,
    addrs: Vec<SocketAddr>,
}

impl fmt::Debug for Nudges {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Nudges")
            .field("cross_process", &self.inner.remote.is_some())
            .finish()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(remote) = &self.remote
            && let Some(task) = remote
                .inbox_task
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
        {
            task.abort();
        }
    }
}

impl Nudges {
    /// Nudges within this process only.
    pub fn local() -> Self {
        Nudges {
            inner: Arc::new(Inner {
                local: Mutex::default(),
                remote: None,
            }),
        }
    }

    /// Nudges within this process and, through registrations in `blobs`, to listeners in other
    /// processes, on this machine or (with an endpoint other hosts reach) on others.
    pub fn cross_process(blobs: Arc<dyn BlobStore>, settings: NudgeSettings) -> Self {
        Nudges {
            inner: Arc::new(Inner {
                local: Mutex::default(),
                remote: Some(Remote {
                    blobs,
                    id: Uuid::new_v4(),
                    settings,
                    inbox: OnceCell::new(),
                    inbox_task: Mutex::new(None),
                    outbox_v4: OnceCell::new(),
                    outbox_v6: OnceCell::new(),
                    peers: tokio::sync::Mutex::default(),
                }),
            }),
        }
    }

    /// The address other processes reach this one on (loopback when nudges stay in it).
    pub fn advertised_ip(&self) -> IpAddr {
        self.inner
            .remote
            .as_ref()
            .map_or(IpAddr::V4(Ipv4Addr::LOCALHOST), |r| {
                r.settings.endpoint.advertise
            })
    }

    pub fn is_cross_process(&self) -> bool {
        self.inner.remote.is_some()
    }

    fn notifier(&self, queue: &str) -> Arc<Notify> {
        let mut local = self.inner.local.lock().unwrap_or_else(|e| e.into_inner());
        local.entry(queue.to_string()).or_default().clone()
    }

    /// Tells `queue`'s listeners that work is there: at once in this process, by datagram to
    /// the listeners registered from other processes. Never fails: a nudge is only a hint.
    pub async fn nudge(&self, queue: &str) {
        self.notifier(queue).notify_one();
        if let Some(remote) = &self.inner.remote {
            remote.nudge(queue).await;
        }
    }

    /// Subscribes a listener to `queue`'s nudges, registering it for other processes when this
    /// handle is cross-process. Registration failures are logged, never fatal.
    pub async fn subscribe(&self, queue: &str) -> Subscription {
        let notify = self.notifier(queue);
        let mut registration = None;
        if let Some(remote) = &self.inner.remote {
            match remote.register(queue, self.clone()).await {
                Ok(r) => registration = Some(r),
                Err(e) => tracing::warn!(queue, error = %e, "cross-process nudges unavailable"),
            }
        }
        Subscription {
            notify,
            registration,
        }
    }
}

impl Remote {
    async fn inbox(&self, nudges: Nudges) -> std::io::Result<SocketAddr> {
        self.inbox
            .get_or_try_init(|| async {
                let endpoint = self.settings.endpoint;
                let socket = UdpSocket::bind((endpoint.bind, endpoint.port)).await?;
                let addr = SocketAddr::new(endpoint.advertise, socket.local_addr()?.port());
                tracing::debug!(bind = %socket.local_addr()?, advertised = %addr, "nudge endpoint bound");
                let weak = Arc::downgrade(&nudges.inner);
                drop(nudges);
                let mut limiter = WakeLimiter::new(self.settings.min_wake_interval);
                let task = tokio::spawn(async move {
                    let mut buf = [0u8; 512];
                    loop {
                        let Ok((n, _from)) = socket.recv_from(&mut buf).await else {
                            continue;
                        };
                        let Some(queue) = buf[..n].strip_prefix(DATAGRAM_PREFIX) else {
                            continue;
                        };
                        let Ok(queue) = std::str::from_utf8(queue) else {
                            continue;
                        };
                        let Some(inner) = weak.upgrade() else { return };
                        let notify = {
                            let local = inner.local.lock().unwrap_or_else(|e| e.into_inner());
                            local.get(queue).cloned()
                        };
                        // Only queues listened to here: a datagram cannot grow the table.
                        if let Some(notify) = notify {
                            limiter.wake(queue, notify);
                        }
                    }
                });
                *self.inbox_task.lock().unwrap_or_else(|e| e.into_inner()) = Some(task);
                Ok(addr)
            })
            .await
            .copied()
    }

    fn key(&self, queue: &str, addr: SocketAddr) -> String {
        format!(
            "{CONTAINER}/listeners/{queue}/{}_{}_{}",
            self.id,
            addr.ip(),
            addr.port()
        )
    }

    async fn register(&self, queue: &str, nudges: Nudges) -> Result<Registration, String> {
        let addr = self.inbox(nudges).await.map_err(|e| e.to_string())?;
        let key = self.key(queue, addr);
        let body = Bytes::from(
            serde_json::json!({
                "queue": queue,
                "addr": addr.to_string(),
                "listener": self.id,
                "expires": (OffsetDateTime::now_utc() + self.settings.ttl).unix_timestamp(),
            })
            .to_string(),
        );
        self.blobs
            .put(&key, body.clone(), PutMode::Overwrite)
            .await
            .map_err(|e| e.to_string())?;
        let refresher =
            rewrite_periodically(self.blobs.clone(), key.clone(), body, self.settings.refresh);
        Ok(Registration {
            key,
            blobs: self.blobs.clone(),
            refresher,
        })
    }

    async fn nudge(&self, queue: &str) {
        let addrs = {
            let mut peers = self.peers.lock().await;
            let stale = peers
                .get(queue)
                .is_none_or(|p| p.fetched.elapsed() >= self.settings.peer_cache);
            if stale {
                let addrs = match self.fetch_peers(queue).await {
                    Ok(addrs) => addrs,
                    Err(e) => {
                        tracing::debug!(queue, error = %e, "nudge peers not listed");
                        peers
                            .get(queue)
                            .map(|p| p.addrs.clone())
                            .unwrap_or_default()
                    }
                };
                peers.insert(
                    queue.to_string(),
                    Peers {
                        fetched: Instant::now(),
                        addrs,
                    },
                );
            }
            peers
                .get(queue)
                .map(|p| p.addrs.clone())
                .unwrap_or_default()
        };
        if addrs.is_empty() {
            return;
        }
        let mut datagram = DATAGRAM_PREFIX.to_vec();
        datagram.extend_from_slice(queue.as_bytes());
        for addr in addrs {
            let (outbox, any) = match addr {
                SocketAddr::V4(_) => (&self.outbox_v4, IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
                SocketAddr::V6(_) => (&self.outbox_v6, IpAddr::V6(Ipv6Addr::UNSPECIFIED)),
            };
            let socket = match outbox.get_or_try_init(|| UdpSocket::bind((any, 0))).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::debug!(error = %e, "no socket to send nudges from");
                    continue;
                }
            };
            // Best effort: a lost datagram costs latency, never a message.
            let _ = socket.send_to(&datagram, addr).await;
        }
    }

    async fn fetch_peers(&self, queue: &str) -> Result<Vec<SocketAddr>, StorageError> {
        let prefix = format!("{CONTAINER}/listeners/{queue}/");
        let page = match self.blobs.list(&prefix, 1000, None).await {
            Ok(page) => page,
            Err(StorageError::NotFound(_)) => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let now = OffsetDateTime::now_utc();
        let own = self.id.to_string();
        Ok(page
            .items
            .iter()
            .filter(|meta| meta.last_modified + self.settings.ttl > now)
            .filter_map(|meta| {
                let name = meta.key.rsplit('/').next()?;
                let mut parts = name.splitn(3, '_');
                let (id, ip, port) = (parts.next()?, parts.next()?, parts.next()?);
                if id == own {
                    return None;
                }
                Some(SocketAddr::new(
                    ip.parse::<IpAddr>().ok()?,
                    port.parse().ok()?,
                ))
            })
            .collect())
    }
}

/// Wakes a queue's listeners at most once per interval on datagrams; datagrams within the
/// interval are folded into one wake at its end, so none is lost and a flood costs one receive
/// per interval.
struct WakeLimiter {
    interval: Duration,
    queues: HashMap<String, QueueWakes>,
}

struct QueueWakes {
    /// When the last wake happened or, if later, when the one scheduled will.
    last: Instant,
    scheduled: bool,
    timer: Option<JoinHandle<()>>,
}

impl WakeLimiter {
    fn new(interval: Duration) -> Self {
        WakeLimiter {
            interval,
            queues: HashMap::new(),
        }
    }

    fn wake(&mut self, queue: &str, notify: Arc<Notify>) {
        let now = Instant::now();
        let outcome = |what: &'static str| {
            metrics::counter!(crate::metric_names::NUDGES_RECEIVED, "queue" => queue.to_string(), "outcome" => what)
                .increment(1);
        };
        let Some(state) = self.queues.get_mut(queue) else {
            outcome("woken");
            notify.notify_one();
            self.queues.insert(
                queue.to_string(),
                QueueWakes {
                    last: now,
                    scheduled: false,
                    timer: None,
                },
            );
            return;
        };
        if state.scheduled && state.last > now {
            outcome("folded");
            return;
        }
        let next = state.last + self.interval;
        if now >= next {
            outcome("woken");
            notify.notify_one();
            state.last = now;
            state.scheduled = false;
            return;
        }
        outcome("deferred");
        state.last = next;
        state.scheduled = true;
        state.timer = Some(tokio::spawn(async move {
            tokio::time::sleep_until(tokio::time::Instant::from_std(next)).await;
            notify.notify_one();
        }));
    }
}

impl Drop for WakeLimiter {
    fn drop(&mut self) {
        for state in self.queues.values_mut() {
            if let Some(timer) = state.timer.take() {
                timer.abort();
            }
        }
    }
}

/// A listener's end of its queue's nudges.
pub struct Subscription {
    notify: Arc<Notify>,
    registration: Option<Registration>,
}

struct Registration {
    key: String,
    blobs: Arc<dyn BlobStore>,
    refresher: JoinHandle<()>,
}

impl Subscription {
    /// Resolves at the next nudge (at once if one came since the last call).
    pub async fn notified(&self) {
        self.notify.notified().await;
    }

    /// Whether other processes can nudge this listener.
    pub fn is_registered(&self) -> bool {
        self.registration.is_some()
    }

    /// Withdraws the registration, so publishers stop nudging this listener.
    pub async fn close(mut self) {
        if let Some(reg) = self.registration.take() {
            reg.refresher.abort();
            if let Err(e) = reg.blobs.delete(&reg.key).await {
                tracing::debug!(key = %reg.key, error = %e, "nudge registration not withdrawn");
            }
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(reg) = self.registration.take() {
            reg.refresher.abort();
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                handle.spawn(async move {
                    let _ = reg.blobs.delete(&reg.key).await;
                });
            }
        }
    }
}
