//! The browser UI in headless Chromium over WebDriver: upload the astronaut on the home page,
//! follow the job page to done and see the mosaic load; upload a file that is no image and see
//! the API's message in the page. Screenshots go to `test-artifacts/`.
//!
//! Needs `/usr/bin/chromium` and `/usr/bin/chromedriver` (scripts/test.sh installs them); the
//! test fails, never skips, without them.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};

use crate::keys::{KEY, spawn_keyed_app};
use crate::support::{astronaut, fixture, spawn_app};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// How long the job may take before the test gives up (a small mosaic takes well under a second).
const JOB_DEADLINE: Duration = Duration::from_secs(120);
/// The least any wait on the page is given before the test gives up.
const LEAST_WAIT: Duration = Duration::from_secs(60);

/// A chromedriver process of this test, stopped when dropped.
struct Driver {
    child: Child,
    port: u16,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_driver() -> Driver {
    for tool in [CHROMIUM, CHROMEDRIVER] {
        assert!(
            Path::new(tool).exists(),
            "{tool} is missing: install Chromium and its WebDriver \
             (apt-get install -y chromium chromium-driver; scripts/test.sh does it)"
        );
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(CHROMEDRIVER)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {CHROMEDRIVER}: {e}"));
    Driver { child, port }
}

/// A script that lists the words of five letters or fewer that a table cell breaks across lines.
pub(crate) const BROKEN_SHORT_WORDS: &str = "const broken = []; \
    for (const cell of document.querySelectorAll('th, td')) { \
      const walk = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT); let node; \
      while ((node = walk.nextNode())) { \
        const words = /\\S+/g; let m; \
        while ((m = words.exec(node.data))) { \
          if (m[0].length > 5) continue; \
          const r = document.createRange(); r.setStart(node, m.index); r.setEnd(node, m.index + m[0].length); \
          const tops = new Set([...r.getClientRects()].map(x => Math.round(x.top))); \
          if (tops.size > 1) broken.push(m[0]); \
        } } } \
    return broken";

/// The phone the mobile tests hold: a 360 px wide touch screen (the narrowest in common use).
pub(crate) const PHONE: (u32, u32) = (360, 740);

async fn connect(driver: &Driver, profile: &Path, phone: Option<(u32, u32)>) -> Client {
    let mut caps = serde_json::Map::new();
    caps.insert("browserName".into(), json!("chrome"));
    let mut options = json!({
            "binary": CHROMIUM,
            "args": [
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--window-size=1280,1000",
                // Room for any window the tests size: a window is kept within its screen.
                "--screen-info={0,0 3840x2400}",
                format!("--user-data-dir={}", profile.display()),
            ]
    });
    if let Some((width, height)) = phone {
        options["mobileEmulation"] = json!({
            "deviceMetrics": { "width": width, "height": height, "pixelRatio": 3.0, "touch": true },
            "userAgent": "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0 Mobile Safari/537.36"
        });
    }
    caps.insert("goog:chromeOptions".into(), options);
    let url = format!("http://127.0.0.1:{}", driver.port);
    // chromedriver takes a moment to listen.
    crate::support::wait_for(Duration::from_secs(20), async || {
        ClientBuilder::new(HttpConnector::new())
            .capabilities(caps.clone())
            .connect(&url)
            .await
            .map_err(|e| format!("no WebDriver session from {CHROMEDRIVER}: {e:?}"))
    })
    .await
}

/// Runs `steps` in a Chromium session with its profile in `profile`. The steps run in a task so
/// that a failed step still ends the session cleanly before its panic goes on.
pub(crate) async fn in_chromium<F>(profile: &Path, steps: impl FnOnce(Client) -> F)
where
    F: Future<Output = ()> + Send + 'static,
{
    in_browser(profile, None, steps).await
}

/// [`in_chromium`] as a phone: [`PHONE`]'s screen, touch input, a mobile user agent.
pub(crate) async fn in_chromium_phone<F>(profile: &Path, steps: impl FnOnce(Client) -> F)
where
    F: Future<Output = ()> + Send + 'static,
{
    in_browser(profile, Some(PHONE), steps).await
}

/// [`in_chromium_phone`] with a screen of `width` x `height` CSS pixels.
pub(crate) async fn in_chromium_phone_of<F>(
    (width, height): (u32, u32),
    profile: &Path,
    steps: impl FnOnce(Client) -> F,
) where
    F: Future<Output = ()> + Send + 'static,
{
    in_browser(profile, Some((width, height)), steps).await
}

async fn in_browser<F>(profile: &Path, phone: Option<(u32, u32)>, steps: impl FnOnce(Client) -> F)
where
    F: Future<Output = ()> + Send + 'static,
{
    let driver = start_driver();
    let browser = connect(&driver, profile, phone).await;
    let steps = tokio::spawn(steps(browser.clone())).await;
    let _ = browser.close().await;
    drop(driver);
    if let Err(e) = steps {
        match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(e) => panic!("the browser steps did not finish: {e}"),
        }
    }
}

fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("test-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub(crate) async fn screenshot(browser: &Client, name: &str) {
    let png = browser.screenshot().await.unwrap();
    std::fs::write(artifacts().join(name), png).unwrap();
}

pub(crate) async fn script(browser: &Client, js: &str) -> Value {
    browser.execute(js, vec![]).await.unwrap()
}

/// Waits until `js` returns something truthy, failing with `what` after `deadline`.
pub(crate) async fn wait_for(browser: &Client, js: &str, deadline: Duration, what: &str) -> Value {
    // A deadline bounds a failure, not a speed: on a machine loaded by the other tests, the
    // page's answers may take many times their usual moment.
    let deadline = deadline.max(LEAST_WAIT);
    let mut poll = crate::support::Poll::new(deadline);
    loop {
        let v = script(browser, js).await;
        let truthy = match &v {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::String(s) => !s.is_empty(),
            Value::Number(n) => n.as_f64() != Some(0.0),
            _ => true,
        };
        if truthy {
            return v;
        }
        if poll.over() {
            let page = script(browser, "return document.body.innerText").await;
            panic!("{what}: not seen within {deadline:?}; the page reads:\n{page}");
        }
        poll.pause().await;
    }
}

/// Clicks the element `css` selects.
/// Waits for the job page's mosaic image (the preview, or the full mosaic) to load; its width.
pub(crate) async fn mosaic_loaded(browser: &Client, deadline: Duration) -> Value {
    wait_for(
        browser,
        "const i = document.getElementById('mosaic'); \
         return i.complete && i.naturalWidth > 0 ? i.naturalWidth : 0",
        deadline,
        "the mosaic loading",
    )
    .await
}

/// Sizes the window so that the page's viewport is `width` x `height` CSS pixels: the window's
/// own frame is taken from what it leaves of the size asked.
pub(crate) async fn set_viewport(browser: &Client, (width, height): (u32, u32)) {
    browser.set_window_size(width, height).await.unwrap();
    let inner = script(browser, "return [innerWidth, innerHeight]").await;
    let frame = |asked: u32, got: &Value| asked.saturating_sub(got.as_u64().unwrap() as u32);
    let (fw, fh) = (frame(width, &inner[0]), frame(height, &inner[1]));
    if fw + fh > 0 {
        browser
            .set_window_size(width + fw, height + fh)
            .await
            .unwrap();
    }
    // The window takes its new size a moment after it is asked.
    let mut inner = script(browser, "return [innerWidth, innerHeight]").await;
    for _ in 0..50 {
        if inner == json!([width, height]) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        inner = script(browser, "return [innerWidth, innerHeight]").await;
    }
    assert_eq!(inner, json!([width, height]), "the viewport");
}

pub(crate) async fn click(browser: &Client, css: &str) {
    browser
        .find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("no {css}: {e}"))
        .click()
        .await
        .unwrap();
}

pub(crate) async fn set_value(browser: &Client, id: &str, value: &str) {
    let field = browser.find(Locator::Id(id)).await.unwrap();
    field.clear().await.unwrap();
    field.send_keys(value).await.unwrap();
}

async fn run(base: String, browser: Client, work: PathBuf) {
    let url = |path: &str| format!("{base}{path}");
    let browser = &browser;
    browser.goto(&url("/")).await.unwrap();
    assert_eq!(browser.title().await.unwrap(), "New mosaic · Tessera");

    let image = fixture("engine/astronaut-48.png").canonicalize().unwrap();
    let input = browser.find(Locator::Id("image")).await.unwrap();
    input.send_keys(&image.display().to_string()).await.unwrap();
    // Three decisions, then the rest: the photo, the library, a size by name; every other
    // option under "More options".
    let folded = script(
        browser,
        "return [document.getElementById('more-options').open, \
                 !!document.getElementById('slices'), \
                 document.querySelector('input[name=size]:checked').value]",
    )
    .await;
    assert_eq!(folded, json!([false, false, "screen"]));
    let figures = wait_for(
        browser,
        "const f = document.querySelector('[data-figures=poster]').textContent; \
         return f.includes('megapixels') ? f : null",
        Duration::from_secs(10),
        "the sizes' figures for the photo",
    )
    .await;
    assert!(
        figures.as_str().unwrap().contains(" px, "),
        "poster figures: {figures}"
    );
    // A preview of the mosaic comes once the photo is chosen, before any job.
    let sketch = wait_for(
        browser,
        "const s = document.getElementById('sketch'); const i = document.getElementById('sketch-img'); \
         return !s.hidden && i.complete && i.naturalWidth > 0 \
           ? [i.naturalWidth, document.getElementById('sketch-caption').textContent] : null",
        Duration::from_secs(20),
        "the preview of the mosaic",
    )
    .await;
    assert!(
        sketch[1]
            .as_str()
            .unwrap()
            .starts_with("Preview, 128 × 128 tiles"),
        "{sketch}"
    );
    click(browser, "#more-options > summary").await;
    // Oblong tiles on a library of square ones: refused as the form changes, in the server's
    // words, on the field, with a size that fits.
    set_value(browser, "tile_size", "24x18").await;
    set_value(browser, "cells", "12").await;
    let shown = wait_for(
        browser,
        "const w = document.getElementById('output-warning'); \
         return !w.hidden && document.getElementById('tile_size').getAttribute('aria-invalid') === 'true' \
           ? w.textContent : null",
        Duration::from_secs(10),
        "the oblong tile size refused",
    )
    .await;
    assert!(
        shown
            .as_str()
            .unwrap()
            .contains("holds 1:1 tiles: give a tile_size of shape 1:1, such as 21"),
        "{shown}"
    );
    click(browser, "#submit-form button[type=submit]").await;
    let said = wait_for(
        browser,
        "const e = document.getElementById('error'); \
         return location.pathname === '/' && !e.hidden \
           && e.previousElementSibling.contains(document.getElementById('tile_size')) \
           ? e.textContent : null",
        Duration::from_secs(10),
        "the mismatch explained on the field",
    )
    .await;
    assert!(
        said.as_str()
            .unwrap()
            .starts_with("Tile size 24x18 makes 4:3 tiles"),
        "{said}"
    );
    set_value(browser, "tile_size", "8").await;
    // The output size is the server's, for the image's natural size, once the answer for the
    // new tile size has come (the one for the size before may still show meanwhile).
    let size = wait_for(
        browser,
        "const t = document.getElementById('output-size').textContent; \
         return t.startsWith('96 × 96 px') ? t : null",
        Duration::from_secs(10),
        "the live output size for 8 px tiles",
    )
    .await;
    assert!(
        size.as_str().unwrap().starts_with("96 × 96 px"),
        "output size shown: {size}"
    );
    // Adaptive tile sizes: checked by the server as the form changes, and the size shown is
    // the adaptive mosaic's (the grid's rounded up to whole squares of the largest size).
    set_value(browser, "adaptive", "8..24").await;
    let refused = wait_for(
        browser,
        "const w = document.getElementById('output-warning'); \
         return !w.hidden && document.getElementById('adaptive').getAttribute('aria-invalid') === 'true' \
           ? w.textContent : null",
        Duration::from_secs(10),
        "adaptive sizes that do not double refused",
    )
    .await;
    assert!(refused.as_str().unwrap().contains("doubled"), "{refused}");
    set_value(browser, "adaptive", "4..64").await;
    let size = wait_for(
        browser,
        // The size of the adaptive grid asked for, not one shown on the way there.
        "const t = document.getElementById('output-size').textContent; \
         return t.startsWith('128 × 128 px (at most') ? t : null",
        Duration::from_secs(10),
        "the adaptive output size",
    )
    .await;
    assert!(
        size.as_str()
            .unwrap()
            .starts_with("128 × 128 px (at most 144 tiles of 4 to 64 px"),
        "output size shown: {size}"
    );
    script(
        browser,
        "const a = document.getElementById('adaptive'); a.value = ''; \
         a.dispatchEvent(new Event('input', { bubbles: true })); return true",
    )
    .await;
    wait_for(
        browser,
        "const t = document.getElementById('output-size').textContent; \
         return t.startsWith('96 × 96 px') ? t : null",
        Duration::from_secs(10),
        "the uniform output size again",
    )
    .await;
    // The fixture emoji have transparent parts: what shows through them is the mosaic's choice.
    let chosen = script(
        browser,
        "const b = document.getElementById('background'); if (b.disabled) return null; \
         b.value = '000000'; b.dispatchEvent(new Event('change', { bubbles: true })); \
         return b.value",
    )
    .await;
    assert_eq!(
        chosen, "000000",
        "the background choice is off for the emoji"
    );
    screenshot(browser, "home.png").await;
    click(browser, "#submit-form button[type=submit]").await;

    wait_for(
        browser,
        "return location.pathname.startsWith('/jobs/') && document.getElementById('state')",
        Duration::from_secs(20),
        "the job page",
    )
    .await;
    let state = wait_for(
        browser,
        "const s = document.getElementById('state').textContent; \
         return (s === 'done' || s === 'failed') ? s : null",
        JOB_DEADLINE,
        "the job finishing",
    )
    .await;
    assert_eq!(state, "done");
    // The page may be served already done, before its script has drawn the bands.
    let filled = wait_for(
        browser,
        "return document.querySelectorAll('.band.filled').length",
        Duration::from_secs(20),
        "the slice bands",
    )
    .await;
    // Slices are the operator's (the default of 8), not the form's.
    assert_eq!(filled, 8, "every slice band is filled");
    // When the result goes (retention.result_days after the job ended: 30 by default).
    let expires = wait_for(
        browser,
        "const e = document.getElementById('expiry'); \
         return e.hidden ? null : document.getElementById('expires').dateTime",
        Duration::from_secs(20),
        "the expiry note",
    )
    .await;
    let expires = time::OffsetDateTime::parse(
        expires.as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    let days = (expires - time::OffsetDateTime::now_utc()).whole_hours();
    assert!((29 * 24..=30 * 24).contains(&days), "expires in {days} h");
    let width = mosaic_loaded(browser, Duration::from_secs(20)).await;
    assert_eq!(width, 96);
    let transactions = script(
        browser,
        "return document.getElementById('transactions').rows.length",
    )
    .await;
    assert!(transactions.as_u64().unwrap() >= 2, "transactions listed");
    // The quality figures show once the job record has them (the controller records them just
    // after planning, possibly after the job is done: the page reads the job again for them).
    let quality = wait_for(
        browser,
        "const q = document.getElementById('quality'); \
         return q.hidden ? null : { hidden: q.hidden, \
                  mean: document.getElementById('q-de00-mean').textContent, \
                  distinct: document.getElementById('q-distinct').textContent, \
                  background: document.getElementById('q-background').hidden ? null \
                    : document.getElementById('q-background').textContent }",
        Duration::from_secs(30),
        "the quality figures",
    )
    .await;
    let id = browser
        .current_url()
        .await
        .unwrap()
        .path()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    let job: Value = reqwest::get(url(&format!("/api/v1/jobs/{id}")))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(job["quality"].is_object(), "{job}");
    assert_eq!(quality["hidden"], false, "{quality}");
    let mean = job["quality"]["de00_mean"].as_f64().unwrap();
    assert_eq!(quality["mean"], format!("{mean:.2}"), "{quality}");
    assert_eq!(
        quality["distinct"],
        format!(
            "{} of {}",
            job["quality"]["distinct"], job["quality"]["library_tiles"]
        ),
        "{quality}"
    );
    // The tiles were laid over the black chosen on the form, and the page says so.
    assert_eq!(job["params"]["background"], "000000", "{job}");
    assert_eq!(quality["background"], "#000000", "{quality}");
    screenshot(browser, "job-done.png").await;

    // My jobs lists it (the cookie minted by the submission).
    browser.goto(&url("/jobs")).await.unwrap();
    let rows = script(
        browser,
        "return document.querySelectorAll('tbody tr').length",
    )
    .await;
    assert_eq!(rows, 1);
    // Its thumbnail (the 96 px mosaic is its pyramid's only level) loads in its box.
    let thumb = wait_for(
        browser,
        "const i = document.querySelector('tbody .thumb img'); \
         return i && i.complete && i.naturalWidth > 0 \
           ? [i.naturalWidth, i.width, i.alt] : null",
        Duration::from_secs(20),
        "the thumbnail loading",
    )
    .await;
    assert_eq!(thumb, json!([96, 64, "Mosaic of astronaut-48.png"]));
    screenshot(browser, "my-jobs.png").await;

    // A file that is no image: the API's message shows in the page.
    let bad = work.join("not-an-image.png");
    std::fs::write(&bad, b"this is plain text, not a picture").unwrap();
    browser.goto(&url("/")).await.unwrap();
    let input = browser.find(Locator::Id("image")).await.unwrap();
    input.send_keys(&bad.display().to_string()).await.unwrap();
    click(browser, "#submit-form button[type=submit]").await;
    let message = wait_for(
        browser,
        "const e = document.getElementById('error'); \
         return e.hidden ? null : e.textContent",
        Duration::from_secs(20),
        "the error message",
    )
    .await;
    let message = message.as_str().unwrap().to_string();
    assert!(!message.is_empty());
    assert!(
        !message.starts_with("The server answered"),
        "the API's own message is shown, not a status: {message}"
    );
    assert_eq!(
        browser.current_url().await.unwrap().path(),
        "/",
        "a refused upload stays on the form"
    );
    let role = script(
        browser,
        "return document.getElementById('error').getAttribute('role')",
    )
    .await;
    assert_eq!(role, "alert");
    // The message sits next to the field, in view, and the field has focus.
    let placed = script(
        browser,
        "const e = document.getElementById('error'); const r = e.getBoundingClientRect(); \
         return [r.top >= 0 && r.bottom <= innerHeight, \
                 e.previousElementSibling && e.previousElementSibling.id, \
                 document.activeElement.id]",
    )
    .await;
    assert_eq!(placed, json!([true, "drop", "image"]));
    screenshot(browser, "home-error.png").await;

    // A library uploaded from its page: the import report shows, and the list names it.
    browser.goto(&url("/libraries")).await.unwrap();
    set_value(browser, "name", "Browser tiles").await;
    let tiles: Vec<String> = ["1f1e9-1f1ff.png", "1f1f2-1f1f5.png", "0034-fe0f-20e3.png"]
        .iter()
        .map(|n| {
            fixture(&format!("engine/tiles/{n}"))
                .canonicalize()
                .unwrap()
                .display()
                .to_string()
        })
        .collect();
    let files = browser.find(Locator::Id("files")).await.unwrap();
    files.send_keys(&tiles.join("\n")).await.unwrap();
    let bytes: u64 = tiles
        .iter()
        .map(|t| std::fs::metadata(t).unwrap().len())
        .sum();
    // Every text the status takes, in order, whatever the pace of the upload.
    script(
        browser,
        "window.statuses = []; \
         new MutationObserver(rs => rs.forEach(r => r.addedNodes.forEach(n => \
             window.statuses.push(n.textContent)))) \
             .observe(document.getElementById('upload-status'), { childList: true }); \
         return null",
    )
    .await;
    click(browser, "#library-form button[type=submit]").await;
    let report = wait_for(
        browser,
        "const r = document.getElementById('report'); return r.hidden ? null : r.innerText",
        Duration::from_secs(30),
        "the import report",
    )
    .await;
    let report = report.as_str().unwrap();
    assert!(report.contains("Browser tiles"), "{report}");
    assert!(report.contains("Tiles imported"), "{report}");
    let upload = script(
        browser,
        "const p = document.getElementById('upload-progress');          return { value: p.value, max: p.max, shown: !document.getElementById('upload').hidden,                   label: document.querySelector('label[for=upload-progress]').textContent,                   statuses: window.statuses }",
    )
    .await;
    assert_eq!(upload["shown"], true, "{upload}");
    assert_eq!(upload["label"], "Upload", "{upload}");
    let max = upload["max"].as_f64().unwrap();
    assert_eq!(
        upload["value"].as_f64().unwrap(),
        max,
        "the bar is full: {upload}"
    );
    assert!(
        max >= bytes as f64,
        "the whole body is counted, {bytes} bytes of files at least: {upload}"
    );
    let statuses: Vec<&str> = upload["statuses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    let [.., importing, last] = statuses.as_slice() else {
        panic!("the status changed fewer than twice: {upload}");
    };
    assert!(statuses[0].starts_with("Sent 0 B of "), "{upload}");
    assert!(
        importing.contains("(100%).") && importing.ends_with("Importing…"),
        "{upload}"
    );
    assert_eq!(
        *last, "Imported 3 tiles into Browser tiles (0 duplicates, 0 skipped); the report follows.",
        "{upload}"
    );
    screenshot(browser, "library-imported.png").await;
    browser.goto(&url("/libraries")).await.unwrap();
    let listed = script(browser, "return document.querySelector('tbody').innerText").await;
    assert!(
        listed.as_str().unwrap().contains("Browser tiles"),
        "{listed}"
    );
    // Every library's contact sheet loads (lazily: once scrolled to).
    script(
        browser,
        "document.querySelector('.sheets').scrollIntoView(); return null",
    )
    .await;
    let sheets = wait_for(
        browser,
        "const s = [...document.querySelectorAll('.sheet img')]; \
         return s.length === 2 && s.every(i => i.complete && i.naturalWidth > 0) ? s.length : 0",
        Duration::from_secs(20),
        "the contact sheets loading",
    )
    .await;
    assert_eq!(sheets, 2);
    screenshot(browser, "libraries-sheets.png").await;

    // The system page names the processor that rendered the job's slices.
    browser.goto(&url("/system")).await.unwrap();
    let processors = wait_for(
        browser,
        "const t = document.getElementById('processors'); \
         if (t && t.innerText.includes('test')) return t.innerText; \
         if (!window.reloading) { window.reloading = true; setTimeout(() => location.reload(), 1000); } \
         return null",
        Duration::from_secs(60),
        "the processor on the system page",
    )
    .await;
    assert!(
        processors.as_str().unwrap_or_default().contains("test"),
        "{processors}"
    );
    screenshot(browser, "system.png").await;

    // The home page's strip of sample tiles follows the chosen library.
    browser.goto(&url("/")).await.unwrap();
    let strip = "const i = document.getElementById('sample-strip'); \
                 return i.complete && i.naturalWidth > 0 ? i.naturalWidth : 0";
    let first = wait_for(browser, strip, Duration::from_secs(20), "the sample strip").await;
    // "Browser tiles" sorts first: its three tiles.
    assert_eq!(first, 3 * 32);
    script(
        browser,
        "const s = document.getElementById('library'); s.value = 'emoji'; \
         s.dispatchEvent(new Event('change')); return null",
    )
    .await;
    let shown = wait_for(
        browser,
        "const i = document.getElementById('sample-strip'); \
         return i.src.includes('/emoji/') && i.complete && i.naturalWidth > 0 \
           ? i.naturalWidth + ' ' + i.alt : null",
        Duration::from_secs(20),
        "the strip of the other library",
    )
    .await;
    assert_eq!(
        shown, "352 Sample tiles of emoji",
        "41 emoji: four rows of eleven"
    );
    screenshot(browser, "home-strip.png").await;

    // The library this browser uploaded is its own to delete; the operator's is not.
    browser.goto(&url("/libraries")).await.unwrap();
    let buttons = script(
        browser,
        "return [...document.querySelectorAll('#catalogue tbody tr')].map(r => \
           [r.dataset.library, !!r.querySelector('button[data-action=delete]')])",
    )
    .await;
    assert_eq!(
        buttons,
        json!([["browser-tiles", true], ["emoji", false]]),
        "{buttons}"
    );
    click(
        browser,
        "tr[data-library=browser-tiles] button[data-action=delete]",
    )
    .await;
    browser.accept_alert().await.unwrap();
    let left = wait_for(
        browser,
        "const rows = [...document.querySelectorAll('#catalogue tbody tr')]; \
         return rows.length === 1 ? rows[0].dataset.library : null",
        Duration::from_secs(10),
        "the deleted library gone from the list",
    )
    .await;
    assert_eq!(left, "emoji");
}

/// With an API key: a page sends the browser to sign in; once signed in, the pages and their
/// scripts' API calls (a job submission, the job's event stream) work with the session cookie.
async fn sign_in_and_use(base: String, browser: Client) {
    let url = |path: &str| format!("{base}{path}");
    let browser = &browser;
    browser.goto(&url("/jobs")).await.unwrap();
    assert_eq!(browser.current_url().await.unwrap().path(), "/signin");
    assert_eq!(browser.title().await.unwrap(), "Sign in · Tessera");
    set_value(browser, "key", "not the key").await;
    click(browser, "form button[type=submit]").await;
    let refused = wait_for(
        browser,
        "const e = document.getElementById('signin-error'); return e ? e.textContent : null",
        Duration::from_secs(10),
        "the refusal",
    )
    .await;
    assert!(
        refused.as_str().unwrap().contains("not the key"),
        "{refused}"
    );
    set_value(browser, "key", KEY).await;
    click(browser, "form button[type=submit]").await;
    wait_for(
        browser,
        "return location.pathname === '/jobs' && document.title.startsWith('My jobs')",
        Duration::from_secs(10),
        "back on the page asked for",
    )
    .await;
    let cookies = script(browser, "return document.cookie").await;
    assert!(
        !cookies.as_str().unwrap().contains("tessera_session"),
        "the session cookie is HttpOnly: {cookies}"
    );

    // The home page's script submits a job with the cookie; the job page's stream follows it.
    browser.goto(&url("/")).await.unwrap();
    let image = fixture("engine/astronaut-48.png").canonicalize().unwrap();
    let input = browser.find(Locator::Id("image")).await.unwrap();
    input.send_keys(&image.display().to_string()).await.unwrap();
    click(browser, "#more-options > summary").await;
    set_value(browser, "tile_size", "8").await;
    set_value(browser, "cells", "12").await;
    click(browser, "#submit-form button[type=submit]").await;
    wait_for(
        browser,
        "return location.pathname.startsWith('/jobs/') && \
           document.getElementById('elapsed').textContent.endsWith(' s')",
        Duration::from_secs(20),
        "the job page reading its job through the API",
    )
    .await;
    screenshot(browser, "signed-in-job.png").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_with_the_api_key_in_chromium() {
    let app = spawn_keyed_app().await;
    let work = tempfile::tempdir().unwrap();
    in_chromium(work.path(), |browser| {
        sign_in_and_use(app.address.clone(), browser)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upload_follow_and_view_a_mosaic_in_chromium() {
    let app = spawn_app().await;
    let work = tempfile::tempdir().unwrap();
    let profile = work.path().join("profile");
    std::fs::create_dir(&profile).unwrap();
    in_chromium(&profile, |browser| {
        run(app.address.clone(), browser, work.path().to_path_buf())
    })
    .await;
}

/// Sends the home page's form and waits on the job page for `what` to be done.
pub(crate) async fn submit_and_finish(browser: &Client, what: &str) {
    click(browser, "#submit-form button[type=submit]").await;
    let state = wait_for(
        browser,
        "const s = document.getElementById('state'); \
         return s && (s.textContent === 'done' || s.textContent === 'failed') ? s.textContent : null",
        JOB_DEADLINE,
        &format!("{what} finishing"),
    )
    .await;
    assert_eq!(state, "done", "{what}");
}

/// A phone's HEIC photo through the form: Chromium cannot show it, so the page learns its size
/// from the server's preview, shows the preview and the sizes' figures, and the job makes the
/// mosaic of the photo upright. Then an AVIF, which Chromium shows itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heic_and_avif_photos_make_mosaics_through_the_form_in_chromium() {
    let app = spawn_app().await;
    let work = tempfile::tempdir().unwrap();
    let profile = work.path().join("profile");
    std::fs::create_dir(&profile).unwrap();
    let photo = work.path().join("phone.heic");
    std::fs::write(&photo, crate::photos::corpus_file("phone.heic")).unwrap();
    let avif = work.path().join("photo.avif");
    std::fs::write(&avif, crate::photos::corpus_file("photo.avif")).unwrap();
    let base = app.address.clone();
    in_chromium(&profile, |browser| async move {
        let browser = &browser;
        browser.goto(&format!("{base}/")).await.unwrap();
        let input = browser.find(Locator::Id("image")).await.unwrap();
        input.send_keys(&photo.display().to_string()).await.unwrap();
        let shown = wait_for(
            browser,
            "const i = document.getElementById('sketch-img'); \
             const f = document.querySelector('[data-figures=poster]').textContent; \
             return !document.getElementById('sketch').hidden && i.complete && i.naturalWidth > 0 \
               && f.includes('megapixels') \
               ? [i.naturalWidth, i.naturalHeight, document.getElementById('natural').textContent] : null",
            Duration::from_secs(30),
            "the server's preview of the HEIC photo",
        )
        .await;
        // 240 x 160 upright (stored turned, with the container's rotation).
        assert!(shown[0].as_u64() > shown[1].as_u64(), "{shown}");
        assert!(
            shown[2].as_str().unwrap().contains("240 × 160 px"),
            "{shown}"
        );
        submit_and_finish(browser, "the HEIC job").await;
        let width = mosaic_loaded(browser, Duration::from_secs(20)).await;
        assert!(width.as_u64().unwrap() > 0);
        screenshot(browser, "heic-job.png").await;

        // An AVIF: Chromium shows it itself, and the job makes its mosaic.
        browser.goto(&format!("{base}/")).await.unwrap();
        let input = browser.find(Locator::Id("image")).await.unwrap();
        input.send_keys(&avif.display().to_string()).await.unwrap();
        wait_for(
            browser,
            "const n = document.getElementById('natural').textContent; \
             return n.includes('240 × 160 px') ? n : null",
            Duration::from_secs(20),
            "the AVIF photo's size",
        )
        .await;
        submit_and_finish(browser, "the AVIF job").await;
    })
    .await;
}

/// "Find my photo": a caption searched on the job page outlines every cell of that tile and
/// names it; a `?tile=` link opens the page doing the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_photo_is_found_by_its_caption_and_by_a_link_in_chromium() {
    let app = spawn_app().await;
    let id = app
        .submit(crate::support::job_form(crate::support::astronaut()))
        .await;
    let job = app.wait_until_finished(&id).await;
    assert_eq!(job["state"], "done", "{job}");
    let placements = app.get_placements(&id).await;
    // The most used tile: several cells to outline.
    let tile = placements["tiles"]
        .as_array()
        .unwrap()
        .iter()
        .max_by_key(|t| t["uses"].as_u64())
        .unwrap()
        .clone();
    let (caption, name, uses) = (
        tile["caption"].as_str().unwrap().to_string(),
        tile["name"].as_str().unwrap().to_string(),
        tile["uses"].as_u64().unwrap(),
    );
    let work = tempfile::tempdir().unwrap();
    let profile = work.path().join("profile");
    std::fs::create_dir(&profile).unwrap();
    let base = app.address.clone();
    in_chromium(&profile, |browser| async move {
        let browser = &browser;
        browser.goto(&format!("{base}/jobs/{id}")).await.unwrap();
        mosaic_loaded(browser, Duration::from_secs(20)).await;
        set_value(browser, "find-q", &caption).await;
        click(browser, "#find button[type=submit]").await;
        let found = wait_for(
            browser,
            "const v = document.getElementById('viewer'); \
             return v.dataset.found ? [Number(v.dataset.found), \
               document.querySelectorAll('#found-cells .found-cell').length, \
               document.getElementById('find-result').textContent, \
               document.getElementById('cell-caption').textContent, \
               Number(v.dataset.zoom)] : null",
            Duration::from_secs(20),
            "the cells of the photo searched",
        )
        .await;
        assert_eq!(found[0].as_u64(), Some(uses), "{found}");
        assert_eq!(found[1].as_u64(), Some(uses), "every cell outlined: {found}");
        assert!(found[2].as_str().unwrap().contains(&name), "{found}");
        assert!(found[4].as_f64().unwrap() > 1.0, "the view flew in: {found}");
        screenshot(browser, "find-photo.png").await;

        // The link an organiser sends a guest.
        browser
            .goto(&format!("{base}/jobs/{id}?tile={}", name.replace('/', "%2F")))
            .await
            .unwrap();
        let linked = wait_for(
            browser,
            "const v = document.getElementById('viewer'); \
             return v.dataset.found ? [Number(v.dataset.found), document.getElementById('find-q').value] : null",
            Duration::from_secs(20),
            "the photo a link names",
        )
        .await;
        assert_eq!(linked[0].as_u64(), Some(uses), "{linked}");
        assert_eq!(linked[1], name.as_str(), "{linked}");
    })
    .await;
}

/// Cancel on the job page stops a job that is still running: with no workers the job waits in
/// the queue, and its owner's browser cancels it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_a_running_job_in_chromium() {
    let app = crate::support::spawn_app_with(crate::support::test_settings(), false).await;
    let work = tempfile::tempdir().unwrap();
    let base = app.address.clone();
    in_chromium(work.path(), |browser| async move {
        let browser = &browser;
        browser.goto(&format!("{base}/")).await.unwrap();
        let image = fixture("engine/astronaut-48.png").canonicalize().unwrap();
        let input = browser.find(Locator::Id("image")).await.unwrap();
        input.send_keys(&image.display().to_string()).await.unwrap();
        wait_for(
            browser,
            "return document.getElementById('output-size').textContent.includes(' px') || null",
            Duration::from_secs(10),
            "the photo read",
        )
        .await;
        click(browser, "#go").await;
        wait_for(
            browser,
            "const c = document.getElementById('cancel'); \
             return location.pathname.startsWith('/jobs/') && c && !c.hidden || null",
            Duration::from_secs(20),
            "the job page with its Cancel button",
        )
        .await;
        assert_eq!(
            script(
                browser,
                "return document.getElementById('state').textContent"
            )
            .await,
            "queued"
        );
        click(browser, "#cancel").await;
        let ended = wait_for(
            browser,
            "const s = document.getElementById('state').textContent; \
             return s === 'failed' ? document.getElementById('failure').textContent : null",
            Duration::from_secs(20),
            "the job cancelled",
        )
        .await;
        assert!(ended.as_str().unwrap().contains("cancel"), "{ended}");
        assert_eq!(
            script(browser, "return document.getElementById('cancel').hidden").await,
            true
        );
        screenshot(browser, "job-cancelled.png").await;
    })
    .await;
}

/// A print through the form: the paper sizes the grid in the page as the server does, tiles
/// that print under 1 cm are warned of on the form, and the job page states the print size and
/// the warning.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_print_is_sized_and_warned_of_on_the_form_in_chromium() {
    let app = spawn_app().await;
    let work = tempfile::tempdir().unwrap();
    let profile = work.path().join("profile");
    std::fs::create_dir(&profile).unwrap();
    let base = app.address.clone();
    in_chromium(&profile, |browser| async move {
        let browser = &browser;
        browser.goto(&format!("{base}/")).await.unwrap();
        let image = fixture("engine/astronaut-48.png").canonicalize().unwrap();
        let input = browser.find(Locator::Id("image")).await.unwrap();
        input.send_keys(&image.display().to_string()).await.unwrap();
        click(browser, "input[name=size][value=paper]").await;
        set_value(browser, "print", "A5@72dpi").await;
        let size = wait_for(
            browser,
            // The size of the print asked for, not the one shown before it was typed.
            "const t = document.getElementById('output-size').textContent; \
             return t.startsWith('406 × 406 px (14 × 14 tiles') ? t : null",
            Duration::from_secs(10),
            "the print's output size",
        )
        .await;
        assert!(
            size.as_str()
                .unwrap()
                .starts_with("406 × 406 px (14 × 14 tiles, printing 14.3 × 14.3 cm"),
            "{size}"
        );
        let warned = script(
            browser,
            "return document.getElementById('print-warning').hidden",
        )
        .await;
        assert_eq!(warned, json!(true), "1 cm tiles draw no warning");
        click(browser, "#more-options > summary").await;
        set_value(browser, "tile_size", "8").await;
        let warning = wait_for(
            browser,
            "const w = document.getElementById('print-warning'); \
             return w.hidden ? null : w.textContent",
            Duration::from_secs(10),
            "the small-tile warning",
        )
        .await;
        assert!(
            warning
                .as_str()
                .unwrap()
                .contains("print 0.28 cm wide at 72 dpi"),
            "{warning}"
        );
        submit_and_finish(browser, "the print job").await;
        let page = script(browser, "return document.body.innerText").await;
        let page = page.as_str().unwrap();
        assert!(page.contains("on A5@72dpi"), "{page}");
        assert!(page.contains("0.28 cm wide at 72 dpi"), "{page}");
    })
    .await;
}

/// "Make the mosaic" once a photo is chosen: inside the first screen of a laptop (the form in
/// two columns), within two screens of a phone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn make_the_mosaic_is_in_reach_on_a_laptop_and_a_phone_in_chromium() {
    let app = spawn_app().await;
    let work = tempfile::tempdir().unwrap();
    let photo = work.path().join("photo.png");
    std::fs::write(&photo, astronaut()).unwrap();
    for phone in [false, true] {
        let profile = work.path().join(format!("profile-{phone}"));
        std::fs::create_dir(&profile).unwrap();
        let (base, photo) = (app.address.clone(), photo.clone());
        let steps = move |browser: fantoccini::Client| async move {
            let browser = &browser;
            if !phone {
                browser.set_window_size(1366, 768).await.unwrap();
            }
            browser.goto(&format!("{base}/")).await.unwrap();
            let input = browser.find(Locator::Id("image")).await.unwrap();
            input.send_keys(&photo.display().to_string()).await.unwrap();
            wait_for(
                browser,
                "const i = document.getElementById('sketch-img'); \
                 return !document.getElementById('sketch').hidden && i.complete && i.naturalWidth > 0",
                Duration::from_secs(30),
                "the preview",
            )
            .await;
            let reach = script(
                browser,
                "window.scrollTo(0, 0); const r = document.getElementById('go').getBoundingClientRect(); \
                 return [r.bottom / innerHeight, document.documentElement.scrollWidth <= innerWidth]",
            )
            .await;
            let name = if phone {
                "home-phone.png"
            } else {
                "home-laptop.png"
            };
            screenshot(browser, name).await;
            let screens = reach[0].as_f64().unwrap();
            let most = if phone { 2.0 } else { 1.0 };
            assert!(
                screens <= most,
                "phone {phone}: the button ends {screens} screens down"
            );
            assert_eq!(
                reach[1], true,
                "phone {phone}: the page is wider than the screen"
            );
        };
        if phone {
            in_chromium_phone(&profile, steps).await;
        } else {
            in_chromium(&profile, steps).await;
        }
    }
}
