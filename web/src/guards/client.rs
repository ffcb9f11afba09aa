//! Who is asking, and about what: the client id a request carries (the browser's cookie or an
//! API client's `X-Client-Id`), the credential the key check found, the address the request
//! comes from (behind a trusted proxy, the one it names), and the job id in a path.

use std::net::IpAddr;
use tessera_shared::error_code::ErrorCode;

use actix_web::cookie::{Cookie, SameSite};
use actix_web::{HttpMessage as _, HttpRequest};
use tessera_shared::holds::{Hold, Holds};
use tessera_shared::jobs::JobRecord;
use tessera_shared::libraries::Owner;
use uuid::Uuid;

use crate::api_error::{ApiError, ApiResult};
use crate::web_settings::AddressRange;

/// The cookie that names a browser's client id.
pub const CLIENT_COOKIE: &str = "tessera_client";
/// The header an API client may name its client id with.
pub const CLIENT_HEADER: &str = "X-Client-Id";

/// The client id of a request, and whether it was minted here (then the response sets the cookie).
pub(crate) fn client_id(req: &HttpRequest) -> ApiResult<(Uuid, bool)> {
    if let Some(value) = req.headers().get(CLIENT_HEADER) {
        let id = value
            .to_str()
            .ok()
            .and_then(|v| Uuid::parse_str(v.trim()).ok())
            .ok_or_else(|| {
                ApiError::bad_request(
                    ErrorCode::InvalidClientId,
                    format!("{CLIENT_HEADER} must be a UUID"),
                )
            })?;
        return Ok((id, false));
    }
    if let Some(id) = req
        .cookie(CLIENT_COOKIE)
        .and_then(|c| Uuid::parse_str(c.value()).ok())
    {
        return Ok((id, false));
    }
    Ok((Uuid::new_v4(), true))
}

/// The client a request names (`X-Client-Id`, or the browser's cookie), if any.
pub(crate) fn named_client(req: &HttpRequest) -> ApiResult<Option<Uuid>> {
    let (client, minted) = client_id(req)?;
    Ok((!minted).then_some(client))
}

/// Parses a job id from a path; anything that is not a UUID names no job.
pub fn job_id(raw: &str) -> ApiResult<Uuid> {
    Uuid::parse_str(raw)
        .map_err(|_| ApiError::not_found(ErrorCode::JobNotFound, format!("no job {raw:?}")))
}

/// The cookie that names a browser's client id, minted by the server. `Secure` when the
/// request came over https (as the proxy in front says).
pub(crate) fn client_cookie(req: &HttpRequest, client: Uuid) -> Cookie<'static> {
    Cookie::build(CLIENT_COOKIE, client.to_string())
        .path("/")
        .http_only(true)
        .same_site(SameSite::Lax)
        .secure(over_https(req))
        .permanent()
        .finish()
}

/// Whether the request reached the service over https: directly, or as the proxy in front
/// says (`Forwarded`, `X-Forwarded-Proto`). Trusting the header can only make a cookie stricter.
pub(crate) fn over_https(req: &HttpRequest) -> bool {
    req.connection_info().scheme() == "https"
}

/// What the key check found a request to carry (kept in the request's extensions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// The operator's key (`web.api_key`).
    Operator,
    /// One of the named keys (`[web.keys]`), by name.
    Key(String),
}

/// The owner a request acts as, for libraries: the operator or a named key when it carries
/// one, else its client (a new client id is minted when it names none, returned second: the
/// response sets it as the client cookie).
pub(crate) fn requester(req: &HttpRequest) -> ApiResult<(Owner, Option<Uuid>)> {
    if let Some(owner) = credential_owner(req) {
        return Ok((owner, None));
    }
    let (client, minted) = client_id(req)?;
    Ok((Owner::client(client), minted.then_some(client)))
}

/// The owner a request of `client` acts as: its credential's, else the client's.
pub(crate) fn owner_of(req: &HttpRequest, client: Uuid) -> Owner {
    credential_owner(req).unwrap_or_else(|| Owner::client(client))
}

/// Whether a request may cancel or delete a job, or is shown it as its own: the operator's
/// key may, for any job; a job submitted with a key belongs to that key; any other job to the
/// client that submitted it (its cookie or `X-Client-Id`).
pub(crate) fn manages_job(req: &HttpRequest, record: &JobRecord) -> ApiResult<bool> {
    let carried = credential_owner(req);
    if carried.as_ref().is_some_and(Owner::is_operator) {
        return Ok(true);
    }
    match &record.key_holder {
        Some(holder) => Ok(carried.as_ref() == Some(holder)),
        None => Ok(named_client(req)? == Some(record.client_id)),
    }
}

/// The owner the key a request carries stands for, if it carries one.
pub(crate) fn credential_owner(req: &HttpRequest) -> Option<Owner> {
    req.extensions().get::<Credential>().map(|c| match c {
        Credential::Operator => Owner::operator(),
        Credential::Key(name) => Owner::key(name),
    })
}

/// The owner a request acts as, when it names itself (no id is minted): for reading.
pub(crate) fn known_requester(req: &HttpRequest) -> Option<Owner> {
    match requester(req) {
        Ok((owner, None)) => Some(owner),
        _ => None,
    }
}

/// The network whose requests count together against a limit kept per address: the address
/// itself for IPv4, its /64 for IPv6 (one host or site holds a whole /64, so counting single
/// addresses there would leave it unlimited).
pub(crate) fn limited_network(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

/// How many of something (uploads, previews, placements) each network ([`limited_network`])
/// holds now, for the limits kept per address.
#[derive(Debug, Default, Clone)]
pub(crate) struct AddressCounts(Holds<IpAddr>);

/// One place counted against an address (none for a request of no known address), given back
/// when dropped.
pub(crate) struct AddressHold {
    _held: Option<Hold<IpAddr>>,
}

impl AddressCounts {
    /// A place for `address` if its network holds fewer than `most`; no address: always.
    pub(crate) fn hold(&self, address: Option<IpAddr>, most: usize) -> Option<AddressHold> {
        match address {
            None => Some(AddressHold { _held: None }),
            Some(ip) => self
                .0
                .take(limited_network(ip), most)
                .map(|held| AddressHold { _held: Some(held) }),
        }
    }
}

/// The proxies whose `X-Forwarded-For` is believed (`web.trusted_proxies`).
#[derive(Debug, Clone, Default)]
pub struct TrustedProxies(pub Vec<AddressRange>);

impl TrustedProxies {
    fn trusts(&self, address: &IpAddr) -> bool {
        self.0.iter().any(|range| range.contains(address))
    }
}

/// The address a request comes from: the peer's, or behind a trusted proxy the nearest address
/// in `X-Forwarded-For` that is not itself a trusted proxy.
pub(crate) fn client_address(req: &HttpRequest, trusted: &TrustedProxies) -> Option<IpAddr> {
    address_of(
        req.peer_addr().map(|a| a.ip()),
        req.headers().get_all("X-Forwarded-For"),
        trusted,
    )
}

pub(crate) fn address_of<'a>(
    peer: Option<IpAddr>,
    forwarded: impl Iterator<Item = &'a actix_web::http::header::HeaderValue>,
    trusted: &TrustedProxies,
) -> Option<IpAddr> {
    let peer = peer?;
    if !trusted.trusts(&peer) {
        return Some(peer);
    }
    let hops: Vec<IpAddr> = forwarded
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|hop| hop.trim().parse().ok())
        .collect();
    hops.iter()
        .rev()
        .find(|hop| !trusted.trusts(hop))
        .or(hops.first())
        .copied()
        .or(Some(peer))
}

/// What a stream or a quota counts against: a client that names itself with a well-formed id,
/// and the address the request comes from (both are capped; ids are free to make).
pub(crate) fn client_and_address(
    req: &HttpRequest,
    trusted: &TrustedProxies,
) -> ApiResult<(Option<Uuid>, Option<IpAddr>)> {
    Ok((named_client(req)?, client_address(req, trusted)))
}

/// The scheme and host the request came to, for a link that works from another device.
pub(crate) fn origin(req: &HttpRequest) -> String {
    let info = req.connection_info();
    format!("{}://{}", info.scheme(), info.host())
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header::HeaderValue;

    fn from(peer: &str, forwarded: &str, trusted: &[&str]) -> IpAddr {
        let trusted = TrustedProxies(trusted.iter().map(|t| t.parse().unwrap()).collect());
        let header = HeaderValue::from_str(forwarded).unwrap();
        address_of(
            Some(peer.parse().unwrap()),
            std::iter::once(&header),
            &trusted,
        )
        .unwrap()
    }

    #[test]
    fn trusted_proxies_are_addresses_or_ranges() {
        // A proxy inside a trusted range is believed; the nearest untrusted hop counts.
        let hops = "198.51.100.4, 10.1.2.3";
        assert_eq!(
            from("10.9.9.9", hops, &["10.0.0.0/8"]),
            "198.51.100.4".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            from("10.9.9.9", hops, &["10.9.9.9"]),
            "10.1.2.3".parse::<IpAddr>().unwrap()
        );
        // A peer outside every range names itself, whatever it forwards.
        assert_eq!(
            from("192.0.2.1", hops, &["10.0.0.0/8"]),
            "192.0.2.1".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            from("fd00::1", "2001:db8::5", &["fd00::/8"]),
            "2001:db8::5".parse::<IpAddr>().unwrap()
        );
        // Host bits are dropped; nonsense is refused with its reason.
        assert_eq!(
            String::from("10.1.2.3/8".parse::<AddressRange>().unwrap()),
            "10.0.0.0/8"
        );
        assert_eq!(
            String::from("10.1.2.3".parse::<AddressRange>().unwrap()),
            "10.1.2.3"
        );
        assert!("10.0.0.0/33".parse::<AddressRange>().is_err());
        assert!("proxy.local".parse::<AddressRange>().is_err());
    }
}
