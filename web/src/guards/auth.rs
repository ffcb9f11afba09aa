//! The optional keys: the operator's (`web.api_key`) and named keys for API users
//! (`[web.keys]`, each a SHA-256 digest). When any is configured every request must carry one,
//! except the health checks, the static assets and the sign-in page itself.
//!
//! API clients send `Authorization: Bearer KEY` or `X-API-Key: KEY`. A browser signs in once at
//! `/signin`, which sets an HttpOnly, SameSite=Strict cookie holding a random session token;
//! the session (which key, until when) is kept in storage under the token's digest and deleted
//! on sign-out. Wrong keys, in a header or at sign-in, count against the address they come from
//! (behind a trusted proxy, the address it names): past a few a minute they are answered 429,
//! while the right key is still let in. Every comparison is constant-time. Without a key the
//! service is open.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tessera_shared::error_code::ErrorCode;

use actix_web::cookie::{Cookie, SameSite};
use actix_web::dev::ServiceRequest;
use actix_web::http::{Method, StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use bytes::Bytes;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use time::OffsetDateTime;

use tessera_shared::keys::BlobKey;
use tessera_shared::storage::{BlobStore, PutMode, StorageError};

use crate::api_error::{ApiError, ApiResult};
use crate::guards::client::{CLIENT_COOKIE, Credential, TrustedProxies, address_of, over_https};
use crate::web_settings::ApiKey;

/// The cookie a signed-in browser carries.
pub const SESSION_COOKIE: &str = "tessera_session";
/// The header API clients may send the key in (besides `Authorization: Bearer`).
pub const API_KEY_HEADER: &str = "X-API-Key";
/// Where browsers sign in.
pub const SIGN_IN_PATH: &str = "/signin";
/// How long a browser stays signed in.
const SESSION_DAYS: i64 = tessera_shared::lifecycle::SESSION_LIFETIME_DAYS;
/// How long a session read from storage is believed before it is read again (a sign-out in
/// another web process takes this long to reach this one).
const SESSION_RECHECK: Duration = Duration::from_secs(30);

type HmacSha256 = Hmac<Sha256>;

/// Wrong keys one address may send per [`FAILURE_WINDOW`]; more are answered 429.
const MAX_FAILURES: u32 = 5;
const FAILURE_WINDOW: Duration = Duration::from_secs(60);
/// Where browsers sign out.
pub const SIGN_OUT_PATH: &str = "/signout";

/// A named key: its name (the owner of what it makes) and the SHA-256 of the key.
#[derive(Clone)]
struct NamedKey {
    name: String,
    digest: [u8; 32],
}

/// The key check every request passes through; cheap to clone.
#[derive(Clone)]
pub struct Guard {
    operator: Option<Vec<u8>>,
    named: Arc<Vec<NamedKey>>,
    /// Wrong keys by address, in the current window of each.
    failures: Arc<Mutex<HashMap<IpAddr, (Instant, u32)>>>,
    sessions: Sessions,
    trusted: TrustedProxies,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("key_required", &self.required())
            .field("named_keys", &self.named.len())
            .finish()
    }
}

fn key_mac(key: &[u8]) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(b"tessera-web key check v1");
    mac
}

/// Parses a named key's digest: 64 hex digits, optionally after `sha256:`.
pub fn parse_key_digest(text: &str) -> Option<[u8; 32]> {
    let hex = text.trim().strip_prefix("sha256:").unwrap_or(text.trim());
    unhex(hex)?.try_into().ok()
}

/// Whether a key name is usable as an owner: 1 to 48 letters, digits, `-` and `_`.
pub fn valid_key_name(name: &str) -> bool {
    (1..=48).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

impl Guard {
    /// The check for the operator's key and the named keys (`name` to `sha256:HEX`), keeping
    /// sessions in `blobs`. Fails on a named key that does not read.
    pub fn new(
        operator: &ApiKey,
        named: &BTreeMap<String, String>,
        trusted: TrustedProxies,
        blobs: Arc<dyn BlobStore>,
    ) -> anyhow::Result<Self> {
        let mut keys = Vec::new();
        for (name, digest) in named {
            if !valid_key_name(name) {
                anyhow::bail!(
                    "web.keys: the key name {name:?} must be 1 to 48 letters, digits, - or _"
                );
            }
            let digest = parse_key_digest(digest).ok_or_else(|| {
                anyhow::anyhow!(
                    "web.keys.{name}: give the key's SHA-256 as 64 hex digits \
                     (printf %s \"$KEY\" | sha256sum), not the key"
                )
            })?;
            keys.push(NamedKey {
                name: name.clone(),
                digest,
            });
        }
        Ok(Guard {
            operator: operator.get().map(|k| k.as_bytes().to_vec()),
            named: Arc::new(keys),
            failures: Arc::default(),
            sessions: Sessions::new(blobs),
            trusted,
        })
    }

    /// The proxies whose forwarded addresses are believed.
    pub fn trusted_proxies(&self) -> &TrustedProxies {
        &self.trusted
    }

    /// How long `from` must wait before a wrong key is looked at again, if it sent too many.
    fn blocked(&self, from: Option<IpAddr>) -> Option<Duration> {
        let from = crate::guards::client::limited_network(from?);
        let failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let (start, count) = failures.get(&from)?;
        let left = FAILURE_WINDOW.checked_sub(start.elapsed())?;
        (*count >= MAX_FAILURES).then_some(left)
    }

    fn failed(&self, from: Option<IpAddr>) {
        let Some(from) = from.map(crate::guards::client::limited_network) else {
            return;
        };
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        if failures.len() > 4096 {
            failures.retain(|_, (start, _)| start.elapsed() < FAILURE_WINDOW);
        }
        let entry = failures.entry(from).or_insert((Instant::now(), 0));
        if entry.0.elapsed() >= FAILURE_WINDOW {
            *entry = (Instant::now(), 0);
        }
        entry.1 += 1;
    }

    /// Whether a key is configured.
    pub fn required(&self) -> bool {
        self.operator.is_some() || !self.named.is_empty()
    }

    /// Which key `presented` is, if any. Every configured key is compared, each in constant
    /// time (MACs of both for the operator's, digests for the named), so timing tells nothing.
    pub fn identify(&self, presented: &str) -> Option<Credential> {
        let mut found = None;
        if let Some(key) = &self.operator {
            let expected = key_mac(key).finalize().into_bytes();
            if key_mac(presented.as_bytes())
                .verify_slice(&expected)
                .is_ok()
            {
                found = Some(Credential::Operator);
            }
        }
        let digest: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
        for key in self.named.iter() {
            let same = same_secret(&key.digest, &digest);
            if same && found.is_none() {
                found = Some(Credential::Key(key.name.clone()));
            }
        }
        found
    }

    /// Whether a credential still names a configured key (a session outlives a key removed).
    fn configured(&self, credential: &Credential) -> bool {
        match credential {
            Credential::Operator => self.operator.is_some(),
            Credential::Key(name) => self.named.iter().any(|k| &k.name == name),
        }
    }

    /// Checks `req`: `Ok` with the credential it carries (none when the service is open or the
    /// path is), or the answer to give instead of serving it: 401 (or the sign-in page for a
    /// browser), 429 for an address that sent too many wrong keys.
    pub async fn check(&self, req: &ServiceRequest) -> Result<Option<Credential>, HttpResponse> {
        if !self.required() {
            return Ok(None);
        }
        let headers = req.headers();
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            });
        let named = headers.get(API_KEY_HEADER).and_then(|v| v.to_str().ok());
        if let Some(presented) = bearer.or(named) {
            if let Some(credential) = self.identify(presented.trim()) {
                return Ok(Some(credential));
            }
            let from = address_of(
                req.peer_addr().map(|a| a.ip()),
                headers.get_all("X-Forwarded-For"),
                &self.trusted,
            );
            let blocked = self.blocked(from);
            self.failed(from);
            if let Some(wait) = blocked {
                tracing::warn!(?from, "wrong API keys: answered 429");
                return Err(actix_web::ResponseError::error_response(
                    &too_many_failures(wait),
                ));
            }
            if !is_open(req.path()) {
                return Err(unauthorized());
            }
        }
        if is_open(req.path()) {
            return Ok(None);
        }
        if let Some(cookie) = req.cookie(SESSION_COOKIE)
            && let Some(credential) = self.sessions.find(cookie.value()).await
            && self.configured(&credential)
        {
            return Ok(Some(credential));
        }
        let page =
            !req.path().starts_with("/api/") && matches!(*req.method(), Method::GET | Method::HEAD);
        if page {
            let here = match req.query_string() {
                "" => req.path().to_string(),
                q => format!("{}?{q}", req.path()),
            };
            return Err(HttpResponse::SeeOther()
                .insert_header((
                    header::LOCATION,
                    format!("{SIGN_IN_PATH}?next={}", percent_encode(&here)),
                ))
                .insert_header((header::CACHE_CONTROL, "no-store"))
                .finish());
        }
        Err(unauthorized())
    }
}

/// The key check as middleware: a request the [`Guard`] admits goes on with its credential in
/// its extensions; any other gets the guard's answer.
pub async fn key_check(
    req: ServiceRequest,
    next: actix_web::middleware::Next<impl actix_web::body::MessageBody + 'static>,
) -> Result<actix_web::dev::ServiceResponse, actix_web::Error> {
    use actix_web::HttpMessage as _;
    let Some(guard) = req.app_data::<web::Data<Guard>>().cloned() else {
        return Ok(next.call(req).await?.map_into_boxed_body());
    };
    match guard.check(&req).await {
        Ok(credential) => {
            if let Some(credential) = credential {
                req.extensions_mut().insert(credential);
            }
            let mut res = next.call(req).await?.map_into_boxed_body();
            let private_job = res.request().extensions().contains::<PrivateAnswer>();
            if guard.required() || private_job {
                keep_private(res.headers_mut());
            }
            Ok(res)
        }
        Err(refused) => Ok(req.into_response(refused)),
    }
}

/// The 429 of an address that sent too many wrong keys.
fn too_many_failures(wait: Duration) -> ApiError {
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        ErrorCode::TooManyFailedKeys,
        "too many wrong keys from this address: wait a minute and try again",
    )
    .retry_after(wait)
}

/// A signed-in browser's session as stored.
#[derive(Debug, Serialize, Deserialize)]
struct SessionRecord {
    /// `operator`, or `key:NAME`.
    credential: String,
    #[serde(with = "time::serde::rfc3339")]
    expires_at: OffsetDateTime,
}

/// Sessions in storage (so every web process knows them), with the ones seen lately held.
#[derive(Clone)]
struct Sessions {
    blobs: Arc<dyn BlobStore>,
    /// By the token's digest.
    held: Arc<Mutex<HashMap<String, HeldSession>>>,
}

/// A session read lately: its credential, when it expires, when it was read.
type HeldSession = (Credential, OffsetDateTime, Instant);

impl Sessions {
    fn new(blobs: Arc<dyn BlobStore>) -> Self {
        Sessions {
            blobs,
            held: Arc::default(),
        }
    }

    fn digest(token: &str) -> String {
        hex(&Sha256::digest(token.as_bytes()))
    }

    /// Starts a session for `credential`: returns its token (32 random bytes, hex).
    async fn start(&self, credential: &Credential) -> Result<String, StorageError> {
        let token = hex(&rand::random::<[u8; 32]>());
        let record = SessionRecord {
            credential: match credential {
                Credential::Operator => "operator".into(),
                Credential::Key(name) => format!("key:{name}"),
            },
            expires_at: OffsetDateTime::now_utc() + time::Duration::days(SESSION_DAYS),
        };
        let key = BlobKey::Session {
            digest: Self::digest(&token),
        }
        .path();
        let body = Bytes::from(serde_json::to_vec(&record).expect("records serialize"));
        self.blobs.put(&key, body, PutMode::CreateNew).await?;
        Ok(token)
    }

    /// The credential of a live session, if `token` is one.
    async fn find(&self, token: &str) -> Option<Credential> {
        if token.len() != 64 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let digest = Self::digest(token);
        let now = OffsetDateTime::now_utc();
        if let Some((credential, expires, read)) = self
            .held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&digest)
            .cloned()
            && read.elapsed() < SESSION_RECHECK
        {
            return (expires > now).then_some(credential);
        }
        let key = BlobKey::Session {
            digest: digest.clone(),
        }
        .path();
        let record: SessionRecord = match self.blobs.get(&key).await {
            Ok(bytes) => serde_json::from_slice(&bytes).ok()?,
            Err(StorageError::NotFound(_)) => {
                self.forget(&digest);
                return None;
            }
            Err(e) => {
                tracing::warn!(error = %e, "a session could not be read");
                return None;
            }
        };
        if record.expires_at <= now {
            let _ = self.blobs.delete(&key).await;
            self.forget(&digest);
            return None;
        }
        let credential = match record.credential.as_str() {
            "operator" => Credential::Operator,
            other => Credential::Key(other.strip_prefix("key:")?.to_string()),
        };
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        if held.len() > 4096 {
            held.retain(|_, (_, _, read)| read.elapsed() < SESSION_RECHECK);
        }
        held.insert(
            digest,
            (credential.clone(), record.expires_at, Instant::now()),
        );
        Some(credential)
    }

    /// Ends the session of `token`: it is deleted from storage.
    async fn end(&self, token: &str) {
        let digest = Self::digest(token);
        self.forget(&digest);
        match self.blobs.delete(&BlobKey::Session { digest }.path()).await {
            Ok(()) | Err(StorageError::NotFound(_)) => {}
            Err(e) => tracing::warn!(error = %e, "a session could not be deleted"),
        }
    }

    fn forget(&self, digest: &str) {
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(digest);
    }
}

/// The header a script sends with a state-changing request (a cross-site form cannot).
pub const REQUESTED_WITH: &str = "X-Requested-With";

/// A cross-site request forgery defence for the API: a state-changing request that carries the
/// client cookie or the signed-in session cookie must come from a script of this site (the
/// `X-Requested-With` header, which a cross-site form cannot set) or name this site as its
/// `Origin`. Requests without either cookie (API clients naming themselves with `X-Client-Id`
/// and sending the key in a header, or none) hold no ambient authority.
pub fn forgery_check(req: &actix_web::dev::ServiceRequest) -> Option<ApiError> {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return None;
    }
    if req.cookie(CLIENT_COOKIE).is_none() && req.cookie(SESSION_COOKIE).is_none() {
        return None;
    }
    let headers = req.headers();
    if headers.contains_key(REQUESTED_WITH) || origin_is_host(headers) {
        return None;
    }
    Some(ApiError::new(
        StatusCode::FORBIDDEN,
        ErrorCode::CrossSiteRequest,
        "a request with this site's cookies must come from this site",
    ))
}

/// Whether a request's `Origin` names the site it was sent to (its `Host`).
pub(crate) fn origin_is_host(headers: &header::HeaderMap) -> bool {
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let origin = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok());
    match (host, origin) {
        (Some(host), Some(origin)) => {
            origin
                .strip_prefix("http://")
                .or_else(|| origin.strip_prefix("https://"))
                == Some(host)
        }
        _ => false,
    }
}

/// Marks a request whose answer only the browser may cache (one about a private job), key or
/// not.
#[derive(Clone, Copy)]
pub(crate) struct PrivateAnswer;

/// Behind a key, what is cacheable is cacheable by the browser alone: `public` becomes
/// `private`, so that no shared cache hands a protected image to someone without the key.
pub fn keep_private(headers: &mut header::HeaderMap) {
    let Some(value) = headers
        .get(header::CACHE_CONTROL)
        .and_then(|v| v.to_str().ok())
    else {
        return;
    };
    if value.contains("public") {
        let private = value.replace("public", "private");
        if let Ok(private) = header::HeaderValue::from_str(&private) {
            headers.insert(header::CACHE_CONTROL, private);
        }
    }
}

/// The 401 an API call without the key gets.
fn unauthorized() -> HttpResponse {
    let mut response = actix_web::ResponseError::error_response(&ApiError::new(
        StatusCode::UNAUTHORIZED,
        ErrorCode::Unauthorized,
        format!(
            "this service needs its API key: send Authorization: Bearer KEY or {API_KEY_HEADER}: KEY"
        ),
    ));
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer realm=\"tessera\""),
    );
    response
}

/// Paths served without the key: health checks, static assets, signing in and out.
fn is_open(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz" | SIGN_IN_PATH | SIGN_OUT_PATH)
        || path.starts_with("/static/")
}

/// Registers the sign-in page and sign-out.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route(SIGN_IN_PATH, web::get().to(sign_in_page))
        .route(SIGN_IN_PATH, web::post().to(sign_in))
        .route(SIGN_OUT_PATH, web::post().to(sign_out));
}

/// `POST /signout`: the session ends (in storage, so its token no longer works anywhere) and
/// its cookie goes; back to the sign-in page.
async fn sign_out(req: HttpRequest, guard: web::Data<Guard>) -> ApiResult<HttpResponse> {
    if !same_origin(&req) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            ErrorCode::CrossSiteRequest,
            "sign out from this site's own pages",
        ));
    }
    if let Some(cookie) = req.cookie(SESSION_COOKIE) {
        guard.sessions.end(cookie.value()).await;
    }
    let mut gone = Cookie::build(SESSION_COOKIE, "")
        .path("/")
        .http_only(true)
        .same_site(SameSite::Strict)
        .finish();
    gone.make_removal();
    Ok(HttpResponse::SeeOther()
        .cookie(gone)
        .insert_header((header::LOCATION, SIGN_IN_PATH))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .finish())
}

#[derive(Template)]
#[template(path = "signin.html")]
struct SignInPage {
    next: String,
    error: Option<&'static str>,
}

#[derive(Debug, Deserialize)]
struct Next {
    next: Option<String>,
}

#[derive(Deserialize)]
struct SignIn {
    key: String,
    next: Option<String>,
}

/// A local path to go back to after signing in; anything else (another site) becomes `/`.
fn local_path(next: Option<&str>) -> String {
    match next {
        Some(p)
            if p.starts_with('/')
                && !p.starts_with("//")
                && !p.starts_with("/\\")
                && !p.starts_with(SIGN_IN_PATH)
                && !p.chars().any(char::is_control) =>
        {
            p.to_string()
        }
        _ => "/".to_string(),
    }
}

fn sign_in_form(status: StatusCode, page: &SignInPage) -> ApiResult<HttpResponse> {
    let body = page.render().map_err(ApiError::internal)?;
    Ok(HttpResponse::build(status)
        .insert_header((header::CONTENT_TYPE, "text/html; charset=utf-8"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .body(body))
}

/// `GET /signin`: the form (or, with no key configured, straight on).
async fn sign_in_page(query: web::Query<Next>, guard: web::Data<Guard>) -> ApiResult<HttpResponse> {
    let next = local_path(query.next.as_deref());
    if !guard.required() {
        return Ok(HttpResponse::SeeOther()
            .insert_header((header::LOCATION, next))
            .finish());
    }
    sign_in_form(StatusCode::OK, &SignInPage { next, error: None })
}

/// `POST /signin`: checks the key and sets the session cookie. Only a form of this site may post
/// here (its `Origin`, or `Sec-Fetch-Site: same-origin`), like every other state change.
async fn sign_in(
    req: HttpRequest,
    form: web::Form<SignIn>,
    guard: web::Data<Guard>,
) -> ApiResult<HttpResponse> {
    if !same_origin(&req) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            ErrorCode::CrossSiteRequest,
            "sign in from this site's own sign-in page",
        ));
    }
    let next = local_path(form.next.as_deref());
    if !guard.required() {
        return Ok(HttpResponse::SeeOther()
            .insert_header((header::LOCATION, next))
            .finish());
    }
    let from = crate::guards::client::client_address(&req, &guard.trusted);
    // The right key is let in even from an address that sent too many wrong ones: whoever sits
    // behind the same address (or proxy) is not locked out by someone else's guesses.
    let Some(credential) = guard.identify(form.key.trim()) else {
        let blocked = guard.blocked(from);
        guard.failed(from);
        if let Some(wait) = blocked {
            tracing::warn!(?from, "sign-in refused: too many wrong keys");
            return Err(too_many_failures(wait));
        }
        tracing::info!("sign-in refused: wrong key");
        return sign_in_form(
            StatusCode::UNAUTHORIZED,
            &SignInPage {
                next,
                error: Some("That is not the key. Check it and try again."),
            },
        );
    };
    let token = guard.sessions.start(&credential).await?;
    let cookie = Cookie::build(SESSION_COOKIE, token)
        .path("/")
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(over_https(&req))
        .max_age(actix_web::cookie::time::Duration::days(SESSION_DAYS))
        .finish();
    Ok(HttpResponse::SeeOther()
        .cookie(cookie)
        .insert_header((header::LOCATION, next))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .finish())
}

/// Whether a form post came from a page of this site.
fn same_origin(req: &HttpRequest) -> bool {
    let headers = req.headers();
    if headers
        .get("Sec-Fetch-Site")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == "same-origin")
    {
        return true;
    }
    origin_is_host(headers)
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

/// Percent-encodes everything but unreserved characters and `/`, for a query value.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A new secret for a link (an event's contribute link, a job's share link): two random UUIDs,
/// 244 random bits, as hex.
pub(crate) fn new_secret() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// Whether two secrets are equal, compared in time that does not depend on where they differ.
pub(crate) fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(named: &[(&str, &str)]) -> Guard {
        let named = named
            .iter()
            .map(|(n, k)| (n.to_string(), hex(&Sha256::digest(k.as_bytes()))))
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let blobs = tessera_shared::storage::embedded::EmbeddedStorage::open(dir.path())
            .unwrap()
            .blobs();
        Guard::new(
            &ApiKey::new("s3cret"),
            &named,
            TrustedProxies::default(),
            blobs,
        )
        .unwrap()
    }

    #[test]
    fn wrong_keys_count_per_ipv6_network_not_per_address() {
        let guard = guard(&[]);
        // Each wrong key from a new address of one /64.
        for i in 0..MAX_FAILURES {
            let from: IpAddr = format!("2001:db8:1:2::{:x}", i + 1).parse().unwrap();
            assert!(guard.blocked(Some(from)).is_none());
            guard.failed(Some(from));
        }
        let next: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        assert!(guard.blocked(Some(next)).is_some(), "the /64 is blocked");
        let other: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert!(guard.blocked(Some(other)).is_none(), "another /64 is not");
    }

    #[test]
    fn each_key_names_its_holder_and_nothing_else_matches() {
        let guard = guard(&[("alice", "alice-key"), ("bob", "bob-key")]);
        assert_eq!(guard.identify("s3cret"), Some(Credential::Operator));
        assert_eq!(
            guard.identify("alice-key"),
            Some(Credential::Key("alice".into()))
        );
        assert_eq!(
            guard.identify("bob-key"),
            Some(Credential::Key("bob".into()))
        );
        for wrong in ["s3cre", "", "alice", "bob-key ", "sha256:"] {
            assert_eq!(guard.identify(wrong), None, "{wrong:?}");
        }
        assert!(guard.required());
        assert!(parse_key_digest("xyz").is_none());
        assert!(parse_key_digest(&format!("sha256:{}", "0f".repeat(32))).is_some());
    }

    #[test]
    fn only_local_paths_are_followed() {
        assert_eq!(local_path(Some("/jobs?x=1")), "/jobs?x=1");
        for bad in [
            "//evil.example",
            "https://evil.example",
            "/\\evil",
            "/signin",
        ] {
            assert_eq!(local_path(Some(bad)), "/", "{bad}");
        }
        assert_eq!(local_path(None), "/");
        assert_eq!(percent_encode("/jobs?a=b&c"), "/jobs%3Fa%3Db%26c");
    }
}
