//! `tessera queues`: depths (poison queues included), the running processes, peek, requeue from
//! a poison queue, purge.

use std::collections::BTreeSet;

use anyhow::{Context as _, bail};
use tessera_shared::messages::{Encoding, QueueName, poison_queue_name};
use tessera_shared::platform::Platform;
use tessera_shared::registry::RoleRegistry;
use tessera_shared::runtime::PoisonRecord;
use tessera_shared::storage::{MAX_BATCH, SendOptions, StorageError};
use time::format_description::well_known::Rfc3339;

/// Inspect and repair the queues: depths, peek, requeue poison messages, purge.
#[derive(Debug, clap::Args)]
pub struct QueuesArgs {
    #[command(subcommand)]
    pub command: Option<QueuesCommand>,
}

#[derive(Debug, clap::Subcommand)]
pub enum QueuesCommand {
    /// Messages in every queue and its poison queue (the default).
    Depths {
        /// One JSON object instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// The running processes (web, controller, processor, serve) and where each one's
    /// /healthz, /readyz and /metrics answer, as each registered itself.
    Roles {
        /// One JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show messages without receiving them (poison records show their reason).
    Peek {
        /// A queue, e.g. `slicerequest` or `slicerequest-poison`.
        queue: String,
        /// How many messages (at most 32).
        #[arg(short = 'n', long, default_value_t = 10)]
        count: usize,
        /// Print the bodies alone, one JSON document per line (decoded from base64 where they
        /// were written so).
        #[arg(long)]
        raw: bool,
    },
    /// Send the messages of a poison queue back to their queue (after a fix).
    Requeue {
        /// The queue whose poison queue to empty, e.g. `slicerequest` (or `slicerequest-poison`).
        queue: String,
        /// Requeue at most this many.
        #[arg(long)]
        max: Option<u64>,
    },
    /// Delete every message of one of the deployment's queues (a work queue or its poison
    /// queue, named without the storage prefix).
    Purge {
        queue: String,
        /// Confirm: the messages are gone for good.
        #[arg(long)]
        yes: bool,
    },
}

pub async fn run(args: QueuesArgs, platform: &Platform) -> anyhow::Result<()> {
    match args
        .command
        .unwrap_or(QueuesCommand::Depths { json: false })
    {
        QueuesCommand::Depths { json } => {
            depths(platform, json).await?;
            if !json {
                println!();
                roles(platform, false).await?;
            }
            Ok(())
        }
        QueuesCommand::Roles { json } => roles(platform, json).await,
        QueuesCommand::Peek { queue, count, raw } => peek(platform, &queue, count, raw).await,
        QueuesCommand::Requeue { queue, max } => {
            let moved = requeue(platform, &queue, max.unwrap_or(u64::MAX)).await?;
            println!("requeued {moved} message(s) from {}", poison_of(&queue));
            Ok(())
        }
        QueuesCommand::Purge { queue, yes } => {
            // Only this deployment's own queues: a name with another environment's prefix is
            // not one of them, whatever storage holds.
            let own: Vec<String> = QueueName::ALL
                .iter()
                .flat_map(|q| [q.as_str().to_string(), q.poison()])
                .collect();
            if !own.contains(&queue) {
                bail!(
                    "{queue} is not one of this deployment's queues: purge one of {}",
                    own.join(", ")
                );
            }
            if !yes {
                bail!("purging deletes every message in {queue}: add --yes to confirm");
            }
            // A queue not made yet holds nothing.
            let depth = match platform.queues.approximate_depth(&queue).await {
                Err(StorageError::NotFound(_)) => None,
                depth => Some(depth?),
            };
            if depth.is_some() {
                platform.queues.clear(&queue).await?;
            }
            let depth = depth.unwrap_or(0);
            println!("purged {queue} ({depth} message(s))");
            Ok(())
        }
    }
}

fn poison_of(queue: &str) -> String {
    if queue.ends_with("-poison") {
        queue.to_string()
    } else {
        poison_queue_name(queue)
    }
}

/// Depth of every queue that exists plus the pipeline's queues and their poison queues.
pub async fn depths(platform: &Platform, json: bool) -> anyhow::Result<()> {
    let mut names: BTreeSet<String> = platform.queues.list_queues().await?.into_iter().collect();
    for q in QueueName::ALL {
        names.insert(q.as_str().to_string());
        names.insert(q.poison());
    }
    let mut rows = Vec::new();
    for name in names {
        let depth = match platform.queues.approximate_depth(&name).await {
            Ok(n) => Some(n),
            Err(StorageError::NotFound(_)) => None,
            Err(e) => return Err(e).with_context(|| format!("depth of {name}")),
        };
        rows.push((name, depth));
    }
    if json {
        let map: serde_json::Map<String, serde_json::Value> = rows
            .into_iter()
            .map(|(name, depth)| (name, depth.map_or(serde_json::Value::Null, Into::into)))
            .collect();
        println!("{}", serde_json::Value::Object(map));
    } else {
        let width = rows.iter().map(|(n, _)| n.len()).max().unwrap_or(5).max(5);
        println!("{:<width$}  {:>8}", "QUEUE", "DEPTH");
        for (name, depth) in rows {
            let depth = depth.map_or_else(|| "-".to_string(), |n| n.to_string());
            println!("{name:<width$}  {depth:>8}");
        }
    }
    Ok(())
}

/// The registered processes, as a table or a JSON array.
pub async fn roles(platform: &Platform, json: bool) -> anyhow::Result<()> {
    let roles = RoleRegistry::new(platform.blobs.clone())
        .list()
        .await
        .context("listing the registered processes")?;
    if json {
        println!("{}", serde_json::to_string(&roles)?);
        return Ok(());
    }
    if roles.is_empty() {
        println!("no running process registered");
        return Ok(());
    }
    let host_width = roles.iter().map(|r| r.host.len()).max().unwrap_or(4).max(4);
    println!(
        "{:<10}  {:<host_width$}  {:>7}  {:<28}  STARTED",
        "ROLE", "HOST", "PID", "ENDPOINTS"
    );
    for r in roles {
        let started = r.started_at.format(&Rfc3339).unwrap_or_default();
        println!(
            "{:<10}  {:<host_width$}  {:>7}  {:<28}  {started}",
            r.role, r.host, r.pid, r.ops_url
        );
    }
    Ok(())
}

pub async fn peek(platform: &Platform, queue: &str, count: usize, raw: bool) -> anyhow::Result<()> {
    let messages = match platform.queues.peek(queue, count.clamp(1, MAX_BATCH)).await {
        Err(StorageError::NotFound(_)) => bail!("queue {queue} does not exist"),
        other => other.with_context(|| format!("peek {queue}"))?,
    };
    if messages.is_empty() && !raw {
        println!("{queue}: no visible messages");
    }
    for m in messages {
        let text = readable(&m.body);
        if raw {
            println!("{text}");
            continue;
        }
        let inserted = m.insertion_time.format(&Rfc3339).unwrap_or_default();
        println!("{}  received {}x  sent {inserted}", m.id, m.dequeue_count);
        match serde_json::from_str::<PoisonRecord>(&text) {
            Ok(record) if queue.ends_with("-poison") => {
                println!("  reason: {}", record.reason);
                println!(
                    "  from {} (message {}, received {}x)",
                    record.queue, record.message_id, record.dequeue_count
                );
                if let Some(job) = record.job_id {
                    println!("  job: {job}");
                }
                match (&record.body, &record.body_blob) {
                    (Some(body), _) => println!("  body: {}", shorten(&readable(body), 400)),
                    (None, Some(key)) => println!("  body stored at {key}"),
                    (None, None) => {}
                }
            }
            _ => println!("  {}", shorten(&text, 400)),
        }
    }
    Ok(())
}

/// Moves up to `max` records from `queue`'s poison queue back to the queue each came from;
/// returns how many were moved. A record is deleted only after its message has been sent.
pub async fn requeue(platform: &Platform, queue: &str, max: u64) -> anyhow::Result<u64> {
    let poison = poison_of(queue);
    // Records poisoned again while this runs wait for the next requeue.
    let depth = match platform.queues.approximate_depth(&poison).await {
        Err(StorageError::NotFound(_)) => 0,
        other => other?,
    };
    let max = max.min(depth);
    let mut moved = 0u64;
    let mut touched = BTreeSet::new();
    while moved < max {
        let want = (max - moved).min(MAX_BATCH as u64) as usize;
        let batch = platform
            .queues
            .receive(&poison, want, std::time::Duration::from_secs(60))
            .await
            .with_context(|| format!("receive from {poison}"))?;
        if batch.is_empty() {
            break;
        }
        for m in batch {
            // A poison record goes back to the queue it names; anything else is a raw message
            // as Azure's tooling leaves it (a Functions trigger moves messages unchanged), and
            // goes back as it is to the queue this poison queue belongs to.
            let record = Encoding::from_wire(&m.body)
                .ok()
                .and_then(|text| serde_json::from_str::<PoisonRecord>(&text).ok());
            let (target, body, stored) = match record {
                Some(record) => {
                    let body = record.original_body(&*platform.blobs).await?;
                    (record.queue, body, record.body_blob)
                }
                None => (queue.to_string(), m.body.clone(), None),
            };
            platform
                .queues
                .send(&target, &body, SendOptions::default())
                .await
                .with_context(|| format!("send back to {target}"))?;
            platform
                .queues
                .delete(&poison, &m.id, &m.pop_receipt)
                .await?;
            if let Some(key) = &stored {
                let _ = platform.blobs.delete(key).await;
            }
            touched.insert(target);
            moved += 1;
        }
    }
    for q in touched {
        platform.nudges.nudge(&q).await;
    }
    Ok(moved)
}

/// A body's JSON text whichever encoding it was written in; the body as it is when it is neither.
fn readable(body: &str) -> String {
    Encoding::from_wire(body).map_or_else(|_| body.to_string(), |t| t.into_owned())
}

fn shorten(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &text[..end], text.len())
}
