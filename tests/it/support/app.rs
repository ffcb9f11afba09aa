//! The app under test: the web role bound on a free port over the embedded backend in a
//! temporary directory, with (or without) a controller and a processor in the same process, and
//! an HTTP client for it.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::multipart::{Form, Part};
use serde_json::Value;
use tessera_shared::platform::Platform;
use tessera_shared::runtime::Nudges;
use tessera_shared::runtime::shutdown::{self, ShutdownTrigger};
use tessera_shared::storage::embedded::EmbeddedStorage;
use tessera_web::{Application, WebSettings};
use tessera_workers::{ControllerSettings, ProcessorSettings};

use super::files::fixture;

pub(crate) struct TestApp {
    pub(crate) address: String,
    /// The client id library uploads name (`post_library`): the test's own person.
    pub(crate) owner: String,
    pub(crate) client: reqwest::Client,
    pub(crate) platform: Platform,
    pub(crate) streams: tessera_web::StreamHub,
    stop_workers: ShutdownTrigger,
    server: tessera_web::ServerHandle,
    /// Whether a controller and a processor run beside the web role.
    workers: bool,
    /// What the test leaves on the queues on purpose ([`TestApp::leaves`]).
    leaves: Leftovers,
    _dir: Option<tempfile::TempDir>,
    _azurite: Option<tokio::sync::MutexGuard<'static, ()>>,
}

/// What a test may leave on the queues when it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Leftovers {
    /// Nothing: every pipeline queue empty, nothing on a poison queue.
    #[default]
    Nothing,
    /// Messages on the poison queues (a test of poison), the pipeline queues still empty.
    Poison,
    /// Anything: the test stops work midway (a job left queued with no one to take it).
    Anything,
}

impl TestApp {
    /// Says what the test leaves on the queues on purpose, for the check at its end.
    pub(crate) fn leaves(&mut self, leftovers: Leftovers) {
        self.leaves = leftovers;
    }
}

impl Drop for TestApp {
    /// At the test's end, unless it failed already: its queues are empty (with workers
    /// running, once the work in flight has settled) and nothing went to a poison queue, unless
    /// the test said so ([`TestApp::leaves`]).
    fn drop(&mut self) {
        let runtime = tokio::runtime::Handle::try_current().ok();
        let check = !std::thread::panicking() && self.leaves != Leftovers::Anything;
        // A test on one thread holds the workers still while it waits: only what is there now.
        let settle = self.workers
            && runtime.as_ref().is_some_and(|rt| {
                rt.runtime_flavor() != tokio::runtime::RuntimeFlavor::CurrentThread
            });
        let verdict = check.then(|| {
            let platform = self.platform.clone();
            let (poison_allowed, pipeline) = (self.leaves == Leftovers::Poison, self.workers);
            super::block_on_aside(move || async move {
                queues_left(&platform, pipeline, settle, poison_allowed).await
            })
        });
        self.stop_workers.fire();
        if let Some(rt) = runtime {
            rt.spawn(self.server.stop(false));
        }
        if let Some(Err(left)) = verdict {
            panic!("the test left messages on its queues: {left}");
        }
    }
}

/// Checks the app's queues at a test's end: with `pipeline`, every pipeline queue empty
/// (waiting up to 30 s for the work in flight when `settle`); every poison queue empty unless
/// `poison_allowed`.
async fn queues_left(
    platform: &Platform,
    pipeline: bool,
    settle: bool,
    poison_allowed: bool,
) -> Result<(), String> {
    use tessera_shared::messages::QueueName;
    let mut names = Vec::new();
    for name in QueueName::ALL {
        if pipeline {
            names.push(name.as_str().to_string());
        }
        if !poison_allowed {
            names.push(name.poison());
        }
    }
    let limit = Duration::from_secs(if settle { 30 } else { 0 });
    super::queues_emptied(&*platform.queues, &names, limit).await
}

/// The app with the back-end roles running beside it.
pub(crate) async fn spawn_app() -> TestApp {
    spawn_app_with(test_settings(), true).await
}

pub(crate) fn test_settings() -> WebSettings {
    WebSettings {
        port: 0,
        workers: 1,
        events_poll_ms: 100,
        ..WebSettings::default()
    }
}

/// The app with `settings`; with `workers`, a controller and one processor run in-process.
pub(crate) async fn spawn_app_with(settings: WebSettings, workers: bool) -> TestApp {
    let dir = tempfile::tempdir().unwrap();
    let storage = EmbeddedStorage::open(dir.path()).unwrap();
    spawn_app_on(dir, storage, settings, workers).await
}

/// [`spawn_app_with`] over `storage`, kept in `dir`.
pub(crate) async fn spawn_app_on(
    dir: tempfile::TempDir,
    storage: EmbeddedStorage,
    settings: WebSettings,
    workers: bool,
) -> TestApp {
    let platform = Platform::new(storage.queues(), storage.blobs(), Nudges::local());
    let mut app = spawn_app_over(platform, settings, workers).await;
    app._dir = Some(dir);
    app
}

/// The app with the back-end roles over Azurite (`TESSERA_AZURE_CONNECTION_STRING`), its
/// pipeline queues emptied first; it holds [`super::azurite_lock`] while it lives.
pub(crate) async fn spawn_app_on_azurite() -> TestApp {
    spawn_app_on_azurite_with(test_settings()).await
}

/// [`spawn_app_on_azurite`] with these web settings.
pub(crate) async fn spawn_app_on_azurite_with(settings: WebSettings) -> TestApp {
    let lock = super::azurite_lock().lock().await;
    let connection = std::env::var("TESSERA_AZURE_CONNECTION_STRING").expect(
        "TESSERA_AZURE_CONNECTION_STRING is not set: run scripts/test.sh, or scripts/azurite.sh \
         start and TESSERA_AZURE_CONNECTION_STRING=UseDevelopmentStorage=true",
    );
    let storage = tessera_azure::AzureStorage::from_connection_string(
        &connection,
        tessera_azure::AzureOptions::default(),
    )
    .expect("Azurite connection string");
    let platform = Platform::new(storage.queues(), storage.blobs(), Nudges::local());
    platform.ensure_queues().await.unwrap();
    for queue in tessera_shared::messages::QueueName::ALL {
        for name in [queue.as_str().to_string(), queue.poison()] {
            storage.queues().clear(&name).await.unwrap();
        }
    }
    let mut app = spawn_app_over(platform, settings, true).await;
    app._azurite = Some(lock);
    app
}

/// The app over `platform`, the fixture tiles imported as the operator's `emoji` library.
async fn spawn_app_over(platform: Platform, settings: WebSettings, workers: bool) -> TestApp {
    platform.ensure_queues().await.unwrap();
    let tiles = fixture("engine/tiles");
    let options = tessera_engine::ImportOptions::default();
    tessera_workers::import_library(
        &platform,
        &tiles,
        "emoji",
        options,
        &tessera_shared::libraries::Publication::operator(true),
    )
    .await
    .unwrap();
    // The controller plans under the limits the web role checks, as `Settings::load` gives them.
    let limits = settings.limits.clone();
    let app = Application::build(platform.clone(), settings)
        .await
        .unwrap();
    let address = format!("http://127.0.0.1:{}", app.port());
    let server = app.handle();
    let streams = app.streams();
    tokio::spawn(app.run_until_stopped());
    let (stop_workers, signal) = shutdown::channel();
    if workers {
        // A message put off (a slice response that finds its job stitching elsewhere) comes
        // back within seconds, so that a test's queues settle well before its end's check.
        let controller = ControllerSettings {
            min_backoff_ms: 20,
            max_backoff_ms: 200,
            visibility_timeout_ms: 8_000,
            renewal_interval_ms: 2_000,
            limits,
            ..ControllerSettings::default()
        };
        let processor = ProcessorSettings {
            processors: 1,
            id: "test".into(),
            min_backoff_ms: 20,
            max_backoff_ms: 200,
            ..ProcessorSettings::default()
        };
        tokio::spawn(tessera_workers::run_controller(
            platform.clone(),
            controller,
            signal.clone(),
        ));
        tokio::spawn(tessera_workers::run_processors(
            platform.clone(),
            processor,
            signal,
        ));
    }
    TestApp {
        address,
        owner: uuid::Uuid::new_v4().to_string(),
        client: http_client(reqwest::Client::builder()),
        platform,
        streams,
        stop_workers,
        server,
        workers,
        leaves: Leftovers::Nothing,
        _dir: None,
        _azurite: None,
    }
}

/// The client `builder` makes, for plain HTTP.
pub(crate) fn http_client(builder: reqwest::ClientBuilder) -> reqwest::Client {
    // reqwest is built without a TLS provider of its own (see the Azure crate); plain HTTP
    // still needs one installed to build a client. Fails harmlessly when one is installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    builder.build().unwrap()
}

/// A client that shows redirects rather than following them.
pub(crate) fn no_redirect_client() -> reqwest::Client {
    http_client(reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()))
}

/// A valid submission: the astronaut, 12 cells across, 8 px tiles, 3 slices.
pub(crate) fn job_form(image: Vec<u8>) -> Form {
    sized_job_form(image, 8, 12, 3)
}

/// A submission of `image` (named astronaut.png) from the emoji library, `cells` of
/// `tile_size` px across, in `slices`.
pub(crate) fn sized_job_form(image: Vec<u8>, tile_size: u32, cells: u32, slices: u32) -> Form {
    Form::new()
        .part("image", Part::bytes(image).file_name("astronaut.png"))
        .text("library", "emoji")
        .text("tile_size", tile_size.to_string())
        .text("cells", cells.to_string())
        .text("slices", slices.to_string())
}

impl TestApp {
    /// Whether a controller and a processor run beside the web role.
    /// Whether the app's storage is Azurite (not the embedded store).
    pub(crate) fn on_azurite(&self) -> bool {
        self._azurite.is_some()
    }

    pub(crate) fn runs_workers(&self) -> bool {
        self.workers
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.address)
    }

    pub(crate) async fn get(&self, path: &str) -> reqwest::Response {
        self.client.get(self.url(path)).send().await.unwrap()
    }

    /// A GET of `path` with `headers`.
    pub(crate) async fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
        let mut req = self.client.get(self.url(path));
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req.send().await.unwrap()
    }

    pub(crate) async fn post_job(&self, form: Form) -> reqwest::Response {
        self.post_job_with(form, &[]).await
    }

    /// A job submission with `headers`.
    pub(crate) async fn post_job_with(
        &self,
        form: Form,
        headers: &[(&str, &str)],
    ) -> reqwest::Response {
        let mut req = self.client.post(self.url("/api/v1/jobs")).multipart(form);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        req.send().await.unwrap()
    }

    pub(crate) async fn get_job(&self, id: &str) -> reqwest::Response {
        self.get(&format!("/api/v1/jobs/{id}")).await
    }

    pub(crate) async fn get_result(&self, id: &str, headers: &[(&str, &str)]) -> reqwest::Response {
        self.get_with(&format!("/api/v1/jobs/{id}/result"), headers)
            .await
    }

    pub(crate) async fn get_events(&self, id: &str) -> reqwest::Response {
        self.get(&format!("/api/v1/jobs/{id}/events")).await
    }

    /// The job's placements, as JSON (`GET /api/v1/jobs/{id}/placements`).
    pub(crate) async fn get_placements(&self, id: &str) -> Value {
        self.get_placements_with(id, &[]).await
    }

    /// [`TestApp::get_placements`] asked with `headers` (a private job's owner, say).
    pub(crate) async fn get_placements_with(&self, id: &str, headers: &[(&str, &str)]) -> Value {
        let res = self
            .get_with(&format!("/api/v1/jobs/{id}/placements"), headers)
            .await;
        assert_eq!(res.status(), StatusCode::OK);
        res.json().await.unwrap()
    }

    pub(crate) async fn get_libraries(&self) -> reqwest::Response {
        self.get("/api/v1/libraries").await
    }

    pub(crate) async fn get_library(&self, id: &str) -> reqwest::Response {
        self.get(&format!("/api/v1/libraries/{id}")).await
    }

    /// A library upload by [`TestApp::owner`].
    pub(crate) async fn post_library(&self, form: Form) -> reqwest::Response {
        self.post_library_as(form, &self.owner).await
    }

    /// A library upload by the client `client`.
    pub(crate) async fn post_library_as(&self, form: Form, client: &str) -> reqwest::Response {
        self.client
            .post(self.url("/api/v1/libraries"))
            .header("X-Client-Id", client)
            .multipart(form)
            .send()
            .await
            .unwrap()
    }

    pub(crate) async fn get_queues(&self) -> reqwest::Response {
        self.get("/api/v1/queues").await
    }

    pub(crate) async fn healthz(&self) -> reqwest::Response {
        self.get("/healthz").await
    }

    pub(crate) async fn readyz(&self) -> reqwest::Response {
        self.get("/readyz").await
    }

    /// Submits `form`, which must be accepted, and returns the job's id.
    pub(crate) async fn submit(&self, form: Form) -> String {
        let res = self.post_job(form).await;
        assert_eq!(res.status(), StatusCode::ACCEPTED);
        let body: Value = res.json().await.unwrap();
        body["id"].as_str().unwrap().to_string()
    }

    /// Follows the job's event stream, as its page does, until the job has ended, and returns
    /// the job as `GET /api/v1/jobs/{id}` then shows it. The bound guards against a hang; it is
    /// not a timing assertion.
    pub(crate) async fn wait_until_finished(&self, id: &str) -> Value {
        self.wait_until_finished_with(id, &[]).await
    }

    /// [`TestApp::wait_until_finished`] asked with `headers` (a private job's owner, say).
    pub(crate) async fn wait_until_finished_with(
        &self,
        id: &str,
        headers: &[(&str, &str)],
    ) -> Value {
        let follow = async {
            let mut res = self
                .get_with(&format!("/api/v1/jobs/{id}/events"), headers)
                .await;
            assert_eq!(res.status(), StatusCode::OK, "the events of job {id}");
            // Each whole line is read once; a partial one waits for the rest.
            let mut pending = String::new();
            while let Some(chunk) = res.chunk().await.unwrap() {
                pending.push_str(&String::from_utf8_lossy(&chunk));
                let Some(end) = pending.rfind('\n') else {
                    continue;
                };
                let ended = pending[..end]
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .any(|data| {
                        serde_json::from_str::<Value>(data.trim())
                            .is_ok_and(|job| job["state"] == "done" || job["state"] == "failed")
                    });
                if ended {
                    return;
                }
                pending.drain(..=end);
            }
        };
        tokio::time::timeout(Duration::from_secs(120), follow)
            .await
            .unwrap_or_else(|_| panic!("job {id} did not finish within 2 minutes"));
        let job: Value = self
            .get_with(&format!("/api/v1/jobs/{id}"), headers)
            .await
            .json()
            .await
            .unwrap();
        assert!(
            job["state"] == "done" || job["state"] == "failed",
            "the stream ended the job, but it is {}",
            job["state"]
        );
        job
    }
}

pub(crate) async fn error_code(res: reqwest::Response) -> (StatusCode, String) {
    let status = res.status();
    let body: Value = res.json().await.unwrap();
    let code = body["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    (status, code)
}

/// Asserts that `res` is the refusal `status` with error code `code` (and a message).
pub(crate) async fn assert_refused(res: reqwest::Response, status: StatusCode, code: &str) {
    let (got_status, got_code) = error_code(res).await;
    assert_eq!((got_status, got_code.as_str()), (status, code));
}

/// Asserts that `signature` (a `Tessera-Signature` header, `t=...,v1=...`) signs `body` with
/// `secret` at the time it names, and would not with another secret.
pub(crate) fn assert_signed(signature: &str, secret: &str, body: &str) {
    use tessera_web::background::webhook::signature as sign;
    let unix: i64 = signature
        .strip_prefix("t=")
        .and_then(|s| s.split(',').next())
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(signature, sign(secret, unix, body));
    assert_ne!(signature, sign("another secret", unix, body));
}

/// Every blob key in storage, in the containers Tessera writes.
pub(crate) async fn all_blob_keys(platform: &Platform) -> std::collections::BTreeSet<String> {
    use tessera_shared::storage::BlobStoreExt;
    let mut keys = std::collections::BTreeSet::new();
    for (container, _) in tessera_shared::lifecycle::KINDS {
        for meta in platform
            .blobs
            .list_all(&format!("{container}/"))
            .await
            .unwrap()
        {
            keys.insert(meta.key);
        }
    }
    keys
}

impl TestApp {
    /// A job of `client` that stays queued: its record is stored, no request is sent.
    pub(crate) async fn queued_job(&self, client: uuid::Uuid) -> uuid::Uuid {
        use tessera_shared::jobs::{JobParams, JobRecord};
        use tessera_shared::messages::LibraryRef;
        use tessera_shared::spec::JobSpec;
        let id = uuid::Uuid::new_v4();
        let params = JobParams {
            spec: JobSpec::cells(
                LibraryRef {
                    id: "emoji".into(),
                    version: 1,
                },
                16,
                8,
                1,
            ),
            input_name: "held.png".into(),
        };
        self.platform
            .jobs()
            .create(&JobRecord::new(id, client, params))
            .await
            .unwrap();
        id
    }
}
