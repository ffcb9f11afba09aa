//! Events: four guests send ten photos each through the contribute link, the owner approves 38
//! and leaves out 2, and the mosaic holds exactly the 38, each at least once, named as their
//! guests sent them; a guest takes one back and the next mosaic lacks it, every other cell keeping
//! its photo, and the job says how many cells changed. Only the owner
//! moderates, only a photo's guest (or the owner) takes it out, and the link's token is needed.

use std::collections::BTreeMap;

use reqwest::StatusCode;
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::support::*;

/// A request from the client `client` (a browser's id, as `X-Client-Id`).
fn from(client: Uuid, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    request.header("X-Client-Id", client.to_string())
}

async fn json_of(res: reqwest::Response, expected: StatusCode) -> Value {
    let status = res.status();
    let body: Value = res.json().await.unwrap_or(Value::Null);
    assert_eq!(status, expected, "{body}");
    body
}

/// The tiles' captions of a finished job's placements, sorted.
/// Headers that make a request the owner's (an event's mosaics are private to it and its guests).
fn as_client(owner: &str) -> [(&str, &str); 1] {
    [("X-Client-Id", owner)]
}

async fn placed(app: &TestApp, owner: Uuid, job: &str) -> Vec<String> {
    let owner = owner.to_string();
    let placements = app.get_placements_with(job, &as_client(&owner)).await;
    let mut captions: Vec<String> = placements["tiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            assert!(t["uses"].as_u64().unwrap() >= 1, "{t}");
            t["caption"].as_str().unwrap().to_string()
        })
        .collect();
    captions.sort();
    captions
}

/// The event's `n`th mosaic once it is done, made on its own: waits up to 60 s.
async fn wait_for_mosaic(
    app: &TestApp,
    http: &reqwest::Client,
    owner: Uuid,
    event: &str,
    n: usize,
) -> String {
    let job = crate::support::wait_for(std::time::Duration::from_secs(60), async || {
        let res = from(owner, http.get(app.url(&format!("/api/v1/events/{event}"))))
            .send()
            .await
            .unwrap();
        let whole = json_of(res, StatusCode::OK).await;
        let job = whole["mosaics"].as_array().unwrap().get(n - 1).cloned();
        job.ok_or(format!("no mosaic {n} on its own: {whole}"))
    })
    .await;
    let job = job.as_str().unwrap().to_string();
    let done = app
        .wait_until_finished_with(&job, &as_client(&owner.to_string()))
        .await;
    assert_eq!(done["state"], "done", "{done}");
    job
}

/// Each cell's tile caption in a finished job, by its `[row, column]`.
async fn cell_captions(app: &TestApp, owner: Uuid, job: &str) -> BTreeMap<(u64, u64), String> {
    let owner = owner.to_string();
    let placements = app.get_placements_with(job, &as_client(&owner)).await;
    let mut cells = BTreeMap::new();
    for tile in placements["tiles"].as_array().unwrap() {
        for at in tile["cells"].as_array().unwrap() {
            let at = (at[0].as_u64().unwrap(), at[1].as_u64().unwrap());
            cells.insert(at, tile["caption"].as_str().unwrap().to_string());
        }
    }
    cells
}

async fn make_mosaic(app: &TestApp, http: &reqwest::Client, owner: Uuid, event: &str) -> String {
    // Photos still being prepared would join the next mosaic, not this one.
    none_received(app, owner, event).await;
    let res = from(
        owner,
        http.post(app.url(&format!("/api/v1/events/{event}/mosaic"))),
    )
    .send()
    .await
    .unwrap();
    let body = json_of(res, StatusCode::ACCEPTED).await;
    let job = body["job"].as_str().unwrap().to_string();
    let done = app
        .wait_until_finished_with(&job, &as_client(&owner.to_string()))
        .await;
    assert_eq!(done["state"], "done", "{done}");
    job
}

/// An event `name` of owner `owner` on the astronaut, 16 cells across: its owner's view.
async fn create_event(app: &TestApp, http: &reqwest::Client, owner: Uuid, name: &str) -> Value {
    let form = Form::new()
        .text("name", name.to_string())
        .text("cells", "16")
        .text("tile_size", "8")
        // The test photos are made alike: screened, they would be held as near duplicates.
        .text("screen", "false")
        .part("image", Part::bytes(astronaut()).file_name("target.png"));
    let res = from(owner, http.post(app.url("/api/v1/events")))
        .multipart(form)
        .send()
        .await
        .unwrap();
    json_of(res, StatusCode::CREATED).await
}

async fn guests_photos_make_one_mosaic(app: &TestApp) {
    let http = reqwest::Client::new();
    let owner = Uuid::new_v4();
    let event = create_event(app, &http, owner, "Anna and Ben's wedding").await;
    let id = event["id"].as_str().unwrap().to_string();
    let token = event["contribute_token"].as_str().unwrap().to_string();
    assert!(
        event["contribute_url"].as_str().unwrap().contains(&token),
        "{event}"
    );
    // With no photo yet, the wish list asks for the target's colours: about the 30 photos an
    // event counts on at least, spread over its colours.
    let wishes = event["wishlist"].as_array().unwrap();
    assert!(!wishes.is_empty(), "{event}");
    let mut wanted = 0;
    for wish in wishes {
        let colour = wish["color"].as_str().unwrap();
        assert!(colour.len() == 7 && colour.starts_with('#'), "{wish}");
        assert!(!wish["words"].as_str().unwrap().is_empty(), "{wish}");
        wanted += wish["photos"].as_u64().unwrap();
    }
    assert!((30..30 + 8).contains(&wanted), "{wishes:?}");
    let photos_url = app.url(&format!("/api/v1/events/{id}/photos"));

    // Without the link's token, nothing is taken.
    let guests: Vec<Uuid> = (0..4).map(|_| Uuid::new_v4()).collect();
    let one = Form::new().part("files", Part::bytes(photo(0)).file_name("x.jpg"));
    let res = from(guests[0], http.post(&photos_url))
        .multipart(one)
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(res).await.1, "bad_contribute_token");

    // Four guests, ten photos each, waiting for approval.
    let mut sent: Vec<(Uuid, String, String)> = Vec::new();
    for (g, guest) in guests.iter().enumerate() {
        let mut form = Form::new();
        for i in 0..10 {
            let name = format!("guest{g}-{i:02}.jpg");
            form = form.part("files", Part::bytes(photo(g * 10 + i)).file_name(name));
        }
        let res = from(*guest, http.post(&photos_url))
            .header("X-Contribute-Token", &token)
            .multipart(form)
            .send()
            .await
            .unwrap();
        let body = json_of(res, StatusCode::CREATED).await;
        let photos = body["photos"].as_array().unwrap();
        assert_eq!(photos.len(), 10, "{body}");
        for p in photos {
            assert_eq!(p["state"], "waiting", "{p}");
            let name = p["name"].as_str().unwrap().to_string();
            sent.push((*guest, p["id"].as_str().unwrap().to_string(), name));
        }
    }
    // A guest sees their own photos through the link, not the others'.
    let res = from(
        guests[1],
        http.get(app.url(&format!("/api/v1/events/{id}?token={token}"))),
    )
    .send()
    .await
    .unwrap();
    let seen = json_of(res, StatusCode::OK).await;
    assert_eq!(seen["photos"].as_array().unwrap().len(), 10, "{seen}");
    assert!(
        seen["wishlist"].is_array(),
        "the guests see the wish list: {seen}"
    );
    assert!(seen.get("contribute_token").is_none(), "{seen}");
    // A guest may not moderate.
    let decide = |photo: &str| app.url(&format!("/api/v1/events/{id}/photos/{photo}"));
    let res = from(guests[0], http.patch(decide(&sent[0].1)))
        .json(&json!({"state": "approved"}))
        .send()
        .await
        .unwrap();
    assert_refused(res, StatusCode::FORBIDDEN, "not_event_owner").await;

    // The owner approves 38 and leaves out 2.
    for (i, (_, photo, _)) in sent.iter().enumerate() {
        let state = if i == 5 || i == 25 {
            "rejected"
        } else {
            "approved"
        };
        let res = from(owner, http.patch(decide(photo)))
            .json(&json!({ "state": state }))
            .send()
            .await
            .unwrap();
        let body = json_of(res, StatusCode::OK).await;
        assert_eq!(body["state"], state, "{body}");
    }
    let res = from(owner, http.get(app.url(&format!("/api/v1/events/{id}"))))
        .send()
        .await
        .unwrap();
    let whole = json_of(res, StatusCode::OK).await;
    assert_eq!(whole["photos"].as_array().unwrap().len(), 40, "{whole}");

    // The mosaic holds exactly the 38, each at least once, by the names their guests sent.
    let first = make_mosaic(app, &http, owner, &id).await;
    let mut approved: Vec<String> = sent
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 5 && *i != 25)
        .map(|(_, s)| s.2.clone())
        .collect();
    approved.sort();
    assert_eq!(placed(app, owner, &first).await, approved);

    // A guest takes one photo back; another guest may not take it.
    let (guest, photo, name) = sent[12].clone();
    let res = from(guests[3], http.delete(decide(&photo)))
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(res).await.1, "not_your_photo");
    let res = from(guest, http.delete(decide(&photo)))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NO_CONTENT);
    let second = make_mosaic(app, &http, owner, &id).await;
    approved.retain(|n| n != &name);
    assert_eq!(placed(app, owner, &second).await, approved);
    // Every other cell keeps its photo (the bar is 90 %): only the withdrawn photo's change.
    let (before, after) = (
        cell_captions(app, owner, &first).await,
        cell_captions(app, owner, &second).await,
    );
    assert_eq!(before.len(), after.len());
    let others: Vec<_> = before.iter().filter(|(_, c)| **c != name).collect();
    let kept = others
        .iter()
        .filter(|(at, c)| after.get(at) == Some(c))
        .count();
    assert!(
        kept * 10 >= others.len() * 9,
        "{kept} of {} cells kept their photo",
        others.len()
    );
    let changed = before
        .iter()
        .filter(|(at, c)| after.get(at) != Some(c))
        .count();
    let job: Value = app
        .get_with(
            &format!("/api/v1/jobs/{second}"),
            &as_client(&owner.to_string()),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(job["kept"]["from"], first.as_str(), "{job}");
    assert_eq!(job["kept"]["changed"], changed as u64, "{job}");
    assert_eq!(job["kept"]["cells"], before.len() as u64, "{job}");
    let res = from(owner, http.get(app.url(&format!("/api/v1/events/{id}"))))
        .send()
        .await
        .unwrap();
    let whole = json_of(res, StatusCode::OK).await;
    assert_eq!(whole["mosaic"]["job"], second.as_str(), "{whole}");
    assert_eq!(whole["mosaics"].as_array().unwrap().len(), 2, "{whole}");

    // The owner closes the event (a guest may not): a guest's photo is then refused.
    let event_url = app.url(&format!("/api/v1/events/{id}"));
    let res = from(
        guests[0],
        http.patch(&event_url).json(&json!({"open": true})),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(error_code(res).await.1, "not_event_owner");
    let change = json!({"open": false, "per_guest": 5});
    let res = from(owner, http.patch(&event_url).json(&change))
        .send()
        .await
        .unwrap();
    let closed = json_of(res, StatusCode::OK).await;
    assert_eq!(closed["settings"]["open"], false, "{closed}");
    assert_eq!(closed["settings"]["per_guest"], 5, "{closed}");
    assert_eq!(closed["settings"]["approval"], true, "{closed}");
    let late = Form::new().part("files", Part::bytes(self::photo(77)).file_name("late.jpg"));
    let res = from(guests[1], http.post(&photos_url))
        .header("X-Contribute-Token", &token)
        .multipart(late)
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(res).await.1, "contributions_closed");

    // Mosaics on their own: a second after the photos in it change, a third mosaic is made,
    // holding the photo just put in.
    let auto = json!({"auto_after_seconds": 1});
    let res = from(owner, http.patch(&event_url).json(&auto))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let (_, late_photo, late_name) = sent[5].clone();
    let approve = json!({"state": "approved"});
    let res = from(owner, http.patch(decide(&late_photo)).json(&approve))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let third = wait_for_mosaic(app, &http, owner, &id, 3).await;
    approved.push(late_name);
    approved.sort();
    assert_eq!(placed(app, owner, &third).await, approved);

    a_private_job_is_seen_by_its_owner_and_through_its_share_link(app, &http, owner, &second).await;
}

/// An event's mosaic `job` is private: a guest is refused its page, JSON, cells, placements and
/// tiles; its share link shows them (the page sets the cookie the rest reads) but cannot
/// delete it; made readable again, it is anyone's by its id.
async fn a_private_job_is_seen_by_its_owner_and_through_its_share_link(
    app: &TestApp,
    http: &reqwest::Client,
    owner: Uuid,
    job: &str,
) {
    let sharing = app.url(&format!("/api/v1/jobs/{job}/sharing"));
    let someone = Uuid::new_v4();
    // An event's mosaic is private from the start (its guests see it by the event's link):
    // nobody else even reaches its sharing.
    let res = from(someone, http.post(&sharing).json(&json!({"private": true})))
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(res).await.1, "job_private");
    let res = from(owner, http.post(&sharing).json(&json!({"private": true})))
        .send()
        .await
        .unwrap();
    let shared = json_of(res, StatusCode::OK).await;
    assert_eq!(shared["private"], true, "{shared}");
    let link = shared["share_url"].as_str().unwrap().to_string();
    assert!(link.starts_with(&format!("/jobs/{job}?share=")), "{link}");
    let secret = link.split("share=").nth(1).unwrap().to_string();
    let reads = [
        format!("/jobs/{job}"),
        format!("/api/v1/jobs/{job}"),
        format!("/api/v1/jobs/{job}/result"),
        format!("/api/v1/jobs/{job}/cells/0/0"),
        format!("/api/v1/jobs/{job}/placements"),
        format!("/api/v1/jobs/{job}/tiles/0/0/0"),
    ];
    for path in &reads {
        let res = from(someone, http.get(app.url(path))).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::FORBIDDEN, "{path}");
        let res = from(owner, http.get(app.url(path))).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{path} to its owner");
        let private = res.headers()[reqwest::header::CACHE_CONTROL]
            .to_str()
            .unwrap();
        assert!(!private.contains("public"), "{path}: {private}");
    }
    let res = from(someone, http.get(app.url(&format!("/api/v1/jobs/{job}"))))
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(res).await.1, "job_private");
    // The share link: the page, then the rest with the cookie it sets, or the secret itself.
    let res = from(someone, http.get(app.url(&link)))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let cookie = res.headers()[reqwest::header::SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_string();
    assert!(cookie.starts_with("tessera_share_"), "{cookie}");
    let with_cookie = |req: reqwest::RequestBuilder| {
        from(
            someone,
            req.header(reqwest::header::COOKIE, cookie.as_str()),
        )
    };
    for path in &reads[1..] {
        let res = with_cookie(http.get(app.url(path))).send().await.unwrap();
        assert_eq!(
            res.status(),
            StatusCode::OK,
            "{path} through the share link"
        );
    }
    let with_secret = http
        .get(app.url(&format!("/api/v1/jobs/{job}/placements")))
        .header("X-Share-Token", &secret);
    assert_eq!(
        from(someone, with_secret).send().await.unwrap().status(),
        StatusCode::OK
    );
    let res = with_cookie(http.delete(app.url(&format!("/api/v1/jobs/{job}"))))
        .send()
        .await
        .unwrap();
    assert_eq!(error_code(res).await.1, "not_your_job");
    // Readable by its id again, and the old link's secret is gone.
    let res = from(owner, http.post(&sharing).json(&json!({"private": false})))
        .send()
        .await
        .unwrap();
    let open = json_of(res, StatusCode::OK).await;
    assert_eq!(open, json!({"private": false}));
    let res = from(someone, http.get(app.url(&format!("/api/v1/jobs/{job}"))))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
}

/// A small photo of its own colours (`i` makes it differ from every other).
fn photo(i: usize) -> Vec<u8> {
    crate::photos::camera_jpeg(160, 120, (i * 6) as u8)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guests_photos_make_one_mosaic_on_the_embedded_store() {
    guests_photos_make_one_mosaic(&spawn_app().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guests_photos_make_one_mosaic_on_azurite() {
    guests_photos_make_one_mosaic(&spawn_app_on_azurite().await).await;
}

/// A guest on a phone (390 x 844): opens the contribute link, sends two photos (reduced in the
/// browser), sees them wait; the owner, on the event's page, sees the QR code and puts both in
/// at once, then makes a mosaic; the guest's page then links each photo to the mosaic, where
/// the link finds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_sends_photos_from_a_phone_and_finds_one_in_the_mosaic() {
    use crate::browser::{click, in_chromium_phone_of, screenshot, wait_for};
    use std::time::Duration;

    let app = std::sync::Arc::new(spawn_app().await);
    let http = reqwest::Client::new();
    let owner = Uuid::new_v4();
    let event = create_event(&app, &http, owner, "Team photo").await;
    let id = event["id"].as_str().unwrap().to_string();
    let link = app.url(event["contribute_url"].as_str().unwrap());
    assert!(
        link.contains(&format!("/events/{id}/contribute?token=")),
        "{link}"
    );
    // Without the token, the page is refused.
    let res = http
        .get(app.url(&format!("/events/{id}/contribute")))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::FORBIDDEN);

    let work = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (i, name) in ["beach.jpg", "IMG_2024.jpg"].iter().enumerate() {
        let path = work.path().join(name);
        std::fs::write(
            &path,
            crate::photos::camera_jpeg(2400, 1800, (i * 90) as u8),
        )
        .unwrap();
        files.push(path.display().to_string());
    }
    let profile = work.path().join("profile");
    std::fs::create_dir(&profile).unwrap();
    let base = app.address.clone();
    in_chromium_phone_of((390, 844), &profile, move |browser| async move {
        let browser = &browser;
        browser.goto(&link).await.unwrap();
        let input = browser
            .find(fantoccini::Locator::Id("files"))
            .await
            .unwrap();
        input.send_keys(&files.join("\n")).await.unwrap();
        click(browser, "#send").await;
        let waiting = wait_for(
            browser,
            "const li = document.querySelectorAll('#mine li[data-state=waiting]'); \
             return li.length === 2 ? Array.from(li).map(l => l.textContent) : null",
            Duration::from_secs(30),
            "the two photos waiting",
        )
        .await;
        assert!(
            waiting[0].as_str().unwrap().contains("waiting"),
            "{waiting}"
        );
        let wide = crate::browser::script(
            browser,
            "return document.documentElement.scrollWidth <= innerWidth",
        )
        .await;
        assert_eq!(wide, true, "the page is wider than the phone");
        screenshot(browser, "contribute-waiting.png").await;

        // The owner, on the event's page in the same browser: the guests' link and its QR
        // code, the two photos waiting; both put in at once, then a new mosaic.
        let guest = browser
            .get_named_cookie("tessera_client")
            .await
            .unwrap()
            .value()
            .to_string();
        act_as(browser, &owner.to_string()).await;
        browser.goto(&format!("{base}/events/{id}")).await.unwrap();
        let shown = wait_for(
            browser,
            "const q = document.getElementById('qr');              return document.getElementById('event').dataset.ready && q.complete                ? [q.naturalWidth, document.querySelectorAll('.event-photos[data-group=waiting] li').length] : null",
            Duration::from_secs(20),
            "the event's page",
        )
        .await;
        assert!(shown[0].as_u64().unwrap() > 0, "the QR code: {shown}");
        assert_eq!(shown[1], 2, "{shown}");
        click(browser, ".select-all[data-group=waiting]").await;
        click(browser, "[data-act=approved]").await;
        wait_for(
            browser,
            "return document.querySelectorAll('.event-photos[data-group=approved] li').length === 2 || null",
            Duration::from_secs(20),
            "both photos in",
        )
        .await;
        screenshot(browser, "event-owner.png").await;
        click(browser, "#make").await;
        let job = wait_for(
            browser,
            "const s = document.getElementById('make-status').textContent; \
             const m = document.getElementById('mosaic-state'); \
             return s.startsWith('Under way') && m && m.dataset.job ? '/jobs/' + m.dataset.job : null",
            Duration::from_secs(20),
            "the new mosaic",
        )
        .await;
        let job = job.as_str().unwrap().trim_start_matches("/jobs/").to_string();
        // The mosaic's page is the event's, with the way back to it.
        let page = app
            .get_with(&format!("/jobs/{job}"), &as_client(&owner.to_string()))
            .await
            .text()
            .await
            .unwrap();
        assert!(page.contains(&format!(r#"href="/events/{id}""#)), "{page}");
        let done = app
            .wait_until_finished_with(&job, &as_client(&owner.to_string()))
            .await;
        assert_eq!(done["state"], "done", "{done}");

        // The wall display shows the mosaic, and the newest photo with its place marked.
        browser
            .goto(&format!("{base}/events/{id}/wall"))
            .await
            .unwrap();
        let wall = wait_for(
            browser,
            "const w = document.getElementById('wall'); const m = document.getElementById('wall-mosaic');              return w.dataset.newest && m.complete && m.naturalWidth > 0 ? [w.dataset.mosaic, w.dataset.newest] : null",
            Duration::from_secs(30),
            "the wall display",
        )
        .await;
        assert_eq!(wall[0], job.as_str(), "{wall}");
        let view: Value = app
            .get_with(&format!("/api/v1/events/{id}"), &as_client(&owner.to_string()))
            .await
            .json()
            .await
            .unwrap();
        let photos: Vec<&str> = view["photos"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["id"].as_str().unwrap())
            .collect();
        assert!(photos.contains(&wall[1].as_str().unwrap()), "{wall} {view}");
        screenshot(browser, "event-wall.png").await;

        // Back to the guest's page: each photo is in, with a link that finds it in the mosaic.
        act_as(browser, &guest).await;
        browser.goto(&link).await.unwrap();
        wait_for(
            browser,
            "return document.querySelectorAll('#mine a.find-mine').length === 2 || null",
            Duration::from_secs(20),
            "the links to find the photos",
        )
        .await;
        click(browser, "#mine li[data-name='beach.jpg'] a.find-mine").await;
        let found = wait_for(
            browser,
            "const v = document.getElementById('viewer'); \
             return v && v.dataset.found ? [Number(v.dataset.found), \
               document.getElementById('find-result').textContent] : null",
            Duration::from_secs(30),
            "the guest's photo found in the mosaic",
        )
        .await;
        assert!(found[0].as_u64().unwrap() >= 1, "{found}");
        assert!(found[1].as_str().unwrap().contains("beach.jpg"), "{found}");
        screenshot(browser, "contribute-found.png").await;

        // The guest takes one photo back from the page, confirming it.
        browser.goto(&link).await.unwrap();
        wait_for(
            browser,
            "return document.querySelectorAll('#mine li img.mine-thumb').length === 2 || null",
            Duration::from_secs(20),
            "the guest's two photos, with their thumbnails",
        )
        .await;
        crate::browser::script(browser, "window.confirm = function () { return true; }; return true")
            .await;
        click(browser, "#mine li[data-name='beach.jpg'] button.take-back").await;
        wait_for(
            browser,
            "return document.querySelectorAll('#mine li').length === 1 || null",
            Duration::from_secs(20),
            "the photo taken back",
        )
        .await;
        let token = link.split("token=").nth(1).unwrap();
        let seen: Value = app
            .get_with(
                &format!("/api/v1/events/{id}?token={token}"),
                &[("X-Client-Id", guest.as_str())],
            )
            .await
            .json()
            .await
            .unwrap();
        let left: Vec<&str> = seen["photos"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(left, ["IMG_2024.jpg"], "{seen}");
    })
    .await;
}

/// The browser acts as client `client` from now on (its `tessera_client` cookie, set by the
/// page's script once the service's own is deleted).
async fn act_as(browser: &fantoccini::Client, client: &str) {
    browser.delete_cookie("tessera_client").await.unwrap();
    crate::browser::script(
        browser,
        &format!("document.cookie = 'tessera_client={client}; path=/; SameSite=Lax'; return true"),
    )
    .await;
}
