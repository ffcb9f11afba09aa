//! The couple's own door to events: "New event" (a photo, a name, how guests join and what the
//! mosaic is for, sent to `POST /api/v1/events`), and "My events" (the events this browser made,
//! each with its photos and its latest mosaic).

use super::page_answer::page;
use crate::api_error::ApiResult;
use crate::app_state::AppState;
use crate::guards::client::known_requester;
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use tessera_shared::events::{EventError, Shelf};
use uuid::Uuid;

/// What an event's mosaic is for, and the grid that suits it: cells across and their size in
/// pixels (large enough that forty photos make a picture a face can be read in).
pub(super) struct Purpose {
    key: &'static str,
    label: &'static str,
    cells: u32,
    tile_size: u32,
}

/// The purposes the form offers, the first the default.
const PURPOSES: [Purpose; 3] = [
    Purpose {
        key: "screen",
        label: "A screen at the venue (2,400 px across)",
        cells: crate::api::event_mosaics::EVENT_CELLS,
        tile_size: crate::api::event_mosaics::EVENT_TILE_SIZE,
    },
    Purpose {
        key: "poster",
        label: "A poster (4,800 px across, about 40 cm at 300 dpi)",
        cells: 120,
        tile_size: 40,
    },
    Purpose {
        key: "print",
        label: "A large print (7,200 px across, about 60 cm at 300 dpi)",
        cells: 160,
        tile_size: 45,
    },
];

#[derive(Template)]
#[template(path = "new_event.html")]
pub(super) struct NewEventPage {
    purposes: &'static [Purpose],
    max_upload_bytes: u64,
    per_guest: SettingInput,
}

/// A whole-number setting's input as its declaration bounds it.
pub(super) struct SettingInput {
    pub min: u32,
    pub max: u32,
    pub default: String,
}

impl SettingInput {
    /// The input of the event setting `name` (declared in `EVENT_FIELDS`).
    pub(super) fn of(name: &str) -> SettingInput {
        let field = tessera_shared::event_settings::event_field(name);
        let (min, max) = match field.map(|f| f.kind) {
            Some(tessera_shared::spec::Kind::Whole { min, max, .. }) => (min, max),
            _ => (0, 0),
        };
        SettingInput {
            min,
            max,
            default: field.map(|f| f.default_text()).unwrap_or_default(),
        }
    }
}

pub(super) async fn new_event(state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    page(&NewEventPage {
        purposes: &PURPOSES,
        max_upload_bytes: state.settings.max_upload_bytes,
        per_guest: SettingInput::of("per_guest"),
    })
}

/// One of the browser's events.
pub(super) struct EventRow {
    id: Uuid,
    name: String,
    photos: usize,
    waiting: usize,
    mosaic: Option<Uuid>,
}

#[derive(Template)]
#[template(path = "events.html")]
pub(super) struct EventsPage {
    events: Vec<EventRow>,
}

/// Events listed at most.
const MAX_LISTED_EVENTS: usize = 100;

pub(super) async fn my_events(
    req: HttpRequest,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let mut events = Vec::new();
    if let Some(owner) = known_requester(&req) {
        let store = state.platform.events();
        for id in store
            .of_owner(&owner)
            .await?
            .into_iter()
            .take(MAX_LISTED_EVENTS)
        {
            let record = match store.get(id).await {
                Ok(record) => record,
                Err(EventError::NotFound(_)) => continue,
                Err(e) => return Err(e.into()),
            };
            events.push(EventRow {
                id,
                name: record.name.clone(),
                photos: store.count_photos(id).await?,
                waiting: store.shelf(id, Shelf::Waiting).await?.len(),
                mosaic: record.mosaics.last().copied(),
            });
        }
    }
    page(&EventsPage { events })
}
