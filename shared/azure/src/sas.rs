//! Account shared access signatures, signed here from the account key.
//!
//! The 1.x SDK crates authorise with an Entra ID token or a SAS in the URL, never with the
//! account key, so for a connection string with a key Tessera signs an account SAS itself:
//! HMAC-SHA256 over the documented string-to-sign (version 2020-12-06 and later, with the
//! encryption-scope line), keyed with the decoded account key. A pipeline policy adds the SAS to
//! every request and signs a fresh one well before the current one expires.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use azure_core::http::Context;
use azure_core::http::Request;
use azure_core::http::policies::{Policy, PolicyResult};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::connection::{AccountKey, SharedCredential};

/// The service version the SAS is signed for.
pub const SAS_VERSION: &str = "2022-11-02";
/// Every permission Tessera needs, in the order the service documents: read, write, delete,
/// list, add, create, update, process.
const PERMISSIONS: &str = "rwdlacup";
/// Blob and queue services.
const SERVICES: &str = "bq";
/// Service, container (queue) and object level.
const RESOURCE_TYPES: &str = "sco";
/// How long a signed SAS lives, and how long before its end a new one is signed.
const LIFETIME: Duration = Duration::from_secs(8 * 3600);
const RENEW_BEFORE: Duration = Duration::from_secs(3600);
/// Start a little in the past: the service's clock may be behind ours.
pub(crate) const CLOCK_SKEW: Duration = Duration::from_secs(15 * 60);

/// The fields of an account SAS (the `s*` query parameters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountSasFields {
    pub version: String,
    pub services: String,
    pub resource_types: String,
    pub permissions: String,
    pub start: Option<OffsetDateTime>,
    pub expiry: OffsetDateTime,
    pub ip: Option<String>,
    /// `https` or `https,http`.
    pub protocol: Option<String>,
    pub encryption_scope: Option<String>,
}

impl AccountSasFields {
    /// Tessera's account SAS: blob and queue services, every level, every permission it uses.
    pub fn tessera(start: OffsetDateTime, expiry: OffsetDateTime, https_only: bool) -> Self {
        Self {
            version: SAS_VERSION.into(),
            services: SERVICES.into(),
            resource_types: RESOURCE_TYPES.into(),
            permissions: PERMISSIONS.into(),
            start: Some(start),
            expiry,
            ip: None,
            protocol: Some(if https_only { "https" } else { "https,http" }.into()),
            encryption_scope: None,
        }
    }

    /// The string-to-sign of an account SAS, version 2020-12-06 and later.
    pub fn string_to_sign(&self, account: &str) -> String {
        let start = self.start.map(sas_time).unwrap_or_default();
        [
            account,
            &self.permissions,
            &self.services,
            &self.resource_types,
            &start,
            &sas_time(self.expiry),
            self.ip.as_deref().unwrap_or(""),
            self.protocol.as_deref().unwrap_or(""),
            &self.version,
            self.encryption_scope.as_deref().unwrap_or(""),
            "",
        ]
        .join("\n")
    }

    /// Signs with the account key; returns the query parameters of the SAS, unencoded.
    pub fn sign(&self, key: &AccountKey) -> Vec<(&'static str, String)> {
        let signature = sign(key.bytes(), &self.string_to_sign(&key.account));
        let mut pairs = vec![
            ("sv", self.version.clone()),
            ("ss", self.services.clone()),
            ("srt", self.resource_types.clone()),
            ("sp", self.permissions.clone()),
        ];
        if let Some(start) = self.start {
            pairs.push(("st", sas_time(start)));
        }
        pairs.push(("se", sas_time(self.expiry)));
        if let Some(ip) = &self.ip {
            pairs.push(("sip", ip.clone()));
        }
        if let Some(protocol) = &self.protocol {
            pairs.push(("spr", protocol.clone()));
        }
        if let Some(scope) = &self.encryption_scope {
            pairs.push(("ses", scope.clone()));
        }
        pairs.push(("sig", signature));
        pairs
    }

    /// The SAS as a query string (what a `?` would precede).
    pub fn to_query(&self, key: &AccountKey) -> String {
        url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(self.sign(key))
            .finish()
    }
}

/// A service SAS that reads one blob and nothing else (`sr=b`, `sp=r`), for a link handed to a
/// browser: it cannot be widened to other blobs, and it ends at `expiry`. `disposition` becomes
/// the response's `Content-Disposition` (the download's file name). Query parameters, unencoded.
pub fn blob_read_sas(
    key: &AccountKey,
    container: &str,
    blob: &str,
    (start, expiry): (OffsetDateTime, OffsetDateTime),
    https_only: bool,
    disposition: Option<&str>,
) -> Vec<(&'static str, String)> {
    let (start, expiry) = (sas_time(start), sas_time(expiry));
    let protocol = if https_only { "https" } else { "https,http" };
    let disposition = disposition.unwrap_or("");
    // Version 2020-12-06 and later: permissions, start, expiry, canonical resource, identifier,
    // IP, protocol, version, resource, snapshot time, encryption scope, then the five
    // response-header overrides (cache control, disposition, encoding, language, type).
    let to_sign = [
        "r",
        &start,
        &expiry,
        &format!("/blob/{}/{container}/{blob}", key.account),
        "",
        "",
        protocol,
        SAS_VERSION,
        "b",
        "",
        "",
        "",
        disposition,
        "",
        "",
        "",
    ]
    .join("\n");
    let mut pairs = vec![
        ("sv", SAS_VERSION.to_string()),
        ("sr", "b".to_string()),
        ("sp", "r".to_string()),
        ("st", start),
        ("se", expiry),
        ("spr", protocol.to_string()),
    ];
    if !disposition.is_empty() {
        pairs.push(("rscd", disposition.to_string()));
    }
    pairs.push(("sig", sign(key.bytes(), &to_sign)));
    pairs
}

/// HMAC-SHA256 of `message` under `key`, base64.
pub fn sign(key: &[u8], message: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(message.as_bytes());
    STANDARD.encode(mac.finalize().into_bytes())
}

/// `YYYY-MM-DDThh:mm:ssZ`, the form SAS times take.
fn sas_time(t: OffsetDateTime) -> String {
    let t = t
        .to_offset(time::UtcOffset::UTC)
        .replace_nanosecond(0)
        .expect("zero nanoseconds are valid");
    t.format(&Rfc3339).expect("a UTC time formats as RFC 3339")
}

/// Adds a SAS to every request (once per call, before retries).
pub(crate) struct SasPolicy {
    source: SasSource,
}

/// Signed SAS query parameters, shared by the requests that use them.
type SasPairs = Arc<Vec<(&'static str, String)>>;

enum SasSource {
    Fixed(Vec<(String, String)>),
    Signed {
        key: AccountKey,
        https_only: bool,
        current: Mutex<Option<(SasPairs, OffsetDateTime)>>,
    },
}

impl fmt::Debug for SasPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            SasSource::Fixed(_) => f.write_str("SasPolicy(fixed, <redacted>)"),
            SasSource::Signed { key, .. } => {
                write!(f, "SasPolicy(signed for {:?}, <redacted>)", key.account)
            }
        }
    }
}

impl SasPolicy {
    pub(crate) fn new(credential: &SharedCredential, https_only: bool) -> Self {
        let source = match credential {
            SharedCredential::Sas(token) => SasSource::Fixed(
                url::form_urlencoded::parse(token.as_bytes())
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect(),
            ),
            SharedCredential::Key(key) => SasSource::Signed {
                key: key.clone(),
                https_only,
                current: Mutex::new(None),
            },
        };
        Self { source }
    }

    fn apply(&self, url: &mut url::Url) {
        match &self.source {
            SasSource::Fixed(pairs) => {
                url.query_pairs_mut().extend_pairs(pairs);
            }
            SasSource::Signed {
                key,
                https_only,
                current,
            } => {
                let now = OffsetDateTime::now_utc();
                let pairs = {
                    let mut current = current.lock().expect("SAS cache lock poisoned");
                    match &*current {
                        Some((pairs, expiry)) if *expiry - RENEW_BEFORE > now => pairs.clone(),
                        _ => {
                            let expiry = now + LIFETIME;
                            let fields =
                                AccountSasFields::tessera(now - CLOCK_SKEW, expiry, *https_only);
                            let pairs = Arc::new(fields.sign(key));
                            *current = Some((pairs.clone(), expiry));
                            pairs
                        }
                    }
                };
                url.query_pairs_mut()
                    .extend_pairs(pairs.iter().map(|(k, v)| (*k, v.as_str())));
            }
        }
    }
}

#[async_trait]
impl Policy for SasPolicy {
    async fn send(
        &self,
        ctx: &Context,
        request: &mut Request,
        next: &[Arc<dyn Policy>],
    ) -> PolicyResult {
        self.apply(request.url_mut());
        next[0].send(ctx, request, &next[1..]).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::{DEV_ACCOUNT_KEY, DEV_ACCOUNT_NAME};
    use time::macros::datetime;

    #[test]
    fn hmac_matches_rfc_4231_case_2() {
        // RFC 4231, test case 2: key "Jefe", data "what do ya want for nothing?".
        let sig = sign(b"Jefe", "what do ya want for nothing?");
        let hex: String = STANDARD
            .decode(sig)
            .unwrap()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            hex,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn string_to_sign_has_the_documented_lines() {
        let fields = AccountSasFields::tessera(
            datetime!(2024-01-01 00:00:00 UTC),
            datetime!(2024-01-02 00:00:00 UTC),
            true,
        );
        assert_eq!(
            fields.string_to_sign("acct"),
            "acct\nrwdlacup\nbq\nsco\n2024-01-01T00:00:00Z\n2024-01-02T00:00:00Z\n\nhttps\n2022-11-02\n\n"
        );
    }

    /// The same SAS as the Python SDK (azure-storage-queue 12.18.1) signs with
    /// `generate_account_sas(DEV_ACCOUNT_NAME, DEV_ACCOUNT_KEY, ResourceTypes(service=True,
    /// container=True, object=True), AccountSasPermissions(read, add, create, write, delete,
    /// list, update, process), expiry, start, services="bq", protocol="https,http")`, with the
    /// version it signs for.
    #[test]
    fn signature_matches_the_python_sdk() {
        let key = AccountKey::new(DEV_ACCOUNT_NAME, DEV_ACCOUNT_KEY).unwrap();
        let fields = AccountSasFields {
            version: PYTHON_SV.into(),
            ..AccountSasFields::tessera(
                datetime!(2024-01-01 00:00:00 UTC),
                datetime!(2030-01-01 00:00:00 UTC),
                false,
            )
        };
        let pairs = fields.sign(&key);
        let sig = &pairs.iter().find(|(k, _)| *k == "sig").unwrap().1;
        assert_eq!(sig, PYTHON_SIG);
    }

    const PYTHON_SV: &str = "2026-10-06";
    const PYTHON_SIG: &str = "j5JJ9mshKI2yTwDNul24ZFfrBLOhAHmg2cjzbuYJtdc=";

    #[test]
    fn fixed_sas_is_appended_as_given() {
        let policy = SasPolicy::new(
            &SharedCredential::Sas("sv=2022-11-02&sig=a%2Bb%3D".into()),
            true,
        );
        let mut url =
            url::Url::parse("https://a.queue.core.windows.net/q/messages?numofmessages=2").unwrap();
        policy.apply(&mut url);
        let pairs: Vec<(String, String)> = url.query_pairs().into_owned().collect();
        assert!(pairs.contains(&("numofmessages".into(), "2".into())));
        assert!(pairs.contains(&("sig".into(), "a+b=".into())));
        assert!(!format!("{policy:?}").contains("a%2Bb"));
    }

    #[test]
    fn signed_sas_is_reused_until_near_expiry() {
        let key = AccountKey::new(DEV_ACCOUNT_NAME, DEV_ACCOUNT_KEY).unwrap();
        let policy = SasPolicy::new(&SharedCredential::Key(key), false);
        let mut a = url::Url::parse("http://127.0.0.1:10001/devstoreaccount1/q").unwrap();
        let mut b = a.clone();
        policy.apply(&mut a);
        policy.apply(&mut b);
        assert_eq!(a, b);
        let pairs: Vec<(String, String)> = a.query_pairs().into_owned().collect();
        let names: Vec<&str> = pairs.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["sv", "ss", "srt", "sp", "st", "se", "spr", "sig"]);
        assert!(!format!("{policy:?}").contains("Eby8"));
    }
}
