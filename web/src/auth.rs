//! The optional API key (`web.api_key`). When one is configured every request must carry it,
//! except the health checks, the static assets and the sign-in page itself.
//!
//! API clients send `Authorization: Bearer KEY` or `X-API-Key: KEY`. A browser signs in once at
//! `/signin`, which sets an HttpOnly, SameSite=Strict cookie holding an HMAC-SHA256 of a fixed
//! label under the key (never the key itself), so the pages' own `fetch` and `EventSource` calls
//! to `/api/v1` carry it. Every comparison is constant-time. Without a key the service is open.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix_web::cookie::{Cookie, SameSite};
use actix_web::dev::ServiceRequest;
use actix_web::http::{Method, StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use hmac::{Hmac, Mac};
use serde::Deserialize;
use sha2::Sha256;

use crate::client::CLIENT_COOKIE;
use crate::error::{ApiError, ApiResult};
use crate::settings::ApiKey;

/// The cookie a signed-in browser carries.
pub const SESSION_COOKIE: &str = "tessera_session";
/// The header API clients may send the key in (besides `Authorization: Bearer`).
pub const API_KEY_HEADER: &str = "X-API-Key";
/// Where browsers sign in.
pub const SIGN_IN_PATH: &str = "/signin";
/// How long a browser stays signed in.
const SESSION_DAYS: i64 = 30;
/// What the session cookie is a MAC of. Changing it signs every browser out.
const SESSION_LABEL: &[u8] = b"tessera-web session v1";

type HmacSha256 = Hmac<Sha256>;

/// Failed sign-ins one address may make per [`SIGN_IN_WINDOW`]; more are answered 429.
const MAX_SIGN_IN_FAILURES: u32 = 5;
const SIGN_IN_WINDOW: Duration = Duration::from_secs(60);
/// Where browsers sign out.
pub const SIGN_OUT_PATH: &str = "/signout";

/// The key check every request passes through; cheap to clone.
#[derive(Clone)]
pub struct Guard {
    key: Option<Vec<u8>>,
    /// Failed sign-ins by address, in the current window of each.
    failures: Arc<Mutex<HashMap<IpAddr, (Instant, u32)>>>,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("key_required", &self.key.is_some())
            .finish()
    }
}

fn session_mac(key: &[u8]) -> HmacSha256 {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(SESSION_LABEL);
    mac
}

impl Guard {
    pub fn new(key: &ApiKey) -> Self {
        Guard {
            key: key.get().map(|k| k.as_bytes().to_vec()),
            failures: Arc::default(),
        }
    }

    /// How long `from` must wait before trying to sign in again, if it has failed too often.
    fn sign_in_blocked(&self, from: Option<IpAddr>) -> Option<Duration> {
        let from = from?;
        let failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let (start, count) = failures.get(&from)?;
        let left = SIGN_IN_WINDOW.checked_sub(start.elapsed())?;
        (*count >= MAX_SIGN_IN_FAILURES).then_some(left)
    }

    fn sign_in_failed(&self, from: Option<IpAddr>) {
        let Some(from) = from else { return };
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        if failures.len() > 4096 {
            failures.retain(|_, (start, _)| start.elapsed() < SIGN_IN_WINDOW);
        }
        let entry = failures.entry(from).or_insert((Instant::now(), 0));
        if entry.0.elapsed() >= SIGN_IN_WINDOW {
            *entry = (Instant::now(), 0);
        }
        entry.1 += 1;
    }

    /// Whether a key is configured.
    pub fn required(&self) -> bool {
        self.key.is_some()
    }

    /// Whether `presented` is the key: the MACs both keys make of the label are compared in
    /// constant time, so neither the key's length nor its content leaks through timing.
    pub fn key_matches(&self, presented: &str) -> bool {
        let Some(key) = &self.key else { return true };
        let expected = session_mac(key).finalize().into_bytes();
        session_mac(presented.as_bytes())
            .verify_slice(&expected)
            .is_ok()
    }

    /// The session cookie's value for the configured key (hex of the MAC).
    fn session_value(&self) -> Option<String> {
        let key = self.key.as_ref()?;
        Some(hex(&session_mac(key).finalize().into_bytes()))
    }

    /// Whether a session cookie's value is the configured key's MAC (constant-time).
    pub fn session_matches(&self, value: &str) -> bool {
        let Some(key) = &self.key else { return true };
        match unhex(value) {
            Some(bytes) => session_mac(key).verify_slice(&bytes).is_ok(),
            None => false,
        }
    }

    /// Whether a request carries the key: in a header, or as a signed-in browser's cookie.
    fn admits(&self, req: &ServiceRequest) -> bool {
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
            return self.key_matches(presented.trim());
        }
        req.cookie(SESSION_COOKIE)
            .is_some_and(|c| self.session_matches(c.value()))
    }

    /// What to answer instead of serving `req`, or `None` to serve it: API calls without the key
    /// get a 401, a browser asking for a page is sent to sign in.
    pub fn check(&self, req: &ServiceRequest) -> Option<HttpResponse> {
        if !self.required() || is_open(req.path()) || self.admits(req) {
            return None;
        }
        let page = !req.path().starts_with("/api/")
            && matches!(
                *req.method(),
                actix_web::http::Method::GET | actix_web::http::Method::HEAD
            );
        if page {
            let here = match req.query_string() {
                "" => req.path().to_string(),
                q => format!("{}?{q}", req.path()),
            };
            return Some(
                HttpResponse::SeeOther()
                    .insert_header((
                        header::LOCATION,
                        format!("{SIGN_IN_PATH}?next={}", percent_encode(&here)),
                    ))
                    .insert_header((header::CACHE_CONTROL, "no-store"))
                    .finish(),
            );
        }
        Some(unauthorized())
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
        "cross_site_request",
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
        "unauthorized",
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

/// `POST /signout`: the session cookie goes; back to the sign-in page.
async fn sign_out(req: HttpRequest) -> ApiResult<HttpResponse> {
    if !same_origin(&req) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "cross_site_request",
            "sign out from this site's own pages",
        ));
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
            "cross_site_request",
            "sign in from this site's own sign-in page",
        ));
    }
    let next = local_path(form.next.as_deref());
    let Some(value) = guard.session_value() else {
        return Ok(HttpResponse::SeeOther()
            .insert_header((header::LOCATION, next))
            .finish());
    };
    let from = req.peer_addr().map(|a| a.ip());
    if let Some(wait) = guard.sign_in_blocked(from) {
        tracing::warn!(?from, "sign-in refused: too many failed attempts");
        return Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_sign_in_attempts",
            "too many wrong keys from this address: wait a minute and try again",
        )
        .retry_after(wait));
    }
    if !guard.key_matches(form.key.trim()) {
        guard.sign_in_failed(from);
        tracing::info!("sign-in refused: wrong key");
        return sign_in_form(
            StatusCode::UNAUTHORIZED,
            &SignInPage {
                next,
                error: Some("That is not the key. Check it and try again."),
            },
        );
    }
    let cookie = Cookie::build(SESSION_COOKIE, value)
        .path("/")
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(req.connection_info().scheme() == "https")
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

fn hex(bytes: &[u8]) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_and_its_session_value_match_only_themselves() {
        let guard = Guard::new(&ApiKey::new("s3cret"));
        assert!(guard.key_matches("s3cret"));
        assert!(!guard.key_matches("s3cre"));
        assert!(!guard.key_matches(""));
        let value = guard.session_value().unwrap();
        assert!(!value.contains("s3cret"));
        assert!(guard.session_matches(&value));
        assert!(!guard.session_matches(&value[..62]));
        assert!(!guard.session_matches("s3cret"));
        let other = Guard::new(&ApiKey::new("other")).session_value().unwrap();
        assert!(!guard.session_matches(&other));
        assert!(!Guard::new(&ApiKey::default()).required());
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
