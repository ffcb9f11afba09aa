//! Events at a campaign's scale: each photo its own record, prepared by the processors, so that
//! guests sending at once are neither refused for it nor let past their cap.

use std::collections::HashMap;

use reqwest::StatusCode;
use serde_json::Value;
use uuid::Uuid;

use crate::support::*;

/// The test settings with the guests' rates lifted: what is tested is the event's own holding.
fn campaign_settings() -> tessera_web::web_settings::WebSettings {
    let mut settings = test_settings();
    settings.guests.photos_per_minute_per_address = 0;
    settings.guests.photos_per_minute_per_event = 0;
    settings
}

fn photo(i: usize) -> Vec<u8> {
    crate::photos::camera_jpeg(96, 72, (i * 5 % 250) as u8)
}

/// The owner's view of `event`.
async fn owners_view(app: &TestApp, owner: Uuid, event: &Value) -> Value {
    let id = event["id"].as_str().unwrap();
    app.get_with(
        &format!("/api/v1/events/{id}"),
        &[("X-Client-Id", &owner.to_string())],
    )
    .await
    .json()
    .await
    .unwrap()
}

/// 50 guests each send 5 photos, one a request, all 250 requests at once, to an event that takes
/// 3 from each: every guest has exactly 3 taken and 2 refused for the cap, nothing is refused
/// for anything else, and every photo taken is there and prepared.
async fn fifty_guests_at_once_never_pass_a_cap_of_three(app: &TestApp) {
    let owner = Uuid::new_v4();
    let fields = [("approval", "false"), ("per_guest", "3")];
    let event = make_event(app, owner, astronaut(), &fields).await;
    let guests: Vec<Uuid> = (0..50).map(|_| Uuid::new_v4()).collect();
    let sends = guests.iter().enumerate().flat_map(|(g, &guest)| {
        (0..5).map(move |i| (guest, format!("g{g}-{i}.jpg"), photo(g * 5 + i)))
    });
    let event_ref = &event;
    let answers = futures_util::future::join_all(sends.map(|(guest, name, bytes)| async move {
        let (status, body) =
            send_photos_received(app, event_ref, guest, vec![(&name, bytes)], &[]).await;
        (guest, status, body)
    }))
    .await;
    let mut taken: HashMap<Uuid, Vec<String>> = HashMap::new();
    for (guest, status, body) in &answers {
        match status.as_u16() {
            201 => taken
                .entry(*guest)
                .or_default()
                .push(body["photos"][0]["id"].as_str().unwrap().to_string()),
            422 => assert_eq!(body["error"]["code"], "guest_photo_limit", "{body}"),
            other => panic!("refused {other}: {body}"),
        }
    }
    for guest in &guests {
        let sent = taken.get(guest).map_or(0, Vec::len);
        assert_eq!(sent, 3, "guest {guest} had {sent} photos taken");
    }
    for (guest, ids) in &taken {
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        prepared(app, &event, *guest, &ids).await;
    }
    let view = owners_view(app, owner, &event).await;
    assert_eq!(view["counts"]["approved"], 150, "{}", view["counts"]);
    assert_eq!(view["counts"]["received"], 0, "{}", view["counts"]);
    assert_eq!(view["photos"].as_array().unwrap().len(), 150);
    // A guest who takes one out may send one more, and no more.
    let (guest, ids) = taken.iter().next().unwrap();
    let id = event["id"].as_str().unwrap();
    let res = app
        .client
        .delete(app.url(&format!("/api/v1/events/{id}/photos/{}", ids[0])))
        .header("X-Client-Id", guest.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let again = |i| send_photos(app, &event, *guest, vec![("again.jpg", photo(i))], &[]);
    assert_eq!(again(1).await.0, StatusCode::CREATED);
    let (status, body) = again(2).await;
    assert_eq!(
        body["error"]["code"], "guest_photo_limit",
        "{status} {body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_guests_at_once_never_pass_a_cap_of_three_on_the_embedded_store() {
    fifty_guests_at_once_never_pass_a_cap_of_three(
        &spawn_app_with(campaign_settings(), true).await,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_guests_at_once_never_pass_a_cap_of_three_on_azurite() {
    fifty_guests_at_once_never_pass_a_cap_of_three(
        &spawn_app_on_azurite_with(campaign_settings()).await,
    )
    .await;
}

/// A photo is received at once and prepared by a processor: its guest sees it received, then
/// in. One whose header reads but whose pixels do not is left out with the reason, and gives
/// its slot back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_photo_is_received_then_prepared_and_an_unreadable_one_is_left_out_with_why() {
    let app = spawn_app_with(campaign_settings(), true).await;
    let owner = Uuid::new_v4();
    let fields = [("approval", "false"), ("per_guest", "1")];
    let event = make_event(&app, owner, astronaut(), &fields).await;
    let guest = Uuid::new_v4();
    // A PNG whose header reads, and whose pixels' stream is garbage.
    let mut broken = png(64, 48);
    let data = broken.windows(4).position(|w| w == b"IDAT").unwrap() + 4;
    broken[data + 2..data + 40].fill(0xA5);
    let (status, body) =
        send_photos_received(&app, &event, guest, vec![("broken.png", broken)], &[]).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["photos"][0]["prepared"], false, "{body}");
    let id = body["photos"][0]["id"].as_str().unwrap().to_string();
    prepared(&app, &event, guest, &[&id]).await;
    let (eid, token) = (
        event["id"].as_str().unwrap(),
        event["contribute_token"].as_str().unwrap(),
    );
    let mine: Value = app
        .get_with(
            &format!("/api/v1/events/{eid}?token={token}"),
            &[("X-Client-Id", &guest.to_string())],
        )
        .await
        .json()
        .await
        .unwrap();
    let left = &mine["photos"][0];
    assert_eq!(left["state"], "rejected", "{mine}");
    assert!(!left["unreadable"].as_str().unwrap().is_empty(), "{left}");
    // Its slot is free again: the guest's one photo may be a readable one.
    let (status, body) = send_photos(&app, &event, guest, vec![("ok.jpg", photo(4))], &[]).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let view = owners_view(&app, owner, &event).await;
    assert_eq!(view["counts"]["approved"], 1, "{view}");
    assert_eq!(view["counts"]["rejected"], 1, "{view}");
}

/// An event whose record holds its photos, as earlier versions wrote it, has them moved to
/// records of their own the first time it is read: none lost, each on its shelf, its guest's cap
/// counting them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn photos_kept_in_an_events_record_move_to_their_own() {
    let app = spawn_app_with(campaign_settings(), true).await;
    let owner = Uuid::new_v4();
    let event = make_event(&app, owner, astronaut(), &[("per_guest", "2")]).await;
    let id: Uuid = event["id"].as_str().unwrap().parse().unwrap();
    let guest = Uuid::new_v4();
    let events = app.platform.events();
    // Sent once through the API, then written back into the record as an old version kept it.
    let (_, body) = send_photos(&app, &event, guest, vec![("old.jpg", photo(9))], &[]).await;
    let photo_id: Uuid = body["photos"][0]["id"].as_str().unwrap().parse().unwrap();
    let mut old = events.find_photo(id, photo_id).await.unwrap().unwrap();
    events.remove_photo(id, &old).await.unwrap();
    events
        .put_photo(id, photo_id, photo(9).into())
        .await
        .unwrap();
    old.slot = None;
    events
        .update(id, |r| {
            r.photos.push(old.clone());
            true
        })
        .await
        .unwrap();
    let view = owners_view(&app, owner, &event).await;
    assert_eq!(view["counts"]["waiting"], 1, "{view}");
    assert_eq!(view["photos"][0]["id"], photo_id.to_string(), "{view}");
    assert!(events.get(id).await.unwrap().photos.is_empty());
    assert!(events.find_photo(id, photo_id).await.unwrap().is_some());
    // The guest's cap of 2 counts the moved photo: one more is taken, then none.
    let send = |i| send_photos(&app, &event, guest, vec![("new.jpg", photo(i))], &[]);
    assert_eq!(send(10).await.0, StatusCode::CREATED);
    assert_eq!(send(11).await.1["error"]["code"], "guest_photo_limit");
}

/// 600 photos wait for the owner; 500 of them are approved in one request by their ids, then
/// the other 100 by their state, and a mosaic made of all of them.
async fn five_hundred_approved_in_one_request(app: &TestApp) {
    let owner = Uuid::new_v4();
    let event = make_event(app, owner, astronaut(), &[("per_guest", "0")]).await;
    let guest = Uuid::new_v4();
    let mut ids = Vec::new();
    for batch in 0..30 {
        let files: Vec<(String, Vec<u8>)> = (0..20)
            .map(|i| (format!("p{batch}-{i}.jpg"), photo(batch * 20 + i)))
            .collect();
        let files = files.iter().map(|(n, b)| (n.as_str(), b.clone())).collect();
        let (status, body) = send_photos(app, &event, guest, files, &[]).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        for p in body["photos"].as_array().unwrap() {
            ids.push(p["id"].as_str().unwrap().to_string());
        }
    }
    let id = event["id"].as_str().unwrap();
    let decide = |body: Value| {
        app.client
            .post(app.url(&format!("/api/v1/events/{id}/decisions")))
            .header("X-Client-Id", owner.to_string())
            .json(&body)
            .send()
    };
    let stranger = app
        .client
        .post(app.url(&format!("/api/v1/events/{id}/decisions")))
        .header("X-Client-Id", guest.to_string())
        .json(&serde_json::json!({"state": "approved", "every": "waiting"}))
        .send()
        .await
        .unwrap();
    assert_eq!(stranger.status(), StatusCode::FORBIDDEN);
    let unknown = Uuid::new_v4().to_string();
    let mut some: Vec<&str> = ids[..500].iter().map(String::as_str).collect();
    some.push(&unknown);
    let res = decide(serde_json::json!({"state": "approved", "photos": some}))
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let decided: Value = res.json().await.unwrap();
    assert_eq!(decided["changed"], 500, "{decided}");
    assert_eq!(decided["not_found"][0], unknown.as_str(), "{decided}");
    let view = owners_view(app, owner, &event).await;
    assert_eq!(view["counts"]["approved"], 500, "{}", view["counts"]);
    assert_eq!(view["counts"]["waiting"], 100, "{}", view["counts"]);
    let res = decide(serde_json::json!({"state": "approved", "every": "waiting"}))
        .await
        .unwrap();
    let decided: Value = res.json().await.unwrap();
    assert_eq!(decided["changed"], 100, "{decided}");
    let both = decide(serde_json::json!({"state": "approved", "every": "waiting", "photos": some}))
        .await
        .unwrap();
    assert_refused(both, StatusCode::BAD_REQUEST, "conflicting_parameters").await;
    let view = owners_view(app, owner, &event).await;
    assert_eq!(view["counts"]["approved"], 600, "{}", view["counts"]);
    let done = finished_event_mosaic(app, owner, id).await;
    assert_eq!(done["state"], "done", "{done}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_approved_in_one_request_on_the_embedded_store() {
    five_hundred_approved_in_one_request(&spawn_app_with(campaign_settings(), true).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_approved_in_one_request_on_azurite() {
    five_hundred_approved_in_one_request(&spawn_app_on_azurite_with(campaign_settings()).await)
        .await;
}

/// A guest erases every photo of theirs in one request: their photos and pictures go, the
/// other guests' stay, and the next mosaic has none of theirs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_erases_every_photo_of_theirs_at_once() {
    let app = spawn_app_with(campaign_settings(), true).await;
    let owner = Uuid::new_v4();
    let event = make_event(&app, owner, astronaut(), &[("approval", "false")]).await;
    let (leaving, staying) = (Uuid::new_v4(), Uuid::new_v4());
    let three = |base: usize| {
        (0..3)
            .map(move |i| ("p.jpg", photo(base + i)))
            .collect::<Vec<_>>()
    };
    let (_, gone) = send_photos(&app, &event, leaving, three(0), &[]).await;
    send_photos(&app, &event, staying, three(10), &[]).await;
    let (id, token) = (
        event["id"].as_str().unwrap(),
        event["contribute_token"].as_str().unwrap(),
    );
    let first = finished_event_mosaic(&app, owner, id).await;
    assert_eq!(first["state"], "done", "{first}");
    let erase = |who: Uuid, token: &str| {
        app.client
            .delete(app.url(&format!("/api/v1/events/{id}/photos?token={token}")))
            .header("X-Client-Id", who.to_string())
            .send()
    };
    assert_eq!(
        erase(leaving, "wrong").await.unwrap().status(),
        StatusCode::FORBIDDEN
    );
    let res = erase(leaving, token).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let erased: Value = res.json().await.unwrap();
    assert_eq!(erased["removed"], 3, "{erased}");
    let view = owners_view(&app, owner, &event).await;
    assert_eq!(view["counts"]["approved"], 3, "{}", view["counts"]);
    for photo in gone["photos"].as_array().unwrap() {
        let photo: Uuid = photo["id"].as_str().unwrap().parse().unwrap();
        let eid: Uuid = id.parse().unwrap();
        assert!(
            app.platform
                .events()
                .find_photo(eid, photo)
                .await
                .unwrap()
                .is_none()
        );
        assert!(app.platform.events().photo(eid, photo).await.is_err());
    }
    let next = finished_event_mosaic(&app, owner, id).await;
    let placements = app
        .get_placements_with(
            next["id"].as_str().unwrap(),
            &[("X-Client-Id", &owner.to_string())],
        )
        .await;
    assert_eq!(
        placements["tiles"].as_array().unwrap().len(),
        3,
        "{placements}"
    );
}

/// The library `job` (a job's view) was made with, as the catalog holds it.
async fn library_of(app: &TestApp, job: &Value) -> (u32, Vec<String>) {
    let id = job["params"]["library"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{job}"));
    let version = job["params"]["library"]["version"].as_u64().unwrap() as u32;
    let reference = tessera_shared::spec::LibraryRef {
        id: id.to_string(),
        version,
    };
    let index = app.platform.libraries().index(&reference).await.unwrap();
    let library = tessera_engine::Library::from_bytes(&index).unwrap();
    (version, library.names().to_vec())
}

/// An event's mosaics are made of the tiles its photos were prepared as, never of the photos
/// again: with every photo's file gone, the controller makes the event's library of them, and
/// the next mosaic's version is the last one edited (a photo withdrawn out, the new ones in).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_events_library_is_made_by_the_controller_from_tiles_prepared_once() {
    let app = spawn_app_with(campaign_settings(), true).await;
    let owner = Uuid::new_v4();
    let event = make_event(&app, owner, astronaut(), &[("approval", "false")]).await;
    let id = event["id"].as_str().unwrap();
    let eid: Uuid = id.parse().unwrap();
    let guest = Uuid::new_v4();
    let six = (0..6).map(|i| ("p.jpg", photo(40 + i))).collect();
    let (_, sent) = send_photos(&app, &event, guest, six, &[]).await;
    let ids: Vec<Uuid> = sent["photos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap().parse().unwrap())
        .collect();
    let events = app.platform.events();
    for &photo in &ids {
        assert!(events.tile(eid, photo).await.unwrap().is_some());
        let file = tessera_shared::keys::BlobKey::EventPhoto { event: eid, photo };
        app.platform.blobs.delete(&file.path()).await.unwrap();
    }
    let first = finished_event_mosaic(&app, owner, id).await;
    assert_eq!(first["state"], "done", "{first}");
    let (v1, names) = library_of(&app, &first).await;
    assert_eq!(names.len(), 6, "{names:?}");
    // One withdrawn by the owner, two more sent: the next version is the last one edited.
    let res = app
        .client
        .delete(app.url(&format!("/api/v1/events/{id}/photos/{}", ids[0])))
        .header("X-Client-Id", owner.to_string())
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "{:?}", res.text().await);
    let two = (0..2).map(|i| ("q.jpg", photo(80 + i))).collect();
    let (_, more) = send_photos(&app, &event, guest, two, &[]).await;
    let next = finished_event_mosaic(&app, owner, id).await;
    assert_eq!(next["state"], "done", "{next}");
    let (v2, names) = library_of(&app, &next).await;
    assert_eq!(v2, v1 + 1);
    assert_eq!(names.len(), 7, "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with(&ids[0].to_string())));
    for p in more["photos"].as_array().unwrap() {
        let new = p["id"].as_str().unwrap();
        assert!(
            names.iter().any(|n| n.starts_with(new)),
            "{new} in {names:?}"
        );
    }
    // Asked again with nothing changed, the mosaic is of the same version.
    let again = finished_event_mosaic(&app, owner, id).await;
    assert_eq!(library_of(&app, &again).await.0, v2);
}

/// Changes `event`'s settings as its `owner`.
async fn change_settings(app: &TestApp, owner: Uuid, event: &str, change: Value) {
    let res = app
        .client
        .patch(app.url(&format!("/api/v1/events/{event}")))
        .header("X-Client-Id", owner.to_string())
        .json(&change)
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "{:?}", res.text().await);
}

/// The cells of a finished job's grid.
fn cells_of(job: &Value) -> usize {
    (job["output"]["cols"].as_u64().unwrap() * job["output"]["rows"].as_u64().unwrap()) as usize
}

/// 30 photos for a grid of 4 across: by default the grid grows until each has a cell; taking
/// turns, each mosaic takes as many as the grid has cells, the next ones after the last turn's,
/// and the guest's view says which photos wait for a turn; with the best-fitting, every photo is
/// offered and the grid kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_photos_than_cells_grow_the_grid_or_take_turns() {
    let app = spawn_app_with(campaign_settings(), true).await;
    let owner = Uuid::new_v4();
    let fields = [
        ("approval", "false"),
        ("per_guest", "0"),
        ("cells", "4"),
        ("tile_size", "16"),
    ];
    let event = make_event(&app, owner, astronaut(), &fields).await;
    let id = event["id"].as_str().unwrap();
    let guest = Uuid::new_v4();
    let thirty = (0..30).map(|i| ("p.jpg", photo(100 + i))).collect();
    let (status, sent) = send_photos(&app, &event, guest, thirty, &[]).await;
    assert_eq!(status, StatusCode::CREATED, "{sent}");

    let grown = finished_event_mosaic(&app, owner, id).await;
    assert_eq!(grown["state"], "done", "{grown}");
    assert!(cells_of(&grown) >= 30, "{}", grown["output"]);
    assert_eq!(library_of(&app, &grown).await.1.len(), 30);
    let view = owners_view(&app, owner, &event).await;
    assert_eq!(view["showing"]["in_mosaic"], 30, "{}", view["showing"]);
    assert_eq!(view["showing"]["waiting"], 0, "{}", view["showing"]);

    change_settings(&app, owner, id, serde_json::json!({"overflow": "turns"})).await;
    let first = finished_event_mosaic(&app, owner, id).await;
    let cells = cells_of(&first);
    assert!(cells < 30, "{} cells", cells);
    let (_, in_first) = library_of(&app, &first).await;
    assert_eq!(in_first.len(), cells, "{in_first:?}");
    let view = owners_view(&app, owner, &event).await;
    assert_eq!(view["showing"]["turns"], true, "{}", view["showing"]);
    assert_eq!(view["showing"]["in_mosaic"], cells, "{}", view["showing"]);
    assert_eq!(
        view["showing"]["waiting"],
        30 - cells,
        "{}",
        view["showing"]
    );
    let (eid, token) = (id, event["contribute_token"].as_str().unwrap());
    let mine: Value = app
        .get_with(
            &format!("/api/v1/events/{eid}?token={token}"),
            &[("X-Client-Id", &guest.to_string())],
        )
        .await
        .json()
        .await
        .unwrap();
    let photos = mine["photos"].as_array().unwrap();
    let in_turn = photos.iter().filter(|p| p["in_turn"] == true).count();
    let waiting = photos.iter().filter(|p| p["in_turn"] == false).count();
    assert_eq!((in_turn, waiting), (cells, 30 - cells), "{mine}");
    for p in photos.iter().filter(|p| p["in_turn"] == true) {
        let tile = p["tile"].as_str().unwrap();
        assert!(
            in_first.iter().any(|n| n == tile),
            "{tile} in the first turn"
        );
    }
    // The next turn starts with the photos the first left waiting.
    let second = finished_event_mosaic(&app, owner, id).await;
    let (_, in_second) = library_of(&app, &second).await;
    let fresh = in_second.iter().filter(|n| !in_first.contains(n)).count();
    assert_eq!(fresh, cells.min(30 - cells), "{in_second:?}");

    change_settings(&app, owner, id, serde_json::json!({"overflow": "best"})).await;
    let best = finished_event_mosaic(&app, owner, id).await;
    assert_eq!(cells_of(&best), cells);
    assert_eq!(library_of(&app, &best).await.1.len(), 30);
    let view = owners_view(&app, owner, &event).await;
    assert_eq!(view["showing"]["turns"], false, "{}", view["showing"]);
    assert_eq!(
        view["showing"]["waiting"],
        30 - cells,
        "{}",
        view["showing"]
    );
}

/// A `width` x `height` PNG of bars, as a phone's screenshot of a page might be.
fn screenshot_png(width: u32, height: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(width, height, |x, y| {
        let bar = (y / 40) % 2 == 0;
        image::Rgb(if bar {
            [250, 250, 250]
        } else {
            [30, (x % 256) as u8, 90]
        })
    });
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

/// With the screen on, an event that takes photos at once still holds for its owner a blank
/// frame, a near duplicate of a photo it has (the same picture, a little lighter) and a
/// screenshot, each with the reason; a photo unlike the others goes in, and the owner may put a
/// held one in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pre_screen_holds_blank_frames_near_duplicates_and_screenshots() {
    let app = spawn_app_with(campaign_settings(), true).await;
    let owner = Uuid::new_v4();
    let fields = [
        ("approval", "false"),
        ("per_guest", "0"),
        ("screen", "true"),
    ];
    let event = make_event(&app, owner, astronaut(), &fields).await;
    let id = event["id"].as_str().unwrap();
    let guest = Uuid::new_v4();
    let first = crate::photos::camera_jpeg(640, 480, 40);
    let (status, body) = send_photos(&app, &event, guest, vec![("a.jpg", first)], &[]).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let blank = crate::photos::camera_jpeg(64, 64, 0);
    let blank = {
        let img = image::load_from_memory(&blank).unwrap().to_rgb8();
        let flat =
            image::RgbImage::from_pixel(img.width(), img.height(), image::Rgb([128, 128, 128]));
        let mut out = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 85)
            .encode(
                flat.as_raw(),
                flat.width(),
                flat.height(),
                image::ExtendedColorType::Rgb8,
            )
            .unwrap();
        out
    };
    let files = vec![
        ("again.jpg", crate::photos::camera_jpeg(800, 600, 44)),
        ("blank.jpg", blank),
        ("Screenshot.png", screenshot_png(390, 844)),
    ];
    let (status, body) = send_photos(&app, &event, guest, files, &[]).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let view = owners_view(&app, owner, &event).await;
    assert_eq!(view["counts"]["approved"], 1, "{}", view["counts"]);
    assert_eq!(view["counts"]["waiting"], 3, "{}", view["counts"]);
    let held: HashMap<&str, &str> = view["photos"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| Some((p["name"].as_str()?, p["held"].as_str()?)))
        .collect();
    assert!(held["again.jpg"].contains("same photo"), "{held:?}");
    assert!(held["blank.jpg"].contains("blank"), "{held:?}");
    assert!(held["Screenshot.png"].contains("screenshot"), "{held:?}");
    assert!(!held.contains_key("a.jpg"), "{held:?}");
    // The owner puts one in all the same.
    let again = view["photos"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "again.jpg")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let res = app
        .client
        .patch(app.url(&format!("/api/v1/events/{id}/photos/{again}")))
        .header("X-Client-Id", owner.to_string())
        .json(&serde_json::json!({"state": "approved"}))
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "{:?}", res.text().await);
    let view = owners_view(&app, owner, &event).await;
    assert_eq!(view["counts"]["approved"], 2, "{}", view["counts"]);
}
