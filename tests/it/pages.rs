//! The browser pages over real HTTP: they render, escape what uploads name, list a browser's own
//! jobs, and the API refuses a cookie-carrying POST that did not come from this site.

use reqwest::multipart::{Form, Part};
use serde_json::Value;
use tessera_shared::jobs::JobState;
use tessera_shared::keys::BlobKey;
use tessera_shared::storage::PutMode;
use uuid::Uuid;

use crate::support::{TestApp, astronaut, fixture, job_form, sized_job_form, spawn_app};

async fn html(app: &TestApp, path: &str, cookie: Option<Uuid>) -> (u16, String) {
    let mut req = app.client.get(app.url(path));
    if let Some(c) = cookie {
        req = req.header("Cookie", format!("tessera_client={c}"));
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    if status == 200 {
        assert!(
            res.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/html"),
            "{path}"
        );
    }
    (status, res.text().await.unwrap())
}

async fn post_job_as(app: &TestApp, client: Uuid, headers: &[(&str, &str)]) -> reqwest::Response {
    let cookie = format!("tessera_client={client}");
    let headers: Vec<_> = [("Cookie", cookie.as_str())]
        .into_iter()
        .chain(headers.iter().copied())
        .collect();
    app.post_job_with(job_form(astronaut()), &headers).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_render_with_their_assets() {
    let app = spawn_app().await;
    let (status, home) = html(&app, "/", None).await;
    assert_eq!(status, 200);
    assert!(
        home.contains(r#"<option value="emoji" data-shape="1:1" data-transparent="true">"#),
        "{home}"
    );
    for id in [
        "image",
        "library",
        "tile_size",
        "cells",
        "repeat_radius",
        "blend",
        "adaptive",
        "background",
    ] {
        assert!(
            home.contains(&format!(r#"<label for="{id}">"#)),
            "no label for {id}"
        );
    }
    assert!(home.contains(r#"id="adaptive-help""#));
    assert!(home.contains(r#"id="background-help""#));
    assert!(home.contains(r#"role="alert""#));
    for id in ["flip", "rotate"] {
        assert!(
            home.contains(&format!(r#"type="checkbox" id="{id}" name="{id}""#)),
            "no checkbox {id}"
        );
        assert!(
            home.contains(&format!(r#"id="{id}-help""#)),
            "no help for {id}"
        );
    }
    assert!(home.contains(r#"<script src="/static/home.js">"#));

    for (path, needle) in [
        ("/libraries", "Upload a library"),
        ("/system", "imagerequest-poison"),
        ("/api", "/jobs/{id}/result"),
        ("/jobs", "My jobs"),
        ("/events/new", r#"id="event-form""#),
        ("/events", "No events from this browser yet"),
    ] {
        let (status, body) = html(&app, path, None).await;
        assert_eq!(status, 200, "{path}");
        assert!(body.contains(needle), "{path} lacks {needle:?}");
    }
    for (asset, kind) in [
        ("style.css", "text/css"),
        ("home.js", "text/javascript"),
        ("job.js", "text/javascript"),
        ("libraries.js", "text/javascript"),
        ("new_event.js", "text/javascript"),
    ] {
        let res = app.get(&format!("/static/{asset}")).await;
        assert_eq!(res.status(), 200, "{asset}");
        assert!(
            res.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with(kind)
        );
        assert!(!res.text().await.unwrap().is_empty());
    }
    assert_eq!(app.get("/static/missing.js").await.status(), 404);
    let (status, _) = html(&app, "/jobs/not-a-job", None).await;
    assert_eq!(status, 404);
    let (status, _) = html(&app, &format!("/jobs/{}", Uuid::new_v4()), None).await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_from_uploads_are_escaped() {
    let app = spawn_app().await;
    let evil = "<script>alert(1)</script>";
    let tile = std::fs::read(fixture("engine/tiles/1f1e9-1f1ff.png")).unwrap();
    let form = Form::new()
        .text("name", evil)
        .part("files", Part::bytes(tile.clone()).file_name("a.png"))
        .part("files", Part::bytes(astronaut()).file_name("b.png"));
    let res = app
        .client
        .post(app.url("/api/v1/libraries"))
        .multipart(form)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201, "{}", res.text().await.unwrap());
    for path in ["/libraries", "/"] {
        let (_, body) = html(&app, path, None).await;
        assert!(!body.contains(evil), "{path} shows the name unescaped");
        assert!(
            body.contains("&#60;script&#62;") || body.contains("&lt;script&gt;"),
            "{path}"
        );
    }

    let client = Uuid::new_v4();
    let form = Form::new()
        .part(
            "image",
            Part::bytes(astronaut()).file_name("<img src=x onerror=alert(1)>.png"),
        )
        .text("library", "emoji")
        .text("cells", "8");
    let res = app
        .post_job_with(form, &[("X-Client-Id", &client.to_string())])
        .await;
    assert_eq!(res.status(), 202);
    let (_, body) = html(&app, "/jobs", Some(client)).await;
    assert!(!body.contains("<img src=x"), "{body}");
    assert!(
        body.contains("onerror=alert(1)"),
        "the name is shown, escaped"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn my_jobs_lists_this_browsers_jobs_newest_first() {
    let app = spawn_app().await;
    let me = Uuid::new_v4();
    let other = Uuid::new_v4();
    let mut mine = Vec::new();
    for _ in 0..2 {
        let res = post_job_as(&app, me, &[("X-Requested-With", "tessera")]).await;
        assert_eq!(res.status(), 202);
        let job: Value = res.json().await.unwrap();
        mine.push(job["id"].as_str().unwrap().to_string());
    }
    let res = post_job_as(&app, other, &[("X-Requested-With", "tessera")]).await;
    let theirs: Value = res.json().await.unwrap();
    let theirs = theirs["id"].as_str().unwrap().to_string();

    let (status, body) = html(&app, "/jobs", Some(me)).await;
    assert_eq!(status, 200);
    let first = body.find(&mine[1]).expect("the newer job is listed");
    let second = body.find(&mine[0]).expect("the older job is listed");
    assert!(first < second, "newest first");
    assert!(
        !body.contains(&theirs),
        "another browser's job is not listed"
    );
    let (_, body) = html(&app, "/jobs", None).await;
    assert!(!body.contains(&mine[0]));

    let (status, body) = html(&app, &format!("/jobs/{}", mine[0]), Some(me)).await;
    assert_eq!(status, 200);
    assert!(body.contains(&format!(r#"data-job="{}""#, mine[0])));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cookie_carrying_post_must_come_from_this_site() {
    let app = spawn_app().await;
    let me = Uuid::new_v4();
    let res = post_job_as(&app, me, &[]).await;
    assert_eq!(res.status(), 403);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["error"]["code"], "cross_site_request");
    let res = post_job_as(&app, me, &[("Origin", "http://evil.example")]).await;
    assert_eq!(res.status(), 403);
    let res = app
        .client
        .post(app.url("/api/v1/libraries"))
        .header("Cookie", format!("tessera_client={me}"))
        .multipart(Form::new().text("name", "x"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 403);

    let origin = app.address.clone();
    let res = post_job_as(&app, me, &[("Origin", origin.as_str())]).await;
    assert_eq!(res.status(), 202);
    let res = post_job_as(&app, me, &[("X-Requested-With", "tessera")]).await;
    assert_eq!(res.status(), 202);
    // Without the cookie there is no ambient authority to protect.
    let res = app.post_job(job_form(astronaut())).await;
    assert_eq!(res.status(), 202);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_preview_is_a_downscaled_jpeg_of_the_mosaic() {
    let app = spawn_app().await;
    // 128 cells of 16 px across the 48 px astronaut: a 2048 px square mosaic.
    let id = app.submit(sized_job_form(astronaut(), 16, 128, 4)).await;
    let early = app
        .get(&format!("/api/v1/jobs/{id}/preview"))
        .await
        .status();
    let done = app.wait_until_finished(&id).await;
    assert_eq!(done["state"], "done", "{done}");
    if early != 200 {
        assert_eq!(early, 409, "a preview before the job is done");
    }

    let result = app
        .get(&format!("/api/v1/jobs/{id}/result"))
        .await
        .bytes()
        .await
        .unwrap();
    let full = image::load_from_memory(&result).unwrap().to_rgb8();
    assert_eq!(full.dimensions(), (2048, 2048));
    for _ in 0..2 {
        // The second answer comes from the kept preview.
        let res = app.get(&format!("/api/v1/jobs/{id}/preview")).await;
        assert_eq!(res.status(), 200);
        assert_eq!(res.headers()["content-type"], "image/jpeg");
        let bytes = res.bytes().await.unwrap();
        assert_eq!(
            image::guess_format(&bytes).unwrap(),
            image::ImageFormat::Jpeg
        );
        let small = image::load_from_memory(&bytes).unwrap().to_rgb8();
        assert_eq!(small.dimensions(), (1024, 1024));
        // The same picture: compare a downscaled full mosaic with the preview, coarsely.
        let a = image::imageops::thumbnail(&full, 16, 16);
        let b = image::imageops::thumbnail(&small, 16, 16);
        let diff: u64 = a
            .pixels()
            .zip(b.pixels())
            .map(|(p, q)| (0..3).map(|c| p[c].abs_diff(q[c]) as u64).sum::<u64>())
            .sum();
        let mean = diff as f64 / (16.0 * 16.0 * 3.0);
        assert!(
            mean < 12.0,
            "preview differs from the mosaic by {mean} per channel"
        );
    }
    let missing = app
        .get(&format!("/api/v1/jobs/{}/preview", Uuid::new_v4()))
        .await;
    assert_eq!(missing.status(), 404);
}

/// The `src` of the thumbnail in the row of job `id` on the My jobs page, if it has one.
fn thumbnail_of(body: &str, id: &str) -> Option<String> {
    let row_start = body[..body.find(&format!(r#"href="/jobs/{id}""#))?].rfind("<tr")?;
    let row = &body[row_start..];
    let row = &row[..row.find("</tr>")?];
    let img = &row[row.find("<img ")?..];
    let src = &img[img.find(r#"src=""#)? + 5..];
    Some(src[..src.find('"')?].to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn my_jobs_shows_a_thumbnail_of_each_done_mosaic() {
    let app = spawn_app().await;
    let me = Uuid::new_v4();
    // 40 cells of 16 px: a 640 px mosaic, a pyramid of three levels (640, 320, 160 px).
    let form = sized_job_form(astronaut(), 16, 40, 2);
    let res = app
        .post_job_with(form, &[("X-Client-Id", &me.to_string())])
        .await;
    assert_eq!(res.status(), 202);
    let job: Value = res.json().await.unwrap();
    let done = job["id"].as_str().unwrap().to_string();
    let finished = app.wait_until_finished(&done).await;
    assert_eq!(finished["state"], "done", "{finished}");

    // A job accepted but not picked up yet: its record and the client's index, no message.
    let mut waiting = app
        .platform
        .jobs()
        .get(Uuid::parse_str(&done).unwrap())
        .await
        .unwrap();
    waiting.id = Uuid::new_v4();
    waiting.state = JobState::Queued;
    waiting.result_blob = None;
    waiting.finished_at = None;
    waiting.slices.clear();
    app.platform.jobs().create(&waiting).await.unwrap();
    app.platform
        .blobs
        .put(
            &BlobKey::ClientJob {
                client: me,
                job: waiting.id,
            }
            .path(),
            bytes::Bytes::new(),
            PutMode::Overwrite,
        )
        .await
        .unwrap();

    let (status, body) = html(&app, "/jobs", Some(me)).await;
    assert_eq!(status, 200);
    let src = thumbnail_of(&body, &done).expect("the done job's row has a thumbnail");
    assert_eq!(
        src,
        format!("/api/v1/jobs/{done}/tiles/2/0/0"),
        "the top tile"
    );
    assert!(body.contains(r#"alt="Mosaic of astronaut.png""#), "{body}");
    assert!(body.contains(r#"loading="lazy""#), "{body}");
    assert_eq!(
        thumbnail_of(&body, &waiting.id.to_string()),
        None,
        "a job not done has no thumbnail: {body}"
    );
    assert!(
        body.contains(r#"<span class="thumb thumb-pending">queued</span>"#),
        "{body}"
    );

    for _ in 0..2 {
        // The second answer comes from the kept tile.
        let res = app.get(&src).await;
        assert_eq!(res.status(), 200);
        assert_eq!(res.headers()["content-type"], "image/png");
        let thumb = image::load_from_memory(&res.bytes().await.unwrap()).unwrap();
        assert_eq!((thumb.width(), thumb.height()), (160, 160));
        assert!(thumb.width() <= 256 && thumb.height() <= 256);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_page_shows_commands_made_from_the_document() {
    let app = spawn_app().await;
    let (status, page) = html(&app, "/api", None).await;
    assert_eq!(status, 200);
    for command in [
        "curl -X POST -H &#34;X-Client-Id: $ME&#34; -F image=@photo.jpg http://127.0.0.1:8080/api/v1/jobs",
        "curl http://127.0.0.1:8080/api/v1/jobs/$ID</code>",
        "curl -o picture.png http://127.0.0.1:8080/api/v1/jobs/$ID/result",
        "-F files=@tiles.zip -F name=Holiday http://127.0.0.1:8080/api/v1/libraries",
    ] {
        assert!(page.contains(command), "the API page lacks {command}");
    }
    // One command per documented operation.
    assert_eq!(
        page.matches("<pre><code>curl").count(),
        tessera_web::pages::documented_operations().len()
    );
}

/// The stylesheets parse as CSS (tinycss2, a CSS Syntax Level 3 parser): no parse error (a stray
/// closing bracket is one), no declaration that does not read as one, and no block left open for
/// the end of the file to close (a parser closes it silently, and every rule after the opening
/// moves inside it): a rule put after the sheet must come out at its top level.
#[test]
fn the_stylesheets_parse_with_every_block_closed() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("static");
    let sheets: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "css"))
        .map(|p| p.display().to_string())
        .collect();
    assert!(!sheets.is_empty(), "no stylesheet in {}", root.display());
    let check = r#"
import sys, tinycss2
problems = []
def walk(nodes, path):
    for n in nodes:
        if n.type == "error":
            problems.append(f"{path}: line {n.source_line}: {n.message}")
        for part in ("prelude", "content", "arguments", "value"):
            inner = getattr(n, part, None)
            if isinstance(inner, list):
                walk(inner, path)
def rules(nodes, path):
    for rule in nodes:
        walk([rule], path)
        if rule.type == "qualified-rule":
            walk(tinycss2.parse_blocks_contents(rule.content, skip_comments=True, skip_whitespace=True), path)
        elif rule.type == "at-rule" and rule.content is not None:
            rules(tinycss2.parse_rule_list(rule.content, skip_comments=True, skip_whitespace=True), path)
for path in sys.argv[1:]:
    text = open(path, encoding="utf-8").read() + "\n.end-of-sheet { color: red }\n"
    sheet = tinycss2.parse_stylesheet(text, skip_comments=True, skip_whitespace=True)
    rules(sheet, path)
    last = tinycss2.serialize(sheet[-1].prelude).strip() if sheet and sheet[-1].type == "qualified-rule" else None
    if last != ".end-of-sheet":
        problems.append(f"{path}: a block is left open: the rules after it fall inside it")
print("\n".join(problems))
"#;
    let out = std::process::Command::new(crate::support::python())
        .arg("-c")
        .arg(check)
        .args(&sheets)
        .output()
        .expect("run Python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let problems = String::from_utf8_lossy(&out.stdout);
    assert_eq!(problems.trim(), "", "the stylesheets do not parse cleanly");
}

/// The scripts and the stylesheet go gzipped to a browser that takes it, and whole to one that
/// does not: the same text either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_assets_are_gzipped_for_browsers_that_take_it() {
    use std::io::Read;
    let app = spawn_app().await;
    for name in ["job.js", "home.js", "style.css"] {
        let url = app.url(&format!("/static/{name}"));
        let plain = app.client.get(&url).send().await.unwrap();
        assert_eq!(plain.headers().get("content-encoding"), None, "{name}");
        let plain = plain.bytes().await.unwrap();
        let zipped = app
            .client
            .get(&url)
            .header("Accept-Encoding", "gzip, deflate, br")
            .send()
            .await
            .unwrap();
        assert_eq!(zipped.headers()["content-encoding"], "gzip", "{name}");
        assert_eq!(zipped.headers()["vary"], "Accept-Encoding", "{name}");
        let zipped = zipped.bytes().await.unwrap();
        assert!(
            zipped.len() * 2 < plain.len(),
            "{name}: {} of {}",
            zipped.len(),
            plain.len()
        );
        let mut unzipped = Vec::new();
        flate2::read::GzDecoder::new(&zipped[..])
            .read_to_end(&mut unzipped)
            .unwrap();
        assert_eq!(unzipped, plain, "{name}");
    }
}
