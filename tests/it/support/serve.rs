//! `tessera serve` as it ships, in a process of its own, for the tests that watch its memory,
//! kill it or read its log.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;

use super::{KillOnDrop, fixture, free_port, no_redirect_client};

/// A `tessera serve` process of its own (the emoji fixtures as its default library).
pub(crate) struct Serve {
    pub(crate) process: KillOnDrop,
    pub(crate) base: String,
    log: std::path::PathBuf,
    _dir: Option<tempfile::TempDir>,
}

impl Serve {
    pub(crate) async fn start(env: &[(&str, &str)]) -> Serve {
        let dir = tempfile::tempdir().unwrap();
        let mut serve = Serve::start_in(dir.path(), free_port(), &[], env).await;
        serve._dir = Some(dir);
        serve
    }

    /// `tessera serve` on `port` with its data (and log) in `dir`, the global `args` first.
    pub(crate) async fn start_in(
        dir: &std::path::Path,
        port: u16,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Serve {
        let log = dir.join(format!("serve-{}.log", uuid::Uuid::new_v4()));
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_tessera"));
        command
            .arg("--data")
            .arg(dir.join("data"))
            .args(args)
            .args(["serve", "--processors", "1", "--port", &port.to_string()])
            .arg("--default-library")
            .arg(fixture("engine/tiles"))
            .env_remove("TESSERA_STORAGE")
            .env_remove("TESSERA_CONFIG")
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap());
        for (k, v) in env {
            command.env(k, v);
        }
        let process = KillOnDrop(command.spawn().unwrap());
        let base = format!("http://127.0.0.1:{port}");
        let client = no_redirect_client();
        super::wait_for(Duration::from_secs(60), async || {
            match client.get(format!("{base}/readyz")).send().await {
                Ok(res) if res.status() == StatusCode::OK => Ok(()),
                _ => Err(format!(
                    "serve not ready:\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                )),
            }
        })
        .await;
        Serve {
            process,
            base,
            log,
            _dir: None,
        }
    }

    /// Submits `form` as a job: the status and the body.
    pub(crate) async fn submit(&self, form: reqwest::multipart::Form) -> (u16, Value) {
        let res = no_redirect_client()
            .post(format!("{}/api/v1/jobs", self.base))
            .multipart(form)
            .send()
            .await
            .unwrap();
        let status = res.status().as_u16();
        (status, res.json().await.unwrap_or_default())
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Peak resident memory so far (`VmHWM`), in bytes.
    pub(crate) fn peak(&self) -> u64 {
        peak_rss(self.process.0.id())
    }
}

impl Drop for Serve {
    /// At the test's end, unless it failed already or stopped the process itself: the
    /// process's queues (as `GET /api/v1/queues` reports them) empty once its work in flight
    /// has settled, and nothing on a poison queue.
    fn drop(&mut self) {
        let stopped = !matches!(self.process.0.try_wait(), Ok(None));
        if std::thread::panicking() || stopped {
            return;
        }
        let url = format!("{}/api/v1/queues", self.base);
        let left = super::block_on_aside(move || async move {
            super::try_wait_for(Duration::from_secs(30), async || {
                let list: Value = reqwest::get(&url)
                    .await
                    .map_err(|e| e.to_string())?
                    .json()
                    .await
                    .map_err(|e| e.to_string())?;
                let queues = list["queues"].as_array().cloned().unwrap_or_default();
                // A depth that does not read as a number counts as left.
                let depth = |v: &Value| v.as_u64().unwrap_or(u64::MAX);
                super::nothing_left(queues.iter().flat_map(|queue| {
                    [
                        (queue["name"].to_string(), depth(&queue["depth"])),
                        (queue["poison"].to_string(), depth(&queue["poison_depth"])),
                    ]
                }))
            })
            .await
        });
        if let Err(left) = left {
            panic!("the test left messages on its queues: {left}");
        }
    }
}

/// Peak resident memory of process `pid` (`VmHWM`), in bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kb * 1024
}

/// Imports the engine fixtures' tiles as library `tiles` ("Tiles") with `tessera`, a command
/// set up for its storage, which must succeed.
pub(crate) fn import_fixture_tiles(mut tessera: std::process::Command) {
    let tiles = super::fixture("engine/tiles");
    crate::support::succeeds(
        tessera
            .args(["library", "import"])
            .arg(tiles)
            .args(["--name", "Tiles"]),
    );
}

/// Submits `form` as a job to the web role at `base`, which must queue it (202); the job's id.
pub(crate) async fn queued_at(
    client: &reqwest::Client,
    base: &str,
    form: reqwest::multipart::Form,
) -> String {
    let submitted = client
        .post(format!("{base}/api/v1/jobs"))
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(submitted.status(), 202, "{:?}", submitted.text().await);
    let view: Value = submitted.json().await.unwrap();
    view["id"].as_str().expect("a job id").to_string()
}

/// Polls a job until it ends; its final view.
pub(crate) async fn ended(serve: &Serve, id: &str) -> Value {
    let url = format!("{}/api/v1/jobs/{id}", serve.base);
    super::job_ended_at(&no_redirect_client(), &url, &[]).await
}

/// Reads one HTTP/1.1 request from `socket`: the head, then as many body bytes as its
/// `Content-Length` says (or until the peer stops sending).
pub(crate) async fn read_http_request(socket: &mut tokio::net::TcpStream) -> String {
    use tokio::io::AsyncReadExt;
    let mut request = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = socket.read(&mut chunk).await.unwrap_or(0);
        request.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&request);
        if let Some(end) = text.find("\r\n\r\n") {
            let length: usize = text
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse().unwrap())
                })
                .unwrap_or(0);
            if request.len() >= end + 4 + length {
                break;
            }
        }
        if n == 0 {
            break;
        }
    }
    String::from_utf8_lossy(&request).to_string()
}
