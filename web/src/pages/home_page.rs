//! The home page: the upload form, with its options rendered from the job specification.

use super::page_answer::page;
use crate::api_error::ApiResult;
use crate::app_state::AppState;
use crate::imaging::sheet_layout::{sheet_size, sheet_url};
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use tessera_shared::libraries::LibraryRecord;
use tessera_shared::spec::{NAMED_SIZES, NamedSize};

#[derive(Template)]
#[template(path = "home.html")]
pub(super) struct Home {
    libraries: Vec<LibraryRecord>,
    /// The selected library's sample strip (the first row of its contact sheet): the sheet's
    /// URL, width, height, and the strip's alt text.
    strip: Option<(String, u32, u32, String)>,
    /// The sizes by name the form offers first.
    named_sizes: &'static [NamedSize],
    max_cells: u32,
    /// The upload limit, so the page can refuse a file that is too large before sending it.
    max_upload_bytes: u64,
    /// The largest mosaic the server makes: the page shows the output size against it.
    max_output_pixels: u64,
    /// Over this size the form asks for a tick before it sends the job.
    large_output_pixels: u64,
    /// Every option as the job specification declares it, with this service's limits.
    options: Vec<tessera_shared::spec::OptionDoc>,
}

impl Home {
    /// The option called `name` (its label and hint for the inputs laid out by hand).
    fn option(&self, name: &str) -> &tessera_shared::spec::OptionDoc {
        // Every name the template asks for is declared (the doors test walks the page).
        self.options
            .iter()
            .find(|o| o.name == name)
            .unwrap_or(&self.options[0])
    }
}

pub(super) async fn home(req: HttpRequest, state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let who = crate::guards::client::known_requester(&req);
    let mut libraries = crate::api::tile_libraries::visible_libraries(&state, who.as_ref()).await?;
    let default = &state.settings.default_library;
    // The default library first, so it is the one selected.
    libraries.sort_by_key(|l| (&l.id != default, l.name.clone()));
    let s = &state.settings;
    let strip = libraries.first().map(|l| {
        let (w, h) = sheet_size(l.tiles);
        (
            sheet_url(&l.id, l.version),
            w,
            h,
            format!("Sample tiles of {}", l.name),
        )
    });
    page(&Home {
        libraries,
        strip,
        named_sizes: &NAMED_SIZES,
        max_cells: s.limits.max_cells,
        max_upload_bytes: s.max_upload_bytes,
        max_output_pixels: s.limits.max_output_pixels,
        large_output_pixels: s.limits.large_output_pixels,
        options: tessera_shared::spec::options_document(&s.limits),
    })
}
