//! Guests' photos prepared (`photorequest`), by the image processors: each photo decoded once,
//! within the decode budget, into its thumbnail, its colour and its tile of the event's library
//! (what the event's mosaics are made of: `event_libraries`), then listed as waiting or in.
//! A photo that cannot be decoded is left out with the reason, and gives its guest's slot back.
//! The pre-screen holds for the owner's review (waiting, with the reason) a blank frame, a near
//! duplicate of a photo the event has (by a perceptual hash) and a screenshot. For an event
//! that asks for a classifier, each prepared photo then waits for its verdict, offered on
//! `photoreview`.

use tessera_shared::events::{
    EventError, EventPhoto, EventRecord, EventStore, PhotoState, Review, THUMBNAIL_SIDE,
};
use tessera_shared::keys::BlobKey;
use tessera_shared::messages::{Envelope, PhotoRequest, PhotoReview};
use tessera_shared::platform::Platform;
use tessera_shared::queue::Queue;
use tessera_shared::runtime::{
    Failure, Listener, ListenerHandle, ListenerSettings, PoisonRecord, poison,
};
use tessera_shared::storage::StorageError;

/// The CPU priority photos are decoded at (a nice value).
const PREPARATION_NICE: i32 = 10;

/// JPEG quality of the thumbnails.
const THUMBNAIL_QUALITY: u8 = 85;

/// Starts preparing photos with `settings`.
pub(crate) async fn listen(
    platform: &Platform,
    settings: ListenerSettings,
) -> Result<ListenerHandle, StorageError> {
    let events = platform.events();
    let on_poison = events.clone();
    let reviews = platform.queue::<PhotoReview>();
    Listener::new(platform.queue::<PhotoRequest>())
        .settings(settings)
        .on_poison(poison::hook(move |record: PoisonRecord| {
            let events = on_poison.clone();
            async move { left_out_poisoned(&events, &record).await }
        }))
        .start(move |message: Envelope<PhotoRequest>, _context| {
            let (events, reviews) = (events.clone(), reviews.clone());
            async move { prepare(&events, &reviews, message).await }
        })
        .await
}

/// Prepares the photo `message` names, unless it was prepared or withdrawn already; offers it
/// to the event's classifier, if it has one, until a verdict comes.
async fn prepare(
    events: &EventStore,
    reviews: &Queue<PhotoReview>,
    message: Envelope<PhotoRequest>,
) -> Result<(), Failure> {
    let (client, request) = (message.client_id, message.body);
    let PhotoRequest { event_id, photo_id } = request;
    let retry = |e: EventError| match e {
        EventError::Storage(e) => Failure::retry_because(format!("photo {photo_id}: {e}")),
        e => Failure::poison(e),
    };
    let Some(photo) = events.find_photo(event_id, photo_id).await.map_err(retry)? else {
        return Ok(());
    };
    if photo.prepared {
        // Prepared before: offered again if the offer may not have gone (a verdict given
        // twice counts once).
        if photo.review.as_ref().is_some_and(Review::pending) {
            let event = events.get(event_id).await.map_err(retry)?;
            offer(reviews, client, &event, &photo).await?;
        }
        return Ok(());
    }
    let bytes = match events.photo(event_id, photo_id).await {
        Ok(bytes) => bytes,
        Err(EventError::Storage(StorageError::NotFound(_))) => return Ok(()),
        Err(e) => return Err(retry(e)),
    };
    let event = match events.get(event_id).await {
        Ok(event) => Some(event),
        Err(EventError::NotFound(_)) => None,
        Err(e) => return Err(retry(e)),
    };
    // A board's photo is printed as a sticker from its square thumbnail: made that large.
    let side = event
        .as_ref()
        .and_then(|e| e.board.as_ref())
        .map_or(THUMBNAIL_SIDE, |b| b.sticker_px().max(THUMBNAIL_SIDE));
    // Below the web's threads, in a process that runs both: a guest's request is answered
    // first, and photos are prepared with what is left.
    let (tile, caption) = (photo.tile_name(), photo.name.clone());
    let screenshot = screen_shaped_png(&bytes);
    let made = crate::job_work::on_background_thread(PREPARATION_NICE, move || {
        prepared_photo(&tile, &caption, &bytes, side).map(|made| {
            let index = made.tile.to_bytes();
            (
                made.thumbnail,
                made.colour,
                index,
                (made.likeness, made.spread),
            )
        })
    })
    .await
    .map_err(|e| Failure::retry_because(format!("photo {photo_id}: {e}")))?;
    let (jpeg, colour, index, (likeness, spread)) = match made {
        Ok(made) => made,
        Err(reason) => return left_out(events, request, reason).await.map_err(retry),
    };
    events
        .put_thumbnail(event_id, photo_id, jpeg.into())
        .await
        .map_err(retry)?;
    events
        .put_tile(event_id, photo_id, index.into())
        .await
        .map_err(retry)?;
    let held = match &event {
        Some(event) if event.settings.screen => {
            held_because(events, request.clone(), (likeness, spread, screenshot))
                .await
                .map_err(retry)?
        }
        _ => None,
    };
    let reviewed = event.as_ref().is_some_and(|e| e.settings.review);
    let made = Made {
        colour,
        likeness,
        held,
        reviewed,
    };
    let prepared = record_prepared(events, request.clone(), made)
        .await
        .map_err(retry)?;
    match (&prepared, &event) {
        (Some(photo), Some(event)) if photo.review.as_ref().is_some_and(Review::pending) => {
            offer(reviews, client, event, photo).await?;
        }
        (Some(photo), event) if photo.state == PhotoState::Approved => {
            if let Some(event) = event {
                events.place_if_in(event, photo).await.map_err(retry)?;
            }
            events.touch_changed(event_id).await.map_err(retry)?;
        }
        _ => {}
    }
    Ok(())
}

/// What preparing a photo found.
struct Made {
    colour: [u8; 3],
    likeness: u64,
    /// Why the pre-screen holds it, if it does.
    held: Option<String>,
    /// Whether it waits for the event's classifier.
    reviewed: bool,
}

/// Records the photo `request` names as prepared with what was `made` of it: waiting when the
/// pre-screen holds it or the classifier is to see it. The photo as it is now, if it is there.
async fn record_prepared(
    events: &EventStore,
    PhotoRequest { event_id, photo_id }: PhotoRequest,
    made: Made,
) -> Result<Option<EventPhoto>, EventError> {
    events
        .update_photo(event_id, photo_id, |p| {
            let first = !p.prepared;
            p.prepared = true;
            p.colour = Some(made.colour);
            p.likeness = Some(made.likeness);
            if let Some(reason) = &made.held {
                p.held = Some(reason.clone());
            }
            if made.reviewed {
                p.review = Some(Review {
                    verdict: None,
                    reason: None,
                });
            }
            if (made.held.is_some() || made.reviewed) && p.state == PhotoState::Approved {
                p.state = PhotoState::Waiting;
            }
            first
        })
        .await
}

/// Offers `photo` to `event`'s classifier on `photoreview`.
async fn offer(
    reviews: &Queue<PhotoReview>,
    client: uuid::Uuid,
    event: &EventRecord,
    photo: &EventPhoto,
) -> Result<(), Failure> {
    let Some(token) = event.review_token.clone() else {
        // Turned on before tokens were kept: the owner decides.
        return Ok(());
    };
    let (event_id, photo_id) = (event.id, photo.id);
    let review = PhotoReview {
        event_id,
        photo_id,
        photo_blob: BlobKey::EventPhoto {
            event: event_id,
            photo: photo_id,
        }
        .path(),
        thumbnail_blob: BlobKey::EventThumbnail {
            event: event_id,
            photo: photo_id,
        }
        .path(),
        verdict_path: format!("/api/v1/events/{event_id}/photos/{photo_id}/verdict"),
        token,
    };
    reviews
        .send(&Envelope::new(client, review))
        .await
        .map_err(|e| Failure::retry_because(format!("photo {photo_id}: {e}")))?;
    Ok(())
}

/// Below this spread of brightness (0 to 255) a photo is a blank or near-uniform frame.
const BLANK_SPREAD: f32 = 6.0;

/// Why the pre-screen holds the photo `request` names for its owner's review, if it does: a
/// blank or near-uniform frame, the same photo (or nearly) as one the event has, or a
/// screenshot.
async fn held_because(
    events: &EventStore,
    PhotoRequest { event_id, photo_id }: PhotoRequest,
    (likeness, spread, screenshot): (u64, f32, bool),
) -> Result<Option<String>, EventError> {
    if spread < BLANK_SPREAD {
        return Ok(Some("a blank or near-uniform frame".into()));
    }
    if let Some(other) = events.alike(event_id, photo_id, likeness).await? {
        return Ok(Some(format!(
            "the same photo as one the event has, or nearly (photo {other})"
        )));
    }
    Ok(screenshot.then(|| "a screenshot, by its kind and shape (a PNG of a screen's)".into()))
}

/// Whether `bytes` look like a screenshot: a PNG (phones save screenshots so, and their
/// cameras never do) of a screen's shape, at least 1.7 times as long as it is wide.
fn screen_shaped_png(bytes: &[u8]) -> bool {
    match tessera_engine::decode::read_header(bytes) {
        Ok(header) if header.format == tessera_engine::Format::Png => {
            let (long, short) = (
                header.width.max(header.height),
                header.width.min(header.height).max(1),
            );
            f64::from(long) / f64::from(short) >= 1.7
        }
        _ => false,
    }
}

/// A guest's photo decoded once into its thumbnail, its colour and its tile `tile` of its
/// event's library (captioned `caption`, the name its guest gave).
pub(crate) fn prepared_photo(
    tile: &str,
    caption: &str,
    bytes: &[u8],
    thumbnail_side: u32,
) -> Result<tessera_engine::PreparedPhoto, String> {
    let options = tessera_engine::ImportOptions::default();
    let thumbnail = (thumbnail_side, THUMBNAIL_QUALITY);
    tessera_engine::Library::from_photo((tile, caption), bytes, &options, thumbnail)
}

/// Leaves out the photo `request` names, which cannot be read: its guest sees why, and has its
/// slot back.
async fn left_out(
    events: &EventStore,
    PhotoRequest { event_id, photo_id }: PhotoRequest,
    reason: String,
) -> Result<(), EventError> {
    tracing::info!(event = %event_id, photo = %photo_id, reason, "a guest's photo cannot be read");
    let Some(photo) = events.find_photo(event_id, photo_id).await? else {
        return Ok(());
    };
    // Listed for its guest without its slot first, so that it is never lost from their view.
    events.free_slot(event_id, &photo).await?;
    events
        .update_photo(event_id, photo_id, |p| {
            let first = !p.prepared;
            p.prepared = true;
            p.state = PhotoState::Rejected;
            p.unreadable = Some(reason.clone());
            p.slot = None;
            first
        })
        .await?;
    Ok(())
}

/// A photo whose request was poisoned (storage failed it on every attempt) is left out, so
/// that its guest is not told "received" for ever.
async fn left_out_poisoned(events: &EventStore, record: &PoisonRecord) {
    let Some(request) = record
        .body
        .as_deref()
        .and_then(|body| Envelope::<PhotoRequest>::decode(body).ok())
    else {
        return;
    };
    let reason = format!("it could not be prepared: {}", record.reason);
    if let Err(e) = left_out(events, request.body, reason).await {
        tracing::warn!(error = %e, "a poisoned photo stays received");
    }
}
