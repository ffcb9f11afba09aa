//! The libraries page: the tile libraries this client may use, with their contact sheets.

use super::page_answer::page;
use crate::api_error::ApiResult;
use crate::app_state::AppState;
use crate::imaging::sheet_layout::{sheet_size, sheet_url};
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use tessera_shared::libraries::{LibraryRecord, Visibility};

#[derive(Template)]
#[template(path = "libraries.html")]
pub(super) struct LibrariesPage {
    libraries: Vec<LibraryRecord>,
    /// Per library (same order): whether the person asking may delete it (its owner).
    mine: Vec<bool>,
    /// Per library (same order): its contact sheet's URL and size.
    sheets: Vec<(String, u32, u32)>,
    /// The limit of one upload (all files together), checked by the page before sending.
    max_upload_bytes: u64,
}

pub(super) async fn libraries(
    req: HttpRequest,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let who = crate::guards::client::known_requester(&req);
    let mut libraries = crate::api::tile_libraries::visible_libraries(&state, who.as_ref()).await?;
    libraries.sort_by(|a, b| a.name.cmp(&b.name));
    let mine = libraries
        .iter()
        .map(|l| who.as_ref().is_some_and(|who| l.may_change(who)))
        .collect();
    let sheets = libraries
        .iter()
        .map(|l| {
            let (w, h) = sheet_size(l.tiles);
            (sheet_url(&l.id, l.version), w, h)
        })
        .collect();
    page(&LibrariesPage {
        libraries,
        mine,
        sheets,
        max_upload_bytes: state.settings.max_library_upload_bytes,
    })
}
