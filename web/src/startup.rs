//! Building and running the server: the HTTP app with its middleware, and the imageresponse
//! listener that runs beside it.

use std::sync::Arc;
use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::{Server, ServerHandle, ServiceRequest, ServiceResponse};
use actix_web::middleware::DefaultHeaders;
use actix_web::middleware::{Next, from_fn};
use actix_web::{App, HttpMessage as _, HttpServer, web};
use anyhow::Context as _;
use tokio::sync::Semaphore;
use tracing::Instrument;

use tessera_shared::platform::Platform;
use tessera_shared::runtime::{ListenerHandle, Shutdown};

use tessera_shared::telemetry::Role;

use crate::api_error::no_route;
use crate::app_state::AppState;
use crate::background::job_streams::{JobChanges, StreamHub};
use crate::guards::request::HeadRequest;
use crate::probes::Probes;
use crate::web_settings::WebSettings;

/// Content Security Policy for everything served: same-origin only, never framed.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; img-src 'self' data: blob:; \
     style-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; \
     form-action 'self'; frame-ancestors 'none'";

/// The front end, bound and ready to run.
pub struct Application {
    addr: std::net::SocketAddr,
    server: Server,
    listener: ListenerHandle,
    grace: Duration,
    streams: StreamHub,
    /// The spool directory made for this server alone, removed with it.
    _own_spool: Option<tempfile::TempDir>,
}

impl Application {
    /// Creates the queues, starts the imageresponse listener and binds the HTTP server
    /// (`port` 0 picks a free port; see [`Application::port`]), with the metrics of a web role.
    pub async fn build(platform: Platform, settings: WebSettings) -> anyhow::Result<Self> {
        let minute = Duration::from_secs(60);
        let probes = Probes::new(&platform, Role::Web, minute, minute);
        Self::build_with(platform, settings, probes).await
    }

    /// [`Application::build`] with the readiness check and metrics of the process's role.
    pub async fn build_with(
        platform: Platform,
        settings: WebSettings,
        probes: Probes,
    ) -> anyhow::Result<Self> {
        platform
            .ensure_queues()
            .await
            .context("creating the queues")?;
        let changes = JobChanges::new();
        let tcp = crate::port::bind_port(
            "the web front end",
            &settings.bind,
            settings.port,
            settings.port_fixed,
        )?;
        let addr = tcp.local_addr()?;
        let public_url = match settings.webhooks.public_url.trim() {
            "" if addr.ip().is_unspecified() => format!("http://localhost:{}", addr.port()),
            "" => format!("http://{addr}"),
            url => url.to_string(),
        };
        let outbox = crate::background::webhook::start_sender(
            platform.clone(),
            settings.webhooks.clone(),
            public_url,
        );
        let listener =
            crate::background::job_outcomes::start(platform.clone(), changes.clone(), outbox)
                .await
                .context("starting the imageresponse listener")?;
        let grace = Duration::from_secs(settings.shutdown_grace_secs);
        let workers = settings.workers;
        let guard = crate::guards::auth::Guard::new(
            &settings.api_key,
            &settings.keys,
            crate::guards::client::TrustedProxies(settings.trusted_proxies.clone()),
            platform.blobs.clone(),
        )?;
        if !guard.required() && !addr.ip().is_loopback() {
            tracing::warn!(
                "THE SERVICE IS OPEN: it listens on {addr} with no API key, so anyone who \
                 reaches it may upload, use and change libraries and submit jobs. Set \
                 web.api_key (TESSERA_WEB__API_KEY) or named keys in [web.keys]."
            );
        }
        let (spool, own_spool) = spool_dir(&settings)?;
        let streams = StreamHub::new(platform.jobs(), changes.clone(), &settings);
        let probes = web::Data::new(probes);
        let state = web::Data::new(app_state(
            platform,
            settings,
            (guard.clone(), changes, streams.clone()),
            spool,
        ));
        let mut server = HttpServer::new(move || {
            App::new()
                .app_data(state.clone())
                .app_data(probes.clone())
                .app_data(web::Data::new(guard.clone()))
                .configure(crate::api_error::configure_extractors)
                .configure(crate::pages::configure)
                .configure(crate::guards::auth::configure)
                .configure(crate::probes::configure)
                .configure(crate::api::configure)
                .default_service(web::to(no_route))
                .wrap(from_fn(head_as_get))
                .wrap(from_fn(refuse_forgeries))
                .wrap(from_fn(crate::guards::auth::key_check))
                .wrap(security_headers())
                .wrap(from_fn(log_request))
                .wrap(
                    actix_web::middleware::ErrorHandlers::new()
                        .default_handler(crate::pages::error_page),
                )
        })
        .on_connect(crate::guards::peer::remember)
        .disable_signals()
        .shutdown_timeout(grace.as_secs());
        if workers > 0 {
            server = server.workers(workers);
        }
        let server = server.listen(tcp)?.run();
        Ok(Application {
            addr,
            server,
            listener,
            grace,
            streams,
            _own_spool: own_spool,
        })
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> std::net::SocketAddr {
        self.addr
    }

    /// A handle that stops the server (`stop(true)` lets requests finish).
    pub fn handle(&self) -> ServerHandle {
        self.server.handle()
    }

    /// The job event streams: [`StreamHub::close`] ends them, before a graceful stop.
    pub fn streams(&self) -> StreamHub {
        self.streams.clone()
    }

    /// Serves until the server is stopped, then stops the imageresponse listener.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        let result = self.server.await;
        self.listener.shutdown(self.grace).await;
        result
    }
}

/// The shared state of every worker: the platform, settings and the limits and caches each
/// request takes from.
fn app_state(
    platform: Platform,
    settings: WebSettings,
    (guard, changes, streams): (crate::guards::auth::Guard, JobChanges, StreamHub),
    spool: std::path::PathBuf,
) -> AppState {
    let loaded_libraries = Arc::new(tessera_shared::library_cache::LibraryCache::new(
        platform.libraries(),
        crate::app_state::KEPT_LIBRARIES,
        crate::app_state::KEPT_LIBRARY_BYTES,
    ));
    AppState {
        guard,
        platform,
        changes,
        decodes: Arc::new(Semaphore::new(
            std::thread::available_parallelism().map_or(1, |n| n.get()),
        )),
        imports: Arc::new(Semaphore::new(settings.max_concurrent_imports.max(1))),
        decode_memory: crate::app_state::DecodeMemory::new(settings.decode_memory_bytes),
        uploads: crate::guards::upload::UploadSlots::new(settings.max_uploads_in_flight),
        admission: Default::default(),
        spool,
        settings,
        streams,
        cell_maps: Default::default(),
        loaded_libraries,
        previews: Default::default(),
        placements: Default::default(),
        guests: Default::default(),
        event_counts: Default::default(),
    }
}

/// HEAD is answered wherever GET is: routed as GET, the body left unsent (the connection knows
/// the request was a HEAD).
async fn head_as_get(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse, actix_web::Error> {
    if req.method() == actix_web::http::Method::HEAD {
        req.head_mut().method = actix_web::http::Method::GET;
        req.extensions_mut().insert(HeadRequest);
    }
    Ok(next.call(req).await?.map_into_boxed_body())
}

/// Refuses a cross-site request that would change something ([`crate::guards::auth::forgery_check`]).
async fn refuse_forgeries(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse, actix_web::Error> {
    match crate::guards::auth::forgery_check(&req) {
        None => Ok(next.call(req).await?.map_into_boxed_body()),
        Some(refused) => Ok(req.error_response(refused)),
    }
}

/// One log line per request, with its status and time, in a span that names it.
async fn log_request(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse, actix_web::Error> {
    let span = tracing::info_span!(
        "http",
        method = %req.method(),
        path = %req.path(),
        request = %uuid::Uuid::new_v4(),
    );
    let started = std::time::Instant::now();
    async move {
        let res = next.call(req).await;
        match &res {
            Ok(r) => tracing::info!(
                status = r.status().as_u16(),
                ms = started.elapsed().as_millis() as u64,
                "served"
            ),
            Err(e) => tracing::warn!(error = %e, "request failed"),
        }
        Ok(res?.map_into_boxed_body())
    }
    .instrument(span)
    .await
}

/// The spool directory of uploads, emptied: what a killed process left in the data directory is
/// gone at start. Without a data directory, a directory of this server's own under the system's,
/// removed when the server ends (the second value holds it).
fn spool_dir(
    settings: &WebSettings,
) -> anyhow::Result<(std::path::PathBuf, Option<tempfile::TempDir>)> {
    let Some(dir) = settings.spool_dir.clone() else {
        let own = tempfile::Builder::new()
            .prefix("tessera-spool-")
            .tempdir()
            .context("creating a spool directory")?;
        return Ok((own.path().to_path_buf(), Some(own)));
    };
    if dir.exists() {
        for entry in
            std::fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?
        {
            let path = entry?.path();
            let removed = if path.is_dir() {
                std::fs::remove_dir_all(&path)
            } else {
                std::fs::remove_file(&path)
            };
            if let Err(e) = removed {
                tracing::warn!(path = %path.display(), error = %e, "a spooled upload left");
            }
        }
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok((dir, None))
}

fn security_headers() -> DefaultHeaders {
    DefaultHeaders::new()
        .add(("X-Content-Type-Options", "nosniff"))
        .add(("Content-Security-Policy", CONTENT_SECURITY_POLICY))
        .add(("X-Frame-Options", "DENY"))
        .add(("Referrer-Policy", "no-referrer"))
        .add(("Cross-Origin-Opener-Policy", "same-origin"))
}

impl Application {
    /// Serves until `shutdown` fires, then stops gracefully.
    pub async fn run(self, shutdown: Shutdown) -> anyhow::Result<()> {
        tracing::info!("web listening on http://{}", self.addr);
        let handle = self.handle();
        let streams = self.streams();
        let stopper = tokio::spawn(async move {
            shutdown.fired().await;
            tracing::info!("web shutting down");
            // Open event streams would hold the graceful stop for its whole grace period.
            streams.close();
            handle.stop(true).await;
        });
        let result = self.run_until_stopped().await;
        stopper.abort();
        result.context("web server")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spool_of_its_own_is_removed_with_the_server_and_a_configured_one_is_emptied() {
        let (path, own) = spool_dir(&WebSettings::default()).unwrap();
        assert!(path.is_dir());
        drop(own);
        assert!(!path.exists(), "{} is left behind", path.display());

        let configured = tempfile::tempdir().unwrap();
        let spool = configured.path().join("spool");
        std::fs::create_dir_all(spool.join("left")).unwrap();
        std::fs::write(spool.join("upload"), b"x").unwrap();
        let settings = WebSettings {
            spool_dir: Some(spool.clone()),
            ..WebSettings::default()
        };
        let (path, own) = spool_dir(&settings).unwrap();
        assert_eq!(path, spool);
        assert!(own.is_none());
        assert_eq!(std::fs::read_dir(&spool).unwrap().count(), 0);
    }
}
