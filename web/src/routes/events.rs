//! `GET /api/v1/jobs/{id}/events`: Server-Sent Events, one `job` event with the job's JSON
//! whenever it changes, ending once the job is done or failed.
//!
//! Every stream of one job in this process shares one poller (`crate::streams::StreamHub`), so
//! fifty open pages of a job cost what one costs. Streams are capped per client
//! (`web.max_streams_per_client`) and in all (`web.max_streams`), and end when the server shuts
//! down. A comment line every 15 s keeps idle proxies from closing a stream.

use std::time::Duration;

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use bytes::Bytes;
use tokio::sync::watch;

use crate::client::{client_or_address, job_id};
use crate::error::ApiResult;
use crate::state::AppState;
use crate::streams::Seen;

const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// One stream's state between events.
struct Stream {
    seen: watch::Receiver<Seen>,
    closing: watch::Receiver<bool>,
    last: Option<Seen>,
    done: bool,
    _seat: crate::streams::Seat,
}

pub async fn events(
    req: HttpRequest,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let job = job_id(&path)?;
    // Unknown jobs are a plain 404, before the stream starts.
    state.platform.jobs().get(job).await?;
    let seat = state.streams.seat(client_or_address(&req))?;
    let mut seen = state.streams.watch(job);
    seen.mark_changed();
    let stream = Stream {
        seen,
        closing: state.streams.closing(),
        last: None,
        done: false,
        _seat: seat,
    };
    let body = futures_util::stream::unfold(stream, |mut s| async move {
        if s.done {
            return None;
        }
        let event = s.next_event().await?;
        Some((Ok::<_, actix_web::Error>(event), s))
    });
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "text/event-stream"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header(("X-Accel-Buffering", "no"))
        .streaming(body))
}

impl Stream {
    /// The next thing worth sending: a changed job, an error, or a keep-alive; `None` ends the
    /// stream (the server is shutting down, or the poller is gone).
    async fn next_event(&mut self) -> Option<Bytes> {
        loop {
            if *self.closing.borrow() {
                return None;
            }
            let seen = self.seen.borrow_and_update().clone();
            if self.last.as_ref() != Some(&seen) {
                self.last = Some(seen.clone());
                match seen {
                    Seen::Nothing => {}
                    Seen::Job { json, ended } => {
                        self.done = ended;
                        return Some(Bytes::from(format!("event: job\ndata: {json}\n\n")));
                    }
                    Seen::Error {
                        code,
                        message,
                        ended,
                    } => {
                        self.done = ended;
                        let data = serde_json::json!({"error": {"code": code, "message": message}});
                        return Some(Bytes::from(format!("event: error\ndata: {data}\n\n")));
                    }
                }
            }
            tokio::select! {
                changed = self.seen.changed() => {
                    if changed.is_err() {
                        // The poller stopped without a final word (the server is closing).
                        return None;
                    }
                }
                _ = self.closing.changed() => return None,
                _ = tokio::time::sleep(KEEP_ALIVE) => {
                    return Some(Bytes::from_static(b": keep-alive\n\n"));
                }
            }
        }
    }
}
