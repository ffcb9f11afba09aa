//! Every role can be probed and scraped: `tessera web`, `tessera controller` and `tessera
//! processor` run as their own processes over one embedded data directory; each answers
//! `/healthz`, `/readyz` and `/metrics`, and the metrics, read by Prometheus' own text parser
//! (Python `prometheus_client`), move with the work of a job.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::support::{job_ended_at, wait_for};

use serde_json::Value;

/// One sample: its name (with `_total`, `_count`, ... suffixes), labels and value.
#[derive(Debug, Clone)]
struct Sample {
    name: String,
    labels: HashMap<String, String>,
    value: f64,
}

/// A scrape, parsed.
#[derive(Debug)]
struct Scrape(Vec<Sample>);

impl Scrape {
    /// The sum of the samples named `name` whose labels include `labels`.
    fn sum(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        self.0
            .iter()
            .filter(|s| s.name == name)
            .filter(|s| {
                labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|s| s.value)
            .sum()
    }

    fn has(&self, name: &str, labels: &[(&str, &str)]) -> bool {
        self.0.iter().any(|s| {
            s.name == name
                && labels
                    .iter()
                    .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
        })
    }
}

/// Parses Prometheus text with `prometheus_client`'s parser (it rejects malformed exposition).
fn parse(text: &str) -> Scrape {
    const PARSER: &str = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
out = []
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        out.append({"name": s.name, "labels": s.labels, "value": s.value, "type": family.type})
print(json.dumps(out))
"#;
    let mut child = Command::new(crate::support::python())
        .args(["-c", PARSER])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start Python");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "prometheus_client refused the exposition: {}\n{text}",
        String::from_utf8_lossy(&out.stderr)
    );
    let samples: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    Scrape(
        samples
            .into_iter()
            .map(|s| Sample {
                name: s["name"].as_str().unwrap().to_string(),
                labels: serde_json::from_value(s["labels"].clone()).unwrap(),
                value: s["value"].as_f64().unwrap(),
            })
            .collect(),
    )
}

/// A role process, killed when dropped; its stderr is kept in a file for the failure message.
struct Role {
    child: Child,
    log: PathBuf,
}

impl Role {
    fn spawn(data: &Path, role: &str, args: &[&str], env: &[(&str, &str)]) -> Role {
        let log = data.with_file_name(format!(
            "{}-{role}-{}.log",
            data.file_name().unwrap().to_string_lossy(),
            uuid::Uuid::new_v4().simple()
        ));
        let mut command = Command::new(env!("CARGO_BIN_EXE_tessera"));
        command
            .arg("--data")
            .arg(data)
            .arg(role)
            .args(args)
            .env("TESSERA_LOG", "info")
            .env_remove("TESSERA_STORAGE")
            .env("TESSERA_CONTROLLER__MAX_BACKOFF_MS", "500")
            .env("TESSERA_PROCESSOR__MAX_BACKOFF_MS", "500")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap());
        for (k, v) in env {
            command.env(k, v);
        }
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start `tessera {role}`: {e}"));
        Role { child, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The ops endpoint's port, read from the line the role logs when it binds.
    async fn logged_ops_port(&self) -> u16 {
        wait_for(Duration::from_secs(60), async || {
            let file = std::fs::File::open(&self.log).unwrap();
            for line in BufReader::new(file).lines() {
                let line = line.unwrap();
                if let Some((_, rest)) = line.split_once("listening on http://127.0.0.1:") {
                    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    return Ok(digits.parse().unwrap());
                }
            }
            Err(format!(
                "the ops endpoint's port not logged:\n{}",
                self.log()
            ))
        })
        .await
    }
}

impl Drop for Role {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

async fn wait_ready(client: &reqwest::Client, base: &str, role: &Role) {
    wait_for(Duration::from_secs(60), async || {
        match client.get(format!("{base}/readyz")).send().await {
            Ok(r) if r.status() == 200 => Ok(()),
            _ => Err(format!("{base} not ready:\n{}", role.log())),
        }
    })
    .await
}

async fn scrape(client: &reqwest::Client, base: &str) -> Scrape {
    let r = client.get(format!("{base}/metrics")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let content_type = r.headers()["content-type"].to_str().unwrap().to_string();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    parse(&r.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_role_is_probed_and_scraped_and_its_metrics_move_with_work() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/engine");
    let mut tessera = Command::new(env!("CARGO_BIN_EXE_tessera"));
    tessera
        .arg("--data")
        .arg(&data)
        .env("TESSERA_LOG", "warn")
        .env_remove("TESSERA_STORAGE");
    crate::support::import_fixture_tiles(tessera);

    let web_port = crate::support::free_port();
    let processor_port = crate::support::free_port();
    let web = Role::spawn(&data, "web", &["--port", &web_port.to_string()], &[]);
    // Port 0: the controller picks a free port and says which.
    let controller = Role::spawn(&data, "controller", &[], &[("TESSERA_OPS__PORT", "0")]);
    let processor = Role::spawn(
        &data,
        "processor",
        &[
            "--ops-port",
            &processor_port.to_string(),
            "--processors",
            "2",
        ],
        // Every probe checks storage, so the failure below shows at once.
        &[("TESSERA_OPS__READINESS_INTERVAL_SECS", "0")],
    );
    let controller_port = controller.logged_ops_port().await;

    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let web_base = format!("http://127.0.0.1:{web_port}");
    let controller_base = format!("http://127.0.0.1:{controller_port}");
    let processor_base = format!("http://127.0.0.1:{processor_port}");
    let roles = [
        (&web_base, &web),
        (&controller_base, &controller),
        (&processor_base, &processor),
    ];
    for (base, role) in roles {
        wait_ready(&client, base, role).await;
        let health = client.get(format!("{base}/healthz")).send().await.unwrap();
        assert_eq!(health.status(), 200);
    }

    let before: Vec<Scrape> =
        scrape_all(&client, [&web_base, &controller_base, &processor_base]).await;

    // One job through the REST API, to the end.
    let slices = 4;
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
        .text("tile_size", "8")
        .text("cells", "32")
        .text("slices", slices.to_string());
    let id = crate::support::queued_at(&client, &web_base, form).await;
    let view = job_ended_at(&client, &format!("{web_base}/api/v1/jobs/{id}"), &[]).await;
    assert_eq!(
        view["state"],
        "done",
        "the job did not finish: {view}\n--- controller\n{}\n--- processor\n{}",
        controller.log(),
        processor.log()
    );

    // The record is done before the controller sends ImageResponse: the front end's count of
    // it moves a moment later.
    let answered = [("queue", "imageresponse"), ("outcome", "ok")];
    let handled_by_web = "tessera_messages_handled_total";
    let after: Vec<Scrape> = wait_for(Duration::from_secs(60), async || {
        let after = scrape_all(&client, [&web_base, &controller_base, &processor_base]).await;
        let seen =
            after[0].sum(handled_by_web, &answered) - before[0].sum(handled_by_web, &answered);
        if seen >= 1.0 {
            Ok(after)
        } else {
            Err("the front end's count of imageresponse has not moved".into())
        }
    })
    .await;
    let moved = |i: usize, name: &str, labels: &[(&str, &str)]| {
        after[i].sum(name, labels) - before[i].sum(name, labels)
    };
    let handled = "tessera_messages_handled_total";

    // The job ended once, in whichever role recorded its end.
    let finished: f64 = (0..3)
        .map(|i| moved(i, "tessera_jobs_finished_total", &[("state", "done")]))
        .sum();
    assert_eq!(finished, 1.0);

    // The front end: its imageresponse, storage transactions and every queue's depth.
    assert_eq!(
        moved(0, handled, &[("queue", "imageresponse"), ("outcome", "ok")]),
        1.0
    );
    assert!(
        moved(
            0,
            "tessera_storage_transactions_total",
            &[("role", "web"), ("op", "put")]
        ) >= 1.0
    );
    for queue in [
        "imagerequest",
        "slicerequest",
        "sliceresponse",
        "imageresponse",
    ] {
        for name in [queue.to_string(), format!("{queue}-poison")] {
            assert!(
                after[0].has("tessera_queue_depth_messages", &[("queue", &name)]),
                "no depth for {name}"
            );
        }
    }

    // The controller: one image request, one response per slice, and their handler times.
    assert_eq!(
        moved(1, handled, &[("queue", "imagerequest"), ("outcome", "ok")]),
        1.0
    );
    assert_eq!(
        moved(1, handled, &[("queue", "sliceresponse"), ("outcome", "ok")]),
        f64::from(slices)
    );
    assert_eq!(
        moved(
            1,
            "tessera_handler_duration_seconds_count",
            &[("queue", "imagerequest")]
        ),
        1.0
    );
    assert!(
        moved(
            1,
            "tessera_storage_transactions_total",
            &[("role", "controller")]
        ) > 0.0
    );
    // Depths are read (and billed) by the front end only.
    assert!(!after[1].has("tessera_queue_depth_messages", &[]));

    // The processor: every slice rendered here, timed, and its receives counted.
    assert_eq!(
        moved(2, handled, &[("queue", "slicerequest"), ("outcome", "ok")]),
        f64::from(slices)
    );
    assert_eq!(
        moved(2, "tessera_slice_render_seconds_count", &[]),
        f64::from(slices)
    );
    assert!(moved(2, "tessera_slice_render_seconds_sum", &[]) > 0.0);
    assert!(moved(2, "tessera_receives_total", &[("queue", "slicerequest")]) >= 1.0);
    assert!(after[2].has("tessera_idle_receives_total", &[("queue", "slicerequest")]));
    assert_eq!(
        after[2].sum("tessera_handlers_in_flight", &[("queue", "slicerequest")]),
        0.0
    );
    assert!(
        moved(
            2,
            "tessera_storage_transactions_total",
            &[("role", "processor"), ("op", "blob_write")]
        ) >= f64::from(slices)
    );

    // Readiness means storage takes writes: a processor whose blob writes fail is not ready.
    let tmp = data.join("blobs/.tmp");
    assert!(
        tmp.is_dir(),
        "the embedded blob store keeps its temporary files in {}",
        tmp.display()
    );
    std::fs::remove_dir_all(&tmp).unwrap();
    std::fs::write(&tmp, b"not a directory").unwrap();
    let unready = client
        .get(format!("{processor_base}/readyz"))
        .send()
        .await
        .unwrap();
    let status = unready.status();
    std::fs::remove_file(&tmp).unwrap();
    std::fs::create_dir(&tmp).unwrap();
    assert_eq!(status, 503, "ready while blob writes fail");
    assert_eq!(unready.headers()["retry-after"], "5");
    wait_ready(&client, &processor_base, &processor).await;
}

/// Scrapes every base in turn.
async fn scrape_all<const N: usize>(client: &reqwest::Client, bases: [&String; N]) -> Vec<Scrape> {
    let mut out = Vec::new();
    for base in bases {
        out.push(scrape(client, base).await);
    }
    out
}

/// Logs written to a pipe or a file are plain text (no colour codes); `--log-format json`
/// writes one JSON object per line with the level, the message and the fields.
#[test]
fn logs_are_plain_text_off_a_terminal_and_json_on_request() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/engine");
    let import = |name: &str, format: Option<&str>| {
        let dir = tempfile::tempdir().unwrap();
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_tessera"));
        command
            .arg("--data")
            .arg(dir.path().join("data"))
            .args(["library", "import"])
            .arg(fixtures.join("tiles"))
            .args(["--name", name])
            .env("TESSERA_LOG", "info")
            .env_remove("TESSERA_STORAGE")
            .env_remove("NO_COLOR")
            .env_remove("TESSERA_LOG_FORMAT");
        if let Some(format) = format {
            command.args(["--log-format", format]);
        }
        let out = command.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stderr).unwrap()
    };
    let text = import("Plain", None);
    assert!(text.contains("tile library imported"), "{text}");
    assert!(
        !text.contains('\u{1b}'),
        "colour codes in a piped log: {text:?}"
    );

    let json = import("Json", Some("json"));
    // The command's own report follows the log lines on stderr.
    let lines: Vec<serde_json::Value> = json
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}")))
        .collect();
    let imported = lines
        .iter()
        .find(|l| l["fields"]["message"] == "tile library imported")
        .unwrap_or_else(|| panic!("no import line: {json}"));
    assert_eq!(imported["level"], "INFO");
    assert_eq!(imported["fields"]["library"], "json");
    assert_eq!(imported["fields"]["tiles"], 41);
}
