//! The event a request's path names (`/events/{id}/...`), loaded from storage, for its owner:
//! what the owner's event routes begin with. An id that is not a UUID, or names no event, is
//! 404 `event_not_found`; someone else's event 403 `not_event_owner`.

use actix_web::HttpRequest;
use actix_web::http::StatusCode;
use tessera_shared::error_code::ErrorCode;
use tessera_shared::events::EventRecord;
use tessera_shared::libraries::Owner;
use uuid::Uuid;

use crate::api::path_target::from_path;
use crate::api_error::{ApiError, ApiResult};
use crate::guards::client::{client_id, credential_owner};

/// The event named by the path's `{id}`, asked for by its owner (or the operator).
pub struct OwnedEvent {
    pub record: EventRecord,
    /// The client that asked (a key's holder asks through one too).
    pub client: Uuid,
}

from_path!(OwnedEvent, |state, req, id| async move {
    let id = id
        .parse::<Uuid>()
        .map_err(|_| ApiError::not_found(ErrorCode::EventNotFound, "no event has this address"))?;
    let (who, client, _) = requester(&req)?;
    let record = state.platform.events().get(id).await?;
    if !is_owner(&record, &who) {
        return Err(not_owner(&record));
    }
    Ok(OwnedEvent { record, client })
});

/// The requester of an event route: a key's holder, else the client (minted when absent).
pub(crate) fn requester(req: &HttpRequest) -> ApiResult<(Owner, Uuid, bool)> {
    let (client, minted) = client_id(req)?;
    let who = credential_owner(req).unwrap_or_else(|| Owner::client(client));
    Ok((who, client, minted))
}

/// Whether `who` owns the event (the operator owns every one).
pub(crate) fn is_owner(record: &EventRecord, who: &Owner) -> bool {
    who.is_operator() || &record.owner == who
}

/// The refusal of a route only the event's owner may take.
pub(crate) fn not_owner(record: &EventRecord) -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        ErrorCode::NotEventOwner,
        format!(
            "event {} is someone else's: only its owner may do this",
            record.id
        ),
    )
}
