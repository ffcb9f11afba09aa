//! The conformance suite against Azurite (or any account `TESSERA_AZURE_CONNECTION_STRING`
//! names). Fails, never skips, when that variable is unset: `scripts/test.sh` starts Azurite
//! and sets it.

use tessera_azure::{AzureOptions, AzureStorage};

use super::Backend;

async fn backend() -> Backend {
    let connection = std::env::var("TESSERA_AZURE_CONNECTION_STRING").expect(
        "TESSERA_AZURE_CONNECTION_STRING is not set: run scripts/test.sh, or start Azurite with \
         scripts/azurite.sh start and set TESSERA_AZURE_CONNECTION_STRING=UseDevelopmentStorage=true",
    );
    let storage = AzureStorage::from_connection_string(&connection, AzureOptions::default())
        .expect("a valid Azure connection string");
    Backend::new(storage.queues(), storage.blobs(), ())
}

mod queues {
    queue_conformance!(super::backend);
}

mod blobs {
    blob_conformance!(super::backend);
}
