//! An event's page, to its owner: the guests' link and its QR code, the photos by state to
//! approve, leave out or take out one or many at once, the latest mosaic and the wish list.

use super::events_page::SettingInput;
use super::page_answer::page;
use crate::api::event_mosaics::contribute_path;
use crate::api::owned_event::OwnedEvent;
use crate::api_error::ApiResult;
use crate::app_state::AppState;
use crate::guards::client::origin;
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use tessera_shared::events::{EventPhoto, EventRecord, PhotoState, Shelf};
use tessera_shared::wishlist::Wish;
use uuid::Uuid;

/// One group of photos on the page.
struct Group {
    /// `waiting`, `approved`, `rejected`.
    state: &'static str,
    title: &'static str,
    /// How many photos it has; the newest are shown.
    total: usize,
    photos: Vec<Photo>,
}

/// The newest photos of each group the page shows.
const SHOWN_PER_GROUP: usize = 200;

struct Photo {
    id: Uuid,
    name: String,
    /// Who sent it: the name they gave, else a short mark of their client.
    guest: String,
    /// Why the pre-screen held it, if it did.
    held: Option<String>,
}

#[derive(Template)]
#[template(path = "event.html")]
pub(super) struct EventPage {
    id: Uuid,
    name: String,
    link: String,
    approval: bool,
    per_guest: u32,
    per_guest_input: SettingInput,
    open: bool,
    auto_after_seconds: u32,
    auto_after_input: SettingInput,
    /// What a mosaic does with more photos than cells, and the choices.
    overflow: &'static str,
    overflow_choices: &'static [(&'static str, &'static str)],
    /// What the latest mosaic shows of the approved photos, in words.
    showing: Option<String>,
    groups: Vec<Group>,
    /// Photos received and not prepared yet.
    received: usize,
    /// The latest mosaic and its state, once one was asked for.
    mosaic: Option<(Uuid, String)>,
    /// The latest finished mosaic, shown while a newer one is made.
    shown: Option<Uuid>,
    mosaics: usize,
    wishes: Vec<Wish>,
    /// The wall link, once the owner made one.
    wall_url: Option<String>,
}

pub(super) async fn event(
    req: HttpRequest,
    owned: OwnedEvent,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let record = owned.record;
    let events = state.platform.events();
    let mut groups = Vec::new();
    for (shelf, title) in [
        (Shelf::Waiting, "Waiting for you"),
        (Shelf::Approved, "In the mosaic"),
        (Shelf::Rejected, "Left out"),
    ] {
        let (total, newest) = events.newest_on(record.id, shelf, SHOWN_PER_GROUP).await?;
        groups.push(Group {
            state: shelf.as_str(),
            title,
            total,
            photos: newest.iter().map(photo).collect(),
        });
    }
    let received = events.shelf(record.id, Shelf::Received).await?.len();
    let approved = events.shelf(record.id, Shelf::Approved).await?;
    let mosaics = crate::api::event_jobs::latest_mosaics(&state, &record).await?;
    let mosaic = mosaics.latest.map(|r| (r.id, r.state.as_str().to_string()));
    let shown = mosaics.done.map(|r| r.id);
    page(&EventPage {
        id: record.id,
        name: record.name.clone(),
        link: format!("{}{}", origin(&req), contribute_path(&record)),
        approval: record.settings.approval,
        per_guest: record.settings.per_guest,
        per_guest_input: SettingInput::of("per_guest"),
        open: record.settings.open,
        auto_after_seconds: record.settings.auto_after_seconds,
        auto_after_input: SettingInput::of("auto_after_seconds"),
        overflow: record.settings.overflow.as_str(),
        overflow_choices: overflow_choices(),
        showing: showing_words(&record, approved.len()),
        groups,
        received,
        mosaic,
        shown,
        mosaics: record.mosaics.len(),
        wishes: record.wishlist(&approved),
        wall_url: crate::api::event_wall::wall_path(&record)
            .map(|path| format!("{}{path}", origin(&req))),
    })
}

/// The choices of the `overflow` setting, as its declaration gives them.
fn overflow_choices() -> &'static [(&'static str, &'static str)] {
    match tessera_shared::event_settings::event_field("overflow").map(|f| f.kind) {
        Some(tessera_shared::spec::Kind::Choice { choices, .. }) => choices,
        _ => &[],
    }
}

/// What the latest mosaic of `record` shows of its `approved` photos, when it could not show
/// them all.
fn showing_words(record: &EventRecord, approved: usize) -> Option<String> {
    let latest = record
        .mosaics
        .last()
        .and_then(|&job| record.showing_of(job))?;
    let waiting = (approved as u32).saturating_sub(latest.shown());
    (waiting > 0).then(|| {
        let why = if latest.turn.is_some() {
            "wait for their turn in the next mosaics"
        } else {
            "are not in it (more photos than its cells, or approved since)"
        };
        format!(
            "The latest mosaic has {} photos in its {} cells; {waiting} more {why}.",
            latest.shown(),
            latest.cells
        )
    })
}

fn photo(p: &EventPhoto) -> Photo {
    let client = p.contributor.as_str();
    let mark = &client[client.len().saturating_sub(6)..];
    Photo {
        id: p.id,
        name: p.name.clone(),
        guest: match &p.guest_name {
            Some(name) => name.clone(),
            None => format!("A guest ({mark})"),
        },
        held: p.held.clone().filter(|_| p.state == PhotoState::Waiting),
    }
}

#[derive(Template)]
#[template(path = "wall.html")]
pub(super) struct WallPage {
    id: Uuid,
    name: String,
    /// The wall link's secret the page was opened with, for what it reads (empty for the owner).
    wall: String,
    /// The guests' link, whole.
    link: String,
}

/// The wall display, for a screen at the venue: to a screen with the wall link (view only), or
/// to the event's owner.
pub(super) async fn wall(
    req: HttpRequest,
    id: web::Path<Uuid>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let (record, by_link) = crate::api::event_wall::wall_event(&state, &req, *id).await?;
    let wall = match (by_link, &record.wall_token) {
        (true, Some(secret)) => secret.clone(),
        _ => String::new(),
    };
    page(&WallPage {
        id: record.id,
        link: format!("{}{}", origin(&req), contribute_path(&record)),
        name: record.name,
        wall,
    })
}
