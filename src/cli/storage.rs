//! `tessera storage`: what storage holds, and the sweep that frees what nothing needs.

use clap::Subcommand;
use tessera_shared::lifecycle::{KINDS, collect_garbage, usage};
use tessera_shared::platform::Platform;

use crate::settings::Settings;

#[derive(Debug, Subcommand)]
pub enum StorageCommand {
    /// Blobs and bytes by kind (uploads, slice outputs, results, ...).
    Usage {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Sweep now, as each job controller does every `jobs.gc_interval_secs`: leftovers of ended
    /// jobs, blobs of jobs with no record, results past `retention.result_days`, library
    /// versions no job needs.
    Gc,
}

pub async fn run(
    command: StorageCommand,
    platform: &Platform,
    settings: &Settings,
) -> anyhow::Result<()> {
    match command {
        StorageCommand::Usage { json } => {
            let kinds = usage(&*platform.blobs).await?;
            if json {
                let map: serde_json::Map<String, serde_json::Value> = kinds
                    .iter()
                    .map(|(kind, u)| {
                        let value = serde_json::json!({ "blobs": u.blobs, "bytes": u.bytes });
                        (kind.to_string(), value)
                    })
                    .collect();
                println!("{}", serde_json::Value::Object(map));
                return Ok(());
            }
            let (mut blobs, mut bytes) = (0, 0);
            println!(
                "{:<14} {:<22} {:>8} {:>14}",
                "container", "holds", "blobs", "bytes"
            );
            for ((kind, u), (_, what)) in kinds.iter().zip(KINDS) {
                println!("{kind:<14} {what:<22} {:>8} {:>14}", u.blobs, u.bytes);
                blobs += u.blobs;
                bytes += u.bytes;
            }
            println!("{:<14} {:<22} {blobs:>8} {bytes:>14}", "total", "");
            Ok(())
        }
        StorageCommand::Gc => {
            let report = collect_garbage(platform, settings.controller.gc_options()).await?;
            println!(
                "released {} ended jobs' intermediates, deleted {} expired jobs, {} orphaned \
                 blobs, {} old library versions, {} expired sessions and the photos of {} \
                 ended events: {} blobs in all",
                report.released,
                report.expired,
                report.orphans,
                report.library_versions,
                report.sessions,
                report.events_erased,
                report.blobs
            );
            Ok(())
        }
    }
}
