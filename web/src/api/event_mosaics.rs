//! Events (`/api/v1/events`): one mosaic made of many people's photos. The owner makes an event
//! from a target photo and job fields; guests send photos through its contribute link (its
//! token, no account: a guest is their client id); the owner approves or leaves them out; a
//! mosaic is an ordinary job of a private library of the approved photos, each captioned with
//! the file name its guest sent.

use std::collections::BTreeMap;

use actix_multipart::Multipart;
use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use tessera_shared::error_code::ErrorCode;
use tessera_shared::event_settings::event_field;
use tessera_shared::events::{EventPhoto, EventRecord, EventSettings, Maker, PhotoState, Shelf};
use tessera_shared::libraries::Owner;
use tessera_shared::wishlist::Wish;

use crate::api::event_jobs::event_job;
use crate::api::job_broker::{Form, duplicate, missing, read_field};
use crate::api::owned_event::{OwnedEvent, is_owner, not_owner, requester};
use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;
use crate::guards::auth::{new_secret, same_secret};
use crate::guards::client::{client_address, client_cookie, credential_owner};
use crate::guards::inspect::{probe_target, verify_target};
use crate::guards::upload::{BodyClock, field_name, read_text, require_multipart};

/// The header that carries a contribute link's token (or `?token=`).
pub const TOKEN_HEADER: &str = "X-Contribute-Token";

/// One photo of an event.
#[derive(Debug, Serialize, ToSchema)]
pub struct PhotoView {
    pub id: Uuid,
    /// The file name the guest sent.
    pub name: String,
    pub state: PhotoState,
    /// Who sent it (a digest of the guest's client id).
    #[schema(value_type = String)]
    pub contributor: Owner,
    /// Its tile's name in the event's mosaics (its id and extension): what finds it there, as
    /// two guests' photos of the same file name are two tiles.
    pub tile: String,
    /// The name its guest goes by, if they gave one.
    pub guest_name: Option<String>,
    /// Whether an image processor has prepared it; until then it is received, and in no
    /// mosaic whatever its state.
    pub prepared: bool,
    /// Why it could not be decoded, if so: it is then left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
    /// Why the pre-screen held it for the owner (a blank frame, a near duplicate, a
    /// screenshot), if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held: Option<String>,
    /// When photos take turns (more than the cells), whether this approved one is in the latest
    /// mosaic's turn; false: it waits for a later one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_turn: Option<bool>,
    /// What the event's classifier said of it, if it was offered to one: absent `verdict`
    /// while it waits for one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewView>,
    /// The consent line its guest agreed to, when the event asks for one (the owner's view).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub consent: Option<String>,
    /// Its cell on the event's board (row and column from 1, as printed), once placed: it never
    /// changes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cell: Option<tessera_shared::events::board::Cell>,
}

/// A classifier's verdict on a photo, or that it waits for one.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReviewView {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<tessera_shared::events::Verdict>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl From<&EventPhoto> for PhotoView {
    fn from(p: &EventPhoto) -> Self {
        PhotoView {
            id: p.id,
            name: p.name.clone(),
            state: p.state,
            contributor: p.contributor.clone(),
            tile: p.tile_name(),
            guest_name: p.guest_name.clone(),
            prepared: p.prepared,
            unreadable: p.unreadable.clone(),
            held: p.held.clone(),
            in_turn: None,
            review: p.review.as_ref().map(|r| ReviewView {
                verdict: r.verdict,
                reason: r.reason.clone(),
            }),
            consent: p.consent.clone(),
            cell: p.cell,
        }
    }
}

/// How many photos an event holds on each shelf.
#[derive(Debug, Default, Serialize, ToSchema)]
pub struct PhotoCounts {
    /// Received, not prepared yet.
    pub received: usize,
    /// Prepared, waiting for the owner.
    pub waiting: usize,
    /// In the mosaics.
    pub approved: usize,
    /// Left out (by the owner, or unreadable).
    pub rejected: usize,
}

/// What an event's latest mosaic shows of its approved photos.
#[derive(Debug, Serialize, ToSchema)]
pub struct ShowingView {
    /// Approved photos in it.
    pub in_mosaic: u32,
    /// Approved photos not in it: more than its cells (they wait for a turn, or did not fit as
    /// well as the others), or approved since.
    pub waiting: u32,
    /// The cells of its grid.
    pub cells: u32,
    /// Whether photos take turns: each mosaic takes the next ones.
    pub turns: bool,
}

/// The newest photos of each shelf the owner's view lists; the rest are counted.
const OWNER_PHOTOS_PER_SHELF: usize = 200;

/// An event's latest mosaic.
#[derive(Debug, Serialize, ToSchema)]
pub struct MosaicRef {
    /// The job that makes it (`/api/v1/jobs/{job}`).
    pub job: Uuid,
}

/// An event: to its owner whole, to a guest with its token with the guest's own photos only.
#[derive(Debug, Serialize, ToSchema)]
pub struct EventView {
    pub id: Uuid,
    pub name: String,
    /// The contribute link's secret (the owner's view only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contribute_token: Option<String>,
    /// The page guests open to send photos (the owner's view only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contribute_url: Option<String>,
    /// The owner's page of the event: its photos to moderate, its QR code, its mosaics (the
    /// owner's view only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_url: Option<String>,
    pub settings: EventSettings,
    /// To the owner, the newest photos of each shelf (at most 200 each: `counts` says how many
    /// there are); to a guest, their own.
    pub photos: Vec<PhotoView>,
    /// How many photos the event holds on each shelf (the owner's view only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counts: Option<PhotoCounts>,
    /// The colours of the target no approved photo matches yet, and about how many photos of
    /// each would fill them: most wanted first.
    pub wishlist: Vec<Wish>,
    /// The latest mosaic, once one was asked for.
    pub mosaic: Option<MosaicRef>,
    /// Every mosaic of the event, oldest first.
    pub mosaics: Vec<Uuid>,
    /// What the latest mosaic shows of the approved photos, once one was asked for.
    pub showing: Option<ShowingView>,
    /// When the guests' photos go, once the event stopped taking them (`retention_days`
    /// after; the mosaics keep their pixels).
    #[serde(with = "time::serde::rfc3339::option")]
    pub photos_go_at: Option<OffsetDateTime>,
    /// When they went, if they did.
    #[serde(with = "time::serde::rfc3339::option")]
    pub photos_erased_at: Option<OffsetDateTime>,
    /// The board, for an event made as one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub board: Option<BoardView>,
}

/// An event's board: its grid, its stickers, the target's colour in each cell.
#[derive(Debug, Serialize, ToSchema)]
pub struct BoardView {
    pub cols: u32,
    pub rows: u32,
    /// A cell's side, and a sticker's, in millimetres.
    pub sticker_mm: f64,
    /// The stickers' print resolution.
    pub dpi: u32,
    /// How far a sticker's colour moves toward its cell's at most (CIEDE2000).
    pub shift_cap: f32,
    /// The target's colour in each cell (`#rrggbb`), row by row.
    pub cells: Vec<String>,
    /// Cells given a photo so far.
    pub placed: usize,
}

impl BoardView {
    async fn of(state: &AppState, record: &EventRecord) -> ApiResult<Option<BoardView>> {
        let Some(board) = &record.board else {
            return Ok(None);
        };
        let placed = state.platform.events().placed(record.id).await?.len();
        Ok(Some(BoardView {
            cols: board.cols,
            rows: board.rows,
            sticker_mm: board.sticker_mm,
            dpi: board.dpi,
            shift_cap: board.shift_cap,
            cells: board
                .cells
                .iter()
                .map(|c| format!("#{:02x}{:02x}{:02x}", c[0], c[1], c[2]))
                .collect(),
            placed,
        }))
    }
}

impl EventView {
    pub(crate) async fn of(
        state: &AppState,
        record: &EventRecord,
        guest: Option<&Owner>,
    ) -> ApiResult<Self> {
        let events = state.platform.events();
        let approved = events.shelf(record.id, Shelf::Approved).await?;
        let (photos, counts) = match guest {
            Some(guest) => (events.photos_of(record.id, guest).await?, None),
            None => {
                let (mut photos, mut counts) = (Vec::new(), PhotoCounts::default());
                for shelf in Shelf::ALL {
                    let (count, newest) = events
                        .newest_on(record.id, shelf, OWNER_PHOTOS_PER_SHELF)
                        .await?;
                    *match shelf {
                        Shelf::Received => &mut counts.received,
                        Shelf::Waiting => &mut counts.waiting,
                        Shelf::Approved => &mut counts.approved,
                        Shelf::Rejected => &mut counts.rejected,
                    } = count;
                    photos.extend(newest);
                }
                // A photo moving between shelves is on both for a moment (its new marker is
                // written before the old goes): listed once.
                let mut seen = std::collections::HashSet::new();
                photos.retain(|p: &EventPhoto| seen.insert(p.id));
                (photos, Some(counts))
            }
        };
        let latest = record
            .mosaics
            .last()
            .and_then(|&job| record.showing_of(job));
        let photos = photos
            .iter()
            .map(|p| PhotoView {
                in_turn: latest
                    .filter(|_| p.state == PhotoState::Approved && p.prepared)
                    .and_then(|s| s.in_turn(p.id)),
                ..PhotoView::from(p)
            })
            .collect();
        let showing = latest.map(|s| ShowingView {
            in_mosaic: s.shown(),
            waiting: (approved.len() as u32).saturating_sub(s.shown()),
            cells: s.cells,
            turns: s.turn.is_some(),
        });
        let owner = guest.is_none();
        Ok(EventView {
            id: record.id,
            name: record.name.clone(),
            contribute_token: owner.then(|| record.token.clone()),
            contribute_url: owner.then(|| contribute_path(record)),
            page_url: owner.then(|| format!("/events/{}", record.id)),
            settings: record.settings.clone(),
            photos,
            counts,
            wishlist: events.wishlist_of(record, &approved).await?,
            mosaic: record.mosaics.last().map(|&job| MosaicRef { job }),
            mosaics: record.mosaics.clone(),
            showing,
            photos_go_at: record
                .photos_expire_at()
                .filter(|_| record.erased_at.is_none()),
            photos_erased_at: record.erased_at,
            board: BoardView::of(state, record).await?,
        })
    }
}

/// An event mosaic's grid unless its owner chose one: cells across and their side in pixels,
/// so that forty photos make a picture a face can be read in (2,400 px across, for a screen).
pub(crate) const EVENT_CELLS: u32 = 80;
pub(crate) const EVENT_TILE_SIZE: u32 = 30;

/// The fields that choose a mosaic's grid or size; an event given none gets its own grid.
const GRID_FIELDS: [&str; 6] = [
    "cells",
    "tile_size",
    "per_pixel",
    "adaptive",
    "print",
    "tile_height",
];

/// How far an event's tiles are tinted toward the photo unless its owner says: forty guests'
/// photos cannot hold every colour of the couple's, and a tint of 40 % makes the picture
/// read from afar while each photo stays itself.
pub(crate) const EVENT_BLEND: u32 = 40;

/// Gives `form` the event's defaults where it is silent: its grid ([`EVENT_CELLS`] of
/// [`EVENT_TILE_SIZE`] px) when it names none, and its tint ([`EVENT_BLEND`]).
fn with_event_defaults(form: &mut Form) {
    if !GRID_FIELDS.iter().any(|f| form.fields.contains_key(f)) {
        form.fields.insert("cells", EVENT_CELLS.to_string());
        form.fields.insert("tile_size", EVENT_TILE_SIZE.to_string());
    }
    form.fields
        .entry("blend")
        .or_insert_with(|| EVENT_BLEND.to_string());
}

/// The contribute link: the page guests open on their phones.
pub(crate) fn contribute_path(record: &EventRecord) -> String {
    format!("/events/{}/contribute?token={}", record.id, record.token)
}

/// The owner's decision on a photo.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PhotoDecision {
    /// `approved` (in the mosaics) or `rejected` (left out).
    pub state: PhotoState,
}

/// An event's creation (`multipart/form-data`). The API document describes its fields from
/// their declarations (`openapi::event_creation_schema`: the job's fields, `name` and
/// [`tessera_shared::event_settings::EVENT_FIELDS`]); the handler reads them as they come.
#[derive(ToSchema)]
pub struct EventCreation {
    /// The target photo.
    #[schema(value_type = String, format = Binary)]
    pub image: Vec<u8>,
    /// What the event is called (1 to 100 characters).
    #[schema(min_length = 1, max_length = 100)]
    pub name: String,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
pub struct TokenQuery {
    /// The contribute link's token (or the `X-Contribute-Token` header).
    pub token: Option<String>,
}

/// Whether the request carries the event's contribute token.
pub(crate) fn has_token(req: &HttpRequest, query: &TokenQuery, record: &EventRecord) -> bool {
    let given = req
        .headers()
        .get(TOKEN_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| query.token.clone());
    given.is_some_and(|t| same_secret(t.as_bytes(), record.token.as_bytes()))
}

/// Refuses (403 `bad_contribute_token`) a request without the event's contribute token.
pub(crate) fn require_token(
    req: &HttpRequest,
    query: &TokenQuery,
    record: &EventRecord,
) -> ApiResult<()> {
    if has_token(req, query, record) {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::FORBIDDEN,
        ErrorCode::BadContributeToken,
        "this link's token is missing or wrong: open the event's contribute link again",
    ))
}

/// Answers `body` with `status`, setting the client cookie when one was minted.
pub(crate) fn answer(
    req: &HttpRequest,
    status: StatusCode,
    client: (Uuid, bool),
    body: impl Serialize,
) -> HttpResponse {
    let mut response = HttpResponse::build(status);
    if client.1 {
        response.cookie(client_cookie(req, client.0));
    }
    response.json(body)
}

/// The fields of an event's creation: its own and the job's.
#[derive(Default)]
struct EventForm {
    job: Form,
    name: Option<String>,
    /// The event's settings as sent, by name ([`tessera_shared::event_settings::EVENT_FIELDS`]).
    settings: BTreeMap<&'static str, String>,
    /// The board's fields as sent ([`crate::api::event_boards::BOARD_FIELDS`]).
    board: BTreeMap<&'static str, String>,
}

async fn read_event_form(payload: &mut Multipart, state: &AppState) -> ApiResult<EventForm> {
    let mut form = EventForm::default();
    let limit = state.settings.max_upload_bytes;
    let mut clock = BodyClock::new(&state.settings);
    while let Some(mut field) = clock.field(payload).await? {
        let name = field_name(&field);
        if let Some(&board) = crate::api::event_boards::BOARD_FIELDS
            .iter()
            .find(|f| **f == name)
        {
            let text = read_text(&mut field, &mut clock, &name).await?;
            if form.board.insert(board, text).is_some() {
                return Err(duplicate(&name));
            }
            continue;
        }
        let setting = event_field(&name).map(|f| f.name);
        if setting.is_none() && name != "name" {
            // The image and the job's fields, as a job submission reads them.
            read_field(&mut form.job, &mut field, &mut clock, limit).await?;
            continue;
        }
        let text = read_text(&mut field, &mut clock, &name).await?;
        let given = match setting {
            Some(setting) => form.settings.insert(setting, text).is_some(),
            None => form.name.replace(text).is_some(),
        };
        if given {
            return Err(duplicate(&name));
        }
    }
    Ok(form)
}

/// Refuses a new event of `owner`'s past the events one owner keeps or one address makes.
async fn admit_event(req: &HttpRequest, state: &AppState, owner: &Owner) -> ApiResult<()> {
    let cap = state.settings.guests.max_events_per_owner;
    let events = state.platform.events();
    if cap > 0 && !owner.is_operator() && events.of_owner(owner).await?.len() >= cap as usize {
        return Err(ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            ErrorCode::TooManyEvents,
            format!("you have the {cap} events one owner may keep"),
        ));
    }
    if !owner.is_operator() {
        let address = client_address(req, state.guard.trusted_proxies());
        state.guests.admit_event(&state.settings.guests, address)?;
    }
    Ok(())
}

/// Make an event.
///
/// Multipart: `image` (the target), `name`, the event's settings (`approval`, `per_guest`,
/// `max_photos`, `auto_after_seconds`, `open`: each at its default when left out) and any job
/// field but `library`. The caller is the event's owner.
#[utoipa::path(
    post,
    path = "/api/v1/events",
    operation_id = "create_event",
    tag = "events",
    params(("X-Client-Id" = Option<Uuid>, Header, nullable = false, description = "The client id; otherwise the tessera_client cookie, minted when absent.")),
    request_body(content = EventCreation, content_type = "multipart/form-data"),
    responses(
        (status = 201, description = "Made; Location names the event", body = EventView,
            headers(("Location" = String, description = "The event's path"))),
        crate::api::error_sets::UploadErrors,
        (status = 429, description = "too_many_events: the owner keeps web.guests.max_events_per_owner events, or the address made web.guests.events_per_hour_per_address this hour", body = crate::api_error::ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
        (status = 503, description = "storage is unavailable", body = crate::api_error::ErrorBody),
        (status = 507, description = "insufficient_storage", body = crate::api_error::ErrorBody),
    ),
)]
pub async fn create(
    req: HttpRequest,
    mut payload: Multipart,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    require_multipart(&req, "an event")?;
    let (owner, client, minted) = requester(&req)?;
    let events = state.platform.events();
    admit_event(&req, &state, &owner).await?;
    let mut form = read_event_form(&mut payload, &state).await?;
    with_event_defaults(&mut form.job);
    let name = form.name.as_deref().map(str::trim).unwrap_or_default();
    if name.is_empty() || name.chars().count() > 100 {
        return Err(ApiError::bad_request(
            ErrorCode::InvalidParameter,
            "name must be 1 to 100 characters: what the event is called",
        )
        .with_field("name"));
    }
    if form.job.fields.contains_key("library") {
        return Err(ApiError::bad_request(
            ErrorCode::ConflictingParameters,
            "an event's mosaics are made of its guests' photos: leave out library",
        ));
    }
    let settings = EventSettings::from_fields(|name| form.settings.get(name).map(String::as_str))?;
    let id = Uuid::new_v4();
    let (spec, chosen) = event_job(&form.job.fields, id, &state)?;
    let (image, input_name) = form.job.image.clone().ok_or_else(|| missing("image"))?;
    let probe = probe_target(&image, state.settings.max_input_pixels)?;
    let _room = state.decode_memory.room_for(probe.decode_bytes).await?;
    let bytes = image.clone();
    // The target checked whole, then its colours for the wish list (and the board's cells).
    let board_fields = std::mem::take(&mut form.board);
    let (target_colours, board) = tokio::task::spawn_blocking(move || {
        verify_target(&bytes, &probe)?;
        let img = tessera_engine::decode_target(&bytes, [255; 3]).map_err(ApiError::internal)?;
        let board = crate::api::event_boards::board_from(&board_fields, &img)?;
        Ok::<_, ApiError>((tessera_shared::wishlist::target_colours(&img), board))
    })
    .await
    .map_err(ApiError::internal)??;
    // A board takes a photo a cell at least, unless its owner chose a cap.
    let mut settings = settings;
    if let Some(board) = &board
        && !form.settings.contains_key("max_photos")
    {
        settings.max_photos = settings.max_photos.max(board.len() as u32);
    }
    let now = OffsetDateTime::now_utc();
    let closed_at = (!settings.open).then_some(now);
    let record = EventRecord {
        id,
        name: name.to_string(),
        owner,
        token: new_secret(),
        wall_token: None,
        printer_token: None,
        review_token: settings.review.then(new_secret),
        spec: Some(spec),
        chosen: chosen.iter().map(|name| name.to_string()).collect(),
        fields: BTreeMap::new(),
        input_name: input_name.chars().take(255).collect(),
        settings,
        photos: Vec::new(),
        mosaics: Vec::new(),
        board,
        target_colours,
        maker: Some(Maker {
            client,
            key_holder: credential_owner(&req),
        }),
        approved_changed_at: None,
        mosaic_asked_at: None,
        showing: Vec::new(),
        turn_after: None,
        closed_at,
        erased_at: None,
        created_at: now,
        updated_at: now,
    };
    state.require_room(image.len() as u64, "the event").await?;
    events.mark_owner(&record.owner, record.id).await?;
    events.create(&record, image).await?;
    tracing::info!(event = %record.id, "event made");
    let mut response = answer(
        &req,
        StatusCode::CREATED,
        (client, minted),
        EventView::of(&state, &record, None).await?,
    );
    response.headers_mut().insert(
        header::LOCATION,
        header::HeaderValue::from_str(&format!("/api/v1/events/{}", record.id))
            .map_err(ApiError::internal)?,
    );
    Ok(response)
}

/// One event: whole to its owner; to a guest with the contribute token, the guest's own photos.
#[utoipa::path(
    get,
    path = "/api/v1/events/{id}",
    operation_id = "get_event",
    tag = "events",
    params(("id" = Uuid, Path, description = "The event's id"), TokenQuery),
    responses(
        (status = 200, description = "The event", body = EventView),
        crate::api::error_sets::OwnedEventErrors,
    ),
)]
pub async fn get(
    req: HttpRequest,
    id: web::Path<Uuid>,
    query: web::Query<TokenQuery>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let (who, client, minted) = requester(&req)?;
    let record = state.platform.events().get(*id).await?;
    let view = if is_owner(&record, &who) {
        EventView::of(&state, &record, None).await?
    } else if has_token(&req, &query, &record) {
        EventView::of(&state, &record, Some(&who)).await?
    } else {
        return Err(not_owner(&record));
    };
    Ok(answer(&req, StatusCode::OK, (client, minted), view))
}

/// The owner's decision on one photo: `approved` or `rejected`.
#[utoipa::path(
    patch,
    path = "/api/v1/events/{id}/photos/{photo}",
    operation_id = "decide_event_photo",
    tag = "events",
    params(("id" = Uuid, Path, description = "The event's id"), ("photo" = Uuid, Path, description = "The photo's id")),
    request_body = PhotoDecision,
    responses(
        (status = 200, description = "The photo as it is now", body = PhotoView),
        (status = 400, description = "the body is not the JSON this route takes", body = crate::api_error::ErrorBody),
        (status = 403, description = "not_event_owner", body = crate::api_error::ErrorBody),
        (status = 415, description = "the body is not JSON", body = crate::api_error::ErrorBody),
        (status = 404, description = "event_not_found, photo_not_found", body = crate::api_error::ErrorBody),
    ),
)]
pub async fn decide(
    owned: OwnedEvent,
    path: web::Path<(Uuid, Uuid)>,
    decision: web::Json<PhotoDecision>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let (_, photo) = path.into_inner();
    let record = owned.record;
    let events = state.platform.events();
    let (decided, changes_mosaic) =
        crate::api::event_moderation::decide_one(&events, &record, photo, decision.state)
            .await?
            .ok_or_else(|| photo_not_found(photo))?;
    if changes_mosaic {
        events.touch_changed(record.id).await?;
        crate::api::event_auto::schedule(&state, &record);
    }
    Ok(HttpResponse::Ok().json(PhotoView::from(&decided)))
}

pub(crate) fn photo_not_found(photo: Uuid) -> ApiError {
    ApiError::not_found(
        ErrorCode::PhotoNotFound,
        format!("the event has no photo {photo}"),
    )
}

/// Take a photo out of an event: its guest (through the link) or the owner. It leaves the
/// event's next mosaic.
#[utoipa::path(
    delete,
    path = "/api/v1/events/{id}/photos/{photo}",
    operation_id = "withdraw_event_photo",
    tag = "events",
    params(("id" = Uuid, Path, description = "The event's id"), ("photo" = Uuid, Path, description = "The photo's id")),
    responses(
        (status = 204, description = "Taken out"),
        (status = 403, description = "not_your_photo", body = crate::api_error::ErrorBody),
        (status = 404, description = "event_not_found, photo_not_found", body = crate::api_error::ErrorBody),
    ),
)]
pub async fn withdraw(
    req: HttpRequest,
    path: web::Path<(Uuid, Uuid)>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let (event, photo) = path.into_inner();
    let (who, _, _) = requester(&req)?;
    let events = state.platform.events();
    let record = events.get(event).await?;
    let found = events
        .find_photo(event, photo)
        .await?
        .ok_or_else(|| photo_not_found(photo))?;
    if !is_owner(&record, &who) && found.contributor != who {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            ErrorCode::NotYourPhoto,
            "only the guest who sent this photo, or the event's owner, may take it out",
        ));
    }
    events.remove_photo(event, &found).await?;
    state.event_counts.remove_one(event);
    if Shelf::of(&found) == Shelf::Approved {
        events.touch_changed(event).await?;
        crate::api::event_auto::schedule(&state, &record);
    }
    Ok(HttpResponse::NoContent().finish())
}

/// Make the event's next mosaic of its approved photos (the owner): a job, each photo in at
/// least once while the cells allow.
#[utoipa::path(
    post,
    path = "/api/v1/events/{id}/mosaic",
    operation_id = "make_event_mosaic",
    tag = "events",
    params(("id" = Uuid, Path, description = "The event's id")),
    responses(
        (status = 202, description = "Queued", body = MosaicRef),
        crate::api::error_sets::OwnedEventErrors,
        (status = 422, description = "no photo approved yet, or the job cannot be made", body = crate::api_error::ErrorBody),
        (status = 429, description = "too_many_active_jobs", body = crate::api_error::ErrorBody),
        (status = 503, description = "service_busy, or storage is unavailable", body = crate::api_error::ErrorBody),
        (status = 507, description = "insufficient_storage", body = crate::api_error::ErrorBody),
    ),
)]
pub async fn mosaic(
    req: HttpRequest,
    owned: OwnedEvent,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let OwnedEvent { record, client } = owned;
    let maker = Maker {
        client,
        key_holder: credential_owner(&req),
    };
    let address = client_address(&req, state.guard.trusted_proxies());
    let job = crate::api::event_jobs::make_mosaic(&state, &record, &maker, address).await?;
    // Photos taking turns: the next turns follow on their own.
    if record.settings.overflow == tessera_shared::events::Overflow::Turns {
        crate::api::event_auto::schedule(&state, &record);
    }
    Ok(HttpResponse::Accepted().json(MosaicRef { job }))
}
