//! The browser UI: server-rendered pages (askama templates in `templates/`), their static assets
//! (`static/`, compiled into the binary), and the OpenAPI document of the REST API.
//!
//! The pages only read; everything they change goes through the JSON API with `fetch`.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use uuid::Uuid;

use tessera_engine::TILE_SIZES;
use tessera_shared::error_code::ErrorCode;
use tessera_shared::jobs::{JobError, JobQuality, JobRecord, JobState};
use tessera_shared::keys::BlobKey;
use tessera_shared::libraries::{LibraryRecord, Visibility};
use tessera_shared::storage::StorageError;

use crate::client::{CLIENT_COOKIE, job_id};
use crate::error::{ApiError, ApiResult};
use crate::library_sheet::{sheet_size, sheet_url};
use crate::mosaic::{level_size, top_level};
use crate::state::AppState;
use crate::system::{QueueDepth, SystemView, queue_depths, system_view};

/// Registers the pages and the static assets.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(home))
        .route("/jobs", web::get().to(jobs))
        .route("/jobs/{id}", web::get().to(job))
        .route("/libraries", web::get().to(libraries))
        .route("/system", web::get().to(system))
        .route("/api", web::get().to(api))
        .route("/static/{file}", web::get().to(asset))
        .route("/favicon.ico", web::get().to(favicon));
}

/// Browsers ask for `/favicon.ico` whatever the page names: the icon is an SVG.
async fn favicon() -> ApiResult<HttpResponse> {
    serve_asset("favicon.svg")
}

#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage {
    title: String,
    message: String,
}

/// Errors answered to a browser (a request that accepts HTML, outside the API) as a page in
/// words, with the status kept; the API's errors stay JSON.
pub fn error_page<B>(
    res: actix_web::dev::ServiceResponse<B>,
) -> actix_web::Result<actix_web::middleware::ErrorHandlerResponse<B>> {
    use actix_web::middleware::ErrorHandlerResponse;
    let request = res.request();
    let wants_html = request
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/html"));
    let path = request.path();
    let is_api = path.starts_with("/api/") || path.starts_with("/static/");
    let json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !wants_html || is_api || !json {
        return Ok(ErrorHandlerResponse::Response(res.map_into_left_body()));
    }
    let status = res.status();
    let error = res
        .response()
        .error()
        .and_then(|e| e.as_error::<ApiError>());
    let (title, message) = match status.as_u16() {
        404 => (
            "Not found".to_string(),
            match error {
                Some(e) if e.code != "no_route" => format!("{}.", capitalised(&e.message)),
                _ => format!("There is no page at {path}."),
            },
        ),
        500..=599 => (
            "Something went wrong".to_string(),
            error.map_or_else(
                || "The server could not answer. Try again in a moment.".to_string(),
                |e| format!("{}. Try again in a moment.", capitalised(&e.message)),
            ),
        ),
        _ => (
            status.canonical_reason().unwrap_or("Error").to_string(),
            error.map_or_else(String::new, |e| format!("{}.", capitalised(&e.message))),
        ),
    };
    let body = ErrorPage { title, message }
        .render()
        .unwrap_or_else(|_| "<!doctype html><title>Error</title><p>Error</p>".into());
    let (req, res) = res.into_parts();
    let mut html = HttpResponse::build(res.status());
    for (name, value) in res.headers() {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            html.append_header((name.clone(), value.clone()));
        }
    }
    let html = html
        .insert_header((header::CONTENT_TYPE, "text/html; charset=utf-8"))
        .body(body);
    Ok(ErrorHandlerResponse::Response(
        actix_web::dev::ServiceResponse::new(req, html).map_into_right_body(),
    ))
}

/// A size in bytes as people read it: "238 MB", "1.4 GB", "950 kB".
fn bytes_in_words(bytes: u64) -> String {
    let b = bytes as f64;
    match bytes {
        0..1_000 => format!("{bytes} bytes"),
        1_000..1_000_000 => format!("{:.0} kB", b / 1e3),
        1_000_000..10_000_000 => format!("{:.1} MB", b / 1e6),
        10_000_000..1_000_000_000 => format!("{:.0} MB", b / 1e6),
        _ => format!("{:.1} GB", b / 1e9),
    }
}

/// A time span in words, as a person says how long ago something happened.
fn ago(span: time::Duration) -> String {
    let seconds = span.whole_seconds().max(0);
    let (n, unit) = match seconds {
        0..45 => return "just now".to_string(),
        45..5400 => ((seconds + 30) / 60, "minute"),
        5400..79_200 => ((seconds + 1800) / 3600, "hour"),
        79_200..3_888_000 => ((seconds + 43_200) / 86_400, "day"),
        _ => ((seconds + 1_296_000) / 2_592_000, "month"),
    };
    format!("{n} {unit}{} ago", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::ago;
    use time::Duration;

    #[test]
    fn sizes_read_as_people_say_them() {
        for (bytes, words) in [
            (512, "512 bytes"),
            (950_400, "950 kB"),
            (1_450_000, "1.4 MB"),
            (238_123_456, "238 MB"),
            (1_400_000_000, "1.4 GB"),
        ] {
            assert_eq!(super::bytes_in_words(bytes), words);
        }
    }

    #[test]
    fn spans_read_as_people_say_them() {
        for (span, words) in [
            (Duration::seconds(3), "just now"),
            (Duration::seconds(50), "1 minute ago"),
            (Duration::minutes(59), "59 minutes ago"),
            (Duration::minutes(100), "2 hours ago"),
            (Duration::hours(30), "1 day ago"),
            (Duration::hours(37), "2 days ago"),
            (Duration::days(60), "2 months ago"),
            (Duration::seconds(-5), "just now"),
        ] {
            assert_eq!(ago(span), words, "{span}");
        }
    }
}

/// `text` with its first letter in upper case.
fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

fn page(template: &impl Template) -> ApiResult<HttpResponse> {
    let body = template.render().map_err(ApiError::internal)?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "text/html; charset=utf-8"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .body(body))
}

#[derive(Template)]
#[template(path = "home.html")]
struct Home {
    libraries: Vec<LibraryRecord>,
    /// The selected library's sample strip (the first row of its contact sheet): the sheet's
    /// URL, width, height, and the strip's alt text.
    strip: Option<(String, u32, u32, String)>,
    tile_min: u32,
    tile_max: u32,
    max_cells: u32,
    /// The upload limit, so the page can refuse a file that is too large before sending it.
    max_upload_bytes: u64,
    /// The largest mosaic the server makes: the page shows the output size against it.
    max_output_pixels: u64,
    /// Over this size the form asks for a tick before it sends the job.
    large_output_pixels: u64,
    /// Cells of a job that names none (cells across then follow the photo's shape).
    auto_cells: u32,
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

async fn home(req: HttpRequest, state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let who = crate::client::known_requester(&req);
    let mut libraries = crate::routes::libraries::visible_libraries(&state, who.as_ref()).await?;
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
        tile_min: *TILE_SIZES.start(),
        tile_max: *TILE_SIZES.end(),
        max_cells: s.limits.max_cells,
        max_upload_bytes: s.max_upload_bytes,
        max_output_pixels: s.limits.max_output_pixels,
        large_output_pixels: s.limits.large_output_pixels,
        auto_cells: s.limits.auto_cells,
        options: tessera_shared::spec::options_document(&s.limits),
    })
}

#[derive(Template)]
#[template(path = "job.html")]
struct JobPage {
    id: Uuid,
    /// The uploaded image's file name.
    input_name: String,
    /// What the download is called: after the photo.
    download_name: String,
    /// Whether the browser asking submitted the job (then it may cancel or delete it).
    owned: bool,
    state: &'static str,
    /// The result's size in words, once the job is done.
    download_size: Option<String>,
    has_quality: bool,
    /// Empty until the job is planned (the page's script fills them in then).
    quality: QualityFigures,
    /// How the job was made, as `(setting, value)`: what it asked for and what that came to.
    settings: Vec<(&'static str, String)>,
}

/// A job's settings in words: each option as its declaration reads it, with the grid, size
/// and print size as made, and the colour `auto` chose.
fn settings_in_words(record: &tessera_shared::jobs::JobRecord) -> Vec<(&'static str, String)> {
    let spec = &record.params.spec;
    let mut made = vec![("Grid", grid_in_words(record))];
    if let Some(o) = record.output {
        made.extend(size_in_words(spec, o));
    }
    made.extend(spec.warnings().into_iter().map(|w| ("Warning", w)));
    let chosen = record.quality.as_ref().and_then(|q| q.background.clone());
    let mut out = Vec::new();
    for (label, words) in tessera_shared::spec::settings_in_words(spec) {
        // "Tile size (px)" reads "Tile size: 16 px".
        let label = label.split(" (").next().unwrap_or(label);
        let words = match (label, &chosen) {
            ("Behind transparent tiles", Some(colour)) if words != *colour => {
                format!("{words}: #{colour}")
            }
            ("Behind transparent tiles", Some(colour)) => format!("#{colour}"),
            _ => words,
        };
        out.push((label, words));
        if label == "Tile size" {
            out.append(&mut made);
        }
    }
    out
}

/// How the grid was made, in words.
fn grid_in_words(record: &tessera_shared::jobs::JobRecord) -> String {
    use tessera_shared::messages::Grid;
    let spec = &record.params.spec;
    match (spec.grid, record.output) {
        (Grid::Cells { across }, Some(o)) => format!("{across} cells across, {} rows", o.rows),
        (Grid::Auto, Some(o)) if spec.print.is_some() => format!(
            "chosen by the print size: {} cells across, {} rows",
            o.cols, o.rows
        ),
        (Grid::Auto, Some(o)) => format!(
            "chosen by the photo's shape: {} cells across, {} rows",
            o.cols, o.rows
        ),
        (Grid::PerPixel, Some(o)) => format!("one tile per pixel: {} x {}", o.cols, o.rows),
        (grid, None) => format!("{grid:?}"),
    }
}

/// The mosaic's size in pixels and on paper, in words.
fn size_in_words(
    spec: &tessera_shared::spec::JobSpec,
    o: tessera_shared::jobs::OutputSize,
) -> [(&'static str, String); 2] {
    use tessera_shared::print::cm;
    let mp = f64::from(o.width) * f64::from(o.height) / 1e6;
    let dpi = spec.dpi();
    let size = format!(
        "{:.1} x {:.1} cm ({:.1} x {:.1} in) at {dpi} dpi, tiles {:.2} cm wide",
        cm(o.width, dpi),
        cm(o.height, dpi),
        cm(o.width, dpi) / 2.54,
        cm(o.height, dpi) / 2.54,
        cm(spec.tile().width, dpi),
    );
    [
        (
            "Output",
            format!("{} x {} px ({mp:.1} megapixels)", o.width, o.height),
        ),
        (
            "Print size",
            match spec.print {
                Some(print) => format!("{size}, on {print}"),
                None => size,
            },
        ),
    ]
}

/// The colour differences with an overlay, in words.
fn overlay_figures(o: &tessera_shared::jobs::OverlayQuality) -> String {
    format!(
        "mean {:.2}, 95th percentile {:.2} with the {} % photo overlay (the figures above are the tiles' alone)",
        o.de00_mean, o.de00_p95, o.percent
    )
}

/// A job's quality figures, formatted for reading.
#[derive(Default)]
struct QualityFigures {
    de00_mean: String,
    de00_p95: String,
    ssim_view: String,
    distinct: String,
    min_uses: String,
    max_uses: String,
    dup_r1: String,
    dup_r5: String,
    /// `#rrggbb`, or empty for a library without transparency.
    background: String,
    /// The colour differences with the photo overlay, or empty without one.
    overlay: String,
}

impl From<&JobQuality> for QualityFigures {
    fn from(q: &JobQuality) -> Self {
        let share = |x: f64| format!("{:.1} %", x * 100.0);
        QualityFigures {
            de00_mean: format!("{:.2}", q.de00_mean),
            de00_p95: format!("{:.2}", q.de00_p95),
            ssim_view: q
                .ssim_view
                .map_or_else(|| "not measured".into(), |s| format!("{s:.3}")),
            distinct: if q.library_tiles > 0 {
                format!("{} of {}", q.distinct, q.library_tiles)
            } else {
                q.distinct.to_string()
            },
            min_uses: if q.library_tiles > 0 {
                q.min_uses.to_string()
            } else {
                "not measured".into()
            },
            max_uses: q.max_uses.to_string(),
            dup_r1: share(q.dup_r1),
            dup_r5: share(q.dup_r5),
            background: q
                .background
                .as_ref()
                .map_or_else(String::new, |c| format!("#{c}")),
            overlay: q.overlay.as_ref().map_or_else(String::new, overlay_figures),
        }
    }
}

async fn job(
    req: HttpRequest,
    path: web::Path<String>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let id = job_id(&path)?;
    let record = state.platform.jobs().get(id).await?;
    let owned = crate::client::manages_job(&req, &record).unwrap_or(false);
    let download_size = match (&record.result_blob, record.state) {
        (Some(key), JobState::Done) => state
            .platform
            .blobs
            .head(key)
            .await
            .ok()
            .map(|meta| bytes_in_words(meta.size)),
        _ => None,
    };
    page(&JobPage {
        id,
        input_name: record.params.input_name.clone(),
        download_name: crate::view::download_name_as(
            &record.params.input_name,
            record.params.spec.format.extension(),
        ),
        owned,
        download_size,
        state: record.state.as_str(),
        has_quality: record.quality.is_some(),
        quality: record
            .quality
            .as_ref()
            .map(QualityFigures::from)
            .unwrap_or_default(),
        settings: settings_in_words(&record),
    })
}

struct JobRow {
    id: Uuid,
    /// When it was submitted: RFC 3339, and in words relative to now.
    created: String,
    created_ago: String,
    input_name: String,
    state: &'static str,
    /// Still running (it may be cancelled) or ended (it may be deleted).
    running: bool,
    done: u32,
    total: u32,
    size: String,
    /// A done job's thumbnail: the top tile of its pyramid.
    thumb: Option<Thumb>,
}

/// Pixels on a side of the box a thumbnail is shown in.
const THUMB_BOX: u32 = 64;

struct Thumb {
    url: String,
    /// The size shown: the tile's, scaled to fit the box.
    width: u32,
    height: u32,
}

impl Thumb {
    /// The top tile of a done job's pyramid (the whole mosaic in at most 256 px); none for a job
    /// not done.
    fn of(record: &JobRecord) -> Option<Self> {
        let output = record.output.filter(|_| record.state == JobState::Done)?;
        let (w, h) = (output.width, output.height);
        if w == 0 || h == 0 {
            return None;
        }
        let top = top_level(w, h);
        let (tw, th) = level_size(w, h, top);
        let scale =
            |n: u32, of: u32| (u64::from(n) * u64::from(THUMB_BOX) / u64::from(of)).max(1) as u32;
        let (width, height) = if tw >= th {
            (THUMB_BOX, scale(th, tw))
        } else {
            (scale(tw, th), THUMB_BOX)
        };
        Some(Thumb {
            url: format!("/api/v1/jobs/{}/tiles/{top}/0/0", record.id),
            width,
            height,
        })
    }
}

#[derive(Template)]
#[template(path = "jobs.html")]
struct JobsPage {
    jobs: Vec<JobRow>,
}

/// Jobs listed per page at most.
const MAX_LISTED_JOBS: usize = 200;

async fn jobs(req: HttpRequest, state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let client = req
        .cookie(CLIENT_COOKIE)
        .and_then(|c| Uuid::parse_str(c.value()).ok());
    let mut records: Vec<JobRecord> = Vec::new();
    if let Some(client) = client {
        let prefix = BlobKey::client_jobs_prefix(client);
        let mut markers = Vec::new();
        let mut page_token = None;
        loop {
            let page = match state.platform.blobs.list(&prefix, 500, page_token).await {
                Ok(p) => p,
                Err(StorageError::NotFound(_)) => break,
                Err(e) => return Err(e.into()),
            };
            markers.extend(page.items.into_iter().filter_map(|m| {
                let id = m
                    .key
                    .rsplit('/')
                    .next()
                    .and_then(|s| Uuid::parse_str(s).ok())?;
                Some((m.last_modified, id))
            }));
            match page.next {
                Some(next) if markers.len() < 10_000 => page_token = Some(next),
                _ => break,
            }
        }
        // A marker is written once, as its job is submitted: the newest markers name the
        // newest jobs, so only the records listed are read.
        markers.sort_by_key(|(written, _)| std::cmp::Reverse(*written));
        markers.truncate(MAX_LISTED_JOBS);
        for (_, id) in markers {
            match state.platform.jobs().get(id).await {
                Ok(r) => records.push(r),
                Err(JobError::NotFound(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    records.sort_by_key(|r| std::cmp::Reverse(r.created_at));
    records.truncate(MAX_LISTED_JOBS);
    let now = time::OffsetDateTime::now_utc();
    let jobs = records
        .iter()
        .map(|r| JobRow {
            id: r.id,
            created: r
                .created_at
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default(),
            created_ago: ago(now - r.created_at),
            input_name: if r.params.input_name.is_empty() {
                "(unnamed image)".to_string()
            } else {
                r.params.input_name.clone()
            },
            state: r.state.as_str(),
            running: !r.state.is_final(),
            done: r.slices_done(),
            total: r.slices_total,
            size: r
                .output
                .map(|o| format!("{} × {}", o.width, o.height))
                .unwrap_or_default(),
            thumb: Thumb::of(r),
        })
        .collect();
    page(&JobsPage { jobs })
}

#[derive(Template)]
#[template(path = "libraries.html")]
struct LibrariesPage {
    libraries: Vec<LibraryRecord>,
    /// Per library (same order): whether the person asking may delete it (its owner).
    mine: Vec<bool>,
    /// Per library (same order): its contact sheet's URL and size.
    sheets: Vec<(String, u32, u32)>,
    /// The limit of one upload (all files together), checked by the page before sending.
    max_upload_bytes: u64,
}

async fn libraries(req: HttpRequest, state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let who = crate::client::known_requester(&req);
    let mut libraries = crate::routes::libraries::visible_libraries(&state, who.as_ref()).await?;
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

#[derive(Template)]
#[template(path = "system.html")]
struct SystemPage {
    queues: Vec<QueueDepth>,
    total: u64,
    targets: Vec<(String, u64)>,
    seen: SystemView,
    /// `(id, last seen, slices, slots)` of each processor.
    processors: Vec<(String, (String, String), u32, u32)>,
    /// `(listener, last seen)` of each process listening for slices.
    listeners: Vec<(String, (String, String))>,
    /// Each running process, with when it started.
    roles: Vec<(tessera_shared::registry::RoleRegistration, (String, String))>,
    /// Whether the service has a key (then the page offers to sign out).
    signed_in: bool,
}

/// A moment as `(machine-readable, readable)`: RFC 3339, and UTC to the second.
fn moment(t: time::OffsetDateTime) -> (String, String) {
    let readable =
        time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
    (
        t.format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default(),
        t.format(readable).unwrap_or_default(),
    )
}

async fn system(state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let queues = queue_depths(&state).await?;
    let snapshot = state.platform.accounting.snapshot();
    let targets = snapshot
        .by_target
        .iter()
        .map(|(target, ops)| (target.clone(), ops.values().sum()))
        .collect();
    let seen = system_view(&state).await?;
    let processors = seen
        .processors
        .iter()
        .map(|p| (p.id.clone(), moment(p.last_seen), p.slices, p.slots))
        .collect();
    let listeners = seen
        .slice_listeners
        .iter()
        .map(|l| (l.listener.clone(), moment(l.last_seen)))
        .collect();
    let roles = seen
        .roles
        .iter()
        .map(|r| (r.clone(), moment(r.started_at)))
        .collect();
    page(&SystemPage {
        queues,
        total: snapshot.total,
        targets,
        seen,
        processors,
        listeners,
        roles,
        signed_in: state.guard.required(),
    })
}

struct Operation {
    method: String,
    path: String,
    summary: String,
    responses: String,
    /// A command that calls it, made from the document.
    example: String,
}

#[derive(Template)]
#[template(path = "api.html")]
struct ApiPage {
    operations: Vec<Operation>,
}

/// Every documented operation: (path, method, summary, response codes).
pub fn documented_operations() -> Vec<(String, String, String, Vec<String>)> {
    operations_of(&api_document())
        .into_iter()
        .map(|(path, method, op)| {
            let summary = op["summary"].as_str().unwrap_or_default().to_string();
            let codes = op["responses"]
                .as_object()
                .map(|r| r.keys().cloned().collect())
                .unwrap_or_default();
            (path, method.to_uppercase(), summary, codes)
        })
        .collect()
}

fn api_document() -> serde_json::Value {
    serde_json::from_str(crate::routes::openapi::document_json()).unwrap_or_default()
}

/// The document's operations: path, method and the operation's object.
fn operations_of(doc: &serde_json::Value) -> Vec<(String, String, serde_json::Value)> {
    let mut out = Vec::new();
    if let Some(paths) = doc["paths"].as_object() {
        for (path, item) in paths {
            for (method, op) in item.as_object().into_iter().flatten() {
                out.push((path.clone(), method.clone(), op.clone()));
            }
        }
    }
    out
}

/// A `curl` command for an operation, made from the document (so it cannot drift from it):
/// path parameters as shell variables (`$ID`), the client id header when the operation takes
/// one, a multipart body's required fields (files as `@FILE`), and `-o` for an image.
fn curl_example(
    doc: &serde_json::Value,
    path: &str,
    method: &str,
    op: &serde_json::Value,
) -> String {
    let mut url = String::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        url.push_str(&rest[..open]);
        let close = rest[open..].find('}').map_or(rest.len(), |c| open + c);
        url.push('$');
        url.push_str(&rest[open + 1..close].to_uppercase());
        rest = rest.get(close + 1..).unwrap_or_default();
    }
    url.push_str(rest);
    let mut parts = vec!["curl".to_string()];
    if method != "get" {
        parts.push(format!("-X {}", method.to_uppercase()));
    }
    let takes_client = op["parameters"]
        .as_array()
        .is_some_and(|ps| ps.iter().any(|p| p["name"] == "X-Client-Id"));
    if takes_client {
        parts.push("-H \"X-Client-Id: $ME\"".to_string());
    }
    let schema = &op["requestBody"]["content"]["multipart/form-data"]["schema"];
    let schema = match schema["$ref"].as_str() {
        Some(r) => doc
            .pointer(&r.trim_start_matches('#').replace("~1", "/"))
            .cloned()
            .unwrap_or_default(),
        None => schema.clone(),
    };
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    for (name, property) in schema["properties"].as_object().into_iter().flatten() {
        let binary = property["format"] == "binary" || property["items"]["format"] == "binary";
        if !required.contains(&name.as_str()) {
            continue;
        }
        if binary {
            let file = if name == "files" {
                "tiles.zip"
            } else {
                "photo.jpg"
            };
            parts.push(format!("-F {name}=@{file}"));
        } else {
            let example = property["example"].as_str().unwrap_or("...");
            parts.push(format!("-F {name}={example}"));
        }
    }
    // An image answered is saved to a file.
    let answers = op["responses"]["200"]["content"]
        .as_object()
        .map(|c| c.keys().cloned().collect::<Vec<_>>())
        .unwrap_or_default();
    // Of several image types (a result in the job's format), PNG, the default.
    let image = answers
        .iter()
        .find(|k| *k == "image/png")
        .or_else(|| answers.iter().find(|k| k.starts_with("image/")));
    if let Some(kind) = image {
        let extension = kind.trim_start_matches("image/").replace("jpeg", "jpg");
        parts.push(format!("-o picture.{extension}"));
    }
    parts.push(format!("http://127.0.0.1:8080{url}"));
    parts.join(" ")
}

async fn api() -> ApiResult<HttpResponse> {
    let doc = api_document();
    let operations = operations_of(&doc)
        .into_iter()
        .map(|(path, method, op)| {
            let codes: Vec<String> = op["responses"]
                .as_object()
                .map(|r| r.keys().cloned().collect())
                .unwrap_or_default();
            Operation {
                example: curl_example(&doc, &path, &method, &op),
                method: method.to_uppercase(),
                path,
                summary: op["summary"].as_str().unwrap_or_default().to_string(),
                responses: codes.join(", "),
            }
        })
        .collect();
    page(&ApiPage { operations })
}

/// The static assets, compiled in: name, content type, bytes.
const ASSETS: [(&str, &str, &str); 6] = [
    (
        "favicon.svg",
        "image/svg+xml",
        include_str!("../../static/favicon.svg"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_str!("../../static/style.css"),
    ),
    (
        "home.js",
        "text/javascript; charset=utf-8",
        include_str!("../../static/home.js"),
    ),
    (
        "job.js",
        "text/javascript; charset=utf-8",
        include_str!("../../static/job.js"),
    ),
    (
        "libraries.js",
        "text/javascript; charset=utf-8",
        include_str!("../../static/libraries.js"),
    ),
    (
        "jobs.js",
        "text/javascript; charset=utf-8",
        include_str!("../../static/jobs.js"),
    ),
];

async fn asset(path: web::Path<String>) -> ApiResult<HttpResponse> {
    serve_asset(&path)
}

fn serve_asset(name: &str) -> ApiResult<HttpResponse> {
    let (_, content_type, body) = ASSETS
        .iter()
        .find(|(n, _, _)| *n == name)
        .ok_or_else(|| ApiError::not_found(ErrorCode::NotFound, format!("no asset {name:?}")))?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, *content_type))
        .insert_header((header::CACHE_CONTROL, "public, max-age=300"))
        .body(*body))
}
