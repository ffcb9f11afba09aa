//! What a holder of a contribute link may cost, whatever client ids it sends: photos per minute
//! from one network (an IPv6 /64 counts as one address) and through one link, each a token
//! bucket with a generous burst (a venue's guests often share one address), and a bound on the
//! photos decoded at once per network and per event. The caps by count (a guest's, an event's)
//! live in the event's settings; these hold in this process (`[web.guests]`,
//! [`GuestSettings`]).

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::http::StatusCode;
use tessera_shared::error_code::ErrorCode;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use uuid::Uuid;

use crate::api_error::{ApiError, ApiResult};
use crate::guards::client::limited_network;
use crate::web_settings::GuestSettings;

/// Token buckets and decode turns, shared by the handlers of one process.
#[derive(Debug, Default, Clone)]
pub struct GuestLimits {
    by_address: Buckets<IpAddr>,
    by_event: Buckets<Uuid>,
    decodes_by_address: Turns<IpAddr>,
    decodes_by_event: Turns<Uuid>,
    events_by_address: Buckets<IpAddr>,
}

/// A photo's turn to be decoded, given back when dropped.
pub struct DecodeTurn {
    _address: Option<Turn<IpAddr>>,
    _event: Turn<Uuid>,
}

impl GuestLimits {
    /// Takes `photos` from the address's and the event's buckets, or refuses (429 with
    /// `Retry-After`) taking none.
    pub fn admit(
        &self,
        settings: &GuestSettings,
        address: Option<IpAddr>,
        event: Uuid,
        photos: u32,
    ) -> ApiResult<()> {
        let now = Instant::now();
        let by_address = Rate::new(
            settings.photos_per_minute_per_address,
            settings.photo_burst_per_address,
        );
        let by_event = Rate::new(
            settings.photos_per_minute_per_event,
            settings.photo_burst_per_event,
        );
        if let (Some(rate), Some(ip)) = (by_address, address) {
            let ip = limited_network(ip);
            self.by_address
                .take(ip, photos, rate, now)
                .map_err(|wait| too_fast("your address", rate, wait))?;
        }
        if let Some(rate) = by_event
            && let Err(wait) = self.by_event.take(event, photos, rate, now)
        {
            if let (Some(rate), Some(ip)) = (by_address, address) {
                self.by_address
                    .give_back(limited_network(ip), photos, rate, now);
            }
            return Err(too_fast("this event", rate, wait));
        }
        Ok(())
    }

    /// Takes one event's making from the address's bucket, or refuses (429 with `Retry-After`).
    pub fn admit_event(&self, settings: &GuestSettings, address: Option<IpAddr>) -> ApiResult<()> {
        let per_hour = settings.events_per_hour_per_address;
        let (Some(ip), true) = (address, per_hour > 0) else {
            return Ok(());
        };
        let rate = Rate {
            per_second: f64::from(per_hour) / 3600.0,
            burst: f64::from(per_hour),
        };
        self.events_by_address
            .take(limited_network(ip), 1, rate, Instant::now())
            .map_err(|wait| {
                ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    ErrorCode::TooManyEvents,
                    format!(
                        "your address has made the {per_hour} events an hour this service \
                         takes: make the next in {} minutes",
                        wait.as_secs().div_ceil(60)
                    ),
                )
                .retry_after(wait)
            })
    }

    /// Waits for a turn to decode one photo from `address` for `event`.
    pub async fn decode_turn(
        &self,
        settings: &GuestSettings,
        address: Option<IpAddr>,
        event: Uuid,
    ) -> DecodeTurn {
        let address = match address {
            Some(ip) => Some(
                self.decodes_by_address
                    .turn(limited_network(ip), settings.decodes_per_address)
                    .await,
            ),
            None => None,
        };
        let event = self
            .decodes_by_event
            .turn(event, settings.decodes_per_event)
            .await;
        DecodeTurn {
            _address: address,
            _event: event,
        }
    }
}

fn too_fast(who: &str, rate: Rate, wait: Duration) -> ApiError {
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        ErrorCode::TooManyPhotos,
        format!(
            "{who} is sending photos faster than the {} a minute this service takes: send \
             again in {} s",
            (rate.per_second * 60.0).round(),
            wait.as_secs().max(1)
        ),
    )
    .retry_after(wait.max(Duration::from_secs(1)))
}

/// A bucket's refill rate and size.
#[derive(Debug, Clone, Copy)]
struct Rate {
    per_second: f64,
    burst: f64,
}

impl Rate {
    fn new(per_minute: u32, burst: u32) -> Option<Rate> {
        (per_minute > 0).then(|| Rate {
            per_second: f64::from(per_minute) / 60.0,
            burst: f64::from(burst.max(1)),
        })
    }
}

/// Token buckets by key; a bucket full again is forgotten, so the map holds only the keys that
/// sent lately.
#[derive(Debug)]
struct Buckets<K>(Arc<Mutex<HashMap<K, (f64, Instant)>>>);

impl<K> Default for Buckets<K> {
    fn default() -> Self {
        Buckets(Arc::default())
    }
}

impl<K> Clone for Buckets<K> {
    fn clone(&self) -> Self {
        Buckets(self.0.clone())
    }
}

/// Keys kept before the full buckets are swept out.
const SWEEP_AT: usize = 10_000;

impl<K: Hash + Eq + Clone> Buckets<K> {
    /// Takes `n` tokens from `key`'s bucket, or says how long until they are there.
    fn take(&self, key: K, n: u32, rate: Rate, now: Instant) -> Result<(), Duration> {
        let mut buckets = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if buckets.len() >= SWEEP_AT {
            buckets.retain(|_, b| level(*b, rate, now) < rate.burst);
        }
        let bucket = buckets.entry(key).or_insert((rate.burst, now));
        let have = level(*bucket, rate, now);
        let want = f64::from(n);
        if have >= want {
            *bucket = (have - want, now);
            return Ok(());
        }
        let missing = want.min(rate.burst) - have;
        Err(Duration::from_secs_f64(
            (missing.max(0.0) / rate.per_second).ceil(),
        ))
    }

    fn give_back(&self, key: K, n: u32, rate: Rate, now: Instant) {
        let mut buckets = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(bucket) = buckets.get_mut(&key) {
            *bucket = (
                (level(*bucket, rate, now) + f64::from(n)).min(rate.burst),
                now,
            );
        }
    }
}

/// A bucket's tokens at `now`.
fn level((tokens, at): (f64, Instant), rate: Rate, now: Instant) -> f64 {
    (tokens + now.saturating_duration_since(at).as_secs_f64() * rate.per_second).min(rate.burst)
}

/// At most so many at once per key; the others wait their turn.
#[derive(Debug)]
struct Turns<K>(Arc<Mutex<HashMap<K, Arc<Semaphore>>>>);

impl<K> Default for Turns<K> {
    fn default() -> Self {
        Turns(Arc::default())
    }
}

impl<K> Clone for Turns<K> {
    fn clone(&self) -> Self {
        Turns(self.0.clone())
    }
}

/// One key's turn; its semaphore is forgotten when nobody holds or waits for it.
struct Turn<K: Hash + Eq + Clone> {
    turns: Turns<K>,
    key: K,
    permit: Option<OwnedSemaphorePermit>,
}

impl<K: Hash + Eq + Clone> Turns<K> {
    async fn turn(&self, key: K, most: usize) -> Turn<K> {
        let semaphore = {
            let mut turns = self.0.lock().unwrap_or_else(|e| e.into_inner());
            turns
                .entry(key.clone())
                .or_insert_with(|| Arc::new(Semaphore::new(most.max(1))))
                .clone()
        };
        let permit = semaphore.acquire_owned().await.ok();
        Turn {
            turns: self.clone(),
            key,
            permit,
        }
    }
}

impl<K: Hash + Eq + Clone> Drop for Turn<K> {
    fn drop(&mut self) {
        drop(self.permit.take());
        let mut turns = self.turns.0.lock().unwrap_or_else(|e| e.into_inner());
        // Only the map holds it: nobody has or awaits a turn.
        if turns
            .get(&self.key)
            .is_some_and(|s| Arc::strong_count(s) == 1)
        {
            turns.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_passes_then_the_rate_holds_and_says_when() {
        let buckets = Buckets::<u8>::default();
        let rate = Rate::new(60, 5).unwrap();
        let t0 = Instant::now();
        for _ in 0..5 {
            buckets.take(1, 1, rate, t0).unwrap();
        }
        let wait = buckets.take(1, 1, rate, t0).unwrap_err();
        assert_eq!(wait, Duration::from_secs(1));
        // Another key has its own bucket; a second later one more token is there.
        buckets.take(2, 5, rate, t0).unwrap();
        buckets
            .take(1, 1, rate, t0 + Duration::from_secs(1))
            .unwrap();
        assert!(
            buckets
                .take(1, 1, rate, t0 + Duration::from_secs(1))
                .is_err()
        );
    }

    #[test]
    fn fresh_ipv6_addresses_of_one_network_share_its_bucket() {
        let limits = GuestLimits::default();
        let settings = GuestSettings {
            photos_per_minute_per_address: 60,
            photo_burst_per_address: 3,
            ..GuestSettings::default()
        };
        let event = Uuid::new_v4();
        for host in 1..=3 {
            let ip: IpAddr = format!("2001:db8:1:2::{host}").parse().unwrap();
            limits.admit(&settings, Some(ip), event, 1).unwrap();
        }
        let ip: IpAddr = "2001:db8:1:2::99".parse().unwrap();
        assert!(limits.admit(&settings, Some(ip), event, 1).is_err());
        let other: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        limits.admit(&settings, Some(other), event, 1).unwrap();
    }
}
