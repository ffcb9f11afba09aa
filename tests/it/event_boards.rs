//! Boards (sticker walls): a 20 x 15 board (10 x 6 on Azurite, whose one thread serves every
//! test at once), a photo a cell from guests of ten photos each, approved in bursts at once: each gets a cell of its own at once and keeps it; the stickers as placed are near a
//! mosaic's assignment made at the end; the sticker sheets and the board read back as PDFs
//! (their sizes, rows and columns, the colour shift within its cap), each sticker printed once
//! across two printer stations.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use tessera_engine::color::{ciede2000, srgb_to_lab};
use tessera_shared::events::board::capped_shift;
use uuid::Uuid;

use crate::support::*;

/// A board's size, in cells.
#[derive(Clone, Copy)]
struct Size {
    cols: u32,
    rows: u32,
}

impl Size {
    fn cells(self) -> usize {
        (self.cols * self.rows) as usize
    }
}

/// Photos each guest sends.
const EACH: usize = 10;
/// Each placed photo's colour and its cell's, by row and column.
type PhotoAt = HashMap<(u64, u64), ([u8; 3], [u8; 3])>;
/// The colour shift's cap the board is made with (CIEDE2000).
const CAP: f32 = 10.0;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_photos_take_three_hundred_cells_for_good_on_the_embedded_store() {
    let size = Size { cols: 20, rows: 15 };
    photos_take_cells_for_good(&spawn_app().await, size).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_hundred_photos_take_three_hundred_cells_for_good_on_azurite() {
    let size = Size { cols: 20, rows: 15 };
    photos_take_cells_for_good(&spawn_app_on_azurite().await, size).await;
}

/// A photo of about colour `c`: a soft gradient around it, as a phone's photo of one thing.
fn photo_of(c: [u8; 3]) -> Vec<u8> {
    let img = image::RgbImage::from_fn(200, 150, |x, y| {
        let d = ((x as i32 - 100) / 10 + (y as i32 - 75) / 10) as i16;
        image::Rgb(c.map(|v| (v as i16 + d).clamp(0, 255) as u8))
    });
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 90)
        .encode_image(&img)
        .unwrap();
    out
}

/// `n` colours spread over the gamut, the same on every run.
fn colours(n: usize) -> Vec<[u8; 3]> {
    let mut x: u32 = 0x9e37_79b9;
    (0..n)
        .map(|_| {
            let mut next = || {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x % 256) as u8
            };
            [next(), next(), next()]
        })
        .collect()
}

fn lab(c: [u8; 3]) -> [f64; 3] {
    srgb_to_lab([c[0] as f64, c[1] as f64, c[2] as f64])
}

/// The colour error of `photo` in a cell of colour `cell`, its colour moved toward the cell's by
/// `cap` at most (0: not moved).
fn error(photo: [u8; 3], cell: [u8; 3], cap: f32) -> f64 {
    let (p, s) = (lab(photo), capped_shift(photo, cell, cap));
    ciede2000([p[0] + s[0], p[1] + s[1], p[2] + s[2]], lab(cell))
}

async fn photos_take_cells_for_good(app: &TestApp, size: Size) {
    let guests = size.cells() / EACH;
    let owner = Uuid::new_v4();
    let (cols, rows) = (size.cols.to_string(), size.rows.to_string());
    let fields = [
        ("board_cols", cols.as_str()),
        ("board_rows", rows.as_str()),
        ("sticker_mm", "25"),
        ("shift_cap", "10"),
        ("per_guest", "0"),
    ];
    let event = make_event(app, owner, astronaut(), &fields).await;
    let id = event["id"].as_str().unwrap().to_string();
    // Refused: a board without its rows, and one too large.
    for (bad, field) in [
        (vec![("board_cols", "20")], "board_rows"),
        (
            vec![("board_cols", "400"), ("board_rows", "400")],
            "board_cols",
        ),
    ] {
        let mut form = reqwest::multipart::Form::new().text("name", "x").part(
            "image",
            reqwest::multipart::Part::bytes(astronaut()).file_name("a.png"),
        );
        for (k, v) in bad {
            form = form.text(k, v);
        }
        let res = app
            .client
            .post(app.url("/api/v1/events"))
            .header("X-Client-Id", owner.to_string())
            .multipart(form)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::BAD_REQUEST);
        let body: Value = res.json().await.unwrap();
        assert_eq!(body["error"]["field"], field, "{body}");
    }

    // 30 guests send 10 photos each, ten guests at once; the photos wait for the owner.
    let palette = colours(guests * EACH);
    let mut sent: Vec<(Uuid, Vec<String>)> = Vec::new();
    for wave in (0..guests).collect::<Vec<_>>().chunks(10) {
        let came = futures_util::future::join_all(wave.iter().map(|&g| {
            let (event, palette) = (&event, &palette);
            async move {
                let guest = Uuid::new_v4();
                let files: Vec<(String, Vec<u8>)> = (0..EACH)
                    .map(|i| (format!("g{g}-{i}.jpg"), photo_of(palette[g * EACH + i])))
                    .collect();
                let files = files.iter().map(|(n, b)| (n.as_str(), b.clone())).collect();
                let (status, body) = send_photos_received(app, event, guest, files, &[]).await;
                assert_eq!(status, StatusCode::CREATED, "{body}");
                let ids = body["photos"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|p| p["id"].as_str().unwrap().to_string())
                    .collect();
                (guest, ids)
            }
        }))
        .await;
        sent.extend(came);
    }
    let colour_of: HashMap<String, [u8; 3]> = sent
        .iter()
        .enumerate()
        .flat_map(|(g, (_, ids))| {
            ids.iter()
                .enumerate()
                .map(move |(i, id)| (id.clone(), (g, i)))
        })
        .map(|(id, (g, i))| (id, palette[g * EACH + i]))
        .collect();

    // Every photo prepared (many at once take a while on Azurite, on two cores).
    wait_for(Duration::from_secs(300), async || {
        let view = owner_view(app, owner, &id).await;
        match view["counts"]["received"].as_u64() {
            Some(0) => Ok(()),
            other => Err(format!("photos still received: {other:?}")),
        }
    })
    .await;
    // The owner approves them in bursts: ten requests at once, then a bulk decision of the rest.
    let ids: Vec<String> = sent.iter().flat_map(|(_, ids)| ids.clone()).collect();
    let mut cells: HashMap<String, (u64, u64)> = HashMap::new();
    let mut answers = Vec::new();
    let id = id.as_str();
    for burst in ids[..ids.len() * 2 / 3].chunks(10) {
        let answered = futures_util::future::join_all(burst.iter().map(|photo| async move {
            let started = Instant::now();
            let res = app
                .client
                .patch(app.url(&format!("/api/v1/events/{id}/photos/{photo}")))
                .header("X-Client-Id", owner.to_string())
                .json(&json!({"state": "approved"}))
                .send()
                .await
                .unwrap();
            let status = res.status();
            let body: Value = res.json().await.unwrap();
            assert_eq!(status, StatusCode::OK, "{body}");
            (photo.clone(), body, started.elapsed())
        }))
        .await;
        for (photo, body, took) in answered {
            let cell = &body["cell"];
            let at = (cell["row"].as_u64().unwrap(), cell["col"].as_u64().unwrap());
            assert!(
                (1..=size.rows as u64).contains(&at.0) && (1..=size.cols as u64).contains(&at.1),
                "{body}"
            );
            cells.insert(photo, at);
            answers.push(took);
        }
    }
    let res = app
        .client
        .post(app.url(&format!("/api/v1/events/{id}/decisions")))
        .header("X-Client-Id", owner.to_string())
        .json(&json!({"state": "approved", "every": "waiting"}))
        .send()
        .await
        .unwrap();
    let status = res.status();
    assert_eq!(status, StatusCode::OK, "{}", res.text().await.unwrap());
    answers.sort();
    let p95 = answers[answers.len() * 95 / 100];
    eprintln!(
        "board placement answered: p50 {:?}, p95 {p95:?}",
        answers[answers.len() / 2]
    );
    // On the embedded store; Azurite, one thread for every request of the test's processes,
    // is measured, not held to it.
    if !app.on_azurite() {
        assert!(p95 < Duration::from_secs(5), "p95 {p95:?}");
    }

    // Every photo has a cell, none shared, and the ones placed first kept theirs.
    let view = owner_view(app, owner, id).await;
    assert_eq!(
        view["board"]["placed"],
        size.cells() as u64,
        "{}",
        view["board"]
    );
    let list: Value = app
        .get_with(
            &format!("/api/v1/events/{id}/photos?state=approved&limit=500"),
            &[("X-Client-Id", &owner.to_string())],
        )
        .await
        .json()
        .await
        .unwrap();
    let photos = list["photos"].as_array().unwrap();
    assert_eq!(photos.len(), guests * EACH);
    let mut taken = HashSet::new();
    let mut placed: Vec<([u8; 3], [u8; 3])> = Vec::new();
    let mut photo_at: PhotoAt = HashMap::new();
    let board_colours = board_colours(&view);
    for p in photos {
        let cell = (
            p["cell"]["row"].as_u64().unwrap(),
            p["cell"]["col"].as_u64().unwrap(),
        );
        assert!(taken.insert(cell), "cell {cell:?} given twice");
        let photo = p["id"].as_str().unwrap();
        if let Some(first) = cells.get(photo) {
            assert_eq!(*first, cell, "photo {photo} moved");
        }
        let at = ((cell.0 - 1) * size.cols as u64 + cell.1 - 1) as usize;
        placed.push((colour_of[photo], board_colours[at]));
        photo_at.insert(cell, (colour_of[photo], board_colours[at]));
    }
    assert_eq!(taken.len(), size.cells());

    // Against the assignment made at the end of the same photos to the same cells.
    let photo_colours: Vec<[u8; 3]> = placed.iter().map(|p| p.0).collect();
    for cap in [CAP, 0.0] {
        let online: f64 =
            placed.iter().map(|&(p, c)| error(p, c, cap)).sum::<f64>() / placed.len() as f64;
        let best = optimal_mean(&photo_colours, &board_colours, cap);
        eprintln!(
            "board colour error, shift cap {cap}: placed as they came {online:.2}, assigned at the end {best:.2} ({:+.1} %)",
            (online / best - 1.0) * 100.0
        );
        if cap > 0.0 {
            assert!(online <= best * 1.10, "{online} against {best}");
        }
    }

    sheets_print_each_sticker_once(app, owner, id, &photo_at, size).await;
}

/// The owner's view of event `id`.
async fn owner_view(app: &TestApp, owner: Uuid, id: &str) -> Value {
    app.get_with(
        &format!("/api/v1/events/{id}"),
        &[("X-Client-Id", &owner.to_string())],
    )
    .await
    .json()
    .await
    .unwrap()
}

/// The board's cells' colours, row by row, from the owner's view.
fn board_colours(view: &Value) -> Vec<[u8; 3]> {
    view["board"]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let hex = c.as_str().unwrap();
            let b = |i: usize| u8::from_str_radix(&hex[1 + i * 2..3 + i * 2], 16).unwrap();
            [b(0), b(1), b(2)]
        })
        .collect()
}

/// The least mean colour error of any assignment of `photos` to `cells` (as many): the
/// Hungarian method the board's placement uses.
fn optimal_mean(photos: &[[u8; 3]], cells: &[[u8; 3]], cap: f32) -> f64 {
    let cost: Vec<Vec<f64>> = photos
        .iter()
        .map(|&p| cells.iter().map(|&c| error(p, c, cap)).collect())
        .collect();
    let assigned = tessera_shared::events::board::assignment(&cost);
    assigned
        .iter()
        .enumerate()
        .map(|(i, &j)| cost[i][j])
        .sum::<f64>()
        / photos.len() as f64
}

/// Two printer stations take sheets until none waits: every sticker printed once; a sheet
/// reads back with each sticker's row and column and its size at 300 dpi; the board's panels
/// name every cell.
async fn sheets_print_each_sticker_once(
    app: &TestApp,
    owner: Uuid,
    id: &str,
    photo_at: &PhotoAt,
    size: Size,
) {
    let work = tempfile::tempdir().unwrap();
    // One station is the owner's; the other holds the printer link the owner made.
    let link: Value = app
        .client
        .post(app.url(&format!("/api/v1/events/{id}/printer")))
        .header("X-Client-Id", owner.to_string())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = link["url"]
        .as_str()
        .and_then(|u| u.split_once("token="))
        .map(|(_, t)| t.to_string())
        .unwrap_or_else(|| panic!("{link}"));
    let stranger = app
        .client
        .post(app.url(&format!("/api/v1/events/{id}/sheets?token=wrong")))
        .header("X-Client-Id", Uuid::new_v4().to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(stranger.status(), StatusCode::FORBIDDEN);
    let take = |station: usize| {
        let path = work.path().to_path_buf();
        let (who, query) = match station {
            0 => (owner, String::new()),
            _ => (Uuid::new_v4(), format!("?token={token}")),
        };
        async move {
            let mut sheets = Vec::new();
            loop {
                let res = app
                    .client
                    .post(app.url(&format!("/api/v1/events/{id}/sheets{query}")))
                    .header("X-Client-Id", who.to_string())
                    .send()
                    .await
                    .unwrap();
                if res.status() == StatusCode::NO_CONTENT {
                    return sheets;
                }
                assert_eq!(res.status(), StatusCode::OK);
                assert_eq!(res.headers()["content-type"], "application/pdf");
                let number: u32 = res.headers()["tessera-sheet"]
                    .to_str()
                    .unwrap()
                    .parse()
                    .unwrap();
                let file = path.join(format!("sheet-{station}-{}.pdf", sheets.len()));
                std::fs::write(&file, res.bytes().await.unwrap()).unwrap();
                sheets.push((number, file));
            }
        }
    };
    let (a, b) = tokio::join!(take(0), take(1));
    let mut printed = Vec::new();
    for (_, sheet) in a.iter().chain(&b) {
        printed.extend(cells_named(&pdftotext(sheet)));
    }
    // Each sheet has a number of its own, and any sheet prints again as it was.
    let mut numbers: Vec<u32> = a.iter().chain(&b).map(|(n, _)| *n).collect();
    numbers.sort_unstable();
    assert_eq!(numbers, (1..=numbers.len() as u32).collect::<Vec<_>>());
    let listed: Value = app
        .client
        .get(app.url(&format!("/api/v1/events/{id}/sheets?token={token}")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(listed["waiting"], 0, "{listed}");
    assert_eq!(listed["printed"], size.cells(), "{listed}");
    assert_eq!(listed["sheets"].as_array().unwrap().len(), numbers.len());
    let (number, original) = b.first().or(a.first()).unwrap();
    let again = app
        .client
        .get(app.url(&format!(
            "/api/v1/events/{id}/sheets/{number}?token={token}"
        )))
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::OK);
    let file = work.path().join("again.pdf");
    std::fs::write(&file, again.bytes().await.unwrap()).unwrap();
    assert_eq!(
        cells_named(&pdftotext(&file)),
        cells_named(&pdftotext(original))
    );
    keepsakes_of_the_sheet(app, id, *number, &token, original, work.path()).await;
    let (a, b): (Vec<_>, Vec<_>) = (
        a.into_iter().map(|(_, f)| f).collect(),
        b.into_iter().map(|(_, f)| f).collect(),
    );
    let unique: HashSet<_> = printed.iter().copied().collect();
    assert_eq!(
        printed.len(),
        size.cells(),
        "{} stickers printed",
        printed.len()
    );
    assert_eq!(unique.len(), printed.len(), "a sticker printed twice");
    let first = a.first().or(b.first()).unwrap();

    // The first sticker of a sheet, rendered at 300 dpi, is 25 mm: 295 px within one.
    let png = pdftoppm(first, 300);
    let side = first_sticker_side(&png);
    assert!(
        (294..=296).contains(&side),
        "the sticker is {side} px across"
    );

    // The first sheet's stickers: each one's colour moved toward its cell's, no further than
    // the cap (and the JPEGs' own error).
    let out = std::process::Command::new("pdfimages")
        .args(["-j", first.to_str().unwrap()])
        .arg(work.path().join("im"))
        .status()
        .expect("pdfimages (poppler-utils) runs");
    assert!(out.success());
    let labels = cells_named(&pdftotext(first));
    for (i, cell) in labels.iter().enumerate() {
        let jpeg = work.path().join(format!("im-{i:03}.jpg"));
        let sticker = image::open(&jpeg).unwrap().to_rgb8();
        let mean = tessera_shared::events::board_pdf::mean_of(&sticker);
        let (photo, target) = photo_at[cell];
        let moved = ciede2000(lab(mean), lab(photo));
        assert!(
            moved <= f64::from(CAP) + 3.0,
            "sticker {cell:?} moved {moved:.1}"
        );
        let (before, after) = (
            ciede2000(lab(photo), lab(target)),
            ciede2000(lab(mean), lab(target)),
        );
        assert!(
            after <= before + 1.5,
            "sticker {cell:?}: {before:.1} from its cell, now {after:.1}"
        );
    }
    let board = app
        .client
        .get(app.url(&format!("/api/v1/events/{id}/board.pdf?paper=A3")))
        .header("X-Client-Id", owner.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(board.status(), StatusCode::OK);
    let file = work.path().join("board.pdf");
    std::fs::write(&file, board.bytes().await.unwrap()).unwrap();
    let text = pdftotext(&file);
    let (rows, cols) = (size.rows, size.cols);
    for (r, c) in [(1, 1), (rows, cols), (rows / 2 + 1, cols / 2 + 1)] {
        assert!(
            text.contains(&format!("R{r} C{c}")),
            "cell {r}, {c} not on the board"
        );
    }
    assert!(text.contains("panel A1"), "{text}");
}

/// Every `R{row} C{col}` in `text`.
fn cells_named(text: &str) -> Vec<(u64, u64)> {
    let words: Vec<&str> = text.split_whitespace().collect();
    words
        .windows(2)
        .filter_map(|w| {
            let row = w[0].strip_prefix('R')?.parse().ok()?;
            let col = w[1].strip_prefix('C')?.parse().ok()?;
            Some((row, col))
        })
        .collect()
}

/// Sheet `number`'s keepsakes: a page of 4 x 6 inches for each of its stickers (the test's
/// photos are wide: the page is too), the photo whole, the event's name and the sticker's row
/// and column; for the printer link only.
async fn keepsakes_of_the_sheet(
    app: &TestApp,
    id: &str,
    number: u32,
    token: &str,
    sheet: &std::path::Path,
    work: &std::path::Path,
) {
    let url = |token: &str| {
        app.url(&format!(
            "/api/v1/events/{id}/sheets/{number}/keepsakes?token={token}"
        ))
    };
    let stranger = app.client.get(url("wrong")).send().await.unwrap();
    assert_eq!(stranger.status(), StatusCode::FORBIDDEN);
    let res = app.client.get(url(token)).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["content-type"], "application/pdf");
    let file = work.join("keepsakes.pdf");
    std::fs::write(&file, res.bytes().await.unwrap()).unwrap();
    let text = pdftotext(&file);
    let mut stickers = cells_named(&pdftotext(sheet));
    stickers.sort_unstable();
    let mut kept: Vec<(u64, u64)> = text
        .split("Your sticker: row ")
        .skip(1)
        .filter_map(|rest| {
            let (row, rest) = rest.split_once(", column ")?;
            let col: String = rest.chars().take_while(char::is_ascii_digit).collect();
            Some((row.trim().parse().ok()?, col.parse().ok()?))
        })
        .collect();
    kept.sort_unstable();
    assert_eq!(kept, stickers, "{text}");
    assert_eq!(text.matches("Anna and Tom").count(), stickers.len());
    let info = std::process::Command::new("pdfinfo")
        .args(["-f", "1", "-l", "1000"])
        .arg(&file)
        .output()
        .expect("pdfinfo (poppler-utils) runs");
    let info = String::from_utf8_lossy(&info.stdout);
    let sizes: Vec<&str> = info
        .lines()
        .filter(|l| l.starts_with("Page") && l.contains("size:"))
        .collect();
    assert_eq!(sizes.len(), stickers.len(), "{info}");
    assert!(sizes.iter().all(|l| l.contains("432 x 288 pts")), "{info}");
}

fn pdftotext(pdf: &std::path::Path) -> String {
    let out = std::process::Command::new("pdftotext")
        .args(["-layout", pdf.to_str().unwrap(), "-"])
        .output()
        .expect("pdftotext (poppler-utils) runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The first page of `pdf` rendered at `dpi`, as an image.
fn pdftoppm(pdf: &std::path::Path, dpi: u32) -> image::RgbImage {
    let prefix = pdf.with_extension("");
    let status = std::process::Command::new("pdftoppm")
        .args([
            "-r",
            &dpi.to_string(),
            "-png",
            "-f",
            "1",
            "-l",
            "1",
            "-singlefile",
        ])
        .arg(pdf)
        .arg(&prefix)
        .status()
        .expect("pdftoppm (poppler-utils) runs");
    assert!(status.success());
    image::open(prefix.with_extension("png")).unwrap().to_rgb8()
}

/// The width of the first sticker on a rendered sheet: the run of non-white pixels along the
/// row through its middle, from the page's left margin.
fn first_sticker_side(page: &image::RgbImage) -> u32 {
    // The first sticker starts 10 mm from the top and left; its middle row is 12.5 mm lower.
    let mm = |v: f64| (v / 25.4 * 300.0).round() as u32;
    let y = mm(10.0 + 12.5);
    let paper = |x: u32| page.get_pixel(x, y).0.iter().all(|&v| v > 250);
    let start = (0..page.width()).find(|&x| !paper(x)).unwrap();
    let end = (start..page.width()).find(|&x| paper(x)).unwrap();
    end - start
}

/// A board's end game: no sheet while too few stickers wait to fill one, unless asked for now;
/// the free cells filled with second prints of the photos in, or with the target's colour,
/// and printed as the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_cells_are_filled_by_the_owner_and_printed() {
    let app = spawn_app().await;
    let owner = Uuid::new_v4();
    let fields = [
        ("board_cols", "4"),
        ("board_rows", "3"),
        ("approval", "false"),
    ];
    let event = make_event(&app, owner, astronaut(), &fields).await;
    let id = event["id"].as_str().unwrap().to_string();
    let files = vec![
        ("a.jpg", photo_of([200, 40, 40])),
        ("b.jpg", photo_of([40, 40, 200])),
    ];
    let (status, body) = send_photos_received(&app, &event, Uuid::new_v4(), files, &[]).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    wait_for(Duration::from_secs(60), async || {
        let view = owner_view(&app, owner, &id).await;
        match view["board"]["placed"].as_u64() {
            Some(2) => Ok(()),
            other => Err(format!("{other:?} placed: {view}")),
        }
    })
    .await;
    let post = |path: String, body: Option<Value>| {
        let mut req = app
            .client
            .post(app.url(&path))
            .header("X-Client-Id", owner.to_string());
        if let Some(body) = body {
            req = req.json(&body);
        }
        req.send()
    };
    // Two stickers fill no sheet: none is taken until the owner asks for one now.
    let sheets = format!("/api/v1/events/{id}/sheets");
    let res = post(format!("{sheets}?full=true"), None).await.unwrap();
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let fill = format!("/api/v1/events/{id}/board/fill");
    let res = post(fill.clone(), Some(json!({"with": "paint"})))
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let res = app
        .client
        .post(app.url(&fill))
        .header("X-Client-Id", Uuid::new_v4().to_string())
        .json(&json!({"with": "colour"}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let res = post(fill.clone(), Some(json!({"with": "photos"})))
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let filled: Value = res.json().await.unwrap();
    assert_eq!(filled["filled"].as_array().unwrap().len(), 10, "{filled}");
    let again: Value = post(fill, Some(json!({"with": "colour"})))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(again["filled"], json!([]), "a full board takes no more");
    let view = owner_view(&app, owner, &id).await;
    assert_eq!(view["board"]["placed"], 12, "{view}");
    assert_eq!(
        view["wishlist"],
        json!([]),
        "a full board wishes for nothing"
    );
    // The wall draws every cell filled, each a second print of the red or the blue photo.
    let wall: Value = app
        .client
        .get(app.url(&format!("/api/v1/events/{id}/wall")))
        .header("X-Client-Id", owner.to_string())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(wall["board"]["filled"].as_array().unwrap().len(), 12);
    let res = post(sheets.clone(), None).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("sheet.pdf");
    std::fs::write(&file, res.bytes().await.unwrap()).unwrap();
    let mut printed = cells_named(&pdftotext(&file));
    printed.sort_unstable();
    let every: Vec<(u64, u64)> = (1..=3).flat_map(|r| (1..=4).map(move |c| (r, c))).collect();
    assert_eq!(printed, every);

    // A board no photo came to: only the target's colour can fill it.
    let empty = make_event(&app, owner, astronaut(), &fields).await;
    let fill = format!(
        "/api/v1/events/{}/board/fill",
        empty["id"].as_str().unwrap()
    );
    let res = post(fill.clone(), Some(json!({"with": "photos"})))
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let filled: Value = post(fill, Some(json!({"with": "colour"})))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(filled["filled"].as_array().unwrap().len(), 12, "{filled}");

    // A board of more cells than an event's usual cap takes a photo a cell, unless its owner
    // chose a cap.
    let large = make_event(
        &app,
        owner,
        astronaut(),
        &[("board_cols", "80"), ("board_rows", "70")],
    )
    .await;
    assert_eq!(large["settings"]["max_photos"], 5600, "{large}");
    let capped = [
        ("board_cols", "80"),
        ("board_rows", "70"),
        ("max_photos", "100"),
    ];
    let capped = make_event(&app, owner, astronaut(), &capped).await;
    assert_eq!(capped["settings"]["max_photos"], 100, "{capped}");
}

/// The couple's own path on a board: a guest on a phone sends a photo and reads its row and
/// column; the printer station's page, opened by its link, takes the sheet with that sticker;
/// the wall shows the cell filled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_reads_their_cell_the_station_prints_it_and_the_wall_fills_in_chromium() {
    use crate::browser::{click, in_chromium_phone_of, screenshot, script, wait_for};

    let app = spawn_app().await;
    let owner = Uuid::new_v4();
    let fields = [
        ("board_cols", "8"),
        ("board_rows", "6"),
        ("approval", "false"),
    ];
    let event = make_event(&app, owner, astronaut(), &fields).await;
    let id = event["id"].as_str().unwrap().to_string();
    let link = app.url(event["contribute_url"].as_str().unwrap());
    let printer: Value = app
        .client
        .post(app.url(&format!("/api/v1/events/{id}/printer")))
        .header("X-Client-Id", owner.to_string())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let printer = printer["url"].as_str().unwrap().to_string();
    let wall: Value = app
        .client
        .post(app.url(&format!("/api/v1/events/{id}/wall")))
        .header("X-Client-Id", owner.to_string())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let wall = wall["url"].as_str().unwrap().to_string();
    let work = tempfile::tempdir().unwrap();
    let photo = work.path().join("IMG_0001.jpg");
    std::fs::write(&photo, crate::photos::camera_jpeg(2400, 1800, 30)).unwrap();
    let profile = work.path().join("profile");
    std::fs::create_dir(&profile).unwrap();
    in_chromium_phone_of((390, 844), &profile, move |browser| async move {
        let browser = &browser;
        browser.goto(&link).await.unwrap();
        let input = browser
            .find(fantoccini::Locator::Id("files"))
            .await
            .unwrap();
        input.send_keys(&photo.display().to_string()).await.unwrap();
        click(browser, "#send").await;
        let cell = wait_for(
            browser,
            "const c = document.querySelector('#mine li .cell-of'); \
             const f = document.getElementById('board-figure'); \
             return c && !f.hidden ? [c.textContent, document.getElementById('board-caption').textContent] : null",
            Duration::from_secs(60),
            "the photo's row and column",
        )
        .await;
        let said = cell[0].as_str().unwrap().to_string();
        let (row, col) = said
            .strip_prefix("row ")
            .and_then(|s| s.split_once(", column "))
            .map(|(r, c)| (r.parse::<u32>().unwrap(), c.parse::<u32>().unwrap()))
            .unwrap_or_else(|| panic!("{said}"));
        assert!((1..=6).contains(&row) && (1..=8).contains(&col), "{said}");
        assert!(cell[1].as_str().unwrap().contains(&said), "{cell}");
        let fits = script(
            browser,
            "return document.documentElement.scrollWidth <= innerWidth",
        )
        .await;
        assert_eq!(fits, true, "the page is wider than the phone");
        screenshot(browser, "board-guest.png").await;

        // The printer station, opened by its link: it takes the sheet now and names the cell.
        browser.delete_cookie("tessera_client").await.unwrap();
        browser.goto(&printer).await.unwrap();
        wait_for(
            browser,
            "return document.getElementById('printer').dataset.waiting === '1' || null",
            Duration::from_secs(30),
            "one sticker waiting",
        )
        .await;
        click(browser, "#take").await;
        let sheet = wait_for(
            browser,
            "const r = document.querySelector('#sheets tbody tr'); \
             return document.getElementById('printer').dataset.sheet && r ? r.innerText : null",
            Duration::from_secs(30),
            "the sheet taken",
        )
        .await;
        assert!(sheet.as_str().unwrap().contains(&said), "{sheet}");
        let waiting = script(
            browser,
            "return document.getElementById('printer').dataset.waiting",
        )
        .await;
        assert_eq!(waiting, "0");
        screenshot(browser, "board-printer.png").await;

        // The wall: the cell filled, the newest photo marked in it, the share filled.
        browser.goto(&wall).await.unwrap();
        let shown = wait_for(
            browser,
            "const w = document.getElementById('wall'); \
             return w.dataset.filled === '1' && w.dataset.cell \
               ? [w.dataset.cell, document.getElementById('wall-filled').textContent] : null",
            Duration::from_secs(30),
            "the wall's board",
        )
        .await;
        assert_eq!(shown[0], format!("{row},{col}"), "{shown}");
        assert!(
            shown[1].as_str().unwrap().starts_with("1 of 48 cells filled"),
            "{shown}"
        );
        // The cell shows the sticker's colour, not the faint target's.
        let painted = script(
            browser,
            &format!(
                "const c = document.getElementById('wall-board'); const g = c.getContext('2d'); \
                 const s = c.width / 8; \
                 const p = g.getImageData(Math.floor(({col} - 0.5) * s), Math.floor(({row} - 0.5) * s), 1, 1).data; \
                 return [p[0], p[1], p[2]]"
            ),
        )
        .await;
        let wall_view: Value = reqwest::get(format!(
            "{}&_=1",
            wall.replace("/events/", "/api/v1/events/")
        ))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
        let colour = wall_view["board"]["filled"][0]["colour"]
            .as_str()
            .unwrap()
            .to_string();
        let want: Vec<i64> = (0..3)
            .map(|k| i64::from_str_radix(&colour[1 + 2 * k..3 + 2 * k], 16).unwrap())
            .collect();
        let got: Vec<i64> = painted
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect();
        assert!(
            want.iter().zip(&got).all(|(w, g)| (w - g).abs() <= 2),
            "the cell is {got:?}, its sticker {colour}"
        );
        screenshot(browser, "board-wall.png").await;
    })
    .await;
}
