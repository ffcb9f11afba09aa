//! A first visit with one's own photos, at the two screens the pages are made for: a phone of
//! 390 x 844 and a laptop of 1366 x 768, in Chromium. Photos as a camera makes them become a
//! library on the libraries page; on the home form, with only a photo and that library, a paper
//! size that cannot be read is flagged beside its field as it is typed; the job at the defaults
//! is done; and a tap or the pointer names a tile inside the screen. No page is wider than the
//! screen on the way.

use std::time::Duration;

use fantoccini::actions::{InputSource, MouseActions, PointerAction, TouchActions};
use fantoccini::{Client, Locator};

use crate::browser::{
    click, in_chromium, in_chromium_phone_of, mosaic_loaded, screenshot, script, set_value,
    set_viewport, submit_and_finish, wait_for,
};
use crate::support::*;

#[derive(Clone, Copy, Debug)]
enum Screen {
    /// 390 x 844, by touch.
    Phone,
    /// 1366 x 768, with a mouse.
    Laptop,
}

impl Screen {
    fn name(self) -> &'static str {
        match self {
            Screen::Phone => "phone",
            Screen::Laptop => "laptop",
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn own_photos_make_a_mosaic_on_a_phone_and_a_laptop_in_chromium() {
    let app = spawn_app().await;
    let work = tempfile::tempdir().unwrap();
    let mut photos = Vec::new();
    for i in 0..10u32 {
        let path = work.path().join(format!("IMG_{i:04}.jpg"));
        std::fs::write(
            &path,
            crate::photos::camera_jpeg(4032, 3024, (i * 25) as u8),
        )
        .unwrap();
        photos.push(path.display().to_string());
    }
    let photo = work.path().join("photo.png");
    std::fs::write(&photo, astronaut()).unwrap();
    let photo = photo.display().to_string();
    for screen in [Screen::Phone, Screen::Laptop] {
        let profile = work.path().join(format!("profile-{}", screen.name()));
        std::fs::create_dir(&profile).unwrap();
        let (base, photos, photo) = (app.address.clone(), photos.clone(), photo.clone());
        let steps = move |browser: Client| journey(base, browser, screen, photos, photo);
        match screen {
            Screen::Phone => in_chromium_phone_of((390, 844), &profile, steps).await,
            Screen::Laptop => in_chromium(&profile, steps).await,
        }
    }
}

async fn journey(
    base: String,
    browser: Client,
    screen: Screen,
    photos: Vec<String>,
    photo: String,
) {
    let browser = &browser;
    if let Screen::Laptop = screen {
        set_viewport(browser, (1366, 768)).await;
    }
    let library = format!("my-photos-{}", screen.name());
    make_library(browser, &base, screen, &photos).await;

    browser.goto(&format!("{base}/")).await.unwrap();
    let input = browser.find(Locator::Id("image")).await.unwrap();
    input.send_keys(&photo).await.unwrap();
    script(
        browser,
        &format!(
            "const s = document.getElementById('library'); s.value = '{library}'; \
             s.dispatchEvent(new Event('change', {{bubbles: true}})); return s.value"
        ),
    )
    .await;
    // The preview drawn: the form's layout is settled before anything is measured or clicked.
    wait_for(
        browser,
        "const i = document.getElementById('sketch-img'); \
         return !document.getElementById('sketch').hidden && i.complete && i.naturalWidth > 0",
        Duration::from_secs(30),
        "the preview",
    )
    .await;
    paper_size_checked_as_typed(browser, screen).await;
    // Back to the first size by name: only a photo and a library, the rest at the defaults.
    click(browser, "input[name=size][value=screen]").await;
    let reach = script(
        browser,
        "window.scrollTo(0, 0); return document.getElementById('go').getBoundingClientRect().bottom / innerHeight",
    )
    .await;
    let most = match screen {
        Screen::Phone => 2.0,
        Screen::Laptop => 1.0,
    };
    let reach = reach.as_f64().unwrap();
    assert!(
        reach <= most,
        "{screen:?}: Make the mosaic ends {reach} screens down"
    );
    fits(browser, screen, "the home form").await;
    // The answer for the size chosen again, before the form is sent.
    wait_for(
        browser,
        "return document.getElementById('output-size').textContent.startsWith('2,048')",
        Duration::from_secs(10),
        "the screen size's figures",
    )
    .await;
    submit_and_finish(browser, &format!("the job on the {}", screen.name())).await;

    mosaic_loaded(browser, Duration::from_secs(30)).await;
    fits(browser, screen, "the job page").await;
    name_a_tile(browser, screen).await;
    screenshot(browser, &format!("journey-{}-job.png", screen.name())).await;
}

/// Ten camera photos become a library on the libraries page.
async fn make_library(browser: &Client, base: &str, screen: Screen, photos: &[String]) {
    browser.goto(&format!("{base}/libraries")).await.unwrap();
    set_value(browser, "name", &format!("My photos {}", screen.name())).await;
    let input = browser.find(Locator::Id("files")).await.unwrap();
    input.send_keys(&photos.join("\n")).await.unwrap();
    click(browser, "#library-form button[type=submit]").await;
    let report = wait_for(
        browser,
        "const r = document.getElementById('report'); return r.hidden ? null : r.innerText",
        Duration::from_secs(120),
        "the import report",
    )
    .await;
    assert!(
        report.as_str().unwrap().contains("Tiles imported\n10"),
        "{screen:?}: {report}"
    );
    fits(browser, screen, "the libraries page").await;
    screenshot(browser, &format!("journey-{}-library.png", screen.name())).await;
}

/// A paper size that cannot be read is flagged as it is typed: the message in words right under
/// the field, the field marked; corrected, both go.
async fn paper_size_checked_as_typed(browser: &Client, screen: Screen) {
    click(browser, "input[name=size][value=paper]").await;
    set_value(browser, "print", "A4 at lunch").await;
    let flagged = wait_for(
        browser,
        "const p = document.getElementById('print'); const w = document.getElementById('output-warning'); \
         if (w.hidden || p.getAttribute('aria-invalid') !== 'true') return null; \
         const f = p.getBoundingClientRect(), m = w.getBoundingClientRect(); \
         return [w.textContent, m.top - f.bottom, m.bottom <= innerHeight]",
        Duration::from_secs(10),
        "the paper size flagged",
    )
    .await;
    let message = flagged[0].as_str().unwrap();
    let gap = flagged[1].as_f64().unwrap();
    assert!(message.starts_with("Paper size"), "{screen:?}: {message}");
    assert!(
        !message.contains('_') && !message.contains("--") && !message.contains("print "),
        "{screen:?}: in the form's words: {message}"
    );
    // Right under the field, not below the rest of the sizes.
    assert!(
        (0.0..40.0).contains(&gap),
        "{screen:?}: the message is {gap} px below the field"
    );
    assert_eq!(
        flagged[2], true,
        "{screen:?}: the message is inside the screen"
    );
    screenshot(browser, &format!("journey-{}-paper.png", screen.name())).await;
    set_value(browser, "print", "A4@150dpi").await;
    wait_for(
        browser,
        "return document.getElementById('output-warning').hidden \
           && !document.getElementById('print').hasAttribute('aria-invalid') \
           && document.getElementById('output-size').textContent.includes('printing')",
        Duration::from_secs(10),
        "the flag cleared",
    )
    .await;
}

/// No page wider than the screen.
async fn fits(browser: &Client, screen: Screen, page: &str) {
    let fits = script(
        browser,
        "return [document.documentElement.scrollWidth, innerWidth]",
    )
    .await;
    assert!(
        fits[0].as_f64() <= fits[1].as_f64(),
        "{screen:?}: {page} is wider than the screen: {fits}"
    );
}

/// A tap on a phone, the pointer at rest on a laptop: the tile's name shows inside the screen.
async fn name_a_tile(browser: &Client, screen: Screen) {
    let centre = script(
        browser,
        "window.scrollTo(0, 0); const r = document.getElementById('viewer').getBoundingClientRect(); \
         return [r.left + r.width / 2, r.top + r.height / 2]",
    )
    .await;
    let (x, y) = (centre[0].as_f64().unwrap(), centre[1].as_f64().unwrap());
    match screen {
        Screen::Phone => {
            let tap = TouchActions::new("tap".into())
                .then(PointerAction::MoveTo {
                    duration: None,
                    x,
                    y,
                })
                .then(PointerAction::Down { button: 0 })
                .then(PointerAction::Pause {
                    duration: Duration::from_millis(80),
                })
                .then(PointerAction::Up { button: 0 });
            browser.perform_actions(tap).await.unwrap();
        }
        Screen::Laptop => {
            let rest = MouseActions::new("mouse".into())
                .then(PointerAction::MoveTo {
                    duration: Some(Duration::from_millis(50)),
                    x,
                    y,
                })
                .then(PointerAction::Pause {
                    duration: Duration::from_millis(400),
                });
            browser.perform_actions(rest).await.unwrap();
        }
    }
    let named = wait_for(
        browser,
        "const i = document.getElementById('cell-info'); const t = document.getElementById('cell-thumb'); \
         if (i.hidden || !t.complete || !t.naturalWidth) return null; \
         const r = i.getBoundingClientRect(); \
         return [document.getElementById('cell-name').textContent, r.top >= 0 && r.bottom <= innerHeight]",
        Duration::from_secs(20),
        "the tile named",
    )
    .await;
    let name = named[0].as_str().unwrap();
    assert!(
        name.starts_with("IMG_"),
        "{screen:?}: a photo of the library: {named}"
    );
    assert_eq!(
        named[1], true,
        "{screen:?}: the name shows inside the screen: {named}"
    );
}
