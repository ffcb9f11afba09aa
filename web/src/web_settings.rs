//! The front end's settings: where it listens, the limits it enforces on uploads, and the
//! optional API key that guards everything it serves.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Settings of the web role (`[web]` in the config file, `TESSERA_WEB_*` in the environment).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebSettings {
    /// Address to listen on.
    pub bind: String,
    /// Port to listen on; 0 picks a free one. The default gives way to a free port when taken.
    pub port: u16,
    /// Whether `port` was set explicitly (flag, file or environment): then a taken port is an
    /// error instead of giving way.
    #[serde(skip)]
    pub port_fixed: bool,
    /// HTTP worker threads; 0 means one per core.
    pub workers: usize,
    /// Largest target image upload, in bytes.
    pub max_upload_bytes: u64,
    /// Answer result downloads with a redirect to a read-only link to the result blob, valid
    /// this many seconds, so the bytes flow from storage and not through this process; 0 (and
    /// storage that cannot sign such links) streams them from here.
    pub result_link_secs: u64,
    /// Largest target image, in pixels (checked from the header before decoding).
    pub max_input_pixels: u64,
    /// Slices a job is cut into when the request names none.
    pub default_slices: u32,
    /// Library used when a job names none; empty makes `library` required.
    pub default_library: String,
    /// Largest library upload (all files together), in bytes.
    pub max_library_upload_bytes: u64,
    /// Most files in a library upload (archive entries included).
    pub max_library_files: u32,
    /// Largest total uncompressed size of a library archive, in bytes.
    pub max_library_uncompressed_bytes: u64,
    /// Library uploads imported at once; more wait their turn (each decodes all its tiles).
    pub max_concurrent_imports: usize,
    /// Pixels one library upload may decode, all its images together (each image's size is
    /// read from its header before any is decoded).
    pub max_library_upload_pixels: u64,
    /// Longest an import may take once it has its turn; past it the import stops and
    /// publishes nothing.
    pub import_time_budget_secs: u64,
    /// Libraries one owner (a client, a named key) may keep (0: no limit; the operator has none).
    pub max_libraries_per_owner: u32,
    /// Bytes all libraries' current indexes may take together; an upload that would pass it is
    /// refused (0: no limit).
    pub max_library_bytes: u64,
    /// Bytes one owner's libraries (a client's, a named key's) may take, their current
    /// indexes together; an upload or edit that would pass it is refused (0: no limit; the
    /// operator has none).
    pub max_library_bytes_per_owner: u64,
    /// Jobs one client may have running at once; more are answered 429 (0: no limit).
    pub max_active_jobs_per_client: u32,
    /// Jobs the clients of one address may have running at once (0: no limit).
    pub max_active_jobs_per_address: u32,
    /// Jobs running at once in the whole service; more are answered 503 (0: no limit).
    pub max_active_jobs: u32,
    /// A request body that sends nothing for this long is cut off (408).
    pub body_read_timeout_secs: u64,
    /// After the first `body_read_timeout_secs`, an upload slower than this on average is cut
    /// off (408).
    pub min_upload_bytes_per_sec: u64,
    /// Uploads (job images and library files) read at once; more are answered 503.
    pub max_uploads_in_flight: usize,
    /// Memory the checks of uploaded targets may take at once, all decodes together; a decode
    /// waits for room.
    pub decode_memory_bytes: u64,
    /// How often a job's event streams (one poller per job) re-read its record when nothing
    /// wakes them.
    pub events_poll_ms: u64,
    /// Event streams open at once in this process, and per client (its id, or its address).
    pub max_streams: usize,
    pub max_streams_per_client: usize,
    /// Event streams open at once from one address (whatever client ids it names).
    pub max_streams_per_address: usize,
    /// How long shutdown waits for requests and the imageresponse listener to finish.
    pub shutdown_grace_secs: u64,
    /// A key every request must carry (except health checks and static assets); empty leaves
    /// the service open. A secret: never logged.
    pub api_key: ApiKey,
    /// Named keys for API users, `name = "sha256:HEX"` (the SHA-256 of the key, never the key):
    /// each holder owns what it uploads. The operator's key (`api_key`) stands apart.
    pub keys: BTreeMap<String, String>,
    /// Proxies in front of the service whose `X-Forwarded-For` names the client's address (for
    /// the limits kept per address), as addresses or CIDR ranges (`10.0.0.0/8`). Without them
    /// the peer's address counts.
    pub trusted_proxies: Vec<AddressRange>,
    /// Completion webhooks (`[web.webhooks]`): who may be called, and the signing secret.
    pub webhooks: WebhookSettings,
    /// What guests of events may send (`[web.guests]`): rates per address and per event,
    /// decodes at once, events per owner.
    pub guests: GuestSettings,
    /// Where uploads are spooled while they are read and imported: `spool/` in the embedded
    /// data directory (so the free space kept there counts them), else the system's temporary
    /// directory. Emptied at start.
    #[serde(skip)]
    pub spool_dir: Option<PathBuf>,
    /// The `[retention]` section: when a job's result expires, for pages and the API.
    #[serde(skip)]
    pub retention: tessera_shared::lifecycle::RetentionSettings,
    /// The `[limits]` section: what a job may ask for (the controller plans under the same).
    #[serde(skip)]
    pub limits: tessera_shared::spec::JobLimits,
}

/// Completion webhooks: a job's `webhook` URL is called when the job ends, with a body signed
/// by HMAC-SHA256 under `secret`. Off until the operator gives a secret and an allow-list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WebhookSettings {
    /// The key the bodies are signed with (`Tessera-Signature`). A secret: never logged. Empty:
    /// webhooks are off, and a job that asks for one is refused.
    pub secret: ApiKey,
    /// Hosts a webhook may name, as `host` or `host:port` (`hooks.example.com`,
    /// `10.0.0.5:8443`); a job naming any other is refused (422 webhook_not_allowed).
    pub allow: Vec<String>,
    /// Whether an allowed host may resolve to a loopback, private, link-local or unique-local
    /// address. Off: such a call is not made, whatever the allow-list says (no requests into
    /// the service's own network by a name that points there).
    pub allow_private: bool,
    /// How long a job's notification is tried again, from its job's end, with back-off from
    /// one second, doubling: after that it is set aside, where the operator sees it.
    pub retry_for_secs: u64,
    /// Most attempts at one notification (the first included): after the last it is set
    /// aside, whatever time is left of `retry_for_secs`.
    pub max_attempts: u32,
    /// Most notifications one client may have owed at once: the newest past it are set aside
    /// untried (0: no limit).
    pub max_owed_per_client: usize,
    /// The longest wait between two attempts at one notification.
    pub max_backoff_secs: u64,
    /// How often an idle sender looks for notifications owed (a job's end wakes it at once in
    /// the web process that hears of it; this finds what another process left).
    pub poll_secs: u64,
    /// A call that takes longer is abandoned (and tried again).
    pub timeout_secs: u64,
    /// The service's address as receivers reach it, for the absolute links in events
    /// (`https://mosaics.example.com`). Empty: `http://` and the address the web role binds.
    pub public_url: String,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        WebhookSettings {
            secret: ApiKey::default(),
            allow: Vec::new(),
            allow_private: false,
            retry_for_secs: 24 * 60 * 60,
            max_attempts: 12,
            max_owed_per_client: 20,
            max_backoff_secs: 300,
            poll_secs: 300,
            timeout_secs: 10,
            public_url: String::new(),
        }
    }
}

impl WebhookSettings {
    /// Whether a job may ask for `url`: webhooks are on and its host (with its port, or
    /// without one) is on the allow-list.
    pub fn allows(&self, url: &url::Url) -> bool {
        let Some(host) = url.host_str() else {
            return false;
        };
        let with_port = url.port_or_known_default().map(|p| format!("{host}:{p}"));
        self.secret.get().is_some()
            && self
                .allow
                .iter()
                .any(|a| a.eq_ignore_ascii_case(host) || Some(a.to_ascii_lowercase()) == with_port)
    }
}

/// The guests' limits (`[web.guests]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GuestSettings {
    /// Photos one address (an IPv6 /64) may send a minute, all its guests together, after its
    /// burst (0: no limit).
    pub photos_per_minute_per_address: u32,
    /// Photos one address may send at once before its rate applies.
    pub photo_burst_per_address: u32,
    /// Photos one event's link may take a minute, from every address (0: no limit).
    pub photos_per_minute_per_event: u32,
    /// Photos one event's link may take at once before its rate applies.
    pub photo_burst_per_event: u32,
    /// Photos from one address decoded at once (their colour, their thumbnail); more wait.
    pub decodes_per_address: usize,
    /// Photos of one event decoded at once; more wait.
    pub decodes_per_event: usize,
    /// Events one owner (a client, a named key) may keep (0: no limit; the operator has none).
    pub max_events_per_owner: u32,
    /// Events one address may make an hour, whatever client ids it names, after a burst of as
    /// many (0: no limit).
    pub events_per_hour_per_address: u32,
}

impl Default for GuestSettings {
    fn default() -> Self {
        GuestSettings {
            photos_per_minute_per_address: 600,
            photo_burst_per_address: 300,
            photos_per_minute_per_event: 12_000,
            photo_burst_per_event: 3_000,
            decodes_per_address: 2,
            decodes_per_event: 4,
            max_events_per_owner: 20,
            events_per_hour_per_address: 20,
        }
    }
}

/// The configured API key. Its `Debug` never shows it.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    /// The key, or `None` when none is configured (the service is open).
    pub fn get(&self) -> Option<&str> {
        Some(self.0.as_str()).filter(|k| !k.is_empty())
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_empty() {
            "\"\""
        } else {
            "<redacted>"
        })
    }
}

impl Default for WebSettings {
    fn default() -> Self {
        WebSettings {
            bind: "127.0.0.1".to_string(),
            port: 8080,
            port_fixed: false,
            workers: 0,
            max_upload_bytes: 50 * 1024 * 1024,
            result_link_secs: 0,
            max_input_pixels: 100_000_000,
            default_slices: 8,
            default_library: String::new(),
            max_library_upload_bytes: 200 * 1024 * 1024,
            max_library_files: 20_000,
            max_library_uncompressed_bytes: 1024 * 1024 * 1024,
            max_concurrent_imports: 1,
            max_library_upload_pixels: 4_000_000_000,
            import_time_budget_secs: 600,
            max_libraries_per_owner: 20,
            max_library_bytes: 20 << 30,
            max_library_bytes_per_owner: 2 << 30,
            max_active_jobs_per_client: 4,
            max_active_jobs_per_address: 16,
            max_active_jobs: 200,
            body_read_timeout_secs: 30,
            min_upload_bytes_per_sec: 16 * 1024,
            max_uploads_in_flight: 8,
            decode_memory_bytes: 1 << 30,
            events_poll_ms: 400,
            max_streams: 1000,
            max_streams_per_client: 8,
            max_streams_per_address: 32,
            shutdown_grace_secs: 10,
            api_key: ApiKey::default(),
            keys: BTreeMap::new(),
            trusted_proxies: Vec::new(),
            webhooks: WebhookSettings::default(),
            guests: Default::default(),
            spool_dir: None,
            retention: Default::default(),
            limits: Default::default(),
        }
    }
}

/// One address or a CIDR range of them (`10.0.0.7`, `10.0.0.0/8`, `fd00::/8`), as settings
/// name trusted proxies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct AddressRange(ipnet::IpNet);

impl AddressRange {
    pub fn contains(&self, address: &IpAddr) -> bool {
        self.0.contains(address)
    }
}

impl std::str::FromStr for AddressRange {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if let Ok(net) = text.parse::<ipnet::IpNet>() {
            return Ok(AddressRange(net.trunc()));
        }
        text.parse::<IpAddr>()
            .map(|address| AddressRange(address.into()))
            .map_err(|_| {
                format!("{text:?} is neither an address nor a CIDR range such as 10.0.0.0/8")
            })
    }
}

impl TryFrom<String> for AddressRange {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        text.parse()
    }
}

impl From<AddressRange> for String {
    fn from(range: AddressRange) -> String {
        if range.0.prefix_len() == range.0.max_prefix_len() {
            range.0.addr().to_string()
        } else {
            range.0.to_string()
        }
    }
}
