//! Azure Storage connection strings: where the account's endpoints are and how to sign for them.
//!
//! Accepts the standard keys (`DefaultEndpointsProtocol`, `AccountName`, `AccountKey`,
//! `EndpointSuffix`, `BlobEndpoint`, `QueueEndpoint`, `SharedAccessSignature`) and
//! `UseDevelopmentStorage=true` for a local Azurite on its default ports. Keys and signatures are
//! kept out of every `Debug` and error message.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use url::Url;

use crate::error::AzureError;

/// Azurite's account: public, documented, and the same on every machine.
pub const DEV_ACCOUNT_NAME: &str = "devstoreaccount1";
/// Azurite's account key (documented by Microsoft; not a secret).
pub const DEV_ACCOUNT_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
const DEV_BLOB_ENDPOINT: &str = "http://127.0.0.1:10000/devstoreaccount1";
const DEV_QUEUE_ENDPOINT: &str = "http://127.0.0.1:10001/devstoreaccount1";

/// A storage account's shared key: the account's name and the decoded key bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct AccountKey {
    pub account: String,
    key: Vec<u8>,
}

impl AccountKey {
    /// Decodes a base64 account key as the portal shows it.
    pub fn new(account: impl Into<String>, key_base64: &str) -> Result<Self, AzureError> {
        let key = STANDARD
            .decode(key_base64.trim())
            .map_err(|_| AzureError::Config("AccountKey is not valid base64".into()))?;
        if key.is_empty() {
            return Err(AzureError::Config("AccountKey is empty".into()));
        }
        Ok(Self {
            account: account.into(),
            key,
        })
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.key
    }
}

impl fmt::Debug for AccountKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AccountKey")
            .field("account", &self.account)
            .field("key", &"<redacted>")
            .finish()
    }
}

/// How requests are authorised when the connection string says it.
#[derive(Clone, PartialEq, Eq)]
pub enum SharedCredential {
    /// Tessera signs an account SAS from the key.
    Key(AccountKey),
    /// A SAS token given whole (without its leading `?`).
    Sas(String),
}

impl fmt::Debug for SharedCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SharedCredential::Key(key) => f.debug_tuple("Key").field(key).finish(),
            SharedCredential::Sas(_) => f.write_str("Sas(<redacted>)"),
        }
    }
}

/// What a connection string says.
#[derive(Clone, PartialEq, Eq)]
pub struct ConnectionString {
    pub account: Option<String>,
    /// The blob service's URL, without a trailing `/`.
    pub blob_endpoint: Url,
    /// The queue service's URL, without a trailing `/`.
    pub queue_endpoint: Url,
    pub credential: SharedCredential,
}

impl fmt::Debug for ConnectionString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionString")
            .field("account", &self.account)
            .field("blob_endpoint", &self.blob_endpoint.as_str())
            .field("queue_endpoint", &self.queue_endpoint.as_str())
            .field("credential", &self.credential)
            .finish()
    }
}

impl ConnectionString {
    /// Parses a connection string. Error messages name keys, never values.
    pub fn parse(s: &str) -> Result<Self, AzureError> {
        let mut protocol = None;
        let mut account = None;
        let mut key = None;
        let mut suffix = None;
        let mut blob = None;
        let mut queue = None;
        let mut sas = None;
        let mut dev = false;
        for part in s.split(';').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, value) = part.split_once('=').ok_or_else(|| {
                AzureError::Config(
                    "connection string: a part has no '=' (expected Key=Value)".into(),
                )
            })?;
            let value = value.trim().to_owned();
            match name.trim().to_ascii_lowercase().as_str() {
                "usedevelopmentstorage" => dev = value.eq_ignore_ascii_case("true"),
                "defaultendpointsprotocol" => protocol = Some(value),
                "accountname" => account = Some(value),
                "accountkey" => key = Some(value),
                "endpointsuffix" => suffix = Some(value),
                "blobendpoint" => blob = Some(value),
                "queueendpoint" => queue = Some(value),
                "sharedaccesssignature" => sas = Some(value),
                // Endpoints of services Tessera does not use.
                "tableendpoint" | "fileendpoint" | "developmentstorageproxyuri" => {}
                other => {
                    return Err(AzureError::Config(format!(
                        "connection string: unknown key {other:?}"
                    )));
                }
            }
        }
        if dev {
            let key = AccountKey::new(DEV_ACCOUNT_NAME, DEV_ACCOUNT_KEY)?;
            return Ok(Self {
                account: Some(DEV_ACCOUNT_NAME.into()),
                blob_endpoint: service_url(DEV_BLOB_ENDPOINT, "blob")?,
                queue_endpoint: service_url(DEV_QUEUE_ENDPOINT, "queue")?,
                credential: SharedCredential::Key(key),
            });
        }
        let protocol = protocol.unwrap_or_else(|| "https".into());
        if protocol != "https" && protocol != "http" {
            return Err(AzureError::Config(
                "connection string: DefaultEndpointsProtocol must be https or http".into(),
            ));
        }
        let suffix = suffix.unwrap_or_else(|| "core.windows.net".into());
        let derived = |service: &str| -> Result<Url, AzureError> {
            let account = account.as_deref().ok_or_else(|| {
                AzureError::Config(format!(
                    "connection string: AccountName or {service}Endpoint is needed"
                ))
            })?;
            service_url(
                &format!("{protocol}://{account}.{}.{suffix}", service.to_lowercase()),
                service,
            )
        };
        let blob_endpoint = match blob {
            Some(url) => service_url(&url, "Blob")?,
            None => derived("Blob")?,
        };
        let queue_endpoint = match queue {
            Some(url) => service_url(&url, "Queue")?,
            None => derived("Queue")?,
        };
        let credential = match (key, sas) {
            (Some(key), _) => {
                let account = account.clone().ok_or_else(|| {
                    AzureError::Config("connection string: AccountKey needs AccountName".into())
                })?;
                SharedCredential::Key(AccountKey::new(account, &key)?)
            }
            (None, Some(sas)) => SharedCredential::Sas(sas.trim_start_matches('?').to_owned()),
            (None, None) => {
                return Err(AzureError::Config(
                    "connection string: AccountKey or SharedAccessSignature is needed \
                     (for Entra ID use an account URL instead)"
                        .into(),
                ));
            }
        };
        Ok(Self {
            account,
            blob_endpoint,
            queue_endpoint,
            credential,
        })
    }
}

/// Parses a service URL and drops any trailing `/` (the SDK's clients append path segments).
pub(crate) fn service_url(s: &str, what: &str) -> Result<Url, AzureError> {
    let mut url = Url::parse(s.trim())
        .map_err(|e| AzureError::Config(format!("{what} endpoint is not a URL: {e}")))?;
    if url.cannot_be_a_base() || !matches!(url.scheme(), "http" | "https") {
        return Err(AzureError::Config(format!(
            "{what} endpoint must be an http(s) URL"
        )));
    }
    if url.query().is_some() {
        return Err(AzureError::Config(format!(
            "{what} endpoint must not carry a query (give a SAS as SharedAccessSignature)"
        )));
    }
    let path = url.path().trim_end_matches('/').to_owned();
    url.set_path(&path);
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn development_storage_is_azurite_on_its_default_ports() {
        let cs = ConnectionString::parse("UseDevelopmentStorage=true").unwrap();
        assert_eq!(
            endpoints(&cs),
            (
                "http://127.0.0.1:10000/devstoreaccount1",
                "http://127.0.0.1:10001/devstoreaccount1"
            )
        );
        match &cs.credential {
            SharedCredential::Key(k) => {
                assert_eq!(k.account, "devstoreaccount1");
                assert_eq!(k.bytes().len(), 64);
            }
            other => panic!("expected a key, got {other:?}"),
        }
    }

    /// The blob and queue endpoints, as text.
    fn endpoints(cs: &ConnectionString) -> (&str, &str) {
        (cs.blob_endpoint.as_str(), cs.queue_endpoint.as_str())
    }

    #[test]
    fn account_key_string_derives_endpoints_from_the_suffix() {
        let cs = ConnectionString::parse(
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5a2V5;EndpointSuffix=core.chinacloudapi.cn",
        )
        .unwrap();
        assert_eq!(
            endpoints(&cs),
            (
                "https://acct.blob.core.chinacloudapi.cn/",
                "https://acct.queue.core.chinacloudapi.cn/"
            )
        );
        assert_eq!(cs.account.as_deref(), Some("acct"));
    }

    #[test]
    fn explicit_endpoints_lose_their_trailing_slash() {
        let cs = ConnectionString::parse(
            "AccountName=devstoreaccount1;AccountKey=a2V5;\
             BlobEndpoint=http://127.0.0.1:20000/devstoreaccount1/;\
             QueueEndpoint=http://127.0.0.1:20001/devstoreaccount1/;",
        )
        .unwrap();
        assert_eq!(
            endpoints(&cs),
            (
                "http://127.0.0.1:20000/devstoreaccount1",
                "http://127.0.0.1:20001/devstoreaccount1"
            )
        );
    }

    #[test]
    fn sas_string_keeps_the_token_and_never_shows_it() {
        let cs = ConnectionString::parse(
            "BlobEndpoint=https://a.blob.core.windows.net;QueueEndpoint=https://a.queue.core.windows.net;\
             SharedAccessSignature=?sv=2022-11-02&ss=bq&sig=c2VjcmV0c2lnbmF0dXJl%3D",
        )
        .unwrap();
        assert_eq!(
            cs.credential,
            SharedCredential::Sas("sv=2022-11-02&ss=bq&sig=c2VjcmV0c2lnbmF0dXJl%3D".into())
        );
        let shown = format!("{cs:?}");
        assert!(!shown.contains("c2VjcmV0"), "{shown}");
    }

    #[test]
    fn debug_never_shows_the_key() {
        let cs = ConnectionString::parse("UseDevelopmentStorage=true").unwrap();
        let shown = format!("{cs:?}");
        assert!(!shown.contains("Eby8vdM0"), "{shown}");
        assert!(shown.contains("redacted"), "{shown}");
    }

    #[test]
    fn errors_name_what_is_missing_without_values() {
        let err = ConnectionString::parse("AccountName=acct").unwrap_err();
        assert!(
            err.to_string()
                .contains("AccountKey or SharedAccessSignature")
        );
        let err = ConnectionString::parse("AccountName=acct;AccountKey=!!notbase64!!").unwrap_err();
        assert!(!err.to_string().contains("notbase64"), "{err}");
        assert!(ConnectionString::parse("AccountKey=a2V5").is_err());
        assert!(ConnectionString::parse("Bogus=1;UseDevelopmentStorage=true").is_err());
    }
}
