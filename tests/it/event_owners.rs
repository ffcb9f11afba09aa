//! The owner in control of an event's photos at a campaign's scale: a classifier's verdicts
//! through the queue, pages of photos by state and guest, a consent line kept with each photo,
//! and the photos gone once the event has been closed for its retention.

use std::collections::HashMap;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::Value;
use tessera_shared::messages::PhotoReview;
use tessera_shared::storage::BlobStoreExt;
use uuid::Uuid;

use crate::support::*;

/// The test settings with the guests' rates lifted.
fn owners_settings() -> tessera_web::web_settings::WebSettings {
    let mut settings = test_settings();
    settings.guests.photos_per_minute_per_address = 0;
    settings.guests.photos_per_minute_per_event = 0;
    settings
}

fn photo(i: usize) -> Vec<u8> {
    crate::photos::camera_jpeg(96, 72, (i * 7 % 250) as u8)
}

async fn owners_view(app: &TestApp, owner: Uuid, event: &str) -> Value {
    app.get_with(
        &format!("/api/v1/events/{event}"),
        &[("X-Client-Id", &owner.to_string())],
    )
    .await
    .json()
    .await
    .unwrap()
}

/// The photos of `event` by name, as its owner sees them.
async fn photos_by_name(app: &TestApp, owner: Uuid, event: &str) -> HashMap<String, Value> {
    let view = owners_view(app, owner, event).await;
    view["photos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap().to_string(), p.clone()))
        .collect()
}

/// The `photoreview` messages of `count` photos, taken off the queue as a classifier takes
/// them.
async fn offered(app: &TestApp, count: usize) -> Vec<PhotoReview> {
    let queue = app.platform.queue::<PhotoReview>();
    let mut reviews: HashMap<Uuid, PhotoReview> = HashMap::new();
    let mut poll = Poll::new(Duration::from_secs(60));
    while reviews.len() < count {
        let got = app
            .platform
            .queues
            .receive("photoreview", 16, Duration::from_secs(60))
            .await
            .unwrap();
        for message in got {
            let review = queue.decode(&message.body).await.unwrap().envelope.body;
            app.platform
                .queues
                .delete("photoreview", &message.id, &message.pop_receipt)
                .await
                .unwrap();
            reviews.insert(review.photo_id, review);
        }
        if reviews.len() < count {
            let seen = reviews.len();
            poll.again(|| format!("{seen} of {count} photos offered"))
                .await;
        }
    }
    reviews.into_values().collect()
}

/// Three photos of an event that goes without approval but asks its classifier: each waits,
/// offered on `photoreview`; the verdicts come through the API with the message's token: the
/// approved one is in the mosaic, the held one waits for the owner with the reason and is in
/// no mosaic, the rejected one is left out. A wrong token changes nothing, and a verdict given
/// again changes nothing.
async fn a_classifiers_verdict_keeps_a_held_photo_off_the_mosaic(app: &TestApp) {
    let owner = Uuid::new_v4();
    let fields = [("approval", "false"), ("review", "true")];
    let event = make_event(app, owner, astronaut(), &fields).await;
    let id = event["id"].as_str().unwrap();
    let guest = Uuid::new_v4();
    let files = ["fine.jpg", "doubtful.jpg", "unfit.jpg"]
        .iter()
        .enumerate()
        .map(|(i, n)| (*n, photo(i * 30)))
        .collect();
    let (status, sent) = send_photos(app, &event, guest, files, &[]).await;
    assert_eq!(status, StatusCode::CREATED, "{sent}");
    let names: HashMap<String, String> = sent["photos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let id = p["id"].as_str().unwrap().to_string();
            (id, p["name"].as_str().unwrap().to_string())
        })
        .collect();
    let reviews = offered(app, 3).await;
    // Until the verdicts come, every photo waits, shown to the owner as waiting for one.
    let before = photos_by_name(app, owner, id).await;
    for photo in before.values() {
        assert_eq!(photo["state"], "waiting", "{photo}");
        assert!(
            photo["review"].is_object() && photo["review"]["verdict"].is_null(),
            "{photo}"
        );
    }
    let verdict = |review: &PhotoReview, token: &str, body: Value| {
        app.client
            .post(app.url(&review.verdict_path))
            .header("X-Review-Token", token.to_string())
            .json(&body)
            .send()
    };
    let first = &reviews[0];
    let wrong = verdict(first, "wrong", serde_json::json!({"verdict": "approve"}))
        .await
        .unwrap();
    assert_refused(wrong, StatusCode::FORBIDDEN, "bad_review_token").await;
    for review in &reviews {
        assert!(review.photo_blob.ends_with(&review.photo_id.to_string()));
        let body = match names[&review.photo_id.to_string()].as_str() {
            "fine.jpg" => serde_json::json!({"verdict": "approve"}),
            "doubtful.jpg" => {
                serde_json::json!({"verdict": "hold", "reason": "maybe not for a wedding"})
            }
            _ => serde_json::json!({"verdict": "reject", "reason": "violence"}),
        };
        let res = verdict(review, &review.token, body.clone()).await.unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{:?}", res.text().await);
        // Given again (a classifier's retry), nothing changes.
        let again = verdict(
            review,
            &review.token,
            serde_json::json!({"verdict": "approve"}),
        )
        .await
        .unwrap();
        let again: Value = again.json().await.unwrap();
        assert_eq!(again["review"]["verdict"], body["verdict"], "{again}");
    }
    let after = photos_by_name(app, owner, id).await;
    assert_eq!(after["fine.jpg"]["state"], "approved", "{after:?}");
    assert_eq!(after["doubtful.jpg"]["state"], "waiting");
    let held = after["doubtful.jpg"]["held"].as_str().unwrap();
    assert!(held.contains("maybe not for a wedding"), "{held}");
    assert_eq!(after["unfit.jpg"]["state"], "rejected");
    assert_eq!(after["unfit.jpg"]["review"]["reason"], "violence");
    let done = finished_event_mosaic(app, owner, id).await;
    assert_eq!(done["state"], "done", "{done}");
    let placements = app
        .get_placements_with(
            done["id"].as_str().unwrap(),
            &[("X-Client-Id", &owner.to_string())],
        )
        .await;
    let captions: Vec<&str> = placements["tiles"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["caption"].as_str())
        .collect();
    assert_eq!(captions, ["fine.jpg"], "{placements}");
    // The owner's page says why each is not in.
    let page = app
        .get_with(
            &format!("/events/{id}"),
            &[("X-Client-Id", &owner.to_string())],
        )
        .await
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("Held: the classifier: maybe not for a wedding"),
        "{page}"
    );
    assert!(page.contains("Left out by the classifier: violence"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_classifiers_verdict_keeps_a_held_photo_off_the_mosaic_on_the_embedded_store() {
    let app = spawn_app_with(owners_settings(), true).await;
    a_classifiers_verdict_keeps_a_held_photo_off_the_mosaic(&app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_classifiers_verdict_keeps_a_held_photo_off_the_mosaic_on_azurite() {
    let app = spawn_app_on_azurite_with(owners_settings()).await;
    a_classifiers_verdict_keeps_a_held_photo_off_the_mosaic(&app).await;
}

/// 45 photos from three guests: the owner pages through them by state, by guest and oldest
/// first, each page the size asked; a wrong filter is a clear 400, and a guest cannot list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_pages_through_photos_by_state_and_guest() {
    let app = spawn_app_with(owners_settings(), true).await;
    let owner = Uuid::new_v4();
    let event = make_event(&app, owner, astronaut(), &[("per_guest", "0")]).await;
    let id = event["id"].as_str().unwrap();
    let guests = [Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4()];
    let mut sent_by: HashMap<Uuid, Vec<String>> = HashMap::new();
    for (g, guest) in guests.iter().enumerate() {
        let files: Vec<(String, Vec<u8>)> = (0..15)
            .map(|i| (format!("g{g}-{i:02}.jpg"), photo(g * 15 + i)))
            .collect();
        let files = files.iter().map(|(n, b)| (n.as_str(), b.clone())).collect();
        let (_, sent) = send_photos(&app, &event, *guest, files, &[]).await;
        for p in sent["photos"].as_array().unwrap() {
            sent_by
                .entry(*guest)
                .or_default()
                .push(p["id"].as_str().unwrap().to_string());
        }
    }
    // Ten of the first guest's in.
    let res = app
        .client
        .post(app.url(&format!("/api/v1/events/{id}/decisions")))
        .header("X-Client-Id", owner.to_string())
        .json(&serde_json::json!({"state": "approved", "photos": sent_by[&guests[0]][..10]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let list = |query: String| {
        let app = &app;
        async move {
            let res = app
                .get_with(
                    &format!("/api/v1/events/{id}/photos?{query}"),
                    &[("X-Client-Id", &owner.to_string())],
                )
                .await;
            let status = res.status();
            (status, res.json::<Value>().await.unwrap())
        }
    };
    let (status, all) = list("limit=20".into()).await;
    assert_eq!(status, StatusCode::OK, "{all}");
    assert_eq!(all["total"], 45, "{all}");
    assert_eq!(all["photos"].as_array().unwrap().len(), 20);
    let (_, waiting) = list("state=waiting&limit=30".into()).await;
    assert_eq!(waiting["total"], 35, "{waiting}");
    let (_, last) = list("state=waiting&limit=30&offset=30".into()).await;
    assert_eq!(last["photos"].as_array().unwrap().len(), 5, "{last}");
    let contributor = all["photos"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"].as_str().unwrap().starts_with("g2-"))
        .map(|p| p["contributor"].as_str().unwrap().to_string())
        .unwrap();
    let (_, theirs) = list(format!("guest={contributor}&order=oldest")).await;
    let names: Vec<&str> = theirs["photos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = (0..15).map(|i| format!("g2-{i:02}.jpg")).collect();
    assert_eq!(names, expected, "oldest first, only theirs");
    let (_, approved) = list("state=approved".into()).await;
    assert_eq!(approved["total"], 10, "{approved}");
    for (query, field) in [
        ("state=lost", "state"),
        ("order=random", "order"),
        ("limit=0", "limit"),
        ("limit=501", "limit"),
        ("offset=-1", "offset"),
        ("guest=someone", "guest"),
    ] {
        let (status, body) = list(query.into()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{query}: {body}");
        assert_eq!(body["error"]["field"], field, "{query}: {body}");
    }
    let stranger = app
        .get_with(
            &format!("/api/v1/events/{id}/photos"),
            &[("X-Client-Id", &guests[0].to_string())],
        )
        .await;
    assert_eq!(stranger.status(), StatusCode::FORBIDDEN);
    // The owner's page: the waiting ones a page at a time, with the way to the next.
    let page = app
        .get_with(
            &format!("/events/{id}?state=waiting&limit=20"),
            &[("X-Client-Id", &owner.to_string())],
        )
        .await
        .text()
        .await
        .unwrap();
    assert!(page.contains("Waiting for you (35)"), "{page}");
    assert!(page.contains("rel=\"next\""), "{page}");
    assert_eq!(page.matches("class=\"pick\"").count(), 20);
    assert!(page.contains("Photos 1 to 20 of 35"), "{page}");
}

/// An event with a consent line: a guest who does not agree is refused with the reason and
/// nothing is kept; one who agrees has the words recorded with each photo, and the contribute
/// page asks for them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_consent_line_is_agreed_to_and_kept_with_each_photo() {
    let app = spawn_app_with(owners_settings(), true).await;
    let owner = Uuid::new_v4();
    let words = "I agree that my photo may be shown on the wall and in the mosaic.";
    let event = make_event(&app, owner, astronaut(), &[("consent", words)]).await;
    assert_eq!(event["settings"]["consent"], words);
    let id = event["id"].as_str().unwrap();
    let guest = Uuid::new_v4();
    let (status, body) =
        send_photos_received(&app, &event, guest, vec![("a.jpg", photo(1))], &[]).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["code"], "consent_required", "{body}");
    let (status, _) = send_photos_received(
        &app,
        &event,
        guest,
        vec![("a.jpg", photo(1))],
        &[("consent", "maybe")],
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(owners_view(&app, owner, id).await["counts"]["received"], 0);
    let (status, body) = send_photos(
        &app,
        &event,
        guest,
        vec![("a.jpg", photo(1))],
        &[("consent", "true")],
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let photos = photos_by_name(&app, owner, id).await;
    assert_eq!(photos["a.jpg"]["consent"], words);
    let token = event["contribute_token"].as_str().unwrap();
    let page = app
        .get(&format!("/events/{id}/contribute?token={token}"))
        .await
        .text()
        .await
        .unwrap();
    assert!(
        page.contains("id=\"consent\"") && page.contains(words),
        "{page}"
    );
}

/// An event closed with a retention of no days: the sweep takes its guests' photos, their
/// thumbnails, tiles, records and markers, its library and its mosaics' cell maps; the event
/// keeps its record (marked erased) and its target, and the mosaic its pixels.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_removes_an_ended_events_photos() {
    use tessera_shared::lifecycle::{GcOptions, collect_garbage};
    let app = spawn_app_with(owners_settings(), true).await;
    let owner = Uuid::new_v4();
    let fields = [("approval", "false"), ("retention_days", "0")];
    let event = make_event(&app, owner, astronaut(), &fields).await;
    let id = event["id"].as_str().unwrap();
    let eid: Uuid = id.parse().unwrap();
    let files = (0..4).map(|i| ("p.jpg", photo(i * 40))).collect();
    send_photos(&app, &event, Uuid::new_v4(), files, &[]).await;
    let done = finished_event_mosaic(&app, owner, id).await;
    assert_eq!(done["state"], "done", "{done}");
    let job: Uuid = done["id"].as_str().unwrap().parse().unwrap();
    let options = GcOptions {
        retention: None,
        keep_inputs: false,
        grace: Duration::from_secs(3600),
    };
    // Open, nothing goes.
    let swept = collect_garbage(&app.platform, options).await.unwrap();
    assert_eq!(swept.events_erased, 0);
    let res = app
        .client
        .patch(app.url(&format!("/api/v1/events/{id}")))
        .header("X-Client-Id", owner.to_string())
        .json(&serde_json::json!({"open": false}))
        .send()
        .await
        .unwrap();
    let closed: Value = res.json().await.unwrap();
    assert!(closed["photos_go_at"].is_string(), "{closed}");
    let swept = collect_garbage(&app.platform, options).await.unwrap();
    assert_eq!(swept.events_erased, 1, "{swept:?}");
    use tessera_shared::keys::BlobKey;
    let blobs = &app.platform.blobs;
    let mut left: Vec<String> = blobs
        .list_all(&format!("events/{id}/"))
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.key)
        .collect();
    left.sort();
    let mut kept = vec![
        BlobKey::EventRecord { event: eid }.path(),
        BlobKey::EventTarget { event: eid }.path(),
    ];
    kept.sort();
    assert_eq!(left, kept, "the event keeps its record and target only");
    let library = format!("event-{id}");
    assert!(
        blobs
            .list_all(&BlobKey::library_prefix(&library))
            .await
            .unwrap()
            .is_empty()
            || app.platform.libraries().get(&library).await.is_err(),
        "the event's library is gone"
    );
    let cell_map = BlobKey::CellMap { job }.path();
    assert!(blobs.get(&cell_map).await.is_err(), "the cell map is gone");
    let view = owners_view(&app, owner, id).await;
    assert!(view["photos_erased_at"].is_string(), "{view}");
    assert_eq!(view["counts"]["approved"], 0, "{view}");
    // The mosaic keeps its pixels.
    let result = app
        .get_result(&job.to_string(), &[("X-Client-Id", &owner.to_string())])
        .await;
    assert_eq!(result.status(), StatusCode::OK);
}

/// Records `count` prepared photos waiting in `event`, from 50 guests, each with a thumbnail:
/// what 5,000 guests' photos leave in storage once the processors have prepared them.
async fn photos_waiting(app: &TestApp, event: Uuid, count: usize) {
    use futures_util::stream::{self, StreamExt};
    use tessera_shared::events::{EventPhoto, PhotoState};
    use tessera_shared::owner::Owner;
    let events = app.platform.events();
    let thumbnail = bytes::Bytes::from(crate::photos::camera_jpeg(120, 120, 90));
    let guests: Vec<Owner> = (0..50).map(|_| Owner::client(Uuid::new_v4())).collect();
    let made: Vec<_> = stream::iter(0..count)
        .map(|i| {
            let (events, thumbnail, guest) = (&events, thumbnail.clone(), &guests[i % 50]);
            async move {
                let photo = EventPhoto {
                    id: Uuid::new_v4(),
                    name: format!("IMG_{i:04}.jpg"),
                    contributor: guest.clone(),
                    state: PhotoState::Waiting,
                    extension: "jpg".into(),
                    colour: Some([(i % 256) as u8, 120, 200]),
                    guest_name: Some(format!("Fan {}", i % 50)),
                    added_at: time::OffsetDateTime::now_utc(),
                    prepared: true,
                    unreadable: None,
                    slot: None,
                    likeness: None,
                    held: None,
                    review: None,
                    consent: None,
                    cell: None,
                };
                events
                    .claim_slots(event, guest, &[photo.id], 0)
                    .await
                    .unwrap()
                    .unwrap();
                events
                    .put_thumbnail(event, photo.id, thumbnail)
                    .await
                    .unwrap();
                events.add_photo(event, &photo).await.unwrap();
            }
        })
        .buffer_unordered(32)
        .collect()
        .await;
    assert_eq!(made.len(), count);
}

/// The owner's page of an event of 5,000 photos on a 390 x 844 phone: the first screen is
/// drawn within 2 s (the browser's own timing), a filter shows the waiting ones a page at a
/// time and one guest's alone, and one tap puts every waiting photo in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_page_of_five_thousand_photos_on_a_phone() {
    use crate::browser::{click, in_chromium_phone_of, screenshot, script, wait_for};
    let app = spawn_app_with(owners_settings(), true).await;
    let owner = Uuid::new_v4();
    let fields = [("per_guest", "0"), ("max_photos", "10000")];
    let event = make_event(&app, owner, astronaut(), &fields).await;
    let id = event["id"].as_str().unwrap().to_string();
    photos_waiting(&app, id.parse().unwrap(), 5000).await;
    let profile = tempfile::tempdir().unwrap();
    let (base, client) = (app.address.clone(), app.client.clone());
    in_chromium_phone_of((390, 844), profile.path(), move |browser| async move {
        let browser = &browser;
        browser.goto(&format!("{base}/healthz")).await.unwrap();
        let cookie = format!("document.cookie = 'tessera_client={owner}; path=/'");
        script(browser, &cookie).await;
        browser.goto(&format!("{base}/events/{id}")).await.unwrap();
        let first = wait_for(
            browser,
            "const n = performance.getEntriesByType('navigation')[0]; \
             const paint = performance.getEntriesByName('first-contentful-paint')[0]; \
             return document.getElementById('event').dataset.ready && paint && n.loadEventEnd > 0 \
               ? [paint.startTime, n.domContentLoadedEventEnd, \
                  document.querySelectorAll('.event-photos li').length, \
                  document.getElementById('group-waiting').textContent] : null",
            Duration::from_secs(30),
            "the owner's page",
        )
        .await;
        eprintln!("first contentful paint, DOM ready (ms), photos shown: {first}");
        assert!(first[0].as_f64().unwrap() < 2000.0, "first screen: {first}");
        assert!(first[1].as_f64().unwrap() < 2000.0, "DOM ready: {first}");
        assert!(first[3].as_str().unwrap().contains("(5000)"), "{first}");
        let shown = first[2].as_u64().unwrap();
        assert!((1..=60).contains(&shown), "a page's photos, not 5,000: {first}");
        let wide = script(browser, "return document.documentElement.scrollWidth <= innerWidth").await;
        assert_eq!(wide, true, "the page is wider than the phone");
        screenshot(browser, "event-owner-5000.png").await;

        // The filter: the waiting ones alone, a page at a time.
        script(
            browser,
            "const s = document.getElementById('filter-state'); s.value = 'waiting'; \
             s.dispatchEvent(new Event('change')); return true",
        )
        .await;
        let paged = wait_for(
            browser,
            "return location.search.includes('state=waiting') && document.getElementById('event').dataset.ready \
               ? [document.querySelectorAll('.event-photos li').length, !!document.querySelector('a.page-next'), \
                  document.querySelector('.pages').textContent] : null",
            Duration::from_secs(20),
            "the waiting photos alone",
        )
        .await;
        assert_eq!(paged[0], 60, "{paged}");
        assert_eq!(paged[1], true, "{paged}");
        assert!(paged[2].as_str().unwrap().contains("1 to 60 of 5000"), "{paged}");
        // One guest's alone.
        click(browser, ".event-photos li a.guest-name").await;
        let theirs = wait_for(
            browser,
            "return location.search.includes('guest=') && document.getElementById('event').dataset.ready \
               ? [document.getElementById('group-waiting').textContent, \
                  new Set(Array.from(document.querySelectorAll('.guest-name')).map(a => a.textContent)).size] : null",
            Duration::from_secs(20),
            "one guest's photos",
        )
        .await;
        assert!(theirs[0].as_str().unwrap().contains("(100)"), "{theirs}");
        assert_eq!(theirs[1], 1, "{theirs}");

        // Every waiting photo put in with one tap.
        browser.goto(&format!("{base}/events/{id}")).await.unwrap();
        wait_for(browser, "return document.getElementById('event').dataset.ready || null", Duration::from_secs(20), "the page again").await;
        script(browser, "window.confirm = () => true; return true").await;
        click(browser, "button[data-every=waiting]").await;
        let done = wait_for(
            browser,
            "const s = document.getElementById('act-status').textContent; return s.startsWith('Done') || s.startsWith('Not') ? s : null",
            Duration::from_secs(120),
            "every waiting photo put in",
        )
        .await;
        assert!(done.as_str().unwrap().contains("5000 photos put in"), "{done}");
        let view: Value = client
            .get(format!("{base}/api/v1/events/{id}"))
            .header("X-Client-Id", owner.to_string())
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(view["counts"]["approved"], 5000, "{}", view["counts"]);
        assert_eq!(view["counts"]["waiting"], 0, "{}", view["counts"]);
    })
    .await;
}
