//! Opens the configured storage backend and hands back the [`Platform`] every role runs on.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use std::sync::Arc;

use anyhow::Context;
use tessera_azure::{AzureOptions, AzureStorage, EntraCredential};
use tessera_shared::accounting::Accounting;
use tessera_shared::nudge::{NudgeEndpoint, local_address_towards};
use tessera_shared::platform::Platform;
use tessera_shared::runtime::{NudgeSettings, Nudges};
use tessera_shared::storage::embedded::EmbeddedStorage;
use tessera_shared::storage::prefixed::Prefixed;
use tessera_shared::storage::{BlobStore, QueueStore};

use crate::settings::{AzureCredentialSetting, Backend, NudgeConfig, StorageSettings};

/// How far nudges from other processes must reach this one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NudgeReach {
    /// Processes on this machine (`serve`, and any embedded storage): loopback, unless
    /// configured otherwise.
    Machine,
    /// Processes on any host that reaches the same storage.
    Network,
}

/// The counted storage ports of the configured backend, with cross-process nudges (listeners in
/// other processes sharing the same storage are woken too; within this process, at once).
pub fn open(
    settings: &StorageSettings,
    nudge: &NudgeConfig,
    reach: NudgeReach,
) -> anyhow::Result<Platform> {
    let accounting = Accounting::new();
    let (queues, blobs, storage_host): (Arc<dyn QueueStore>, Arc<dyn BlobStore>, _) =
        match settings.backend {
            Backend::Embedded => {
                let storage = EmbeddedStorage::open_with(
                    &settings.data_dir,
                    settings.durability.into(),
                    settings.min_free_bytes,
                )
                .with_context(|| {
                    format!(
                        "cannot open the data directory {}",
                        settings.data_dir.display()
                    )
                })?;
                (
                    Arc::new(accounting.wrap(storage.queues())),
                    Arc::new(accounting.wrap(storage.blobs())),
                    None,
                )
            }
            Backend::Azure => {
                // Counted at the wire: every request the service sees, retries and container
                // creates included.
                let options = AzureOptions {
                    accounting: Some(accounting.clone()),
                    ..AzureOptions::default()
                };
                let storage = azure_storage(settings, options)?;
                let endpoint = storage.queue_endpoint();
                let host = endpoint.host_str().map(|h| {
                    (
                        h.to_string(),
                        endpoint.port_or_known_default().unwrap_or(443),
                    )
                });
                (storage.queues(), storage.blobs(), host)
            }
        };
    let (queues, blobs) = if settings.name_prefix.is_empty() {
        (queues, blobs)
    } else {
        let prefix = &settings.name_prefix;
        let queues: Arc<dyn QueueStore> = Arc::new(Prefixed::new(queues, prefix));
        let blobs: Arc<dyn BlobStore> = Arc::new(Prefixed::new(blobs, prefix));
        (queues, blobs)
    };
    let reach = match storage_host {
        Some(host) if reach == NudgeReach::Network => Some(host),
        _ => None,
    };
    let settings = NudgeSettings {
        endpoint: nudge_endpoint(nudge, reach)?,
        min_wake_interval: Duration::from_millis(nudge.min_wake_interval_ms),
        ..NudgeSettings::default()
    };
    tracing::debug!(endpoint = ?settings.endpoint, "nudge endpoint");
    let nudges = Nudges::cross_process(blobs.clone(), settings);
    Ok(Platform::counted(queues, blobs, nudges, accounting))
}

/// The Azure account as configured: by connection string, or by name with an Entra ID identity.
fn azure_storage(
    settings: &StorageSettings,
    options: AzureOptions,
) -> anyhow::Result<AzureStorage> {
    let identity = match settings.azure_credential {
        AzureCredentialSetting::ConnectionString => {
            return Ok(AzureStorage::from_connection_string(
                &settings.azure_connection_string,
                options,
            )?);
        }
        AzureCredentialSetting::WorkloadIdentity => EntraCredential::WorkloadIdentity,
        AzureCredentialSetting::ManagedIdentity => EntraCredential::ManagedIdentity {
            client_id: Some(settings.azure_client_id.clone()).filter(|id| !id.is_empty()),
        },
        AzureCredentialSetting::Developer => EntraCredential::DeveloperTools,
    };
    Ok(AzureStorage::with_entra_id_for_account(
        &settings.azure_account,
        &settings.azure_endpoint_suffix,
        identity,
        options,
    )?)
}

/// The configured endpoint; what is not configured follows the interface that reaches
/// `storage` (host and port), or loopback when nudges stay on this machine.
fn nudge_endpoint(
    config: &NudgeConfig,
    storage: Option<(String, u16)>,
) -> anyhow::Result<NudgeEndpoint> {
    let parse = |what: &str, value: &str| -> anyhow::Result<Option<IpAddr>> {
        if value.is_empty() {
            return Ok(None);
        }
        value
            .parse()
            .map(Some)
            .with_context(|| format!("nudge.{what} must be an IP address, got {value:?}"))
    };
    let advertise = match parse("advertise", &config.advertise)? {
        Some(ip) => ip,
        None => match &storage {
            Some((host, port)) => local_address_towards(host, *port).unwrap_or_else(|e| {
                tracing::warn!(
                    storage = %host,
                    error = %e,
                    "no route to storage found; wake-up nudges reach this machine only \
                     (set TESSERA_NUDGE__ADVERTISE)"
                );
                IpAddr::V4(Ipv4Addr::LOCALHOST)
            }),
            None => IpAddr::V4(Ipv4Addr::LOCALHOST),
        },
    };
    let bind = parse("bind", &config.bind)?.unwrap_or(advertise);
    Ok(NudgeEndpoint {
        bind,
        advertise,
        port: config.port,
    })
}
