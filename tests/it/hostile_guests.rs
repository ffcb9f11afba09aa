//! A holder of a contribute link, as an audit found them: a 1.1 MB progressive JPEG that
//! declares 14000 x 14000 pixels, fresh client ids to pass the per-guest cap, thousands of tiny
//! photos for one mosaic, library edits that each copied the whole index, and guests reading
//! each other's photos through the mosaic. Each is refused, held to a budget, or shown only
//! what is theirs.

use reqwest::StatusCode;
use reqwest::multipart::{Form, Part};
use serde_json::Value;
use uuid::Uuid;

use crate::support::*;

/// The most the audit's files may add to the service's peak memory.
const MOST_ADDED: u64 = 400 << 20;

/// A progressive JPEG of `side` x `side` pixels, three components at 1x1, whose one scan
/// holds only DC coefficients, each a difference of 0 (one bit a block): about `side² / 170`
/// bytes for what its decoder must hold as `side² * 6` bytes of coefficients.
fn dc_only_progressive_jpeg(side: u16) -> Vec<u8> {
    let mut out = vec![0xFF, 0xD8];
    let mut segment = |marker: u8, body: &[u8]| {
        out.extend_from_slice(&[0xFF, marker]);
        out.extend_from_slice(&((body.len() + 2) as u16).to_be_bytes());
        out.extend_from_slice(body);
    };
    segment(0xDB, &[[0u8].as_slice(), &[1u8; 64]].concat());
    let mut frame = vec![8];
    frame.extend_from_slice(&side.to_be_bytes());
    frame.extend_from_slice(&side.to_be_bytes());
    frame.push(3);
    for c in 1..=3 {
        frame.extend_from_slice(&[c, 0x11, 0]);
    }
    segment(0xC2, &frame);
    // One DC code: category 0, one bit long.
    let mut table = vec![0x00, 1];
    table.extend_from_slice(&[0; 15]);
    table.push(0);
    segment(0xC4, &table);
    segment(0xDA, &[3, 1, 0x00, 2, 0x00, 3, 0x00, 0, 0, 0]);
    let blocks = (u64::from(side).div_ceil(8)).pow(2) * 3;
    out.extend(std::iter::repeat_n(0u8, blocks.div_ceil(8) as usize));
    out.extend_from_slice(&[0xFF, 0xD9]);
    out
}

/// A progressive 4:2:0 JPEG photo of `width` x `height`, as a phone's editor saves one.
fn progressive_photo(width: u16, height: u16) -> Vec<u8> {
    let img = image::RgbImage::from_fn(u32::from(width), u32::from(height), |x, y| {
        image::Rgb([(x / 9) as u8, (y / 7) as u8, ((x + y) / 13) as u8])
    });
    let mut out = Vec::new();
    let mut encoder = jpeg_encoder::Encoder::new(&mut out, 85);
    encoder.set_progressive(true);
    encoder
        .encode(img.as_raw(), width, height, jpeg_encoder::ColorType::Rgb)
        .unwrap();
    out
}

fn from(client: Uuid, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    request.header("X-Client-Id", client.to_string())
}

/// Makes an event of `owner` at `base` with `fields` besides its name and target: its view.
async fn make_event(base: &str, owner: Uuid, fields: &[(&str, &str)]) -> Value {
    let mut form = Form::new()
        .text("name", "The audit")
        .text("cells", "16")
        .text("tile_size", "8")
        // The test photos are made alike: screened, they would be held as near duplicates.
        .text("screen", "false")
        .part("image", Part::bytes(astronaut()).file_name("us.png"));
    for (k, v) in fields {
        form = form.text(k.to_string(), v.to_string());
    }
    let res = from(
        owner,
        no_redirect_client().post(format!("{base}/api/v1/events")),
    )
    .multipart(form)
    .send()
    .await
    .unwrap();
    let status = res.status();
    let body: Value = res.json().await.unwrap();
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body
}

/// Sends one photo to `event` as guest `guest`: the answer's status, `Retry-After` and body.
async fn send_photo(
    base: &str,
    event: &Value,
    guest: Uuid,
    name: &str,
    bytes: Vec<u8>,
) -> (StatusCode, Option<String>, Value) {
    let (id, token) = (
        event["id"].as_str().unwrap(),
        event["contribute_token"].as_str().unwrap(),
    );
    let form = Form::new().part("files", Part::bytes(bytes).file_name(name.to_string()));
    let res = from(
        guest,
        no_redirect_client().post(format!("{base}/api/v1/events/{id}/photos?token={token}")),
    )
    .multipart(form)
    .send()
    .await
    .unwrap();
    let status = res.status();
    let retry = res
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_string());
    (status, retry, res.json().await.unwrap_or(Value::Null))
}

/// [`send_photo`] that returns once the processors have prepared the photo taken.
async fn send_prepared_photo(
    base: &str,
    event: &Value,
    guest: Uuid,
    name: &str,
    bytes: Vec<u8>,
) -> (StatusCode, Option<String>, Value) {
    let sent = send_photo(base, event, guest, name, bytes).await;
    if sent.0 != StatusCode::CREATED {
        return sent;
    }
    let photo = sent.2["photos"][0]["id"].clone();
    let (id, token) = (
        event["id"].as_str().unwrap(),
        event["contribute_token"].as_str().unwrap(),
    );
    let url = format!("{base}/api/v1/events/{id}?token={token}");
    wait_for(std::time::Duration::from_secs(60), async || {
        let view: Value = from(guest, no_redirect_client().get(&url))
            .send()
            .await
            .map_err(|e| e.to_string())?
            .json()
            .await
            .map_err(|e| e.to_string())?;
        let photos = view["photos"].as_array().cloned().unwrap_or_default();
        match photos
            .iter()
            .any(|p| p["id"] == photo && p["prepared"] == true)
        {
            true => Ok(()),
            false => Err(format!("{photo} not prepared: {view}")),
        }
    })
    .await;
    sent
}

/// A small PNG of one colour, different for each `i`.
fn coloured_photo(i: u32) -> Vec<u8> {
    coloured_png(i, 40, 30)
}

/// A `width` x `height` PNG of one colour, different for each `i`.
fn coloured_png(i: u32, width: u32, height: u32) -> Vec<u8> {
    let colour = image::Rgb([(i % 256) as u8, (i / 256 * 40) as u8, (i * 7 % 256) as u8]);
    let mut out = std::io::Cursor::new(Vec::new());
    image::RgbImage::from_pixel(width, height, colour)
        .write_to(&mut out, image::ImageFormat::Png)
        .unwrap();
    out.into_inner()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_progressive_jpeg_declaring_14000_pixels_is_refused_before_it_is_decoded() {
    let bomb = dc_only_progressive_jpeg(14_000);
    assert!(bomb.len() < 1_300_000, "{} bytes", bomb.len());
    let frame = tessera_engine::jpeg_frame::JpegFrame::read(&bomb).unwrap();
    assert_eq!(frame.coefficient_bytes(), 1750 * 1750 * 3 * 128);
    let serve = Serve::start(&[]).await;
    let owner = Uuid::new_v4();
    let event = make_event(&serve.base, owner, &[("approval", "false")]).await;
    let before = serve.peak();
    let guest = Uuid::new_v4();
    let (status, _, body) = send_photo(&serve.base, &event, guest, "bomb.jpg", bomb).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("bomb.jpg") && message.contains("progressive") && message.contains("MB"),
        "{message}"
    );
    // A real progressive photo goes in, and its thumbnail, made once by a processor, is served
    // from storage to three requests at once.
    let photo = progressive_photo(3000, 2000);
    let (status, _, sent) =
        send_prepared_photo(&serve.base, &event, guest, "IMG_0001.JPG", photo).await;
    assert_eq!(status, StatusCode::CREATED, "{sent}");
    let photo_id = sent["photos"][0]["id"].as_str().unwrap();
    let id = event["id"].as_str().unwrap();
    let url = format!(
        "{}/api/v1/events/{id}/photos/{photo_id}/thumbnail",
        serve.base
    );
    let fetch = || async {
        let res = from(guest, no_redirect_client().get(&url))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        res.bytes().await.unwrap()
    };
    let (a, b, c) = tokio::join!(fetch(), fetch(), fetch());
    assert!(a == b && b == c);
    let thumbnail = image::load_from_memory(&a).unwrap();
    assert_eq!((thumbnail.width(), thumbnail.height()), (320, 320));
    let added = serve.peak().saturating_sub(before);
    eprintln!(
        "the progressive bomb and a photo added {} MiB to the peak",
        added >> 20
    );
    assert!(added < MOST_ADDED, "added {} MiB", added >> 20);
}

fn guest_settings() -> tessera_web::web_settings::WebSettings {
    let mut settings = test_settings();
    settings.guests.photo_burst_per_address = 8;
    settings.guests.photos_per_minute_per_address = 60;
    settings.max_library_files = 6;
    settings
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fresh_client_ids_pass_neither_the_events_cap_nor_the_addresss_rate() {
    let app = spawn_app_with(guest_settings(), false).await;
    let base = app.url("");
    let base = base.trim_end_matches('/');
    let owner = Uuid::new_v4();
    let capped = make_event(base, owner, &[("max_photos", "5"), ("per_guest", "2")]).await;
    assert_eq!(capped["settings"]["max_photos"], 5, "{capped}");
    let mut statuses = Vec::new();
    for i in 0..8 {
        let (status, _, body) =
            send_photo(base, &capped, Uuid::new_v4(), "p.png", coloured_photo(i)).await;
        if status != StatusCode::CREATED {
            assert_eq!(body["error"]["code"], "event_photo_limit", "{body}");
            assert!(
                body["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("takes 0 more"),
                "{body}"
            );
        }
        statuses.push(status.as_u16());
    }
    assert_eq!(statuses, [201, 201, 201, 201, 201, 422, 422, 422]);
    // The address's burst of 8 holds across events: 5 are spent, 3 more pass, then 429.
    let open = make_event(base, owner, &[]).await;
    assert_eq!(open["settings"]["max_photos"], 5000, "{open}");
    let mut passed = 0;
    let (status, retry, body) = loop {
        let sent = send_photo(base, &open, Uuid::new_v4(), "p.png", coloured_photo(passed)).await;
        if sent.0 != StatusCode::CREATED {
            break sent;
        }
        passed += 1;
        assert!(passed < 20, "no rate");
    };
    assert_eq!(passed, 3);
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{body}");
    assert_eq!(body["error"]["code"], "too_many_photos", "{body}");
    assert!(retry.is_some_and(|s| s.parse::<u64>().unwrap() >= 1));
    // The owner may raise the cap, within its range.
    let id = capped["id"].as_str().unwrap();
    let res = from(
        owner,
        app.client.patch(app.url(&format!("/api/v1/events/{id}"))),
    )
    .json(&serde_json::json!({"max_photos": 0}))
    .send()
    .await
    .unwrap();
    assert_eq!(error_code(res).await.1, "out_of_range");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_events_mosaic_is_held_to_a_librarys_file_cap() {
    let mut settings = guest_settings();
    settings.guests.photo_burst_per_address = 100;
    let app = spawn_app_with(settings, true).await;
    let base = app.url("");
    let base = base.trim_end_matches('/');
    let owner = Uuid::new_v4();
    let event = make_event(base, owner, &[("approval", "false")]).await;
    for i in 0..7 {
        let (status, _, body) =
            send_prepared_photo(base, &event, Uuid::new_v4(), "p.png", coloured_photo(i)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let id = event["id"].as_str().unwrap();
    let res = from(
        owner,
        app.client
            .post(app.url(&format!("/api/v1/events/{id}/mosaic"))),
    )
    .send()
    .await
    .unwrap();
    assert_refused(res, StatusCode::UNPROCESSABLE_ENTITY, "too_many_files").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_per_owner_and_per_address_are_capped() {
    let mut settings = test_settings();
    settings.guests.max_events_per_owner = 2;
    settings.guests.events_per_hour_per_address = 3;
    let app = spawn_app_with(settings, false).await;
    let base = app.url("");
    let base = base.trim_end_matches('/');
    let owner = Uuid::new_v4();
    make_event(base, owner, &[]).await;
    make_event(base, owner, &[]).await;
    let form = Form::new()
        .text("name", "A third")
        .part("image", Part::bytes(astronaut()).file_name("us.png"));
    let res = from(owner, app.client.post(app.url("/api/v1/events")))
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_refused(res, StatusCode::TOO_MANY_REQUESTS, "too_many_events").await;
    // A fresh client id from the same address: one more, then the address's hour is spent.
    make_event(base, Uuid::new_v4(), &[]).await;
    let form = Form::new()
        .text("name", "A fourth")
        .part("image", Part::bytes(astronaut()).file_name("us.png"));
    let res = from(Uuid::new_v4(), app.client.post(app.url("/api/v1/events")))
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert!(res.headers().contains_key("retry-after"));
    assert_refused(res, StatusCode::TOO_MANY_REQUESTS, "too_many_events").await;
}

/// A 64 x 64 PNG of noise around a colour of its own.
fn grainy_png(i: u32) -> Vec<u8> {
    let mut x = u64::from(i) * 0x9E37_79B9 + 1;
    let img = image::RgbImage::from_fn(64, 64, |_, _| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let n = (x % 48) as u8;
        image::Rgb([(i % 200) as u8 + n, (i / 8 % 200) as u8 + n, 100 + n])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

/// Bytes stored under library `id` (its record, versions and parts).
async fn stored_bytes(app: &TestApp, id: &str) -> u64 {
    use tessera_shared::storage::BlobStoreExt;
    app.platform
        .blobs
        .list_all(&tessera_shared::keys::BlobKey::library_prefix(id))
        .await
        .unwrap()
        .iter()
        .map(|m| m.size)
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eight_one_tile_edits_store_the_parts_they_change_not_copies() {
    let app = spawn_app_with(test_settings(), false).await;
    // 1,500 photos of grain, as real photos have: an index of about 18 MB (64 px renditions).
    let tiles: Vec<(String, Vec<u8>)> = (0..1500)
        .map(|i| (format!("t{i:04}.png"), grainy_png(i)))
        .collect();
    let entries: Vec<(&str, Vec<u8>)> =
        tiles.iter().map(|(n, b)| (n.as_str(), b.clone())).collect();
    let form = Form::new().text("name", "Edited often").part(
        "files",
        Part::bytes(zip_of(&entries)).file_name("tiles.zip"),
    );
    let res = app.post_library(form).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let created: Value = res.json().await.unwrap();
    let index = created["library"]["index_bytes"].as_u64().unwrap();
    assert!(index > 10 << 20, "{index} bytes");
    let id = "edited-often";
    let first = stored_bytes(&app, id).await;
    assert!(
        first < index + index / 50,
        "{first} stored for an index of {index}"
    );
    for i in 0..8 {
        let res = app
            .client
            .delete(app.url(&format!(
                "/api/v1/libraries/{id}/tiles?name=t{:04}.png",
                i * 150
            )))
            .header("X-Client-Id", &app.owner)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{:?}", res.text().await);
    }
    let after = stored_bytes(&app, id).await;
    let added = after.saturating_sub(first);
    eprintln!(
        "an index of {} MiB; eight one-tile edits added {} KiB (copies would add {} MiB)",
        index >> 20,
        added >> 10,
        (8 * index) >> 20
    );
    // Each edit changes the parts around the tile it takes out; the versions no job needs
    // went at once, so what stays is the current version and the one before it.
    assert!(added < index / 2, "eight edits added {added} bytes");
    let library: Value = app.get_library(id).await.json().await.unwrap();
    assert_eq!(library["version"], 9, "{library}");
    assert_eq!(library["tiles"], 1492, "{library}");
    // The current version reads back whole from its parts; the first is gone.
    let catalog = app.platform.libraries();
    let at = |version| tessera_shared::messages::LibraryRef {
        id: id.to_string(),
        version,
    };
    let index = catalog.index(&at(9)).await.unwrap();
    let read = tessera_engine::Library::from_vec(index.to_vec()).unwrap();
    assert_eq!(read.len(), 1492);
    assert!(!read.names().iter().any(|n| n == "t0150.png"));
    assert!(catalog.index(&at(1)).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_reads_no_other_guests_names_in_the_mosaic() {
    let app = spawn_app().await;
    let base = app.url("");
    let base = base.trim_end_matches('/');
    let owner = Uuid::new_v4();
    let event = make_event(base, owner, &[("approval", "false")]).await;
    let (alice, bob) = (Uuid::new_v4(), Uuid::new_v4());
    for i in 0..6 {
        let (guest, name) = if i < 3 {
            (alice, "alice")
        } else {
            (bob, "bob")
        };
        let name = format!("{name}-{i}.png");
        let (status, _, body) =
            send_prepared_photo(base, &event, guest, &name, coloured_photo(i)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let id = event["id"].as_str().unwrap();
    let token = event["contribute_token"].as_str().unwrap();
    let res = from(
        owner,
        app.client
            .post(app.url(&format!("/api/v1/events/{id}/mosaic"))),
    )
    .send()
    .await
    .unwrap();
    let job: Value = res.json().await.unwrap();
    let job = job["job"].as_str().unwrap().to_string();
    let owners = [("X-Client-Id", owner.to_string())];
    let owners: Vec<(&str, &str)> = owners.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let view = app.wait_until_finished_with(&job, &owners).await;
    assert_eq!(view["state"], "done", "{view}");
    // Someone with only the job's id reads nothing of it.
    let stranger = app.get(&format!("/api/v1/jobs/{job}/placements")).await;
    assert_eq!(stranger.status(), StatusCode::FORBIDDEN);
    // The owner sees every photo by name.
    let all: Value = app
        .get_with(&format!("/api/v1/jobs/{job}/placements"), &owners)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(all["tiles"].as_array().unwrap().len(), 6, "{all}");
    // Bob, a guest with the link, sees his three and nobody else's names, ids or pictures.
    let bobs = [
        ("X-Client-Id", bob.to_string()),
        ("X-Share-Token", token.to_string()),
    ];
    let bobs: Vec<(&str, &str)> = bobs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let seen = app
        .get_with(&format!("/api/v1/jobs/{job}/placements"), &bobs)
        .await
        .text()
        .await
        .unwrap();
    assert!(!seen.contains("alice"), "{seen}");
    let seen: Value = serde_json::from_str(&seen).unwrap();
    let mut captions: Vec<&str> = seen["tiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["caption"].as_str().unwrap())
        .collect();
    captions.sort();
    assert_eq!(captions, ["bob-3.png", "bob-4.png", "bob-5.png"]);
    let alices: Vec<&Value> = all["tiles"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["caption"].as_str().unwrap().starts_with("alice"))
        .collect();
    let [row, col] = [&alices[0]["cells"][0][0], &alices[0]["cells"][0][1]];
    let cell: Value = app
        .get_with(&format!("/api/v1/jobs/{job}/cells/{row}/{col}"), &bobs)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(cell["name"], "", "{cell}");
    assert!(!cell.to_string().contains("alice"), "{cell}");
    let picture = app
        .get_with(
            &format!("/api/v1/jobs/{job}/cells/{row}/{col}/picture"),
            &bobs,
        )
        .await;
    assert_eq!(picture.status(), StatusCode::FORBIDDEN);
}
