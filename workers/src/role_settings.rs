//! Settings of the two back-end roles, plain values so that a config file and `TESSERA_*`
//! environment variables can carry them (durations as whole milliseconds).

use std::time::Duration;

use serde::{Deserialize, Serialize};
use tessera_shared::lifecycle::{GcOptions, RetentionSettings};
use tessera_shared::runtime::ListenerSettings;

/// The listener settings of a role's settings, which carry the listener's fields each (serde's
/// `flatten` would take a shared struct, but does not work with `deny_unknown_fields`).
macro_rules! listener {
    ($settings:expr, $concurrency:expr) => {
        ListenerSettings {
            batch_size: $settings.batch_size,
            visibility_timeout: Duration::from_millis($settings.visibility_timeout_ms),
            renewal_interval: Duration::from_millis($settings.renewal_interval_ms),
            poison_threshold: $settings.poison_threshold,
            min_backoff: Duration::from_millis($settings.min_backoff_ms),
            max_backoff: Duration::from_millis($settings.max_backoff_ms),
            max_concurrency: ($concurrency).max(1),
            max_retry_delay: Duration::from_millis($settings.max_retry_delay_ms),
            ..ListenerSettings::default()
        }
        .normalized()
    };
}

/// The job controller: plans jobs, cuts them into slices and stitches the results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ControllerSettings {
    /// Image requests planned at once (planning is CPU work on blocking threads).
    pub plan_concurrency: usize,
    /// Slice responses handled at once (stitching streams, so each holds about one band).
    pub response_concurrency: usize,
    /// Bytes of slice fragments read per ranged get while stitching.
    pub stitch_band_bytes: usize,
    /// Tile library versions kept decoded in memory.
    pub library_cache: usize,
    /// Memory those versions may take, in MiB; the version in use is kept whatever its size.
    pub library_cache_mib: u64,
    /// Largest slice in output pixels: a job asking for fewer, larger slices is cut into more,
    /// so a processor's memory (one compressed slice) does not grow with the image.
    pub max_slice_pixels: u64,
    /// Messages asked for per receive, 1 to 32.
    pub batch_size: usize,
    /// How long a received message stays hidden from other controllers.
    pub visibility_timeout_ms: u64,
    /// How often the visibility of a message in hand is renewed.
    pub renewal_interval_ms: u64,
    /// A message received more often than this goes to the poison queue.
    pub poison_threshold: u32,
    /// First and longest idle back-off between empty receives.
    pub min_backoff_ms: u64,
    pub max_backoff_ms: u64,
    /// Longest delay before a failed attempt is retried.
    pub max_retry_delay_ms: u64,
    /// The `[jobs]` section, which the controllers' reconciler and storage sweep follow.
    #[serde(skip)]
    pub jobs: JobsSettings,
    /// The `[retention]` section, which the storage sweep follows.
    #[serde(skip)]
    pub retention: RetentionSettings,
    /// The `[limits]` section: jobs are sized and planned under the limits the web role checked
    /// them against.
    #[serde(skip)]
    pub limits: tessera_shared::spec::JobLimits,
}

/// How jobs are watched to their end (the `[jobs]` section).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JobsSettings {
    /// A job whose record has not changed for this long is stalled: the reconciler asks again
    /// for what is missing, and fails the job if it stalls once more. Set it above the longest
    /// a job may wait in a backlog.
    pub stall_timeout_secs: u64,
    /// Keep a job's upload after it ended (by default it goes with the slices' plans and
    /// outputs; a done job holds its result and what the viewer made of it).
    pub keep_inputs: bool,
    /// How often each controller sweeps storage (`tessera storage gc` does it on demand).
    pub gc_interval_secs: u64,
}

impl Default for JobsSettings {
    fn default() -> Self {
        JobsSettings {
            stall_timeout_secs: 900,
            keep_inputs: false,
            gc_interval_secs: 3600,
        }
    }
}

impl JobsSettings {
    pub fn stall_timeout(&self) -> Duration {
        Duration::from_secs(self.stall_timeout_secs.max(1))
    }

    /// How often the reconciler sweeps: a quarter of the stall timeout, from 1 s to 5 min (a
    /// sweep is one listing when no job is active).
    pub fn sweep_interval(&self) -> Duration {
        (self.stall_timeout() / 4).clamp(Duration::from_secs(1), Duration::from_secs(300))
    }
}

impl Default for ControllerSettings {
    fn default() -> Self {
        let listener = ListenerSettings::default();
        ControllerSettings {
            plan_concurrency: 2,
            response_concurrency: 16,
            stitch_band_bytes: 4 << 20,
            library_cache: 4,
            library_cache_mib: 2048,
            max_slice_pixels: tessera_shared::messages::DEFAULT_MAX_SLICE_PIXELS,
            batch_size: listener.batch_size,
            visibility_timeout_ms: millis(listener.visibility_timeout),
            renewal_interval_ms: millis(listener.renewal_interval),
            poison_threshold: listener.poison_threshold,
            min_backoff_ms: millis(listener.min_backoff),
            max_backoff_ms: millis(listener.max_backoff),
            max_retry_delay_ms: millis(listener.max_retry_delay),
            jobs: JobsSettings::default(),
            retention: RetentionSettings::default(),
            limits: Default::default(),
        }
    }
}

/// The image processors: render slices.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProcessorSettings {
    /// Slices rendered at once in this process; 0 means one per CPU core.
    pub processors: usize,
    /// Prefix of the processor names recorded with each slice; empty means host name and
    /// process id.
    pub id: String,
    /// Tile library versions kept decoded in memory.
    pub library_cache: usize,
    /// Memory those versions may take, in MiB; the version in use is kept whatever its size.
    pub library_cache_mib: u64,
    pub batch_size: usize,
    pub visibility_timeout_ms: u64,
    pub renewal_interval_ms: u64,
    pub poison_threshold: u32,
    pub min_backoff_ms: u64,
    pub max_backoff_ms: u64,
    pub max_retry_delay_ms: u64,
}

impl Default for ProcessorSettings {
    fn default() -> Self {
        let listener = ListenerSettings::default();
        ProcessorSettings {
            processors: 0,
            id: String::new(),
            library_cache: 2,
            library_cache_mib: 1024,
            batch_size: 4,
            visibility_timeout_ms: millis(listener.visibility_timeout),
            renewal_interval_ms: millis(listener.renewal_interval),
            poison_threshold: listener.poison_threshold,
            min_backoff_ms: millis(listener.min_backoff),
            max_backoff_ms: millis(listener.max_backoff),
            max_retry_delay_ms: millis(listener.max_retry_delay),
        }
    }
}

impl ProcessorSettings {
    /// Slices rendered at once: the configured number, or the cores, never more than the cores.
    pub fn concurrency(&self) -> usize {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        if self.processors == 0 {
            cores
        } else {
            self.processors.min(cores)
        }
    }

    /// The processor name prefix: the configured id, or `host-pid`.
    pub fn name_prefix(&self) -> String {
        if !self.id.is_empty() {
            return self.id.clone();
        }
        let host = std::env::var("HOSTNAME")
            .ok()
            .filter(|h| !h.is_empty())
            .or_else(|| {
                std::fs::read_to_string("/etc/hostname")
                    .ok()
                    .map(|h| h.trim().to_string())
                    .filter(|h| !h.is_empty())
            })
            .unwrap_or_else(|| "processor".to_string());
        format!("{host}-{}", std::process::id())
    }

    pub(crate) fn listener(&self) -> ListenerSettings {
        listener!(self, self.concurrency())
    }
}

impl ControllerSettings {
    /// What the storage sweep follows.
    pub fn gc_options(&self) -> GcOptions {
        GcOptions {
            retention: self.retention.retention(),
            keep_inputs: self.jobs.keep_inputs,
            grace: self.jobs.stall_timeout(),
        }
    }

    pub(crate) fn listener(&self, concurrency: usize) -> ListenerSettings {
        listener!(self, concurrency)
    }
}

fn millis(d: Duration) -> u64 {
    d.as_millis().try_into().unwrap_or(u64::MAX)
}

/// How long a role waits for running handlers when it shuts down.
pub(crate) const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_round_trip_and_unknown_keys_are_refused() {
        let c = ControllerSettings::default();
        let text = serde_json::to_string(&c).unwrap();
        assert_eq!(
            serde_json::from_str::<ControllerSettings>(&text).unwrap(),
            c
        );
        let partial: ProcessorSettings = serde_json::from_str(r#"{"processors": 3}"#).unwrap();
        assert_eq!(partial.processors, 3);
        assert_eq!(partial.batch_size, ProcessorSettings::default().batch_size);
        assert!(serde_json::from_str::<ProcessorSettings>(r#"{"procesors": 3}"#).is_err());
    }

    #[test]
    fn processors_never_exceed_the_cores() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let s = ProcessorSettings {
            processors: cores + 5,
            ..ProcessorSettings::default()
        };
        assert_eq!(s.concurrency(), cores);
        assert_eq!(ProcessorSettings::default().concurrency(), cores);
    }
}
