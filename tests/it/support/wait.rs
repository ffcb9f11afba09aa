//! Waiting on a condition, not for a time: the tests poll what they wait for.

use std::time::{Duration, Instant};

/// Waits until `attempt` gives a value, trying again at once and then every few milliseconds
/// (5 ms, doubling up to 100 ms). `Err` says what it saw instead: after `limit` the test fails
/// with the last of these.
pub(crate) async fn wait_for<T>(
    limit: Duration,
    attempt: impl AsyncFnMut() -> Result<T, String>,
) -> T {
    try_wait_for(limit, attempt)
        .await
        .unwrap_or_else(|seen| panic!("not seen within {limit:?}: {seen}"))
}

/// [`wait_for`] that gives the last `Err` at `limit` instead of failing the test (tried once
/// when `limit` is zero).
pub(crate) async fn try_wait_for<T>(
    limit: Duration,
    mut attempt: impl AsyncFnMut() -> Result<T, String>,
) -> Result<T, String> {
    let mut poll = Poll::new(limit);
    loop {
        match attempt().await {
            Ok(value) => return Ok(value),
            Err(seen) if poll.over() => return Err(seen),
            Err(_) => poll.pause().await,
        }
    }
}

/// The pauses of a loop that polls a condition until `limit` (5 ms, doubling up to 100 ms),
/// for loops whose future must be `Send` for any lifetime (a browser's, say), which an
/// `async` closure's is not.
pub(crate) struct Poll {
    deadline: Instant,
    next: Duration,
}

impl Poll {
    pub(crate) fn new(limit: Duration) -> Poll {
        Poll {
            deadline: Instant::now() + limit,
            next: Duration::from_millis(5),
        }
    }

    /// Whether the limit has passed.
    pub(crate) fn over(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// Waits before the next look.
    pub(crate) async fn pause(&mut self) {
        tokio::time::sleep(self.next).await;
        self.next = (self.next * 2).min(Duration::from_millis(100));
    }

    /// Waits before the next look; past the limit, fails the test with `seen`.
    pub(crate) async fn again(&mut self, seen: impl FnOnce() -> String) {
        if self.over() {
            panic!("not seen in time: {}", seen());
        }
        self.pause().await;
    }
}

/// Ok once every queue of `names` is empty, waiting up to `limit` for them to empty; else the
/// queues still holding messages, with their depths.
pub(crate) async fn queues_emptied(
    store: &dyn tessera_shared::storage::QueueStore,
    names: &[String],
    limit: Duration,
) -> Result<(), String> {
    try_wait_for(limit, async || {
        let mut depths = Vec::new();
        for name in names {
            depths.push((
                name.clone(),
                store.approximate_depth(name).await.unwrap_or(0),
            ));
        }
        nothing_left(depths)
    })
    .await
}

/// `Err` naming each queue of `depths` (name, messages) that still holds messages.
pub(crate) fn nothing_left(depths: impl IntoIterator<Item = (String, u64)>) -> Result<(), String> {
    let left: Vec<String> = depths
        .into_iter()
        .filter(|(_, depth)| *depth > 0)
        .map(|(name, depth)| format!("{name}: {depth}"))
        .collect();
    if left.is_empty() {
        Ok(())
    } else {
        Err(left.join(", "))
    }
}

/// Waits until `holds` is true; after `limit` the test fails, saying `what` it waited for.
pub(crate) async fn eventually(limit: Duration, what: &str, mut holds: impl AsyncFnMut() -> bool) {
    wait_for(limit, async || {
        if holds().await {
            Ok(())
        } else {
            Err(what.to_string())
        }
    })
    .await
}

/// [`wait_for`] off the runtime, for a test's own threads and child processes.
pub(crate) fn wait_for_blocking<T>(
    limit: Duration,
    mut attempt: impl FnMut() -> Result<T, String>,
) -> T {
    let deadline = Instant::now() + limit;
    let mut pause = Duration::from_millis(1);
    loop {
        match attempt() {
            Ok(value) => return value,
            Err(seen) if Instant::now() >= deadline => {
                panic!("not seen within {limit:?}: {seen}")
            }
            Err(_) => {}
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

/// Polls the job at `url` (some server's `/api/v1/jobs/{id}`, asked with `headers`) until it
/// has ended, for up to two minutes; its last view.
pub(crate) async fn job_ended_at(
    client: &reqwest::Client,
    url: &str,
    headers: &[(&str, &str)],
) -> serde_json::Value {
    wait_for(Duration::from_secs(120), async || {
        let mut request = client.get(url);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let view: serde_json::Value = request.send().await.unwrap().json().await.unwrap();
        match view["state"].as_str() {
            Some("done" | "failed") => Ok(view),
            _ => Err(format!("{url} not ended: {view}")),
        }
    })
    .await
}

/// Runs the future `work` makes to its end on a runtime of its own, on a thread of its own:
/// for a check in a `Drop`, which cannot await on the test's runtime.
pub(crate) fn block_on_aside<T: Send, F: std::future::Future<Output = T>>(
    work: impl FnOnce() -> F + Send,
) -> T {
    std::thread::scope(|scope| {
        scope
            .spawn(move || {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap()
                    .block_on(work())
            })
            .join()
            .unwrap()
    })
}
