//! The jobs page: the client's jobs, newest first, with thumbnails.

use super::page_answer::page;
use super::words::ago;
use crate::api_error::ApiResult;
use crate::app_state::AppState;
use crate::guards::client::CLIENT_COOKIE;
use crate::imaging::stored_mosaic::{level_size, top_level};
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use tessera_shared::jobs::{JobError, JobRecord, JobState};
use tessera_shared::keys::BlobKey;
use tessera_shared::storage::StorageError;
use uuid::Uuid;

pub(super) struct JobRow {
    id: Uuid,
    /// When it was submitted: RFC 3339, and in words relative to now.
    created: String,
    created_ago: String,
    input_name: String,
    /// The event it is a mosaic of, if any: its id and name.
    event: Option<(Uuid, String)>,
    state: &'static str,
    /// Still running (it may be cancelled) or ended (it may be deleted).
    running: bool,
    done: u32,
    total: u32,
    size: String,
    /// A done job's thumbnail: the top tile of its pyramid.
    thumb: Option<Thumb>,
}

/// Pixels on a side of the box a thumbnail is shown in.
pub(super) const THUMB_BOX: u32 = 64;

pub(super) struct Thumb {
    url: String,
    /// The size shown: the tile's, scaled to fit the box.
    width: u32,
    height: u32,
}

impl Thumb {
    /// The top tile of a done job's pyramid (the whole mosaic in at most 256 px); none for a job
    /// not done.
    fn of(record: &JobRecord) -> Option<Self> {
        let output = record.output.filter(|_| record.state == JobState::Done)?;
        let (w, h) = (output.width, output.height);
        if w == 0 || h == 0 {
            return None;
        }
        let top = top_level(w, h);
        let (tw, th) = level_size(w, h, top);
        let scale =
            |n: u32, of: u32| (u64::from(n) * u64::from(THUMB_BOX) / u64::from(of)).max(1) as u32;
        let (width, height) = if tw >= th {
            (THUMB_BOX, scale(th, tw))
        } else {
            (scale(tw, th), THUMB_BOX)
        };
        Some(Thumb {
            url: format!("/api/v1/jobs/{}/tiles/{top}/0/0", record.id),
            width,
            height,
        })
    }
}

#[derive(Template)]
#[template(path = "jobs.html")]
pub(super) struct JobsPage {
    jobs: Vec<JobRow>,
}

/// Jobs listed per page at most.
pub(super) const MAX_LISTED_JOBS: usize = 200;

pub(super) async fn jobs(req: HttpRequest, state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let client = req
        .cookie(CLIENT_COOKIE)
        .and_then(|c| Uuid::parse_str(c.value()).ok());
    let mut records: Vec<JobRecord> = Vec::new();
    if let Some(client) = client {
        let prefix = BlobKey::client_jobs_prefix(client);
        let mut markers = Vec::new();
        let mut page_token = None;
        loop {
            let page = match state.platform.blobs.list(&prefix, 500, page_token).await {
                Ok(p) => p,
                Err(StorageError::NotFound(_)) => break,
                Err(e) => return Err(e.into()),
            };
            markers.extend(page.items.into_iter().filter_map(|m| {
                let id = m
                    .key
                    .rsplit('/')
                    .next()
                    .and_then(|s| Uuid::parse_str(s).ok())?;
                Some((m.last_modified, id))
            }));
            match page.next {
                Some(next) if markers.len() < 10_000 => page_token = Some(next),
                _ => break,
            }
        }
        // A marker is written once, as its job is submitted: the newest markers name the
        // newest jobs, so only the records listed are read.
        markers.sort_by_key(|(written, _)| std::cmp::Reverse(*written));
        markers.truncate(MAX_LISTED_JOBS);
        for (_, id) in markers {
            match state.platform.jobs().get(id).await {
                Ok(r) => records.push(r),
                Err(JobError::NotFound(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    records.sort_by_key(|r| std::cmp::Reverse(r.created_at));
    records.truncate(MAX_LISTED_JOBS);
    let now = time::OffsetDateTime::now_utc();
    // The events the jobs are mosaics of, each read once (one gone since, once too).
    let mut events = std::collections::HashMap::new();
    for r in &records {
        let library = &r.params.spec.library.id;
        if let Some(event) = tessera_shared::events::EventRecord::event_of_library(library)
            && !events.contains_key(&event)
        {
            let name = state
                .platform
                .events()
                .get(event)
                .await
                .ok()
                .map(|e| e.name);
            events.insert(event, name);
        }
    }
    let jobs = records
        .iter()
        .map(|r| JobRow {
            event: tessera_shared::events::EventRecord::event_of_library(&r.params.spec.library.id)
                .and_then(|e| Some((e, events.get(&e)?.clone()?))),
            id: r.id,
            created: r
                .created_at
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
            created_ago: ago(now - r.created_at),
            input_name: if r.params.input_name.is_empty() {
                "(unnamed image)".to_string()
            } else {
                r.params.input_name.clone()
            },
            state: r.state.as_str(),
            running: !r.state.is_final(),
            done: r.slices_done(),
            total: r.slices_total,
            size: r
                .output
                .map(|o| format!("{} × {}", o.width, o.height))
                .unwrap_or_default(),
            thumb: Thumb::of(r),
        })
        .collect();
    page(&JobsPage { jobs })
}
