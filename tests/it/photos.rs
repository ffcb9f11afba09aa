//! Photos as people have them: the corpus `tests/fixtures/photos/make_corpus.py` makes from one
//! real photograph (every EXIF orientation, Display P3, Adobe RGB and ProPhoto profiles, a PNG
//! gamma, CMYK, 16-bit, progressive, TIFF, BMP, an iPhone-style HEIC, AVIF, cut-off and fake
//! files). Each file is decoded as a target and as a tile, answered through the API, imported as
//! a library, and the colour-managed ones made into mosaics on both storage backends.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use reqwest::StatusCode;
use reqwest::multipart::{Form, Part};
use serde::Deserialize;
use serde_json::Value;
use tessera_engine::color::{ciede2000, srgb_to_lab};

use crate::support::{
    TestApp, error_code, python, spawn_app, spawn_app_on_azurite, spawn_app_with, test_settings,
    zip_of,
};

/// One corpus file and what it must give (see make_corpus.py).
#[derive(Debug, Deserialize)]
struct Case {
    file: String,
    /// `ok` or the API's error code.
    target: String,
    /// `ok`, `skipped` or `duplicate`.
    tile: String,
    /// Width and height, upright.
    size: [u32; 2],
    /// A corpus file it must decode to nearly.
    same_as: Option<String>,
    /// A picture in refs/ it must decode to nearly: its pixels converted to sRGB by LittleCMS.
    reference: Option<String>,
    /// A file in refs/ with the same values and no profile: it must decode differently.
    untagged: Option<String>,
    /// Lossy in another way than its comparison (a re-encoding): a looser bound.
    #[serde(default)]
    loose: bool,
}

struct Corpus {
    root: PathBuf,
    cases: Vec<Case>,
}

impl Corpus {
    fn file(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.root.join("corpus").join(name)).unwrap()
    }

    fn reference(&self, name: &str) -> Vec<u8> {
        std::fs::read(self.root.join("refs").join(name)).unwrap()
    }

    fn case(&self, name: &str) -> &Case {
        self.cases.iter().find(|c| c.file == name).unwrap()
    }
}

/// The corpus, made once per run in a folder that lives as long as the process.
fn corpus() -> &'static Corpus {
    static CORPUS: OnceLock<Corpus> = OnceLock::new();
    CORPUS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap().keep();
        let script =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/photos/make_corpus.py");
        let out = Command::new(python())
            .arg(&script)
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "make_corpus.py failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let cases =
            serde_json::from_slice(&std::fs::read(dir.join("expected.json")).unwrap()).unwrap();
        Corpus { root: dir, cases }
    })
}

/// A corpus file's bytes (the browser test uploads the HEIC through the form).
pub(crate) fn corpus_file(name: &str) -> Vec<u8> {
    corpus().file(name)
}

/// Mean absolute difference of two RGB8 images of one size, per channel value.
fn mean_difference(a: &image::RgbImage, b: &image::RgbImage) -> f64 {
    assert_eq!(a.dimensions(), b.dimensions());
    let sum: u64 = a
        .as_raw()
        .iter()
        .zip(b.as_raw())
        .map(|(x, y)| u64::from(x.abs_diff(*y)))
        .sum();
    sum as f64 / a.as_raw().len() as f64
}

fn decode(bytes: &[u8]) -> Result<image::RgbImage, tessera_engine::Error> {
    tessera_engine::decode_target(bytes, [255, 255, 255])
}

/// A reference picture, decoded plainly (it is an untagged sRGB PNG).
fn plain(bytes: &[u8]) -> image::RgbImage {
    image::load_from_memory(bytes).unwrap().into_rgb8()
}

#[test]
fn every_corpus_file_decodes_as_a_target_to_its_expected_picture() {
    let corpus = corpus();
    for case in &corpus.cases {
        let decoded = decode(&corpus.file(&case.file));
        if case.target != "ok" {
            assert!(
                decoded.is_err(),
                "{} decoded; expected {}",
                case.file,
                case.target
            );
            continue;
        }
        let img = decoded.unwrap_or_else(|e| panic!("{}: {e}", case.file));
        assert_eq!(
            img.dimensions(),
            (case.size[0], case.size[1]),
            "{}",
            case.file
        );
        let bound = if case.loose { 4.0 } else { 1.5 };
        if let Some(other) = &case.same_as {
            let d = mean_difference(&img, &decode(&corpus.file(other)).unwrap());
            assert!(d <= bound, "{} is {d:.2} from {other}", case.file);
        }
        if let Some(reference) = &case.reference {
            let d = mean_difference(&img, &plain(&corpus.reference(reference)));
            assert!(d <= bound, "{} is {d:.2} from {reference}", case.file);
        }
        if let Some(untagged) = &case.untagged {
            let d = mean_difference(&img, &decode(&corpus.reference(untagged)).unwrap());
            assert!(
                d > 2.0,
                "{} decodes as if its profile were not there ({d:.2})",
                case.file
            );
        }
    }
}

#[tokio::test]
async fn every_corpus_file_gets_its_answer_as_a_target() {
    // Nothing renders: the jobs stay queued, so the quotas are raised to take them all.
    let mut settings = test_settings();
    settings.max_active_jobs_per_client = 1000;
    settings.max_active_jobs_per_address = 1000;
    settings.max_active_jobs = 1000;
    let app = spawn_app_with(settings, false).await;
    let corpus = corpus();
    for case in &corpus.cases {
        let form = Form::new()
            .part(
                "image",
                Part::bytes(corpus.file(&case.file)).file_name(case.file.clone()),
            )
            .text("library", "emoji")
            .text("cells", "12")
            .text("tile_size", "8");
        let res = app.post_job(form).await;
        if case.target == "ok" {
            assert_eq!(res.status(), StatusCode::ACCEPTED, "{}", case.file);
            let job: Value = res.json().await.unwrap();
            // Turned photos are planned upright: a 3:2 photo stays wider than tall.
            let (w, h) = (case.size[0], case.size[1]);
            let output = &job["output"];
            let (ow, oh) = (
                output["width"].as_u64().unwrap(),
                output["height"].as_u64().unwrap(),
            );
            assert_eq!(ow > oh, w > h, "{}: {ow} x {oh}", case.file);
        } else {
            let (status, code) = error_code(res).await;
            assert_eq!(code, case.target, "{} ({status})", case.file);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_library_of_the_corpus_names_every_file_it_leaves_out() {
    let app = spawn_app().await;
    let corpus = corpus();
    let entries: Vec<(&str, Vec<u8>)> = corpus
        .cases
        .iter()
        .map(|c| (c.file.as_str(), corpus.file(&c.file)))
        .collect();
    let form = Form::new().text("name", "Corpus").part(
        "files",
        Part::bytes(zip_of(&entries)).file_name("corpus.zip"),
    );
    let res = app.post_library(form).await;
    assert_eq!(res.status(), StatusCode::CREATED);
    let body: Value = res.json().await.unwrap();
    let report = &body["report"];
    let of = |tile: &str| -> Vec<&str> {
        let mut names: Vec<&str> = corpus
            .cases
            .iter()
            .filter(|c| c.tile == tile)
            .map(|c| c.file.as_str())
            .collect();
        names.sort();
        names
    };
    // Pixel-identical files are merged (the orientation samples can be, once upright).
    let merged = report["duplicates"].as_array().unwrap();
    assert_eq!(
        report["imported"].as_u64().unwrap() as usize + merged.len(),
        of("ok").len() + of("duplicate").len(),
        "{report}"
    );
    for name in of("duplicate") {
        assert!(merged.iter().any(|d| d["name"] == name), "{name}: {report}");
    }
    let mut skipped: Vec<&str> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            assert!(!s["reason"].as_str().unwrap().is_empty(), "{s}");
            s["name"].as_str().unwrap()
        })
        .collect();
    skipped.sort();
    assert_eq!(skipped, of("skipped"), "{report}");
    let reason = |name: &str| {
        report["skipped"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap()["reason"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(reason("IMG_0001.CR2").contains("camera RAW"), "{report}");
    assert!(reason("cut-off.jpg").contains("cut off"), "{report}");
    assert!(reason("notes.txt").contains("not an image"), "{report}");
    // The libraries page names them too.
    let page = app.get("/libraries").await.text().await.unwrap();
    for name in of("skipped") {
        assert!(
            page.contains(name),
            "the libraries page does not name {name}"
        );
    }

    // Nothing usable: the answer says what each file is.
    let junk = ["IMG_0001.CR2", "layers.psd", "notes.txt"].map(|f| (f, corpus.file(f)));
    let form = Form::new()
        .text("name", "Junk")
        .part("files", Part::bytes(zip_of(&junk)).file_name("junk.zip"));
    let res = app.post_library(form).await;
    assert_eq!(res.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let body: Value = res.json().await.unwrap();
    let message = body["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    for said in ["camera RAW", "IMG_0001.CR2", "Photoshop", "notes.txt"] {
        assert!(message.contains(said), "{said} not in {message}");
    }
}

/// Mean sRGB of each `tile` x `tile` cell of a mosaic, as Lab.
fn cell_labs(png: &[u8], tile: u32) -> Vec<[f64; 3]> {
    let img = plain(png);
    let (w, h) = img.dimensions();
    let mut labs = Vec::new();
    for cy in 0..h / tile {
        for cx in 0..w / tile {
            let mut sum = [0f64; 3];
            for y in cy * tile..(cy + 1) * tile {
                for x in cx * tile..(cx + 1) * tile {
                    let p = img.get_pixel(x, y).0;
                    for c in 0..3 {
                        sum[c] += f64::from(p[c]);
                    }
                }
            }
            let n = f64::from(tile * tile);
            labs.push(srgb_to_lab([sum[0] / n, sum[1] / n, sum[2] / n]));
        }
    }
    labs
}

fn mean_ciede2000(a: &[[f64; 3]], b: &[[f64; 3]]) -> f64 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| ciede2000(*x, *y)).sum::<f64>() / a.len() as f64
}

/// Makes a mosaic of `bytes` (24 cells of 8 px across) and returns the PNG. Its placements are
/// checked on the way: every cell's tile listed once, in JSON and in CSV. Tiles may repeat
/// anywhere, so each cell takes its nearest tile: a colour a step off changes that cell's tile
/// at most, not a cascade of the cells after it.
async fn mosaic(app: &TestApp, name: &str, bytes: Vec<u8>) -> Vec<u8> {
    let form = Form::new()
        .part("image", Part::bytes(bytes).file_name(name.to_string()))
        .text("library", "emoji")
        .text("cells", "24")
        .text("tile_size", "8")
        .text("repeat_radius", "0");
    let id = app.submit(form).await;
    let job = app.wait_until_finished(&id).await;
    assert_eq!(job["state"], "done", "{name}: {job}");
    let res = app.get_result(&id, &[]).await;
    assert_eq!(res.status(), StatusCode::OK);
    let png = res.bytes().await.unwrap().to_vec();
    check_placements(app, &id, &job).await;
    png
}

/// The job's placements account for every cell once, in JSON and in CSV, and a search finds
/// a tile by its caption.
async fn check_placements(app: &TestApp, id: &str, job: &Value) {
    let cells = job["output"]["cols"].as_u64().unwrap() * job["output"]["rows"].as_u64().unwrap();
    let placements = app.get_placements(id).await;
    let tiles = placements["tiles"].as_array().unwrap();
    let uses: u64 = tiles.iter().map(|t| t["uses"].as_u64().unwrap()).sum();
    assert_eq!(uses, cells, "{placements}");
    assert_eq!(placements["uses"], cells);
    let mut seen = std::collections::HashSet::new();
    for t in tiles {
        assert_eq!(
            t["cells"].as_array().unwrap().len() as u64,
            t["uses"].as_u64().unwrap()
        );
        for c in t["cells"].as_array().unwrap() {
            assert!(seen.insert(c.to_string()), "cell {c} listed twice");
        }
    }
    let res = app
        .get_with(
            &format!("/api/v1/jobs/{id}/placements"),
            &[("Accept", "text/csv")],
        )
        .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/csv")
    );
    let csv = res.text().await.unwrap();
    assert_eq!(csv.lines().next(), Some("tile,name,caption,uses,cells"));
    assert_eq!(csv.lines().count(), tiles.len() + 1);
    // Cells as a spreadsheet takes them: R1C1, counted from 1 as the page counts.
    let first: Vec<String> = tiles[0]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "R{}C{}",
                c[0].as_u64().unwrap() + 1,
                c[1].as_u64().unwrap() + 1
            )
        })
        .collect();
    let line = csv.lines().nth(1).unwrap();
    assert!(line.ends_with(&format!(",{}", first.join(" "))), "{line}");
    for line in csv.lines().skip(1) {
        let cells = line.rsplit(',').next().unwrap();
        assert!(
            !cells.contains(':'),
            "no cell a spreadsheet reads as a time: {line}"
        );
    }
    // "Find my photo": the first tile's caption names it, first.
    let caption = tiles[0]["caption"].as_str().unwrap();
    let encoded: String = caption
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let url = format!("/api/v1/jobs/{id}/placements?q={encoded}");
    let found: Value = app.get(&url).await.json().await.unwrap();
    assert_eq!(found["tiles"][0]["name"], tiles[0]["name"], "{found}");
}

/// A P3 photo's mosaic matches the mosaic of the photo converted to sRGB beforehand, and not the
/// untagged values' mosaic; a phone's HEIC and an AVIF make mosaics of the photo upright.
async fn colour_managed_mosaics(app: &TestApp) {
    let corpus = corpus();
    let p3 = cell_labs(&mosaic(app, "p3.jpg", corpus.file("p3.jpg")).await, 8);
    let case = corpus.case("p3.jpg");
    let reference = corpus.reference(case.reference.as_deref().unwrap());
    let converted = cell_labs(&mosaic(app, "reference.png", reference).await, 8);
    let untagged = corpus.reference(case.untagged.as_deref().unwrap());
    let untagged = cell_labs(&mosaic(app, "untagged.jpg", untagged).await, 8);
    let near = mean_ciede2000(&p3, &converted);
    let far = mean_ciede2000(&p3, &untagged);
    eprintln!(
        "P3 mosaic: mean CIEDE2000 {near:.2} from the converted photo's, {far:.2} from the untagged"
    );
    assert!(
        near <= 1.5,
        "P3 mosaic vs sRGB-converted: mean CIEDE2000 {near:.2}"
    );
    assert!(
        far > near * 2.0 && far > 1.5,
        "P3 vs untagged {far:.2}, vs converted {near:.2}"
    );
    for name in ["phone.heic", "photo.avif"] {
        let labs = cell_labs(&mosaic(app, name, corpus.file(name)).await, 8);
        assert_eq!(
            labs.len(),
            converted.len(),
            "{name}: upright, 24 x 16 cells"
        );
        let d = mean_ciede2000(&labs, &converted);
        eprintln!("{name} mosaic: mean CIEDE2000 {d:.2} from the converted photo's");
        assert!(
            d <= 3.0,
            "{name} vs the converted photo: mean CIEDE2000 {d:.2}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn colour_managed_mosaics_on_the_embedded_backend() {
    colour_managed_mosaics(&spawn_app().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn colour_managed_mosaics_on_azurite() {
    colour_managed_mosaics(&spawn_app_on_azurite().await).await;
}

/// A JPEG of `width` x `height` as a camera makes one (a colour wash of its own), for a library.
pub(crate) fn camera_jpeg(width: u32, height: u32, hue: u8) -> Vec<u8> {
    let img = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([hue, (x * 255 / width) as u8, (y * 255 / height) as u8 ^ hue])
    });
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, 80)
        .encode(img.as_raw(), width, height, image::ExtendedColorType::Rgb8)
        .unwrap();
    out
}

/// Photos as cameras and phones make them (24 and 48 megapixels, over the side a tile is
/// decoded whole at) become tiles, read reduced: a zip of ten makes a library with every photo
/// in, and a job that names only a photo and that library is done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn camera_sized_photos_are_tiles_and_a_job_at_the_defaults_uses_them() {
    let app = spawn_app().await;
    let mut entries: Vec<(String, Vec<u8>)> = vec![
        ("DSC_0001.JPG".into(), camera_jpeg(6000, 4000, 10)),
        ("PXL_0002.jpg".into(), camera_jpeg(8064, 6048, 200)),
    ];
    for i in 0..8u8 {
        entries.push((
            format!("IMG_{i:04}.jpg"),
            camera_jpeg(4032, 3024, 30 + i * 20),
        ));
    }
    let named: Vec<(&str, Vec<u8>)> = entries
        .iter()
        .map(|(n, b)| (n.as_str(), b.clone()))
        .collect();
    let form = Form::new()
        .text("name", "My photos")
        .part("files", Part::bytes(zip_of(&named)).file_name("photos.zip"));
    let res = app.post_library(form).await;
    let status = res.status();
    let body: Value = res.json().await.unwrap();
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["report"]["imported"], 10, "{body}");
    assert_eq!(body["report"]["skipped"], serde_json::json!([]), "{body}");
    let library = body["library"]["id"].as_str().unwrap().to_string();
    let form = Form::new().text("library", library).part(
        "image",
        Part::bytes(crate::support::astronaut()).file_name("photo.png"),
    );
    let id = app.submit(form).await;
    let job = app.wait_until_finished(&id).await;
    assert_eq!(job["state"], "done", "{job}");
}
