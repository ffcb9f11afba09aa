//! `tessera`: one binary, every role, chosen by a subcommand.

mod settings;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use settings::Settings;

/// Tessera turns a photo into a mosaic of many small images.
///
/// Every setting can come from a config file (--config) or a TESSERA_* environment variable;
/// see tessera.sample.toml.
#[derive(Debug, Parser)]
#[command(name = "tessera", version, propagate_version = true)]
struct Cli {
    /// Data directory of the embedded storage backend [default: ./tessera-data].
    #[arg(long, global = true, value_name = "DIR")]
    data: Option<PathBuf>,
    /// A TOML config file; TESSERA_* environment variables override it.
    #[arg(long, global = true, value_name = "FILE", env = "TESSERA_CONFIG")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the effective configuration (secrets redacted).
    Config,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    init_tracing();
    let mut settings = Settings::load(cli.config.as_deref(), std::env::vars())?;
    if let Some(dir) = cli.data {
        settings.storage.data_dir = dir;
    }
    match cli.command {
        Command::Config => println!("{settings:#?}"),
    }
    Ok(())
}

fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("TESSERA_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
