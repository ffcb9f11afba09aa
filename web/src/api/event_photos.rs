//! Guests' photos coming into an event (`POST /api/v1/events/{id}/photos`): a batch is taken
//! photo by photo (a PDF among seven photos leaves the seven in, and is named with its reason),
//! within the event's caps and the guests' rates. Each photo is stored, recorded on its own and
//! queued for the processors to prepare (`photorequest`): the web decodes nothing.

use actix_multipart::Multipart;
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use utoipa::ToSchema;
use uuid::Uuid;

use tessera_shared::error_code::ErrorCode;
use tessera_shared::events::{EventPhoto, EventRecord, PhotoState, Shelf};
use tessera_shared::libraries::Owner;
use tessera_shared::messages::{Envelope, PhotoRequest};

use crate::api::event_mosaics::{PhotoView, TokenQuery, answer, require_token};
use crate::api::job_broker::missing;
use crate::api::owned_event::requester;
use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;
use crate::guards::client::client_address;
use crate::guards::upload::{
    BodyClock, field_name, file_name, read_limited, read_text, require_multipart,
};

/// Photos a guest sent: those taken, and those of the batch that were not, with why.
#[derive(Debug, Serialize, ToSchema)]
pub struct PhotosSent {
    pub photos: Vec<PhotoView>,
    /// The files not taken, each with its reason in words.
    pub refused: Vec<RefusedPhoto>,
}

/// A file of a batch that was not taken.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct RefusedPhoto {
    /// The file name sent.
    pub name: String,
    /// Why, for the guest (`IMG_1.pdf is not a photo Tessera reads: ...`).
    pub reason: String,
}

// The photos of a contribution as the API documents them.
/// Photos for an event (`multipart/form-data`): one file each.
#[derive(Deserialize, ToSchema)]
pub struct PhotoUpload {
    /// The photos, in any format Tessera reads.
    #[schema(value_type = Vec<String>, format = Binary, min_items = 1)]
    pub files: Vec<Vec<u8>>,
    /// The name the guest goes by ("Aunt May", at most 60 characters), shown to the couple
    /// and on the wall for each of the guest's photos, those sent before too.
    #[schema(required = false, max_length = 60)]
    pub guest_name: String,
}

/// The most characters of a guest's name.
const MAX_GUEST_NAME: usize = 60;

/// Send photos to an event, through its contribute link.
///
/// Multipart `files`, one photo each, with the link's token as `?token=` or
/// `X-Contribute-Token`. Each is received at once (`prepared` false) and prepared by the
/// image processors; then it waits for the owner's approval, or is in if the event says so
/// (a photo that cannot be decoded is left out, with `unreadable` saying why). Each file is
/// taken or refused on its own by its kind: the answer lists both; a batch of which none is
/// taken is 422 with each file's reason. A batch over a cap is refused whole, saying how many
/// the event still takes.
#[utoipa::path(
    post,
    path = "/api/v1/events/{id}/photos",
    operation_id = "contribute_photos",
    tag = "events",
    params(("id" = Uuid, Path, description = "The event's id"), TokenQuery),
    request_body(content = PhotoUpload, content_type = "multipart/form-data"),
    responses(
        (status = 201, description = "Received", body = PhotosSent),
        crate::api::error_sets::UploadErrors,
        (status = 403, description = "bad_contribute_token", body = crate::api_error::ErrorBody),
        (status = 404, description = "event_not_found", body = crate::api_error::ErrorBody),
        (status = 409, description = "contributions_closed", body = crate::api_error::ErrorBody),
        (status = 429, description = "too_many_photos: the address (an IPv6 /64) or the event's link is sending faster than web.guests allows", body = crate::api_error::ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
        (status = 507, description = "insufficient_storage", body = crate::api_error::ErrorBody),
    ),
)]
pub async fn contribute(
    req: HttpRequest,
    id: web::Path<Uuid>,
    query: web::Query<TokenQuery>,
    mut payload: Multipart,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    require_multipart(&req, "photos")?;
    let (guest, client, minted) = requester(&req)?;
    let events = state.platform.events();
    let record = events.get(*id).await?;
    require_token(&req, &query, &record)?;
    let (files, refused, guest_name, agreed) = read_photos(&mut payload, &state).await?;
    none_taken(&files, &refused)?;
    check_open(&record)?;
    let consent = consent_of(&record, agreed)?;
    check_event_room(&state, &record, files.len()).await?;
    let address = client_address(&req, state.guard.trusted_proxies());
    state.guests.admit(
        &state.settings.guests,
        address,
        record.id,
        files.len() as u32,
    )?;
    state
        .require_room(
            files.iter().map(|f| f.bytes.len() as u64).sum(),
            "the photos",
        )
        .await?;
    let ids: Vec<Uuid> = files.iter().map(|_| Uuid::new_v4()).collect();
    let cap = record.settings.per_guest;
    let slots = match events.claim_slots(record.id, &guest, &ids, cap).await? {
        Ok(slots) => slots,
        Err(held) => return Err(over_guest_cap(cap, held, files.len())),
    };
    let given = (&guest, guest_name.as_deref(), client, consent);
    let photos = match store_photos(&state, &record, given, files, ids.iter().zip(&slots)).await {
        Ok(photos) => photos,
        Err(e) => {
            for (photo, slot) in ids.iter().zip(&slots) {
                let _ = events.delete_photo(record.id, *photo).await;
                if let Some(slot) = slot {
                    let _ = events.release_slot(record.id, &guest, *slot).await;
                }
            }
            return Err(e);
        }
    };
    state.event_counts.add(record.id, photos.len());
    if guest_name.is_some() {
        name_guest(&state, &record, &guest, &guest_name, &ids).await?;
    }
    crate::api::event_auto::schedule(&state, &record);
    let sent = PhotosSent {
        photos: photos.iter().map(PhotoView::from).collect(),
        refused,
    };
    Ok(answer(&req, StatusCode::CREATED, (client, minted), sent))
}

/// What a guest's erasure took out.
#[derive(Debug, Serialize, ToSchema)]
pub struct PhotosErased {
    /// The guest's photos taken out, with their pictures.
    pub removed: usize,
}

/// Take out every photo the caller sent to an event, through its contribute link.
///
/// Each photo, its record and its pictures go at once; they leave the event's next mosaic (a
/// mosaic made before keeps its pixels).
#[utoipa::path(
    delete,
    path = "/api/v1/events/{id}/photos",
    operation_id = "erase_my_event_photos",
    tag = "events",
    params(("id" = Uuid, Path, description = "The event's id"), TokenQuery),
    responses(
        (status = 200, description = "Taken out", body = PhotosErased),
        (status = 403, description = "bad_contribute_token", body = crate::api_error::ErrorBody),
        (status = 404, description = "event_not_found", body = crate::api_error::ErrorBody),
        crate::api::error_sets::StorageErrors,
    ),
)]
pub async fn erase_mine(
    req: HttpRequest,
    id: web::Path<Uuid>,
    query: web::Query<TokenQuery>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let (guest, client, minted) = requester(&req)?;
    let events = state.platform.events();
    let record = events.get(*id).await?;
    require_token(&req, &query, &record)?;
    let mine = events.photos_of(record.id, &guest).await?;
    let mut in_mosaics = false;
    for photo in &mine {
        events.remove_photo(record.id, photo).await?;
        state.event_counts.remove_one(record.id);
        in_mosaics |= Shelf::of(photo) == Shelf::Approved;
    }
    if in_mosaics {
        events.touch_changed(record.id).await?;
        crate::api::event_auto::schedule(&state, &record);
    }
    let erased = PhotosErased {
        removed: mine.len(),
    };
    Ok(answer(&req, StatusCode::OK, (client, minted), erased))
}

/// A name given once is the guest's on every photo they sent: those before `sent` get it too.
async fn name_guest(
    state: &AppState,
    record: &EventRecord,
    guest: &Owner,
    name: &Option<String>,
    sent: &[Uuid],
) -> ApiResult<()> {
    let events = state.platform.events();
    for photo in events.photos_of(record.id, guest).await? {
        if sent.contains(&photo.id) || &photo.guest_name == name {
            continue;
        }
        events
            .update_photo(record.id, photo.id, |p| {
                let renamed = &p.guest_name != name;
                p.guest_name.clone_from(name);
                renamed
            })
            .await?;
    }
    Ok(())
}

/// 422 when no file of a batch can be taken: each file's reason, in one message.
fn none_taken(files: &[Received], refused: &[RefusedPhoto]) -> ApiResult<()> {
    if !files.is_empty() {
        return Ok(());
    }
    let reasons: Vec<&str> = refused.iter().map(|r| r.reason.as_str()).collect();
    Err(ApiError::unprocessable(ErrorCode::CorruptImage, reasons.join("; ")).with_field("files"))
}

/// Stores each photo and its record, in the state the event gives them and with the name their
/// guest gave, each holding its slot, and asks the processors to prepare it
/// (`photorequest`): nothing is decoded here.
async fn store_photos(
    state: &AppState,
    record: &EventRecord,
    (guest, guest_name, client, consent): (&Owner, Option<&str>, Uuid, Option<String>),
    files: Vec<Received>,
    ids: impl Iterator<Item = (&Uuid, &Option<u32>)>,
) -> ApiResult<Vec<EventPhoto>> {
    let events = state.platform.events();
    let given = if record.settings.approval {
        PhotoState::Waiting
    } else {
        PhotoState::Approved
    };
    let queue = state.platform.queue::<PhotoRequest>();
    let mut photos = Vec::with_capacity(files.len());
    for (file, (&id, &slot)) in files.into_iter().zip(ids) {
        let photo = EventPhoto {
            id,
            name: file.name,
            contributor: guest.clone(),
            state: given,
            extension: file.extension,
            colour: None,
            guest_name: guest_name.map(str::to_string),
            added_at: OffsetDateTime::now_utc(),
            prepared: false,
            unreadable: None,
            slot,
            likeness: None,
            held: None,
            review: None,
            consent: consent.clone(),
            cell: None,
        };
        events.put_photo(record.id, photo.id, file.bytes).await?;
        events.add_photo(record.id, &photo).await?;
        let request = PhotoRequest {
            event_id: record.id,
            photo_id: photo.id,
        };
        queue.send(&Envelope::new(client, request)).await?;
        photos.push(photo);
    }
    Ok(photos)
}

/// Refuses photos for an event that takes no more.
fn check_open(record: &EventRecord) -> ApiResult<()> {
    if record.settings.open {
        return Ok(());
    }
    Err(ApiError::new(
        StatusCode::CONFLICT,
        ErrorCode::ContributionsClosed,
        format!("{} takes no more photos", record.name),
    ))
}

/// Refuses `more` photos that would pass the event's cap (`max_photos`), saying how many it
/// still takes. The count is this process's ([`crate::guards::event_counts`]).
async fn check_event_room(state: &AppState, record: &EventRecord, more: usize) -> ApiResult<()> {
    let max = record.settings.max_photos as usize;
    let held = state
        .event_counts
        .held(&state.platform.events(), record.id, max)
        .await?;
    let room = max.saturating_sub(held);
    if more <= room {
        return Ok(());
    }
    Err(ApiError::unprocessable(
        ErrorCode::EventPhotoLimit,
        format!(
            "{} takes at most {max} photos and holds {held}: it takes {room} more, and these are \
             {more}{}",
            record.name,
            choose(room)
        ),
    ))
}

/// The refusal of `more` photos from a guest who holds `held` of the `cap` the event takes
/// from each.
fn over_guest_cap(cap: u32, held: u32, more: usize) -> ApiError {
    let left = cap.saturating_sub(held) as usize;
    ApiError::unprocessable(
        ErrorCode::GuestPhotoLimit,
        format!(
            "this event takes {cap} photos from each guest: you have sent {held}, and these \
             are {more}{}",
            choose(left)
        ),
    )
}

/// What a guest over a cap may do: choose fewer, or nothing more.
fn choose(left: usize) -> String {
    match left {
        0 => ": it takes no more from you".into(),
        n => format!(": choose {n} or fewer"),
    }
}

/// A contributed photo, read whole and its kind checked from its header.
struct Received {
    /// The file name sent, without folders, at most 200 characters.
    name: String,
    bytes: Bytes,
    /// The extension of its kind as sniffed (`jpg`, `heic`...).
    extension: String,
}

/// The `files` of a contribution within the upload limits: those whose header Tessera reads,
/// and the others refused with their reason (by their content, or by their name for a kind
/// people mistake for a photo: a camera's RAW, a PDF); and the guest's name, if given.
/// Nothing is decoded yet: the caps and rates are checked first.
async fn read_photos(
    payload: &mut Multipart,
    state: &AppState,
) -> ApiResult<(Vec<Received>, Vec<RefusedPhoto>, Option<String>, bool)> {
    let (mut files, mut refused, mut guest_name) = (Vec::new(), Vec::new(), None);
    let mut agreed = None;
    let mut left = state.settings.max_library_upload_bytes;
    let mut clock = BodyClock::new(&state.settings);
    while let Some(mut field) = clock.field(payload).await? {
        let part = field_name(&field);
        if part == "guest_name" {
            let text = read_text(&mut field, &mut clock, &part).await?;
            if guest_name.replace(guest_name_of(&text)?).is_some() {
                return Err(crate::api::job_broker::duplicate(&part));
            }
            continue;
        }
        if part == "consent" {
            let text = read_text(&mut field, &mut clock, &part).await?;
            if agreed.replace(agreement_of(&text)?).is_some() {
                return Err(crate::api::job_broker::duplicate(&part));
            }
            continue;
        }
        if part != "files" {
            return Err(ApiError::bad_request(
                ErrorCode::UnknownField,
                format!("unknown field {part:?}: send photos as files"),
            ));
        }
        let sent = file_name(&field).unwrap_or_else(|| "photo".into());
        let bytes = read_limited(&mut field, &mut clock, left, || {
            ApiError::too_large(
                ErrorCode::UploadTooLarge,
                format!(
                    "the photos are over the upload limit of {} bytes",
                    state.settings.max_library_upload_bytes
                ),
            )
        })
        .await?
        .freeze();
        left = left.saturating_sub(bytes.len() as u64);
        let name: String = sent
            .rsplit(['/', '\\'])
            .next()
            .unwrap_or(&sent)
            .chars()
            .take(200)
            .collect();
        match photo_kind(&name, &bytes) {
            Ok(extension) => files.push(Received {
                name,
                bytes,
                extension,
            }),
            Err(reason) => refused.push(RefusedPhoto { name, reason }),
        }
    }
    if files.is_empty() && refused.is_empty() {
        return Err(missing("files"));
    }
    Ok((
        files,
        refused,
        guest_name.flatten(),
        agreed.unwrap_or(false),
    ))
}

/// Whether the guest agreed, as the form's `consent` field says it (a checkbox's `on`, or
/// `true`/`false`).
fn agreement_of(text: &str) -> ApiResult<bool> {
    match text.trim() {
        "on" | "true" | "yes" | "1" => Ok(true),
        "" | "off" | "false" | "no" | "0" => Ok(false),
        other => Err(ApiError::bad_request(
            ErrorCode::InvalidParameter,
            format!("consent must be true or false, not {other:?}"),
        )
        .with_field("consent")),
    }
}

/// The consent line a contribution agreed to, when the event asks for one: refused if the
/// guest did not agree.
fn consent_of(record: &EventRecord, agreed: bool) -> ApiResult<Option<String>> {
    let line = &record.settings.consent;
    if line.is_empty() {
        return Ok(None);
    }
    if !agreed {
        return Err(ApiError::bad_request(
            ErrorCode::ConsentRequired,
            format!("agree to the event's consent line first (consent=true): {line:?}"),
        ));
    }
    Ok(Some(line.clone()))
}

/// A guest's name as given: trimmed, none if blank; refused over [`MAX_GUEST_NAME`]
/// characters or with control characters.
fn guest_name_of(text: &str) -> ApiResult<Option<String>> {
    let name = text.trim();
    if name.chars().count() > MAX_GUEST_NAME || name.chars().any(char::is_control) {
        return Err(ApiError::bad_request(
            ErrorCode::InvalidParameter,
            format!(
                "guest_name is the name you go by: at most {MAX_GUEST_NAME} characters, on one line"
            ),
        )
        .with_field("guest_name"));
    }
    Ok((!name.is_empty()).then(|| name.to_string()))
}

/// The extension of the photo `bytes` sent as `name`, or why it is not one Tessera takes: a
/// camera's RAW (a DNG is a TIFF inside) is refused by its name, anything else by its header
/// (a JPEG too large to decode as a tile, by its frame).
fn photo_kind(name: &str, bytes: &[u8]) -> Result<String, String> {
    use tessera_engine::decode::{check_tile_header, not_an_image, read_header, unreadable_kind};
    use tessera_shared::events::THUMBNAIL_SIDE;
    let by_name = not_an_image(name).filter(|why| why.starts_with("camera RAW"));
    if let Some(why) = by_name {
        return Err(format!("{name} is a {why}"));
    }
    if bytes.starts_with(b"%PDF") {
        return Err(format!("{name} is a PDF document, not a photo"));
    }
    match read_header(bytes) {
        Ok(header) => {
            // Refused now what the processors would refuse from its header alone.
            check_tile_header(bytes, THUMBNAIL_SIDE)
                .map_err(|why| format!("{name} cannot be read: {why}"))?;
            Ok(header.format.name().to_ascii_lowercase())
        }
        Err(e) => Err(match unreadable_kind(bytes) {
            Some(kind) => format!("{name} is a {kind} file, not a photo: send it as JPEG"),
            None => format!("{name} is not a photo Tessera reads: {e}"),
        }),
    }
}
