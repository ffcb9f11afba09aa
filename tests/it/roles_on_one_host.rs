//! Roles share a machine with their defaults: a web front end, two job controllers and three
//! image processors run as separate processes over one data directory, none of them told a
//! port. Each takes its default port or, when that is taken, a free one; each registers where
//! its health and metrics answer; every job comes out as `tessera render` makes it; and every
//! process is still up at the end.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

const DEADLINE: Duration = Duration::from_secs(120);

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/engine")
}

/// `tessera` with the embedded backend on `data` and no port or storage from the environment.
fn tessera(data: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_tessera"));
    command.arg("--data").arg(data).env("TESSERA_LOG", "info");
    for key in [
        "TESSERA_STORAGE",
        "TESSERA_CONFIG",
        "TESSERA_WEB__PORT",
        "TESSERA_OPS__PORT",
    ] {
        command.env_remove(key);
    }
    command
}

/// A role in its own process, killed when dropped; its log is kept for failure messages.
struct RoleProcess {
    name: String,
    child: Child,
    log: PathBuf,
}

impl RoleProcess {
    fn spawn(data: &Path, role: &str, n: usize) -> Self {
        let log = data.with_file_name(format!("{role}-{n}.log"));
        let child = tessera(data)
            .arg(role)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start `tessera {role}`: {e}"));
        RoleProcess {
            name: format!("{role} {n}"),
            child,
            log,
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn assert_running(&mut self) {
        if let Some(status) = self.child.try_wait().unwrap() {
            panic!("{} exited ({status}):\n{}", self.name, self.log());
        }
    }
}

impl Drop for RoleProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What `tessera queues roles --json` lists.
fn registered_roles(data: &Path) -> Vec<Value> {
    let out = crate::support::succeeds(
        tessera(data)
            .env("TESSERA_LOG", "warn")
            .args(["queues", "roles", "--json"]),
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

async fn get_json(client: &reqwest::Client, url: String) -> Value {
    client.get(url).send().await.unwrap().json().await.unwrap()
}

fn rgb(png: &[u8]) -> (u32, u32, Vec<u8>) {
    let image = image::load_from_memory(png).unwrap().to_rgb8();
    (image.width(), image.height(), image.into_raw())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_two_controllers_and_three_processors_share_a_machine_with_default_settings() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    crate::support::import_fixture_tiles(tessera(&data));

    let mut roles = vec![RoleProcess::spawn(&data, "web", 0)];
    for n in 0..2 {
        roles.push(RoleProcess::spawn(&data, "controller", n));
    }
    for n in 0..3 {
        roles.push(RoleProcess::spawn(&data, "processor", n));
    }

    // Every process registers itself; the web front end is found that way too.
    let registered = crate::support::wait_for(Duration::from_secs(60), async || {
        for role in &mut roles {
            role.assert_running();
        }
        let registered = registered_roles(&data);
        if registered.len() >= 6 {
            Ok(registered)
        } else {
            Err(format!(
                "only {} of 6 processes registered: {registered:#?}",
                registered.len()
            ))
        }
    })
    .await;
    let count = |role: &str| registered.iter().filter(|r| r["role"] == role).count();
    assert_eq!(
        (count("web"), count("controller"), count("processor")),
        (1, 2, 3),
        "{registered:#?}"
    );
    let mut urls: Vec<&str> = registered
        .iter()
        .map(|r| r["ops_url"].as_str().unwrap())
        .collect();
    urls.sort_unstable();
    urls.dedup();
    assert_eq!(urls.len(), 6, "each process on a port of its own: {urls:?}");

    // Of the five back-end roles at most one holds the default ops port; the others said so.
    let gave_way = roles[1..]
        .iter()
        .filter(|r| r.log().contains("the default port 9090 is taken"))
        .count();
    assert!(gave_way >= 4, "{gave_way} of 5 logged a taken default port");

    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    for url in &urls {
        let health = client.get(format!("{url}/healthz")).send().await.unwrap();
        assert_eq!(health.status(), 200, "{url}");
        let metrics = client.get(format!("{url}/metrics")).send().await.unwrap();
        assert_eq!(metrics.status(), 200, "{url}");
    }
    let web = registered.iter().find(|r| r["role"] == "web").unwrap()["ops_url"]
        .as_str()
        .unwrap()
        .to_string();
    let system: Value = get_json(&client, format!("{web}/api/v1/system")).await;
    assert_eq!(system["roles"].as_array().unwrap().len(), 6, "{system:#}");

    let libraries: Value = get_json(&client, format!("{web}/api/v1/libraries")).await;
    let library = libraries["libraries"][0]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no library: {libraries}"))
        .to_string();

    // Three jobs at once, of different sizes and slice counts.
    let target = fixtures().join("astronaut-48.png");
    let jobs = [(24u32, 8u32, 3u32), (32, 16, 5), (40, 8, 7)];
    let mut ids = Vec::new();
    for (cells, tile, slices) in jobs {
        let form = reqwest::multipart::Form::new()
            .part(
                "image",
                reqwest::multipart::Part::bytes(std::fs::read(&target).unwrap())
                    .file_name("astronaut.png")
                    .mime_str("image/png")
                    .unwrap(),
            )
            .text("library", library.clone())
            .text("cells", cells.to_string())
            .text("tile_size", tile.to_string())
            .text("slices", slices.to_string())
            .text("repeat_radius", "1")
            .text("blend", "0");
        ids.push(crate::support::queued_at(&client, &web, form).await);
    }

    for ((cells, tile, _), id) in jobs.iter().zip(&ids) {
        crate::support::wait_for(DEADLINE, async || {
            let view: Value = get_json(&client, format!("{web}/api/v1/jobs/{id}")).await;
            match view["state"].as_str() {
                Some("done") => return Ok(()),
                Some("failed") => panic!("job {id} failed: {view:#}"),
                _ => {}
            }
            for role in &mut roles {
                role.assert_running();
            }
            Err(format!("job {id} not done: {view:#}"))
        })
        .await;
        let result = client
            .get(format!("{web}/api/v1/jobs/{id}/result"))
            .send()
            .await
            .unwrap();
        assert_eq!(result.status(), 200);
        let served = rgb(&result.bytes().await.unwrap());

        let out = dir.path().join(format!("render-{id}.png"));
        crate::support::succeeds(
            tessera(&data)
                .env("TESSERA_LOG", "warn")
                .arg("render")
                .arg(&target)
                .arg("-l")
                .arg(fixtures().join("tiles"))
                .arg("-o")
                .arg(&out)
                .args(["--cells", &cells.to_string()])
                .args(["--tile-size", &tile.to_string()])
                .args(["--repeat-radius", "1", "--blend", "0"]),
        );
        let rendered = rgb(&std::fs::read(&out).unwrap());
        assert_eq!((served.0, served.1), (rendered.0, rendered.1), "job {id}");
        assert!(
            served.2 == rendered.2,
            "job {id} differs from tessera render"
        );
    }

    for role in &mut roles {
        role.assert_running();
    }
}

/// A port given explicitly is kept: taken, the role stops at once and says why (flag and
/// environment alike).
#[test]
fn an_explicit_port_that_is_taken_stops_the_role_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port().to_string();
    for (args, env) in [
        (vec!["processor", "--ops-port", port.as_str()], None),
        (
            vec!["controller"],
            Some(("TESSERA_OPS__PORT", port.as_str())),
        ),
        (vec!["web", "--port", port.as_str()], None),
    ] {
        let mut command = tessera(&data);
        command.args(&args).stdin(Stdio::null());
        if let Some((k, v)) = env {
            command.env(k, v);
        }
        let out = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} started on a taken port");
        assert!(
            stderr.contains(&format!("127.0.0.1:{port}")) && stderr.contains("set explicitly"),
            "{args:?}: {stderr}"
        );
    }
}
