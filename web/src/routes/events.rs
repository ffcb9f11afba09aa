//! `GET /api/v1/jobs/{id}/events`: Server-Sent Events, one `job` event with the job's JSON
//! whenever it changes, ending once the job is done or failed.
//!
//! The stream wakes at once when the imageresponse listener in this process finishes the job, and
//! otherwise re-reads the record every `events_poll_ms` (progress is written by the controller,
//! which may run elsewhere). A comment line every 15 s keeps idle proxies from closing it.

use std::time::Duration;

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use bytes::Bytes;
use tokio::sync::broadcast;
use tokio::time::Instant;
use uuid::Uuid;

use tessera_shared::jobs::{JobError, JobStore};

use super::jobs::job_id;
use crate::error::ApiResult;
use crate::state::AppState;
use crate::view::JobView;

const KEEP_ALIVE: Duration = Duration::from_secs(15);

struct Watch {
    job: Uuid,
    jobs: JobStore,
    changes: broadcast::Receiver<Uuid>,
    poll: Duration,
    retention: tessera_shared::lifecycle::RetentionSettings,
    last: Option<String>,
    last_sent: Instant,
    ended: bool,
}

pub async fn events(
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let job = job_id(&path)?;
    let changes = state.changes.subscribe();
    let jobs = state.platform.jobs();
    // Unknown jobs are a plain 404, before the stream starts.
    jobs.get(job).await?;
    let watch = Watch {
        job,
        jobs,
        changes,
        poll: Duration::from_millis(state.settings.events_poll_ms.max(50)),
        retention: state.settings.retention.clone(),
        last: None,
        last_sent: Instant::now(),
        ended: false,
    };
    let stream = futures_util::stream::unfold(watch, |mut w| async move {
        if w.ended {
            return None;
        }
        let event = w.next_event().await;
        Some((Ok::<_, actix_web::Error>(event), w))
    });
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "text/event-stream"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header(("X-Accel-Buffering", "no"))
        .streaming(stream))
}

impl Watch {
    /// Waits for the next thing worth sending: a changed record, an error, or a keep-alive.
    async fn next_event(&mut self) -> Bytes {
        loop {
            match self.jobs.get(self.job).await {
                Ok(record) => {
                    let json = serde_json::to_string(&JobView::new(&record, &self.retention))
                        .expect("job views serialize");
                    if self.last.as_deref() != Some(json.as_str()) {
                        self.ended = record.state.is_final();
                        let event = format!("event: job\ndata: {json}\n\n");
                        self.last = Some(json);
                        self.last_sent = Instant::now();
                        return Bytes::from(event);
                    }
                }
                Err(e) => {
                    let (code, message) = match &e {
                        JobError::NotFound(_) => ("job_not_found", "the job no longer exists"),
                        _ => ("internal", "the job could not be read"),
                    };
                    if !matches!(e, JobError::NotFound(_)) {
                        tracing::warn!(job = %self.job, error = %e, "event stream cannot read the job");
                        // Storage may come back: keep the stream, say so, and retry.
                        if self.last_sent.elapsed() < KEEP_ALIVE {
                            tokio::time::sleep(self.poll).await;
                            continue;
                        }
                    } else {
                        self.ended = true;
                    }
                    self.last_sent = Instant::now();
                    let data = serde_json::json!({"error": {"code": code, "message": message}});
                    return Bytes::from(format!("event: error\ndata: {data}\n\n"));
                }
            }
            if self.last_sent.elapsed() >= KEEP_ALIVE {
                self.last_sent = Instant::now();
                return Bytes::from_static(b": keep-alive\n\n");
            }
            self.wait().await;
        }
    }

    /// Sleeps until this job is said to have changed, or the poll interval passes.
    async fn wait(&mut self) {
        let job = self.job;
        let changes = &mut self.changes;
        let woken = async {
            loop {
                match changes.recv().await {
                    Ok(j) if j == job => return,
                    Ok(_) => continue,
                    Err(broadcast::error::RecvError::Lagged(_)) => return,
                    Err(broadcast::error::RecvError::Closed) => std::future::pending::<()>().await,
                }
            }
        };
        let _ = tokio::time::timeout(self.poll, woken).await;
    }
}
