//! Storage transactions counted as the service bills them. `tessera serve` runs on an Azurite of
//! its own whose debug log records every request; the process's counters (`/metrics`) must
//! equal that log for a job and for idle listeners, and the job's record must carry what the job
//! caused.
//!
//! `TESSERA_COSTS_IDLE_SECS` lengthens the idle window and `TESSERA_COSTS_SETTLE_SECS` waits
//! before it (`scripts/bench-idle.sh` runs twenty minutes after a settling pause); the figures
//! are printed either way.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{KillOnDrop, free_port};

/// The marker of one request in Azurite's debug log (one line per request, either service).
const REQUEST_LINE: &str = "StorageContextMiddleware: RequestMethod=";
/// Queues `tessera serve` listens on.
const SERVE_LISTENERS: u64 = 4;

/// An Azurite on free ports, in memory, with a debug log; stopped when dropped.
struct LoggedAzurite {
    _process: KillOnDrop,
    log: PathBuf,
    blob_port: u16,
    queue_port: u16,
}

impl LoggedAzurite {
    fn start(dir: &Path) -> Self {
        let bin =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/azurite/node_modules/.bin/azurite");
        assert!(
            bin.exists(),
            "no Azurite at {}: run scripts/azurite.sh install",
            bin.display()
        );
        let (blob_port, queue_port, table_port) = (free_port(), free_port(), free_port());
        let log = dir.join("azurite-debug.log");
        let process = Command::new(bin)
            .args([
                "--silent",
                "--inMemoryPersistence",
                "--disableTelemetry",
                "--skipApiVersionCheck",
                "--blobHost",
                "127.0.0.1",
                "--queueHost",
                "127.0.0.1",
                "--tableHost",
                "127.0.0.1",
            ])
            .args(["--blobPort", &blob_port.to_string()])
            .args(["--queuePort", &queue_port.to_string()])
            .args(["--tablePort", &table_port.to_string()])
            .arg("--debug")
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start Azurite");
        let azurite = LoggedAzurite {
            _process: KillOnDrop(process),
            log,
            blob_port,
            queue_port,
        };
        crate::support::wait_for_blocking(Duration::from_secs(60), || {
            let listening = [blob_port, queue_port]
                .iter()
                .all(|p| std::net::TcpStream::connect(("127.0.0.1", *p)).is_ok());
            listening
                .then_some(())
                .ok_or("Azurite did not start".to_string())
        });
        azurite
    }

    fn connection_string(&self) -> String {
        format!(
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={};\
             BlobEndpoint=http://127.0.0.1:{}/devstoreaccount1;\
             QueueEndpoint=http://127.0.0.1:{}/devstoreaccount1;",
            tessera_azure::connection::DEV_ACCOUNT_KEY,
            self.blob_port,
            self.queue_port
        )
    }

    /// Every request the log holds, as `METHOD path?query`.
    fn requests(&self) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|line| {
                let rest = &line[line.find(REQUEST_LINE)? + REQUEST_LINE.len()..];
                let (method, rest) = rest.split_once(" RequestURL=")?;
                let url = rest.split_once(' ').map_or(rest, |(u, _)| u);
                Some(format!("{method} {url}"))
            })
            .collect()
    }
}

/// `tessera` on `azurite`, with no storage or port from the environment.
fn tessera(azurite: &LoggedAzurite) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tessera"));
    for key in ["TESSERA_CONFIG", "TESSERA_DATA", "TESSERA_OPS__PORT"] {
        command.env_remove(key);
    }
    command
        .env("TESSERA_STORAGE", "azure")
        .env(
            "TESSERA_AZURE_CONNECTION_STRING",
            azurite.connection_string(),
        )
        .env("TESSERA_LOG", "warn");
    command
}

/// The process's storage transactions, all kinds together, from its `/metrics`.
async fn counted(client: &reqwest::Client, base: &str) -> u64 {
    let text = client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .filter(|l| l.starts_with("tessera_storage_transactions_total{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// The counters and the log (requests since `from`) at a quiet moment when they agree, or at the
/// last quiet moment of 20 s, which the caller's assertion then shows. Azurite logs a request as
/// it arrives and the process counts it when the answer comes, so a request in flight is in the
/// log first; on a busy machine an answer can take longer than one quiet window.
async fn counted_and_logged(
    client: &reqwest::Client,
    base: &str,
    azurite: &LoggedAzurite,
    from: usize,
) -> (u64, Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut last_quiet = None;
    while Instant::now() < deadline {
        let before = azurite.requests().len();
        let total = counted(client, base).await;
        // A short wait lets the line of a request in flight land.
        tokio::time::sleep(Duration::from_millis(300)).await;
        let logged = azurite.requests();
        if logged.len() == before && counted(client, base).await == total {
            if total == (logged.len() - from) as u64 {
                return (total, logged);
            }
            last_quiet = Some((total, logged));
        }
    }
    last_quiet.expect("storage never went quiet long enough to compare")
}

/// The log's length once no line has been added for half a second (nothing else is talking to
/// Azurite), within 10 s.
async fn settled_length(azurite: &LoggedAzurite) -> usize {
    let mut poll = crate::support::Poll::new(Duration::from_secs(10));
    let (mut length, mut changed) = (azurite.requests().len(), Instant::now());
    while changed.elapsed() < Duration::from_millis(500) && !poll.over() {
        poll.pause().await;
        let now = azurite.requests().len();
        if now != length {
            (length, changed) = (now, Instant::now());
        }
    }
    length
}

fn is_receive(request: &str) -> bool {
    request.starts_with("GET ") && request.contains("/messages?") && !request.contains("peekonly")
}

fn env_secs(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_counted_equal_azurites_log_for_a_job_and_when_idle() {
    let dir = tempfile::tempdir().unwrap();
    let azurite = LoggedAzurite::start(dir.path());
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/engine");
    crate::support::import_fixture_tiles(tessera(&azurite));
    // What the import made is not the service's: count from here, once its last lines have
    // reached the log (Azurite writes them after it answers).
    let before_serve = settled_length(&azurite).await;

    let port = free_port();
    let log = dir.path().join("serve.log");
    let _serve = KillOnDrop(
        tessera(&azurite)
            .arg("serve")
            .env("TESSERA_WEB__PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap(),
    );
    let base = format!("http://127.0.0.1:{port}");
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    crate::support::wait_for(Duration::from_secs(60), async || {
        match client.get(format!("{base}/readyz")).send().await {
            Ok(r) if r.status().is_success() => Ok(()),
            _ => Err(format!(
                "serve not ready:\n{}",
                std::fs::read_to_string(&log).unwrap_or_default()
            )),
        }
    })
    .await;

    // A job, from upload to result.
    let (_, at_submit) = counted_and_logged(&client, &base, &azurite, before_serve).await;
    let form = reqwest::multipart::Form::new()
        .part(
            "image",
            reqwest::multipart::Part::bytes(
                std::fs::read(fixtures.join("astronaut-48.png")).unwrap(),
            )
            .file_name("astronaut.png")
            .mime_str("image/png")
            .unwrap(),
        )
        .text("library", "tiles")
        .text("cells", "24")
        .text("tile_size", "8")
        .text("slices", "3");
    let id = crate::support::queued_at(&client, &base, form).await;
    let record =
        crate::support::job_ended_at(&client, &format!("{base}/api/v1/jobs/{id}"), &[]).await;
    assert_eq!(record["state"], "done", "{record:#}");
    let (after_job, logged) = counted_and_logged(&client, &base, &azurite, before_serve).await;
    assert_eq!(
        after_job,
        (logged.len() - before_serve) as u64,
        "serve's counters against Azurite's log, start-up and a job"
    );

    // The record carries what the job caused: all but the receives (batched, a listener's
    // cost), what comes after its last write and the status reads of this test.
    let in_job: Vec<&String> = logged[at_submit.len()..].iter().collect();
    let caused = in_job.iter().filter(|r| !is_receive(r)).count() as u64;
    let status_reads = in_job
        .iter()
        .filter(|r| r.contains(&format!("jobs/{id}.json")))
        .count() as u64;
    let recorded: u64 = record["transactions"]
        .as_object()
        .expect("transactions by role")
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    println!(
        "job: {} requests while it ran, {caused} not receives; its record says {recorded} {}",
        in_job.len(),
        record["transactions"]
    );
    assert!(
        recorded <= caused && recorded * 100 >= (caused - status_reads.min(caused)) * 75,
        "the record ({recorded}) against the job's requests ({caused}, {status_reads} of them \
         reads of its record)"
    );
    for role in ["web", "controller", "processor"] {
        assert!(
            record["transactions"][role].as_u64().unwrap_or(0) > 0,
            "{role}: {record:#}"
        );
    }

    // Idle listeners: the counters keep equal to the log.
    tokio::time::sleep(Duration::from_secs(env_secs(
        "TESSERA_COSTS_SETTLE_SECS",
        0,
    )))
    .await;
    let idle_secs = env_secs("TESSERA_COSTS_IDLE_SECS", 45);
    let (idle_from, idle_logged_from) =
        counted_and_logged(&client, &base, &azurite, before_serve).await;
    tokio::time::sleep(Duration::from_secs(idle_secs)).await;
    let (idle_to, idle_logged) = counted_and_logged(&client, &base, &azurite, before_serve).await;
    let idle = idle_to - idle_from;
    assert_eq!(
        idle,
        (idle_logged.len() - idle_logged_from.len()) as u64,
        "counters against the log over {idle_secs} s idle"
    );
    assert_eq!(idle_to, (idle_logged.len() - before_serve) as u64);
    let per_listener_hour = idle as f64 * 3600.0 / idle_secs as f64 / SERVE_LISTENERS as f64;
    println!(
        "idle: {idle} transactions in {idle_secs} s, {per_listener_hour:.1} per listener-hour \
         ({SERVE_LISTENERS} listeners); by request: {:?}",
        summary(&idle_logged[idle_logged_from.len()..])
    );
    // Over a window long enough to hold the registrations' rewrites, the goal holds.
    if idle_secs >= 20 * 60 {
        assert!(
            per_listener_hour <= 60.0,
            "{per_listener_hour:.1} per listener-hour"
        );
    }
}

/// Requests counted by method and path, ids and signatures left out.
fn summary(requests: &[String]) -> std::collections::BTreeMap<String, usize> {
    let mut counts = std::collections::BTreeMap::new();
    for r in requests {
        let (method, url) = r.split_once(' ').unwrap_or((r, ""));
        let path = url.split('?').next().unwrap_or(url);
        let path: Vec<&str> = path.split('/').skip(4).take(2).collect();
        *counts
            .entry(format!("{method} {}", path.join("/")))
            .or_default() += 1;
    }
    counts
}
