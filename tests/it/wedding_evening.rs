//! The wedding's evening as the couple, their guests and the venue's screen live it: the wall
//! opened on a screen from its own link, centred and filling the screen at any size beside the
//! newest photo; the couple's page following photos and mosaics without a reload; a guest who
//! gives their name once, sends a batch with a PDF and more than the cap, and takes a photo
//! back from the page; and the event's default mosaic of forty photos, large and without
//! repeats near each other.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;
use uuid::Uuid;

use crate::browser::{
    click, in_chromium, in_chromium_phone_of, screenshot, script, set_viewport, wait_for,
};
use crate::support::*;

/// A guest's photo: a piece of a real photograph (the coffee fixture), in its own place, size
/// and light, so that forty of them are forty different photos.
fn guest_photo(i: u32) -> Vec<u8> {
    let real = image::open(fixture("photos/coffee-240x160.png"))
        .unwrap()
        .to_rgb8();
    let side = 48 + (i * 7) % 64;
    let x = (i * 37) % (240 - side);
    let y = (i * 23) % (160 - side);
    let mut piece = image::imageops::crop_imm(&real, x, y, side, side).to_image();
    let (gain, shift) = (0.5 + f64::from(i % 9) * 0.15, (i % 5) as usize);
    for p in piece.pixels_mut() {
        let rgb = p.0;
        for c in 0..3 {
            let v = f64::from(rgb[(c + shift) % 3]) * gain;
            p.0[c] = v.min(255.0) as u8;
        }
    }
    let piece = image::imageops::resize(&piece, 400, 400, image::imageops::FilterType::Triangle);
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 85)
        .encode(piece.as_raw(), 400, 400, image::ExtendedColorType::Rgb8)
        .unwrap();
    out
}

/// The couple's photo: the real photograph at four times its size.
fn couple_photo() -> Vec<u8> {
    let real = image::open(fixture("photos/coffee-240x160.png")).unwrap();
    let big = real.resize(960, 640, image::imageops::FilterType::Lanczos3);
    let mut out = std::io::Cursor::new(Vec::new());
    big.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

/// An event of the couple's photo at its defaults, with forty guests' photos in, and its
/// mosaic made: the event and the finished job.
async fn evening_with_forty_photos(app: &TestApp, owner: Uuid) -> (Value, Value) {
    let fields = [("approval", "false")];
    let event = make_event(app, owner, couple_photo(), &fields).await;
    for guest in 0..8u32 {
        let files: Vec<(String, Vec<u8>)> = (0..5)
            .map(|k| {
                (
                    format!("IMG_{:04}.JPG", 1000 + k),
                    guest_photo(guest * 5 + k),
                )
            })
            .collect();
        let files = files.iter().map(|(n, b)| (n.as_str(), b.clone())).collect();
        let name = if guest == 7 { "Aunt May" } else { "" };
        let (status, body) =
            send_photos(app, &event, Uuid::new_v4(), files, &[("guest_name", name)]).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let job = finished_event_mosaic(app, owner, event["id"].as_str().unwrap()).await;
    assert_eq!(job["state"], "done", "{job}");
    (event, job)
}

/// The default event mosaic of forty photos: at least 2,000 px on its long side, no photo twice
/// within 2 cells, no diagonal runs of one photo, and like the couple's photo from afar.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forty_photos_make_a_large_mosaic_without_repeats_near_each_other() {
    let app = spawn_app().await;
    let owner = Uuid::new_v4();
    let (_, job) = evening_with_forty_photos(&app, owner).await;
    let (w, h) = (
        job["output"]["width"].as_u64().unwrap(),
        job["output"]["height"].as_u64().unwrap(),
    );
    assert!(w.max(h) >= 2000, "{w} x {h}");
    let ssim = job["quality"]["ssim_view"].as_f64().unwrap();
    eprintln!(
        "forty photos: {w} x {h}, ssim_view {ssim:.3}, quality {}",
        job["quality"]
    );
    assert!(ssim >= 0.75, "ssim_view {ssim}");

    let owner = owner.to_string();
    let placements = app
        .get_placements_with(job["id"].as_str().unwrap(), &[("X-Client-Id", &owner)])
        .await;
    let (cols, rows) = (
        job["resolved"]["cols"].as_u64().unwrap() as usize,
        job["resolved"]["rows"].as_u64().unwrap() as usize,
    );
    let mut grid = vec![usize::MAX; cols * rows];
    let tiles = placements["tiles"].as_array().unwrap();
    assert_eq!(tiles.len(), 40, "every photo in");
    for (t, tile) in tiles.iter().enumerate() {
        for cell in tile["cells"].as_array().unwrap() {
            let (r, c) = (
                cell[0].as_u64().unwrap() as usize,
                cell[1].as_u64().unwrap() as usize,
            );
            grid[r * cols + c] = t;
        }
    }
    assert!(grid.iter().all(|&t| t != usize::MAX), "every cell placed");
    let at = |r: usize, c: usize| grid[r * cols + c];
    // No photo twice within 2 cells of itself.
    for r in 0..rows {
        for c in 0..cols {
            for dr in 0..=2usize {
                for dc in -2i64..=2 {
                    let (r2, c2) = (r + dr, c as i64 + dc);
                    if (dr == 0 && dc <= 0) || r2 >= rows || c2 < 0 || c2 as usize >= cols {
                        continue;
                    }
                    assert_ne!(
                        at(r, c),
                        at(r2, c2 as usize),
                        "cells ({r}, {c}) and ({r2}, {c2})"
                    );
                }
            }
        }
    }
    // No stripes: at no step just past the radius does a photo come again in more than a
    // few cells (a stripe puts it there in nearly every cell).
    let mut worst = (0.0f64, (0, 0));
    for (dr, dc) in (0..=3i64).flat_map(|dr| (-3..=3i64).map(move |dc| (dr, dc))) {
        if dr.abs().max(dc.abs()) != 3 || (dr == 0 && dc < 0) {
            continue;
        }
        let (mut same, mut pairs) = (0usize, 0usize);
        for r in 0..rows as i64 - dr {
            for c in 0.max(-dc)..(cols as i64).min(cols as i64 - dc) {
                pairs += 1;
                same += usize::from(
                    at(r as usize, c as usize) == at((r + dr) as usize, (c + dc) as usize),
                );
            }
        }
        let share = same as f64 / pairs as f64;
        if share > worst.0 {
            worst = (share, (dr, dc));
        }
    }
    eprintln!(
        "the most repeats at one step: {:.1} % at {:?}",
        worst.0 * 100.0,
        worst.1
    );
    assert!(
        worst.0 < 0.25,
        "repeats in {:.1} % of cells at step {:?}",
        worst.0 * 100.0,
        worst.1
    );
}

/// The elements that reach past the screen's right edge, outside any scrolling box.
const WIDER_THAN_SCREEN: &str = "const out = []; for (const e of document.querySelectorAll('body *')) { \
    let p = e.parentElement, scrolled = false; \
    while (p) { const o = getComputedStyle(p).overflowX; if (o === 'auto' || o === 'scroll' || o === 'hidden') { scrolled = true; break; } p = p.parentElement; } \
    if (!scrolled && e.getBoundingClientRect().right > innerWidth + 0.5) out.push(e.tagName + '#' + e.id + '.' + e.className); } \
    return out.slice(0, 8)";

/// Makes the browser client `client` (the cookie the service would have set), on the page
/// it shows.
async fn as_client(browser: &fantoccini::Client, client: Uuid) {
    let set = format!("document.cookie = 'tessera_client={client}; path=/'");
    script(browser, &set).await;
}

/// The boxes of the wall's parts, in CSS pixels: `[left, top, width, height]` of the stage,
/// the mosaic, the newest photo and the guests' code.
const WALL_BOXES: &str = "const box = id => { const r = document.getElementById(id).getBoundingClientRect(); \
    return [r.left, r.top, r.width, r.height]; }; \
    const m = document.getElementById('wall-mosaic'); const p = document.getElementById('wall-photo'); \
    if (!m.complete || !m.naturalWidth || !m.style.width || !p.complete || !p.naturalWidth) return null; \
    return [box('wall-stage'), box('wall-mosaic'), box('wall-newest'), box('wall-qr'), [innerWidth, innerHeight], p.naturalWidth, box('wall-side')]";

/// The wall at one screen size: the mosaic the largest that fits in what the side panel
/// leaves of the screen (within 2 %), centred in it, the newest photo and the code beside
/// it, nothing over it.
async fn wall_fills(browser: &fantoccini::Client, screen: (u32, u32), aspect: f64, shot: &str) {
    set_viewport(browser, screen).await;
    let settled = "const a = document.getElementById('wall-mosaic').style.width; \
        return new Promise(done => setTimeout(() => done(a), 300));";
    script(browser, settled).await;
    let boxes = wait_for(browser, WALL_BOXES, Duration::from_secs(30), "the wall").await;
    let f = |v: &Value, i: usize| v[i].as_f64().unwrap();
    let (stage, mosaic, newest, qr) = (&boxes[0], &boxes[1], &boxes[2], &boxes[3]);
    // What the side panel leaves of the screen: beside it on a landscape screen, above it on
    // a portrait one.
    let (sw, sh) = (f(&boxes[4], 0), f(&boxes[4], 1));
    let side = &boxes[6];
    let (room_w, room_h) = if sw > sh {
        (sw - f(side, 2), sh)
    } else {
        (sw, sh - f(side, 3))
    };
    let scale = (room_w / aspect).min(room_h);
    let (fit_w, fit_h) = (scale * aspect, scale);
    let what = format!("{screen:?}: {boxes}");
    eprintln!("the wall at {what}");
    assert!(
        (f(mosaic, 2) - fit_w).abs() <= 0.02 * fit_w,
        "width, {what}"
    );
    assert!(
        (f(mosaic, 3) - fit_h).abs() <= 0.02 * fit_h,
        "height, {what}"
    );
    let centre = |b: &Value, i: usize| f(b, i) + f(b, i + 2) / 2.0;
    assert!(
        (centre(mosaic, 0) - centre(stage, 0)).abs() <= 0.02 * f(stage, 2),
        "centred across, {what}"
    );
    assert!(
        (centre(mosaic, 1) - centre(stage, 1)).abs() <= 0.02 * f(stage, 3),
        "centred down, {what}"
    );
    let screen_of = |b: &Value| {
        f(b, 0) >= -0.5
            && f(b, 1) >= -0.5
            && f(b, 0) + f(b, 2) <= f(&boxes[4], 0) + 0.5
            && f(b, 1) + f(b, 3) <= f(&boxes[4], 1) + 0.5
    };
    let apart = |a: &Value, b: &Value| {
        f(a, 0) + f(a, 2) <= f(b, 0) + 0.5
            || f(b, 0) + f(b, 2) <= f(a, 0) + 0.5
            || f(a, 1) + f(a, 3) <= f(b, 1) + 0.5
            || f(b, 1) + f(b, 3) <= f(a, 1) + 0.5
    };
    for part in [mosaic, newest, qr] {
        assert!(screen_of(part), "on the screen, {what}");
    }
    assert!(
        apart(mosaic, newest) && apart(mosaic, qr),
        "beside, not over, {what}"
    );
    // The newest photo from the photo itself, not a cell's tile blown up.
    assert!(boxes[5].as_u64().unwrap() >= 300, "{what}");
    screenshot(browser, shot).await;
}

/// A screen at the venue (another browser, never signed in) opens the wall from its link: at
/// 1920 x 1080, 1366 x 768 and a TV on its side, the mosaic fills what the side panel leaves;
/// the newest photo, its guest's name and the guests' code are beside it. A new link ends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_venue_screen_shows_the_wall_from_its_link() {
    let app = spawn_app().await;
    let owner = Uuid::new_v4();
    let (event, job) = evening_with_forty_photos(&app, owner).await;
    let id = event["id"].as_str().unwrap().to_string();
    let res = app
        .client
        .post(app.url(&format!("/api/v1/events/{id}/wall")))
        .header("X-Client-Id", owner.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    let link: Value = res.json().await.unwrap();
    let url = link["url"].as_str().unwrap().to_string();
    // Without the link, or with a guest's, the wall is the owner's.
    let res = app.get(&format!("/events/{id}/wall")).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    let token = event["contribute_token"].as_str().unwrap();
    let res = app
        .get(&format!("/api/v1/events/{id}/wall?token={token}"))
        .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);

    let aspect =
        job["output"]["width"].as_f64().unwrap() / job["output"]["height"].as_f64().unwrap();
    let profile = tempfile::tempdir().unwrap();
    let page = url.clone();
    in_chromium(profile.path(), move |browser| async move {
        let browser = &browser;
        browser.goto(&page).await.unwrap();
        wall_fills(browser, (1920, 1080), aspect, "wall-1920x1080.png").await;
        let from = script(
            browser,
            "return document.getElementById('wall-photo-name').textContent",
        )
        .await;
        assert_eq!(from, "From Aunt May", "the newest photo's guest");
        wall_fills(browser, (1366, 768), aspect, "wall-1366x768.png").await;
        wall_fills(browser, (1080, 1920), aspect, "wall-1080x1920.png").await;
    })
    .await;

    // A new link ends the old one.
    let res = app
        .client
        .post(app.url(&format!("/api/v1/events/{id}/wall")))
        .header("X-Client-Id", owner.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    let old = url.split("token=").nth(1).unwrap();
    let res = app
        .get(&format!("/api/v1/events/{id}/wall?token={old}"))
        .await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
}

/// The couple's page, open on a phone, shows a guest's new photo and a new mosaic within 5 s
/// without a reload.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_couples_page_follows_photos_and_mosaics_without_a_reload() {
    let app = spawn_app().await;
    let owner = Uuid::new_v4();
    let event = make_event(
        &app,
        owner,
        couple_photo(),
        &[("cells", "24"), ("tile_size", "8")],
    )
    .await;
    let id = event["id"].as_str().unwrap().to_string();
    let profile = tempfile::tempdir().unwrap();
    let base = app.address.clone();
    let client = app.client.clone();
    let page = format!("{base}/events/{id}");
    in_chromium_phone_of((390, 844), profile.path(), move |browser| async move {
        let browser = &browser;
        // The owner's client id as the phone's cookie.
        browser.goto(&format!("{base}/healthz")).await.unwrap();
        as_client(browser, owner).await;
        browser.goto(&page).await.unwrap();
        wait_for(browser, "return document.getElementById('event') ? true : null", Duration::from_secs(20), "the event page").await;
        script(browser, "window.stayed = true").await;

        let photo = reqwest::multipart::Part::bytes(guest_photo(3)).file_name("IMG_0001.JPG");
        let res = client
            .post(format!("{base}/api/v1/events/{id}/photos?token={}", event["contribute_token"].as_str().unwrap()))
            .header("X-Client-Id", Uuid::new_v4().to_string())
            .multipart(reqwest::multipart::Form::new().text("guest_name", "Aunt May").part("files", photo))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::CREATED);
        let sent: Value = res.json().await.unwrap();
        let photo = sent["photos"][0]["id"].as_str().unwrap().to_string();
        let shown = format!(
            "const li = document.querySelector('li[data-photo=\"{photo}\"]'); \
             return li && window.stayed ? li.textContent : null"
        );
        let text = wait_for(browser, &shown, Duration::from_secs(5), "the new photo, without a reload").await;
        assert!(text.as_str().unwrap().contains("Aunt May"), "{text}");

        // Put in, and a mosaic asked for from the page: it shows once made.
        click(browser, &format!("input.pick[value=\"{photo}\"]")).await;
        click(browser, "button[data-act=approved]").await;
        wait_for(browser, "return document.querySelector('#group-approved').textContent.includes('(1)') && window.stayed", Duration::from_secs(10), "the photo put in").await;
        click(browser, "#make").await;
        let job = wait_for(browser, "const s = document.getElementById('mosaic-state'); return s && s.dataset.job ? s.dataset.job : null", Duration::from_secs(20), "the new mosaic's state").await;
        let job = job.as_str().unwrap().to_string();
        let mut poll = crate::support::Poll::new(Duration::from_secs(120));
        loop {
            let res = client.get(format!("{base}/api/v1/jobs/{job}")).header("X-Client-Id", owner.to_string()).send().await.unwrap();
            let body: Value = res.json().await.unwrap();
            if body["state"] == "done" {
                break;
            }
            assert!(body["state"] != "failed", "{body}");
            poll.again(|| format!("job {job} done: {body}")).await;
        }
        let preview = format!(
            "const i = document.getElementById('mosaic-preview'); \
             return i && i.complete && i.naturalWidth && i.src.includes('{job}') && window.stayed ? true : null"
        );
        wait_for(browser, &preview, Duration::from_secs(5), "the new mosaic, without a reload").await;
        screenshot(browser, "event-page-phone.png").await;
        let width = script(browser, "return document.documentElement.scrollWidth").await;
        assert!(width.as_u64().unwrap() <= 390, "the page is {width} px wide on a 390 px phone");
    })
    .await;
}

/// A guest on their phone gives their name once, sends two photos and a PDF (the photos are
/// taken, the PDF named with its reason), then more than the cap leaves (the page sends as many
/// as it takes and says so), and takes one photo back from the page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_sends_a_batch_and_takes_a_photo_back_from_the_page() {
    let app = spawn_app().await;
    let owner = Uuid::new_v4();
    let event = make_event(
        &app,
        owner,
        couple_photo(),
        &[("per_guest", "4"), ("cells", "24"), ("tile_size", "8")],
    )
    .await;
    let id = event["id"].as_str().unwrap().to_string();
    let work = tempfile::tempdir().unwrap();
    let file = |dir: &str, name: &str, bytes: Vec<u8>| {
        let at = work.path().join(dir);
        std::fs::create_dir_all(&at).unwrap();
        let path = at.join(name);
        std::fs::write(&path, bytes).unwrap();
        path.display().to_string()
    };
    let first = [
        file("a", "IMG_1100.JPG", guest_photo(1)),
        file("b", "IMG_1101.JPG", guest_photo(2)),
        file(
            "a",
            "menu.pdf",
            b"%PDF-1.7\n1 0 obj\n<<>>\nendobj\n".to_vec(),
        ),
    ];
    let second: Vec<String> = (0..4)
        .map(|i| file("c", &format!("IMG_20{i}.JPG"), guest_photo(10 + i)))
        .collect();
    let profile = work.path().join("profile");
    std::fs::create_dir(&profile).unwrap();
    let link = format!(
        "{}{}",
        app.address,
        event["contribute_url"].as_str().unwrap()
    );
    in_chromium_phone_of((390, 844), &profile, move |browser| async move {
        let browser = &browser;
        browser.goto(&link).await.unwrap();
        wait_for(browser, "return document.getElementById('main').dataset.ready", Duration::from_secs(20), "the contribute page").await;
        crate::browser::set_value(browser, "guest-name", "Aunt May").await;
        let input = browser.find(fantoccini::Locator::Id("files")).await.unwrap();
        input.send_keys(&first.join("\n")).await.unwrap();
        click(browser, "#send").await;
        let said = wait_for(browser, "const s = document.getElementById('status').textContent; return s.startsWith('Sent') ? s + ' | ' + document.getElementById('error').textContent : null", Duration::from_secs(30), "the batch sent").await;
        let said = said.as_str().unwrap();
        assert!(said.starts_with("Sent 2 photo"), "{said}");
        assert!(said.contains("menu.pdf is a PDF document"), "{said}");
        wait_for(browser, "return document.querySelectorAll('#mine li').length === 2", Duration::from_secs(10), "the two photos listed").await;
        screenshot(browser, "contribute-phone.png").await;

        // Four more with two left under the cap: two are sent, and the page says so.
        let input = browser.find(fantoccini::Locator::Id("files")).await.unwrap();
        input.send_keys(&second.join("\n")).await.unwrap();
        click(browser, "#send").await;
        let said = wait_for(browser, "const s = document.getElementById('status').textContent; return s.startsWith('Sent') && s.includes('more') ? s : null", Duration::from_secs(30), "the batch over the cap").await;
        assert!(said.as_str().unwrap().contains("the first 2 of the 4 chosen were sent"), "{said}");
        wait_for(browser, "return document.querySelectorAll('#mine li').length === 4", Duration::from_secs(10), "four photos listed").await;

        // One taken back, with a confirmation.
        click(browser, "#mine li .take-back").await;
        browser.accept_alert().await.unwrap();
        wait_for(browser, "return document.querySelectorAll('#mine li').length === 3", Duration::from_secs(10), "the photo taken back").await;
    })
    .await;
    let res = app
        .get_with(
            &format!("/api/v1/events/{id}"),
            &[("X-Client-Id", &owner.to_string())],
        )
        .await;
    let view: Value = res.json().await.unwrap();
    let photos = view["photos"].as_array().unwrap();
    assert_eq!(photos.len(), 3, "{view}");
    assert!(
        photos.iter().all(|p| p["guest_name"] == "Aunt May"),
        "{view}"
    );
}

/// Every page, as the couple, a guest and a screen see it, on a 390 x 844 phone and a
/// 1920 x 1080 desktop: a screenshot of each in the test artifacts, and none wider than a
/// phone's screen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_fits_a_phone_and_a_desktop() {
    let app = spawn_app().await;
    let owner = Uuid::new_v4();
    let event = make_event(
        &app,
        owner,
        couple_photo(),
        &[("approval", "false"), ("cells", "24"), ("tile_size", "8")],
    )
    .await;
    let id = event["id"].as_str().unwrap().to_string();
    let files = (0..6).map(|i| ("IMG_0001.JPG", guest_photo(i))).collect();
    let (status, _) = send_photos(
        &app,
        &event,
        Uuid::new_v4(),
        files,
        &[("guest_name", "Aunt May")],
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let job = finished_event_mosaic(&app, owner, &id).await;
    let job = job["id"].as_str().unwrap().to_string();
    let res = app
        .client
        .post(app.url(&format!("/api/v1/events/{id}/wall")))
        .header("X-Client-Id", owner.to_string())
        .send()
        .await
        .unwrap();
    let wall: Value = res.json().await.unwrap();
    let token = event["contribute_token"].as_str().unwrap().to_string();
    let owners = [
        ("home", "/".to_string()),
        ("new-event", "/events/new".into()),
        ("my-events", "/events".into()),
        ("event", format!("/events/{id}")),
        ("my-jobs", "/jobs".into()),
        ("event-job", format!("/jobs/{job}")),
        ("libraries", "/libraries".into()),
        ("system", "/system".into()),
        ("api", "/api".into()),
    ];
    let guests = [
        (
            "contribute",
            format!("/events/{id}/contribute?token={token}"),
        ),
        ("guest-job", format!("/jobs/{job}?share={token}")),
        (
            "wall",
            wall["url"]
                .as_str()
                .unwrap()
                .replace("http://", "")
                .split_once('/')
                .map(|(_, p)| format!("/{p}"))
                .unwrap(),
        ),
    ];
    let base = app.address.clone();
    let profile = tempfile::tempdir().unwrap();
    in_chromium(profile.path(), move |browser| async move {
        let browser = &browser;
        for (screen, kind) in [((390, 844), "phone"), ((1920, 1080), "desktop")] {
            set_viewport(browser, screen).await;
            for (who, pages) in [("owner", &owners[..]), ("guest", &guests[..])] {
                browser.goto(&format!("{base}/healthz")).await.unwrap();
                browser.delete_all_cookies().await.unwrap();
                if who == "owner" {
                    as_client(browser, owner).await;
                }
                for (name, path) in pages {
                    browser.goto(&format!("{base}{path}")).await.unwrap();
                    wait_for(
                        browser,
                        "return document.readyState === 'complete'",
                        Duration::from_secs(20),
                        name,
                    )
                    .await;
                    script(browser, "return new Promise(done => setTimeout(done, 600))").await;
                    let title = script(browser, "return document.title").await;
                    assert!(
                        !title.as_str().unwrap().starts_with("Forbidden"),
                        "{name}: {title}"
                    );
                    screenshot(browser, &format!("page-{name}-{kind}.png")).await;
                    let wide = script(browser, "return document.documentElement.scrollWidth").await;
                    let over = script(browser, WIDER_THAN_SCREEN).await;
                    assert!(
                        wide.as_u64().unwrap() <= u64::from(screen.0),
                        "{name} is {wide} px wide on a {} px {kind}: {over}",
                        screen.0
                    );
                }
            }
        }
    })
    .await;
}
