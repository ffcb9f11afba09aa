//! Randomised exponential back-off: idle polling, transient storage errors, retry delays.
//!
//! The n-th delay after a reset is `min × 2^n`, capped at `max`, times a factor drawn uniformly
//! from 0.8 to 1.2, and never over `max`. With a seeded generator the schedule is reproducible.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Plus or minus this fraction of each delay is random.
pub const JITTER: f64 = 0.2;

#[derive(Debug, Clone)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    attempt: u32,
    rng: StdRng,
}

impl Backoff {
    /// A back-off seeded from the operating system.
    pub fn new(min: Duration, max: Duration) -> Self {
        Self::with_rng(min, max, StdRng::from_os_rng())
    }

    /// A back-off whose schedule is fixed by `seed`.
    pub fn seeded(min: Duration, max: Duration, seed: u64) -> Self {
        Self::with_rng(min, max, StdRng::seed_from_u64(seed))
    }

    fn with_rng(min: Duration, max: Duration, rng: StdRng) -> Self {
        Backoff {
            min,
            max: max.max(min),
            attempt: 0,
            rng,
        }
    }

    /// The next delay; each call doubles the base until it reaches the maximum.
    pub fn next_delay(&mut self) -> Duration {
        let factor = 2f64.powi(self.attempt.min(62) as i32);
        let base = self.min.mul_f64(factor).min(self.max);
        self.attempt = self.attempt.saturating_add(1);
        let jitter = self.rng.random_range((1.0 - JITTER)..=(1.0 + JITTER));
        base.mul_f64(jitter).min(self.max)
    }

    /// Back to the minimum (work arrived).
    pub fn reset(&mut self) {
        self.attempt = 0;
    }

    /// Delays since the last reset.
    pub fn attempts(&self) -> u32 {
        self.attempt
    }

    pub fn max(&self) -> Duration {
        self.max
    }
}

/// The whole idle schedule: how many polls a listener makes in `span` from its last piece of
/// work, with the same seeded generator as [`Backoff::seeded`].
pub fn polls_within(min: Duration, max: Duration, seed: u64, span: Duration) -> u64 {
    let mut backoff = Backoff::seeded(min, max, seed);
    let mut elapsed = Duration::ZERO;
    let mut polls = 0;
    loop {
        elapsed += backoff.next_delay();
        if elapsed > span {
            return polls;
        }
        polls += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_with_jitter_up_to_the_maximum() {
        let mut b = Backoff::seeded(Duration::from_millis(100), Duration::from_secs(60), 7);
        let delays: Vec<Duration> = (0..14).map(|_| b.next_delay()).collect();
        for (n, d) in delays.iter().enumerate() {
            let base = Duration::from_millis(100)
                .mul_f64(2f64.powi(n as i32))
                .min(Duration::from_secs(60));
            assert!(
                *d >= base.mul_f64(0.8) && *d <= base.mul_f64(1.2).min(Duration::from_secs(60)),
                "{n}: {d:?}"
            );
        }
        assert!(delays[13] >= Duration::from_secs(48));
        let mut again = Backoff::seeded(Duration::from_millis(100), Duration::from_secs(60), 7);
        let replay: Vec<Duration> = (0..14).map(|_| again.next_delay()).collect();
        assert_eq!(delays, replay);
        b.reset();
        assert!(b.next_delay() <= Duration::from_millis(120));
    }

    #[test]
    fn an_idle_hour_at_the_defaults_costs_well_under_120_polls() {
        let polls = polls_within(
            Duration::from_millis(100),
            Duration::from_secs(60),
            1,
            Duration::from_secs(3600),
        );
        assert!((60..=80).contains(&polls), "{polls}");
    }
}
