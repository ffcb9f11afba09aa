//! Guests as they are at a wedding: a batch with a PDF among the photos, a camera's RAW file,
//! more photos than the cap leaves, and two guests whose phones named their photos alike. Each
//! file is taken or refused on its own, with its reason in words; two photos of one name are
//! two photos, each found by its own tile.

use reqwest::StatusCode;
use serde_json::Value;
use uuid::Uuid;

use crate::support::*;

/// An event of the astronaut, with a small grid so its mosaics are quick.
async fn event_of(app: &TestApp, owner: Uuid, fields: &[(&str, &str)]) -> Value {
    let mut all = vec![("cells", "16"), ("tile_size", "8")];
    all.extend_from_slice(fields);
    make_event(app, owner, astronaut(), &all).await
}

async fn send(
    app: &TestApp,
    event: &Value,
    guest: Uuid,
    files: Vec<(&str, Vec<u8>)>,
) -> (StatusCode, Value) {
    send_photos(app, event, guest, files, &[]).await
}

fn photo(i: u8) -> Vec<u8> {
    crate::photos::camera_jpeg(320, 240, i.wrapping_mul(40))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_is_taken_photo_by_photo_with_each_refusal_in_words() {
    let app = spawn_app_with(test_settings(), false).await;
    let event = event_of(&app, Uuid::new_v4(), &[("per_guest", "8")]).await;
    let guest = Uuid::new_v4();
    // Seven photos, a PDF and a RAW file from a camera (a DNG is a TIFF inside).
    let mut files: Vec<(String, Vec<u8>)> = (0..7)
        .map(|i| (format!("IMG_{i:04}.JPG"), photo(i)))
        .collect();
    files.push((
        "invitation.pdf".into(),
        b"%PDF-1.7\n% a wedding invitation\n".to_vec(),
    ));
    let dng = [&b"II*\0\x08\0\0\0"[..], &[0; 64]].concat();
    files.push(("IMG_0100.DNG".into(), dng));
    let batch = files.iter().map(|(n, b)| (n.as_str(), b.clone())).collect();
    let (status, body) = send(&app, &event, guest, batch).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["photos"].as_array().unwrap().len(), 7, "{body}");
    let refused = body["refused"].as_array().unwrap();
    assert_eq!(refused.len(), 2, "{body}");
    let reason = |name: &str| {
        refused
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("{name} not refused: {body}"))["reason"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(reason("invitation.pdf").contains("PDF document"), "{body}");
    assert!(reason("IMG_0100.DNG").contains("camera RAW"), "{body}");

    // One left under the cap of 8: a batch of three says to choose one.
    let batch = (10..13).map(|i| ("more.jpg", photo(i))).collect();
    let (status, body) = send(&app, &event, guest, batch).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["code"], "guest_photo_limit", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("choose 1 or fewer"), "{message}");
    // A batch of nothing usable is refused, each file's reason given.
    let (status, body) = send(
        &app,
        &event,
        guest,
        vec![("notes.pdf", b"%PDF-1.4".to_vec())],
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("notes.pdf is a PDF document"),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_guests_photos_of_one_file_name_are_two_photos_found_apart() {
    let app = spawn_app().await;
    let owner = Uuid::new_v4();
    let event = event_of(&app, owner, &[("approval", "false")]).await;
    let (ann, bea) = (Uuid::new_v4(), Uuid::new_v4());
    let (_, sent_a) = send(&app, &event, ann, vec![("IMG_1100.JPG", photo(1))]).await;
    let (_, sent_b) = send(&app, &event, bea, vec![("IMG_1100.JPG", photo(5))]).await;
    let (a, b) = (&sent_a["photos"][0], &sent_b["photos"][0]);
    assert_ne!(a["tile"], b["tile"], "{sent_a} {sent_b}");
    let id = event["id"].as_str().unwrap();
    let done = finished_event_mosaic(&app, owner, id).await;
    assert_eq!(done["state"], "done", "{done}");
    let job = done["id"].as_str().unwrap();
    // Each guest, through the link, finds their own photo by its tile, and only theirs.
    let token = event["contribute_token"].as_str().unwrap();
    for (guest, mine, theirs) in [(ann, a, b), (bea, b, a)] {
        let headers = [
            ("X-Client-Id", guest.to_string()),
            ("X-Share-Token", token.to_string()),
        ];
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let tile = mine["tile"].as_str().unwrap();
        let found: Value = app
            .get_with(&format!("/api/v1/jobs/{job}/placements?q={tile}"), &headers)
            .await
            .json()
            .await
            .unwrap();
        let tiles = found["tiles"].as_array().unwrap();
        assert_eq!(tiles.len(), 1, "{found}");
        assert_eq!(tiles[0]["name"], mine["tile"], "{found}");
        assert_ne!(tiles[0]["name"], theirs["tile"], "{found}");
    }
}

/// The couple on a phone (390 x 844), without the API: "New event" from the home page, their
/// photo and a name, then the event's page with the guests' link; "My events" lists it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_couple_makes_an_event_from_the_home_page() {
    use crate::browser::{click, in_chromium_phone_of, screenshot, wait_for};
    use std::time::Duration;

    let app = spawn_app().await;
    let work = tempfile::tempdir().unwrap();
    let target = work.path().join("us.jpg");
    std::fs::write(&target, crate::photos::camera_jpeg(1600, 1200, 30)).unwrap();
    let target = target.display().to_string();
    let profile = work.path().join("profile");
    std::fs::create_dir(&profile).unwrap();
    let base = app.address.clone();
    in_chromium_phone_of((390, 844), &profile, move |browser| async move {
        let browser = &browser;
        browser.goto(&format!("{base}/")).await.unwrap();
        click(browser, "nav a[href='/events/new']").await;
        wait_for(
            browser,
            "return document.getElementById('event-form') ? true : null",
            Duration::from_secs(20),
            "the new event form",
        )
        .await;
        let input = browser
            .find(fantoccini::Locator::Id("image"))
            .await
            .unwrap();
        input.send_keys(&target).await.unwrap();
        let name = browser
            .find(fantoccini::Locator::Id("name"))
            .await
            .unwrap();
        name.send_keys("Anna and Tom").await.unwrap();
        screenshot(browser, "new-event.png").await;
        click(browser, "#make-event").await;
        let page = wait_for(
            browser,
            "return /^\\/events\\/[0-9a-f-]{36}$/.test(location.pathname) && \
             document.getElementById('event') ? location.pathname : null",
            Duration::from_secs(30),
            "the event's page",
        )
        .await;
        let link = crate::browser::script(
            browser,
            "return document.body.textContent.includes('/contribute?token=')",
        )
        .await;
        assert_eq!(link, true, "the guests' link on the event's page");
        browser.goto(&format!("{base}/events")).await.unwrap();
        let listed = crate::browser::script(
            browser,
            "return Array.from(document.querySelectorAll('#events a')).map(a => a.getAttribute('href'))",
        )
        .await;
        assert!(
            listed.as_array().unwrap().contains(&page),
            "{listed} lacks {page}"
        );
        screenshot(browser, "my-events.png").await;
    })
    .await;
    drop(app);
}
