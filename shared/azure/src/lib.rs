//! The Azure Storage backend: Tessera's queue and blob ports on Azure Storage, or on a local
//! Azurite, through Microsoft's `azure_storage_queue` and `azure_storage_blob` 1.x crates.
//!
//! Two ways in: a connection string ([`AzureStorage::from_connection_string`], account key or
//! SAS, `UseDevelopmentStorage=true` for Azurite), for which Tessera signs an account SAS itself
//! ([`sas`]), or account URLs with an Entra ID credential ([`AzureStorage::with_entra_id`]),
//! the production choice. Keys and signatures never reach a log: every type holding one has a
//! redacting `Debug`.

mod blob;
pub mod connection;
mod counting;
mod error;
mod queue;
pub mod sas;

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use azure_core::credentials::TokenCredential;
use azure_core::http::policies::Policy;
use azure_core::http::{ClientOptions, ExponentialRetryOptions, RetryOptions, Transport};
use azure_storage_blob::BlobContainerClient;
use azure_storage_queue::{QueueClient, QueueServiceClient};
use tessera_shared::accounting::Accounting;
use tessera_shared::storage::{BlobStore, QueueStore};
use url::Url;

pub use connection::{AccountKey, ConnectionString, SharedCredential};
pub use error::AzureError;

/// Tuning of the HTTP client under both services.
#[derive(Debug, Clone)]
pub struct AzureOptions {
    /// Time to establish a connection (the SDK's default is 20 s).
    pub connect_timeout: Duration,
    /// Longest wait for data on an open connection (the SDK's default is 60 s).
    pub read_timeout: Duration,
    /// Retries of a failed request inside the SDK (timeouts, 5xx, 429). Tessera's queue runtime
    /// retries transient errors itself, so few are enough here.
    pub max_retries: u32,
    /// Size of the blocks a [`tessera_shared::storage::BlobUpload`] stages.
    pub block_size: usize,
    /// Where every request that reaches either service is counted (by kind, by queue or
    /// container, and by job), as the service bills it. `None`: not counted.
    pub accounting: Option<Accounting>,
}

impl Default for AzureOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(3),
            read_timeout: Duration::from_secs(30),
            max_retries: 2,
            block_size: 4 * 1024 * 1024,
            accounting: None,
        }
    }
}

/// Which Entra ID credential to use with [`AzureStorage::with_entra_id`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntraCredential {
    /// The machine's managed identity; `client_id` picks a user-assigned one.
    ManagedIdentity { client_id: Option<String> },
    /// Workload identity federation (Kubernetes), configured by the usual `AZURE_*` variables.
    WorkloadIdentity,
    /// The developer's Azure CLI or Azure Developer CLI login.
    DeveloperTools,
}

/// The account key that signs read links, and whether the links are https only.
pub(crate) type LinkSigner = (AccountKey, bool);

/// Both ports on one storage account. Cheap to clone: clones share clients and caches.
#[derive(Clone)]
pub struct AzureStorage {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) queue_endpoint: Url,
    pub(crate) blob_endpoint: Url,
    pub(crate) credential: Option<Arc<dyn TokenCredential>>,
    pub(crate) client_options: ClientOptions,
    pub(crate) options: AzureOptions,
    pub(crate) queue_service: QueueServiceClient,
    pub(crate) queues: Mutex<HashMap<String, Arc<QueueClient>>>,
    pub(crate) containers: Mutex<HashMap<String, Arc<BlobContainerClient>>>,
    /// Containers known to exist (created or seen), so puts do not ask again.
    pub(crate) known_containers: Mutex<HashSet<String>>,
    /// The account key that signs read links to single blobs, and whether they are https
    /// only; none without a key (a SAS connection string, Entra ID).
    pub(crate) link_signer: Option<LinkSigner>,
}

impl fmt::Debug for AzureStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AzureStorage")
            .field("queue_endpoint", &self.inner.queue_endpoint.as_str())
            .field("blob_endpoint", &self.inner.blob_endpoint.as_str())
            .field(
                "auth",
                &if self.inner.credential.is_some() {
                    "entra-id"
                } else {
                    "sas"
                },
            )
            .finish()
    }
}

impl AzureStorage {
    /// Connects with a standard connection string (account key, SAS, or
    /// `UseDevelopmentStorage=true`).
    pub fn from_connection_string(s: &str, options: AzureOptions) -> Result<Self, AzureError> {
        let cs = ConnectionString::parse(s)?;
        Self::from_parsed(cs, options)
    }

    /// Connects with a parsed connection string.
    pub fn from_parsed(cs: ConnectionString, options: AzureOptions) -> Result<Self, AzureError> {
        let https_only =
            cs.blob_endpoint.scheme() == "https" && cs.queue_endpoint.scheme() == "https";
        let sas: Arc<dyn Policy> = Arc::new(sas::SasPolicy::new(&cs.credential, https_only));
        let mut client_options = base_client_options(&options)?;
        client_options.per_call_policies.push(sas);
        let link_signer = match cs.credential {
            SharedCredential::Key(key) => Some((key, https_only)),
            SharedCredential::Sas(_) => None,
        };
        Self::build(
            (cs.queue_endpoint, cs.blob_endpoint),
            (None, link_signer),
            client_options,
            options,
        )
    }

    /// Connects to the account's endpoints (`https://<account>.queue.core.windows.net` and
    /// `https://<account>.blob.core.windows.net`) with an Entra ID credential.
    pub fn with_entra_id(
        queue_endpoint: &str,
        blob_endpoint: &str,
        credential: EntraCredential,
        options: AzureOptions,
    ) -> Result<Self, AzureError> {
        let client_options = base_client_options(&options)?;
        let config = |e: azure_core::Error| AzureError::Config(format!("Entra ID credential: {e}"));
        let token: Arc<dyn TokenCredential> = match credential {
            EntraCredential::ManagedIdentity { client_id } => {
                azure_identity::ManagedIdentityCredential::new(Some(
                    azure_identity::ManagedIdentityCredentialOptions {
                        user_assigned_id: client_id.map(azure_identity::UserAssignedId::ClientId),
                        client_options: client_options.clone(),
                    },
                ))
                .map_err(config)?
            }
            EntraCredential::WorkloadIdentity => azure_identity::WorkloadIdentityCredential::new(
                Some(azure_identity::WorkloadIdentityCredentialOptions {
                    credential_options: azure_identity::ClientAssertionCredentialOptions {
                        client_options: client_options.clone(),
                    },
                    ..Default::default()
                }),
            )
            .map_err(config)?,
            EntraCredential::DeveloperTools => {
                azure_identity::DeveloperToolsCredential::new(None).map_err(config)?
            }
        };
        Self::with_token_credential(queue_endpoint, blob_endpoint, token, options)
    }

    /// Connects to a storage account by name, with an Entra ID credential: its endpoints are
    /// `https://<account>.queue.<endpoint_suffix>` and `.blob.` (`core.windows.net` in Azure's
    /// public cloud).
    pub fn with_entra_id_for_account(
        account: &str,
        endpoint_suffix: &str,
        credential: EntraCredential,
        options: AzureOptions,
    ) -> Result<Self, AzureError> {
        check_account_name(account)?;
        Self::with_entra_id(
            &format!("https://{account}.queue.{endpoint_suffix}"),
            &format!("https://{account}.blob.{endpoint_suffix}"),
            credential,
            options,
        )
    }

    /// Connects with any token credential (Entra ID).
    pub fn with_token_credential(
        queue_endpoint: &str,
        blob_endpoint: &str,
        credential: Arc<dyn TokenCredential>,
        options: AzureOptions,
    ) -> Result<Self, AzureError> {
        let queue = connection::service_url(queue_endpoint, "Queue")?;
        let blob = connection::service_url(blob_endpoint, "Blob")?;
        if queue.scheme() != "https" || blob.scheme() != "https" {
            return Err(AzureError::Config(
                "Entra ID credentials need https endpoints".into(),
            ));
        }
        let client_options = base_client_options(&options)?;
        Self::build(
            (queue, blob),
            (Some(credential), None),
            client_options,
            options,
        )
    }

    /// The queue service's endpoint (where listeners poll; its host tells which network
    /// interface reaches storage).
    pub fn queue_endpoint(&self) -> &url::Url {
        &self.inner.queue_endpoint
    }

    /// The queue port.
    pub fn queues(&self) -> Arc<dyn QueueStore> {
        Arc::new(self.clone())
    }

    /// The blob port.
    pub fn blobs(&self) -> Arc<dyn BlobStore> {
        Arc::new(self.clone())
    }

    /// Both clients on the endpoints `(queue, blob)`, with an Entra ID credential or none (a
    /// SAS policy among `client_options`) and the key that signs read links, if any.
    fn build(
        (queue_endpoint, blob_endpoint): (Url, Url),
        (credential, link_signer): (Option<Arc<dyn TokenCredential>>, Option<LinkSigner>),
        mut client_options: ClientOptions,
        options: AzureOptions,
    ) -> Result<Self, AzureError> {
        if let Some(accounting) = &options.accounting {
            client_options
                .per_try_policies
                .push(Arc::new(counting::CountingPolicy::new(
                    accounting.clone(),
                    queue_endpoint.clone(),
                    blob_endpoint.clone(),
                )));
        }
        let queue_service = QueueServiceClient::new(
            queue_endpoint.clone(),
            credential.clone(),
            Some(azure_storage_queue::QueueServiceClientOptions {
                client_options: client_options.clone(),
                ..Default::default()
            }),
        )
        .map_err(|e| AzureError::Config(format!("queue service client: {e}")))?;
        Ok(Self {
            inner: Arc::new(Inner {
                queue_endpoint,
                blob_endpoint,
                credential,
                client_options,
                options,
                queue_service,
                queues: Mutex::new(HashMap::new()),
                containers: Mutex::new(HashMap::new()),
                known_containers: Mutex::new(HashSet::new()),
                link_signer,
            }),
        })
    }
}

/// Checks a storage account's name: 3 to 24 lowercase letters and digits.
pub fn check_account_name(account: &str) -> Result<(), AzureError> {
    let ok = (3..=24).contains(&account.len())
        && account
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if ok {
        Ok(())
    } else {
        Err(AzureError::Config(format!(
            "a storage account name is 3 to 24 lowercase letters and digits, got {account:?}"
        )))
    }
}

/// The HTTP client (rustls with ring, timeouts set) and retry policy both services share.
fn base_client_options(options: &AzureOptions) -> Result<ClientOptions, AzureError> {
    // reqwest is built without a default TLS provider (aws-lc is slow to build): use ring.
    // Fails harmlessly when a provider is already installed for the process.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .connect_timeout(options.connect_timeout)
        .read_timeout(options.read_timeout)
        .pool_idle_timeout(Duration::from_secs(50))
        .build()
        .map_err(|e| AzureError::Config(format!("HTTP client: {e}")))?;
    Ok(ClientOptions {
        transport: Some(Transport::new(Arc::new(http))),
        retry: RetryOptions::exponential(ExponentialRetryOptions {
            initial_delay: azure_core::time::Duration::milliseconds(200),
            max_retries: options.max_retries,
            max_total_elapsed: azure_core::time::Duration::seconds(30),
            max_delay: azure_core::time::Duration::seconds(5),
        }),
        ..Default::default()
    })
}

/// `base` with `segments` appended as path segments (each percent-encoded), without the empty
/// segment a bare host's `/` path would leave.
pub(crate) fn join_url<'a>(base: &Url, segments: impl IntoIterator<Item = &'a str>) -> Url {
    let mut url = base.clone();
    url.path_segments_mut()
        .expect("service URLs are checked to be base URLs")
        .pop_if_empty()
        .extend(segments);
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_join_without_double_slashes() {
        let host = Url::parse("https://acct.queue.core.windows.net/").unwrap();
        assert_eq!(
            join_url(&host, ["jobs"]).as_str(),
            "https://acct.queue.core.windows.net/jobs"
        );
        let azurite = Url::parse("http://127.0.0.1:10000/devstoreaccount1").unwrap();
        assert_eq!(
            join_url(&azurite, ["c", "a b", "ü.png"]).as_str(),
            "http://127.0.0.1:10000/devstoreaccount1/c/a%20b/%C3%BC.png"
        );
    }

    #[test]
    fn entra_id_needs_https_and_builds_without_the_network() {
        let err = AzureStorage::with_entra_id(
            "http://127.0.0.1:10001/devstoreaccount1",
            "http://127.0.0.1:10000/devstoreaccount1",
            EntraCredential::ManagedIdentity { client_id: None },
            AzureOptions::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("https"), "{err}");
        assert!(
            AzureStorage::with_entra_id_for_account(
                "Not-A-Name",
                "core.windows.net",
                EntraCredential::WorkloadIdentity,
                AzureOptions::default()
            )
            .is_err()
        );
        let storage = AzureStorage::with_entra_id_for_account(
            "acct",
            "core.windows.net",
            EntraCredential::ManagedIdentity {
                client_id: Some("00000000-0000-0000-0000-000000000000".into()),
            },
            AzureOptions::default(),
        )
        .unwrap();
        assert!(format!("{storage:?}").contains("entra-id"));
    }

    #[test]
    fn debug_shows_endpoints_not_secrets() {
        let storage = AzureStorage::from_connection_string(
            "UseDevelopmentStorage=true",
            AzureOptions::default(),
        )
        .unwrap();
        let shown = format!("{storage:?}");
        assert!(shown.contains("127.0.0.1:10001"), "{shown}");
        assert!(!shown.contains("Eby8"), "{shown}");
    }
}
