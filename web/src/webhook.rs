//! Completion webhooks: when a job that asked for one ends, its `webhook` URL is POSTed a JSON
//! body signed with HMAC-SHA256 under `web.webhooks.secret`:
//!
//! `Tessera-Signature: t=UNIX,v1=HEX`, HEX being the MAC of `UNIX.BODY` (the receiver checks it
//! and refuses old timestamps). `Tessera-Event` names the event (`job.done`, `job.failed`) and
//! `Tessera-Delivery` is the same for every attempt at one job's end, so a receiver can drop a
//! repeat (delivery is at least once: a redelivered response may call again).
//!
//! Calls are retried with back-off (one second, doubling) on errors and on answers other than
//! 2xx, up to `attempts`. Before each call the host is resolved, and a name that resolves to a
//! loopback, private, link-local or unique-local address is not called unless
//! `allow_private` is set.

use std::net::IpAddr;
use std::time::Duration;

use hmac::{Hmac, Mac};
use serde_json::json;
use sha2::Sha256;
use tessera_shared::jobs::{JobRecord, JobState};

use crate::settings::WebhookSettings;

/// Calls the job's webhook, if it has one, in a task of its own.
pub fn deliver_in_background(settings: &WebhookSettings, record: &JobRecord) {
    let Some(url) = record.params.spec.webhook.clone() else {
        return;
    };
    let (settings, body, event) = (settings.clone(), payload(record), event(record));
    let job = record.id;
    tokio::spawn(async move {
        if let Err(e) = deliver(&settings, &url, event, job, &body).await {
            tracing::warn!(%job, error = %e, "webhook not delivered");
        }
    });
}

fn event(record: &JobRecord) -> &'static str {
    match record.state {
        JobState::Done => "job.done",
        _ => "job.failed",
    }
}

/// The JSON body for a job's end.
fn payload(record: &JobRecord) -> String {
    let id = record.id;
    let mut body = json!({
        "event": event(record),
        "job_id": id,
        "state": record.state.as_str(),
        "finished_at": record.finished_at.and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339).ok()
        }),
        "job_url": format!("/api/v1/jobs/{id}"),
    });
    if record.state == JobState::Done {
        body["result_url"] = format!("/api/v1/jobs/{id}/result").into();
        if let Some(size) = &record.output {
            body["width"] = size.width.into();
            body["height"] = size.height.into();
        }
    } else if let Some(reason) = &record.error {
        body["reason"] = reason.as_str().into();
    }
    body.to_string()
}

/// `t=UNIX,v1=HEX`: the HMAC-SHA256 of `UNIX.BODY` under `secret`.
pub fn signature(secret: &str, unix: i64, body: &str) -> String {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(format!("{unix}.{body}").as_bytes());
    let hex = crate::auth::hex(&mac.finalize().into_bytes());
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

async fn deliver(
    settings: &WebhookSettings,
    url: &str,
    event: &str,
    job: uuid::Uuid,
    body: &str,
) -> Result<(), String> {
    let secret = settings
        .secret
        .get()
        .ok_or("webhooks are off (no secret)")?;
    let parsed = tessera_shared::spec::check_webhook(url).map_err(|e| e.to_string())?;
    if !settings.allows(&parsed) {
        return Err(format!("{url} is not on the allow-list"));
    }
    let host = parsed.host_str().unwrap_or_default().to_string();
    let port = parsed.port_or_known_default().unwrap_or(443);
    // The address is resolved here and pinned for the call, so the name cannot point
    // elsewhere between the check and the request.
    let lookup = format!(
        "{}:{port}",
        host.trim_start_matches('[').trim_end_matches(']')
    );
    // reqwest has no TLS provider of its own here: without one, building a client panics.
    // Fails harmlessly when a provider is already installed for the process.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client_for = |addr: std::net::SocketAddr| {
        reqwest::Client::builder()
            .timeout(Duration::from_secs(settings.timeout_secs.max(1)))
            .redirect(reqwest::redirect::Policy::none())
            .resolve(&host, addr)
            .build()
            .map_err(|e| e.to_string())
    };
    let mut delay = Duration::from_secs(1);
    let mut last = String::new();
    for attempt in 1..=settings.attempts.max(1) {
        if attempt > 1 {
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(300));
        }
        let addr = match tokio::net::lookup_host(&lookup).await {
            Ok(mut addrs) => match addrs.next() {
                Some(addr) => addr,
                None => {
                    last = format!("{host} has no address");
                    continue;
                }
            },
            Err(e) => {
                last = format!("{host}: {e}");
                continue;
            }
        };
        if is_private(addr.ip()) && !settings.allow_private {
            return Err(format!(
                "{host} resolves to {} (a private address; web.webhooks.allow_private is off)",
                addr.ip()
            ));
        }
        let unix = time::OffsetDateTime::now_utc().unix_timestamp();
        let answer = client_for(addr)?
            .post(parsed.clone())
            .header("Content-Type", "application/json")
            .header("User-Agent", "Tessera-Webhook/1")
            .header("Tessera-Event", event)
            .header("Tessera-Delivery", format!("{job}/{event}"))
            .header("Tessera-Signature", signature(secret, unix, body))
            .body(body.to_string())
            .send()
            .await;
        match answer {
            Ok(r) if r.status().is_success() => {
                tracing::info!(%job, attempt, "webhook delivered");
                return Ok(());
            }
            Ok(r) => last = format!("answered {}", r.status()),
            Err(e) => last = e.to_string(),
        }
        tracing::debug!(%job, attempt, error = last, "webhook attempt failed");
    }
    Err(format!(
        "{} attempts, the last: {last}",
        settings.attempts.max(1)
    ))
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
