//! `GET /api/v1/jobs/{id}/events`: Server-Sent Events, one `job` event with the job's JSON
//! whenever it changes, ending once the job is done or failed.
//!
//! Every stream of one job in this process shares one poller (`crate::background::job_streams::StreamHub`), so
//! fifty open pages of a job cost what one costs. Streams are capped per client
//! (`web.max_streams_per_client`) and in all (`web.max_streams`), and end when the server shuts
//! down. A comment line every 15 s keeps idle proxies from closing a stream.

use std::time::Duration;

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use bytes::Bytes;
use tokio::sync::watch;

use crate::api::requested_job::RequestedJob;
use crate::api_error::{ApiResult, ErrorBody};
use crate::app_state::AppState;
use crate::background::job_streams::Seen;
use crate::guards::client::client_and_address;
use crate::job_view::JobView;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{Object, OneOf, Schema, Type};
use utoipa::{PartialSchema, ToSchema};

const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// One stream's state between events.
struct Stream {
    seen: watch::Receiver<Seen>,
    closing: watch::Receiver<bool>,
    last: Option<Seen>,
    done: bool,
    _seat: crate::background::job_streams::Seat,
}

/// One event of a job's stream, as OpenAPI 3.1 describes an event stream (its schema is that of
/// each event): `event: job` with the job's JSON in `data` whenever it changes, or
/// `event: error` with an error body when the job cannot be followed (it vanished, or storage
/// failed for too long).
pub struct JobEvent;

impl PartialSchema for JobEvent {
    fn schema() -> RefOr<Schema> {
        /// An event named `name` whose data is JSON of the component `data`.
        fn event(name: &str, data: &str) -> Schema {
            let mut payload = Object::builder()
                .schema_type(Type::String)
                .content_media_type("application/json")
                .build();
            payload
                .extensions
                .get_or_insert_with(Default::default)
                .insert(
                    "contentSchema".to_string(),
                    serde_json::json!({ "$ref": format!("#/components/schemas/{data}") }),
                );
            Object::builder()
                .property(
                    "event",
                    Object::builder()
                        .schema_type(Type::String)
                        .enum_values(Some([name])),
                )
                .required("event")
                .property("data", payload)
                .required("data")
                .build()
                .into()
        }
        OneOf::builder()
            .item(event("job", "Job"))
            .item(event("error", "Error"))
            .into()
    }
}

impl ToSchema for JobEvent {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((JobView::name().into(), JobView::schema()));
        JobView::schemas(schemas);
        schemas.push((ErrorBody::name().into(), ErrorBody::schema()));
        ErrorBody::schemas(schemas);
    }
}

/// Server-Sent Events: a `job` event with the job's JSON on every change, until done or failed.
///
/// Each event is described by the JobEvent schema; a comment line every 15 s keeps the stream
/// open.
#[utoipa::path(
    get,
    path = "/api/v1/jobs/{id}/events",
    operation_id = "job_events",
    tag = "jobs",
    params(("id" = uuid::Uuid, Path, description = "The job's id")),
    responses(
        (status = 200, description = "An event stream", content_type = "text/event-stream", body = JobEvent),
        crate::api::error_sets::LookupErrors,
        (status = 429, description = "too_many_streams: the client or the server has as many event streams open as allowed", body = crate::api_error::ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
    ),
)]
pub async fn events(
    req: HttpRequest,
    // Unknown jobs are a plain 404, before the stream starts.
    job: RequestedJob,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let job = job.id;
    let (client, address) = client_and_address(&req, state.guard.trusted_proxies())?;
    let seat = state.streams.seat(client, address)?;
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
                        let data = serde_json::to_string(&ErrorBody::new(code, message))
                            .unwrap_or_default();
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
