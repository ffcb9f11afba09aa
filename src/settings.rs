//! Layered, typed configuration: defaults, then an optional TOML file, then `TESSERA_*`
//! environment variables. One [`Settings`] tree is built at start-up and passed down explicitly.
//!
//! Every key has an environment variable: `TESSERA_<SECTION>__<KEY>` (double underscore between
//! levels, e.g. `TESSERA_STORAGE__DATA_DIR`). The documented short names `TESSERA_STORAGE`,
//! `TESSERA_DATA` and `TESSERA_AZURE_CONNECTION_STRING` are accepted too. `tessera.sample.toml`
//! names every key with its default.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    pub storage: StorageSettings,
    pub web: tessera_web::WebSettings,
    pub controller: tessera_workers::ControllerSettings,
    pub processor: tessera_workers::ProcessorSettings,
    pub jobs: tessera_workers::JobsSettings,
    pub retention: tessera_shared::lifecycle::RetentionSettings,
    pub limits: tessera_shared::spec::JobLimits,
    pub ops: OpsSettings,
    pub nudge: NudgeConfig,
    pub queues: QueueConfig,
}

/// How messages are written on the queues.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct QueueConfig {
    /// `base64` (the default: what Azure Functions queue triggers and output bindings use on
    /// their default settings) or `json`. Readers take both.
    pub encoding: tessera_shared::messages::Encoding,
    /// A queue (e.g. `jobevents`, under the deployment's prefix) that hears of every job's end
    /// as a CloudEvents event, for consumers outside Tessera; empty: none. Nothing outside
    /// Tessera reads `imageresponse`.
    pub job_events: String,
}

/// The operations endpoint of `tessera controller` and `tessera processor`: `/healthz`,
/// `/readyz` and `/metrics` (the web roles serve them on their web port).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct OpsSettings {
    /// Address to listen on (`0.0.0.0` in a container or pod, so probes reach it).
    pub bind: String,
    /// Port to listen on; 0 picks a free one and prints it. The default gives way to a free
    /// port when taken (another role on this machine); a port set explicitly does not.
    pub port: u16,
    /// Whether `port` was set explicitly (flag, file or environment).
    #[serde(skip)]
    pub port_fixed: bool,
    /// Queue depths in `/metrics` (reported by the web roles) are read from storage at most
    /// this often (each is a billed metadata read).
    pub depth_interval_secs: u64,
    /// A passed readiness check (two storage transactions) is trusted this long; 0 checks on
    /// every probe.
    pub readiness_interval_secs: u64,
}

impl Default for OpsSettings {
    fn default() -> Self {
        OpsSettings {
            bind: "127.0.0.1".into(),
            port: 9090,
            port_fixed: false,
            depth_interval_secs: 60,
            readiness_interval_secs: 60,
        }
    }
}

/// Where a process receives wake-up nudges from other processes and hosts (UDP).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct NudgeConfig {
    /// The address registered for other processes to nudge; empty: the address of the network
    /// interface that reaches storage (loopback for the embedded backend and for `serve`).
    pub advertise: String,
    /// The address the nudge socket binds to; empty: the advertised address.
    pub bind: String,
    /// The UDP port; 0 picks a free one. Fix it where a firewall must let nudges in.
    pub port: u16,
    /// Datagrams wake a queue's listeners at most once per this many milliseconds.
    pub min_wake_interval_ms: u64,
}

impl Default for NudgeConfig {
    fn default() -> Self {
        NudgeConfig {
            advertise: String::new(),
            bind: String::new(),
            port: 0,
            min_wake_interval_ms: 250,
        }
    }
}

#[derive(Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct StorageSettings {
    /// `embedded` (the default: local disk, no server) or `azure`.
    pub backend: Backend,
    /// Where the embedded backend keeps its queues and blobs.
    pub data_dir: PathBuf,
    /// An Azure Storage connection string (`UseDevelopmentStorage=true` for a local Azurite).
    /// A secret: never logged.
    pub azure_connection_string: String,
    /// What an acknowledged write to the embedded backend survives: `process-crash` (data is
    /// handed to the operating system) or `power-loss` (data is fsynced; SQLite's synchronous
    /// mode FULL).
    pub durability: DurabilitySetting,
    /// Free space the embedded backend keeps on its disk: with less, submissions answer 507 and
    /// `/readyz` says not ready, until space returns.
    pub min_free_bytes: u64,
    /// Put before every queue and container name (`dev-` gives `dev-imagerequest`), so one
    /// account or data directory holds several environments. Empty: none.
    pub name_prefix: String,
    /// How the azure backend authenticates: `connection-string` (a key or SAS in
    /// `azure_connection_string`), or an Entra ID identity on `azure_account`:
    /// `workload-identity`, `managed-identity` or `developer` (the Azure CLI's login).
    pub azure_credential: AzureCredentialSetting,
    /// The storage account's name, for an Entra ID credential (no key, no connection string).
    pub azure_account: String,
    /// The account's endpoints are `https://<account>.queue.<suffix>` and `.blob.<suffix>`.
    pub azure_endpoint_suffix: String,
    /// A user-assigned managed identity's client id; empty: the system-assigned identity.
    pub azure_client_id: String,
}

/// How the azure backend authenticates.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum AzureCredentialSetting {
    #[default]
    ConnectionString,
    WorkloadIdentity,
    ManagedIdentity,
    Developer,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum DurabilitySetting {
    #[default]
    ProcessCrash,
    PowerLoss,
}

impl From<DurabilitySetting> for tessera_shared::storage::embedded::Durability {
    fn from(d: DurabilitySetting) -> Self {
        match d {
            DurabilitySetting::ProcessCrash => Self::ProcessCrash,
            DurabilitySetting::PowerLoss => Self::PowerLoss,
        }
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    Embedded,
    Azure,
}

impl Default for StorageSettings {
    fn default() -> Self {
        StorageSettings {
            backend: Backend::Embedded,
            data_dir: PathBuf::from("./tessera-data"),
            azure_connection_string: String::new(),
            durability: DurabilitySetting::default(),
            min_free_bytes: 256 << 20,
            name_prefix: String::new(),
            azure_credential: AzureCredentialSetting::default(),
            azure_account: String::new(),
            azure_endpoint_suffix: "core.windows.net".into(),
            azure_client_id: String::new(),
        }
    }
}

impl StorageSettings {
    /// One way in to Azure, completely configured.
    fn check_azure(&self) -> anyhow::Result<()> {
        let has_string = !self.azure_connection_string.trim().is_empty();
        match self.azure_credential {
            AzureCredentialSetting::ConnectionString if !has_string => bail!(
                "storage backend is azure but no connection string is configured: set \
                 TESSERA_AZURE_CONNECTION_STRING (UseDevelopmentStorage=true for a local Azurite), \
                 or storage.azure_credential and storage.azure_account for Entra ID"
            ),
            AzureCredentialSetting::ConnectionString => Ok(()),
            _ if has_string => bail!(
                "storage.azure_credential is {:?} but a connection string is configured too: \
                 choose one (unset TESSERA_AZURE_CONNECTION_STRING for Entra ID)",
                self.azure_credential
            ),
            _ => {
                tessera_azure::check_account_name(&self.azure_account).map_err(|e| {
                    anyhow::anyhow!("storage.azure_account, for an Entra ID credential: {e}")
                })?;
                let suffix = &self.azure_endpoint_suffix;
                if suffix.is_empty()
                    || !suffix
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
                {
                    bail!(
                        "storage.azure_endpoint_suffix must be a DNS suffix such as core.windows.net"
                    );
                }
                Ok(())
            }
        }
    }
}

impl std::fmt::Debug for StorageSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secret = if self.azure_connection_string.is_empty() {
            ""
        } else {
            "<redacted>"
        };
        f.debug_struct("StorageSettings")
            .field("backend", &self.backend)
            .field("data_dir", &self.data_dir)
            .field("azure_connection_string", &secret)
            .field("durability", &self.durability)
            .field("min_free_bytes", &self.min_free_bytes)
            .field("name_prefix", &self.name_prefix)
            .field("azure_credential", &self.azure_credential)
            .field("azure_account", &self.azure_account)
            .field("azure_endpoint_suffix", &self.azure_endpoint_suffix)
            .field("azure_client_id", &self.azure_client_id)
            .finish()
    }
}

/// Short environment names the design documents, and the key each one sets.
const ENV_ALIASES: &[(&str, &str)] = &[
    ("TESSERA_STORAGE", "storage.backend"),
    ("TESSERA_DATA", "storage.data_dir"),
    (
        "TESSERA_AZURE_CONNECTION_STRING",
        "storage.azure_connection_string",
    ),
];

impl Settings {
    /// The job events queue, if one is kept, with the address its events link to (the
    /// webhooks' `public_url`, else the web role's port on this host).
    pub fn job_events_queue(&self) -> Option<tessera_shared::platform::JobEventsQueue> {
        let queue = self.queues.job_events.trim();
        if queue.is_empty() {
            return None;
        }
        Some(tessera_shared::platform::JobEventsQueue {
            queue: queue.to_string(),
            public_url: self.public_url(),
        })
    }

    /// The service's address as the receivers of its events reach it, for a process other than
    /// the web role's (which knows the address it binds).
    pub fn public_url(&self) -> String {
        match self.web.webhooks.public_url.trim() {
            "" => format!("http://localhost:{}", self.web.port),
            url => url.to_string(),
        }
    }

    /// Defaults, then `file` if given, then the environment `env` (usually `std::env::vars()`).
    pub fn load(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> anyhow::Result<Settings> {
        let mut tree = toml::Table::try_from(Settings::default())?;
        // Keys the file or the environment set: a port set so is kept even when taken.
        let mut explicit = std::collections::BTreeSet::new();
        if let Some(path) = file {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read config file {}", path.display()))?;
            // toml's message quotes the offending line, which may hold a secret: say where
            // instead.
            let overlay: toml::Table = toml::from_str(&text).map_err(|e| {
                let at = e.span().map_or(String::new(), |span| {
                    let before = &text[..span.start.min(text.len())];
                    let line = before.matches('\n').count() + 1;
                    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                    format!(" at line {line}, column {column}")
                });
                anyhow::anyhow!(
                    "config file {} is not valid TOML{at}: {}",
                    path.display(),
                    e.message()
                )
            })?;
            collect_keys(&overlay, "", &mut explicit);
            merge(&mut tree, overlay);
        }
        for (name, value) in env {
            let Some(rest) = name.strip_prefix("TESSERA_") else {
                continue;
            };
            let key = match ENV_ALIASES.iter().find(|(alias, _)| *alias == name) {
                Some((_, key)) => key.to_string(),
                None if rest.contains("__") => rest.to_lowercase().replace("__", "."),
                // Other TESSERA_* variables (test switches, for example) are not settings.
                None => continue,
            };
            set_path(&mut tree, &key, &value)
                .with_context(|| format!("environment variable {name}"))?;
            explicit.insert(key);
        }
        let mut settings: Settings = toml::Value::Table(tree)
            .try_into()
            .context("invalid configuration")?;
        settings.validate()?;
        settings.web.port_fixed = explicit.contains("web.port");
        settings.ops.port_fixed = explicit.contains("ops.port");
        settings.controller.jobs = settings.jobs.clone();
        settings.controller.retention = settings.retention.clone();
        settings.web.retention = settings.retention.clone();
        settings.web.limits = settings.limits.clone();
        settings.controller.limits = settings.limits.clone();
        Ok(settings)
    }

    /// The settings as a TOML document, with the connection string and the API key redacted.
    pub fn to_toml_redacted(&self) -> anyhow::Result<String> {
        let mut shown = self.clone();
        if !shown.storage.azure_connection_string.is_empty() {
            shown.storage.azure_connection_string = "<redacted>".into();
        }
        let redacted = || tessera_web::web_settings::ApiKey::new("<redacted>");
        if shown.web.api_key.get().is_some() {
            shown.web.api_key = redacted();
        }
        if shown.web.webhooks.secret.get().is_some() {
            shown.web.webhooks.secret = redacted();
        }
        Ok(toml::to_string(&shown)?)
    }

    fn validate(&self) -> anyhow::Result<()> {
        if !self.storage.name_prefix.is_empty() {
            tessera_shared::storage::prefixed::check_prefix(&self.storage.name_prefix)
                .map_err(anyhow::Error::msg)?;
        }
        for (key, value) in [
            ("nudge.advertise", &self.nudge.advertise),
            ("nudge.bind", &self.nudge.bind),
            ("ops.bind", &self.ops.bind),
        ] {
            if !value.is_empty() && value.parse::<std::net::IpAddr>().is_err() {
                bail!("{key} must be an IP address, got {value:?}");
            }
        }
        let events = self.queues.job_events.trim();
        let taken = tessera_shared::messages::QueueName::ALL
            .iter()
            .any(|q| events == q.as_str() || events == q.poison());
        let well_formed = events.len() <= 40
            && events
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !events.starts_with('-');
        if !events.is_empty() && (taken || !well_formed || events.len() < 3) {
            bail!(
                "queues.job_events {events:?} must be a queue of its own: 3 to 40 lowercase \
                 letters, digits and hyphens (as \"jobevents\"), not a work queue"
            );
        }
        if self.jobs.gc_interval_secs == 0 {
            bail!("jobs.gc_interval_secs must be at least 1");
        }
        if self.jobs.stall_timeout_secs == 0 {
            bail!("jobs.stall_timeout_secs must be at least 1");
        }
        if self.ops.bind.is_empty() {
            bail!("ops.bind must be an IP address (0.0.0.0 for every interface)");
        }
        if self.storage.backend == Backend::Azure {
            self.storage.check_azure()?;
        }
        Ok(())
    }
}

/// The dotted paths of every value in `table` (`web.port`, ...).
fn collect_keys(table: &toml::Table, prefix: &str, out: &mut std::collections::BTreeSet<String>) {
    for (key, value) in table {
        let path = format!("{prefix}{key}");
        match value {
            toml::Value::Table(t) => collect_keys(t, &format!("{path}."), out),
            _ => {
                out.insert(path);
            }
        }
    }
}

fn merge(base: &mut toml::Table, overlay: toml::Table) {
    for (key, value) in overlay {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// Sets `a.b.c` in the tree from an environment string, typed after the default's value.
fn set_path(tree: &mut toml::Table, key: &str, raw: &str) -> anyhow::Result<()> {
    let mut parts: Vec<&str> = key.split('.').collect();
    let last = parts.pop().unwrap_or_default();
    let mut table = tree;
    for part in parts {
        table = match table.get_mut(part) {
            Some(toml::Value::Table(t)) => t,
            _ => bail!("unknown setting {key}"),
        };
    }
    let value = match table.get(last) {
        Some(toml::Value::Integer(_)) => toml::Value::Integer(
            raw.trim()
                .parse()
                .with_context(|| format!("{key} must be an integer, got {raw:?}"))?,
        ),
        Some(toml::Value::Float(_)) => toml::Value::Float(
            raw.trim()
                .parse()
                .with_context(|| format!("{key} must be a number, got {raw:?}"))?,
        ),
        Some(toml::Value::Boolean(_)) => toml::Value::Boolean(
            raw.trim()
                .parse()
                .with_context(|| format!("{key} must be true or false, got {raw:?}"))?,
        ),
        // A list: its items separated by commas (`10.0.0.1,10.0.0.2`); empty: none.
        Some(toml::Value::Array(_)) => toml::Value::Array(
            raw.split(',')
                .map(str::trim)
                .filter(|item| !item.is_empty())
                .map(|item| toml::Value::String(item.to_string()))
                .collect(),
        ),
        Some(_) => toml::Value::String(raw.to_string()),
        None => bail!("unknown setting {key}"),
    };
    table.insert(last.to_string(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_are_embedded() {
        let s = Settings::load(None, env(&[])).unwrap();
        assert_eq!(s.storage.backend, Backend::Embedded);
        assert_eq!(s.storage.data_dir, PathBuf::from("./tessera-data"));
    }

    #[test]
    fn file_then_environment() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tessera.toml");
        std::fs::write(&file, "[storage]\ndata_dir = \"/srv/a\"\n").unwrap();
        let s = Settings::load(Some(&file), env(&[])).unwrap();
        assert_eq!(s.storage.data_dir, PathBuf::from("/srv/a"));
        let s =
            Settings::load(Some(&file), env(&[("TESSERA_STORAGE__DATA_DIR", "/srv/b")])).unwrap();
        assert_eq!(s.storage.data_dir, PathBuf::from("/srv/b"));
        let s = Settings::load(Some(&file), env(&[("TESSERA_DATA", "/srv/c")])).unwrap();
        assert_eq!(s.storage.data_dir, PathBuf::from("/srv/c"));
    }

    #[test]
    fn a_config_file_with_a_toml_error_never_prints_a_secret() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tessera.toml");
        for text in [
            // An unterminated string, a missing `=`, a duplicate key.
            "[storage]\nazure_connection_string = \"AccountKey=c2VjcmV0LXZhbHVl\n",
            "[web]\napi_key \"c2VjcmV0LXZhbHVl\"\n",
            "[web]\napi_key = \"c2VjcmV0LXZhbHVl\"\napi_key = \"c2VjcmV0LXZhbHVl\"\n",
        ] {
            std::fs::write(&file, text).unwrap();
            let err = format!("{:#}", Settings::load(Some(&file), env(&[])).unwrap_err());
            assert!(!err.contains("c2VjcmV0"), "{err}");
            assert!(err.contains("not valid TOML at line "), "{err}");
        }
    }

    #[test]
    fn storage_durability_and_free_space_are_settings() {
        let s = Settings::load(
            None,
            env(&[
                ("TESSERA_STORAGE__DURABILITY", "power-loss"),
                ("TESSERA_STORAGE__MIN_FREE_BYTES", "1024"),
            ]),
        )
        .unwrap();
        assert_eq!(s.storage.durability, DurabilitySetting::PowerLoss);
        assert_eq!(s.storage.min_free_bytes, 1024);
        let err = Settings::load(None, env(&[("TESSERA_STORAGE__DURABILITY", "fsync")]));
        assert!(err.is_err());
    }

    #[test]
    fn list_settings_come_from_the_environment_separated_by_commas() {
        let s = Settings::load(
            None,
            env(&[
                (
                    "TESSERA_WEB__TRUSTED_PROXIES",
                    "10.0.0.1, 10.0.0.0/8, fd00::/8",
                ),
                ("TESSERA_WEB__WEBHOOKS__ALLOW", "hooks.example.com:443"),
            ]),
        )
        .unwrap();
        assert_eq!(s.web.trusted_proxies.len(), 3);
        assert!(s.web.trusted_proxies[1].contains(&"10.200.3.4".parse().unwrap()));
        assert_eq!(s.web.webhooks.allow, vec!["hooks.example.com:443"]);
        let err = Settings::load(None, env(&[("TESSERA_WEB__TRUSTED_PROXIES", "nonsense")]));
        assert!(err.is_err());
    }

    #[test]
    fn the_printed_configuration_shows_no_secret() {
        let s = Settings::load(
            None,
            env(&[
                ("TESSERA_WEB__API_KEY", "key-c2VjcmV0"),
                ("TESSERA_WEB__WEBHOOKS__SECRET", "hook-c2VjcmV0"),
            ]),
        )
        .unwrap();
        let shown = s.to_toml_redacted().unwrap();
        assert!(!shown.contains("c2VjcmV0"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }

    #[test]
    fn azure_without_connection_string_fails_fast() {
        let err = Settings::load(None, env(&[("TESSERA_STORAGE", "azure")])).unwrap_err();
        assert!(
            format!("{err:#}").contains("TESSERA_AZURE_CONNECTION_STRING"),
            "{err:#}"
        );
        let s = Settings::load(
            None,
            env(&[
                ("TESSERA_STORAGE", "azure"),
                ("TESSERA_AZURE_CONNECTION_STRING", "AccountKey=c2VjcmV0"),
            ]),
        )
        .unwrap();
        assert!(
            !format!("{s:?}").contains("c2VjcmV0"),
            "secrets are redacted"
        );
    }

    #[test]
    fn entra_id_takes_an_account_name_and_no_connection_string() {
        let s = Settings::load(
            None,
            env(&[
                ("TESSERA_STORAGE", "azure"),
                ("TESSERA_STORAGE__AZURE_CREDENTIAL", "workload-identity"),
                ("TESSERA_STORAGE__AZURE_ACCOUNT", "tesseraprod"),
            ]),
        )
        .unwrap();
        assert_eq!(
            s.storage.azure_credential,
            AzureCredentialSetting::WorkloadIdentity
        );
        let no_name = Settings::load(
            None,
            env(&[
                ("TESSERA_STORAGE", "azure"),
                ("TESSERA_STORAGE__AZURE_CREDENTIAL", "managed-identity"),
            ]),
        )
        .unwrap_err();
        assert!(
            format!("{no_name:#}").contains("storage.azure_account"),
            "{no_name:#}"
        );
        let both = Settings::load(
            None,
            env(&[
                ("TESSERA_STORAGE", "azure"),
                ("TESSERA_STORAGE__AZURE_CREDENTIAL", "managed-identity"),
                ("TESSERA_STORAGE__AZURE_ACCOUNT", "tesseraprod"),
                (
                    "TESSERA_AZURE_CONNECTION_STRING",
                    "UseDevelopmentStorage=true",
                ),
            ]),
        )
        .unwrap_err();
        assert!(format!("{both:#}").contains("choose one"), "{both:#}");
        assert!(
            Settings::load(
                None,
                env(&[("TESSERA_STORAGE__AZURE_CREDENTIAL", "password")])
            )
            .is_err()
        );
    }

    #[test]
    fn ports_set_in_a_file_or_the_environment_are_fixed_and_defaults_are_not() {
        let s = Settings::load(None, env(&[])).unwrap();
        assert!(!s.web.port_fixed && !s.ops.port_fixed);
        let s = Settings::load(None, env(&[("TESSERA_OPS__PORT", "9090")])).unwrap();
        assert!(s.ops.port_fixed && !s.web.port_fixed);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tessera.toml");
        std::fs::write(&file, "[web]\nport = 8080\n").unwrap();
        let s = Settings::load(Some(&file), env(&[])).unwrap();
        assert!(s.web.port_fixed && !s.ops.port_fixed);
    }

    #[test]
    fn the_web_role_and_the_controller_read_the_same_job_limits() {
        let s = Settings::load(
            None,
            env(&[("TESSERA_LIMITS__MAX_OUTPUT_PIXELS", "4294967296")]),
        )
        .unwrap();
        assert_eq!(s.web.limits.max_output_pixels, 1 << 32);
        assert_eq!(s.controller.limits, s.web.limits);
        assert_eq!(s.limits, s.web.limits);
    }

    #[test]
    fn a_name_prefix_and_an_encoding_are_read_and_checked() {
        let s = Settings::load(
            None,
            env(&[
                ("TESSERA_STORAGE__NAME_PREFIX", "dev-"),
                ("TESSERA_QUEUES__ENCODING", "json"),
            ]),
        )
        .unwrap();
        assert_eq!(s.storage.name_prefix, "dev-");
        assert_eq!(s.queues.encoding, tessera_shared::messages::Encoding::Json);
        let err = Settings::load(None, env(&[("TESSERA_STORAGE__NAME_PREFIX", "Dev_")]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("name_prefix"), "{err}");
        assert!(Settings::load(None, env(&[("TESSERA_QUEUES__ENCODING", "xml")])).is_err());
        let s = Settings::load(None, env(&[("TESSERA_QUEUES__JOB_EVENTS", "jobevents")])).unwrap();
        assert_eq!(s.job_events_queue().unwrap().queue, "jobevents");
        assert!(Settings::default().job_events_queue().is_none());
        for taken in ["imageresponse", "imageresponse-poison", "Job_Events", "x"] {
            let env = env(&[("TESSERA_QUEUES__JOB_EVENTS", taken)]);
            assert!(Settings::load(None, env).is_err(), "{taken}");
        }
    }

    #[test]
    fn sample_config_names_every_key_with_its_default() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tessera.sample.toml");
        let sample: toml::Table = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let defaults = toml::Table::try_from(Settings::default()).unwrap();
        assert_eq!(
            sample, defaults,
            "tessera.sample.toml and Settings::default() differ"
        );
    }

    #[test]
    fn bad_values_and_unknown_keys_are_errors() {
        assert!(Settings::load(None, env(&[("TESSERA_STORAGE", "floppy")])).is_err());
        assert!(Settings::load(None, env(&[("TESSERA_STORAGE__NOPE", "1")])).is_err());
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bad.toml");
        std::fs::write(&file, "[storage]\nbackend = \"embedded\"\nspeed = 3\n").unwrap();
        assert!(Settings::load(Some(&file), env(&[])).is_err());
        assert!(Settings::load(Some(&dir.path().join("missing.toml")), env(&[])).is_err());
    }
}
