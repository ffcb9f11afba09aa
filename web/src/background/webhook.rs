//! Completion webhooks: when a job that asked for one ends, its `webhook` URL is POSTed a
//! CloudEvents 1.0 event (structured JSON: `specversion`, `id`, `source`, `type`, `subject`,
//! `time`, `datacontenttype`, `data`, with absolute links), signed with HMAC-SHA256 under
//! `web.webhooks.secret`:
//!
//! `Tessera-Signature: t=UNIX,v1=HEX`, HEX being the MAC of `UNIX.BODY` (the receiver checks it
//! and refuses old timestamps). `Tessera-Event` names the event (`job.done`, `job.failed`) and
//! `Tessera-Delivery` is the event's id, the same on every attempt, so a receiver can drop a
//! repeat (delivery is at least once).
//!
//! The controller records each delivery a job's end owes in the outbox
//! ([`tessera_shared::outbox`]); every web and controller process runs a sender that calls what
//! is due, with back-off from one second, doubling up to `max_backoff_secs`, at most
//! `max_attempts` times (12 by default: the last about 18 minutes after the first) and for at
//! most `retry_for_secs`, across restarts. What is still undelivered then is set aside for the
//! operator, as are a client's deliveries past `max_owed_per_client`. A pass lists the outbox
//! once and reads only the entries it has not seen at their current ETag.
//! Before each call the host is resolved, and a name that resolves to a loopback, private,
//! link-local or unique-local address is not called unless `allow_private` is set.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use hmac::{Hmac, Mac};
use sha2::Sha256;
use tessera_shared::keys::BlobKey;
use tessera_shared::outbox::{self, Delivery};
use tessera_shared::platform::Platform;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::web_settings::WebhookSettings;

/// Starts this process's outbox sender; the handle wakes it when a job has ended. With
/// webhooks off it sends nothing (no job may ask for one).
pub fn start_sender(
    platform: Platform,
    settings: WebhookSettings,
    public_url: String,
) -> Arc<tokio::sync::Notify> {
    let wake = Arc::new(tokio::sync::Notify::new());
    if settings.secret.get().is_none() {
        return wake;
    }
    let woken = wake.clone();
    tokio::spawn(async move {
        let idle = Duration::from_secs(settings.poll_secs.max(1));
        let mut known = HashMap::new();
        loop {
            let next = send_due(&platform, &settings, &public_url, &mut known).await;
            let wait = next.map_or(idle, |at| {
                let left = at - OffsetDateTime::now_utc();
                Duration::try_from(left).unwrap_or_default().min(idle)
            });
            tokio::select! {
                _ = woken.notified() => {}
                _ = tokio::time::sleep(wait) => {}
            }
        }
    });
    wake
}

/// The outbox entries a sender has read, by key, at the ETag it read them.
type Known = HashMap<String, (Delivery, String)>;

/// Sends every delivery that is due; the earliest next attempt of those that are not.
async fn send_due(
    platform: &Platform,
    settings: &WebhookSettings,
    public_url: &str,
    known: &mut Known,
) -> Option<OffsetDateTime> {
    let blobs = &*platform.blobs;
    let mut owed = match outbox::owed(blobs, known).await {
        Ok(owed) => owed,
        Err(e) => {
            tracing::warn!(error = %e, "the outbox could not be read");
            return Some(OffsetDateTime::now_utc() + Duration::from_secs(30));
        }
    };
    known.clear();
    for (delivery, etag) in &owed {
        let key = BlobKey::OutboxEvent { job: delivery.job }.path();
        known.insert(key, (delivery.clone(), etag.clone()));
    }
    // Oldest first, so that a client's newest deliveries are the ones past its cap.
    owed.sort_by_key(|(d, _)| d.created_at);
    let mut per_client: HashMap<Uuid, usize> = HashMap::new();
    let mut earliest: Option<OffsetDateTime> = None;
    let mut later = |at: OffsetDateTime| {
        earliest = Some(earliest.map_or(at, |e| e.min(at)));
    };
    for (mut delivery, etag) in owed {
        let now = OffsetDateTime::now_utc();
        let job = delivery.job;
        let owed_by_client = delivery.client.map_or(0, |client| {
            let n = per_client.entry(client).or_default();
            *n += 1;
            *n
        });
        if let Some(why) = set_aside_why(settings, &delivery, owed_by_client, now) {
            tracing::warn!(%job, attempts = delivery.attempts, error = why, "webhook undelivered: set aside");
            if let Err(e) = outbox::set_aside(blobs, &delivery, why).await {
                tracing::warn!(%job, error = %e, "an undelivered webhook could not be set aside");
            }
            continue;
        }
        if delivery.next_attempt_at > now {
            later(delivery.next_attempt_at);
            continue;
        }
        // A lease: no other sender calls while this one does. A call ends within its time
        // limit, so the lease is not much longer: a sender killed mid-call holds it no more.
        let lease = now + Duration::from_secs(settings.timeout_secs.max(1) + 5);
        let etag = match outbox::claim(blobs, &mut delivery, &etag, lease).await {
            Ok(Some(etag)) => etag,
            Ok(None) => continue,
            Err(e) => {
                tracing::warn!(%job, error = %e, "a webhook could not be claimed");
                later(now + Duration::from_secs(30));
                continue;
            }
        };
        let outcome = call(settings, public_url, &delivery).await;
        let recorded = match outcome {
            Ok(()) => {
                tracing::info!(%job, attempt = delivery.attempts, "webhook delivered");
                metrics::counter!(tessera_shared::metric_names::NOTIFICATIONS, "outcome" => "delivered").increment(1);
                outbox::delivered(blobs, job).await
            }
            Err(Refused::ForGood(why)) => {
                tracing::warn!(%job, error = why, "webhook refused: set aside");
                outbox::set_aside(blobs, &delivery, why).await
            }
            Err(Refused::ForNow(why)) if delivery.attempts >= settings.max_attempts.max(1) => {
                metrics::counter!(tessera_shared::metric_names::NOTIFICATIONS, "outcome" => "failed").increment(1);
                let why = format!("{} attempts failed; the last: {why}", delivery.attempts);
                tracing::warn!(%job, error = why, "webhook undelivered: set aside");
                outbox::set_aside(blobs, &delivery, why).await
            }
            Err(Refused::ForNow(why)) => {
                metrics::counter!(tessera_shared::metric_names::NOTIFICATIONS, "outcome" => "failed").increment(1);
                let doubling = 1u64 << delivery.attempts.saturating_sub(1).min(20);
                let backoff = Duration::from_secs(doubling.min(settings.max_backoff_secs.max(1)));
                tracing::info!(%job, attempt = delivery.attempts, error = why, retry_in = ?backoff, "webhook attempt failed");
                let next = OffsetDateTime::now_utc() + backoff;
                later(next);
                outbox::retry_at(blobs, &mut delivery, &etag, next, why).await
            }
        };
        if let Err(e) = recorded {
            tracing::warn!(%job, error = %e, "a webhook's outcome could not be recorded");
        }
    }
    earliest
}

/// Why `delivery`, its client's `owed_by_client`th owed, is set aside untried at `now`: past
/// the client's cap, out of tries or out of time; `None` while it is still to be tried.
fn set_aside_why(
    settings: &WebhookSettings,
    delivery: &Delivery,
    owed_by_client: usize,
    now: OffsetDateTime,
) -> Option<String> {
    if settings.max_owed_per_client > 0 && owed_by_client > settings.max_owed_per_client {
        return Some(format!(
            "not tried: the client has {} notifications owed already",
            settings.max_owed_per_client
        ));
    }
    let out_of_tries =
        delivery.attempts >= settings.max_attempts.max(1) && delivery.next_attempt_at <= now;
    let out_of_time = now - delivery.created_at > Duration::from_secs(settings.retry_for_secs);
    (out_of_tries || out_of_time).then(|| {
        let last = delivery.last_error.clone().unwrap_or_default();
        format!("{} attempts failed; the last: {last}", delivery.attempts)
    })
}

/// Why a call did not deliver.
enum Refused {
    /// Tried again later: the receiver failed or could not be reached.
    ForNow(String),
    /// Never tried again: the URL may not be called.
    ForGood(String),
}

/// The CloudEvents 1.0 body of `delivery`, in structured mode, links made absolute.
pub fn event_body(delivery: &Delivery, public_url: &str) -> String {
    outbox::cloud_event(delivery, public_url)
}

/// `t=UNIX,v1=HEX`: the HMAC-SHA256 of `UNIX.BODY` under `secret`.
pub fn signature(secret: &str, unix: i64, body: &str) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(format!("{unix}.{body}").as_bytes());
    let hex = crate::guards::auth::hex(&mac.finalize().into_bytes());
    format!("t={unix},v1={hex}")
}

/// Whether an address is inside a private network or this host.
fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.octets()[0] == 0
                || v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.octets()[0] == 100 && (v4.octets()[1] & 0xc0) == 64
        }
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                || embedded_v4(v6).is_some_and(|v4| is_private(IpAddr::V4(v4)))
        }
    }
}

/// The IPv4 address an IPv6 address carries, where a router or host would reach it: mapped
/// (`::ffff:a.b.c.d`), compatible (`::a.b.c.d`), NAT64 (`64:ff9b::/96`) and 6to4 (`2002::/16`).
fn embedded_v4(v6: std::net::Ipv6Addr) -> Option<std::net::Ipv4Addr> {
    let s = v6.segments();
    let low = |hi: u16, lo: u16| {
        std::net::Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8)
    };
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    match s {
        [0, 0, 0, 0, 0, 0, hi, lo] if (hi, lo) != (0, 0) && (hi, lo) != (0, 1) => Some(low(hi, lo)),
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(low(hi, lo)),
        [0x2002, hi, lo, ..] => Some(low(hi, lo)),
        _ => None,
    }
}

/// One attempt at `delivery`.
async fn call(
    settings: &WebhookSettings,
    public_url: &str,
    delivery: &Delivery,
) -> Result<(), Refused> {
    let secret = settings
        .secret
        .get()
        .ok_or_else(|| Refused::ForGood("webhooks are off (no secret)".into()))?;
    let url = &delivery.url;
    let parsed =
        tessera_shared::spec::check_webhook(url).map_err(|e| Refused::ForGood(e.to_string()))?;
    if !settings.allows(&parsed) {
        return Err(Refused::ForGood(format!("{url} is not on the allow-list")));
    }
    let host = parsed.host_str().unwrap_or_default().to_string();
    let port = parsed.port_or_known_default().unwrap_or(443);
    // The address is resolved here and pinned for the call, so the name cannot point
    // elsewhere between the check and the request.
    let lookup = format!(
        "{}:{port}",
        host.trim_start_matches('[').trim_end_matches(']')
    );
    let addr = match tokio::net::lookup_host(&lookup).await {
        Ok(mut addrs) => addrs
            .next()
            .ok_or_else(|| Refused::ForNow(format!("{host} has no address")))?,
        Err(e) => return Err(Refused::ForNow(format!("{host}: {e}"))),
    };
    if is_private(addr.ip()) && !settings.allow_private {
        return Err(Refused::ForGood(format!(
            "{host} resolves to {} (a private address; web.webhooks.allow_private is off)",
            addr.ip()
        )));
    }
    // reqwest has no TLS provider of its own here: without one, building a client panics.
    // Fails harmlessly when a provider is already installed for the process.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(settings.timeout_secs.max(1)))
        .redirect(reqwest::redirect::Policy::none())
        .resolve(&host, addr)
        .build()
        .map_err(|e| Refused::ForNow(e.to_string()))?;
    let body = event_body(delivery, public_url);
    let unix = OffsetDateTime::now_utc().unix_timestamp();
    let answer = client
        .post(parsed)
        .header(
            "Content-Type",
            "application/cloudevents+json; charset=utf-8",
        )
        .header("User-Agent", "Tessera-Webhook/1")
        .header("Tessera-Event", delivery.event.as_str())
        .header("Tessera-Delivery", delivery.id())
        .header("Tessera-Signature", signature(secret, unix, &body))
        .body(body)
        .send()
        .await;
    match answer {
        Ok(r) if r.status().is_success() => Ok(()),
        Ok(r) => Err(Refused::ForNow(format!("answered {}", r.status()))),
        Err(e) => Err(Refused::ForNow(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_addresses_are_known() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.0.1",
            "169.254.1.1",
            "100.64.0.1",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:10.0.0.1",
            "0.0.0.0",
            "0.1.2.3",
            "::127.0.0.1",
            "::10.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b::a00:1",
            "2002:7f00:1::",
            "2002:c0a8:101::1",
        ] {
            assert!(is_private(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "8.8.8.8",
            "2001:4860:4860::8888",
            "100.128.0.1",
            "64:ff9b::808:808",
            "2002:808:808::1",
        ] {
            assert!(!is_private(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn the_signature_is_the_mac_of_time_and_body() {
        let sig = signature("key", 1, "body");
        assert!(sig.starts_with("t=1,v1="), "{sig}");
        assert_eq!(sig.len(), "t=1,v1=".len() + 64);
        assert_ne!(sig, signature("key", 2, "body"));
        assert_ne!(sig, signature("other", 1, "body"));
    }
}
