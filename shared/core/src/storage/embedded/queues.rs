//! Queues in SQLite, with Azure Storage queue semantics.
//!
//! A message row carries its queue, body, dequeue count, insertion, expiry and next-visible times
//! (microseconds since the epoch) and its current pop receipt. Receiving picks visible, unexpired
//! rows in next-visible order (so first in, first out for a single sender until a message is
//! redelivered), hides them and gives each a fresh receipt; updating gives a fresh receipt too, so
//! older receipts go stale. Expired rows are ignored at once and purged every few seconds.
//!
//! All SQL runs on one thread per store, which owns the connection: async callers hand it a job
//! and await the answer, so the runtime never blocks. The thread runs every job waiting for it in
//! one `BEGIN IMMEDIATE` transaction and replies only after the commit, so an answered send or
//! delete is in the write-ahead log, and sixteen concurrent handlers share one commit (and one
//! fsync, with [`Durability::PowerLoss`]).

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rusqlite::{Connection, ErrorCode, OptionalExtension, params};
use time::OffsetDateTime;
use tokio::sync::oneshot;

use super::durability::Durability;
use crate::storage::{
    Cause, DEFAULT_TIME_TO_LIVE, MessageUpdate, PeekedMessage, QueueStore, ReceivedMessage, Result,
    SendOptions, SentMessage, StorageError, UpdatedMessage, check_batch, check_body,
    check_visibility, validate_queue_name,
};

/// Most jobs committed in one transaction.
const MAX_GROUP: usize = 256;
/// How often expired messages are purged.
const PURGE_EVERY: Duration = Duration::from_secs(5);
/// How many times an operation retries another process's lock (about ten seconds) before
/// giving up with a transient error.
const BUSY_RETRIES: i32 = 10_000;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS queues (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    metadata TEXT NOT NULL DEFAULT '{}'
);
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    queue_id INTEGER NOT NULL,
    body TEXT NOT NULL,
    dequeue_count INTEGER NOT NULL,
    insertion_time INTEGER NOT NULL,
    expiration_time INTEGER NOT NULL,
    next_visible INTEGER NOT NULL,
    pop_receipt INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_visible ON messages (queue_id, next_visible);
CREATE INDEX IF NOT EXISTS messages_expiry ON messages (expiration_time);
";

/// The queue store of one SQLite database.
pub struct EmbeddedQueues {
    path: PathBuf,
    jobs: mpsc::Sender<Box<dyn Job>>,
}

impl fmt::Debug for EmbeddedQueues {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmbeddedQueues")
            .field("path", &self.path)
            .finish()
    }
}

impl EmbeddedQueues {
    /// Opens (creating if needed) the database at `path` and starts its writer thread.
    pub fn open(path: &Path, durability: Durability) -> Result<Self> {
        let mut conn = Connection::open(path).map_err(sql_error)?;
        conn.busy_handler(Some(wait_for_lock)).map_err(sql_error)?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .map_err(sql_error)?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StorageError::Other(
                format!(
                    "{}: cannot use write-ahead logging (journal mode {mode})",
                    path.display()
                )
                .into(),
            ));
        }
        conn.execute_batch(match durability {
            // WAL with NORMAL: a commit is in the log file (the OS's cache) when it returns.
            Durability::ProcessCrash => "PRAGMA synchronous = NORMAL;",
            // WAL with FULL: a commit is fsynced before it returns.
            Durability::PowerLoss => "PRAGMA synchronous = FULL;",
        })
        .map_err(sql_error)?;
        conn.execute_batch(&format!("BEGIN IMMEDIATE;{SCHEMA}COMMIT;"))
            .map_err(sql_error)?;
        conn.set_prepared_statement_cache_capacity(32);

        let (jobs, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("tessera-queues".into())
            .spawn(move || writer(conn, rx))
            .map_err(|e| {
                StorageError::Other(format!("cannot start the queue thread: {e}").into())
            })?;
        Ok(EmbeddedQueues {
            path: path.to_path_buf(),
            jobs,
        })
    }

    /// Runs `f` on the writer thread, inside a transaction, and returns what it returned once the
    /// transaction has committed.
    /// [`EmbeddedQueues::call`] with the id of queue `queue`, checked by name first; a queue
    /// that does not exist is [`StorageError::NotFound`].
    async fn call_on<T, F>(&self, queue: &str, mut f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnMut(&Connection, i64) -> rusqlite::Result<T> + Send + 'static,
    {
        validate_queue_name(queue)?;
        let queue = queue.to_string();
        self.call(move |conn| {
            let Some(qid) = queue_id(conn, &queue)? else {
                return Ok(Err(queue_not_found(&queue)));
            };
            f(conn, qid).map(Ok)
        })
        .await
    }

    async fn call<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnMut(&Connection) -> rusqlite::Result<Result<T>> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        self.jobs
            .send(Box::new(TypedJob {
                f,
                result: None,
                tx,
            }))
            .map_err(|_| StorageError::Other("the queue database is closed".into()))?;
        rx.await
            .map_err(|_| StorageError::Other("the queue database thread stopped".into()))?
    }
}

/// One operation waiting for the writer thread.
trait Job: Send {
    /// Runs the operation inside the open transaction; SQL errors abort the transaction.
    fn run(&mut self, conn: &Connection) -> rusqlite::Result<()>;
    /// Sends the result computed by `run` (after the commit).
    fn reply(self: Box<Self>);
    fn fail(self: Box<Self>, error: StorageError);
}

struct TypedJob<T, F> {
    f: F,
    result: Option<Result<T>>,
    tx: oneshot::Sender<Result<T>>,
}

impl<T, F> Job for TypedJob<T, F>
where
    T: Send,
    F: FnMut(&Connection) -> rusqlite::Result<Result<T>> + Send,
{
    fn run(&mut self, conn: &Connection) -> rusqlite::Result<()> {
        self.result = Some((self.f)(conn)?);
        Ok(())
    }

    fn reply(self: Box<Self>) {
        let result = self
            .result
            .unwrap_or_else(|| Err(StorageError::Other("operation did not run".into())));
        let _ = self.tx.send(result);
    }

    fn fail(self: Box<Self>, error: StorageError) {
        let _ = self.tx.send(Err(error));
    }
}

/// The writer thread: takes every job waiting, runs them in one transaction, commits, replies.
/// When the group fails (a lock held too long, a full disk), each job is retried alone so one
/// failure does not fail its neighbours.
fn writer(conn: Connection, rx: mpsc::Receiver<Box<dyn Job>>) {
    let mut last_purge: Option<Instant> = None;
    while let Ok(first) = rx.recv() {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        let purge = last_purge.is_none_or(|at| at.elapsed() >= PURGE_EVERY);
        if purge {
            last_purge = Some(Instant::now());
        }
        match run_group(&conn, &mut group, purge) {
            Ok(()) => group.into_iter().for_each(|job| job.reply()),
            Err(e) if group.len() == 1 => {
                if let Some(job) = group.pop() {
                    job.fail(sql_error(e));
                }
            }
            Err(_) => {
                for mut job in group {
                    match run_group(&conn, std::slice::from_mut(&mut job), false) {
                        Ok(()) => job.reply(),
                        Err(e) => job.fail(sql_error(e)),
                    }
                }
            }
        }
    }
}

fn run_group(conn: &Connection, group: &mut [Box<dyn Job>], purge: bool) -> rusqlite::Result<()> {
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let ran = (|| {
        if purge {
            conn.prepare_cached("DELETE FROM messages WHERE expiration_time <= ?1")?
                .execute([now_micros()])?;
        }
        for job in group.iter_mut() {
            job.run(conn)?;
        }
        conn.execute_batch("COMMIT")
    })();
    if ran.is_err() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    ran
}

/// SQLite's busy handler: polls every millisecond (a fifth of one at first). SQLite's own handler
/// backs off to 100 ms, which lets a busy process take the lock again and again while another one
/// sleeps; polling this often gives the processes sharing a directory turns.
fn wait_for_lock(retries: i32) -> bool {
    if retries >= BUSY_RETRIES {
        return false;
    }
    let pause = if retries < 50 { 200 } else { 1000 };
    std::thread::sleep(Duration::from_micros(pause));
    true
}

fn sql_error(e: rusqlite::Error) -> StorageError {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            StorageError::Transient(Cause::with_source(format!("queue database busy: {e}"), e))
        }
        _ => StorageError::Other(Cause::with_source(format!("queue database: {e}"), e)),
    }
}

fn now_micros() -> i64 {
    (OffsetDateTime::now_utc().unix_timestamp_nanos() / 1000) as i64
}

fn micros(d: Duration) -> i64 {
    i64::try_from(d.as_micros()).unwrap_or(i64::MAX)
}

fn to_time(us: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(us) * 1000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

fn receipt_string(receipt: i64) -> String {
    format!("{:016x}", receipt as u64)
}

fn parse_receipt(receipt: &str) -> Option<i64> {
    u64::from_str_radix(receipt, 16).ok().map(|r| r as i64)
}

fn queue_not_found(queue: &str) -> StorageError {
    StorageError::NotFound(format!("queue {queue}"))
}

fn message_not_found(queue: &str, id: &str) -> StorageError {
    StorageError::NotFound(format!("message {id} in queue {queue}"))
}

fn queue_id(conn: &Connection, queue: &str) -> rusqlite::Result<Option<i64>> {
    conn.prepare_cached("SELECT id FROM queues WHERE name = ?1")?
        .query_row([queue], |row| row.get(0))
        .optional()
}

/// The row of a message to be updated or deleted, checked against the caller's receipt: `Err`
/// (inner) when it is gone, expired or the receipt is stale.
fn current_message(
    conn: &Connection,
    queue: &str,
    id: &str,
    pop_receipt: &str,
    now: i64,
) -> rusqlite::Result<Result<i64>> {
    let Some(qid) = queue_id(conn, queue)? else {
        return Ok(Err(queue_not_found(queue)));
    };
    let Ok(row_id) = id.parse::<i64>() else {
        return Ok(Err(message_not_found(queue, id)));
    };
    let row: Option<(i64, i64)> = conn
        .prepare_cached(
            "SELECT pop_receipt, expiration_time FROM messages WHERE id = ?1 AND queue_id = ?2",
        )?
        .query_row(params![row_id, qid], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?;
    Ok(match row {
        None => Err(message_not_found(queue, id)),
        Some((_, expires)) if expires <= now => Err(message_not_found(queue, id)),
        Some((current, _)) if parse_receipt(pop_receipt) != Some(current) => {
            Err(StorageError::ReceiptMismatch(id.to_string()))
        }
        Some(_) => Ok(row_id),
    })
}

#[async_trait]
impl QueueStore for EmbeddedQueues {
    async fn create_queue(&self, queue: &str) -> Result<()> {
        validate_queue_name(queue)?;
        let queue = queue.to_string();
        self.call(move |conn| {
            conn.prepare_cached("INSERT OR IGNORE INTO queues (name) VALUES (?1)")?
                .execute([&queue])?;
            Ok(Ok(()))
        })
        .await
    }

    async fn delete_queue(&self, queue: &str) -> Result<()> {
        self.call_on(queue, move |conn, qid| {
            conn.prepare_cached("DELETE FROM messages WHERE queue_id = ?1")?
                .execute([qid])?;
            conn.prepare_cached("DELETE FROM queues WHERE id = ?1")?
                .execute([qid])?;
            Ok(())
        })
        .await
    }

    async fn list_queues(&self) -> Result<Vec<String>> {
        self.call(|conn| {
            let names = conn
                .prepare_cached("SELECT name FROM queues ORDER BY name")?
                .query_map([], |row| row.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()?;
            Ok(Ok(names))
        })
        .await
    }

    async fn send(&self, queue: &str, body: &str, options: SendOptions) -> Result<SentMessage> {
        validate_queue_name(queue)?;
        check_body(body)?;
        check_visibility("a visibility delay", options.visibility_delay)?;
        let ttl = options.time_to_live.unwrap_or(DEFAULT_TIME_TO_LIVE);
        if ttl.is_zero() || options.visibility_delay >= ttl {
            return Err(StorageError::Invalid(format!(
                "time to live {ttl:?} must be positive and longer than the delay {:?}",
                options.visibility_delay
            )));
        }
        let (queue, body) = (queue.to_string(), body.to_string());
        self.call(move |conn| {
            let Some(qid) = queue_id(conn, &queue)? else {
                return Ok(Err(queue_not_found(&queue)));
            };
            let now = now_micros();
            let next_visible = now.saturating_add(micros(options.visibility_delay));
            let expires = now.saturating_add(micros(ttl));
            let receipt: i64 = rand::random();
            conn.prepare_cached(
                "INSERT INTO messages (queue_id, body, dequeue_count, insertion_time, \
                 expiration_time, next_visible, pop_receipt) VALUES (?1, ?2, 0, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![qid, body, now, expires, next_visible, receipt])?;
            Ok(Ok(SentMessage {
                id: conn.last_insert_rowid().to_string(),
                pop_receipt: receipt_string(receipt),
                insertion_time: to_time(now),
                expiration_time: to_time(expires),
                next_visible: to_time(next_visible),
            }))
        })
        .await
    }

    async fn receive(
        &self,
        queue: &str,
        max: usize,
        visibility_timeout: Duration,
    ) -> Result<Vec<ReceivedMessage>> {
        validate_queue_name(queue)?;
        check_batch(max)?;
        check_visibility("a visibility timeout", visibility_timeout)?;
        let queue = queue.to_string();
        self.call(move |conn| {
            let Some(qid) = queue_id(conn, &queue)? else {
                return Ok(Err(queue_not_found(&queue)));
            };
            let now = now_micros();
            let next_visible = now.saturating_add(micros(visibility_timeout));
            let rows = conn
                .prepare_cached(
                    "SELECT id, body, dequeue_count, insertion_time, expiration_time \
                     FROM messages WHERE queue_id = ?1 AND next_visible <= ?2 \
                     AND expiration_time > ?2 ORDER BY next_visible LIMIT ?3",
                )?
                .query_map(params![qid, now, max as i64], |row| {
                    Ok((
                        row.get::<_, i64>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, i64>(2)?,
                        row.get::<_, i64>(3)?,
                        row.get::<_, i64>(4)?,
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let mut hide = conn.prepare_cached(
                "UPDATE messages SET dequeue_count = dequeue_count + 1, next_visible = ?2, \
                 pop_receipt = ?3 WHERE id = ?1",
            )?;
            let mut received = Vec::with_capacity(rows.len());
            for (id, body, count, inserted, expires) in rows {
                let receipt: i64 = rand::random();
                hide.execute(params![id, next_visible, receipt])?;
                received.push(ReceivedMessage {
                    id: id.to_string(),
                    pop_receipt: receipt_string(receipt),
                    dequeue_count: u32::try_from(count + 1).unwrap_or(u32::MAX),
                    insertion_time: to_time(inserted),
                    expiration_time: to_time(expires),
                    next_visible: to_time(next_visible),
                    body,
                });
            }
            Ok(Ok(received))
        })
        .await
    }

    async fn update(&self, queue: &str, change: MessageUpdate<'_>) -> Result<UpdatedMessage> {
        let MessageUpdate {
            id,
            pop_receipt,
            visibility_timeout,
            body,
        } = change;
        validate_queue_name(queue)?;
        check_visibility("a visibility timeout", visibility_timeout)?;
        if let Some(body) = body {
            check_body(body)?;
        }
        let (queue, id, pop_receipt) = (queue.to_string(), id.to_string(), pop_receipt.to_string());
        let body = body.map(str::to_string);
        self.call(move |conn| {
            let now = now_micros();
            let row_id = match current_message(conn, &queue, &id, &pop_receipt, now)? {
                Ok(row_id) => row_id,
                Err(e) => return Ok(Err(e)),
            };
            let next_visible = now.saturating_add(micros(visibility_timeout));
            let receipt: i64 = rand::random();
            conn.prepare_cached(
                "UPDATE messages SET next_visible = ?2, pop_receipt = ?3, \
                 body = COALESCE(?4, body) WHERE id = ?1",
            )?
            .execute(params![row_id, next_visible, receipt, body])?;
            Ok(Ok(UpdatedMessage {
                pop_receipt: receipt_string(receipt),
                next_visible: to_time(next_visible),
            }))
        })
        .await
    }

    async fn delete(&self, queue: &str, id: &str, pop_receipt: &str) -> Result<()> {
        validate_queue_name(queue)?;
        let (queue, id, pop_receipt) = (queue.to_string(), id.to_string(), pop_receipt.to_string());
        self.call(move |conn| {
            let row_id = match current_message(conn, &queue, &id, &pop_receipt, now_micros())? {
                Ok(row_id) => row_id,
                Err(e) => return Ok(Err(e)),
            };
            conn.prepare_cached("DELETE FROM messages WHERE id = ?1")?
                .execute([row_id])?;
            Ok(Ok(()))
        })
        .await
    }

    async fn peek(&self, queue: &str, max: usize) -> Result<Vec<PeekedMessage>> {
        check_batch(max)?;
        self.call_on(queue, move |conn, qid| {
            let peeked = conn
                .prepare_cached(
                    "SELECT id, body, dequeue_count, insertion_time, expiration_time \
                     FROM messages WHERE queue_id = ?1 AND next_visible <= ?2 \
                     AND expiration_time > ?2 ORDER BY next_visible LIMIT ?3",
                )?
                .query_map(params![qid, now_micros(), max as i64], |row| {
                    Ok(PeekedMessage {
                        id: row.get::<_, i64>(0)?.to_string(),
                        body: row.get(1)?,
                        dequeue_count: u32::try_from(row.get::<_, i64>(2)?).unwrap_or(u32::MAX),
                        insertion_time: to_time(row.get(3)?),
                        expiration_time: to_time(row.get(4)?),
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(peeked)
        })
        .await
    }

    async fn approximate_depth(&self, queue: &str) -> Result<u64> {
        self.call_on(queue, move |conn, qid| {
            let depth: i64 = conn
                .prepare_cached(
                    "SELECT count(*) FROM messages WHERE queue_id = ?1 AND expiration_time > ?2",
                )?
                .query_row(params![qid, now_micros()], |row| row.get(0))?;
            Ok(depth as u64)
        })
        .await
    }

    async fn get_metadata(&self, queue: &str) -> Result<HashMap<String, String>> {
        validate_queue_name(queue)?;
        let queue = queue.to_string();
        self.call(move |conn| {
            let json: Option<String> = conn
                .prepare_cached("SELECT metadata FROM queues WHERE name = ?1")?
                .query_row([&queue], |row| row.get(0))
                .optional()?;
            Ok(match json {
                None => Err(queue_not_found(&queue)),
                Some(json) => serde_json::from_str(&json).map_err(|e| {
                    StorageError::Other(format!("metadata of queue {queue}: {e}").into())
                }),
            })
        })
        .await
    }

    async fn set_metadata(&self, queue: &str, metadata: &HashMap<String, String>) -> Result<()> {
        validate_queue_name(queue)?;
        let queue = queue.to_string();
        let json = serde_json::to_string(metadata)
            .map_err(|e| StorageError::Invalid(format!("metadata: {e}")))?;
        self.call(move |conn| {
            let changed = conn
                .prepare_cached("UPDATE queues SET metadata = ?2 WHERE name = ?1")?
                .execute([&queue, &json])?;
            Ok(if changed == 0 {
                Err(queue_not_found(&queue))
            } else {
                Ok(())
            })
        })
        .await
    }

    async fn clear(&self, queue: &str) -> Result<()> {
        self.call_on(queue, move |conn, qid| {
            conn.prepare_cached("DELETE FROM messages WHERE queue_id = ?1")?
                .execute([qid])?;
            Ok(())
        })
        .await
    }
}
