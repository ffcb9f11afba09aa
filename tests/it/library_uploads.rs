//! A library of camera photos made from a phone's browser: the photos are reduced before they
//! leave it, sent in batches with each file's state shown, a batch that fails is sent again
//! without the ones already in, and the library then grows and shrinks from its row.

use std::time::Duration;

use fantoccini::Locator;
use serde_json::Value;
use tessera_web::WebSettings;

use crate::browser::{click, in_chromium_phone, screenshot, script, wait_for};
use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn camera_photos_become_a_library_in_batches_from_a_phone_in_chromium() {
    // A request may carry less than one photo as the camera made it.
    let limit = 100_000;
    let settings = WebSettings {
        max_library_upload_bytes: limit,
        ..test_settings()
    };
    let app = spawn_app_with(settings, false).await;
    let work = tempfile::tempdir().unwrap();
    let profile = work.path().join("profile");
    std::fs::create_dir(&profile).unwrap();
    let mut photos = Vec::new();
    for i in 0..9u32 {
        let path = work.path().join(format!("IMG_{i:04}.jpg"));
        let bytes = crate::photos::camera_jpeg(4032, 3024, (i * 27) as u8);
        assert!(bytes.len() as u64 > limit, "{} bytes", bytes.len());
        std::fs::write(&path, bytes).unwrap();
        photos.push(path.display().to_string());
    }
    let base = app.address.clone();
    in_chromium_phone(&profile, |browser| async move {
        let browser = &browser;
        browser.goto(&format!("{base}/libraries")).await.unwrap();
        crate::browser::set_value(browser, "name", "Phone photos").await;
        // What each request carries; the second is lost on the way, as on a train.
        script(
            browser,
            "window.requests = []; \
             const send = XMLHttpRequest.prototype.send; \
             XMLHttpRequest.prototype.send = function (data) { \
               const names = data instanceof FormData ? data.getAll('files').map(f => f.name) : []; \
               if (window.requests.length === 1) { \
                 window.requests.push({ lost: true, names }); \
                 setTimeout(() => this.dispatchEvent(new ProgressEvent('error')), 10); \
                 return; \
               } \
               window.requests.push({ lost: false, names, bytes: data.getAll('files').reduce((s, f) => s + f.size, 0) }); \
               return send.call(this, data); \
             }; return null",
        )
        .await;
        let input = browser.find(Locator::Id("files")).await.unwrap();
        input.send_keys(&photos[..7].join("\n")).await.unwrap();
        click(browser, "#library-form button[type=submit]").await;
        let report = wait_for(
            browser,
            "const r = document.getElementById('report'); return r.hidden ? null : r.innerText",
            Duration::from_secs(60),
            "the import report",
        )
        .await;
        assert!(report.as_str().unwrap().contains("Tiles imported\n7"), "{report}");
        let states = script(
            browser,
            "return [...document.querySelectorAll('#upload-files li')].map(li => \
               [li.dataset.state, li.innerText])",
        )
        .await;
        let states = states.as_array().unwrap();
        assert_eq!(states.len(), 7, "{states:?}");
        for state in states {
            assert_eq!(state[0], "in", "{states:?}");
        }
        // Reduced in the browser: every request under the limit the originals are over.
        let requests = script(browser, "return window.requests").await;
        let requests = requests.as_array().unwrap();
        assert!(requests.len() >= 3, "in batches: {requests:?}");
        let mut sent: Vec<&str> = Vec::new();
        for request in requests.iter().filter(|r| r["lost"] == false) {
            assert!(request["bytes"].as_u64().unwrap() < limit, "{request}");
            sent.extend(request["names"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()));
        }
        // The lost batch went again, and no photo went twice.
        let lost = &requests[1]["names"];
        assert_eq!(&requests[2]["names"], lost, "{requests:?}");
        sent.sort();
        let expected: Vec<String> = (0..7).map(|i| format!("IMG_{i:04}.jpg")).collect();
        assert_eq!(sent, expected, "{requests:?}");
        screenshot(browser, "library-phone-batches.png").await;

        // The page fits the phone, its table read as cards.
        let fits = script(
            browser,
            "return document.documentElement.scrollWidth <= innerWidth",
        )
        .await;
        assert_eq!(fits, true);

        // Two more photos added from the library's row.
        click(browser, "tr[data-library=phone-photos] button[data-action=add]").await;
        script(browser, "document.getElementById('add-files').hidden = false; return null").await;
        let add = browser.find(Locator::Id("add-files")).await.unwrap();
        add.send_keys(&photos[7..].join("\n")).await.unwrap();
        let added = wait_for(
            browser,
            "const s = document.getElementById('upload-status').textContent; \
             return s.startsWith('Added') ? s : null",
            Duration::from_secs(60),
            "the photos added",
        )
        .await;
        assert!(added.as_str().unwrap().contains("9 tiles"), "{added}");

        // One taken out from the list of its photos.
        wait_for(
            browser,
            "return document.querySelector('tr[data-library=phone-photos] button[data-action=photos]')",
            Duration::from_secs(10),
            "the refreshed list",
        )
        .await;
        click(browser, "tr[data-library=phone-photos] button[data-action=photos]").await;
        wait_for(
            browser,
            "return document.querySelectorAll('#tile-names li').length === 9",
            Duration::from_secs(10),
            "the library's photos",
        )
        .await;
        click(browser, "#tile-names button[data-tile='IMG_0003.jpg']").await;
        let title = wait_for(
            browser,
            "const t = document.getElementById('tile-list-title'); \
             return t && t.textContent.endsWith(', 8)') ? t.textContent : null",
            Duration::from_secs(20),
            "the photo taken out",
        )
        .await;
        assert!(title.as_str().unwrap().contains("Phone photos"), "{title}");
        let names = script(
            browser,
            "return [...document.querySelectorAll('#tile-names button')].map(b => b.dataset.tile)",
        )
        .await;
        assert!(!names.as_array().unwrap().contains(&Value::from("IMG_0003.jpg")), "{names}");
        screenshot(browser, "library-phone-photos.png").await;
    })
    .await;
}
