//! The listener: receive loops, per-message tasks, lease renewal, retries, poison and shutdown.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use serde::Serialize;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::Instrument;

use super::backoff::Backoff;
use super::handler::{Context, Failure, Handler};
use super::listener_settings::ListenerSettings;
use super::poison::{self, PoisonHook, probe_job_id};
use super::shutdown::{self, Shutdown, ShutdownTrigger};
use crate::messages::Message;
use crate::queue::{BodyError, Queue};
use crate::storage::{MessageUpdate, ReceivedMessage, StorageError};
use crate::{accounting, metric_names};

/// Runs a handler over one queue; see the [module docs](super).
pub struct Listener<M: Message> {
    queue: Queue<M>,
    settings: ListenerSettings,
    use_metadata: bool,
    on_poison: Option<PoisonHook>,
    seed: Option<u64>,
}

/// Counters of one listener, readable while it runs.
#[derive(Debug, Default)]
struct Stats {
    receives: AtomicU64,
    empty_receives: AtomicU64,
    received: AtomicU64,
    processed: AtomicU64,
    retried: AtomicU64,
    panicked: AtomicU64,
    poisoned: AtomicU64,
    released: AtomicU64,
    renewals: AtomicU64,
    lost_leases: AtomicU64,
    receivers: AtomicUsize,
    running: AtomicUsize,
}

/// A listener's counters at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct ListenerStats {
    /// Receive calls made, and how many of them came back empty.
    pub receives: u64,
    pub empty_receives: u64,
    /// Messages received.
    pub received: u64,
    /// Messages handled and deleted.
    pub processed: u64,
    /// Attempts that failed (retry or panic) and were scheduled again.
    pub retried: u64,
    /// Of those, attempts whose handler panicked.
    pub panicked: u64,
    /// Messages moved to the poison queue.
    pub poisoned: u64,
    /// Messages made visible again, unhandled, at shutdown.
    pub released: u64,
    /// Visibility renewals of messages in hand.
    pub renewals: u64,
    /// Messages whose lease was lost (another receiver may have them now).
    pub lost_leases: u64,
    /// Receive loops running now (one when idle).
    pub receivers: usize,
    /// Handlers running now.
    pub running: usize,
}

impl Stats {
    fn snapshot(&self) -> ListenerStats {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ListenerStats {
            receives: get(&self.receives),
            empty_receives: get(&self.empty_receives),
            received: get(&self.received),
            processed: get(&self.processed),
            retried: get(&self.retried),
            panicked: get(&self.panicked),
            poisoned: get(&self.poisoned),
            released: get(&self.released),
            renewals: get(&self.renewals),
            lost_leases: get(&self.lost_leases),
            receivers: self.receivers.load(Ordering::Relaxed),
            running: self.running.load(Ordering::Relaxed),
        }
    }
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// Counts a finished message in the process's metrics.
fn handled(queue: &str, outcome: &'static str) {
    metrics::counter!(metric_names::MESSAGES_HANDLED, "queue" => queue.to_string(), "outcome" => outcome)
        .increment(1);
}

/// A running listener. Dropping it leaves the listener running until the runtime ends; call
/// [`ListenerHandle::shutdown`] to stop it cleanly.
pub struct ListenerHandle {
    queue: Arc<str>,
    settings: ListenerSettings,
    stats: Arc<Stats>,
    stop: ShutdownTrigger,
    abort: ShutdownTrigger,
    capacity: Arc<Semaphore>,
    capacity_total: usize,
    primary: JoinHandle<()>,
}

impl fmt::Debug for ListenerHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListenerHandle")
            .field("queue", &self.queue)
            .field("stats", &self.stats.snapshot())
            .finish()
    }
}

impl ListenerHandle {
    pub fn stats(&self) -> ListenerStats {
        self.stats.snapshot()
    }

    /// The settings in force (configuration with the queue's metadata applied).
    pub fn settings(&self) -> &ListenerSettings {
        &self.settings
    }

    pub fn queue(&self) -> &str {
        &self.queue
    }

    /// Stops receiving, lets running handlers finish within `deadline`, then abandons the rest
    /// and makes every message still held visible again at once.
    pub async fn shutdown(self, deadline: Duration) -> ListenerStats {
        self.stop.fire();
        let total = u32::try_from(self.capacity_total).unwrap_or(u32::MAX);
        let drained = tokio::time::timeout(deadline, self.capacity.acquire_many(total)).await;
        if drained.is_err() {
            tracing::warn!(queue = %self.queue, "handlers still running at the shutdown deadline; releasing their messages");
            self.abort.fire();
            let _ =
                tokio::time::timeout(Duration::from_secs(10), self.capacity.acquire_many(total))
                    .await;
        }
        let _ = self.primary.await;
        self.stats.snapshot()
    }
}

struct Shared<M: Message> {
    queue: Queue<M>,
    name: Arc<str>,
    settings: ListenerSettings,
    handler: Arc<dyn Handler<M>>,
    on_poison: Option<PoisonHook>,
    stats: Arc<Stats>,
    /// Messages held (received and not yet finished) plus receives in flight.
    capacity: Arc<Semaphore>,
    /// Handlers running.
    running: Arc<Semaphore>,
    stop: Shutdown,
    abort: Shutdown,
    /// Told when the last receive loop has ended.
    receivers_gone: tokio::sync::Notify,
}

impl<M: Message> Listener<M> {
    pub fn new(queue: Queue<M>) -> Self {
        Listener {
            queue,
            settings: ListenerSettings::default(),
            use_metadata: true,
            on_poison: None,
            seed: None,
        }
    }

    /// Settings from configuration; the queue's metadata still overrides them at start.
    pub fn settings(mut self, settings: ListenerSettings) -> Self {
        self.settings = settings;
        self
    }

    /// Ignores the queue's metadata: the configured settings are final.
    pub fn ignore_metadata(mut self) -> Self {
        self.use_metadata = false;
        self
    }

    /// Called after each message moved to the poison queue (to mark its job failed).
    pub fn on_poison(mut self, hook: PoisonHook) -> Self {
        self.on_poison = Some(hook);
        self
    }

    /// Seeds the idle back-off's random jitter, making its schedule reproducible.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Creates the queue and its poison queue if needed, reads the queue's metadata, subscribes
    /// to nudges and starts receiving.
    pub async fn start<H: Handler<M>>(self, handler: H) -> Result<ListenerHandle, StorageError> {
        self.queue.ensure().await?;
        let mut settings = self.settings.normalized();
        if self.use_metadata {
            let metadata = self.queue.queues().get_metadata(self.queue.name()).await?;
            let (applied, errors) = settings.with_metadata(&metadata);
            for e in errors {
                tracing::warn!(queue = self.queue.name(), "ignored: {e}");
            }
            settings = applied;
        }
        let name: Arc<str> = Arc::from(self.queue.name());
        let capacity_total = settings.max_concurrency + settings.batch_size;
        let capacity = Arc::new(Semaphore::new(capacity_total));
        let (stop_trigger, stop) = shutdown::channel();
        let (abort_trigger, abort) = shutdown::channel();
        let stats = Arc::new(Stats::default());
        let subscription = self.queue.nudges().subscribe(&name).await;
        let backoff = match self.seed {
            Some(seed) => Backoff::seeded(settings.min_backoff, settings.max_backoff, seed),
            None => Backoff::new(settings.min_backoff, settings.max_backoff),
        };
        let shared = Arc::new(Shared {
            queue: self.queue,
            name: name.clone(),
            running: Arc::new(Semaphore::new(settings.max_concurrency)),
            settings: settings.clone(),
            handler: Arc::new(handler),
            on_poison: self.on_poison,
            stats: stats.clone(),
            capacity: capacity.clone(),
            stop,
            abort,
            receivers_gone: tokio::sync::Notify::new(),
        });
        tracing::debug!(queue = %name, ?settings, "listener started");
        stats.receivers.fetch_add(1, Ordering::SeqCst);
        let name_for_handle = name.clone();
        let primary = tokio::spawn(
            async move {
                receive_loop(shared, Some(backoff), Some(&subscription)).await;
                subscription.close().await;
            }
            .instrument(tracing::debug_span!("listener", queue = %name)),
        );
        Ok(ListenerHandle {
            queue: name_for_handle,
            settings,
            stats,
            stop: stop_trigger,
            abort: abort_trigger,
            capacity,
            capacity_total,
            primary,
        })
    }
}

/// Logs the first failure of a streak and the recovery, not every failure in between.
#[derive(Default)]
struct ErrorStreak {
    failures: u64,
}

impl ErrorStreak {
    fn failed(&mut self, queue: &str, what: &str, error: &StorageError) {
        self.failures += 1;
        if self.failures == 1 {
            tracing::warn!(queue, error = %error, "{what} failing; retrying with back-off");
        }
    }

    fn succeeded(&mut self, queue: &str, what: &str) {
        if self.failures > 0 {
            tracing::info!(queue, failures = self.failures, "{what} working again");
            self.failures = 0;
        }
    }
}

/// Reserves room for a batch: waits for at least half a batch, takes up to a whole one.
async fn reserve<M: Message>(shared: &Shared<M>) -> usize {
    let batch = shared.settings.batch_size;
    let least = batch.div_ceil(2).min(batch) as u32;
    let Ok(permit) = shared.capacity.acquire_many(least).await else {
        return 0;
    };
    permit.forget();
    let mut n = least as usize;
    while n < batch {
        match shared.capacity.try_acquire() {
            Ok(p) => {
                p.forget();
                n += 1;
            }
            Err(_) => break,
        }
    }
    n
}

/// One receive loop. The primary loop (with a back-off and a subscription) runs until shutdown
/// and waits out idle periods; extra loops, started while batches come back full, end at the
/// first empty receive.
async fn receive_loop<M: Message>(
    shared: Arc<Shared<M>>,
    mut idle: Option<Backoff>,
    nudges: Option<&crate::nudge::Subscription>,
) {
    let settings = &shared.settings;
    let name = &*shared.name;
    let mut errors = Backoff::new(Duration::from_millis(50), Duration::from_secs(10));
    let mut streak = ErrorStreak::default();
    loop {
        if shared.stop.is_fired() {
            break;
        }
        let n = tokio::select! {
            n = reserve(&shared) => n,
            () = shared.stop.fired() => break,
        };
        if shared.stop.is_fired() {
            shared.capacity.add_permits(n);
            break;
        }
        bump(&shared.stats.receives);
        metrics::counter!(metric_names::RECEIVES, "queue" => name.to_string()).increment(1);
        let got = shared
            .queue
            .queues()
            .receive(name, n, settings.visibility_timeout)
            .await;
        match got {
            Ok(messages) => {
                streak.succeeded(name, "receive");
                errors.reset();
                shared.capacity.add_permits(n - messages.len());
                if messages.is_empty() {
                    bump(&shared.stats.empty_receives);
                    metrics::counter!(metric_names::IDLE_RECEIVES, "queue" => name.to_string())
                        .increment(1);
                    let Some(backoff) = idle.as_mut() else { break };
                    let delay = backoff.next_delay();
                    tokio::select! {
                        () = tokio::time::sleep(delay) => {}
                        () = wait_nudge(nudges) => backoff.reset(),
                        () = shared.stop.fired() => break,
                    }
                    continue;
                }
                if let Some(backoff) = idle.as_mut() {
                    backoff.reset();
                }
                let full = messages.len() == n;
                shared
                    .stats
                    .received
                    .fetch_add(messages.len() as u64, Ordering::Relaxed);
                for message in messages {
                    let shared = shared.clone();
                    tokio::spawn(async move {
                        let _slot = Slot(shared.capacity.clone());
                        process(&shared, message).await;
                    });
                }
                if full {
                    maybe_add_receiver(&shared);
                }
            }
            Err(e) => {
                shared.capacity.add_permits(n);
                streak.failed(name, "receive", &e);
                if idle.is_none() {
                    break;
                }
                let delay = if e.is_transient() {
                    errors.next_delay()
                } else {
                    settings.max_backoff
                };
                tokio::select! {
                    () = tokio::time::sleep(delay) => {}
                    () = shared.stop.fired() => break,
                }
            }
        }
    }
    if shared.stats.receivers.fetch_sub(1, Ordering::SeqCst) == 1 {
        shared.receivers_gone.notify_waiters();
    }
}

/// Waits (at most 10 s) until no receive loop is left. A message released at shutdown is made
/// visible only then: a receive already in flight when the listener stopped could otherwise
/// take it again, count a second dequeue against its poison threshold and release it twice.
async fn receivers_ended<M: Message>(shared: &Shared<M>) {
    let ended = async {
        loop {
            let gone = shared.receivers_gone.notified();
            if shared.stats.receivers.load(Ordering::SeqCst) == 0 {
                return;
            }
            gone.await;
        }
    };
    if tokio::time::timeout(Duration::from_secs(10), ended)
        .await
        .is_err()
    {
        tracing::debug!(queue = %shared.name, "a receive still in flight; releasing anyway");
    }
}

async fn wait_nudge(subscription: Option<&crate::nudge::Subscription>) {
    match subscription {
        Some(s) => s.notified().await,
        None => std::future::pending().await,
    }
}

fn maybe_add_receiver<M: Message>(shared: &Arc<Shared<M>>) {
    let receivers = &shared.stats.receivers;
    let mut current = receivers.load(Ordering::Relaxed);
    loop {
        if current >= shared.settings.max_receivers {
            return;
        }
        match receivers.compare_exchange(current, current + 1, Ordering::SeqCst, Ordering::Relaxed)
        {
            Ok(_) => break,
            Err(now) => current = now,
        }
    }
    let shared = shared.clone();
    tokio::spawn(
        async move { receive_loop(shared, None, None).await }.instrument(tracing::Span::current()),
    );
}

/// Gives a message's room back when its task ends, however it ends.
struct Slot(Arc<Semaphore>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.add_permits(1);
    }
}

/// The message in hand and its current receipt.
struct Lease {
    id: String,
    receipt: String,
    renew_at: Instant,
    lost: bool,
}

/// The outcome of one attempt.
enum Attempt {
    Done,
    Failed(Failure),
    Panicked(String),
    /// Not started, or abandoned at the shutdown deadline.
    Released,
}

async fn process<M: Message>(shared: &Arc<Shared<M>>, message: ReceivedMessage) {
    let settings = &shared.settings;
    let mut lease = Lease {
        id: message.id.clone(),
        receipt: message.pop_receipt.clone(),
        renew_at: Instant::now() + settings.renewal_interval,
        lost: false,
    };
    let span = tracing::info_span!(
        "message",
        queue = %shared.name,
        id = %message.id,
        dequeue_count = message.dequeue_count,
        job = tracing::field::Empty,
    );
    let work = async {
        if message.dequeue_count > settings.poison_threshold {
            let mut reason = format!(
                "received {} times, over the poison threshold of {}",
                message.dequeue_count, settings.poison_threshold
            );
            if let Some(cause) = poison::last_error(&message.body) {
                reason = format!("{reason}; last error: {cause}");
            }
            move_to_poison(shared, &message, &mut lease, &reason).await;
            return;
        }
        let decoded = match shared.queue.decode(&message.body).await {
            Ok(decoded) => decoded,
            Err(BodyError::Undecodable(e)) => {
                let reason = format!("undecodable body: {e}");
                move_to_poison(shared, &message, &mut lease, &reason).await;
                return;
            }
            Err(e @ BodyError::Storage { .. }) => {
                tracing::warn!(error = %e, "message body unreadable; retrying later");
                let delay = retry_delay(settings, message.dequeue_count);
                let cause = e.to_string();
                retry_later(shared, &message, &mut lease, delay, Some(&cause)).await;
                bump(&shared.stats.retried);
                handled(&shared.name, "retry");
                return;
            }
        };
        // From here on every storage call is charged to the message's job.
        let job = probe_job_id(&decoded.text);
        if let Some(job) = job {
            tracing::Span::current().record("job", tracing::field::display(job));
        }
        let finish = async {
            let outcome = attempt(shared, &message, &mut lease, decoded.envelope, job).await;
            match outcome {
                Attempt::Done => {
                    if delete(shared, &mut lease).await {
                        bump(&shared.stats.processed);
                        handled(&shared.name, "ok");
                        if let Some(key) = decoded.body_blob
                            && let Err(e) = shared.queue.blobs().delete(&key).await
                        {
                            tracing::debug!(key, error = %e, "stored-aside body not deleted");
                        }
                    }
                }
                Attempt::Failed(Failure::Poison(reason)) => {
                    move_to_poison(shared, &message, &mut lease, &reason).await;
                }
                Attempt::Failed(Failure::Retry { after, cause }) => {
                    let delay =
                        after.unwrap_or_else(|| retry_delay(settings, message.dequeue_count));
                    match &cause {
                        Some(cause) => tracing::warn!(?delay, cause, "attempt failed; retrying"),
                        None => tracing::info!(?delay, "attempt failed; retrying"),
                    }
                    bump(&shared.stats.retried);
                    handled(&shared.name, "retry");
                    retry_later(shared, &message, &mut lease, delay, cause.as_deref()).await;
                }
                Attempt::Panicked(what) => {
                    let delay = retry_delay(settings, message.dequeue_count);
                    tracing::error!(panic = %what, ?delay, "handler panicked; retrying");
                    bump(&shared.stats.retried);
                    bump(&shared.stats.panicked);
                    handled(&shared.name, "retry");
                    let cause = format!("the handler panicked: {what}");
                    retry_later(shared, &message, &mut lease, delay, Some(&cause)).await;
                }
                Attempt::Released => {
                    bump(&shared.stats.released);
                    receivers_ended(shared).await;
                    set_visibility(shared, &mut lease, Duration::ZERO).await;
                }
            }
        };
        match job {
            Some(job) => accounting::with_job(job, finish).await,
            None => finish.await,
        }
    };
    work.instrument(span).await
}

/// Waits for a handler slot and runs the handler in its own task, renewing the lease meanwhile.
async fn attempt<M: Message>(
    shared: &Arc<Shared<M>>,
    message: &ReceivedMessage,
    lease: &mut Lease,
    envelope: crate::messages::Envelope<M>,
    job: Option<uuid::Uuid>,
) -> Attempt {
    let permit = renewing(shared, lease, async {
        tokio::select! {
            biased;
            () = shared.stop.fired() => None,
            p = shared.running.clone().acquire_owned() => p.ok(),
        }
    })
    .await;
    let Some(permit) = permit else {
        return Attempt::Released;
    };
    if shared.stop.is_fired() {
        return Attempt::Released;
    }
    let context = Context {
        queue: shared.name.clone(),
        message_id: message.id.clone(),
        dequeue_count: message.dequeue_count,
        insertion_time: message.insertion_time,
        job,
        shutdown: shared.stop.clone(),
    };
    let future = shared.handler.handle(envelope, context);
    shared.stats.running.fetch_add(1, Ordering::Relaxed);
    let in_flight =
        metrics::gauge!(metric_names::HANDLERS_IN_FLIGHT, "queue" => shared.name.to_string());
    in_flight.increment(1.0);
    let started = Instant::now();
    let mut task = match job {
        Some(job) => tokio::spawn(accounting::with_job(job, future).in_current_span()),
        None => tokio::spawn(future.in_current_span()),
    };
    let joined = renewing(shared, lease, async {
        tokio::select! {
            joined = &mut task => Some(joined),
            () = shared.abort.fired() => None,
        }
    })
    .await;
    shared.stats.running.fetch_sub(1, Ordering::Relaxed);
    in_flight.decrement(1.0);
    metrics::histogram!(metric_names::HANDLER_DURATION, "queue" => shared.name.to_string())
        .record(started.elapsed().as_secs_f64());
    drop(permit);
    match joined {
        None => {
            task.abort();
            Attempt::Released
        }
        Some(Ok(Ok(()))) => Attempt::Done,
        Some(Ok(Err(failure))) => Attempt::Failed(failure),
        Some(Err(e)) if e.is_panic() => {
            let payload = e.into_panic();
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "non-string panic".to_string());
            Attempt::Panicked(what)
        }
        Some(Err(_)) => Attempt::Released,
    }
}

/// Drives `fut` to completion, renewing the message's visibility on the renewal interval.
async fn renewing<M: Message, F: Future>(
    shared: &Shared<M>,
    lease: &mut Lease,
    fut: F,
) -> F::Output {
    tokio::pin!(fut);
    loop {
        tokio::select! {
            out = &mut fut => return out,
            () = tokio::time::sleep_until(lease.renew_at), if !lease.lost => renew(shared, lease).await,
        }
    }
}

async fn renew<M: Message>(shared: &Shared<M>, lease: &mut Lease) {
    let settings = &shared.settings;
    match shared
        .queue
        .queues()
        .update(
            &shared.name,
            MessageUpdate::new(&lease.id, &lease.receipt, settings.visibility_timeout, None),
        )
        .await
    {
        Ok(updated) => {
            lease.receipt = updated.pop_receipt;
            lease.renew_at = Instant::now() + settings.renewal_interval;
            bump(&shared.stats.renewals);
        }
        Err(e) if e.is_transient() => {
            tracing::warn!(error = %e, "lease renewal failed; trying again shortly");
            let soon = (settings
                .visibility_timeout
                .saturating_sub(settings.renewal_interval)
                / 4)
            .max(Duration::from_millis(50));
            lease.renew_at = Instant::now() + soon;
        }
        Err(e) => {
            tracing::warn!(error = %e, "lease lost: another receiver may handle this message too");
            lease.lost = true;
            bump(&shared.stats.lost_leases);
        }
    }
}

/// The delay before a failed attempt is retried: one second, doubling per attempt, capped.
fn retry_delay(settings: &ListenerSettings, dequeue_count: u32) -> Duration {
    let exp = dequeue_count.saturating_sub(1).min(20);
    Duration::from_secs(1 << exp).min(settings.max_retry_delay)
}

/// Calls `op` until it succeeds, fails for good or has failed transiently five times.
async fn with_retries<T, F, Fut>(mut op: F) -> Result<T, StorageError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, StorageError>>,
{
    let mut backoff = Backoff::new(Duration::from_millis(50), Duration::from_secs(2));
    let mut tries = 0;
    loop {
        match op().await {
            Err(e) if e.is_transient() && tries < 4 => {
                tries += 1;
                tokio::time::sleep(backoff.next_delay()).await;
            }
            other => return other,
        }
    }
}

/// Deletes the message with its latest receipt; false if it could not be.
async fn delete<M: Message>(shared: &Shared<M>, lease: &mut Lease) -> bool {
    let queues = shared.queue.queues();
    match with_retries(|| queues.delete(&shared.name, &lease.id, &lease.receipt)).await {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(error = %e, "handled message not deleted; it will be delivered again");
            false
        }
    }
}

/// Makes the message visible again after `delay`, noting `cause` in its body (in the same
/// update, so it costs nothing more) for the poison record should the retries run out.
async fn retry_later<M: Message>(
    shared: &Shared<M>,
    message: &ReceivedMessage,
    lease: &mut Lease,
    delay: Duration,
    cause: Option<&str>,
) {
    let body = cause.and_then(|cause| poison::with_last_error(&message.body, cause));
    update(shared, lease, delay, body.as_deref()).await
}

/// Makes the message visible again after `delay`.
async fn set_visibility<M: Message>(shared: &Shared<M>, lease: &mut Lease, delay: Duration) {
    update(shared, lease, delay, None).await
}

async fn update<M: Message>(
    shared: &Shared<M>,
    lease: &mut Lease,
    delay: Duration,
    body: Option<&str>,
) {
    if lease.lost {
        return;
    }
    let queues = shared.queue.queues();
    let delay = delay.min(crate::storage::MAX_VISIBILITY);
    match with_retries(|| {
        queues.update(
            &shared.name,
            MessageUpdate::new(&lease.id, &lease.receipt, delay, body),
        )
    })
    .await
    {
        Ok(updated) => lease.receipt = updated.pop_receipt,
        Err(e) => {
            tracing::debug!(error = %e, "visibility not changed; the timeout will lapse instead")
        }
    }
}

async fn move_to_poison<M: Message>(
    shared: &Shared<M>,
    message: &ReceivedMessage,
    lease: &mut Lease,
    reason: &str,
) {
    let blobs = shared.queue.blobs();
    let queues = shared.queue.queues();
    let record =
        match with_retries(|| poison::make_record(&**blobs, &shared.name, message, reason)).await {
            Ok(record) => record,
            Err(e) => {
                tracing::warn!(error = %e, "poison record not written; the message stays");
                return;
            }
        };
    if let Err(e) =
        with_retries(|| poison::send_record(&**queues, &record, shared.queue.encoding())).await
    {
        tracing::warn!(error = %e, "poison record not sent; the message stays");
        return;
    }
    if !delete(shared, lease).await {
        return;
    }
    bump(&shared.stats.poisoned);
    handled(&shared.name, "poison");
    tracing::warn!(reason, "message moved to the poison queue");
    if let Some(hook) = &shared.on_poison {
        hook(record).await;
    }
}
