//! `tessera render` and `tessera library index` with tiles that are not square.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output};

use tessera_engine::{
    Grid, ImportOptions, Library, Plan, PlanOptions, TileCache, TileShape, TileSize, VecSink,
    decode_target, render_to_sink,
};

use crate::support::{astronaut, fixture, one_colour_tiles};

fn tessera<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(args: I) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(args)
        .output()
        .unwrap()
}

fn render(target: &Path, library: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args: Vec<&OsStr> = vec![
        "render".as_ref(),
        target.as_os_str(),
        "-l".as_ref(),
        library.as_os_str(),
        "-o".as_ref(),
        out.as_os_str(),
        "--quiet".as_ref(),
    ];
    args.extend(extra.iter().map(OsStr::new));
    tessera(args)
}

/// `tessera library index TILES -o INDEX --shape SHAPE`.
fn index(tiles: &Path, index: &Path, shape: &str) -> Output {
    let args: [&OsStr; 8] = [
        "library".as_ref(),
        "index".as_ref(),
        tiles.as_os_str(),
        "-o".as_ref(),
        index.as_os_str(),
        "--shape".as_ref(),
        shape.as_ref(),
        "--quiet".as_ref(),
    ];
    tessera(args)
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// `--tile-size 24x18` from a folder crops the tiles to 4:3 and renders what the engine renders;
/// `--rotate` then turns tiles by the half turn only.
#[test]
fn render_takes_oblong_tiles_from_a_folder() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("astronaut.png");
    std::fs::write(&target, astronaut()).unwrap();
    let (out, csv) = (dir.path().join("mosaic.png"), dir.path().join("plan.csv"));
    let tiles = fixture("engine/tiles");
    let plan_csv = csv.to_str().unwrap();
    let args = [
        "--cells",
        "10",
        "--tile-size",
        "24x18",
        "--flip",
        "--rotate",
        "--plan",
        plan_csv,
    ];
    let done = render(&target, &tiles, &out, &args);
    assert!(done.status.success(), "{}", stderr(&done));
    let image = image::open(&out).unwrap().to_rgb8();

    let options = ImportOptions {
        shape: TileShape::new(4, 3).unwrap(),
        ..ImportOptions::default()
    };
    let (library, _) = Library::import(&tiles, &options).unwrap();
    let plan_options = PlanOptions {
        tile_size: TileSize::new(24, 18).unwrap(),
        grid: Grid::Cells(10),
        flip: true,
        rotate: true,
        ..PlanOptions::default()
    };
    let target = decode_target(&astronaut(), library.background()).unwrap();
    // The default: transparent tiles over the background chosen to suit the photo.
    let background = tessera_engine::TileBackground::Auto.resolve(&target, &library);
    let library = tessera_engine::lay_over(&library, background);
    let plan = Plan::make(&target, &library, &plan_options).unwrap();
    // A square target, 4:3 cells: 10 across, 13 down, so the output stays about square.
    assert_eq!((plan.cols(), plan.total_rows()), (10, 13));
    let mut sink = VecSink::default();
    let cache = TileCache::new(&library, plan.tile_size());
    render_to_sink(&plan, &cache, &mut sink, 4, &|_, _| {}).unwrap();
    assert_eq!(image.dimensions(), (240, 234));
    assert!(
        image.as_raw() == &sink.pixels,
        "the CLI's render differs from the engine's"
    );

    let csv = std::fs::read_to_string(&csv).unwrap();
    let turns: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.rsplit(',').next().unwrap())
        .collect();
    assert_eq!(turns.len(), 130);
    assert!(
        turns
            .iter()
            .all(|t| ["none", "flip", "rot180", "flip+rot180"].contains(t)),
        "{csv}"
    );
}

#[test]
fn render_refuses_malformed_tile_sizes_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("astronaut.png");
    std::fs::write(&target, astronaut()).unwrap();
    let out = dir.path().join("mosaic.png");
    for (size, says) in [
        ("24x", "width x height"),
        ("x18", "width x height"),
        ("24x18x2", "width x height"),
        ("3x18", "4 to 256"),
        ("24x300", "4 to 256"),
        ("256x8", "too elongated"),
    ] {
        let done = render(
            &target,
            &fixture("engine/tiles"),
            &out,
            &["--tile-size", size],
        );
        assert!(!done.status.success(), "{size}");
        let text = stderr(&done);
        assert!(text.contains(says), "{size}: {text}");
    }
}

/// A saved index keeps its shape: rendering it at another shape is refused, naming both and
/// what to do.
#[test]
fn a_saved_index_renders_only_at_its_shape() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("astronaut.png");
    std::fs::write(&target, astronaut()).unwrap();
    let index_path = dir.path().join("tiles43.idx");
    let tiles = fixture("engine/tiles");
    let made = index(&tiles, &index_path, "4:3");
    assert!(made.status.success(), "{}", stderr(&made));
    let library = Library::from_bytes(&std::fs::read(&index_path).unwrap()).unwrap();
    assert_eq!(library.shape().to_string(), "4:3");

    let out = dir.path().join("mosaic.png");
    let done = render(
        &target,
        &index_path,
        &out,
        &["--cells", "8", "--tile-size", "16x12"],
    );
    assert!(done.status.success(), "{}", stderr(&done));
    assert_eq!(
        image::open(&out).unwrap().to_rgb8().dimensions(),
        (128, 132)
    );

    let refused = render(
        &target,
        &index_path,
        &out,
        &["--cells", "8", "--tile-size", "16"],
    );
    assert!(!refused.status.success());
    let text = stderr(&refused);
    assert!(
        text.contains("4:3") && text.contains("1:1") && text.contains("--shape"),
        "{text}"
    );

    let bad = index(&tiles, &index_path, "4x3");
    assert!(!bad.status.success());
    assert!(stderr(&bad).contains("width:height"), "{}", stderr(&bad));
}

/// `--overlay 30 --metrics` prints the tiles' own figures and, apart, those with the photo
/// overlaid; `--placements` writes where each tile went, every cell once.
#[test]
fn render_reports_an_overlay_apart_and_writes_the_placements() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("astronaut.png");
    std::fs::write(&target, astronaut()).unwrap();
    let tiles = fixture("engine/tiles");
    let placements = dir.path().join("placements.csv");
    let placements_arg = placements.display().to_string();
    let out = render(
        &target,
        &tiles,
        &dir.path().join("m.png"),
        &[
            "--cells",
            "12",
            "--tile-size",
            "8",
            "--overlay",
            "30",
            "--metrics",
            "--placements",
            &placements_arg,
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = String::from_utf8(out.stdout).unwrap();
    let mean = |line: &str| -> f64 {
        let at = line.find("de00_mean=").unwrap() + "de00_mean=".len();
        line[at..]
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(lines.len(), 2, "{printed}");
    assert!(lines[1].starts_with("with the 30 % overlay: "), "{printed}");
    assert!(mean(lines[1]) < mean(lines[0]), "{printed}");
    let csv = std::fs::read_to_string(&placements).unwrap();
    assert_eq!(csv.lines().next(), Some("tile,name,caption,uses,cells"));
    let uses: u32 = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(3).unwrap().parse::<u32>().unwrap())
        .sum();
    assert_eq!(uses, 144, "{csv}");
    assert!(
        tessera(["render", "x.png", "-l", "y", "--overlay", "51"])
            .status
            .code()
            == Some(2)
    );
}

/// `--form 0` chooses tiles by colour alone, and so has the least colour error; `--form 100`
/// makes another mosaic, with more.
#[test]
fn form_weighs_colour_against_form() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("astronaut.png");
    std::fs::write(&target, astronaut()).unwrap();
    let tiles = fixture("engine/tiles");
    let decoded = decode_target(&astronaut(), [255; 3]).unwrap();
    let mut errors = Vec::new();
    let mut pixels = Vec::new();
    for form in ["0", "50", "100"] {
        let out = dir.path().join(format!("form-{form}.png"));
        let args = ["--cells", "24", "--tile-size", "8", "--form", form];
        let done = render(&target, &tiles, &out, &args);
        assert!(done.status.success(), "{}", stderr(&done));
        let mosaic = image::open(&out).unwrap().to_rgb8();
        let (cols, rows) = (24, mosaic.height() / 8);
        errors.push(
            tessera_engine::evaluate(&decoded, &mosaic, cols, rows)
                .unwrap()
                .de00_mean,
        );
        pixels.push(mosaic.into_raw());
    }
    assert!(
        pixels[0] != pixels[2],
        "form 0 and 100 make the same mosaic"
    );
    assert!(
        errors[0] <= errors[1] && errors[0] <= errors[2],
        "colour alone has more colour error: {errors:?}"
    );
    let bad = render(
        &target,
        &tiles,
        &dir.path().join("x.png"),
        &["--form", "101"],
    );
    assert!(!bad.status.success());
}

#[test]
fn an_entra_id_identity_is_configured_by_account_name_and_says_what_it_lacks() {
    // Workload identity outside a pod: the credential names what the pod would have provided,
    // before any request.
    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .arg("queues")
        .env_remove("TESSERA_AZURE_CONNECTION_STRING")
        .env_remove("AZURE_TENANT_ID")
        .env_remove("AZURE_CLIENT_ID")
        .env_remove("AZURE_FEDERATED_TOKEN_FILE")
        .env("TESSERA_STORAGE", "azure")
        .env("TESSERA_STORAGE__AZURE_CREDENTIAL", "workload-identity")
        .env("TESSERA_STORAGE__AZURE_ACCOUNT", "tesseraprod")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("Entra ID credential") && err.contains("tenant"),
        "{err}"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .arg("queues")
        .env_remove("TESSERA_AZURE_CONNECTION_STRING")
        .env("TESSERA_STORAGE", "azure")
        .env("TESSERA_STORAGE__AZURE_CREDENTIAL", "workload-identity")
        .env("TESSERA_STORAGE__AZURE_ACCOUNT", "Tessera_Prod")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("storage.azure_account"),
        "{}",
        stderr(&out)
    );
}

/// A flat photo (every cell alike) with a high floor on uses: every tile's nearest cells are the
/// same, and the copies of each tile must still keep out of each other's radius. It finishes,
/// and every tile is there at least as often as asked.
#[test]
fn a_flat_photo_with_a_high_floor_places_every_copy() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("flat.png");
    image::RgbImage::from_pixel(1, 1, image::Rgb([120, 130, 140]))
        .save(&target)
        .unwrap();
    let placements = dir.path().join("placements.csv");
    let tiles = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/engine/tiles");
    let out = render(
        &target,
        &tiles,
        &dir.path().join("mosaic.png"),
        &[
            "--cells",
            "64",
            "--tile-size",
            "4",
            "--min-uses",
            "40",
            "--placements",
            &placements.display().to_string(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let csv = std::fs::read_to_string(&placements).unwrap();
    let uses: Vec<u32> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(3).unwrap().parse().unwrap())
        .collect();
    assert_eq!(uses.len(), 41, "every tile: {csv}");
    assert!(uses.iter().all(|&n| n >= 40), "{uses:?}");
    assert_eq!(uses.iter().sum::<u32>(), 64 * 64);
}

/// A small library (twelve photos) makes a mosaic of a small photo at the defaults (no tile
/// next to itself): cells with less than a pixel of the photo rank a quarter of the candidates,
/// and with so few tiles those must widen to the whole library when the neighbours hold them all.
#[test]
fn a_small_library_makes_a_mosaic_at_the_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let tiles = one_colour_tiles(dir.path(), 32);
    let target =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/engine/astronaut-48.png");
    let plan = dir.path().join("plan.csv");
    let out = render(
        &target,
        &tiles,
        &dir.path().join("mosaic.png"),
        &["--plan", &plan.display().to_string()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    // No tile beside itself, in any of the eight directions.
    let plan = std::fs::read_to_string(&plan).unwrap();
    let header: Vec<&str> = plan.lines().next().unwrap().split(',').collect();
    let at = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (col, row, tile) = (at("col"), at("row"), at("tile"));
    let mut grid = std::collections::HashMap::new();
    for line in plan.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let key: (i64, i64) = (f[row].parse().unwrap(), f[col].parse().unwrap());
        grid.insert(key, f[tile].to_string());
    }
    assert!(grid.len() > 1000, "{} cells", grid.len());
    for (&(r, c), t) in &grid {
        for (dr, dc) in [(0, 1), (1, -1), (1, 0), (1, 1)] {
            assert_ne!(
                grid.get(&(r + dr, c + dc)),
                Some(t),
                "{t} at {r},{c} and beside"
            );
        }
    }
}

/// The binary as it ships reads a phone's HEIC and an AVIF upright, with libheif loaded when
/// the first of them is read: the executable does not name it among the libraries it needs, so
/// runs that read no HEIF do not pay for setting up its decoders.
#[test]
fn the_binary_loads_libheif_when_a_heif_file_comes() {
    let dynamic = Command::new("readelf")
        .args(["-d", env!("CARGO_BIN_EXE_tessera")])
        .output()
        .unwrap();
    assert!(dynamic.status.success());
    let dynamic = String::from_utf8_lossy(&dynamic.stdout);
    assert!(dynamic.contains("(NEEDED)"), "{dynamic}");
    assert!(!dynamic.contains("libheif"), "libheif linked: {dynamic}");

    let dir = tempfile::tempdir().unwrap();
    let tiles = one_colour_tiles(dir.path(), 16);
    for name in ["phone.heic", "photo.avif"] {
        let photo = dir.path().join(name);
        std::fs::write(&photo, crate::photos::corpus_file(name)).unwrap();
        let out = dir.path().join(format!("{name}.png"));
        let run = render(&photo, &tiles, &out, &["--cells", "24", "--tile-size", "8"]);
        assert!(run.status.success(), "{name}: {}", stderr(&run));
        let mosaic = image::open(&out).unwrap();
        assert_eq!(
            (mosaic.width(), mosaic.height()),
            (24 * 8, 16 * 8),
            "{name}: upright"
        );
    }
}

/// `tessera queues purge` empties only the deployment's own queues: a name that carries another
/// environment's prefix is refused, and the other environment's messages stay.
#[test]
fn queues_purge_is_confined_to_the_deployments_own_queues() {
    let dir = tempfile::tempdir().unwrap();
    let tessera = |args: &[&str], prefix: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_tessera"))
            .arg("--data")
            .arg(dir.path())
            .args(args)
            .env_remove("TESSERA_STORAGE")
            .env_remove("TESSERA_CONFIG")
            .env("TESSERA_STORAGE__NAME_PREFIX", prefix)
            .output()
            .unwrap()
    };
    // In the dev environment, its own queue purges.
    let out = tessera(&["queues", "purge", "imagerequest", "--yes"], "dev-");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = tessera(&["queues", "purge", "dev-imagerequest", "--yes"], "");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not one of this deployment's queues"), "{err}");
    let out = tessera(&["queues", "purge", "imagerequest-poison", "--yes"], "");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
