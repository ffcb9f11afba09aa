//! Per-queue listener settings: defaults, then configuration, then the queue's own metadata.

use std::collections::HashMap;
use std::time::Duration;

use crate::storage::{MAX_BATCH, MAX_VISIBILITY};

/// How one listener consumes one queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerSettings {
    /// Messages asked for per receive, 1 to 32.
    pub batch_size: usize,
    /// How long a received message stays hidden before another receiver may take it.
    pub visibility_timeout: Duration,
    /// How often a running handler's message has its visibility renewed; well under the timeout.
    pub renewal_interval: Duration,
    /// A message received more often than this goes to the poison queue.
    pub poison_threshold: u32,
    /// First idle back-off after an empty receive.
    pub min_backoff: Duration,
    /// Longest idle back-off: an idle listener polls about this often.
    pub max_backoff: Duration,
    /// Most handlers running at once.
    pub max_concurrency: usize,
    /// Most receive loops at once while the queue has depth (one when idle).
    pub max_receivers: usize,
    /// Longest retry delay for a failed attempt that names none (the delay doubles per attempt).
    pub max_retry_delay: Duration,
}

impl Default for ListenerSettings {
    fn default() -> Self {
        ListenerSettings {
            batch_size: 16,
            visibility_timeout: Duration::from_secs(30),
            renewal_interval: Duration::from_secs(10),
            poison_threshold: 5,
            min_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(90),
            max_concurrency: 16,
            max_receivers: 2,
            max_retry_delay: Duration::from_secs(60),
        }
    }
}

/// A queue metadata entry that could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("queue metadata {key}={value:?}: {reason}")]
pub struct MetadataError {
    pub key: String,
    pub value: String,
    pub reason: String,
}

impl ListenerSettings {
    /// Metadata keys a queue may carry to override these settings (durations in milliseconds
    /// when the key ends in `ms`, otherwise in seconds).
    pub const METADATA_KEYS: [&'static str; 9] = [
        "batchsize",
        "visibilitytimeout",
        "renewalinterval",
        "poisonthreshold",
        "minbackoffms",
        "maxbackoff",
        "maxconcurrency",
        "maxreceivers",
        "maxretrydelay",
    ];

    /// Clamps every setting into the range the service and the runtime accept.
    pub fn normalized(mut self) -> Self {
        self.batch_size = self.batch_size.clamp(1, MAX_BATCH);
        self.visibility_timeout = self
            .visibility_timeout
            .clamp(Duration::from_millis(100), MAX_VISIBILITY);
        let most_renewal = self.visibility_timeout.mul_f64(0.8);
        self.renewal_interval = self
            .renewal_interval
            .clamp(Duration::from_millis(10), most_renewal);
        self.poison_threshold = self.poison_threshold.max(1);
        self.min_backoff = self.min_backoff.max(Duration::from_millis(1));
        self.max_backoff = self.max_backoff.max(self.min_backoff);
        self.max_concurrency = self.max_concurrency.max(1);
        self.max_receivers = self.max_receivers.max(1);
        self
    }

    /// These settings with the queue's metadata applied over them. Unknown keys are ignored
    /// (metadata is shared with other tools); a known key with a bad value is left out and
    /// reported.
    pub fn with_metadata(
        mut self,
        metadata: &HashMap<String, String>,
    ) -> (Self, Vec<MetadataError>) {
        let mut errors = Vec::new();
        for (key, value) in metadata {
            let key_lc = key.to_ascii_lowercase();
            let bad = |reason: &str| MetadataError {
                key: key.clone(),
                value: value.clone(),
                reason: reason.to_string(),
            };
            let number = value.trim().parse::<u64>();
            let secs = |n: u64| Duration::from_secs(n);
            let applied = match (key_lc.as_str(), number) {
                ("batchsize", Ok(n)) if (1..=MAX_BATCH as u64).contains(&n) => {
                    self.batch_size = n as usize;
                    Ok(())
                }
                ("batchsize", _) => Err(bad("expected 1 to 32")),
                ("visibilitytimeout", Ok(n)) if n >= 1 => {
                    self.visibility_timeout = secs(n);
                    Ok(())
                }
                ("renewalinterval", Ok(n)) if n >= 1 => {
                    self.renewal_interval = secs(n);
                    Ok(())
                }
                ("poisonthreshold", Ok(n)) if n >= 1 && n <= u64::from(u32::MAX) => {
                    self.poison_threshold = n as u32;
                    Ok(())
                }
                ("minbackoffms", Ok(n)) if n >= 1 => {
                    self.min_backoff = Duration::from_millis(n);
                    Ok(())
                }
                ("maxbackoff", Ok(n)) if n >= 1 => {
                    self.max_backoff = secs(n);
                    Ok(())
                }
                ("maxconcurrency", Ok(n)) if n >= 1 => {
                    self.max_concurrency = n as usize;
                    Ok(())
                }
                ("maxreceivers", Ok(n)) if n >= 1 => {
                    self.max_receivers = n as usize;
                    Ok(())
                }
                ("maxretrydelay", Ok(n)) => {
                    self.max_retry_delay = secs(n);
                    Ok(())
                }
                (k, _) if Self::METADATA_KEYS.contains(&k) => {
                    Err(bad("expected a positive whole number"))
                }
                _ => Ok(()),
            };
            if let Err(e) = applied {
                errors.push(e);
            }
        }
        (self.normalized(), errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_overrides_defaults_and_rejects_bad_values() {
        let md: HashMap<String, String> = [
            ("visibilitytimeout", "120"),
            ("PoisonThreshold", "3"),
            ("batchsize", "32"),
            ("owner", "ops"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let (s, errs) = ListenerSettings::default().with_metadata(&md);
        assert!(errs.is_empty());
        assert_eq!(s.visibility_timeout, Duration::from_secs(120));
        assert_eq!(s.poison_threshold, 3);
        assert_eq!(s.batch_size, 32);

        let bad: HashMap<String, String> = [("batchsize".to_string(), "33".to_string())].into();
        let (s, errs) = ListenerSettings::default().with_metadata(&bad);
        assert_eq!(errs[0].key, "batchsize");
        assert_eq!(s.batch_size, ListenerSettings::default().batch_size);
    }

    #[test]
    fn renewal_stays_under_the_visibility_timeout() {
        let s = ListenerSettings {
            visibility_timeout: Duration::from_secs(1),
            renewal_interval: Duration::from_secs(5),
            batch_size: 100,
            ..ListenerSettings::default()
        }
        .normalized();
        assert!(s.renewal_interval < s.visibility_timeout);
        assert_eq!(s.batch_size, 32);
    }
}
