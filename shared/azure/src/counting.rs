//! Counting at the wire: every HTTP request that reaches the storage service is one billed
//! transaction, so the backend counts requests, not port calls. That way the calls one port
//! method makes in several requests (a container created on the first write, staged blocks and
//! their commit, the SDK's own retries) are counted as the service's log records them.
//!
//! The policy sits among the per-try policies: each attempt of a retried request is counted,
//! once its response (any status) has arrived. A request that never got an answer (no
//! connection) is not counted; the service did not see it.

use std::sync::Arc;

use async_trait::async_trait;
use azure_core::http::policies::{Policy, PolicyResult};
use azure_core::http::{Context, Method, Request};
use tessera_shared::accounting::{Accounting, Op};
use url::Url;

/// Counts each request to either service in an [`Accounting`], by kind and by queue or
/// container, charged to the current job where there is one.
#[derive(Debug)]
pub(crate) struct CountingPolicy {
    accounting: Accounting,
    queue_endpoint: Url,
    blob_endpoint: Url,
}

impl CountingPolicy {
    pub(crate) fn new(accounting: Accounting, queue_endpoint: Url, blob_endpoint: Url) -> Self {
        Self {
            accounting,
            queue_endpoint,
            blob_endpoint,
        }
    }

    /// The kind and target of a request, or `None` for a request to neither service.
    fn classify(&self, method: &Method, url: &Url) -> Option<(Op, String)> {
        if let Some(segments) = below(&self.queue_endpoint, url) {
            Some(queue_request(method, url, &segments))
        } else {
            below(&self.blob_endpoint, url).map(|segments| blob_request(method, url, &segments))
        }
    }
}

#[async_trait]
impl Policy for CountingPolicy {
    async fn send(
        &self,
        ctx: &Context,
        request: &mut Request,
        next: &[Arc<dyn Policy>],
    ) -> PolicyResult {
        let kind = self.classify(&request.method(), request.url());
        let response = next[0].send(ctx, request, &next[1..]).await;
        if let (Ok(_), Some((op, target))) = (&response, kind) {
            self.accounting.record(op, &target);
        }
        response
    }
}

/// The path segments of `url` below `base`, when `url` is on `base`'s origin and path.
fn below(base: &Url, url: &Url) -> Option<Vec<String>> {
    if base.origin() != url.origin() {
        return None;
    }
    let base_path = base.path().trim_end_matches('/');
    let rest = url.path().strip_prefix(base_path)?;
    if !(rest.is_empty() || rest.starts_with('/')) {
        return None;
    }
    Some(
        rest.split('/')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
    )
}

fn query_has(url: &Url, key: &str, value: &str) -> bool {
    url.query_pairs()
        .any(|(k, v)| k.eq_ignore_ascii_case(key) && v.eq_ignore_ascii_case(value))
}

/// Queue service: `/`, `/<queue>`, `/<queue>/messages`, `/<queue>/messages/<id>`.
fn queue_request(method: &Method, url: &Url, segments: &[String]) -> (Op, String) {
    let Some(queue) = segments.first() else {
        return (Op::Admin, "*".into());
    };
    let op = match (segments.len(), method) {
        (1, _) if query_has(url, "comp", "metadata") => Op::Metadata,
        (1, _) => Op::Admin,
        (2, Method::Post) => Op::Put,
        (2, Method::Get) if query_has(url, "peekonly", "true") => Op::Peek,
        (2, Method::Get) => Op::Get,
        (2, _) => Op::Admin,
        (_, Method::Delete) => Op::Delete,
        _ => Op::Update,
    };
    (op, queue.clone())
}

/// Blob service: `/`, `/<container>?restype=container…`, `/<container>/<blob path>`.
fn blob_request(method: &Method, url: &Url, segments: &[String]) -> (Op, String) {
    let Some(container) = segments.first() else {
        return (Op::Admin, "*".into());
    };
    let op = if segments.len() == 1 {
        if query_has(url, "comp", "list") {
            Op::List
        } else {
            Op::Admin
        }
    } else {
        match method {
            Method::Get | Method::Head => Op::BlobRead,
            Method::Delete => Op::BlobDelete,
            _ => Op::BlobWrite,
        }
    };
    (op, container.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> CountingPolicy {
        CountingPolicy::new(
            Accounting::new(),
            Url::parse("http://127.0.0.1:10001/devstoreaccount1").unwrap(),
            Url::parse("http://127.0.0.1:10000/devstoreaccount1").unwrap(),
        )
    }

    fn kind(method: Method, url: &str) -> Option<(Op, String)> {
        policy().classify(&method, &Url::parse(url).unwrap())
    }

    #[test]
    fn queue_requests_are_classified_as_azure_bills_them() {
        let q = "http://127.0.0.1:10001/devstoreaccount1";
        let cases = [
            (Method::Put, format!("{q}/jobs"), Op::Admin),
            (Method::Get, format!("{q}/jobs?comp=metadata"), Op::Metadata),
            (Method::Post, format!("{q}/jobs/messages"), Op::Put),
            (
                Method::Get,
                format!("{q}/jobs/messages?numofmessages=16"),
                Op::Get,
            ),
            (
                Method::Get,
                format!("{q}/jobs/messages?peekonly=true"),
                Op::Peek,
            ),
            (Method::Delete, format!("{q}/jobs/messages"), Op::Admin),
            (
                Method::Delete,
                format!("{q}/jobs/messages/1?popreceipt=x"),
                Op::Delete,
            ),
            (
                Method::Put,
                format!("{q}/jobs/messages/1?popreceipt=x"),
                Op::Update,
            ),
        ];
        for (method, url, op) in cases {
            assert_eq!(kind(method, &url), Some((op, "jobs".into())), "{url}");
        }
        assert_eq!(
            kind(Method::Get, &format!("{q}?comp=list")),
            Some((Op::Admin, "*".into()))
        );
    }

    #[test]
    fn blob_requests_are_classified_as_azure_bills_them() {
        let b = "http://127.0.0.1:10000/devstoreaccount1";
        let cases = [
            (
                Method::Put,
                format!("{b}/nudges?restype=container"),
                Op::Admin,
            ),
            (
                Method::Get,
                format!("{b}/nudges?restype=container&comp=list"),
                Op::List,
            ),
            (
                Method::Put,
                format!("{b}/nudges/listeners/q/a"),
                Op::BlobWrite,
            ),
            (
                Method::Put,
                format!("{b}/nudges/a?comp=block&blockid=x"),
                Op::BlobWrite,
            ),
            (Method::Head, format!("{b}/nudges/a"), Op::BlobRead),
            (Method::Get, format!("{b}/nudges/a"), Op::BlobRead),
            (Method::Delete, format!("{b}/nudges/a"), Op::BlobDelete),
        ];
        for (method, url, op) in cases {
            assert_eq!(kind(method, &url), Some((op, "nudges".into())), "{url}");
        }
    }

    #[test]
    fn requests_elsewhere_are_not_storage_transactions() {
        assert_eq!(
            kind(Method::Get, "http://127.0.0.1:9/devstoreaccount1/x"),
            None
        );
        assert_eq!(kind(Method::Get, "http://127.0.0.1:10000/other/x"), None);
        assert_eq!(
            kind(Method::Get, "http://127.0.0.1:10000/devstoreaccount10/x"),
            None
        );
    }
}
