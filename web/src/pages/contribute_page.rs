//! The contribute page: what a guest opens from an event's link, made for a phone. It sends
//! photos through the API with the link's token and follows them; without the token it is 403.

use super::page_answer::page;
use crate::api::event_mosaics::{TokenQuery, require_token};
use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use tessera_shared::error_code::ErrorCode;
use tessera_shared::events::Shelf;
use tessera_shared::wishlist::Wish;
use uuid::Uuid;

#[derive(Template)]
#[template(path = "contribute.html")]
pub(super) struct ContributePage {
    id: Uuid,
    name: String,
    token: String,
    open: bool,
    approval: bool,
    per_guest: u32,
    /// The owner's consent line, which the guest agrees to before sending; empty: none.
    consent: String,
    wishes: Vec<Wish>,
    /// Whether the event is a board: each photo in gets its cell, printed as a sticker.
    board: bool,
    /// The limit of one upload (all files together), checked by the page before sending.
    max_upload_bytes: u64,
}

pub(super) async fn contribute(
    req: HttpRequest,
    id: web::Path<String>,
    query: web::Query<TokenQuery>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let id = Uuid::parse_str(&id)
        .map_err(|_| ApiError::not_found(ErrorCode::EventNotFound, "no event has this address"))?;
    let events = state.platform.events();
    let record = events.get(id).await?;
    require_token(&req, &query, &record)?;
    let approved = events.shelf(id, Shelf::Approved).await?;
    page(&ContributePage {
        id,
        name: record.name.clone(),
        token: record.token.clone(),
        open: record.settings.open,
        approval: record.settings.approval,
        per_guest: record.settings.per_guest,
        consent: record.settings.consent.clone(),
        wishes: events.wishlist_of(&record, &approved).await?,
        board: record.board.is_some(),
        max_upload_bytes: state.settings.max_library_upload_bytes,
    })
}
