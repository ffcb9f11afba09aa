//! A job's page: its state, settings in words, sizes and quality figures, and the viewer.

use super::page_answer::page;
use super::words::bytes_in_words;
use crate::api::requested_job::RequestedJob;
use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;
use actix_web::{HttpRequest, HttpResponse, web};
use askama::Template;
use tessera_shared::events::EventRecord;
use tessera_shared::jobs::{JobQuality, JobState};
use uuid::Uuid;

#[derive(Template)]
#[template(path = "job.html")]
pub(super) struct JobPage {
    id: Uuid,
    /// What the page is called: "Mosaic of" the photo's file name, or of the event it is one of.
    title: String,
    /// An event's mosaic: the way back to the event (its owner's page, or a guest's link).
    event_link: Option<(String, &'static str)>,
    /// An event's mosaic seen by a guest: what they need (the mosaic, finding their photos,
    /// sharing), not the settings, figures and transactions its owner reads.
    guest_view: bool,
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
pub(super) fn settings_in_words(
    record: &tessera_shared::jobs::JobRecord,
) -> Vec<(&'static str, String)> {
    let spec = &record.params.spec;
    let mut made = vec![("Grid", grid_in_words(record))];
    if let Some(o) = record.output {
        made.extend(size_in_words(spec, o));
    }
    made.extend(spec.warnings().into_iter().map(|w| ("Warning", w)));
    made.extend(record.adapted.iter().map(|a| ("Adapted", a.clone())));
    if let Some(kept) = &record.kept {
        let words = format!(
            "{} of {} cells changed since mosaic {}; every other cell kept its photo",
            kept.changed, kept.cells, kept.from
        );
        made.push(("Kept", words));
    }
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
pub(super) fn grid_in_words(record: &tessera_shared::jobs::JobRecord) -> String {
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
pub(super) fn size_in_words(
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
pub(super) fn overlay_figures(o: &tessera_shared::jobs::OverlayQuality) -> String {
    format!(
        "mean {:.2}, 95th percentile {:.2} with the {} % photo overlay (the figures above are the tiles' alone)",
        o.de00_mean, o.de00_p95, o.percent
    )
}

/// A job's quality figures, formatted for reading.
#[derive(Default)]
pub(super) struct QualityFigures {
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

impl QualityFigures {
    /// The job's figures, empty until it is planned.
    fn of(record: &tessera_shared::jobs::JobRecord) -> QualityFigures {
        record
            .quality
            .as_ref()
            .map(QualityFigures::from)
            .unwrap_or_default()
    }
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

pub(super) async fn job(
    req: HttpRequest,
    job: RequestedJob,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let RequestedJob { id, record } = job;
    let owned = crate::guards::client::manages_job(&req, &record).unwrap_or(false);
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
    let from_link = !owned && crate::guards::job_access::holds_share_link(&req, &record);
    let event = match EventRecord::event_of_library(&record.params.spec.library.id) {
        Some(event) => state.platform.events().get(event).await.ok(),
        None => None,
    };
    let title = match &event {
        Some(event) => format!("Mosaic of {}", event.name),
        None => format!("Mosaic of {}", record.params.input_name),
    };
    let event_link = event.as_ref().map(|event| {
        if owned {
            (format!("/events/{}", event.id), "Back to the event")
        } else {
            (
                crate::api::event_mosaics::contribute_path(event),
                "Back to your photos",
            )
        }
    });
    let guest_view = event.is_some() && !owned;
    let mut answer = page(&JobPage {
        id,
        title,
        event_link,
        guest_view,
        download_name: crate::job_view::download_name_as(
            &record.params.input_name,
            record.params.spec.format.extension(),
        ),
        owned,
        download_size,
        state: record.state.as_str(),
        has_quality: record.quality.is_some(),
        quality: QualityFigures::of(&record),
        settings: settings_in_words(&record),
    })?;
    // Opened from a private job's share link: the page's own requests carry it as a cookie.
    if from_link && let Some(cookie) = crate::guards::job_access::share_cookie(&record) {
        answer.add_cookie(&cookie).map_err(ApiError::internal)?;
    }
    Ok(answer)
}

/// A job's quality figures on their own: the page's script shows them when they land, as
/// the page itself would.
#[derive(Template)]
#[template(path = "quality.html")]
pub(super) struct QualityCard {
    has_quality: bool,
    quality: QualityFigures,
}

/// `GET /jobs/{id}/quality`: the quality card, formatted here once for the page and its script.
pub(super) async fn quality_card(job: RequestedJob) -> ApiResult<HttpResponse> {
    page(&QualityCard {
        has_quality: job.record.quality.is_some(),
        quality: QualityFigures::of(&job.record),
    })
}
