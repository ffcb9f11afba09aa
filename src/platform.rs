//! Opens the configured storage backend and hands back the [`Platform`] every role runs on.

use anyhow::Context;
use tessera_azure::{AzureOptions, AzureStorage};
use tessera_shared::platform::Platform;
use tessera_shared::runtime::{NudgeSettings, Nudges};
use tessera_shared::storage::embedded::EmbeddedStorage;

use crate::settings::{Backend, StorageSettings};

/// The counted storage ports of the configured backend, with cross-process nudges (listeners in
/// other processes sharing the same storage are woken too; within this process, at once).
pub fn open(settings: &StorageSettings) -> anyhow::Result<Platform> {
    let (queues, blobs) = match settings.backend {
        Backend::Embedded => {
            let storage = EmbeddedStorage::open(&settings.data_dir).with_context(|| {
                format!(
                    "cannot open the data directory {}",
                    settings.data_dir.display()
                )
            })?;
            (storage.queues(), storage.blobs())
        }
        Backend::Azure => {
            let storage = AzureStorage::from_connection_string(
                &settings.azure_connection_string,
                AzureOptions::default(),
            )?;
            (storage.queues(), storage.blobs())
        }
    };
    let nudges = Nudges::cross_process(blobs.clone(), NudgeSettings::default());
    Ok(Platform::new(queues, blobs, nudges))
}
