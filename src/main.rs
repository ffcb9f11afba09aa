//! `tessera`: one binary, every role, chosen by a subcommand.

// The command line: its subcommands report on stdout and stderr (the libraries never print).
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod cli;
mod platform;
mod roles;
mod settings;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use settings::Settings;

/// Tessera turns a photo into a mosaic of many small images.
///
/// Every setting can come from a config file (--config) or a TESSERA_* environment variable;
/// see tessera.sample.toml. Storage is the embedded backend in --data unless TESSERA_STORAGE=azure.
#[derive(Debug, Parser)]
#[command(
    name = "tessera",
    version,
    propagate_version = true,
    after_help = "Examples:
  tessera serve                                  # everything on http://127.0.0.1:8080
  tessera render photo.jpg -l tiles/ -o mosaic.png
  tessera library import ~/emoji --name Emoji
  TESSERA_STORAGE=azure TESSERA_AZURE_CONNECTION_STRING=UseDevelopmentStorage=true tessera processor"
)]
struct Cli {
    /// Data directory of the embedded storage backend [default: ./tessera-data].
    #[arg(long, global = true, value_name = "DIR")]
    data: Option<PathBuf>,
    /// A TOML config file; TESSERA_* environment variables override it.
    #[arg(long, global = true, value_name = "FILE", env = "TESSERA_CONFIG")]
    config: Option<PathBuf>,
    /// Log lines on stderr: plain text (coloured only on a terminal), or one JSON object per
    /// line for log collectors. TESSERA_LOG sets the level (e.g. debug, or tessera_web=debug).
    #[arg(
        long,
        global = true,
        value_enum,
        default_value_t = LogFormat::Text,
        env = "TESSERA_LOG_FORMAT"
    )]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run every role in one process: web front end, job controller and image processors.
    Serve(roles::ServeArgs),
    /// Run the web front end and REST API alone.
    Web(roles::WebArgs),
    /// Run the job controller alone (imagerequest, sliceresponse).
    Controller(roles::ControllerArgs),
    /// Run image processors alone (slicerequest).
    Processor(roles::ProcessorArgs),
    /// Make one mosaic on this machine, without queues or storage.
    Render(cli::render::RenderArgs),
    /// Import and inspect tile libraries.
    #[command(subcommand)]
    Library(LibraryCommand),
    /// Inspect and repair the queues: depths, peek, requeue poison messages, purge.
    Queues(cli::queues::QueuesArgs),
    /// What storage holds by kind, and the sweep that frees what nothing needs.
    #[command(subcommand)]
    Storage(cli::storage::StorageCommand),
    /// Benchmarks that print figures.
    #[command(subcommand)]
    Bench(cli::bench::BenchCommand),
    /// Print the effective configuration as TOML (secrets redacted).
    Config,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
enum LibraryCommand {
    /// Import a folder or .zip of images into the configured store as a named library.
    Import(cli::library::LibraryImportArgs),
    /// Add images to a library in the configured store, as its next version: only they are
    /// decoded, the other tiles are kept.
    Add(cli::library::LibraryAddArgs),
    /// Take tiles out of a library in the configured store, by name, as its next version.
    Remove(cli::library::LibraryRemoveArgs),
    /// List the libraries in the configured store, with their owners.
    List,
    /// Delete a library from the configured store (as the operator: whoever owns it), with
    /// every version; refused while an active job renders from it.
    Delete {
        /// The library's id.
        id: String,
    },
    /// Save a folder's or .zip's tile index to a file (for `tessera render -l`).
    Index(cli::library::LibraryIndexArgs),
}

fn main() -> anyhow::Result<()> {
    limit_malloc_arenas();
    let cli = Cli::parse();
    init_tracing(cli.log_format);
    let mut settings = Settings::load(cli.config.as_deref(), std::env::vars())?;
    if let Some(dir) = cli.data {
        settings.storage.data_dir = dir;
    }
    match cli.command {
        Command::Render(args) => cli::render::run(args, &settings.limits),
        Command::Library(LibraryCommand::Index(args)) => cli::library::run(args),
        Command::Config => {
            print!("{}", settings.to_toml_redacted()?);
            Ok(())
        }
        Command::Bench(command) => cli::bench::run(command),
        command => async_main(command, settings),
    }
}

/// Caps glibc's malloc arenas at two. Its default (eight per core) gives each of the many
/// blocking threads that render, compress and plan an arena of its own, and freed band buffers
/// linger in all of them: the resident set of `tessera serve` grew about 40 % past what was in
/// use.
#[allow(unsafe_code)]
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; it is called before any other thread
    // exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// The subcommands that talk to storage, on a multi-threaded runtime. Once they return (a role
/// has stopped within its shutdown deadline), CPU work still running on blocking threads (a
/// plan, a render) is abandoned rather than waited for, so the process exits.
fn async_main(command: Command, settings: Settings) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(run_with_storage(command, settings));
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    result
}

async fn run_with_storage(command: Command, settings: Settings) -> anyhow::Result<()> {
    // `serve` keeps its nudges on this machine; the roles run alone reach other hosts.
    let reach = match command {
        Command::Serve(_) => platform::NudgeReach::Machine,
        _ => platform::NudgeReach::Network,
    };
    let platform = platform::open(&settings.storage, &settings.nudge, reach)?
        .with_encoding(settings.queues.encoding)
        .with_job_events(settings.job_events_queue());
    match command {
        Command::Serve(args) => roles::serve(platform, settings, args).await,
        Command::Web(args) => roles::web(platform, settings, args).await,
        Command::Controller(args) => roles::controller(platform, settings, args).await,
        Command::Processor(args) => roles::processor(platform, settings, args).await,
        Command::Library(LibraryCommand::Import(args)) => {
            cli::library::import(args, &platform).await
        }
        Command::Library(LibraryCommand::Add(args)) => cli::library::add(args, &platform).await,
        Command::Library(LibraryCommand::Remove(args)) => {
            cli::library::remove(args, &platform).await
        }
        Command::Library(LibraryCommand::List) => cli::library::list(&platform).await,
        Command::Library(LibraryCommand::Delete { id }) => {
            let blobs = platform.libraries().delete(&id).await?;
            println!("library {id} deleted ({blobs} blobs)");
            Ok(())
        }
        Command::Queues(args) => cli::queues::run(args, &platform).await,
        Command::Storage(command) => cli::storage::run(command, &platform, &settings).await,
        Command::Render(_)
        | Command::Library(LibraryCommand::Index(_))
        | Command::Bench(_)
        | Command::Config => {
            unreachable!("handled without storage")
        }
    }
}

/// Logs to stderr: colour codes only when it is a terminal and `NO_COLOR` is not set, so a log
/// written to a file or a pipe is plain text.
fn init_tracing(format: LogFormat) {
    use std::io::IsTerminal;
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("TESSERA_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder.json().with_ansi(false).init(),
        LogFormat::Text => {
            let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            builder.with_ansi(colour).init()
        }
    }
}
