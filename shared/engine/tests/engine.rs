//! Behaviour of the engine on small real fixtures (`tests/fixtures/engine`).

// Test helpers unwrap and print too: a panic is a failed test, with its cause.
#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;

use proptest::prelude::*;
use tessera_engine::*;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/engine")
}

fn library() -> Library {
    let (lib, report) =
        Library::import(&fixtures().join("tiles"), &ImportOptions::default()).unwrap();
    assert_eq!(report.imported, 41);
    assert!(report.skipped.is_empty(), "{:?}", report.skipped);
    lib
}

fn library_cached() -> &'static Library {
    static LIB: std::sync::OnceLock<Library> = std::sync::OnceLock::new();
    LIB.get_or_init(library)
}

fn target() -> image::RgbImage {
    decode_target(
        &std::fs::read(fixtures().join("astronaut-48.png")).unwrap(),
        [255; 3],
    )
    .unwrap()
}

fn opts(cells: u32, tile_size: u32, radius: u32) -> PlanOptions {
    PlanOptions {
        grid: Grid::Cells(cells),
        tile_size: TileSize::square(tile_size),
        repeat_radius: radius,
        ..PlanOptions::default()
    }
}

fn tile_files() -> Vec<(String, Vec<u8>)> {
    let dir = fixtures().join("tiles");
    let mut v: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

fn rgba_png(w: u32, h: u32, px: [u8; 4]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, w, h);
    enc.set_color(png::ColorType::Rgba);
    let mut wr = enc.write_header().unwrap();
    wr.write_image_data(&px.repeat((w * h) as usize)).unwrap();
    wr.finish().unwrap();
    out
}

#[test]
fn corrupt_files_are_skipped_and_duplicates_merged() {
    let mut files = tile_files();
    let first = files[0].clone();
    files.push(("copy-of-first.png".into(), first.1.clone()));
    files.push(("broken.png".into(), first.1[..first.1.len() / 3].to_vec()));
    files.push(("not-an-image.jpg".into(), b"hello".to_vec()));
    let (lib, report) = Library::from_files(files, &ImportOptions::default()).unwrap();
    assert_eq!(lib.len(), 41);
    assert_eq!(report.imported, 41);
    let skipped: Vec<&str> = report.skipped.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(skipped, ["broken.png", "not-an-image.jpg"]);
    assert_eq!(
        report.duplicates,
        vec![("copy-of-first.png".to_string(), first.0)]
    );
}

#[test]
fn transparent_tiles_are_composited_onto_the_background() {
    let files = vec![
        ("clear.png".to_string(), rgba_png(8, 8, [10, 200, 30, 0])),
        ("half.png".to_string(), rgba_png(12, 8, [0, 0, 0, 128])),
    ];
    let (white, _) = Library::from_files(files.clone(), &ImportOptions::default()).unwrap();
    assert!(
        white.rendition(0).iter().all(|&v| v == 255),
        "fully transparent becomes the background"
    );
    // Half-transparent black over white is mid grey.
    assert!(
        white.rendition(1).iter().all(|&v| v == 127),
        "{:?}",
        &white.rendition(1)[..3]
    );
    let red = ImportOptions {
        background: [255, 0, 0],
        ..ImportOptions::default()
    };
    let (lib, _) = Library::from_files(files, &red).unwrap();
    assert!(lib.rendition(0).chunks(3).all(|p| p == [255, 0, 0]));
}

/// A `size` px PNG of a disc of `colour` on a transparent ground, as emoji are.
fn cutout_png(size: u32, colour: [u8; 3]) -> Vec<u8> {
    let mut px = Vec::with_capacity((size * size * 4) as usize);
    let r = size as f32 * 0.3;
    for y in 0..size {
        for x in 0..size {
            let (dx, dy) = (
                x as f32 + 0.5 - size as f32 / 2.0,
                y as f32 + 0.5 - size as f32 / 2.0,
            );
            let a = if dx * dx + dy * dy <= r * r { 255 } else { 0 };
            px.extend_from_slice(&[colour[0], colour[1], colour[2], a]);
        }
    }
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, size, size);
    enc.set_color(png::ColorType::Rgba);
    let mut wr = enc.write_header().unwrap();
    wr.write_image_data(&px).unwrap();
    wr.finish().unwrap();
    out
}

fn opaque_library() -> Library {
    let files = (0..4u8)
        .map(|i| (format!("{i}.png"), rgba_png(8, 8, [i * 60, 30, 200, 255])))
        .collect();
    Library::from_files(files, &ImportOptions::default())
        .unwrap()
        .0
}

/// Twenty cut-out tiles of varied colours.
fn cutouts() -> Vec<(String, Vec<u8>)> {
    (0..20u8)
        .map(|i| {
            let colour = [i * 12, 255 - i * 11, i.wrapping_mul(37)];
            (format!("cut-{i:02}.png"), cutout_png(48, colour))
        })
        .collect()
}

#[test]
fn transparent_tiles_laid_over_another_background_match_an_import_over_it() {
    let white = Library::from_files(cutouts(), &ImportOptions::default())
        .unwrap()
        .0;
    let teal = [0, 128, 128];
    let opts = ImportOptions {
        background: teal,
        ..ImportOptions::default()
    };
    let imported = Library::from_files(cutouts(), &opts).unwrap().0;
    assert!(white.is_transparent() && imported.is_transparent());
    let over = white.over(teal).unwrap();
    assert_eq!(over.background(), teal);
    assert_eq!(over.version(), white.version(), "still the same library");
    assert_eq!(over.names(), white.names());
    for t in 0..white.len() as u32 {
        // Equal but where the resampling filter's ringing at the disc's edge was clipped.
        let (a, b) = (over.rendition(t), imported.rendition(t));
        let off: u32 = a
            .iter()
            .zip(b.iter())
            .map(|(&x, &y)| x.abs_diff(y) as u32)
            .sum();
        let mean_off = off as f64 / a.len() as f64;
        assert!(
            mean_off < 1.0,
            "tile {t} is {mean_off} levels off an import over teal"
        );
        let (m, n) = (over.means()[t as usize], imported.means()[t as usize]);
        let de = color::ciede2000(m.map(f64::from), n.map(f64::from));
        assert!(de < 0.5, "tile {t}: mean {m:?} against {n:?}");
    }
    // Saved, the laid-over library is one over teal in its own right; laid back over white,
    // it reads the stored renditions again.
    let saved = Library::from_bytes(&over.to_bytes()).unwrap();
    assert_eq!(saved.background(), teal);
    assert_eq!(saved.means(), over.means());
    assert_eq!(saved.rendition(7), over.rendition(7));
    let back = over.over([255; 3]).unwrap();
    assert_eq!(back.rendition(7), white.rendition(7));
    assert_eq!(back.means(), white.means());
    // Nothing to do over its own background, nor for an opaque library.
    assert!(white.over([255; 3]).is_none());
    let opaque = opaque_library();
    assert!(!opaque.is_transparent());
    assert!(opaque.over(teal).is_none());
    // The transparency survives a saved index, opened either way.
    let loaded = Library::from_bytes(&white.to_bytes()).unwrap();
    assert_eq!(loaded, white);
    assert_eq!(loaded.over(teal).unwrap(), over);
    let path = std::env::temp_dir().join(format!("tessera-cutouts-{}.idx", std::process::id()));
    white.save(&path).unwrap();
    let opened = Library::open_index(&path).unwrap();
    // Opened, it holds neither renditions nor opacity: both are read per tile from the file.
    assert!(opened.is_transparent());
    assert!(
        opened.memory_bytes() < 20 * 64 * 64,
        "{} bytes in memory",
        opened.memory_bytes()
    );
    assert_eq!(opened.to_bytes(), white.to_bytes());
    assert_eq!(opened.over(teal).unwrap().rendition(3), over.rendition(3));
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn opaque_tiles_beside_transparent_ones_stay_as_they_are_over_any_background() {
    let files = vec![
        (
            "a-opaque.png".to_string(),
            rgba_png(16, 16, [200, 30, 30, 255]),
        ),
        ("b-cutout.png".to_string(), cutout_png(16, [30, 200, 30])),
        (
            "c-opaque.png".to_string(),
            rgba_png(16, 16, [30, 30, 200, 255]),
        ),
    ];
    let lib = Library::from_files(files, &ImportOptions::default())
        .unwrap()
        .0;
    assert!(lib.is_transparent());
    let black = lib.over([0, 0, 0]).unwrap();
    assert_eq!(black.rendition(0), lib.rendition(0));
    assert_eq!(black.rendition(2), lib.rendition(2));
    assert_eq!(black.means()[0], lib.means()[0]);
    assert_ne!(black.rendition(1), lib.rendition(1));
    // The cut-out's corner is its background: white as imported, black laid over.
    assert_eq!(&lib.rendition(1)[..3], &[255, 255, 255]);
    assert_eq!(&black.rendition(1)[..3], &[0, 0, 0]);
}

#[test]
fn auto_background_suits_the_target_and_the_plan_keeps_it() {
    let white = Library::from_files(cutouts(), &ImportOptions::default())
        .unwrap()
        .0;
    let dark = image::RgbImage::from_fn(64, 48, |x, y| {
        image::Rgb([(x % 7) as u8 * 4, 10, (y % 5) as u8 * 5])
    });
    let light =
        image::RgbImage::from_fn(64, 48, |x, _| image::Rgb([250, 245 - (x % 3) as u8, 240]));
    assert_eq!(choose_background(&dark, &white), [0, 0, 0]);
    assert_eq!(choose_background(&light, &white), [255, 255, 255]);
    assert_eq!(TileBackground::Auto.resolve(&dark, &white), Some([0, 0, 0]));
    assert_eq!(TileBackground::Library.resolve(&dark, &white), None);
    assert_eq!(TileBackground::Auto.resolve(&dark, &opaque_library()), None);
    assert_eq!(
        TileBackground::parse("#00FF80").unwrap(),
        TileBackground::Colour([0, 255, 128])
    );
    assert_eq!(TileBackground::parse("AUTO").unwrap(), TileBackground::Auto);
    assert!(TileBackground::parse("black").is_err());

    // A plan over black records it, renders only from the library laid over black, and its
    // mosaic is nearer the dark target than one over white.
    let opts = PlanOptions {
        grid: Grid::Cells(16),
        tile_size: TileSize::square(8),
        repeat_radius: 0,
        ..PlanOptions::default()
    };
    let black = lay_over(&white, Some([0, 0, 0]));
    let plan = Plan::make(&dark, &black, &opts).unwrap();
    assert_eq!(plan.background(), Some([0, 0, 0]));
    let err = render_band(&plan, &TileCache::new(&white, plan.tile_size())).unwrap_err();
    assert!(err.to_string().contains("over #000000"), "{err}");
    let over_black = render_band(&plan, &TileCache::new(&black, plan.tile_size())).unwrap();
    let plain = Plan::make(&dark, &white, &opts).unwrap();
    assert_eq!(plain.background(), Some([255, 255, 255]));
    let over_white = render_band(&plain, &TileCache::new(&white, plain.tile_size())).unwrap();
    let error = |px: Vec<u8>| {
        let img = image::RgbImage::from_raw(plan.width(), plan.total_height(), px).unwrap();
        evaluate(&dark, &img, plan.cols(), plan.total_rows())
            .unwrap()
            .de00_mean
    };
    let (b, w) = (error(over_black), error(over_white));
    assert!(b < w / 2.0, "over black {b}, over white {w}");
}

#[test]
fn folder_zip_and_saved_index_give_the_same_library() {
    let lib = library();
    let dir = std::env::temp_dir().join(format!("tessera-engine-zip-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let zip_path = dir.join("tiles.zip");
    {
        let mut zip = zip::ZipWriter::new(std::fs::File::create(&zip_path).unwrap());
        for (name, bytes) in tile_files().into_iter().rev() {
            zip.start_file(
                format!("set/{name}"),
                zip::write::SimpleFileOptions::default(),
            )
            .unwrap();
            std::io::Write::write_all(&mut zip, &bytes).unwrap();
        }
        zip.start_file("set/README.txt", zip::write::SimpleFileOptions::default())
            .unwrap();
        zip.finish().unwrap();
    }
    let (from_zip, report) = Library::import(&zip_path, &ImportOptions::default()).unwrap();
    assert_eq!(report.ignored, 1);
    assert_eq!(from_zip.len(), lib.len());
    assert_eq!(from_zip.rendition(7), lib.rendition(7));
    assert_eq!(from_zip.means(), lib.means());

    let blob = lib.to_bytes();
    let loaded = Library::from_bytes(&blob).unwrap();
    assert_eq!(loaded, lib);
    assert_eq!(loaded.version(), lib.version());
    assert_eq!(Library::from_vec(blob.clone()).unwrap(), lib);
    let idx = dir.join("tiles.idx");
    lib.save(&idx).unwrap();
    let (opened, report) = Library::open(&idx, &ImportOptions::default()).unwrap();
    assert!(report.is_none());
    assert_eq!(opened.version(), lib.version());

    let mut corrupt = blob.clone();
    corrupt[blob.len() / 2] ^= 1;
    assert!(matches!(
        Library::from_bytes(&corrupt),
        Err(Error::BadIndex(_))
    ));
    assert!(matches!(
        Library::from_vec(corrupt),
        Err(Error::BadIndex(_))
    ));
    let mut future = blob;
    future[8] = 99;
    assert!(matches!(
        Library::from_bytes(&future),
        Err(Error::IndexVersion { found: 99, .. })
    ));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn an_index_opened_from_its_file_reads_renditions_when_used_and_renders_the_same() {
    let lib = library_cached();
    let dir = std::env::temp_dir().join(format!("tessera-engine-lazy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let idx = dir.join("tiles.idx");
    lib.save(&idx).unwrap();

    let opened = Library::open_index(&idx).unwrap();
    assert_eq!(opened.resident_rendition_bytes(), 0);
    assert_eq!(lib.resident_rendition_bytes(), lib.len() * 64 * 64 * 3);
    assert_eq!(&opened, lib);
    assert_eq!(opened.version(), lib.version());
    assert_eq!(opened.to_bytes(), lib.to_bytes());
    for t in [0, 7, lib.len() as u32 - 1] {
        assert_eq!(opened.rendition(t), lib.rendition(t));
    }

    // Same plan, same pixels, with and without blending.
    for blend in [0, 30] {
        let o = PlanOptions {
            blend,
            ..opts(24, 8, 1)
        };
        let plan = Plan::make(&target(), lib, &o).unwrap();
        assert_eq!(
            Plan::make(&target(), &opened, &o).unwrap().to_bytes(),
            plan.to_bytes()
        );
        let in_memory = render_band(&plan, &TileCache::new(lib, TileSize::square(8))).unwrap();
        let from_file = render_band(&plan, &TileCache::new(&opened, TileSize::square(8))).unwrap();
        assert!(in_memory == from_file, "renders differ (blend {blend})");
    }

    // A longer prefix than the first read is needed: names of a few kB each.
    let files: Vec<_> = tile_files()
        .into_iter()
        .take(3)
        .enumerate()
        .map(|(i, (_, bytes))| (format!("{i}-{}.png", "n".repeat(600_000)), bytes))
        .collect();
    let (long, _) = Library::from_files(files, &ImportOptions::default()).unwrap();
    long.save(&idx).unwrap();
    assert_eq!(Library::open_index(&idx).unwrap(), long);

    // Checked like a loaded blob: a flipped bit, a cut file, a future format.
    let blob = lib.to_bytes();
    let mut corrupt = blob.clone();
    corrupt[blob.len() - 100] ^= 1;
    std::fs::write(&idx, &corrupt).unwrap();
    assert!(matches!(Library::open_index(&idx), Err(Error::BadIndex(_))));
    std::fs::write(&idx, &blob[..blob.len() / 2]).unwrap();
    assert!(matches!(Library::open_index(&idx), Err(Error::BadIndex(_))));
    std::fs::write(&idx, &blob[..10]).unwrap();
    assert!(matches!(Library::open_index(&idx), Err(Error::BadIndex(_))));
    let mut future = blob;
    future[8] = 99;
    std::fs::write(&idx, &future).unwrap();
    assert!(matches!(
        Library::open_index(&idx),
        Err(Error::IndexVersion { found: 99, .. })
    ));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn plans_are_deterministic_and_round_trip() {
    let lib = library_cached();
    let t = target();
    let a = Plan::make(&t, lib, &opts(24, 8, 1)).unwrap();
    let b = Plan::make(
        &t,
        &Library::from_bytes(&lib.to_bytes()).unwrap(),
        &opts(24, 8, 1),
    )
    .unwrap();
    assert_eq!(a.to_bytes(), b.to_bytes());
    assert_eq!(Plan::from_bytes(&a.to_bytes()).unwrap(), a);
    let mut bad = a.to_bytes();
    bad[50] ^= 0xff;
    assert!(Plan::from_bytes(&bad).is_err());
    let mut csv = Vec::new();
    a.write_csv(lib, &mut csv).unwrap();
    let csv = String::from_utf8(csv).unwrap();
    assert_eq!(csv.lines().count(), 1 + 24 * 24);
    assert!(csv.lines().nth(1).unwrap().starts_with("0,0,"));
    assert_eq!(csv.lines().next(), Some("row,col,tile,name,transform"));
    assert!(csv.lines().skip(1).all(|l| l.ends_with(",none")));
}

#[test]
fn plans_with_transforms_are_deterministic_and_round_trip() {
    let lib = library_cached();
    let t = target();
    for (flip, rotate) in [(true, false), (false, true), (true, true)] {
        let o = PlanOptions {
            flip,
            rotate,
            ..opts(24, 8, 1)
        };
        let a = Plan::make(&t, lib, &o).unwrap();
        assert_eq!(a, Plan::make(&t, lib, &o).unwrap());
        let allowed = Transform::allowed(flip, rotate, true);
        assert!(a.transforms().iter().all(|t| allowed.contains(t)));
        let turned = a.transforms().iter().filter(|&&t| t != Transform::NONE);
        assert!(
            turned.count() > 24,
            "flip {flip} rotate {rotate}: few cells turned"
        );
        assert_no_repeat_within(&a, 1);
        let bytes = a.to_bytes();
        assert_eq!(Plan::from_bytes(&bytes).unwrap(), a);
        let rows = a.rows(5..9).unwrap();
        assert_eq!(rows.transforms(), &a.transforms()[5 * 24..9 * 24]);
        assert_eq!(Plan::from_bytes(&rows.to_bytes()).unwrap(), rows);
        let mut csv = Vec::new();
        a.write_csv(lib, &mut csv).unwrap();
        let csv = String::from_utf8(csv).unwrap();
        for (line, turn) in csv.lines().skip(1).zip(a.transforms()) {
            assert_eq!(line.rsplit(',').next(), Some(turn.name()), "{line}");
        }
    }
}

/// A 64 px tile of four flat quadrants, lightness all different: red, green / blue, white.
fn quadrants() -> image::RgbImage {
    image::RgbImage::from_fn(64, 64, |x, y| {
        image::Rgb(match (x < 32, y < 32) {
            (true, true) => [200, 0, 0],
            (false, true) => [0, 200, 0],
            (true, false) => [0, 0, 200],
            (false, false) => [255, 255, 255],
        })
    })
}

#[test]
fn a_turned_cell_takes_the_turned_tile_and_renders_it_turned() {
    let tile = quadrants();
    let mut png = Vec::new();
    tile.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    let (lib, _) =
        Library::from_files(vec![("q.png".into(), png)], &ImportOptions::default()).unwrap();
    // A target of two cells: the tile turned clockwise, then the tile mirrored.
    let (rot90, flip) = (Transform::new(false, 1), Transform::new(true, 0));
    let target = image::RgbImage::from_fn(128, 64, |x, y| {
        let (turn, x) = if x < 64 { (rot90, x) } else { (flip, x - 64) };
        let (sx, sy) = turn.source(64, 64, x as usize, y as usize);
        *tile.get_pixel(sx as u32, sy as u32)
    });
    let o = PlanOptions {
        flip: true,
        rotate: true,
        ..opts(2, 16, 0)
    };
    let plan = Plan::make(&target, &lib, &o).unwrap();
    assert_eq!(plan.transforms(), [rot90, flip]);
    let plain = Plan::make(&target, &lib, &opts(2, 16, 0)).unwrap();
    assert_eq!(plain.transforms(), [Transform::NONE; 2]);

    let cache = TileCache::new(&lib, TileSize::square(16));
    let turned = render_band(&plan, &cache).unwrap();
    let as_is = render_band(&plain, &cache).unwrap();
    // Cell `c` of a 2-cell, 16 px band as a 16 px square.
    let cell = |band: &[u8], c: usize| -> Vec<u8> {
        (0..16)
            .flat_map(|y| band[(y * 32 + c * 16) * 3..(y * 32 + c * 16 + 16) * 3].to_vec())
            .collect()
    };
    let tile16 = cell(&as_is, 0);
    assert_eq!(cell(&turned, 0), rot90.apply(&tile16, 16, 16, 3));
    assert_eq!(cell(&turned, 1), flip.apply(&tile16, 16, 16, 3));
    // Red sits top-left in the tile, top-right once turned clockwise.
    assert_eq!(&cell(&turned, 0)[15 * 3..16 * 3], &[200, 0, 0]);

    // The plan's quality sees the turned tiles, as measuring the render does.
    let planned = plan_quality(&plan, &cache, &target).unwrap();
    let measured = evaluate(
        &target,
        &image::RgbImage::from_raw(32, 16, turned).unwrap(),
        2,
        1,
    )
    .unwrap();
    assert!(
        (planned.de00_mean - measured.de00_mean).abs() < 0.25,
        "{planned} vs {measured}"
    );
    let as_is_q = plan_quality(&plain, &cache, &target).unwrap();
    assert!(planned.de00_mean <= as_is_q.de00_mean + 0.25);
}

#[test]
fn quality_from_a_plan_with_transforms_agrees_with_measuring_the_render() {
    let lib = library_cached();
    let t = target();
    for blend in [0, 40] {
        let plan = Plan::make(
            &t,
            lib,
            &PlanOptions {
                blend,
                flip: true,
                rotate: true,
                ..opts(16, 8, 1)
            },
        )
        .unwrap();
        let cache = TileCache::new(lib, TileSize::square(8));
        let mut cells = MosaicCells::new(plan.width(), plan.total_height(), 16, 16).unwrap();
        render_to_sink(&plan, &cache, &mut cells, 4, &|_, _| {}).unwrap();
        let measured = cells.quality(&t).unwrap();
        let planned = plan_quality(&plan, &cache, &t).unwrap();
        assert!(
            (planned.de00_mean - measured.de00_mean).abs() < 0.25,
            "blend {blend}: {planned} vs {measured}"
        );
        let (ps, ms) = (planned.ssim_view.unwrap(), measured.ssim_view.unwrap());
        assert!(
            (ps - ms).abs() < 0.01,
            "blend {blend}: {planned} vs {measured}"
        );
        // The plan counts a tile turned two ways as one tile.
        assert!(planned.distinct <= measured.distinct);
    }
}

#[test]
fn turning_tiles_keeps_the_view() {
    let lib = library_cached();
    let t = target();
    let plain = Plan::make(&t, lib, &opts(24, 8, 1)).unwrap();
    assert!(plain.transforms().iter().all(|&t| t == Transform::NONE));
    // Each cell takes a tile's best fitting transform: what is seen from afar does not suffer.
    let cache = TileCache::new(lib, TileSize::square(8));
    let q0 = plan_quality(&plain, &cache, &t).unwrap();
    let both = PlanOptions {
        flip: true,
        rotate: true,
        ..opts(24, 8, 1)
    };
    let q1 = plan_quality(&Plan::make(&t, lib, &both).unwrap(), &cache, &t).unwrap();
    assert!(
        q1.ssim_view.unwrap() > q0.ssim_view.unwrap() - 0.01,
        "{q0} vs {q1}"
    );
}

fn assert_no_repeat_within(plan: &Plan, r: usize) {
    let (c, rows) = (plan.cols() as usize, plan.total_rows() as usize);
    let t = plan.tiles();
    for y in 0..rows {
        for x in 0..c {
            for yy in y.saturating_sub(r)..=(y + r).min(rows - 1) {
                for xx in x.saturating_sub(r)..=(x + r).min(c - 1) {
                    if (yy, xx) != (y, x) {
                        assert_ne!(t[y * c + x], t[yy * c + xx], "({x},{y}) and ({xx},{yy})");
                    }
                }
            }
        }
    }
}

#[test]
fn the_repetition_constraint_holds() {
    let lib = library_cached();
    let t = target();
    for r in [1, 2, 3] {
        let plan = Plan::make(&t, lib, &opts(20, 4, r)).unwrap();
        assert_no_repeat_within(&plan, r as usize);
    }
    // Radius 0 lets the best tile repeat: flat areas then reuse one tile next to itself.
    let free = Plan::make(&t, lib, &opts(20, 4, 0)).unwrap();
    assert!(free.tiles().windows(2).any(|w| w[0] == w[1]));
    // A use cap holds too.
    let capped = PlanOptions {
        max_uses: Some(12),
        ..opts(20, 4, 1)
    };
    let plan = Plan::make(&t, lib, &capped).unwrap();
    let mut uses = vec![0; lib.len()];
    plan.tiles().iter().for_each(|&t| uses[t as usize] += 1);
    assert!(uses.iter().all(|&u| u <= 12));
    assert_no_repeat_within(&plan, 1);
}

#[test]
fn matching_on_form_keeps_more_of_the_photo_seen_from_afar() {
    let lib = library_cached();
    let t = target();
    let seen = |o: &PlanOptions| {
        let plan = Plan::make(&t, lib, o).unwrap();
        assert_no_repeat_within(&plan, o.repeat_radius as usize);
        plan_quality(&plan, &TileCache::new(lib, TileSize::square(8)), &t).unwrap()
    };
    for radius in [0, 1] {
        let form = seen(&opts(24, 8, radius));
        let colour_only = seen(&PlanOptions {
            lightness_weight: 0.0,
            gradient_weight: 0.0,
            refine_passes: 0,
            ..opts(24, 8, radius)
        });
        let (f, c) = (form.ssim_view.unwrap(), colour_only.ssim_view.unwrap());
        assert!(f > c + 0.01, "radius {radius}: {form} vs {colour_only}");
    }
}

#[test]
fn a_library_too_small_for_the_radius_is_a_clear_error() {
    let lib = library_cached();
    let err = Plan::make(&target(), lib, &opts(20, 4, 5)).unwrap_err();
    assert!(
        matches!(
            err,
            Error::LibraryTooSmall {
                tiles: 41,
                needed: 61,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("--repeat-radius"), "{err}");
    let capped = PlanOptions {
        max_uses: Some(2),
        ..opts(20, 4, 1)
    };
    let err = Plan::make(&target(), lib, &capped).unwrap_err();
    assert!(err.to_string().contains("use cap"), "{err}");
}

#[test]
fn limits_give_clear_errors() {
    let lib = library_cached();
    let t = target();
    for ts in [3, 257] {
        let err = Plan::make(&t, lib, &opts(8, ts, 1)).unwrap_err();
        assert!(matches!(err, Error::TileSize(_)), "{err}");
        assert!(err.to_string().contains("4 to 256"));
    }
    let limited = PlanOptions {
        max_output_pixels: 1_000_000,
        ..opts(100, 16, 1)
    };
    let err = Plan::make(&t, lib, &limited).unwrap_err();
    assert!(matches!(
        err,
        Error::OutputTooLarge {
            width: 1600,
            height: 1600,
            limit: 1_000_000
        }
    ));
    assert!(err.to_string().contains("1600 x 1600"));
    let err = Plan::make(
        &t,
        lib,
        &PlanOptions {
            blend: 101,
            ..opts(8, 8, 1)
        },
    )
    .unwrap_err();
    assert!(err.to_string().contains("blend"));
    // Per-pixel: output = source size x tile size.
    let per_pixel = PlanOptions {
        grid: Grid::PerPixel,
        tile_size: TileSize::square(4),
        ..PlanOptions::default()
    };
    let s = Sizing::new(48, 30, &per_pixel).unwrap();
    assert_eq!(
        s,
        Sizing {
            cols: 48,
            rows: 30,
            tile_size: TileSize::square(4),
            width: 192,
            height: 120
        }
    );
    let s = Sizing::new(300, 200, &opts(90, 10, 1)).unwrap();
    assert_eq!((s.cols, s.rows), (90, 60));
}

#[test]
fn streaming_png_and_jpeg_match_the_render() {
    let lib = library_cached();
    let plan = Plan::make(
        &target(),
        lib,
        &PlanOptions {
            blend: 30,
            ..opts(12, 8, 1)
        },
    )
    .unwrap();
    let cache = TileCache::new(lib, TileSize::square(8));
    let whole = render_band(&plan, &cache).unwrap();
    #[derive(Clone, Default)]
    struct W(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for W {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let png_out = W::default();
    let mut sink = PngSink::new(png_out.clone(), plan.width(), plan.total_height(), 300).unwrap();
    render_to_sink(&plan, &cache, &mut sink, 5, &|_, _| {}).unwrap();
    sink.finish().unwrap();
    let decoded = image::load_from_memory(&png_out.0.lock().unwrap())
        .unwrap()
        .to_rgb8();
    assert_eq!(decoded.as_raw(), &whole);
    // Each output says its pixels are sRGB: an sRGB chunk in a PNG, an ICC profile in a JPEG.
    let says_srgb = |png: &[u8]| {
        let reader = png::Decoder::new(std::io::Cursor::new(png))
            .read_info()
            .unwrap();
        reader.info().srgb.is_some()
    };
    assert!(says_srgb(&png_out.0.lock().unwrap()));

    // Bands compressed in parallel as fragments, one row of cells each: the same pixels.
    let parallel = W::default();
    let mut sink =
        ParallelPngSink::new(parallel.clone(), plan.width(), plan.total_height(), 300).unwrap();
    render_to_sink(&plan, &cache, &mut sink, 1, &|_, _| {}).unwrap();
    sink.finish().unwrap();
    let decoded = image::load_from_memory(&parallel.0.lock().unwrap())
        .unwrap()
        .to_rgb8();
    assert_eq!(decoded.as_raw(), &whole);
    assert!(says_srgb(&parallel.0.lock().unwrap()));
    let mut short =
        ParallelPngSink::new(Vec::new(), plan.width(), plan.total_height(), 300).unwrap();
    short
        .write_owned(whole[..whole.len() / 2].to_vec())
        .unwrap();
    assert!(short.finish().is_err());

    let shared = W::default();
    let mut sink =
        JpegSink::new(shared.clone(), plan.width(), plan.total_height(), (90, 300)).unwrap();
    render_to_sink(&plan, &cache, &mut sink, 3, &|_, _| {}).unwrap();
    sink.finish().unwrap();
    let icc = image::ImageDecoder::icc_profile(
        &mut image::codecs::jpeg::JpegDecoder::new(std::io::Cursor::new(
            shared.0.lock().unwrap().clone(),
        ))
        .unwrap(),
    )
    .unwrap()
    .expect("the JPEG carries a profile");
    assert_eq!(icc, tessera_engine::srgb_icc());
    let jpeg = image::load_from_memory(&shared.0.lock().unwrap())
        .unwrap()
        .to_rgb8();
    assert_eq!(jpeg.dimensions(), (plan.width(), plan.total_height()));
    let diff: u64 = jpeg
        .as_raw()
        .iter()
        .zip(&whole)
        .map(|(a, b)| a.abs_diff(*b) as u64)
        .sum();
    assert!(
        // Quality 90 on 8 px emoji tiles: a few levels per channel; a broken encoder is far off.
        (diff as f64 / whole.len() as f64) < 16.0,
        "JPEG far from the render: mean difference {}",
        diff as f64 / whole.len() as f64
    );

    // Too few rows is an error, not a silently short image.
    let mut short = PngSink::new(Vec::new(), plan.width(), plan.total_height(), 300).unwrap();
    short
        .write_rows(&whole[..plan.width() as usize * 3])
        .unwrap();
    assert!(short.finish().is_err());
}

#[test]
fn blend_moves_tiles_toward_the_cell_colour_and_the_metric_sees_it() {
    let lib = library_cached();
    let t = target();
    let q = |blend| {
        let plan = Plan::make(
            &t,
            lib,
            &PlanOptions {
                blend,
                ..opts(16, 8, 1)
            },
        )
        .unwrap();
        let cache = TileCache::new(lib, TileSize::square(8));
        let mut cells = MosaicCells::new(plan.width(), plan.total_height(), 16, 16).unwrap();
        render_to_sink(&plan, &cache, &mut cells, 4, &|_, _| {}).unwrap();
        cells.quality(&t).unwrap()
    };
    let (q0, q100) = (q(0), q(100));
    assert_eq!(q0.dup_r1, 0.0);
    assert!(q100.de00_mean < q0.de00_mean / 2.0, "{q0} vs {q100}");
    // A mosaic of flat cells in the target's own cell colours scores near zero.
    let up = image::RgbImage::from_fn(64, 64, |x, y| {
        let (cx, cy) = (x / 4 * 3, y / 4 * 3);
        let mut sum = [0u32; 3];
        for (dx, dy) in (0..9).map(|i| (i % 3, i / 3)) {
            let p = t.get_pixel(cx + dx, cy + dy);
            (0..3).for_each(|c| sum[c] += p[c] as u32);
        }
        image::Rgb(sum.map(|v| ((v + 4) / 9) as u8))
    });
    let self_q = evaluate(&t, &up, 16, 16).unwrap();
    assert!(self_q.de00_mean < 0.5, "{self_q}");
    assert!(self_q.dup_r1 > 0.0);
}

#[test]
fn quality_from_the_plan_agrees_with_measuring_the_render() {
    let lib = library_cached();
    let t = target();
    for (blend, radius) in [(0, 1), (40, 0), (100, 2)] {
        let plan = Plan::make(
            &t,
            lib,
            &PlanOptions {
                blend,
                ..opts(16, 8, radius)
            },
        )
        .unwrap();
        let cache = TileCache::new(lib, TileSize::square(8));
        let mut cells = MosaicCells::new(plan.width(), plan.total_height(), 16, 16).unwrap();
        render_to_sink(&plan, &cache, &mut cells, 4, &|_, _| {}).unwrap();
        let measured = cells.quality(&t).unwrap();
        let planned = plan_quality(&plan, &cache, &t).unwrap();
        assert!(
            (planned.de00_mean - measured.de00_mean).abs() < 0.25,
            "blend {blend}: {planned} vs {measured}"
        );
        assert!(
            (planned.de00_p95 - measured.de00_p95).abs() < 0.75,
            "{planned} vs {measured}"
        );
        // The view from the tiles' block means is the view of the rendered pixels.
        let (ps, ms) = (planned.ssim_view.unwrap(), measured.ssim_view.unwrap());
        assert!(
            (ps - ms).abs() < 0.01,
            "blend {blend}: {planned} vs {measured}"
        );
        let repeats = |q: &tessera_engine::Quality| (q.distinct, q.max_uses, q.dup_r1, q.dup_r5);
        if blend == 0 {
            assert_eq!(repeats(&planned), repeats(&measured));
        } else {
            // Measured from pixels, a tile tinted two ways counts as two; the plan counts the
            // tiles chosen, which no library can outnumber.
            assert!(
                planned.distinct <= measured.distinct,
                "{planned} vs {measured}"
            );
            assert!(planned.dup_r1 >= measured.dup_r1, "{planned} vs {measured}");
            assert!(planned.dup_r5 >= measured.dup_r5, "{planned} vs {measured}");
        }
        let mut chosen = plan.tiles().to_vec();
        chosen.sort_unstable();
        chosen.dedup();
        assert_eq!(planned.distinct, chosen.len(), "blend {blend}");
        assert!(planned.distinct <= lib.len());
    }
    // Rows cut from a plan are not a whole image.
    let plan = Plan::make(&t, lib, &opts(16, 8, 1)).unwrap();
    assert!(
        plan_quality(
            &plan.rows(0..4).unwrap(),
            &TileCache::new(lib, TileSize::square(8)),
            &t
        )
        .is_err()
    );
}

#[test]
fn incremental_planning_hands_out_final_rows_in_order() {
    let lib = library_cached();
    let t = target();
    let whole = Plan::make(&t, lib, &opts(40, 4, 2)).unwrap();
    let mut seen = Vec::new();
    let mut last = 0;
    let plan = Plan::make_incrementally(&t, lib, &opts(40, 4, 2), &mut |plan, done| {
        assert!(done > last && done <= plan.total_rows());
        // What is handed out as final never changes afterwards.
        seen.push(plan.rows(last..done).unwrap());
        last = done;
        Ok(())
    })
    .unwrap();
    assert_eq!(plan, whole);
    assert_eq!(last, whole.total_rows());
    for part in seen {
        assert_eq!(part, whole.rows(part.row_range()).unwrap());
    }
    // An error from the callback stops the planning.
    let err = Plan::make_incrementally(&t, lib, &opts(40, 4, 2), &mut |_, _| {
        Err(Error::InvalidOption("stop".into()))
    })
    .unwrap_err();
    assert!(err.to_string().contains("stop"), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn bands_render_byte_identical_to_the_whole(
        cuts in proptest::collection::btree_set(1u32..18, 0..6),
        blend in 0u8..=100,
        serialize in any::<bool>(),
        flip in any::<bool>(),
        rotate in any::<bool>(),
    ) {
        let lib = library_cached();
        let o = PlanOptions { blend, flip, rotate, ..opts(13, 6, 1) };
        let plan = Plan::make(&target(), lib, &o).unwrap();
        prop_assert_eq!(plan.total_rows(), 13);
        let cache = TileCache::new(lib, TileSize::square(6));
        let whole = render_band(&plan, &cache).unwrap();
        // Into a reused, larger buffer with stale bytes: the same pixels.
        let mut reused = vec![7u8; whole.len() + 99];
        render_band_serial(&plan, &cache, &mut reused).unwrap();
        prop_assert!(reused == whole);
        let mut bounds = vec![0];
        bounds.extend(cuts.into_iter().filter(|&c| c < 13));
        bounds.push(13);
        let mut stitched = Vec::new();
        for w in bounds.windows(2) {
            let mut rows = plan.rows(w[0]..w[1]).unwrap();
            if serialize {
                rows = Plan::from_bytes(&rows.to_bytes()).unwrap();
            }
            // A fresh cache, as on another processor.
            stitched.extend(render_band(&rows, &TileCache::new(lib, TileSize::square(6))).unwrap());
        }
        prop_assert!(stitched == whole);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn png_fragments_of_any_band_split_decode_to_the_whole_render(
        cuts in proptest::collection::btree_set(1u32..13, 0..6),
    ) {
        let lib = library_cached();
        let plan = Plan::make(&target(), lib, &opts(13, 6, 1)).unwrap();
        let whole = render_band(&plan, &TileCache::new(lib, TileSize::square(6))).unwrap();
        let mut bounds = vec![0];
        bounds.extend(cuts);
        bounds.push(13);
        let mut png = FragmentPngWriter::new(Vec::new(), plan.width(), plan.total_height(), 300).unwrap();
        for w in bounds.windows(2) {
            // Each band rendered and compressed on its own, as on another processor.
            let rows = plan.rows(w[0]..w[1]).unwrap();
            let pixels = render_band(&rows, &TileCache::new(lib, TileSize::square(6))).unwrap();
            png.write_fragment(&encode_png_fragment(&pixels, plan.width()).unwrap()).unwrap();
        }
        let png = png.finish().unwrap();
        let decoded = image::load_from_memory_with_format(&png, image::ImageFormat::Png)
            .unwrap()
            .to_rgb8();
        prop_assert_eq!(decoded.dimensions(), (plan.width(), plan.total_height()));
        prop_assert!(decoded.as_raw() == &whole);
    }
}

#[test]
fn a_gif_contributes_its_first_frame() {
    use image::codecs::gif::GifEncoder;
    let frame =
        |rgba: [u8; 4]| image::Frame::new(image::RgbaImage::from_pixel(10, 10, image::Rgba(rgba)));
    let mut gif = Vec::new();
    {
        let mut enc = GifEncoder::new(&mut gif);
        enc.encode_frames([frame([200, 20, 20, 255]), frame([20, 20, 200, 255])])
            .unwrap();
    }
    let (lib, report) =
        Library::from_files(vec![("anim.gif".into(), gif)], &ImportOptions::default()).unwrap();
    assert_eq!(report.imported, 1);
    let rendition = lib.rendition(0);
    let p = &rendition[..3];
    assert!(p[0] > 150 && p[2] < 80, "first frame is red, got {p:?}");
}

#[test]
fn exif_orientation_is_respected() {
    // A 40x20 JPEG, left half red, right half blue, tagged "rotate 90 degrees clockwise".
    let img = image::RgbImage::from_fn(40, 20, |x, _| {
        image::Rgb(if x < 20 { [220, 0, 0] } else { [0, 0, 220] })
    });
    let mut jpeg = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 95)
        .encode_image(&img)
        .unwrap();
    let mut tiff = b"II*\0\x08\0\0\0".to_vec();
    tiff.extend_from_slice(&[1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0]);
    let mut app1 = b"Exif\0\0".to_vec();
    app1.extend_from_slice(&tiff);
    let mut tagged = jpeg[..2].to_vec();
    tagged.extend_from_slice(&[0xff, 0xe1]);
    tagged.extend_from_slice(&((app1.len() + 2) as u16).to_be_bytes());
    tagged.extend_from_slice(&app1);
    tagged.extend_from_slice(&jpeg[2..]);
    let (lib, _) = Library::from_files(
        vec![("plain.jpg".into(), jpeg), ("rotated.jpg".into(), tagged)],
        &ImportOptions::default(),
    )
    .unwrap();
    let s = lib.rendition_size() as usize;
    let px = |t: u32, x: usize, y: usize| {
        lib.rendition(t)[(y * s + x) * 3..(y * s + x) * 3 + 3].to_vec()
    };
    let red = |p: Vec<u8>| p[0] > 150 && p[2] < 80;
    // Unrotated, the centre square is red on the left and blue on the right.
    assert!(red(px(0, 2, 2)) && !red(px(0, s - 3, 2)));
    // Rotated clockwise, the left half is on top: the whole top row is red, the bottom blue.
    assert!(
        red(px(1, 2, 2)) && red(px(1, s - 3, 2)),
        "{:?}",
        px(1, s - 3, 2)
    );
    assert!(!red(px(1, 2, s - 3)));
}

/// A folder with the first `n` fixture tiles and a captions file.
fn captioned_folder(n: usize, captions: &str) -> (tempfile::TempDir, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let mut names: Vec<String> = std::fs::read_dir(fixtures().join("tiles"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    names.truncate(n);
    for name in &names {
        std::fs::copy(fixtures().join("tiles").join(name), dir.path().join(name)).unwrap();
    }
    std::fs::write(dir.path().join("captions.csv"), captions).unwrap();
    (dir, names)
}

/// Captions come from `captions.csv` (header, quotes and commas allowed), others from the file
/// name; they survive the index, and a broken or stray line is refused with its line number.
#[test]
fn tiles_carry_captions_from_the_csv_or_their_file_name() {
    let probe = captioned_folder(3, "");
    let names = probe.1.clone();
    let csv = format!(
        "file,caption\n{},\"Keycap, zero\"\n\n{},\"A \"\"flag\"\"\"\nbroken.png,Never read\n",
        names[0], names[1]
    );
    let (dir, _) = captioned_folder(3, &csv);
    std::fs::write(dir.path().join("broken.png"), b"not an image").unwrap();
    let (lib, report) = Library::import(dir.path(), &ImportOptions::default()).unwrap();
    assert_eq!(report.imported, 3);
    assert_eq!(report.skipped.len(), 1);
    let caption = |name: &str| {
        let i = lib.names().iter().position(|n| n == name).unwrap();
        lib.caption(i as u32)
    };
    assert_eq!(caption(&names[0]), "Keycap, zero");
    assert_eq!(caption(&names[1]), "A \"flag\"");
    // No caption given: the file name, without extension, dashes read as spaces.
    let stem = names[2].trim_end_matches(".png").replace('-', " ");
    assert_eq!(caption(&names[2]), stem);
    let again = Library::from_bytes(&lib.to_bytes()).unwrap();
    assert_eq!(again.caption(0), lib.caption(0));
    assert_eq!(again.version(), lib.version());
    // Opened from a file, renditions left in it: the captions are read all the same.
    let saved = dir.path().join("captioned.idx");
    lib.save(&saved).unwrap();
    let opened = Library::open_index(&saved).unwrap();
    for tile in 0..lib.len() as u32 {
        assert_eq!(opened.caption(tile), lib.caption(tile));
    }
    assert_eq!(opened.version(), lib.version());

    for (csv, says) in [
        (
            "nope.png,A caption\n".to_string(),
            "line 1: there is no image \"nope.png\"",
        ),
        (format!("{},a,b\n", names[0]), "line 1: 3 fields"),
        (
            format!("file,caption\n{},\"open\n", names[0]),
            "line 2: an unclosed quote",
        ),
        (
            format!("{},\n", names[0]),
            "line 1: a file name and a caption are both needed",
        ),
        (
            format!("{},{}\n", names[0], "x".repeat(301)),
            "over 300 characters",
        ),
    ] {
        let (dir, _) = captioned_folder(3, &csv);
        let err = Library::import(dir.path(), &ImportOptions::default()).unwrap_err();
        assert!(matches!(err, Error::Captions(_)), "{err}");
        assert!(err.to_string().contains(says), "{err} should say {says}");
    }
}

/// The cell map names, for every cell, the tile the plan put there, and survives its bytes;
/// corrupt bytes are refused.
#[test]
fn the_cell_map_says_which_tile_is_in_each_cell() {
    let lib = library_cached();
    let options = PlanOptions {
        flip: true,
        rotate: true,
        ..opts(12, 8, 1)
    };
    let plan = Plan::make(&target(), lib, &options).unwrap();
    assert!(plan.transforms().iter().any(|&t| t != Transform::NONE));
    let map = CellMap::from_plan(&plan, lib).unwrap();
    assert_eq!(
        (map.cols(), map.rows(), map.tile_size()),
        (12, plan.total_rows(), TileSize::square(8))
    );
    let tiles = plan.tiles();
    for row in 0..map.rows() {
        for col in 0..map.cols() {
            let tile = tiles[(row * map.cols() + col) as usize];
            let source = map.at(row, col).unwrap();
            assert_eq!(source.tile, tile);
            assert_eq!(source.name, lib.name(tile));
            assert_eq!(source.caption, lib.caption(tile));
            let turned = plan.transforms()[(row * map.cols() + col) as usize];
            assert_eq!(map.transform(row, col), Some(turned));
        }
    }
    assert!(map.at(map.rows(), 0).is_none() && map.at(0, 12).is_none());
    let distinct: std::collections::BTreeSet<u32> = tiles.iter().copied().collect();
    assert_eq!(map.sources().len(), distinct.len());
    let bytes = map.to_bytes();
    assert_eq!(CellMap::from_bytes(&bytes).unwrap(), map);
    let mut corrupt = bytes.clone();
    corrupt[40] ^= 1;
    assert!(CellMap::from_bytes(&corrupt).is_err());
    assert!(CellMap::from_bytes(&bytes[..bytes.len() - 9]).is_err());
    assert!(CellMap::from_plan(&plan.rows(0..2).unwrap(), lib).is_err());
}

/// The adaptive quadtree covers the output exactly once with squares from the smallest to the
/// largest size, uses no more tiles than the uniform grid, puts small squares where the photo is
/// detailed, keeps identical tiles apart, and renders the same bytes whatever rows of blocks a
/// band holds.
#[test]
fn adaptive_squares_cover_the_mosaic_within_the_budget_and_render_the_same_in_any_band() {
    let lib = library_cached();
    let sizes: AdaptiveSizes = "4..16".parse().unwrap();
    let options = PlanOptions {
        flip: true,
        ..opts(24, 8, 1)
    };
    let uniform = Plan::make(&target(), lib, &options).unwrap();
    let plan = AdaptivePlan::make(&target(), lib, &options, sizes).unwrap();
    let leaves = plan.leaves();
    assert!(
        leaves.len() <= uniform.tiles().len(),
        "{} leaves",
        leaves.len()
    );
    let blocks = (plan.width() / 16 * plan.height() / 16) as usize;
    assert!(
        leaves.len() > blocks,
        "the tree split: {} leaves",
        leaves.len()
    );
    assert_eq!(plan.tile_sizes(), vec![4, 8, 16]);
    assert!(plan.width() >= uniform.width() && plan.width() - uniform.width() < 16);
    let (w, h) = (plan.width() as usize, plan.height() as usize);
    let mut cover = vec![u32::MAX; w * h];
    for (i, leaf) in leaves.iter().enumerate() {
        for y in leaf.y..leaf.y + leaf.size {
            for x in leaf.x..leaf.x + leaf.size {
                let at = y as usize * w + x as usize;
                assert_eq!(cover[at], u32::MAX, "pixel {x}, {y} twice");
                cover[at] = i as u32;
            }
        }
    }
    assert!(cover.iter().all(|&c| c != u32::MAX), "every pixel covered");
    // Touching squares (radius 1) never hold the same tile.
    for a in leaves {
        for b in leaves {
            let gap_x =
                (b.x as i64 - (a.x + a.size) as i64).max(a.x as i64 - (b.x + b.size) as i64);
            let gap_y =
                (b.y as i64 - (a.y + a.size) as i64).max(a.y as i64 - (b.y + b.size) as i64);
            if a != b && gap_x <= 0 && gap_y <= 0 {
                assert_ne!(a.tile, b.tile, "{a:?} and {b:?} touch");
            }
        }
    }
    // Any cut into rows of blocks renders the same bytes as the whole.
    let caches: Vec<TileCache> = plan
        .tile_sizes()
        .into_iter()
        .map(|s| TileCache::new(lib, TileSize::square(s)))
        .collect();
    let rows = plan.block_rows();
    let whole = plan.render_rows(&caches, 0..rows).unwrap();
    assert_eq!(whole.len(), w * h * 3);
    for step in [1, 2, 3] {
        let mut parts = Vec::new();
        for first in (0..rows).step_by(step) {
            parts.extend(
                plan.render_rows(&caches, first..(first + step as u32).min(rows))
                    .unwrap(),
            );
        }
        assert!(parts == whole, "bands of {step} rows of blocks");
    }
    // Each square shows its tile, resized to the square and turned as planned.
    for leaf in leaves {
        let cache = TileCache::new(lib, TileSize::square(leaf.size));
        let (tile, _) = cache.turned(leaf.tile, leaf.transform);
        let size = leaf.size as usize;
        for y in 0..size {
            let at = ((leaf.y as usize + y) * w + leaf.x as usize) * 3;
            assert!(whole[at..at + size * 3] == tile[y * size * 3..(y + 1) * size * 3]);
        }
    }
    // Determinism.
    assert_eq!(
        AdaptivePlan::make(&target(), lib, &options, sizes).unwrap(),
        plan
    );
    assert!(
        AdaptivePlan::make(&target(), lib, &options, AdaptiveSizes { min: 4, max: 12 }).is_err()
    );
}

/// An adaptive plan cut into rows of blocks and saved, as the pipeline ships it to processors:
/// each cut, loaded again and rendered on its own (serially, as a processor renders), gives the
/// same bytes as the matching rows of the whole render, for any cut; a cut refuses tiles of
/// another library.
#[test]
fn adaptive_plans_cut_into_rows_of_blocks_and_saved_render_as_the_whole() {
    let lib = library_cached();
    let options = PlanOptions {
        blend: 30,
        rotate: true,
        ..opts(24, 8, 1)
    };
    let plan = AdaptivePlan::make(&target(), lib, &options, "4..16".parse().unwrap()).unwrap();
    let sizing = AdaptiveSizing::new(48, 48, &options, plan.sizes()).unwrap();
    assert_eq!((sizing.width, sizing.height), (plan.width(), plan.height()));
    assert_eq!(sizing.block_rows, plan.block_rows());
    assert_eq!(sizing.grid(), (plan.width() / 4, plan.height() / 4));
    let bytes = plan.to_bytes();
    assert_eq!(AdaptivePlan::from_bytes(&bytes).unwrap(), plan);
    assert!(Plan::from_bytes(&bytes).is_err());
    let caches: Vec<TileCache> = plan
        .tile_sizes()
        .into_iter()
        .map(|s| TileCache::new(lib, TileSize::square(s)))
        .collect();
    let whole = plan.render_rows(&caches, plan.block_row_range()).unwrap();
    let band = plan.width() as usize * 3 * plan.sizes().max as usize;
    let rows = plan.block_rows();
    assert!(rows >= 3, "{rows} rows of blocks");
    for cuts in [
        vec![0, rows],
        vec![0, 1, rows],
        vec![0, 1, 2, rows],
        (0..=rows).collect(),
    ] {
        let mut joined = Vec::new();
        for pair in cuts.windows(2) {
            let part =
                AdaptivePlan::from_bytes(&plan.rows(pair[0]..pair[1]).unwrap().to_bytes()).unwrap();
            assert_eq!(part.band_height(), (pair[1] - pair[0]) * plan.sizes().max);
            let mut pixels = Vec::new();
            part.render_rows_serial(&caches, part.block_row_range(), &mut pixels)
                .unwrap();
            let at = pair[0] as usize * band;
            assert!(
                pixels == whole[at..at + pixels.len()],
                "rows {:?} of {cuts:?}",
                pair
            );
            // A cut renders only its own rows.
            assert!(part.render_rows(&caches, 0..rows).is_err() || cuts.len() == 2);
            joined.extend(pixels);
        }
        assert!(joined == whole, "cut at {cuts:?}");
    }
    let mut sink = VecSink::default();
    plan.render_to_sink(lib, &mut sink).unwrap();
    assert!(sink.pixels == whole);
    // Tiles of another library are refused, not drawn.
    let other = library_4_3();
    assert_ne!(other.version(), lib.version());
    let foreign = [TileCache::new(other, TileSize::square(4))];
    let err = plan.render_rows(&foreign, 0..1).unwrap_err();
    assert!(err.to_string().contains("made with library"), "{err}");
    // A cut without a cache for one of its sizes says so.
    let err = plan.render_rows(&caches[1..], 0..rows).unwrap_err();
    assert!(err.to_string().contains("no tiles of 4 px"), "{err}");
}

/// An adaptive mosaic's cell map is on the grid of its smallest squares: every cell names the
/// tile of the square covering it and where that square is, and the map round-trips.
#[test]
fn adaptive_cell_maps_name_the_square_covering_each_cell() {
    let lib = library_cached();
    let plan =
        AdaptivePlan::make(&target(), lib, &opts(24, 8, 1), "4..16".parse().unwrap()).unwrap();
    let map = CellMap::from_adaptive(&plan, lib).unwrap();
    assert!(map.is_adaptive());
    assert_eq!(
        (map.cols(), map.rows()),
        (plan.width() / 4, plan.height() / 4)
    );
    assert_eq!(map.tile_size(), TileSize::square(4));
    for leaf in plan.leaves() {
        for row in leaf.y / 4..(leaf.y + leaf.size) / 4 {
            for col in leaf.x / 4..(leaf.x + leaf.size) / 4 {
                assert_eq!(map.at(row, col).unwrap().tile, leaf.tile);
                assert_eq!(map.transform(row, col), Some(leaf.transform));
                assert_eq!(
                    map.square(row, col),
                    Some([leaf.x, leaf.y, leaf.size, leaf.size])
                );
            }
        }
    }
    assert!(plan.leaves().iter().any(|l| l.size == 16));
    assert_eq!(map.square(map.rows(), 0), None);
    let bytes = map.to_bytes();
    assert_eq!(CellMap::from_bytes(&bytes).unwrap(), map);
    assert!(CellMap::from_bytes(&bytes[..bytes.len() - 9]).is_err());
    let mut corrupt = bytes.clone();
    let at = bytes.len() - 20;
    corrupt[at] ^= 1;
    assert!(CellMap::from_bytes(&corrupt).is_err());
    assert!(CellMap::from_adaptive(&plan.rows(0..1).unwrap(), lib).is_err());
    // A uniform map is as it was: no squares, each cell its own.
    let uniform =
        CellMap::from_plan(&Plan::make(&target(), lib, &opts(6, 8, 1)).unwrap(), lib).unwrap();
    assert!(!uniform.is_adaptive());
    assert_eq!(uniform.square(2, 3), Some([24, 16, 8, 8]));
    assert_eq!(
        u32::from_le_bytes(uniform.to_bytes()[8..12].try_into().unwrap()),
        2
    );
}

// Non-square tiles.

fn four_three() -> TileShape {
    TileShape::new(4, 3).unwrap()
}

/// The fixture tiles imported at 4:3.
fn library_4_3() -> &'static Library {
    static LIB: std::sync::OnceLock<Library> = std::sync::OnceLock::new();
    LIB.get_or_init(|| {
        let options = ImportOptions {
            shape: four_three(),
            ..ImportOptions::default()
        };
        Library::import(&fixtures().join("tiles"), &options)
            .unwrap()
            .0
    })
}

fn oblong(cells: u32, width: u32, height: u32, radius: u32) -> PlanOptions {
    PlanOptions {
        tile_size: TileSize::new(width, height).unwrap(),
        ..opts(cells, 8, radius)
    }
}

/// A `w x h` PNG whose red grows left to right and green top to bottom, to see what a crop kept.
fn ramps(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        image::Rgb([(x * 255 / (w - 1)) as u8, (y * 255 / (h - 1)) as u8, 90])
    });
    let mut png = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .unwrap();
    png
}

#[test]
fn a_4_3_library_keeps_4_3_crops_not_squashed_squares() {
    // Centre crops, whose place the ramps show (the attention rule has its own tests).
    let options = ImportOptions {
        shape: four_three(),
        crop: tessera_engine::CropRule::Centre,
        ..ImportOptions::default()
    };
    // A 4:3 photo is kept whole; a 2:1 one loses its sides; a 3:4 one its top and bottom.
    let files = vec![
        ("a-landscape.png".to_string(), ramps(120, 90)),
        ("b-wide.png".to_string(), ramps(160, 60)),
        ("c-portrait.png".to_string(), ramps(90, 120)),
    ];
    let (lib, _) = Library::from_files(files, &options).unwrap();
    assert_eq!(lib.shape(), four_three());
    assert_eq!(lib.rendition_dims(), (64, 48));
    let px = |t: u32, x: usize, y: usize| {
        let at = (y * 64 + x) * 3;
        [lib.rendition(t)[at], lib.rendition(t)[at + 1]]
    };
    // Red spans the whole ramp across, green the whole ramp down: nothing cropped.
    let (left, right) = (px(0, 0, 24)[0], px(0, 63, 24)[0]);
    assert!(left < 8 && right > 247, "{left} {right}");
    let (top, bottom) = (px(0, 32, 0)[1], px(0, 32, 47)[1]);
    assert!(top < 8 && bottom > 247, "{top} {bottom}");
    // 160 x 60 at 4:3 keeps the middle 80 x 60: red from about 64 to 191, green all of it.
    let (left, right) = (px(1, 0, 24)[0], px(1, 63, 24)[0]);
    assert!(
        (60..=70).contains(&left) && (185..=195).contains(&right),
        "{left} {right}"
    );
    assert!(px(1, 32, 0)[1] < 8 && px(1, 32, 47)[1] > 247);
    // 90 x 120 at 4:3 keeps the middle 90 x 68: red all of it, green from about 64 to 191.
    assert!(px(2, 0, 24)[0] < 8 && px(2, 63, 24)[0] > 247);
    let (top, bottom) = (px(2, 32, 0)[1], px(2, 32, 47)[1]);
    assert!(
        (55..=75).contains(&top) && (180..=200).contains(&bottom),
        "{top} {bottom}"
    );
    // The same files at 1:1 are square crops.
    let (square, _) = Library::from_files(
        vec![("a.png".to_string(), ramps(120, 90))],
        &ImportOptions::default(),
    )
    .unwrap();
    assert_eq!(square.rendition_dims(), (64, 64));
    assert_ne!(square.version(), lib.version());
    // The shape survives the index.
    let back = Library::from_bytes(&lib.to_bytes()).unwrap();
    assert_eq!(back, lib);
    assert_eq!(back.shape().to_string(), "4:3");
}

#[test]
fn oblong_sizing_keeps_the_aspect_ratio() {
    let s = Sizing::new(300, 200, &oblong(30, 24, 18, 1)).unwrap();
    // 30 cells of 24 px across; rows of 18 px so that the output stays about 3:2.
    assert_eq!((s.cols, s.rows, s.width, s.height), (30, 27, 720, 486));
    let ratio = s.width as f64 / s.height as f64;
    assert!((ratio - 1.5).abs() < 0.02, "{ratio}");
    let tall = Sizing::new(300, 200, &oblong(30, 18, 24, 1)).unwrap();
    assert_eq!((tall.rows, tall.width, tall.height), (15, 540, 360));
    // Per pixel: a cell per target pixel, each 8 x 6.
    let per_pixel = PlanOptions {
        grid: Grid::PerPixel,
        ..oblong(1, 8, 6, 1)
    };
    let s = Sizing::new(48, 30, &per_pixel).unwrap();
    assert_eq!((s.cols, s.rows, s.width, s.height), (48, 30, 384, 180));
    // Each side is checked.
    let bad = PlanOptions {
        tile_size: TileSize {
            width: 24,
            height: 300,
        },
        ..opts(30, 8, 1)
    };
    assert!(matches!(
        Sizing::new(300, 200, &bad),
        Err(Error::TileSize(300))
    ));
}

#[test]
fn an_oblong_plan_renders_round_trips_and_refuses_quarter_turns() {
    let lib = library_4_3();
    let t = target();
    let o = PlanOptions {
        flip: true,
        rotate: true,
        ..oblong(16, 8, 6, 1)
    };
    let plan = Plan::make(&t, lib, &o).unwrap();
    assert_eq!(plan.tile_size(), TileSize::new(8, 6).unwrap());
    assert_eq!((plan.cols(), plan.total_rows()), (16, 21));
    assert_eq!((plan.width(), plan.total_height()), (128, 126));
    assert_no_repeat_within(&plan, 1);
    // Turned by the half turn and mirrored, never by a quarter turn.
    let allowed = Transform::allowed(true, true, false);
    assert!(plan.transforms().iter().all(|t| allowed.contains(t)));
    assert!(plan.transforms().iter().any(|t| t.quarter_turns() == 2));
    assert_eq!(Plan::from_bytes(&plan.to_bytes()).unwrap(), plan);
    let cache = TileCache::new(lib, plan.tile_size());
    let pixels = render_band(&plan, &cache).unwrap();
    assert_eq!(pixels.len(), 128 * 126 * 3);
    // Each cell is its tile's rendition at 8 x 6, as turned.
    let cell = |c: usize, r: usize| -> Vec<u8> {
        (0..6)
            .flat_map(|y| {
                let at = ((r * 6 + y) * 128 + c * 8) * 3;
                pixels[at..at + 24].to_vec()
            })
            .collect()
    };
    let one = Plan::make(
        &t,
        lib,
        &PlanOptions {
            flip: false,
            rotate: false,
            ..o.clone()
        },
    )
    .unwrap();
    let plain = render_band(&one, &cache).unwrap();
    let first = one.tiles()[0];
    let (i, turn) = plan
        .tiles()
        .iter()
        .zip(plan.transforms())
        .enumerate()
        .find_map(|(i, (&t, &turn))| (t == first && turn != Transform::NONE).then_some((i, turn)))
        .unwrap_or((0, Transform::NONE));
    if plan.tiles()[i] == first {
        let as_is: Vec<u8> = (0..6)
            .flat_map(|y| plain[y * 128 * 3..y * 128 * 3 + 24].to_vec())
            .collect();
        assert_eq!(cell(i % 16, i / 16), turn.apply(&as_is, 8, 6, 3));
    }
}

#[test]
fn a_tile_shape_other_than_the_librarys_is_refused() {
    let t = target();
    // 4:3 tiles from a square library, square tiles from a 4:3 one.
    let err = Plan::make(&t, library_cached(), &oblong(16, 24, 18, 1)).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::ShapeMismatch(_)), "{text}");
    assert!(text.contains("4:3") && text.contains("1:1"), "{text}");
    let err = Plan::make(&t, library_4_3(), &opts(16, 16, 1)).unwrap_err();
    assert!(matches!(err, Error::ShapeMismatch(_)), "{err}");
    // 3:2 tiles from a 4:3 library.
    let err = Plan::make(&t, library_4_3(), &oblong(16, 24, 16, 1)).unwrap_err();
    assert!(err.to_string().contains("3:2"), "{err}");
    // A cache of another shape cannot render or measure a plan.
    let plan = Plan::make(&t, library_4_3(), &oblong(16, 8, 6, 1)).unwrap();
    let square = TileCache::new(library_4_3(), TileSize::square(8));
    assert!(render_band(&plan, &square).is_err());
    assert!(plan_quality(&plan, &square, &t).is_err());
}

#[test]
fn oblong_quality_from_the_plan_agrees_with_measuring_the_render() {
    let lib = library_4_3();
    let t = target();
    for (blend, flip, rotate) in [(0, false, false), (40, true, true)] {
        let o = PlanOptions {
            blend,
            flip,
            rotate,
            ..oblong(16, 12, 9, 1)
        };
        let plan = Plan::make(&t, lib, &o).unwrap();
        let cache = TileCache::new(lib, plan.tile_size());
        let (c, r) = (plan.cols(), plan.total_rows());
        let mut cells = MosaicCells::new(plan.width(), plan.total_height(), c, r).unwrap();
        render_to_sink(&plan, &cache, &mut cells, 4, &|_, _| {}).unwrap();
        let measured = cells.quality(&t).unwrap();
        let planned = plan_quality(&plan, &cache, &t).unwrap();
        assert!(
            (planned.de00_mean - measured.de00_mean).abs() < 0.25,
            "blend {blend}: {planned} vs {measured}"
        );
        let (ps, ms) = (planned.ssim_view.unwrap(), measured.ssim_view.unwrap());
        assert!(
            (ps - ms).abs() < 0.01,
            "blend {blend}: {planned} vs {measured}"
        );
        if blend == 0 && !flip {
            assert_eq!(planned.distinct, measured.distinct);
            assert_eq!(planned.dup_r1, measured.dup_r1);
        }
    }
}

#[test]
fn an_oblong_cell_map_keeps_both_sides() {
    let lib = library_4_3();
    let plan = Plan::make(&target(), lib, &oblong(12, 24, 18, 1)).unwrap();
    let map = CellMap::from_plan(&plan, lib).unwrap();
    assert_eq!(map.tile_size(), TileSize::new(24, 18).unwrap());
    assert_eq!(CellMap::from_bytes(&map.to_bytes()).unwrap(), map);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn oblong_bands_render_byte_identical_to_the_whole(
        cuts in proptest::collection::btree_set(1u32..18, 0..6),
        blend in 0u8..=100,
        flip in any::<bool>(),
        rotate in any::<bool>(),
    ) {
        let lib = library_4_3();
        let o = PlanOptions { blend, flip, rotate, ..oblong(13, 8, 6, 1) };
        let plan = Plan::make(&target(), lib, &o).unwrap();
        let rows = plan.total_rows();
        let whole = render_band(&plan, &TileCache::new(lib, plan.tile_size())).unwrap();
        let mut bounds = vec![0];
        bounds.extend(cuts.into_iter().filter(|&c| c < rows));
        bounds.push(rows);
        let mut stitched = Vec::new();
        for w in bounds.windows(2) {
            let band = Plan::from_bytes(&plan.rows(w[0]..w[1]).unwrap().to_bytes()).unwrap();
            // A fresh cache, as on another processor.
            let cache = TileCache::new(lib, band.tile_size());
            stitched.extend(render_band(&band, &cache).unwrap());
        }
        prop_assert!(stitched == whole);
    }
}

/// `min_uses=1` puts every tile in the mosaic, within the cap and the repeat radius, at a colour
/// cost not far above the plan without the floor; a grid too small for it is refused.
#[test]
fn a_floor_on_uses_puts_every_tile_in_and_keeps_the_other_rules() {
    let library = library_cached();
    let target = target();
    let n = library.len();
    let mut options = opts(12, 4, 1);
    options.max_uses = Some(5);
    let free = Plan::make(&target, library, &options).unwrap();
    options.min_uses = 1;
    let fair = Plan::make(&target, library, &options).unwrap();
    let mut uses = vec![0u32; n];
    for &t in fair.tiles() {
        uses[t as usize] += 1;
    }
    assert!(uses.iter().all(|&u| (1..=5).contains(&u)), "{uses:?}");
    let free_uses = free
        .tiles()
        .iter()
        .collect::<std::collections::HashSet<_>>()
        .len();
    assert!(
        free_uses < n,
        "the plan without the floor leaves tiles out ({free_uses} of {n})"
    );
    // No tile repeats next to itself.
    let cols = fair.cols() as usize;
    for (i, &t) in fair.tiles().iter().enumerate() {
        let (y, x) = (i / cols, i % cols);
        for (dy, dx) in [(0, 1), (1, 0), (1, 1)] {
            if let Some(&u) = fair.tiles().get((y + dy) * cols + x + dx)
                && x + dx < cols
            {
                assert_ne!(t, u, "tile {t} repeats at cell {i}");
            }
        }
        if y + 1 < fair.total_rows() as usize && x > 0 {
            assert_ne!(t, fair.tiles()[(y + 1) * cols + x - 1]);
        }
    }
    let cache = TileCache::new(library, fair.tile_size());
    let q_free = plan_quality(&free, &cache, &target).unwrap();
    let q_fair = plan_quality(&fair, &cache, &target).unwrap();
    assert!(
        q_fair.de00_mean <= q_free.de00_mean * 1.6,
        "{} against {}",
        q_fair.de00_mean,
        q_free.de00_mean
    );
    // Too few cells: 41 tiles at least 4 times need 164 cells; 144 are there.
    options.min_uses = 4;
    options.max_uses = None;
    let err = Plan::make(&target, library, &options)
        .unwrap_err()
        .to_string();
    assert!(err.contains("need") && err.contains("144"), "{err}");
}
