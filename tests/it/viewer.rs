//! The job viewer's images: the streamed preview and the tile pyramid of a finished mosaic,
//! checked against the full result, and the seek index the stitcher writes beside it.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use reqwest::StatusCode;
use serde_json::Value;
use tessera_engine::{FragmentEncoder, Scanlines, SeekIndex};
use tessera_shared::jobs::JobState;
use tessera_shared::keys::BlobKey;
use tessera_shared::storage::{BlobStore, PutMode};
use tessera_web::imaging::stored_mosaic::{TILE, level_size, preview_bin, preview_size, top_level};
use uuid::Uuid;

use crate::browser::{in_chromium, mosaic_loaded, script, wait_for};
use crate::support::{TestApp, assert_refused, astronaut, error_code, sized_job_form, spawn_app};

struct Image {
    width: u32,
    height: u32,
    pixels: Vec<u8>,
}

impl Image {
    fn decode(bytes: &[u8]) -> Self {
        let image = image::load_from_memory(bytes).unwrap().to_rgb8();
        Image {
            width: image.width(),
            height: image.height(),
            pixels: image.into_raw(),
        }
    }

    fn at(&self, x: u32, y: u32) -> [u8; 3] {
        let i = (y as usize * self.width as usize + x as usize) * 3;
        [self.pixels[i], self.pixels[i + 1], self.pixels[i + 2]]
    }

    /// The mean of each block of columns and rows that `col` and `row` put together.
    fn shrink(&self, w: u32, h: u32, col: impl Fn(u32) -> u32, row: impl Fn(u32) -> u32) -> Self {
        let mut sums = vec![0u64; w as usize * h as usize * 3];
        let mut counts = vec![0u64; w as usize * h as usize];
        for y in 0..self.height {
            for x in 0..self.width {
                let o = (row(y) * w + col(x)) as usize;
                counts[o] += 1;
                for (c, v) in self.at(x, y).iter().enumerate() {
                    sums[o * 3 + c] += u64::from(*v);
                }
            }
        }
        let pixels = sums
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let n = counts[i / 3];
                ((s + n / 2) / n) as u8
            })
            .collect();
        Image {
            width: w,
            height: h,
            pixels,
        }
    }

    fn crop(&self, x0: u32, y0: u32, x1: u32, y1: u32) -> Self {
        let mut pixels = Vec::new();
        for y in y0..y1 {
            for x in x0..x1 {
                pixels.extend_from_slice(&self.at(x, y));
            }
        }
        Image {
            width: x1 - x0,
            height: y1 - y0,
            pixels,
        }
    }

    /// Level `level` of the pyramid, worked out from the full image.
    fn level(&self, level: u32) -> Self {
        let (w, h) = level_size(self.width, self.height, level);
        self.shrink(w, h, |x| x >> level, |y| y >> level)
    }

    fn mean_difference(&self, other: &Image) -> f64 {
        assert_eq!((self.width, self.height), (other.width, other.height));
        let total: u64 = self
            .pixels
            .iter()
            .zip(&other.pixels)
            .map(|(a, b)| u64::from(a.abs_diff(*b)))
            .sum();
        total as f64 / self.pixels.len() as f64
    }
}

async fn bytes_of(app: &TestApp, path: &str) -> Bytes {
    let res = app.get(path).await;
    assert_eq!(res.status(), 200, "{path}");
    res.bytes().await.unwrap()
}

/// A job of 80 cells of 16 px across the astronaut (a 1280 px mosaic) in 3 slices.
async fn finished_job(app: &TestApp) -> (String, Image) {
    let id = app.submit(sized_job_form(astronaut(), 16, 80, 3)).await;
    let early = app.get(&format!("/api/v1/jobs/{id}/tiles/0/0/0")).await;
    let done = app.wait_until_finished(&id).await;
    assert_eq!(done["state"], "done", "{done}");
    if early.status() != 200 {
        assert_refused(early, StatusCode::CONFLICT, "job_not_done").await;
    }
    let result = Image::decode(&bytes_of(app, &format!("/api/v1/jobs/{id}/result")).await);
    (id, result)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_preview_and_every_level_of_tiles_match_the_result() {
    let app = spawn_app().await;
    let (id, full) = finished_job(&app).await;
    assert!(full.width > 1024, "{} px", full.width);

    let preview = Image::decode(&bytes_of(&app, &format!("/api/v1/jobs/{id}/preview")).await);
    let (pw, ph) = preview_size(full.width, full.height);
    assert_eq!((preview.width, preview.height), (pw, ph));
    assert_eq!(pw.max(ph), 1024);
    let want = full.shrink(
        pw,
        ph,
        |x| preview_bin(x, full.width, pw),
        |y| preview_bin(y, full.height, ph),
    );
    // JPEG loses fine detail, so pixel by pixel the two agree loosely; over 8 px blocks, closely.
    let diff = preview.mean_difference(&want);
    assert!(diff < 10.0, "the preview differs by {diff} per channel");
    let blocks = |i: &Image| i.shrink(pw.div_ceil(8), ph.div_ceil(8), |x| x / 8, |y| y / 8);
    let diff = blocks(&preview).mean_difference(&blocks(&want));
    assert!(
        diff < 1.5,
        "the preview's 8 px blocks differ by {diff} per channel"
    );

    let top = top_level(full.width, full.height);
    assert!(top >= 3, "levels 0 to {top}");
    for level in 0..=top {
        let shrunk = full.level(level);
        let (tiles_x, tiles_y) = (shrunk.width.div_ceil(TILE), shrunk.height.div_ceil(TILE));
        // Corners, an edge, the middle.
        let mut picks = vec![(0, 0), (tiles_x - 1, tiles_y - 1), (tiles_x - 1, 0)];
        picks.push((tiles_x / 2, tiles_y / 2));
        for (x, y) in picks {
            let path = format!("/api/v1/jobs/{id}/tiles/{level}/{x}/{y}");
            let res = app.get(&path).await;
            assert_eq!(res.status(), 200, "{path}");
            assert_eq!(res.headers()["content-type"], "image/png");
            assert!(
                res.headers()["cache-control"]
                    .to_str()
                    .unwrap()
                    .contains("immutable")
            );
            let etag = res.headers()["etag"].to_str().unwrap().to_string();
            let tile = Image::decode(&res.bytes().await.unwrap());
            let want = shrunk.crop(
                x * TILE,
                y * TILE,
                ((x + 1) * TILE).min(shrunk.width),
                ((y + 1) * TILE).min(shrunk.height),
            );
            assert_eq!(
                (tile.width, tile.height),
                (want.width, want.height),
                "{path}"
            );
            assert!(tile.pixels == want.pixels, "{path} differs from the result");
            let again = app
                .client
                .get(app.url(&path))
                .header("If-None-Match", &etag)
                .send()
                .await
                .unwrap();
            assert_eq!(again.status(), 304, "{path}");
        }
        let (x, y) = (tiles_x, 0);
        let res = app
            .get(&format!("/api/v1/jobs/{id}/tiles/{level}/{x}/{y}"))
            .await;
        assert_refused(res, StatusCode::NOT_FOUND, "tile_out_of_range").await;
    }
    // Levels past the top, up to ones whose shrink factor overflows any integer.
    for level in [top + 1, 64, 2_147_483_648, u32::MAX] {
        let res = app
            .get(&format!("/api/v1/jobs/{id}/tiles/{level}/0/0"))
            .await;
        assert_eq!(
            error_code(res).await,
            (StatusCode::NOT_FOUND, "tile_out_of_range".into()),
            "level {level}"
        );
    }
    let res = app
        .get(&format!("/api/v1/jobs/{}/tiles/0/0/0", Uuid::new_v4()))
        .await;
    assert_eq!(res.status(), 404);

    // Without a seek index (a result from before there were any), tiles come from a decode
    // of the result from its start, the same pixels.
    let blobs = app.platform.blobs.clone();
    let job = Uuid::parse_str(&id).unwrap();
    let output = BlobKey::ImageOutput { job }.path();
    blobs
        .delete(&BlobKey::SeekIndex { output }.path())
        .await
        .unwrap();
    let (x, y) = (1, 2);
    let tile = Image::decode(&bytes_of(&app, &format!("/api/v1/jobs/{id}/tiles/0/{x}/{y}")).await);
    let want = full.crop(x * TILE, y * TILE, (x + 1) * TILE, (y + 1) * TILE);
    assert!(tile.pixels == want.pixels);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seek_index_of_a_job_starts_inflating_at_every_point() {
    let app = spawn_app().await;
    let (id, full) = finished_job(&app).await;
    let job = Uuid::parse_str(&id).unwrap();
    let blobs = app.platform.blobs.clone();
    let output = BlobKey::ImageOutput { job }.path();
    let png = blobs.get(&output).await.unwrap();
    let index = blobs
        .get(
            &BlobKey::SeekIndex {
                output: output.clone(),
            }
            .path(),
        )
        .await
        .unwrap();
    let index = SeekIndex::parse(&index).unwrap();
    assert_eq!((index.width, index.height), (full.width, full.height));
    assert_eq!(index.png_len(), png.len() as u64);
    // Three slices of more than 256 rows each: points at the slices' starts and inside them.
    assert!(index.points.len() >= 6, "{:?}", index.points);
    assert!(
        index.points.windows(2).all(|p| p[1].row - p[0].row <= 256),
        "{:?}",
        index.points
    );
    let row = full.width as usize * 3;
    let mut ends: Vec<u32> = index.points.iter().skip(1).map(|p| p.row).collect();
    ends.push(full.height);
    for (point, end) in index.points.iter().zip(ends) {
        let span = index.span(point.row..end).unwrap();
        assert_eq!(span.first_row, point.row);
        // Only the span's bytes, inflated afresh.
        let bytes = blobs.get_range(&output, span.file.clone()).await.unwrap();
        let mut lines = Scanlines::new(index.idat_data(&bytes[..], span.stream), full.width);
        for y in point.row..end {
            let y = y as usize;
            let got = lines.next_row().unwrap();
            assert!(
                got == &full.pixels[y * row..(y + 1) * row],
                "row {y} from the point at {}",
                point.row
            );
        }
    }
}

/// Stitches a `width` x `height` PNG of bands of flat colour (cheap to make) at the output key
/// of `job`, from `slices` fragments, and returns the colour of each row.
async fn big_result(
    blobs: &Arc<dyn BlobStore>,
    job: Uuid,
    width: u32,
    height: u32,
    slices: u32,
) -> impl Fn(u32, u32) -> [u8; 3] {
    let colour = |x: u32, y: u32| [(y / 97) as u8, (x / 113) as u8, ((x + y) / 301) as u8];
    let per = height.div_ceil(slices);
    let mut keys = Vec::new();
    for seq in 0..slices {
        let rows = seq * per..((seq + 1) * per).min(height);
        let mut fragment = FragmentEncoder::new(width, 1 << 20).unwrap();
        let mut band = Vec::with_capacity(width as usize * 3);
        for y in rows {
            band.clear();
            for x in 0..width {
                band.extend_from_slice(&colour(x, y));
            }
            fragment.write_rows(&band).unwrap();
        }
        let bytes = fragment.finish().unwrap();
        let key = BlobKey::SliceOutput { job, seq }.path();
        let size = bytes.len() as u64;
        blobs
            .put(&key, Bytes::from(bytes), PutMode::CreateNew)
            .await
            .unwrap();
        keys.push((key, size));
    }
    let output = BlobKey::ImageOutput { job }.path();
    tessera_workers::stitch_png(blobs.clone(), &keys, &output, (width, height), 300, 4 << 20)
        .await
        .unwrap();
    colour
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mosaic_over_eighty_megapixels_gets_a_preview_and_tiles() {
    let app = spawn_app().await;
    // A real job's record, pointed at a 9000 x 9000 result (81 MP) stitched here.
    let (small, _) = finished_job(&app).await;
    let small = app
        .platform
        .jobs()
        .get(Uuid::parse_str(&small).unwrap())
        .await
        .unwrap();
    let job = Uuid::new_v4();
    let (width, height) = (9000u32, 9000u32);
    let colour = big_result(&app.platform.blobs, job, width, height, 4).await;
    let mut record = small.clone();
    record.id = job;
    record.state = JobState::Done;
    record.result_blob = Some(BlobKey::ImageOutput { job }.path());
    let mut size = record.output.unwrap();
    (size.width, size.height) = (width, height);
    record.output = Some(size);
    app.platform.jobs().create(&record).await.unwrap();

    let preview = Image::decode(&bytes_of(&app, &format!("/api/v1/jobs/{job}/preview")).await);
    assert_eq!((preview.width, preview.height), (1024, 1024));
    // Each preview pixel is the mean of a block of about 9 x 9 pixels of slowly changing colour.
    let mut worst = 0u8;
    for (py, px) in [(0, 0), (500, 700), (1023, 1023), (300, 1000)] {
        let (x, y) = (px * width / 1024 + 4, py * height / 1024 + 4);
        let want = colour(x, y);
        let got = preview.at(px, py);
        for c in 0..3 {
            worst = worst.max(want[c].abs_diff(got[c]));
        }
    }
    assert!(worst <= 4, "the preview is off by {worst}");

    // A full-resolution tile deep inside the image, from the rows it needs.
    let (x, y) = (20, 30);
    let tile = Image::decode(&bytes_of(&app, &format!("/api/v1/jobs/{job}/tiles/0/{x}/{y}")).await);
    assert_eq!((tile.width, tile.height), (TILE, TILE));
    for ty in [0, 100, 255] {
        for tx in [0, 17, 255] {
            assert_eq!(
                tile.at(tx, ty),
                colour(x * TILE + tx, y * TILE + ty),
                "pixel {tx}, {ty}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zooming_past_the_preview_loads_full_resolution_tiles_in_chromium() {
    let app = spawn_app().await;
    let (id, full) = finished_job(&app).await;
    let work = tempfile::tempdir().unwrap();
    let base = app.address.clone();
    // Deep Zoom's full-resolution level.
    let deepest = 32 - (full.width.max(full.height) - 1).leading_zeros();
    in_chromium(work.path(), |browser| {
        async move {
            browser.goto(&format!("{base}/jobs/{id}")).await.unwrap();
            let width = mosaic_loaded(&browser, Duration::from_secs(30)).await;
            assert_eq!(width, 1024);
            let tiles = "[...document.querySelectorAll('#viewer img:not(#mosaic)')]";
            let none = script(&browser, &format!("return {tiles}.length")).await;
            assert_eq!(none, 0, "no tiles while the preview is enough");
            // Zoom in with the keyboard, as a user would, well past the preview's pixels.
            script(
                &browser,
                "const v = document.getElementById('viewer'); v.focus(); \
                 for (let i = 0; i < 14; i++) \
                   v.dispatchEvent(new KeyboardEvent('keydown', {key: '+', bubbles: true})); \
                 return true",
            )
            .await;
            // Sharp: every tile of the level the view wants is shown, and no other.
            let loaded = wait_for(
                &browser,
                &format!(
                    "const t = {tiles}; \
                     return document.getElementById('viewer').dataset.sharp === 'true' \
                       && t.length > 0 && t.every(i => i.complete && i.naturalWidth > 0) \
                       ? t.map(i => i.dataset.tile) : null"
                ),
                Duration::from_secs(30),
                "full-resolution tiles loading",
            )
            .await;
            let keys: Vec<String> = serde_json::from_value(loaded).unwrap();
            assert!(
                keys.iter().all(|k| k.starts_with("0/")),
                "zoomed in 12x, the viewer shows level 0: {keys:?}"
            );
            // The viewer knows the pyramid from its Deep Zoom descriptor alone, and fetches its
            // tiles where the descriptor says they are.
            let fetched = script(
                &browser,
                "return performance.getEntriesByType('resource').map(e => new URL(e.name).pathname)",
            )
            .await;
            let fetched: Vec<String> = serde_json::from_value(fetched).unwrap();
            assert!(fetched.contains(&format!("/api/v1/jobs/{id}/dzi")), "{fetched:?}");
            let tiles_of = format!("/api/v1/jobs/{id}/dzi_files/{deepest}/");
            assert!(fetched.iter().any(|p| p.starts_with(&tiles_of)), "{fetched:?}");
            assert!(!fetched.iter().any(|p| p.contains("/tiles/")), "{fetched:?}");
            // The tiles cover the viewer's middle, where the zoom centred.
            let covered = script(
                &browser,
                &format!(
                    "const v = document.getElementById('viewer').getBoundingClientRect(); \
                     const cx = v.left + v.width / 2, cy = v.top + v.height / 2; \
                     return {tiles}.some(i => {{ const r = i.getBoundingClientRect(); \
                       return r.left <= cx && cx <= r.right && r.top <= cy && cy <= r.bottom; }})"
                ),
            )
            .await;
            assert_eq!(covered, true);
        }
    })
    .await;
    assert!(full.width > 1024);
}

/// A phone, by touch: no page is wider than the screen; on the job page the viewer's buttons
/// zoom and fit, two fingers pinch to zoom, one finger pans the zoomed mosaic and, at the fitted
/// size, scrolls the page instead of moving the mosaic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_phone_pages_fit_and_the_viewer_pinches_pans_and_scrolls_by_touch() {
    use fantoccini::actions::{InputSource, PointerAction, TouchActions};

    let app = spawn_app().await;
    let (id, _) = finished_job(&app).await;
    let work = tempfile::tempdir().unwrap();
    let base = app.address.clone();
    let not_an_image = work.path().join("notes.png");
    std::fs::write(&not_an_image, b"plain text, not a picture").unwrap();
    let profile = work.path().join("profile");
    crate::browser::in_chromium_phone(&profile, |browser| async move {
        for path in [
            "/".to_string(),
            format!("/jobs/{id}"),
            "/jobs".to_string(),
            "/libraries".to_string(),
            "/system".to_string(),
            "/api".to_string(),
            "/nonexistent".to_string(),
        ] {
            browser.goto(&format!("{base}{path}")).await.unwrap();
            let widths = script(
                &browser,
                "return [document.documentElement.scrollWidth, window.innerWidth]",
            )
            .await;
            assert_eq!(
                widths[0], widths[1],
                "{path}: the page is wider than the phone's {} px",
                crate::browser::PHONE.0
            );
            let broken = script(&browser, crate::browser::BROKEN_SHORT_WORDS).await;
            assert_eq!(broken, serde_json::json!([]), "{path}: short words broken in tables");
        }

        // A refused upload: the message is in view, right after the photo's field, which has
        // the focus.
        browser.goto(&format!("{base}/")).await.unwrap();
        browser
            .find(fantoccini::Locator::Id("image"))
            .await
            .unwrap()
            .send_keys(&not_an_image.display().to_string())
            .await
            .unwrap();
        // The preview's refusal comes first and moves the button down: the tap waits for it,
        // as a person's would, so that it lands on the button.
        wait_for(
            &browser,
            "const s = document.getElementById('sketch'); \
             return !s.hidden && s.textContent.includes('No preview') || null",
            Duration::from_secs(20),
            "the preview refused",
        )
        .await;
        crate::browser::click(&browser, "#go").await;
        let placed = wait_for(
            &browser,
            "const e = document.getElementById('error'); if (e.hidden) return null; \
             const r = e.getBoundingClientRect(); \
             return [r.top >= 0 && r.bottom <= innerHeight, \
                     e.previousElementSibling && e.previousElementSibling.id, \
                     document.activeElement.id]",
            Duration::from_secs(20),
            "the refusal shown",
        )
        .await;
        assert_eq!(placed, serde_json::json!([true, "drop", "image"]));

        // The form's three decisions fit: with a photo chosen, "Make the mosaic" lies within
        // the first two screens.
        browser.goto(&format!("{base}/")).await.unwrap();
        let photo = crate::support::fixture("engine/astronaut-48.png")
            .canonicalize()
            .unwrap();
        browser
            .find(fantoccini::Locator::Id("image"))
            .await
            .unwrap()
            .send_keys(&photo.display().to_string())
            .await
            .unwrap();
        let go = wait_for(
            &browser,
            "if (!document.getElementById('natural').textContent.includes(' px')) return null; \
             window.scrollTo(0, 0); \
             return document.getElementById('go').getBoundingClientRect().bottom / innerHeight",
            Duration::from_secs(10),
            "the photo chosen",
        )
        .await;
        let screens = go.as_f64().unwrap();
        assert!(screens <= 2.0, "Make the mosaic is {screens:.2} screens down");
        // The preview of the mosaic comes after the photo is chosen, and it too leaves the
        // button within two screens.
        let shown = wait_for(
            &browser,
            "const s = document.getElementById('sketch'); const i = document.getElementById('sketch-img'); \
             if (s.hidden || !i.complete || i.naturalWidth === 0) return null; window.scrollTo(0, 0); \
             return [i.naturalWidth, document.getElementById('go').getBoundingClientRect().bottom / innerHeight]",
            Duration::from_secs(20),
            "the preview of the mosaic",
        )
        .await;
        assert!(shown[0].as_u64().unwrap() >= 256, "{shown}");
        let screens = shown[1].as_f64().unwrap();
        assert!(screens <= 2.0, "with the preview, Make the mosaic is {screens:.2} screens down");
        crate::browser::screenshot(&browser, "phone-home.png").await;

        browser.goto(&format!("{base}/jobs/{id}")).await.unwrap();
        wait_for(
            &browser,
            "const i = document.getElementById('mosaic'); \
             return i.complete && i.naturalWidth > 0 && document.getElementById('viewer').dataset.zoom",
            Duration::from_secs(30),
            "the preview in the viewer",
        )
        .await;
        // The mosaic first: the viewer lies within the first screen.
        let viewer = script(
            &browser,
            "window.scrollTo(0, 0); const r = document.getElementById('viewer').getBoundingClientRect(); \
             return [r.top >= 0, r.bottom <= innerHeight, r.height]",
        )
        .await;
        assert_eq!(viewer[0], true, "{viewer}");
        assert_eq!(viewer[1], true, "the viewer runs past the first screen: {viewer}");
        let zoom = |b: fantoccini::Client| async move {
            let z = script(&b, "return Number(document.getElementById('viewer').dataset.zoom)").await;
            z.as_f64().unwrap()
        };
        let left = |b: fantoccini::Client| async move {
            let l = script(&b, "return document.getElementById('mosaic').getBoundingClientRect().left").await;
            l.as_f64().unwrap()
        };
        // Where the mosaic lies within the viewer, down.
        let top_in_viewer = |b: fantoccini::Client| async move {
            let t = script(&b, "return document.getElementById('mosaic').getBoundingClientRect().top \
                - document.getElementById('viewer').getBoundingClientRect().top").await;
            t.as_f64().unwrap()
        };
        assert_eq!(zoom(browser.clone()).await, 1.0, "fitted at first");

        // The buttons, by tapping them.
        browser
            .find(fantoccini::Locator::Id("zoom-in"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        assert!((zoom(browser.clone()).await - 1.5).abs() < 0.01);
        browser
            .find(fantoccini::Locator::Id("zoom-fit"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        assert_eq!(zoom(browser.clone()).await, 1.0);

        // The viewer's centre, in the viewport, scrolled into view.
        let centre = script(
            &browser,
            "const v = document.getElementById('viewer'); v.scrollIntoView({block: 'center'}); \
             const r = v.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]",
        )
        .await;
        let (cx, cy) = (centre[0].as_f64().unwrap(), centre[1].as_f64().unwrap());

        // Two fingers, 60 px apart, spread to 180 px apart: three times the zoom.
        let finger = |name: &str, from: f64, to: f64| {
            TouchActions::new(name.into())
                .then(PointerAction::MoveTo { duration: None, x: cx + from, y: cy })
                .then(PointerAction::Down { button: 0 })
                .then(PointerAction::MoveTo {
                    duration: Some(Duration::from_millis(300)),
                    x: cx + to,
                    y: cy,
                })
                .then(PointerAction::Up { button: 0 })
        };
        browser
            .perform_actions(fantoccini::actions::Actions::from(finger("left", -30.0, -90.0))
                .and(finger("right", 30.0, 90.0)))
            .await
            .unwrap();
        let pinched = zoom(browser.clone()).await;
        assert!((2.5..3.5).contains(&pinched), "a pinch to three times zoomed {pinched}x");

        // One finger, zoomed in: the mosaic moves with it, the page stays.
        let (before, scrolled) = (left(browser.clone()).await, script(&browser, "return window.scrollY").await);
        let drag = TouchActions::new("one".into())
            .then(PointerAction::MoveTo { duration: None, x: cx, y: cy })
            .then(PointerAction::Down { button: 0 })
            .then(PointerAction::MoveTo { duration: Some(Duration::from_millis(300)), x: cx + 80.0, y: cy })
            .then(PointerAction::Up { button: 0 });
        browser.perform_actions(drag).await.unwrap();
        let moved = left(browser.clone()).await - before;
        assert!((70.0..90.0).contains(&moved), "the mosaic followed the finger by {moved} px");
        assert_eq!(script(&browser, "return window.scrollY").await, scrolled);

        // Fitted again, a swipe up scrolls the page on (to what follows the viewer) and leaves
        // the mosaic where it is.
        browser
            .find(fantoccini::Locator::Id("zoom-fit"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let centre = script(
            &browser,
            "const v = document.getElementById('viewer'); window.scrollTo(0, 0); \
             const r = v.getBoundingClientRect(); \
             return [r.left + r.width / 2, r.top + r.height / 2, window.scrollY]",
        )
        .await;
        let (cx, cy, scroll_before) = (
            centre[0].as_f64().unwrap(),
            centre[1].as_f64().unwrap(),
            centre[2].as_f64().unwrap(),
        );
        let before = left(browser.clone()).await;
        let down_before = top_in_viewer(browser.clone()).await;
        let swipe = TouchActions::new("swipe".into())
            .then(PointerAction::MoveTo {
                duration: None,
                x: cx,
                y: cy + 100.0,
            })
            .then(PointerAction::Down { button: 0 })
            .then(PointerAction::MoveTo {
                duration: Some(Duration::from_millis(300)),
                x: cx,
                y: cy - 100.0,
            })
            .then(PointerAction::Up { button: 0 });
        browser.perform_actions(swipe).await.unwrap();
        let scrolled = format!("return window.scrollY > {scroll_before} + 50 ? window.scrollY : null");
        wait_for(&browser, &scrolled, Duration::from_secs(5), "the page scrolled by the swipe").await;
        assert_eq!(zoom(browser.clone()).await, 1.0);
        let shifted = (left(browser.clone()).await - before).abs();
        assert!(shifted < 1.0, "the mosaic moved {shifted} px within the viewer");
        let sank = (top_in_viewer(browser.clone()).await - down_before).abs();
        assert!(sank < 1.0, "the mosaic moved {sank} px down within the viewer");

        // A tap names the tile: its name and picture show inside the screen.
        let centre = script(
            &browser,
            "window.scrollTo(0, 0); const r = document.getElementById('viewer').getBoundingClientRect(); \
             return [r.left + r.width / 2, r.top + r.height / 2]",
        )
        .await;
        let (cx, cy) = (centre[0].as_f64().unwrap(), centre[1].as_f64().unwrap());
        let tap = TouchActions::new("tap".into())
            .then(PointerAction::MoveTo { duration: None, x: cx, y: cy })
            .then(PointerAction::Down { button: 0 })
            .then(PointerAction::Pause { duration: Duration::from_millis(80) })
            .then(PointerAction::Up { button: 0 });
        browser.perform_actions(tap).await.unwrap();
        let named = wait_for(
            &browser,
            "const i = document.getElementById('cell-info'); const t = document.getElementById('cell-thumb'); \
             if (i.hidden || !t.complete || !t.naturalWidth) return null; \
             const r = i.getBoundingClientRect(); \
             return [document.getElementById('cell-caption').textContent, r.top >= 0 && r.bottom <= innerHeight]",
            Duration::from_secs(20),
            "the tapped tile named",
        )
        .await;
        assert!(!named[0].as_str().unwrap().is_empty(), "{named}");
        assert_eq!(named[1], true, "the tapped tile's name shows inside the screen: {named}");
        crate::browser::screenshot(&browser, "phone-job.png").await;
    })
    .await;
}

/// The attribute `name` of the first element that has it, in a Deep Zoom descriptor.
fn xml_attribute(xml: &str, name: &str) -> String {
    let at = xml
        .find(&format!(" {name}=\""))
        .unwrap_or_else(|| panic!("{name} in {xml}"));
    let rest = &xml[at + name.len() + 3..];
    rest[..rest.find('"').unwrap()].to_string()
}

/// Where OpenSeadragon's DziTileSource looks for the tiles of a descriptor at `url`: the last
/// path segment loses its extension and gains `_files/`.
fn osd_tiles_url(url: &str) -> String {
    let (dir, file) = url.rsplit_once('/').unwrap();
    let stem = file.split_once('.').map_or(file, |(stem, _)| stem);
    format!("{dir}/{stem}_files/")
}

/// A Deep Zoom viewer reads the descriptor, then asks for `LEVEL/X_Y.png` beside it: every tile
/// it may ask for is there, is the block mean of the result, and addresses past the pyramid are
/// refused in words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deep_zoom_viewer_finds_the_descriptor_and_its_tiles() {
    let app = spawn_app().await;
    let (id, result) = finished_job(&app).await;
    let url = format!("/api/v1/jobs/{id}/dzi");
    let res = app.get(&url).await;
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "application/xml");
    assert_eq!(res.headers()["access-control-allow-origin"], "*");
    let xml = res.text().await.unwrap();
    assert!(
        xml.contains("http://schemas.microsoft.com/deepzoom/2008"),
        "{xml}"
    );
    assert_eq!(xml_attribute(&xml, "Format"), "png");
    assert_eq!(xml_attribute(&xml, "Overlap"), "0");
    let tile_size: u32 = xml_attribute(&xml, "TileSize").parse().unwrap();
    let width: u32 = xml_attribute(&xml, "Width").parse().unwrap();
    let height: u32 = xml_attribute(&xml, "Height").parse().unwrap();
    assert_eq!((width, height), (result.width, result.height));
    // As OpenSeadragon counts: the full resolution is level ceil(log2(max side)).
    let max_level = f64::from(width.max(height)).log2().ceil() as u32;
    let tiles = osd_tiles_url(&url);
    assert_eq!(tiles, format!("/api/v1/jobs/{id}/dzi_files/"));
    for level in [max_level, max_level - 1, max_level - 4, 1, 0] {
        let scale = 0.5f64.powi((max_level - level) as i32);
        let (lw, lh) = (
            (f64::from(width) * scale).ceil() as u32,
            (f64::from(height) * scale).ceil() as u32,
        );
        let whole = result.level(max_level - level);
        assert_eq!((whole.width, whole.height), (lw, lh), "level {level}");
        let (cols, rows) = (lw.div_ceil(tile_size), lh.div_ceil(tile_size));
        for (x, y) in [(0, 0), (cols - 1, rows - 1), (cols / 2, 0)] {
            let png = bytes_of(&app, &format!("{tiles}{level}/{x}_{y}.png")).await;
            let tile = Image::decode(&png);
            let want = whole.crop(
                x * tile_size,
                y * tile_size,
                ((x + 1) * tile_size).min(lw),
                ((y + 1) * tile_size).min(lh),
            );
            assert_eq!((tile.width, tile.height), (want.width, want.height));
            assert!(
                tile.pixels == want.pixels,
                "level {level} tile {x}_{y} differs"
            );
        }
    }
    let past = app.get(&format!("{tiles}{}/0_0.png", max_level + 1)).await;
    assert_refused(past, StatusCode::NOT_FOUND, "tile_out_of_range").await;
    let beside = app.get(&format!("{tiles}{max_level}/9_0.png")).await;
    assert_eq!(beside.status(), StatusCode::NOT_FOUND);
    let misnamed = app.get(&format!("{tiles}{max_level}/0-0.jpg")).await;
    assert_refused(misnamed, StatusCode::BAD_REQUEST, "bad_tile_name").await;
}

/// `tessera render --dzi` writes the same pyramid to disk: the descriptor and every tile of
/// every level, each the block mean of the image it writes beside it.
#[test]
fn render_writes_a_deep_zoom_folder_beside_the_image() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("astronaut.png");
    std::fs::write(&target, astronaut()).unwrap();
    let out = dir.path().join("mosaic.png");
    let site = dir.path().join("site");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
        .arg("render")
        .arg(&target)
        .arg("-l")
        .arg(crate::support::fixture("engine/tiles"))
        .args(["--cells", "37", "--tile-size", "12", "--quiet", "-o"])
        .arg(&out)
        .arg("--dzi")
        .arg(&site)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let result = Image::decode(&std::fs::read(&out).unwrap());
    let xml = std::fs::read_to_string(site.join("mosaic.dzi")).unwrap();
    assert_eq!(xml_attribute(&xml, "Width"), result.width.to_string());
    assert_eq!(xml_attribute(&xml, "Height"), result.height.to_string());
    let max_level = f64::from(result.width.max(result.height)).log2().ceil() as u32;
    let mut files = 0;
    for level in 0..=max_level {
        let whole = result.level(max_level - level);
        for entry in std::fs::read_dir(site.join(format!("mosaic_files/{level}"))).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_string();
            let (x, y) = name.strip_suffix(".png").unwrap().split_once('_').unwrap();
            let (x, y): (u32, u32) = (x.parse().unwrap(), y.parse().unwrap());
            let tile = Image::decode(&std::fs::read(&path).unwrap());
            let want = whole.crop(
                x * TILE,
                y * TILE,
                ((x + 1) * TILE).min(whole.width),
                ((y + 1) * TILE).min(whole.height),
            );
            assert!(tile.pixels == want.pixels, "{level}/{name} differs");
            files += 1;
        }
        let expected = whole.width.div_ceil(TILE) * whole.height.div_ceil(TILE);
        assert_eq!(
            std::fs::read_dir(site.join(format!("mosaic_files/{level}")))
                .unwrap()
                .count() as u32,
            expected,
            "level {level}"
        );
    }
    assert!(files > max_level as usize + 3, "{files} tiles");
}

/// Every cell of a finished mosaic names the tile the engine's own plan put there (same target,
/// library and options), with its caption; its thumbnail is the cell cut from the result; cells
/// past the grid and jobs not done are refused in words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_cell_names_the_photo_the_plan_put_there() {
    use tessera_engine::{Grid, ImportOptions, Library, Plan, PlanOptions, decode_target};

    let app = spawn_app().await;
    let form = sized_job_form(astronaut(), 8, 24, 2)
        .text("repeat_radius", "1")
        .text("blend", "0");
    let id = app.submit(form).await;
    let done = app.wait_until_finished(&id).await;
    assert_eq!(done["state"], "done", "{done}");
    let (cols, rows) = (
        done["output"]["cols"].as_u64().unwrap() as u32,
        done["output"]["rows"].as_u64().unwrap() as u32,
    );
    let (library, _) = Library::import(
        &crate::support::fixture("engine/tiles"),
        &ImportOptions::default(),
    )
    .unwrap();
    let target = decode_target(&astronaut(), library.background()).unwrap();
    // The job's default: the emoji over the background chosen to suit the photo.
    let background = tessera_engine::TileBackground::Auto.resolve(&target, &library);
    let library = tessera_engine::lay_over(&library, background);
    let options = PlanOptions {
        tile_size: tessera_engine::TileSize::square(8),
        grid: Grid::Cells(24),
        repeat_radius: 1,
        ..PlanOptions::default()
    };
    let plan = Plan::make(&target, &library, &options).unwrap();
    assert_eq!((plan.cols(), plan.total_rows()), (cols, rows));
    let result = Image::decode(&bytes_of(&app, &format!("/api/v1/jobs/{id}/result")).await);
    for row in 0..rows {
        for col in 0..cols {
            let res = app
                .get(&format!("/api/v1/jobs/{id}/cells/{row}/{col}"))
                .await;
            assert_eq!(res.status(), 200);
            let cell: Value = res.json().await.unwrap();
            let tile = plan.tiles()[(row * cols + col) as usize];
            assert_eq!(cell["name"], library.name(tile), "cell {row}, {col}");
            assert_eq!(cell["caption"], library.caption(tile));
            assert_eq!(cell["tile"], tile);
            assert_eq!(
                (cell["x"].as_u64(), cell["y"].as_u64()),
                (Some(u64::from(col * 8)), Some(u64::from(row * 8)))
            );
            if (row + col) % 7 == 0 {
                let thumb = cell["thumbnail"].as_str().unwrap();
                let png = Image::decode(&bytes_of(&app, thumb).await);
                let want = result.crop(col * 8, row * 8, col * 8 + 8, row * 8 + 8);
                assert!(png.pixels == want.pixels, "thumbnail of {row}, {col}");
            }
        }
    }
    for path in [format!("cells/{rows}/0"), format!("cells/0/{cols}")] {
        let res = app.get(&format!("/api/v1/jobs/{id}/{path}")).await;
        assert_refused(res, StatusCode::NOT_FOUND, "cell_out_of_range").await;
    }
    let held = app.queued_job(Uuid::new_v4()).await;
    let res = app.get(&format!("/api/v1/jobs/{held}/cells/0/0")).await;
    assert_refused(res, StatusCode::CONFLICT, "job_not_done").await;
}

/// A mosaic of adaptive tile sizes, submitted through the API as `adaptive=4..16`: the job shows
/// its sizes, its cells are those of the smallest square, and every cell names the square that
/// covers it (its place and size, the photo in it) as the engine's own adaptive plan has it, so
/// pointing anywhere in a large square names its photo; a thumbnail is the whole square.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_cell_of_an_adaptive_mosaic_names_the_square_over_it() {
    use tessera_engine::{AdaptivePlan, Grid, ImportOptions, Library, PlanOptions, decode_target};

    let app = spawn_app().await;
    let form = sized_job_form(astronaut(), 8, 24, 3)
        .text("repeat_radius", "1")
        .text("adaptive", "4..16");
    let res = app.post_job(form).await;
    assert_eq!(res.status(), StatusCode::ACCEPTED);
    let queued: Value = res.json().await.unwrap();
    assert_eq!(queued["params"]["adaptive"], "4..16");
    // 24 cells of 8 px: 192 px, already whole blocks of 16 px; cells of 4 px.
    assert_eq!(
        (&queued["output"]["width"], &queued["output"]["cols"]),
        (&192.into(), &48.into())
    );
    let id = queued["id"].as_str().unwrap().to_string();
    let done = app.wait_until_finished(&id).await;
    assert_eq!(done["state"], "done", "{done}");
    assert_eq!(done["params"]["adaptive"], "4..16");
    assert_eq!(done["output"], queued["output"]);
    assert_eq!(done["quality"], Value::Null);
    let (library, _) = Library::import(
        &crate::support::fixture("engine/tiles"),
        &ImportOptions::default(),
    )
    .unwrap();
    let target = decode_target(&astronaut(), library.background()).unwrap();
    let options = PlanOptions {
        tile_size: tessera_engine::TileSize::square(8),
        grid: Grid::Cells(24),
        repeat_radius: 1,
        ..PlanOptions::default()
    };
    let plan = AdaptivePlan::make(&target, &library, &options, "4..16".parse().unwrap()).unwrap();
    let result = Image::decode(&bytes_of(&app, &format!("/api/v1/jobs/{id}/result")).await);
    assert_eq!((result.width, result.height), (plan.width(), plan.height()));
    assert!(
        plan.leaves().iter().any(|l| l.size == 16) && plan.leaves().iter().any(|l| l.size == 4)
    );
    for (i, leaf) in plan.leaves().iter().enumerate() {
        // The square's first cell and its last.
        let (first, last) = (
            (leaf.y / 4, leaf.x / 4),
            ((leaf.y + leaf.size) / 4 - 1, (leaf.x + leaf.size) / 4 - 1),
        );
        for (row, col) in [first, last] {
            let cell: Value = app
                .get(&format!("/api/v1/jobs/{id}/cells/{row}/{col}"))
                .await
                .json()
                .await
                .unwrap();
            assert_eq!((&cell["row"], &cell["col"]), (&row.into(), &col.into()));
            assert_eq!(cell["tile"], leaf.tile, "cell {row}, {col}: {cell}");
            assert_eq!(cell["name"], library.name(leaf.tile));
            assert_eq!(cell["transform"], "none");
            let square = [&cell["x"], &cell["y"], &cell["size"], &cell["height"]]
                .map(|v| v.as_u64().map(|v| v as u32));
            let want = [leaf.x, leaf.y, leaf.size, leaf.size].map(Some);
            assert_eq!(square, want, "cell {row}, {col}");
            if i % 9 == 0 && (row, col) == last {
                let thumb = cell["thumbnail"].as_str().unwrap();
                let png = Image::decode(&bytes_of(&app, thumb).await);
                let want = result.crop(leaf.x, leaf.y, leaf.x + leaf.size, leaf.y + leaf.size);
                assert_eq!((png.width, png.height), (leaf.size, leaf.size));
                assert!(png.pixels == want.pixels, "thumbnail of {row}, {col}");
            }
        }
    }
    let res = app.get(&format!("/api/v1/jobs/{id}/cells/48/0")).await;
    assert_refused(res, StatusCode::NOT_FOUND, "cell_out_of_range").await;
}

/// In Chromium, resting the mouse on a tile, or focusing the viewer and pressing Enter, names
/// the photo in that cell below the viewer, with its thumbnail, as the cell lookup says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pointing_at_a_tile_names_its_photo_in_chromium() {
    use fantoccini::actions::{InputSource, MouseActions, PointerAction};

    let app = spawn_app().await;
    let (id, _) = finished_job(&app).await;
    let work = tempfile::tempdir().unwrap();
    let base = app.address.clone();
    in_chromium(work.path(), |browser| {
        async move {
            // A laptop's screen.
            browser.set_window_size(1366, 768).await.unwrap();
            browser.goto(&format!("{base}/jobs/{id}")).await.unwrap();
            mosaic_loaded(&browser, Duration::from_secs(30)).await;
            let hidden = script(
                &browser,
                "return document.getElementById('cell-info').hidden",
            )
            .await;
            assert_eq!(hidden, true, "nothing named before pointing");
            // On the desktop too, the viewer lies within the first screen.
            let fits = script(
                &browser,
                "window.scrollTo(0, 0); const r = document.getElementById('viewer').getBoundingClientRect(); \
                 return r.top >= 0 && r.bottom <= innerHeight",
            )
            .await;
            assert_eq!(fits, true, "the viewer runs past the first screen");
            for path in [format!("/jobs/{id}"), "/jobs".into(), "/libraries".into(), "/system".into()] {
                browser.goto(&format!("{base}{path}")).await.unwrap();
                let broken = script(&browser, crate::browser::BROKEN_SHORT_WORDS).await;
                assert_eq!(broken, serde_json::json!([]), "{path}: short words broken in tables");
            }
            browser.goto(&format!("{base}/jobs/{id}")).await.unwrap();
            mosaic_loaded(&browser, Duration::from_secs(30)).await;
            crate::browser::screenshot(&browser, "desktop-job.png").await;
            // The mouse rests a third of the way into the viewer.
            let viewer = browser
                .find(fantoccini::Locator::Id("viewer"))
                .await
                .unwrap();
            let mouse = MouseActions::new("mouse".into())
                .then(PointerAction::MoveToElement {
                    element: viewer.clone(),
                    duration: Some(Duration::from_millis(50)),
                    x: -60.0,
                    y: -40.0,
                })
                .then(PointerAction::Pause {
                    duration: Duration::from_millis(400),
                });
            browser.perform_actions(mouse).await.unwrap();
            let shown = wait_for(
                &browser,
                "const t = document.getElementById('cell-thumb'); \
                 return !document.getElementById('cell-info').hidden && t.complete \
                   && t.naturalWidth > 0 ? [document.getElementById('viewer').dataset.cell, \
                   document.getElementById('cell-caption').textContent, \
                   document.getElementById('cell-name').textContent, t.naturalWidth] : null",
                Duration::from_secs(20),
                "the pointed tile named",
            )
            .await;
            let (key, caption, name, thumb): (String, String, String, u32) =
                serde_json::from_value(shown).unwrap();
            // Named beside the viewer, inside the screen.
            let beside = script(
                &browser,
                "const i = document.getElementById('cell-info').getBoundingClientRect(); \
                 const v = document.getElementById('viewer').getBoundingClientRect(); \
                 return [i.left >= v.right, i.top >= 0 && i.bottom <= innerHeight]",
            )
            .await;
            assert_eq!(beside, serde_json::json!([true, true]), "the panel beside the viewer");
            let cell: Value = reqwest::get(format!("{base}/api/v1/jobs/{id}/cells/{key}"))
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            assert_eq!(
                (caption.as_str(), name.as_str()),
                (
                    cell["caption"].as_str().unwrap(),
                    cell["name"].as_str().unwrap()
                )
            );
            // The tile's own picture from its library (a 64 px rendition), not the 16 px cell.
            assert_eq!(thumb, 64, "the panel shows the tile's own picture");
            // The cell is outlined where it lies in the viewer.
            let outline = script(
                &browser,
                "const o = document.getElementById('cell-outline'); \
                 const r = o.getBoundingClientRect(); \
                 return o.hidden ? null : [r.width, r.height]",
            )
            .await;
            let side = outline[0].as_f64().expect("the tapped cell is outlined");
            assert!((4.0..64.0).contains(&side), "outline {outline}");
            // Left of the centre by 60 px of a fitted 1280 px mosaic: not the middle column.
            let (row, col): (u32, u32) = {
                let (r, c) = key.split_once('/').unwrap();
                (r.parse().unwrap(), c.parse().unwrap())
            };
            assert!(col < 40 && row < 40, "{key}");
            // From the keyboard: Enter names the tile at the view's centre.
            script(
                &browser,
                "const v = document.getElementById('viewer'); v.focus(); \
                 v.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true})); \
                 return true",
            )
            .await;
            let centre = wait_for(
                &browser,
                &format!(
                    "const k = document.getElementById('viewer').dataset.cell; \
                     return k !== '{key}' ? k : null"
                ),
                Duration::from_secs(20),
                "the centre tile named",
            )
            .await;
            let centre: String = serde_json::from_value(centre).unwrap();
            let (r, c) = centre.split_once('/').unwrap();
            let (r, c): (u32, u32) = (r.parse().unwrap(), c.parse().unwrap());
            assert!((39..=40).contains(&r) && (39..=40).contains(&c), "{centre}");

            // Share: zoomed in and moved, the link opens another page at the same view.
            for _ in 0..2 {
                crate::browser::click(&browser, "#zoom-in").await;
            }
            script(
                &browser,
                "const v = document.getElementById('viewer'); v.focus(); \
                 for (const key of ['ArrowRight', 'ArrowRight', 'ArrowDown']) \
                   v.dispatchEvent(new KeyboardEvent('keydown', {key: key, bubbles: true})); \
                 return true",
            )
            .await;
            crate::browser::click(&browser, "#share").await;
            let shared = script(
                &browser,
                "return [document.getElementById('share-link').value, \
                         document.getElementById('viewer').dataset.zoom, \
                         document.getElementById('share-embed').value]",
            )
            .await;
            let link = shared[0].as_str().unwrap().to_string();
            assert!(link.contains(&format!("/jobs/{id}#view=")), "{link}");
            assert!(
                shared[2].as_str().unwrap().contains(&format!("/api/v1/jobs/{id}/dzi")),
                "{shared}"
            );
            let view_of = |link: &str| -> Vec<f64> {
                let view = link.split("#view=").nth(1).unwrap();
                view.split(',').map(|v| v.parse().unwrap()).collect()
            };
            let before = view_of(&link);
            assert!((before[2] - 2.25).abs() < 0.01, "{link}");
            // A fresh page from the link.
            browser.goto("about:blank").await.unwrap();
            browser.goto(&link).await.unwrap();
            mosaic_loaded(&browser, Duration::from_secs(30)).await;
            let opened = wait_for(
                &browser,
                "const z = Number(document.getElementById('viewer').dataset.zoom); \
                 return z > 1.5 ? z : null",
                Duration::from_secs(10),
                "the shared zoom",
            )
            .await;
            assert!((opened.as_f64().unwrap() - 2.25).abs() < 0.01, "{opened}");
            crate::browser::click(&browser, "#share").await;
            let again = script(&browser, "return document.getElementById('share-link').value").await;
            let after = view_of(again.as_str().unwrap());
            for (a, b) in before.iter().zip(&after) {
                assert!((a - b).abs() < 0.002, "{link} opened as {again}");
            }
        }
    })
    .await;
}
