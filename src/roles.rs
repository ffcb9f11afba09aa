//! The long-running roles: `serve` (all of them in one process), `web`, `controller`,
//! `processor`. Each runs until Ctrl-C or SIGTERM, then shuts down gracefully: listeners stop
//! receiving, running handlers finish, and messages in hand become visible again. Every role
//! answers `/healthz`, `/readyz` and `/metrics`: the web roles on their web port, the controller
//! and the processors on their ops port.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use tessera_engine::ImportOptions;
use tessera_shared::platform::Platform;
use tessera_shared::registry::{Registered, RoleRegistration, RoleRegistry};
use tessera_shared::runtime::shutdown::{self, Shutdown};
use tessera_shared::telemetry::Role;
use tessera_web::port::{bind_port, reachable_url};

use crate::settings::Settings;

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  tessera serve
  tessera serve --port 9000 --processors 4 --data /srv/tessera
  tessera serve --default-library ~/emoji --default-library-name Emoji")]
pub struct ServeArgs {
    /// Port of the web front end [default: 8080, or a free one when 8080 is taken].
    #[arg(long)]
    port: Option<u16>,
    /// Image processors in this process [default: one per core].
    #[arg(long)]
    processors: Option<usize>,
    /// Tiles (a folder or .zip) imported as a library when the store has none yet.
    #[arg(long, value_name = "SRC", env = "TESSERA_DEFAULT_LIBRARY")]
    default_library: Option<PathBuf>,
    /// Name of that library.
    #[arg(long, value_name = "NAME", default_value = "Default")]
    default_library_name: String,
}

#[derive(Debug, clap::Args)]
pub struct WebArgs {
    /// Port to listen on [default: 8080, or a free one when 8080 is taken].
    #[arg(long)]
    port: Option<u16>,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  tessera controller --ops-port 9091
  TESSERA_STORAGE=azure TESSERA_AZURE_CONNECTION_STRING=... tessera controller")]
pub struct ControllerArgs {
    /// Port of /healthz, /readyz and /metrics; 0 picks a free one [default: 9090, or a free one
    /// when 9090 is taken].
    #[arg(long, value_name = "PORT")]
    ops_port: Option<u16>,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  tessera processor --processors 4 --ops-port 9092
  TESSERA_STORAGE=azure TESSERA_AZURE_CONNECTION_STRING=... tessera processor")]
pub struct ProcessorArgs {
    /// Slices rendered at once [default: one per core].
    #[arg(long)]
    processors: Option<usize>,
    /// Port of /healthz, /readyz and /metrics; 0 picks a free one [default: 9090, or a free one
    /// when 9090 is taken].
    #[arg(long, value_name = "PORT")]
    ops_port: Option<u16>,
}

fn probes(platform: &Platform, settings: &Settings, role: Role) -> tessera_web::Probes {
    tessera_web::Probes::new(
        platform,
        role,
        Duration::from_secs(settings.ops.readiness_interval_secs),
        Duration::from_secs(settings.ops.depth_interval_secs),
    )
}

/// A back-end role beside its ops endpoint, until `shutdown`; a failure of either ends both.
/// The endpoint takes the configured port, or a free one when the default is taken, and is
/// registered where operators find it.
async fn with_ops_endpoint(
    platform: Platform,
    settings: &Settings,
    role: Role,
    shutdown: Shutdown,
    work: impl std::future::Future<Output = anyhow::Result<()>>,
) -> anyhow::Result<()> {
    let tcp = bind_port(
        "the ops endpoint",
        &settings.ops.bind,
        settings.ops.port,
        settings.ops.port_fixed,
    )?;
    let registered = register(&platform, role, tcp.local_addr()?).await;
    let probes = probes(&platform, settings, role);
    let ops = tessera_web::run_ops_endpoint(probes, tcp, shutdown);
    let result = tokio::try_join!(work, ops).map(|_| ());
    if let Some(r) = registered {
        r.withdraw().await;
    }
    result
}

/// The web front end (of `web` or `serve`), registered where operators find it, until
/// `shutdown`.
async fn run_web_registered(
    platform: Platform,
    settings: tessera_web::WebSettings,
    role: Role,
    probes: tessera_web::Probes,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let app = tessera_web::Application::build_with(platform.clone(), settings, probes).await?;
    let registered = register(&platform, role, app.local_addr()).await;
    let result = app.run(shutdown).await;
    if let Some(r) = registered {
        r.withdraw().await;
    }
    result
}

/// Registers this process as `role`, with its health and metrics endpoints at `addr`, for
/// `tessera queues roles`, the System page and `/api/v1/system`. A failure is logged: being
/// findable is not worth stopping a role for.
async fn register(platform: &Platform, role: Role, addr: SocketAddr) -> Option<Registered> {
    let url = reachable_url(addr, platform.nudges.advertised_ip());
    let registration = RoleRegistration::of_this_process(role.as_str(), url);
    match RoleRegistry::new(platform.blobs.clone())
        .register(registration)
        .await
    {
        Ok(r) => Some(r),
        Err(e) => {
            tracing::warn!(error = %e, "this process is not registered: operators will not find its endpoints");
            None
        }
    }
}

/// Where the web role spools uploads: in the embedded data directory, whose free space the
/// service keeps; elsewhere the system's temporary directory.
fn spool_dir(settings: &Settings) -> Option<std::path::PathBuf> {
    (settings.storage.backend == crate::settings::Backend::Embedded)
        .then(|| settings.storage.data_dir.join("spool"))
}

/// Web front end, job controller and image processors in one process.
pub async fn serve(
    platform: Platform,
    mut settings: Settings,
    args: ServeArgs,
) -> anyhow::Result<()> {
    if let Some(port) = args.port {
        settings.web.port = port;
        settings.web.port_fixed = true;
    }
    if let Some(n) = args.processors {
        settings.processor.processors = n;
    }
    settings.web.spool_dir = spool_dir(&settings);
    platform.ensure_queues().await?;
    if let Some(src) = &args.default_library {
        install_default_library(&platform, src, &args.default_library_name).await?;
    }
    let libraries = platform.libraries().list().await?;
    if settings.web.default_library.is_empty() {
        // Jobs that name no library use the first one in the catalogue.
        if let Some(first) = libraries.first() {
            settings.web.default_library = first.id.clone();
        }
    }
    // The default library is decoded once at start, for the controller and processors alike.
    let warm = libraries
        .iter()
        .find(|l| l.id == settings.web.default_library)
        .map(|l| l.reference());
    let (trigger, signal) = shutdown::channel();
    let roles = tokio::try_join!(
        run_web_registered(
            platform.clone(),
            settings.web.clone(),
            Role::Serve,
            probes(&platform, &settings, Role::Serve),
            signal.clone()
        ),
        tessera_workers::run_workers(
            platform.clone(),
            settings.controller.clone(),
            settings.processor.clone(),
            warm,
            signal.clone()
        ),
        async {
            wait_for_stop_signal().await;
            trigger.fire();
            Ok(())
        },
    );
    roles.map(|_| ())
}

pub async fn web(platform: Platform, mut settings: Settings, args: WebArgs) -> anyhow::Result<()> {
    if let Some(port) = args.port {
        settings.web.port = port;
        settings.web.port_fixed = true;
    }
    settings.web.spool_dir = spool_dir(&settings);
    platform.ensure_queues().await?;
    let probes = probes(&platform, &settings, Role::Web);
    run_until_stopped(|signal| {
        run_web_registered(platform, settings.web, Role::Web, probes, signal)
    })
    .await
}

pub async fn controller(
    platform: Platform,
    mut settings: Settings,
    args: ControllerArgs,
) -> anyhow::Result<()> {
    if let Some(port) = args.ops_port {
        settings.ops.port = port;
        settings.ops.port_fixed = true;
    }
    platform.ensure_queues().await?;
    // The controller sends the notifications it records as well as the web processes do, so
    // they go out with no web process running.
    tessera_web::background::webhook::start_sender(
        platform.clone(),
        settings.web.webhooks.clone(),
        settings.public_url(),
    );
    run_until_stopped(|signal| async move {
        let work = tessera_workers::run_controller(
            platform.clone(),
            settings.controller.clone(),
            signal.clone(),
        );
        with_ops_endpoint(platform, &settings, Role::Controller, signal, work).await
    })
    .await
}

pub async fn processor(
    platform: Platform,
    mut settings: Settings,
    args: ProcessorArgs,
) -> anyhow::Result<()> {
    if let Some(n) = args.processors {
        settings.processor.processors = n;
    }
    settings.web.spool_dir = spool_dir(&settings);
    if let Some(port) = args.ops_port {
        settings.ops.port = port;
        settings.ops.port_fixed = true;
    }
    platform.ensure_queues().await?;
    run_until_stopped(|signal| async move {
        let work = tessera_workers::run_processors(
            platform.clone(),
            settings.processor.clone(),
            signal.clone(),
        );
        with_ops_endpoint(platform, &settings, Role::Processor, signal, work).await
    })
    .await
}

/// Imports `src` as a library unless the store already has one.
async fn install_default_library(
    platform: &Platform,
    src: &std::path::Path,
    name: &str,
) -> anyhow::Result<()> {
    let existing = platform.libraries().list().await?;
    if !existing.is_empty() {
        return Ok(());
    }
    tracing::info!("importing the default tile library from {}", src.display());
    let (record, report) = tessera_workers::import_library(
        platform,
        src,
        name,
        ImportOptions::default(),
        &tessera_shared::libraries::Publication::operator(false),
    )
    .await
    .context("cannot install the default tile library")?;
    tracing::info!(
        "library {} ready: {} tiles ({} files skipped)",
        record.id,
        record.tiles,
        report.skipped.len()
    );
    Ok(())
}

async fn run_until_stopped<F, Fut>(role: F) -> anyhow::Result<()>
where
    F: FnOnce(Shutdown) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let (trigger, signal) = shutdown::channel();
    let role = role(signal);
    tokio::pin!(role);
    tokio::select! {
        // A role that ends by itself has failed to start or lost its storage.
        result = &mut role => return result,
        () = wait_for_stop_signal() => trigger.fire(),
    }
    role.await
}

/// Ctrl-C or SIGTERM.
async fn wait_for_stop_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    tracing::info!("stopping: letting running work finish");
}
