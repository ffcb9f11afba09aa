//! An event's page, to its owner: the guests' link and its QR code, the photos by state to
//! approve, leave out or take out one or many at once, the latest mosaic and the wish list.

use super::page_answer::page;
use crate::api::event_mosaics::{contribute_path, owned_event};
use crate::api::event_pictures::origin;
use crate::api_error::ApiResult;
use crate::app_state::AppState;
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use tessera_shared::events::{EventPhoto, PhotoState};
use tessera_shared::jobs::JobError;
use tessera_shared::wishlist::Wish;
use uuid::Uuid;

/// One group of photos on the page.
struct Group {
    /// `waiting`, `approved`, `rejected`.
    state: &'static str,
    title: &'static str,
    photos: Vec<Photo>,
}

struct Photo {
    id: Uuid,
    name: String,
    /// A short name for the guest who sent it.
    guest: String,
}

#[derive(Template)]
#[template(path = "event.html")]
pub(super) struct EventPage {
    id: Uuid,
    name: String,
    link: String,
    approval: bool,
    per_guest: u32,
    open: bool,
    auto_after_seconds: u32,
    groups: Vec<Group>,
    /// The latest mosaic and its state, once one was asked for.
    mosaic: Option<(Uuid, String)>,
    mosaics: usize,
    wishes: Vec<Wish>,
}

pub(super) async fn event(
    req: HttpRequest,
    id: web::Path<Uuid>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let (record, _, _) = owned_event(&state, &req, *id).await?;
    let group = |state: PhotoState, key, title| Group {
        state: key,
        title,
        photos: record
            .photos
            .iter()
            .filter(|p| p.state == state)
            .map(photo)
            .collect(),
    };
    let mosaic = match record.mosaics.last() {
        Some(&job) => match state.platform.jobs().get(job).await {
            Ok(r) => Some((job, r.state.as_str().to_string())),
            Err(JobError::NotFound(_)) => None,
            Err(e) => return Err(e.into()),
        },
        None => None,
    };
    page(&EventPage {
        id: record.id,
        name: record.name.clone(),
        link: format!("{}{}", origin(&req), contribute_path(&record)),
        approval: record.settings.approval,
        per_guest: record.settings.per_guest,
        open: record.settings.open,
        auto_after_seconds: record.settings.auto_after_seconds,
        groups: vec![
            group(PhotoState::Waiting, "waiting", "Waiting for you"),
            group(PhotoState::Approved, "approved", "In the mosaic"),
            group(PhotoState::Rejected, "rejected", "Left out"),
        ],
        mosaic,
        mosaics: record.mosaics.len(),
        wishes: record.wishlist(),
    })
}

fn photo(p: &EventPhoto) -> Photo {
    let guest = p.contributor.as_str();
    Photo {
        id: p.id,
        name: p.name.clone(),
        guest: guest[guest.len().saturating_sub(6)..].to_string(),
    }
}

#[derive(Template)]
#[template(path = "wall.html")]
pub(super) struct WallPage {
    id: Uuid,
    name: String,
}

/// The wall display, to the event's owner: a page for a screen at the venue.
pub(super) async fn wall(
    req: HttpRequest,
    id: web::Path<Uuid>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let (record, _, _) = owned_event(&state, &req, *id).await?;
    page(&WallPage {
        id: record.id,
        name: record.name,
    })
}
