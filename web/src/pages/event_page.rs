//! An event's page, to its owner: the guests' link and its QR code, the photos by state to
//! approve, leave out or take out one or many at once, the latest mosaic and the wish list.

use super::events_page::SettingInput;
use super::page_answer::page;
use crate::api::event_mosaics::contribute_path;
use crate::api::event_photo_pages::PhotoQuery;
use crate::api::owned_event::OwnedEvent;
use crate::api_error::ApiResult;
use crate::app_state::AppState;
use crate::guards::client::origin;
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use tessera_shared::events::{
    EventPhoto, EventRecord, PhotoFilter, PhotoPage, PhotoState, Review, Shelf, Verdict,
};
use tessera_shared::wishlist::Wish;
use uuid::Uuid;

/// One group of photos on the page.
struct Group {
    /// `received`, `waiting`, `approved`, `rejected`.
    state: &'static str,
    title: &'static str,
    /// How many photos it has; a page of them is shown.
    total: usize,
    photos: Vec<Photo>,
    /// The first photo shown, counted from 1 (0 when none is).
    first: usize,
    /// The links to the pages before and after, with the filter kept.
    previous: Option<String>,
    next: Option<String>,
    /// The link to every photo of the group, a page at a time, when the page shows the groups
    /// together and this one has more than it shows.
    see_all: Option<String>,
}

/// What the page's filter asks for, as its form shows it.
struct Filter {
    /// The state shown alone (`waiting`...), or empty: every group.
    state: String,
    oldest: bool,
    /// The guest shown alone: their contributor, and the name they go by.
    guest: Option<(String, String)>,
}

struct Photo {
    id: Uuid,
    name: String,
    /// Who sent it: the name they gave, else a short mark of their client.
    guest: String,
    /// Why the pre-screen held it, if it did.
    held: Option<String>,
    /// Who sent it, for the filter that shows only theirs.
    contributor: String,
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
    review: bool,
    consent: String,
    retention_days: u32,
    retention_input: SettingInput,
    /// When the photos go (or went), in words, once the event is closed.
    photos_go: Option<String>,
    /// What the latest mosaic shows of the approved photos, in words.
    showing: Option<String>,
    groups: Vec<Group>,
    filter: Filter,
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
    /// A board's grid (columns, rows) and cells filled, for an event made as one.
    board: Option<(u32, u32, usize)>,
    /// The printer link, once the owner made one.
    printer_url: Option<String>,
}

/// The groups of photos the page shows, each a page long.
const GROUPS: [(Shelf, &str); 4] = [
    (Shelf::Waiting, "Waiting for you"),
    (Shelf::Approved, "In the mosaic"),
    (Shelf::Rejected, "Left out"),
    (Shelf::Received, "Being prepared"),
];

/// Photos of each group shown when the page shows the groups together.
const SHOWN_PER_GROUP: usize = 24;

pub(super) async fn event(
    req: HttpRequest,
    owned: OwnedEvent,
    query: web::Query<PhotoQuery>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let record = owned.record;
    let events = state.platform.events();
    let asked = query.filter()?;
    let alone = asked.shelf;
    let mut groups = Vec::new();
    let mut received = 0;
    for (shelf, title) in GROUPS {
        if alone.is_some_and(|s| s != shelf) {
            continue;
        }
        let mut filter = asked.clone();
        filter.shelf = Some(shelf);
        if alone.is_none() {
            (filter.offset, filter.limit) = (0, SHOWN_PER_GROUP);
        }
        let page = events.browse(record.id, &filter).await?;
        if shelf == Shelf::Received && alone.is_none() {
            // Shown as a count while they are prepared, unless asked for.
            received = page.total;
            continue;
        }
        groups.push(group(shelf, title, &filter, page, alone.is_some()));
    }
    let filter = Filter {
        state: alone.map(|s| s.as_str().to_string()).unwrap_or_default(),
        oldest: asked.oldest_first,
        guest: asked.guest.as_ref().map(|guest| {
            let name = groups.iter().flat_map(|g| &g.photos).next();
            let name = name.map_or_else(|| "one guest".into(), |p| p.guest.clone());
            (guest.as_str().to_string(), name)
        }),
    };
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
        review: record.settings.review,
        consent: record.settings.consent.clone(),
        retention_days: record.settings.retention_days,
        retention_input: SettingInput::of("retention_days"),
        photos_go: photos_go_words(&record),
        showing: showing_words(&record, approved.len()),
        groups,
        filter,
        received,
        mosaic,
        shown,
        mosaics: record.mosaics.len(),
        wishes: events.wishlist_of(&record, &approved).await?,
        wall_url: crate::api::event_wall::wall_path(&record)
            .map(|path| format!("{}{path}", origin(&req))),
        board: match &record.board {
            Some(b) => Some((b.cols, b.rows, events.placed(record.id).await?.len())),
            None => None,
        },
        printer_url: crate::api::event_boards::printer_path(&record)
            .map(|path| format!("{}{path}", origin(&req))),
    })
}

/// When a closed event's photos go, or that they went.
fn photos_go_words(record: &EventRecord) -> Option<String> {
    let day = |at: time::OffsetDateTime| at.date().to_string();
    if let Some(at) = record.erased_at {
        return Some(format!("The guests' photos went on {}.", day(at)));
    }
    let at = record.photos_expire_at()?;
    Some(format!("Closed: the guests' photos go on {}.", day(at)))
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

/// A group of the page: `page` of the photos on `shelf` that `filter` takes; `alone` when the
/// page shows this group only (then with the links to its other pages).
fn group(
    shelf: Shelf,
    title: &'static str,
    filter: &PhotoFilter,
    page: PhotoPage,
    alone: bool,
) -> Group {
    let link = |state: Shelf, offset: usize| {
        let mut query = vec![format!("state={}", state.as_str())];
        if let Some(guest) = &filter.guest {
            query.push(format!("guest={}", guest.as_str()));
        }
        if filter.oldest_first {
            query.push("order=oldest".into());
        }
        if offset > 0 {
            query.push(format!("offset={offset}"));
        }
        format!("?{}", query.join("&"))
    };
    let (offset, limit) = (filter.offset, filter.limit);
    let shown = page.photos.len();
    Group {
        state: shelf.as_str(),
        title,
        total: page.total,
        first: if shown == 0 { 0 } else { offset + 1 },
        previous: (alone && offset > 0).then(|| link(shelf, offset.saturating_sub(limit))),
        next: (alone && offset + limit < page.total).then(|| link(shelf, offset + limit)),
        see_all: (!alone && page.total > shown).then(|| link(shelf, 0)),
        photos: page.photos.iter().map(photo).collect(),
    }
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
        held: why_not_in(p),
        contributor: client.to_string(),
    }
}

/// Why a photo waiting or left out is not in, when the pre-screen or the classifier said.
fn why_not_in(p: &EventPhoto) -> Option<String> {
    let review = p.review.as_ref();
    match p.state {
        PhotoState::Waiting if review.is_some_and(Review::pending) => {
            Some("Waiting for the classifier's verdict".into())
        }
        PhotoState::Waiting => p.held.as_ref().map(|why| format!("Held: {why}")),
        PhotoState::Rejected => {
            let review = review.filter(|r| r.verdict == Some(Verdict::Reject))?;
            let why = review.reason.as_deref().unwrap_or("not fit to show");
            Some(format!("Left out by the classifier: {why}"))
        }
        PhotoState::Approved => None,
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

#[derive(Template)]
#[template(path = "printer.html")]
pub(super) struct PrinterPage {
    id: Uuid,
    name: String,
    /// The printer link's secret the page was opened with (empty for the owner).
    token: String,
    /// The sticker papers known, the first the default.
    papers: Vec<&'static str>,
}

/// The printer station's page: to a station with the printer link, or to the event's owner.
pub(super) async fn printer(
    req: HttpRequest,
    id: web::Path<Uuid>,
    query: web::Query<crate::api::event_boards::PaperQuery>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let record =
        crate::api::event_boards::printer_event(&state, &req, *id, query.token.as_deref()).await?;
    if record.board.is_none() {
        return Err(crate::api_error::ApiError::bad_request(
            tessera_shared::error_code::ErrorCode::InvalidParameter,
            "this event is not a board: it has no stickers to print",
        ));
    }
    let token = match (&query.token, &record.printer_token) {
        (Some(given), Some(secret)) if given == secret => secret.clone(),
        _ => String::new(),
    };
    page(&PrinterPage {
        id: record.id,
        name: record.name,
        token,
        papers: tessera_shared::events::board_pdf::PAPERS
            .iter()
            .map(|p| p.name)
            .collect(),
    })
}
