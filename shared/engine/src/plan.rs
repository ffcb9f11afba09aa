//! Sizing and matching: the plan (cell -> tile) for a whole target, made once so that the
//! repetition constraint holds everywhere, then cut into rows that render on their own.

mod global;
mod keep;

use std::ops::Range;

use rayon::prelude::*;

use crate::color::{
    Lab, ciede2000_batch, ciede2000_ranking, perceptual, srgb_to_lab_quick, srgb_to_lab32,
};
use crate::error::Error;
use crate::fair::CellCost;
use crate::hash::Fnv;
use crate::kdtree::KdTree;
use crate::library::Library;
use crate::resample::AreaResampler;
use crate::shape::{TileSize, check_shape};
use crate::transform::Transform;

const MAGIC: &[u8; 8] = b"TSRPLAN\n";
/// Version of the plan blob layout: 2 added each cell's transform, 3 the tile height after the
/// tile width, 4 the background transparent tiles lie over after the library version. Versions
/// 1 (every cell untransformed) and 2 still load, with square tiles, and 1 to 3 with the
/// library's own background.
pub const PLAN_FORMAT_VERSION: u32 = 4;

/// Default output limit: one gigapixel.
pub const DEFAULT_MAX_OUTPUT_PIXELS: u64 = 1 << 30;

/// How the target is cut into cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grid {
    /// This many cells across; rows follow the target's aspect ratio (with non-square cells,
    /// fewer or more rows, so that the output keeps the target's shape).
    Cells(u32),
    /// One cell per target pixel (output = target size x tile size: non-square tiles stretch
    /// the output by their shape).
    PerPixel,
}

/// Options of a mosaic: everything that, with the target and library, fixes the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanOptions {
    /// Cell size in output pixels; its shape must be the library's.
    pub tile_size: TileSize,
    pub grid: Grid,
    /// No identical tile within this Chebyshev distance in cells; 0 allows any repetition.
    pub repeat_radius: u32,
    /// Optional cap on the uses of any one tile.
    pub max_uses: Option<u32>,
    /// Every tile at least this many times (0: no floor). The grid must have at least the
    /// library's tiles times this many cells.
    pub min_uses: u32,
    /// Colour blend toward each cell's colour, 0 to 100 %.
    pub blend: u8,
    /// Largest output allowed, in pixels.
    pub max_output_pixels: u64,
    /// Candidates taken from the colour index per cell before re-ranking on structure.
    pub candidates: usize,
    /// Weight of the sub-grid pattern term (each sub-cell's Lab around the cell's mean) against
    /// the squared CIEDE2000 of the means.
    pub structure_weight: f32,
    /// Weight of the sub-grid lightness term (mean squared L* difference over the sub-cells):
    /// tiles whose light and dark parts sit where the cell's do.
    pub lightness_weight: f32,
    /// Weight of the lightness-gradient term: for each neighbouring cell already placed, the
    /// squared difference between the mosaic's and the target's step in L* from there. Keeps
    /// edges and smooth areas as the photo has them, which is what reads from a distance.
    pub gradient_weight: f32,
    /// Local-improvement passes after each batch of rows is assigned: every cell takes the
    /// candidate that lowers its cost given all its neighbours, within the repetition limits.
    pub refine_passes: u32,
    /// Tiles may be mirrored left-right.
    pub flip: bool,
    /// Tiles may be turned by 90, 180 or 270 degrees (with `flip`, all 8 symmetries of the
    /// square); tiles that are not square turn by 180 degrees only. Each candidate tile is
    /// placed under the transform that best fits the cell's sub-grid; repetition limits count
    /// the tile whatever its transform.
    pub rotate: bool,
}

impl Default for PlanOptions {
    fn default() -> Self {
        Self {
            tile_size: TileSize::square(16),
            grid: Grid::Cells(128),
            repeat_radius: 1,
            max_uses: None,
            min_uses: 0,
            blend: 0,
            max_output_pixels: DEFAULT_MAX_OUTPUT_PIXELS,
            candidates: 24,
            structure_weight: 0.0,
            lightness_weight: 1.2,
            gradient_weight: 1.0,
            refine_passes: 2,
            flip: false,
            rotate: false,
        }
    }
}

impl PlanOptions {
    /// The structure weights for colour against form `form` (0 to 100): 0 leaves colour alone
    /// and 50 gives the defaults. With `s = form / 50`, the gradient and pattern weights are the
    /// defaults times `s`, the lightness weight times `s²`: form comes first from the steps
    /// between cells, which cost little colour, and the sub-cells' lightness, which costs more,
    /// catches up toward the default.
    pub fn with_form(self, form: u8) -> Self {
        let scale = f32::from(form.min(100)) / 50.0;
        let base = PlanOptions::default();
        PlanOptions {
            lightness_weight: base.lightness_weight * scale * scale,
            gradient_weight: base.gradient_weight * scale,
            structure_weight: base.structure_weight * scale,
            ..self
        }
    }
}

/// The grid and output size a target gets under some options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizing {
    pub cols: u32,
    pub rows: u32,
    pub tile_size: TileSize,
    pub width: u32,
    pub height: u32,
}

impl Sizing {
    /// Works out the grid and output size, checking the tile size and the output limit.
    pub fn new(target_w: u32, target_h: u32, opts: &PlanOptions) -> Result<Sizing, Error> {
        opts.tile_size.check()?;
        let tile = opts.tile_size;
        if opts.blend > 100 {
            return Err(Error::InvalidOption(format!(
                "blend {} % (0 to 100)",
                opts.blend
            )));
        }
        if target_w == 0 || target_h == 0 {
            return Err(Error::Decode("the target image is empty".into()));
        }
        let (cols, rows) = match opts.grid {
            Grid::PerPixel => (target_w, target_h),
            Grid::Cells(0) => {
                return Err(Error::InvalidOption(
                    "cells across must be at least 1".into(),
                ));
            }
            Grid::Cells(c) => {
                let mut rows = c as f64 * target_h as f64 / target_w as f64;
                // Cells that are not square: as many rows as keep the output's shape the
                // target's. (Square cells skip the step, so their sizing is as it always was.)
                if !tile.is_square() {
                    rows *= tile.width as f64 / tile.height as f64;
                }
                (c, rows.round().max(1.0).min(u32::MAX as f64) as u32)
            }
        };
        let width = cols as u64 * tile.width as u64;
        let height = rows as u64 * tile.height as u64;
        if width * height > opts.max_output_pixels
            || width > u32::MAX as u64
            || height > u32::MAX as u64
        {
            return Err(Error::OutputTooLarge {
                width,
                height,
                limit: opts.max_output_pixels,
            });
        }
        Ok(Sizing {
            cols,
            rows,
            tile_size: tile,
            width: width as u32,
            height: height as u32,
        })
    }
}

/// Cell -> tile for some consecutive rows of a grid (the whole grid, or rows cut from it), with
/// each cell's target colour, so a band renders from its rows and the library alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    cols: u32,
    total_rows: u32,
    first_row: u32,
    tile_size: TileSize,
    blend: u8,
    library_version: u64,
    /// The background a transparent library's tiles were matched over ([`Library::over`]);
    /// `None` for an opaque library.
    background: Option<[u8; 3]>,
    tiles: Vec<u32>,
    colours: Vec<[u8; 3]>,
    transforms: Vec<Transform>,
}

/// Descriptors of one cell of the target.
#[derive(Clone)]
pub(crate) struct CellDesc {
    pub(crate) mean: Lab,
    pub(crate) subs: Vec<Lab>,
}

/// A library with no tile cannot fill any cell.
pub(crate) fn empty_library() -> Error {
    Error::LibraryTooSmall {
        tiles: 0,
        needed: 1,
        hint: "the library holds no readable image".into(),
    }
}

/// Every one of a library's `n` tiles is ruled out for a cell by the repetition limits.
pub(crate) fn no_tile_fits(n: usize) -> Error {
    Error::LibraryTooSmall {
        tiles: n,
        needed: n + 1,
        hint: "no tile satisfies the repeat radius and use cap here: lower --repeat-radius, \
               raise the use cap or add tiles"
            .into(),
    }
}

/// The fewest distinct tiles a `cols` x `rows` grid needs so that no tile repeats within
/// `repeat_radius` cells (the cells already placed around a cell, in the order cells are filled,
/// must all differ from it). At least 1: an empty library cannot fill any grid.
pub fn tiles_needed(cols: u32, rows: u32, repeat_radius: u32) -> usize {
    let (cols, rows, r) = (cols as usize, rows as usize, repeat_radius as usize);
    if r == 0 || cols == 0 || rows == 0 {
        return 1;
    }
    (r.min(rows - 1) * (2 * r + 1).min(cols) + r.min(cols - 1) + 1).min(cols * rows)
}

/// Most cells of bookkeeping a floor of several copies per tile may keep: each copy closes the
/// cells within the repeat radius to its siblings, `tiles x min_uses x (2r + 1)²` in all.
pub const MAX_FLOOR_CLOSED_CELLS: u64 = 1 << 25;

/// Why every tile at least `min_uses` times cannot be placed on a `cols` x `rows` grid with
/// `tiles` tiles under `repeat_radius`, where the numbers alone say so: `None` when they do
/// not. Cheap, so that a job is refused at its submission rather than after its search.
pub fn floor_unworkable(
    (cols, rows): (u32, u32),
    tiles: u64,
    repeat_radius: u32,
    min_uses: u32,
) -> Option<String> {
    if min_uses == 0 {
        return None;
    }
    let (cols, rows, r, m) = (
        u64::from(cols),
        u64::from(rows),
        u64::from(repeat_radius),
        u64::from(min_uses),
    );
    let cells = cols * rows;
    if tiles.saturating_mul(m) > cells {
        return Some(format!(
            "{tiles} tiles at least {m} times each need {} cells; the grid has {cells} \
             ({cols} x {rows}): use more cells, fewer uses of each tile or fewer tiles",
            tiles.saturating_mul(m)
        ));
    }
    // Copies of one tile are more than r cells apart, across and down: a grid holds at most
    // one in each block of (r + 1) x (r + 1) cells.
    let apart = cols.div_ceil(r + 1) * rows.div_ceil(r + 1);
    if m > apart {
        return Some(format!(
            "a tile fits at most {apart} times on a {cols} x {rows} grid with no copy within \
             {r} cells of another, so it cannot be placed {m} times: ask for fewer uses of \
             each tile, let tiles repeat closer together, or add cells"
        ));
    }
    let closed = tiles
        .saturating_mul(m)
        .saturating_mul((2 * r + 1).saturating_mul(2 * r + 1));
    if m > 1 && closed > MAX_FLOOR_CLOSED_CELLS {
        return Some(format!(
            "{tiles} tiles at least {m} times each, none within {r} cells of itself, is more \
             than the planner places ({closed} cells kept apart, at most \
             {MAX_FLOOR_CLOSED_CELLS}): ask for fewer uses of each tile or let tiles repeat \
             closer together"
        ));
    }
    None
}

impl Plan {
    /// Matches every cell of `target` to a tile of `library`.
    pub fn make(
        target: &image::RgbImage,
        library: &Library,
        opts: &PlanOptions,
    ) -> Result<Plan, Error> {
        Self::make_with_progress(target, library, opts, &|_, _| {})
    }

    /// [`Plan::make`] calling `progress(rows_done, rows_total)`.
    pub fn make_with_progress(
        target: &image::RgbImage,
        library: &Library,
        opts: &PlanOptions,
        progress: &dyn Fn(u32, u32),
    ) -> Result<Plan, Error> {
        Self::make_incrementally(target, library, opts, &mut |plan, done| {
            progress(done, plan.total_rows());
            Ok(())
        })
    }

    /// [`Plan::make`] handing `ready(plan, rows_done)` the plan so far after each batch of rows:
    /// rows before `rows_done` are final and can be cut with [`Plan::rows`] and rendered while
    /// the rest is matched. An error from `ready` stops the matching.
    pub fn make_incrementally(
        target: &image::RgbImage,
        library: &Library,
        opts: &PlanOptions,
        ready: &mut dyn FnMut(&Plan, u32) -> Result<(), Error>,
    ) -> Result<Plan, Error> {
        let size = Sizing::new(target.width(), target.height(), opts)?;
        check_plannable(&size, library, opts)?;
        let (cols, rows) = (size.cols as usize, size.rows as usize);
        let min_uses = opts.min_uses;
        // Every cell's descriptors, kept for the floor on uses, which completes the whole grid.
        let mut all_descs = Vec::with_capacity(if min_uses > 0 { cols * rows } else { 0 });
        let (matcher, resampler) = Matcher::for_target(target, library, opts, &size);
        let k = matcher.k;
        let (mut plan, mut grid) = Plan::start(&size, library, opts);
        let mut uses = vec![
            0u32;
            if opts.max_uses.is_some() {
                library.len()
            } else {
                0
            }
        ];
        let describe = |y0: usize| {
            let y1 = (y0 + DESCRIBE_ROWS).min(rows);
            matcher.describe_rows(&resampler.rows(target.as_raw(), y0 * k..y1 * k), cols)
        };
        // Under a cap, every row is described first: where the scan order would run short,
        // the grid is one assignment.
        let mut described = None;
        if let Some(cap) = opts.max_uses {
            let all: Vec<Vec<Matched>> = (0..rows)
                .step_by(DESCRIBE_ROWS)
                .flat_map(describe)
                .collect();
            if !global::scan_order_suffices(&all, cap, library.len()) {
                matcher.assign_globally(&mut grid, &mut plan, all)?;
                ready(&plan, rows as u32)?;
                return Ok(plan);
            }
            described = Some(all.into_iter());
        }
        let mut next_rows = |y0: usize| match described.as_mut() {
            Some(all) => all.take(DESCRIBE_ROWS).collect(),
            None => describe(y0),
        };
        // Each batch of rows is assigned while the next one is described.
        let mut upcoming = Some(next_rows(0));
        for y0 in (0..rows).step_by(DESCRIBE_ROWS) {
            let y1 = (y0 + DESCRIBE_ROWS).min(rows);
            let batch = upcoming.take().unwrap_or_default();
            let (next, assigned) = rayon::join(
                || (y1 < rows).then(|| next_rows(y1)),
                || {
                    let keep = (min_uses > 0).then_some(&mut all_descs);
                    matcher.assign_rows(&mut grid, (&mut plan, &mut uses), batch, y0, keep)
                },
            );
            upcoming = next;
            assigned?;
            // With a floor on uses, rows may change until the whole grid is complete.
            if min_uses == 0 {
                ready(&plan, y1 as u32)?;
            }
        }
        if min_uses > 0 {
            matcher.complete_floor(&mut grid, &mut plan, &all_descs)?;
            ready(&plan, rows as u32)?;
        }
        Ok(plan)
    }

    /// An empty plan of `size` (every cell without a tile) and the assigner that fills it.
    fn start<'a>(
        size: &Sizing,
        library: &'a Library,
        opts: &'a PlanOptions,
    ) -> (Plan, Assigner<'a>) {
        let cells = size.cols as usize * size.rows as usize;
        let plan = Plan {
            cols: size.cols,
            total_rows: size.rows,
            first_row: 0,
            tile_size: size.tile_size,
            blend: opts.blend,
            library_version: library.version(),
            background: library.is_transparent().then(|| library.background()),
            tiles: vec![u32::MAX; cells],
            colours: vec![[0u8; 3]; cells],
            transforms: vec![Transform::NONE; cells],
        };
        let grid = Assigner {
            library,
            opts,
            cols: size.cols as usize,
            target_l: vec![0.0; cells],
            mosaic_l: vec![0.0; cells],
            held: Vec::new(),
            ring: Vec::new(),
        };
        (plan, grid)
    }

    pub fn cols(&self) -> u32 {
        self.cols
    }

    /// Rows in the whole grid this plan belongs to.
    pub fn total_rows(&self) -> u32 {
        self.total_rows
    }

    /// The grid rows this plan holds.
    pub fn row_range(&self) -> Range<u32> {
        self.first_row..self.first_row + (self.tiles.len() / self.cols as usize) as u32
    }

    /// Cell size in output pixels.
    pub fn tile_size(&self) -> TileSize {
        self.tile_size
    }

    pub fn blend(&self) -> u8 {
        self.blend
    }

    pub fn library_version(&self) -> u64 {
        self.library_version
    }

    /// The background the tiles were matched over, for a library with transparent tiles: the
    /// tiles must be rendered over it ([`Library::over`]).
    pub fn background(&self) -> Option<[u8; 3]> {
        self.background
    }

    /// Tile of every held cell, row-major.
    pub fn tiles(&self) -> &[u32] {
        &self.tiles
    }

    /// Transform of every held cell's tile, row-major.
    pub fn transforms(&self) -> &[Transform] {
        &self.transforms
    }

    /// Target colour (sRGB mean) of every held cell, row-major.
    pub fn colours(&self) -> &[[u8; 3]] {
        &self.colours
    }

    /// Output width in pixels.
    pub fn width(&self) -> u32 {
        self.cols * self.tile_size.width
    }

    /// Height in pixels of the whole output.
    pub fn total_height(&self) -> u32 {
        self.total_rows * self.tile_size.height
    }

    /// Height in pixels of the rows this plan holds.
    pub fn band_height(&self) -> u32 {
        self.row_range().len() as u32 * self.tile_size.height
    }

    /// The grid rows `range` (absolute row numbers, within [`Plan::row_range`]) as a plan of
    /// their own.
    pub fn rows(&self, range: Range<u32>) -> Result<Plan, Error> {
        let held = self.row_range();
        if range.start > range.end || range.start < held.start || range.end > held.end {
            return Err(Error::InvalidOption(format!(
                "rows {range:?} are outside the plan's rows {held:?}"
            )));
        }
        let c = self.cols as usize;
        let a = (range.start - held.start) as usize * c;
        let b = (range.end - held.start) as usize * c;
        Ok(Plan {
            first_row: range.start,
            tiles: self.tiles[a..b].to_vec(),
            colours: self.colours[a..b].to_vec(),
            transforms: self.transforms[a..b].to_vec(),
            ..*self
        })
    }

    /// Serializes the plan: magic, format version, header, tiles, colours, transforms and a
    /// digest.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(48 + self.tiles.len() * 8 + 8);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&PLAN_FORMAT_VERSION.to_le_bytes());
        for v in [
            self.cols,
            self.total_rows,
            self.first_row,
            self.row_range().len() as u32,
            self.tile_size.width,
            self.tile_size.height,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.push(self.blend);
        out.extend_from_slice(&self.library_version.to_le_bytes());
        match self.background {
            Some(bg) => {
                out.push(1);
                out.extend_from_slice(&bg);
            }
            None => out.extend_from_slice(&[0; 4]),
        }
        for t in &self.tiles {
            out.extend_from_slice(&t.to_le_bytes());
        }
        for c in &self.colours {
            out.extend_from_slice(c);
        }
        out.extend(self.transforms.iter().map(|t| t.as_u8()));
        let d = Fnv::digest(&out);
        out.extend_from_slice(&d.to_le_bytes());
        out
    }

    /// Loads a plan saved by [`Plan::to_bytes`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Plan, Error> {
        let bad = |m: &str| Error::BadPlan(m.to_string());
        if !bytes.starts_with(MAGIC) {
            return Err(bad("not a plan (bad magic)"));
        }
        if bytes.len() < MAGIC.len() + 4 + 20 + 1 + 8 + 8 {
            return Err(bad("truncated"));
        }
        let (body, tail) = bytes.split_at(bytes.len() - 8);
        let u32_at = |at: usize| u32::from_le_bytes(body[at..at + 4].try_into().expect("4 bytes"));
        let version = u32_at(8);
        if !(1..=PLAN_FORMAT_VERSION).contains(&version) {
            return Err(bad(&format!(
                "format version {version}, this build reads 1 to {PLAN_FORMAT_VERSION}"
            )));
        }
        if Fnv::digest(body) != u64::from_le_bytes(tail.try_into().expect("8 bytes")) {
            return Err(bad("digest mismatch: the plan is corrupt or truncated"));
        }
        let (cols, total_rows, first_row, count, tile_width) =
            (u32_at(12), u32_at(16), u32_at(20), u32_at(24), u32_at(28));
        // Version 3 has the tile height next; earlier plans are square.
        let (tile_height, at) = if version >= 3 {
            if body.len() < 45 {
                return Err(bad("truncated"));
            }
            (u32_at(32), 36)
        } else {
            (tile_width, 32)
        };
        let tile_size = TileSize {
            width: tile_width,
            height: tile_height,
        };
        let blend = body[at];
        let library_version = u64::from_le_bytes(body[at + 1..at + 9].try_into().expect("8 bytes"));
        // Version 4 has the background next: a flag and a colour.
        let (background, start) = if version >= 4 {
            match body.get(at + 9..at + 13) {
                Some([0, 0, 0, 0]) => (None, at + 13),
                Some(&[1, r, g, b]) => (Some([r, g, b]), at + 13),
                _ => return Err(bad("inconsistent header")),
            }
        } else {
            (None, at + 9)
        };
        let cells = cols as usize * count as usize;
        // Bytes per cell: a tile, a colour and (from version 2) a transform.
        let per_cell = if version == 1 { 7 } else { 8 };
        if Some(body.len()) != cells.checked_mul(per_cell).map(|n| n + start)
            || first_row as u64 + count as u64 > total_rows as u64
            || tile_size.check().is_err()
            || blend > 100
        {
            return Err(bad("inconsistent header"));
        }
        let tiles = body[start..start + cells * 4]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect();
        let colours = body[start + cells * 4..start + cells * 7]
            .chunks_exact(3)
            .map(|c| [c[0], c[1], c[2]])
            .collect();
        let transforms: Vec<Transform> = if version == 1 {
            vec![Transform::NONE; cells]
        } else {
            body[start + cells * 7..]
                .iter()
                .map(|&b| Transform::from_u8(b))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| bad("a cell's transform is not one of the 8 (0 to 7)"))?
        };
        if let Some(t) = transforms
            .iter()
            .find(|t| !t.keeps_shape(tile_size.is_square()))
        {
            return Err(bad(&format!(
                "a cell's tile is turned by {t}, which {tile_size} px tiles cannot take (only \
                 square tiles turn by a quarter)"
            )));
        }
        Ok(Plan {
            cols,
            total_rows,
            first_row,
            tile_size,
            blend,
            library_version,
            background,
            tiles,
            colours,
            transforms,
        })
    }

    /// Writes the plan as CSV: `row,col,tile,name,transform` (name quoted where needed;
    /// transform as [`Transform::name`]: `none`, `flip`, `rot90`, ..., `flip+rot270`, where flip
    /// mirrors left-right before the clockwise turn).
    pub fn write_csv(&self, library: &Library, mut w: impl std::io::Write) -> std::io::Result<()> {
        writeln!(w, "row,col,tile,name,transform")?;
        let c = self.cols as usize;
        for (i, (&t, tr)) in self.tiles.iter().zip(&self.transforms).enumerate() {
            let name = library
                .names()
                .get(t as usize)
                .map(String::as_str)
                .unwrap_or("");
            let name = if name.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", name.replace('"', "\"\""))
            } else {
                name.to_string()
            };
            writeln!(
                w,
                "{},{},{t},{name},{tr}",
                self.first_row as usize + i / c,
                i % c
            )?;
        }
        Ok(())
    }
}

/// Candidate tiles of a cell with their cost and the transform they take, best first.
pub(crate) use crate::capped::Ranked;

/// Rows of cells described (and their candidates ranked) as one batch, while the batch before
/// is assigned.
const DESCRIBE_ROWS: usize = 16;

/// Whether `library` can fill a grid of `size` under `opts`: not empty, of the tiles' shape,
/// enough distinct tiles for the repetition radius, enough uses under the cap, and a floor on
/// uses that can be placed.
fn check_plannable(size: &Sizing, library: &Library, opts: &PlanOptions) -> Result<(), Error> {
    check_shape(size.tile_size, library.shape())?;
    let (cols, rows) = (size.cols as usize, size.rows as usize);
    let n = library.len();
    if n == 0 {
        return Err(empty_library());
    }
    let r = opts.repeat_radius as usize;
    if r > 0 {
        let needed = tiles_needed(size.cols, size.rows, opts.repeat_radius);
        if n < needed {
            return Err(Error::LibraryTooSmall {
                tiles: n,
                needed,
                hint: format!(
                    "repeat radius {r} needs at least {needed} distinct tiles: lower --repeat-radius \
                     or add tiles"
                ),
            });
        }
    }
    if let Some(cap) = opts.max_uses
        && (n as u64) * (cap as u64) < (cols * rows) as u64
    {
        return Err(Error::LibraryTooSmall {
            tiles: n,
            needed: (cols * rows).div_ceil(cap.max(1) as usize),
            hint: format!(
                "{} cells with at most {cap} uses per tile: raise the use cap, use fewer cells \
                     or add tiles",
                cols * rows
            ),
        });
    }
    let min_uses = opts.min_uses;
    if min_uses > 0 {
        let grid = (size.cols, size.rows);
        if let Some(why) = floor_unworkable(grid, n as u64, opts.repeat_radius, min_uses) {
            return Err(Error::InvalidOption(why));
        }
        if opts.max_uses.is_some_and(|cap| cap < min_uses) {
            return Err(Error::InvalidOption(format!(
                "min_uses {min_uses} is over max_uses {}",
                opts.max_uses.unwrap_or_default()
            )));
        }
    }
    Ok(())
}

/// What matching a cell needs, set up once per plan: the library and options, the shortlist
/// tree, each allowed transform as the permutation of a tile's sub-grid it makes, and how
/// many candidates a cell ranks.
struct Matcher<'a> {
    library: &'a Library,
    opts: &'a PlanOptions,
    tree: Shortlist,
    turns: Vec<(Transform, Vec<usize>)>,
    /// Candidates ranked per cell.
    ncand: usize,
    /// The sub-grid's side.
    k: usize,
}

impl<'a> Matcher<'a> {
    fn new(library: &'a Library, opts: &'a PlanOptions, square: bool) -> Self {
        let k = library.grid();
        let turns: Vec<(Transform, Vec<usize>)> =
            Transform::allowed(opts.flip, opts.rotate, square)
                .into_iter()
                .map(|t| (t, t.permutation(k, k)))
                .collect();
        Matcher {
            library,
            opts,
            tree: Shortlist::new(library, opts, &turns),
            turns,
            ncand: opts.candidates.clamp(1, library.len().max(1)),
            k,
        }
    }

    /// The matcher of a plan of `size`, and the resampler that cuts `target` into its cells'
    /// sub-grids.
    fn for_target(
        target: &image::RgbImage,
        library: &'a Library,
        opts: &'a PlanOptions,
        size: &Sizing,
    ) -> (Self, AreaResampler) {
        let matcher = Matcher::new(library, opts, size.tile_size.is_square());
        let k = matcher.k;
        let resampler = AreaResampler::new(
            target.width() as usize,
            target.height() as usize,
            size.cols as usize * k,
            size.rows as usize * k,
        );
        (matcher, resampler)
    }

    /// The `width` best candidates for `desc` among the tiles `keep` lets through.
    fn rank(
        &self,
        desc: &CellDesc,
        width: usize,
        scratch: &mut Vec<(f32, u32)>,
        keep: &dyn Fn(u32) -> bool,
    ) -> Ranked {
        rank(
            desc,
            (self.library, &self.tree),
            width,
            self.opts,
            &self.turns,
            scratch,
            keep,
        )
    }

    /// Describes one cell from its sub-grid's sRGB values, and ranks its candidates.
    fn describe_cell(&self, raw: &[f32], scratch: &mut Vec<(f32, u32)>) -> Matched {
        let k = self.k;
        let mut subs = Vec::with_capacity(k * k);
        let mut sum = [0f64; 3];
        let mut prev: Option<(&[f32], Lab)> = None;
        for p in raw.chunks_exact(3) {
            let rgb = [p[0] as f64, p[1] as f64, p[2] as f64];
            for c in 0..3 {
                sum[c] += rgb[c];
            }
            let lab = match prev {
                Some((q, lab)) if q == p => lab,
                _ => srgb_to_lab_quick([p[0], p[1], p[2]]),
            };
            subs.push(lab);
            prev = Some((p, lab));
        }
        let kk = (k * k) as f64;
        let rgb = [sum[0] / kk, sum[1] / kk, sum[2] / kk];
        let colour = rgb.map(|v| v.round().clamp(0.0, 255.0) as u8);
        let desc = CellDesc {
            mean: srgb_to_lab32(rgb),
            subs,
        };
        // A cell with no inner structure (one target pixel or less, as in a per-pixel grid)
        // gives the structure terms little to choose by: a quarter of the candidates do,
        // unless a use cap needs the room.
        let flat = desc.subs.windows(2).all(|w| w[0] == w[1]);
        let width = if flat && self.opts.max_uses.is_none() {
            self.ncand.div_ceil(4)
        } else {
            self.ncand
        };
        let ranked = self.rank(&desc, width, scratch, &|_| true);
        (desc, colour, ranked)
    }

    /// Describes each cell of some rows, given as their sub-pixels (`cols` cells of `k x k`
    /// sub-pixels across), and ranks its candidates, a row per task.
    fn describe_rows(&self, sub_px: &[f32], cols: usize) -> Vec<Vec<Matched>> {
        let k = self.k;
        let row_stride = cols * k * 3;
        let rows = sub_px.len() / (row_stride * k).max(1);
        (0..rows)
            .into_par_iter()
            .map(|cy| {
                let mut out: Vec<Matched> = Vec::with_capacity(cols);
                let mut scratch = Vec::new();
                let (mut raw, mut last_raw) = (Vec::new(), Vec::new());
                for cx in 0..cols {
                    raw.clear();
                    for sy in 0..k {
                        let at = (cy * k + sy) * row_stride + cx * k * 3;
                        raw.extend_from_slice(&sub_px[at..at + k * 3]);
                    }
                    // Neighbouring cells are often identical (flat areas, per-pixel grids):
                    // the ranking is a pure function of the cell, so reuse it.
                    if let Some(last) = out.last()
                        && raw == last_raw
                    {
                        let again = last.clone();
                        out.push(again);
                        continue;
                    }
                    out.push(self.describe_cell(&raw, &mut scratch));
                    std::mem::swap(&mut raw, &mut last_raw);
                }
                out
            })
            .collect()
    }

    /// The best tile for cell `(x, y)` from `ranked`, looking four times wider each time no
    /// candidate fits (the use cap and the radius may rule them all out), with the list it came
    /// from. `None` when no tile of the library fits.
    #[allow(clippy::too_many_arguments)]
    fn pick_widening(
        &self,
        grid: &mut Assigner,
        (tiles, uses): (&[u32], &[u32]),
        (x, y): (usize, usize),
        desc: &CellDesc,
        mut ranked: Ranked,
    ) -> (Option<(u32, Transform)>, Ranked) {
        let n = self.library.len();
        let mut pick = grid.best(tiles, uses, x, y, &ranked, None);
        let mut width = self.ncand;
        // A flat cell's list is a quarter of the candidates: with a small library, candidates
        // are the whole library, and the list is widened to it.
        let mut widest = ranked.len() >= n;
        while pick.is_none() && !widest {
            width = (width * 4).min(n);
            widest = width >= n;
            let free = |t: u32| self.opts.max_uses.is_none_or(|cap| uses[t as usize] < cap);
            ranked = self.rank(desc, width, &mut Vec::new(), &free);
            pick = grid.best(tiles, uses, x, y, &ranked, None);
        }
        (pick, ranked)
    }

    /// Assigns the cells of a batch of rows from `y0` on in scan order, so each cell sees the
    /// tiles already placed around it, then improves them with their whole neighbourhood known.
    /// With `keep`, each cell's descriptors are kept there (for the floor on uses).
    fn assign_rows(
        &self,
        grid: &mut Assigner,
        (plan, uses): (&mut Plan, &mut Vec<u32>),
        described: Vec<Vec<Matched>>,
        y0: usize,
        mut keep: Option<&mut Vec<CellDesc>>,
    ) -> Result<(), Error> {
        let cols = grid.cols;
        let mut lists = Vec::with_capacity(described.len() * cols);
        for (i, (desc, colour, ranked)) in described.into_iter().flatten().enumerate() {
            let (y, x) = (y0 + i / cols, i % cols);
            let here = y * cols + x;
            grid.target_l[here] = desc.mean[0];
            plan.colours[here] = colour;
            let (pick, ranked) =
                self.pick_widening(grid, (&plan.tiles, uses), (x, y), &desc, ranked);
            let Some(pick) = pick else {
                return Err(no_tile_fits(self.library.len()));
            };
            grid.place(plan, uses, here, pick);
            if let Some(keep) = keep.as_deref_mut() {
                keep.push(desc);
            }
            // The refinement chooses from the list the tile came from, so a cell that had to
            // look wider keeps its tile among the choices.
            lists.push(ranked);
        }
        self.refine_rows(grid, (plan, uses), &lists, (y0, 0));
        Ok(())
    }

    /// Local improvement of a batch of rows from `y0` on (their candidate `lists`): each cell
    /// whose tile is over `floor` uses takes the candidate that lowers its cost given all its
    /// neighbours, and (without a cap)
    /// a better tile held by the one neighbour that blocks it under the radius, which then
    /// moves to its own next best.
    fn refine_rows(
        &self,
        grid: &mut Assigner,
        (plan, uses): (&mut Plan, &mut Vec<u32>),
        lists: &[Ranked],
        (y0, floor): (usize, u32),
    ) {
        let cols = grid.cols;
        for _ in 0..self.opts.refine_passes {
            let mut changed = false;
            for (i, ranked) in lists.iter().enumerate() {
                let (y, x) = (y0 + i / cols, i % cols);
                let here = y * cols + x;
                let current = (plan.tiles[here], plan.transforms[here]);
                // A tile at the floor on its uses keeps its cells.
                if floor > 0 && uses.get(current.0 as usize).is_some_and(|&u| u <= floor) {
                    continue;
                }
                if let Some(pick) = grid.best(&plan.tiles, uses, x, y, ranked, Some(current.0))
                    && pick != current
                {
                    grid.unplace(uses, current.0);
                    grid.place(plan, uses, here, pick);
                    changed = true;
                }
            }
            if self.opts.repeat_radius > 0 && self.opts.max_uses.is_none() {
                for (i, ranked) in lists.iter().enumerate() {
                    changed |= grid.eject(plan, lists, (y0, i), ranked);
                }
            }
            if !changed {
                break;
            }
        }
    }

    /// What each tile costs in the cells `descs` describes, for the floor's assignment.
    fn cell_scores<'s>(&'s self, descs: &'s [CellDesc]) -> CellScores<'s> {
        CellScores {
            descs,
            library: self.library,
            opts: self.opts,
            turns: &self.turns,
        }
    }

    /// The floor on uses over the whole grid: the copies every tile needs are placed as one
    /// assignment ([`crate::fair::place_copies`]) and fixed; every other cell chooses again in
    /// scan order, around them and under the use cap they leave, keeping its tile where it may.
    fn complete_floor(
        &self,
        grid: &mut Assigner,
        plan: &mut Plan,
        all_descs: &[CellDesc],
    ) -> Result<(), Error> {
        let (library, opts) = (self.library, self.opts);
        let (cols, cells, n) = (grid.cols, plan.tiles.len(), library.len());
        let cost_of = self.cell_scores(all_descs);
        let outside: Vec<f32> = (0..cells)
            .into_par_iter()
            .map(|c| cost_of.cost(c as u32, plan.tiles[c]).0)
            .collect();
        let means: Vec<Lab> = all_descs.iter().map(|d| d.mean).collect();
        let copies = crate::fair::place_copies(
            &means,
            &outside,
            library,
            &cost_of,
            (cols, opts.repeat_radius as usize, opts.min_uses),
        )?;
        let mut uses = vec![0u32; n];
        let before = std::mem::replace(&mut plan.tiles, vec![u32::MAX; cells]);
        for (here, copy) in copies.iter().enumerate() {
            if let Some(pick) = *copy {
                grid.place(plan, &mut uses, here, pick);
            }
        }
        let cap = opts.max_uses.unwrap_or(u32::MAX);
        for (here, copy) in copies.iter().enumerate() {
            if copy.is_some() {
                continue;
            }
            let (y, x) = (here / cols, here % cols);
            let own = before[here];
            let pick = if uses[own as usize] < cap && !grid.repeats(&plan.tiles, x, y, own) {
                Some((own, plan.transforms[here]))
            } else {
                let desc = &all_descs[here];
                let mut width = self.ncand;
                loop {
                    let free = |t: u32| uses[t as usize] < cap;
                    let ranked = self.rank(desc, width, &mut Vec::new(), &free);
                    if let Some(pick) = grid.best(&plan.tiles, &uses, x, y, &ranked, None) {
                        break Some(pick);
                    }
                    if width >= n {
                        break None;
                    }
                    width = (width * 4).min(n);
                }
            };
            let Some(pick) = pick else {
                return Err(no_tile_fits(n));
            };
            grid.place(plan, &mut uses, here, pick);
        }
        Ok(())
    }
}

/// A described cell: descriptors, sRGB colour, and its ranked candidates.
type Matched = (CellDesc, [u8; 3], Ranked);

/// The first cut of a cell's candidates, by a k-d tree in one of two spaces:
/// - with no weight on form, the tiles' means in Lab with chroma compressed ([`perceptual`]),
///   where Euclidean distance ranks pairs of colours nearly as CIEDE2000 does (plain Lab
///   overrates chroma differences among saturated colours, and a shortlist cut by it missed tiles
///   that CIEDE2000 ranks high);
/// - with form, the same mean followed by the main patterns of light and dark in the tile
///   ([`form_point`]). Euclidean distance there is, nearly, the colour and lightness terms of
///   the cost ([`rank`]), so the shortlist holds the tiles whose light and dark parts fit, not
///   only those of the nearest mean: in a large library those can be hundreds of places down a
///   list cut by colour alone.
pub(crate) enum Shortlist {
    Colour(KdTree),
    Form {
        tree: KdTree<FORM_DIMS>,
        /// The same tree for cells with no inner structure (one target pixel or less), whose
        /// patterns are all zero: each tile as its mean and the length of its patterns, the
        /// same distances in four dimensions rather than seven.
        flat: Box<KdTree<4>>,
        /// Whether the patterns are taken whatever their orientation (tiles may be
        /// transformed).
        any_turn: bool,
        /// Weights of a library grid's sub-cells in each cell of the 3 x 3 grid, per axis.
        weights: [Vec<f32>; 3],
        /// The factor on the patterns: the square root of the lightness weight per sub-cell.
        scale: f32,
    },
}

impl Shortlist {
    pub(crate) fn new(
        library: &Library,
        opts: &PlanOptions,
        turns: &[(Transform, Vec<usize>)],
    ) -> Self {
        if opts.lightness_weight <= 0.0 {
            let means: Vec<Lab> = library.means().iter().map(perceptual).collect();
            return Shortlist::Colour(KdTree::new(&means));
        }
        let k = library.grid();
        let weights = [0, 1, 2].map(|o| thirds(k, o));
        let scale = (opts.lightness_weight / 9.0).sqrt();
        let any_turn = turns.len() > 1;
        let points: Vec<_> = (0..library.len())
            .map(|t| {
                let sub = library.sub_grid(t as u32);
                let light = light_grid(|i| sub[i][0], &weights);
                form_point(&library.means()[t], &light, scale, any_turn)
            })
            .collect();
        let flat: Vec<[f32; 4]> = points
            .iter()
            .map(|p| {
                [
                    p[0],
                    p[1],
                    p[2],
                    p[3..].iter().map(|v| v * v).sum::<f32>().sqrt(),
                ]
            })
            .collect();
        Shortlist::Form {
            tree: KdTree::new(&points),
            flat: Box::new(KdTree::new(&flat)),
            any_turn,
            weights,
            scale,
        }
    }

    /// The `k` tiles nearest the cell `desc`, nearest first, as `(distance, tile)`; what `out`
    /// holds on entry is a warm start, as for [`KdTree::nearest`].
    fn nearest(&self, desc: &CellDesc, k: usize, out: &mut Vec<(f32, u32)>) {
        match self {
            Shortlist::Colour(tree) => tree.nearest(&perceptual(&desc.mean), k, out),
            Shortlist::Form {
                tree,
                flat,
                any_turn,
                weights,
                scale,
            } => {
                if desc.subs.windows(2).all(|w| w[0][0] == w[1][0]) {
                    let [l, a, b] = mean_point(&desc.mean, *scale);
                    flat.nearest(&[l, a, b, 0.0], k, out);
                    return;
                }
                let light = light_grid(|i| desc.subs[i][0], weights);
                tree.nearest(&form_point(&desc.mean, &light, *scale, *any_turn), k, out);
            }
        }
    }
}

/// The weight of each of a `k`-wide grid's sub-cells in the `o`-th third of the cell.
fn thirds(k: usize, o: usize) -> Vec<f32> {
    let (lo, hi) = (o as f32 * k as f32 / 3.0, (o + 1) as f32 * k as f32 / 3.0);
    (0..k)
        .map(|j| ((j as f32 + 1.0).min(hi) - (j as f32).max(lo)).max(0.0) * 3.0 / k as f32)
        .collect()
}

/// The L* of `light` (a `k x k` grid, row by row, `k` the length of each of `weights`, from
/// [`thirds`]) averaged over a 3 x 3 grid.
fn light_grid(light: impl Fn(usize) -> f32, weights: &[Vec<f32>; 3]) -> [f32; 9] {
    let k = weights[0].len();
    if k == 3 {
        return std::array::from_fn(light);
    }
    let mut grid = [0f32; 9];
    for (oy, wy) in weights.iter().enumerate() {
        for (ox, wx) in weights.iter().enumerate() {
            for (y, &a) in wy.iter().enumerate().filter(|w| *w.1 > 0.0) {
                for (x, &b) in wx.iter().enumerate().filter(|w| *w.1 > 0.0) {
                    grid[oy * 3 + ox] += a * b * light(y * k + x);
                }
            }
        }
    }
    grid
}

/// Dimensions of a point of the form-aware [`Shortlist`]: the mean, then four patterns.
const FORM_DIMS: usize = 7;

/// A point of the form-aware [`Shortlist`] for a tile or cell of mean `mean` and a 3 x 3 grid of
/// L* `grid`:
/// - the perceptual mean, its L* weighed by `sqrt(1 + w)` for the lightness term's share in the
///   mean (`w` the lightness weight, `scale` = `sqrt(w / 9)`);
/// - times `scale`, the grid's projections on orthonormal patterns made of a step across
///   (-1, 0, 1) and a bend (1, -2, 1): the steps in x and in y, their product (a saddle), and
///   the bends in x and in y. These carry most of a photo's detail at this scale, and are few
///   enough for a k-d tree to prune well.
/// - With `any_turn`, the same patterns in a form no turn or mirroring changes: the length of
///   the step, the size of the saddle, and the sum and size of the difference of the bends. A
///   tile's distance from a cell there is never more than its lightness term under its best
///   transform.
fn form_point(mean: &Lab, grid: &[f32; 9], scale: f32, any_turn: bool) -> [f32; FORM_DIMS] {
    const H: f32 = std::f32::consts::FRAC_1_SQRT_2;
    const STEP: [f32; 3] = [-H, 0.0, H];
    const BEND: [f32; 3] = [0.408_248_3, -0.816_496_6, 0.408_248_3];
    const FLAT: [f32; 3] = [0.577_350_3; 3];
    let project = |px: &[f32; 3], py: &[f32; 3]| {
        let mut v = 0f32;
        for y in 0..3 {
            for x in 0..3 {
                v += px[x] * py[y] * grid[y * 3 + x];
            }
        }
        scale * v
    };
    let (sx, sy) = (project(&STEP, &FLAT), project(&FLAT, &STEP));
    let saddle = project(&STEP, &STEP);
    let (bx, by) = (project(&BEND, &FLAT), project(&FLAT, &BEND));
    let [l, a, b] = mean_point(mean, scale);
    if any_turn {
        let step = (sx * sx + sy * sy).sqrt();
        [
            l,
            a,
            b,
            step,
            saddle.abs(),
            (bx + by) * H,
            (bx - by).abs() * H,
        ]
    } else {
        [l, a, b, sx, sy, saddle, bx]
    }
}

/// The first three dimensions of a [`form_point`]: the perceptual mean, its L* weighed by
/// `sqrt(1 + w)` (`scale` = `sqrt(w / 9)`).
fn mean_point(mean: &Lab, scale: f32) -> [f32; 3] {
    let p = perceptual(mean);
    [p[0] * (1.0 + 9.0 * scale * scale).sqrt(), p[1], p[2]]
}

/// Candidates for one cell with their cost: the `width` nearest tiles by mean colour
/// ([`Shortlist`]), re-ranked on the squared CIEDE2000 of the means plus the sub-grid terms, best
/// first. Each tile takes
/// the transform of `turns` (each with its sub-grid permutation) whose sub-grid fits best; a
/// transform leaves the mean, so the colour term and the gradient term do not depend on it.
/// Tiles for which `keep` is false (those at their use cap, when a cell looks wider) are left
/// out before they are scored.
pub(crate) fn rank(
    desc: &CellDesc,
    (library, tree): (&Library, &Shortlist),
    width: usize,
    opts: &PlanOptions,
    turns: &[(Transform, Vec<usize>)],
    scratch: &mut Vec<(f32, u32)>,
    keep: &dyn Fn(u32) -> bool,
) -> Ranked {
    tree.nearest(desc, width, scratch);
    let mut scored: Ranked = Vec::with_capacity(scratch.len());
    scored.extend(
        scratch
            .iter()
            .filter(|&&(_, t)| keep(t))
            .map(|&(_, t)| (0.0, t, Transform::NONE)),
    );
    // The colour differences a batch at a time, in buffers on the stack.
    const BATCH: usize = 32;
    let (mut means, mut de) = ([[0f32; 3]; BATCH], [0f32; BATCH]);
    for part in scored.chunks_mut(BATCH) {
        for (m, c) in means.iter_mut().zip(part.iter()) {
            *m = library.means()[c.1 as usize];
        }
        ciede2000_batch(desc.mean, &means[..part.len()], &mut de[..part.len()]);
        for (c, de) in part.iter_mut().zip(de) {
            let (structure, turn) = structure(desc, library, c.1, opts, turns);
            *c = (de * de + structure, c.1, turn);
        }
    }
    sort_by_cost(&mut scored);
    scored
}

/// Sorts candidates by cost, then tile index. A shortlist comes in order of distance in its own
/// space, which is nearly the order of cost, so a short one takes an insertion sort.
fn sort_by_cost(list: &mut [(f32, u32, Transform)]) {
    let by_cost = |a: &(f32, u32, Transform), b: &(f32, u32, Transform)| {
        a.0.total_cmp(&b.0).then(a.1.cmp(&b.1))
    };
    if list.len() > 64 {
        list.sort_unstable_by(by_cost);
        return;
    }
    for i in 1..list.len() {
        let item = list[i];
        let mut j = i;
        while j > 0 && by_cost(&item, &list[j - 1]).is_lt() {
            list[j] = list[j - 1];
            j -= 1;
        }
        list[j] = item;
    }
}

/// What tile `t` costs in the cell `desc` (squared CIEDE2000 of the means, plus the structure
/// terms), under the transform of `turns` whose sub-grid fits best; a transform leaves the mean,
/// so the colour term does not depend on it.
pub(crate) fn score(
    desc: &CellDesc,
    library: &Library,
    t: u32,
    opts: &PlanOptions,
    turns: &[(Transform, Vec<usize>)],
) -> (f32, Transform) {
    let de = ciede2000_ranking(desc.mean, library.means()[t as usize]);
    let (structure, turn) = structure(desc, library, t, opts, turns);
    (de * de + structure, turn)
}

/// [`score`] in the cells `descs` describes, for the floor's assignment: a tile's colour
/// differences to many cells a batch at a time.
pub(crate) struct CellScores<'a> {
    pub descs: &'a [CellDesc],
    pub library: &'a Library,
    pub opts: &'a PlanOptions,
    pub turns: &'a [(Transform, Vec<usize>)],
}

impl CellCost for CellScores<'_> {
    fn cost(&self, cell: u32, tile: u32) -> (f32, Transform) {
        score(
            &self.descs[cell as usize],
            self.library,
            tile,
            self.opts,
            self.turns,
        )
    }

    fn costs(&self, tile: u32, cells: &[u32], out: &mut Vec<f32>) {
        const BATCH: usize = 64;
        let m = self.library.means()[tile as usize];
        let (mut means, mut de) = ([[0f32; 3]; BATCH], [0f32; BATCH]);
        out.clear();
        for part in cells.chunks(BATCH) {
            for (mean, &c) in means.iter_mut().zip(part) {
                *mean = self.descs[c as usize].mean;
            }
            ciede2000_batch(m, &means[..part.len()], &mut de[..part.len()]);
            out.extend(part.iter().zip(de).map(|(&c, de)| {
                let desc = &self.descs[c as usize];
                de * de + structure(desc, self.library, tile, self.opts, self.turns).0
            }));
        }
    }
}

/// The structure terms of tile `t` in the cell `desc` under the transform of `turns` whose
/// sub-grid fits best, and that transform: each sub-cell's pattern around its own mean (so the
/// mean colour difference is not counted twice), each sub-cell's lightness, and in dark cells
/// the means' lightness (the dark term, [`DARK_WEIGHT`]).
fn structure(
    desc: &CellDesc,
    library: &Library,
    t: u32,
    opts: &PlanOptions,
    turns: &[(Transform, Vec<usize>)],
) -> (f32, Transform) {
    let k2 = desc.subs.len() as f32;
    let q = desc.mean;
    let m = library.means()[t as usize];
    let sub = library.sub_grid(t);
    let with_pattern = opts.structure_weight != 0.0;
    let dark = opts.lightness_weight * DARK_WEIGHT * DARK_KNEE / (q[0] * q[0] + DARK_KNEE)
        * (q[0] - m[0])
        * (q[0] - m[0]);
    let mut best = (f32::INFINITY, Transform::NONE);
    for (turn, perm) in turns {
        let (mut pattern, mut light) = (0f32, 0f32);
        for (&j, b) in perm.iter().zip(&desc.subs) {
            let a = sub[j];
            light += (a[0] - b[0]) * (a[0] - b[0]);
            // The pattern term only when it has a weight (by default it has none).
            if with_pattern {
                let d = [0, 1, 2].map(|c| (a[c] - m[c]) - (b[c] - q[c]));
                pattern += d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
            }
        }
        let structure = (opts.structure_weight * pattern + opts.lightness_weight * light) / k2;
        if structure < best.0 {
            best = (structure, *turn);
        }
    }
    best.0 += dark;
    best
}

/// The dark term of [`structure`]: in cells near black, the squared difference of the means' L*
/// weighs `DARK_WEIGHT * DARK_KNEE / (L*² + DARK_KNEE)` times the lightness weight (16 times at
/// black, half that at L* 2, a tenth at L* 6). Likeness from a distance (`ssim_view`'s SSIM)
/// weighs lightness against its level: in a black area, L* 1 instead of 0.4 costs it as much as
/// a step of tens of L* in mid-tones, and a night sky a few L* too light loses its depth.
/// CIEDE2000 weighs the other way near black (lightness steps little, colour casts fully), so the
/// term costs some colour there; `form` scales it with the lightness weight.
const DARK_WEIGHT: f32 = 16.0;
const DARK_KNEE: f32 = 4.0;

/// A cell's placed neighbours (3 x 3, in scan order): each one's L*, and the target's step in L*
/// from there to the cell.
struct Steps {
    at: [(f32, f32); 8],
    len: usize,
}

impl Steps {
    /// [`Assigner::gradient`] for a tile of L* `l`.
    fn gradient(&self, l: f32) -> f32 {
        let mut sum = 0.0;
        for &(mosaic, target_step) in &self.at[..self.len] {
            let d = (l - mosaic) - target_step;
            sum += d * d;
        }
        sum
    }
}

/// The cells of a square window of the grid but its centre, by index, row by row.
struct Window {
    cols: usize,
    here: usize,
    next: usize,
    row_end: usize,
    last_row_end: usize,
    /// From one row's end to the next row's start.
    skip: usize,
}

impl Iterator for Window {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        loop {
            if self.next == self.row_end {
                if self.row_end == self.last_row_end {
                    return None;
                }
                self.next += self.skip;
                self.row_end += self.cols;
            }
            let j = self.next;
            self.next += 1;
            if j != self.here {
                return Some(j);
            }
        }
    }
}

/// The sequential part of matching: which candidate a cell takes, given the tiles placed around
/// it (cells not placed yet hold `u32::MAX`), the repetition limits and the lightness steps.
struct Assigner<'a> {
    library: &'a Library,
    opts: &'a PlanOptions,
    cols: usize,
    /// Each placed cell's target L*, and the L* of the tile it holds.
    target_l: Vec<f32>,
    mosaic_l: Vec<f32>,
    /// The tiles of the other cells within the repeat radius of the cell [`Assigner::best`]
    /// is choosing for, gathered once for all its candidates.
    held: Vec<u32>,
    /// The tiles one cell past that radius: allowed, at a cost ([`RING_PENALTY`]), so that a
    /// small library does not settle into the same few tiles in turn, in stripes.
    ring: Vec<u32>,
}

/// How much dearer a tile is where it already stands one cell past the repeat radius.
const RING_PENALTY: f32 = 1.5;

/// Libraries of fewer tiles than this many times the cells a repeat window holds pay it (a
/// wedding's forty photos at radius 2 do; the 310 photos at radius 5 have choices enough).
const RING_LIBRARY_FACTOR: usize = 2;

impl Assigner<'_> {
    /// The candidate of least cost that the limits allow at `(x, y)`, with its transform;
    /// `current` is the tile the cell holds now (it does not count against itself), if any.
    fn best(
        &mut self,
        tiles: &[u32],
        uses: &[u32],
        x: usize,
        y: usize,
        ranked: &[(f32, u32, Transform)],
        current: Option<u32>,
    ) -> Option<(u32, Transform)> {
        let here = y * self.cols + x;
        let steps = self.steps(tiles, here);
        self.held.clear();
        self.ring.clear();
        if self.opts.repeat_radius > 0 {
            let r = self.opts.repeat_radius as usize;
            let window = self.window(tiles, here, r);
            self.held.extend(window.map(|j| tiles[j]));
            // Only a library few enough to settle into turns (under twice the tiles a
            // window holds) pays for the ring; a larger one has choices enough.
            if self.library.len() < RING_LIBRARY_FACTOR * (2 * r + 1).pow(2) {
                let wider = self.window(tiles, here, r + 1);
                let ring = wider.map(|j| tiles[j]).filter(|&t| t != u32::MAX);
                self.ring.extend(ring);
            }
        }
        let mut best: Option<(f32, u32, Transform)> = None;
        for &(score, t, turn) in ranked {
            // Candidates are sorted by score and the gradient term is never negative.
            if best.is_some_and(|(b, _, _)| score >= b) {
                break;
            }
            let free = Some(t) == current
                || (self.opts.max_uses.is_none_or(|cap| uses[t as usize] < cap)
                    && !self.held.contains(&t));
            if !free {
                continue;
            }
            let l = self.library.means()[t as usize][0];
            let mut cost = score + self.opts.gradient_weight * steps.gradient(l);
            if self.ring.contains(&t) {
                cost *= 1.0 + RING_PENALTY;
            }
            if best.is_none_or(|(b, bt, _)| cost < b || (cost == b && t < bt)) {
                best = Some((cost, t, turn));
            }
        }
        best.map(|(_, t, turn)| (t, turn))
    }

    /// Cell `i` of the batch starting at row `y0` takes a candidate better than its tile that
    /// only one neighbour of the same batch blocks (by holding it within the radius), if that
    /// neighbour's next best choice leaves the two of them with less cost; true if it did.
    fn eject(
        &mut self,
        plan: &mut Plan,
        lists: &[Ranked],
        (y0, i): (usize, usize),
        ranked: &[(f32, u32, Transform)],
    ) -> bool {
        let cols = self.cols;
        let (y, x) = (y0 + i / cols, i % cols);
        let here = y * cols + x;
        let (cur, cur_turn) = (plan.tiles[here], plan.transforms[here]);
        let score_of =
            |list: &[(f32, u32, Transform)], t: u32| list.iter().find(|c| c.1 == t).map(|c| c.0);
        let Some(cur_score) = score_of(ranked, cur) else {
            return false;
        };
        let g = self.opts.gradient_weight;
        let cur_cost = cur_score + g * self.gradient(&plan.tiles, here, cur);
        let r = self.opts.repeat_radius as usize;
        for &(score, t, turn) in ranked {
            if score >= cur_cost {
                break;
            }
            if t == cur {
                continue;
            }
            // The one cell within the radius that holds `t`, if only one does.
            let mut holding = self
                .window(&plan.tiles, here, r)
                .filter(|&j| plan.tiles[j] == t);
            let (Some(n), None) = (holding.next(), holding.next()) else {
                continue;
            };
            if n < y0 * cols {
                continue;
            }
            let list = &lists[n - y0 * cols];
            let Some(n_score) = score_of(list, t) else {
                continue;
            };
            let n_turn = plan.transforms[n];
            let before = cur_cost + n_score + g * self.gradient(&plan.tiles, n, t);
            let (ny, nx) = (n / cols, n % cols);
            self.place(plan, &mut [], here, (t, turn));
            plan.tiles[n] = u32::MAX;
            let alt = self.best(&plan.tiles, &[], nx, ny, list, None);
            plan.tiles[n] = t;
            if let Some((a, a_turn)) = alt
                && let Some(a_score) = score_of(list, a)
            {
                self.place(plan, &mut [], n, (a, a_turn));
                let after = score
                    + g * self.gradient(&plan.tiles, here, t)
                    + a_score
                    + g * self.gradient(&plan.tiles, n, a);
                if after < before - 1e-3 && !self.repeats(&plan.tiles, x, y, t) {
                    return true;
                }
                self.place(plan, &mut [], n, (t, n_turn));
            }
            self.place(plan, &mut [], here, (cur, cur_turn));
        }
        false
    }

    /// Sum over the placed neighbours of the squared difference between the mosaic's and the
    /// target's step in L* from there to `here`, were `here` to hold `t`.
    fn gradient(&self, tiles: &[u32], here: usize, t: u32) -> f32 {
        self.steps(tiles, here)
            .gradient(self.library.means()[t as usize][0])
    }

    /// The placed neighbours of `here` as [`Assigner::gradient`] needs them (none without a
    /// gradient weight).
    fn steps(&self, tiles: &[u32], here: usize) -> Steps {
        let mut steps = Steps {
            at: [(0.0, 0.0); 8],
            len: 0,
        };
        if self.opts.gradient_weight == 0.0 {
            return steps;
        }
        for j in self.window(tiles, here, 1) {
            if tiles[j] != u32::MAX {
                steps.at[steps.len] = (self.mosaic_l[j], self.target_l[here] - self.target_l[j]);
                steps.len += 1;
            }
        }
        steps
    }

    /// True if tile `t` sits in another placed cell within the repeat radius of `(x, y)`.
    fn repeats(&self, tiles: &[u32], x: usize, y: usize, t: u32) -> bool {
        let r = self.opts.repeat_radius as usize;
        r > 0
            && self
                .window(tiles, y * self.cols + x, r)
                .any(|j| tiles[j] == t)
    }

    /// The other cells within `r` of `here` (by index, row by row), on a grid of `tiles`.
    fn window(&self, tiles: &[u32], here: usize, r: usize) -> Window {
        let (cols, rows) = (self.cols, tiles.len() / self.cols);
        let (y, x) = (here / cols, here % cols);
        let (x0, x1) = (x.saturating_sub(r), (x + r + 1).min(cols));
        let (y0, y1) = (y.saturating_sub(r), (y + r + 1).min(rows));
        Window {
            cols,
            here,
            next: y0 * cols + x0,
            row_end: y0 * cols + x1,
            last_row_end: (y1 - 1) * cols + x1,
            skip: cols - (x1 - x0),
        }
    }

    fn place(
        &mut self,
        plan: &mut Plan,
        uses: &mut [u32],
        here: usize,
        (t, turn): (u32, Transform),
    ) {
        plan.tiles[here] = t;
        plan.transforms[here] = turn;
        self.mosaic_l[here] = self.library.means()[t as usize][0];
        if let Some(u) = uses.get_mut(t as usize) {
            *u += 1;
        }
    }

    fn unplace(&self, uses: &mut [u32], t: u32) {
        if let Some(u) = uses.get_mut(t as usize) {
            *u -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::library::ImportOptions;
    use crate::pyramid::encode_png_rgb;

    /// A library of `n` 12 x 12 tiles of blocks in pseudo-random colours, described on a
    /// `grid x grid` sub-grid.
    fn blocky_library(n: usize, grid: u8) -> Library {
        let mut state = crate::seeded(99);
        let mut next = move || (state() >> 33) as u8;
        let files = (0..n)
            .map(|i| {
                let blocks: Vec<[u8; 3]> = (0..9).map(|_| [next(), next(), next()]).collect();
                let mut px = Vec::with_capacity(12 * 12 * 3);
                for y in 0..12 {
                    for x in 0..12 {
                        px.extend_from_slice(&blocks[(y / 4) * 3 + x / 4]);
                    }
                }
                (format!("{i:03}.png"), encode_png_rgb(&px, 12, 12).unwrap())
            })
            .collect();
        let opts = ImportOptions {
            grid,
            ..ImportOptions::default()
        };
        Library::from_files(files, &opts).unwrap().0
    }

    /// The form-aware shortlist gives the `k` tiles a search of every tile gives, for library
    /// grids of 3 (where its 3 x 3 grid is the library's) and 4 (averaged onto 3 x 3), with
    /// tiles fixed or free to turn.
    #[test]
    fn the_form_shortlist_agrees_with_brute_force() {
        for grid in [3u8, 4] {
            let library = blocky_library(300, grid);
            let k = grid as usize;
            let weights = [0, 1, 2].map(|o| thirds(k, o));
            let opts = PlanOptions::default();
            let scale = (opts.lightness_weight / 9.0).sqrt();
            for any_turn in [false, true] {
                let turns: Vec<(Transform, Vec<usize>)> =
                    Transform::allowed(any_turn, any_turn, true)
                        .into_iter()
                        .map(|t| (t, t.permutation(k, k)))
                        .collect();
                let tree = Shortlist::new(&library, &opts, &turns);
                assert!(matches!(tree, Shortlist::Form { .. }));
                let point = |mean: &Lab, subs: &[Lab]| {
                    let light = light_grid(|i| subs[i][0], &weights);
                    form_point(mean, &light, scale, any_turn)
                };
                let mut got = Vec::new();
                for cell in 0..40u32 {
                    // A cell like a tile, seen a little darker; every other one flat (one
                    // colour, as in a per-pixel grid), which the four-dimensional tree answers.
                    let t = (cell * 7) % library.len() as u32;
                    let darker = |c: &Lab| [c[0] * 0.9, c[1], c[2]];
                    let mean = darker(&library.means()[t as usize]);
                    let subs = if cell % 2 == 1 {
                        vec![mean; k * k]
                    } else {
                        library.sub_grid(t).iter().map(darker).collect()
                    };
                    let desc = CellDesc { mean, subs };
                    tree.nearest(&desc, 10, &mut got);
                    let q = point(&desc.mean, &desc.subs);
                    let mut all: Vec<(f32, u32)> = (0..library.len() as u32)
                        .map(|t| {
                            let p = point(&library.means()[t as usize], library.sub_grid(t));
                            let d = (0..FORM_DIMS).map(|d| (p[d] - q[d]).powi(2)).sum();
                            (d, t)
                        })
                        .collect();
                    all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                    let ids = |v: &[(f32, u32)]| v.iter().map(|c| c.1).collect::<Vec<_>>();
                    assert_eq!(ids(&got), ids(&all[..10]), "grid {grid}, cell {cell}");
                }
            }
        }
    }

    /// A tile's costs in many cells at once are its scores one pair at a time, to the bit
    /// (CIEDE2000 in batches is symmetric in its two colours), with tiles fixed or turned.
    #[test]
    fn a_tiles_costs_in_a_batch_are_its_scores_one_by_one() {
        let library = blocky_library(120, 3);
        let mut state = crate::seeded(17);
        let mut lab = || {
            let mut v = || (state() >> 40) as f32 / (1u64 << 24) as f32;
            [v() * 100.0, v() * 160.0 - 80.0, v() * 160.0 - 80.0]
        };
        let descs: Vec<CellDesc> = (0..150)
            .map(|_| CellDesc {
                mean: lab(),
                subs: (0..9).map(|_| lab()).collect(),
            })
            .collect();
        let cells: Vec<u32> = (0..150).rev().step_by(2).collect();
        for any_turn in [false, true] {
            let opts = PlanOptions {
                flip: any_turn,
                rotate: any_turn,
                ..PlanOptions::default()
            };
            let turns: Vec<(Transform, Vec<usize>)> = Transform::allowed(any_turn, any_turn, true)
                .into_iter()
                .map(|t| (t, t.permutation(3, 3)))
                .collect();
            let scores = CellScores {
                descs: &descs,
                library: &library,
                opts: &opts,
                turns: &turns,
            };
            let mut batch = Vec::new();
            for t in [0, 41, 119] {
                scores.costs(t, &cells, &mut batch);
                let one_by_one: Vec<f32> = cells.iter().map(|&c| scores.cost(c, t).0).collect();
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(
                    bits(&batch),
                    bits(&one_by_one),
                    "tile {t}, turns {any_turn}"
                );
            }
        }
    }

    /// With tiles free to turn, a grid's point is the same under all eight symmetries of the
    /// square, and its distance from a cell's is never more than the lightness term under the
    /// tile's best transform.
    #[test]
    fn turned_patterns_are_invariant_and_a_lower_bound() {
        let mut state = crate::seeded(5);
        let mut grid = || [0; 9].map(|_| (state() >> 40) as f32 / (1u64 << 24) as f32 * 100.0);
        let mean = [50.0, 10.0, -5.0];
        let turns = Transform::allowed(true, true, true);
        for _ in 0..200 {
            let (a, b) = (grid(), grid());
            let q = form_point(&mean, &a, 0.4, true);
            let mut best = f32::INFINITY;
            for t in &turns {
                let perm = t.permutation(3, 3);
                let turned: [f32; 9] = std::array::from_fn(|i| b[perm[i]]);
                let p = form_point(&mean, &turned, 0.4, true);
                let p0 = form_point(&mean, &b, 0.4, true);
                for d in 0..FORM_DIMS {
                    assert!((p[d] - p0[d]).abs() < 1e-3, "{t:?}: {p:?} against {p0:?}");
                }
                let full: f32 = (0..9).map(|i| (0.4 * (a[i] - turned[i])).powi(2)).sum();
                best = best.min(full);
            }
            let p = form_point(&mean, &b, 0.4, true);
            let d: f32 = (0..FORM_DIMS).map(|d| (q[d] - p[d]).powi(2)).sum();
            assert!(d <= best * (1.0 + 1e-4) + 1e-3, "{d} against {best}");
        }
    }

    /// Each third of a cell takes a third of its sub-cells' area, whatever the grid.
    #[test]
    fn thirds_share_out_the_sub_grid() {
        for k in 1..=9 {
            let w = [0, 1, 2].map(|o| thirds(k, o));
            for (o, third) in w.iter().enumerate() {
                let sum: f32 = third.iter().sum();
                assert!((sum - 1.0).abs() < 1e-5, "k {k}, third {o}: {sum}");
            }
            for j in 0..k {
                let area: f32 = w.iter().map(|third| third[j]).sum();
                assert!((area - 3.0 / k as f32).abs() < 1e-5, "k {k}, sub-cell {j}");
            }
        }
        assert_eq!(thirds(3, 1), vec![0.0, 1.0, 0.0]);
    }

    /// In a black cell, form weighs the tile's darkness over its colour cast (the dark term): a
    /// near-black blue tile beats a neutral dark grey that colour alone prefers, and that the
    /// sub-cells' lightness alone would prefer too.
    #[test]
    fn black_cells_take_the_darker_tile() {
        let flat = |rgb: [u8; 3]| encode_png_rgb(&rgb.repeat(12 * 12), 12, 12).unwrap();
        let files = vec![
            ("0-grey.png".to_string(), flat([10, 10, 10])),
            ("1-blue.png".to_string(), flat([0, 0, 12])),
        ];
        let library = Library::from_files(files, &ImportOptions::default())
            .unwrap()
            .0;
        let (grey, blue) = (0u32, 1u32);
        assert!(library.means()[blue as usize][0] < library.means()[grey as usize][0]);
        let black = CellDesc {
            mean: [0.0; 3],
            subs: vec![[0.0; 3]; library.grid() * library.grid()],
        };
        let turns = vec![(Transform::NONE, (0..black.subs.len()).collect())];
        let cost = |opts: &PlanOptions, t| score(&black, &library, t, opts, &turns).0;
        let colour = PlanOptions::default().with_form(0);
        assert!(cost(&colour, grey) < cost(&colour, blue));
        let form = PlanOptions::default();
        assert!(cost(&form, blue) < cost(&form, grey));
    }

    /// No weight on form leaves the shortlist to colour alone.
    #[test]
    fn without_form_the_shortlist_is_by_colour() {
        let library = blocky_library(20, 3);
        let opts = PlanOptions::default().with_form(0);
        let turns = vec![(Transform::NONE, (0..9).collect())];
        assert!(matches!(
            Shortlist::new(&library, &opts, &turns),
            Shortlist::Colour(_)
        ));
    }

    fn plan(tile_size: TileSize) -> Plan {
        Plan {
            cols: 2,
            total_rows: 3,
            first_row: 1,
            tile_size,
            blend: 20,
            library_version: 0x1234,
            background: None,
            tiles: vec![0, 1, 2, 3],
            colours: vec![[1, 2, 3]; 4],
            transforms: [0, 6, 2, 4]
                .map(|b| Transform::from_u8(b).unwrap())
                .to_vec(),
        }
    }

    /// `body` with its digest, as [`Plan::to_bytes`] ends it.
    fn sealed(mut body: Vec<u8>) -> Vec<u8> {
        let d = Fnv::digest(&body);
        body.extend_from_slice(&d.to_le_bytes());
        body
    }

    /// A plan's bytes in the layout of format `version` (1 to 3): no background; in versions
    /// 1 and 2 no tile height (the plan must be square), and in version 1 no transforms.
    fn legacy(p: &Plan, version: u32) -> Vec<u8> {
        let bytes = p.to_bytes();
        let mut body = bytes[..bytes.len() - 8].to_vec();
        body[8..12].copy_from_slice(&version.to_le_bytes());
        body.drain(45..49);
        if version == 3 {
            return sealed(body);
        }
        body.drain(32..36);
        if version == 1 {
            body.truncate(body.len() - p.tiles.len());
        }
        sealed(body)
    }

    #[test]
    fn transforms_round_trip_and_bad_ones_are_refused() {
        let p = plan(TileSize::square(8));
        let bytes = p.to_bytes();
        assert_eq!(Plan::from_bytes(&bytes).unwrap(), p);
        let mut body = bytes[..bytes.len() - 8].to_vec();
        let last = body.len() - 1;
        body[last] = 8;
        let err = Plan::from_bytes(&sealed(body)).unwrap_err();
        assert!(err.to_string().contains("transform"), "{err}");
    }

    #[test]
    fn oblong_tiles_round_trip_and_refuse_quarter_turns() {
        let p = plan(TileSize::new(24, 18).unwrap());
        let bytes = p.to_bytes();
        let back = Plan::from_bytes(&bytes).unwrap();
        assert_eq!(back, p);
        assert_eq!((back.width(), back.total_height()), (48, 54));
        assert_eq!(back.rows(1..3).unwrap().band_height(), 36);
        // A quarter turn (rot90 = 1) in a cell of an oblong plan.
        let mut body = bytes[..bytes.len() - 8].to_vec();
        let last = body.len() - 1;
        body[last] = 1;
        let err = Plan::from_bytes(&sealed(body)).unwrap_err();
        assert!(err.to_string().contains("rot90"), "{err}");
        // A tile height out of range.
        let mut body = bytes[..bytes.len() - 8].to_vec();
        body[32..36].copy_from_slice(&300u32.to_le_bytes());
        assert!(Plan::from_bytes(&sealed(body)).is_err());
    }

    #[test]
    fn the_background_round_trips_and_older_plans_have_none() {
        let mut p = plan(TileSize::square(8));
        p.background = Some([0, 64, 255]);
        let bytes = p.to_bytes();
        assert_eq!(Plan::from_bytes(&bytes).unwrap(), p);
        assert_eq!(
            Plan::from_bytes(&bytes).unwrap().background(),
            Some([0, 64, 255])
        );
        assert_eq!(p.rows(2..3).unwrap().background(), Some([0, 64, 255]));
        let v3 = Plan::from_bytes(&legacy(&p, 3)).unwrap();
        assert_eq!(v3.background(), None);
        assert_eq!(v3.tiles(), p.tiles());
        // A flag that is neither 0 nor 1.
        let mut body = bytes[..bytes.len() - 8].to_vec();
        body[45] = 2;
        assert!(Plan::from_bytes(&sealed(body)).is_err());
    }

    #[test]
    fn version_1_and_2_plans_load_square() {
        let p = plan(TileSize::square(8));
        let v2 = Plan::from_bytes(&legacy(&p, 2)).unwrap();
        assert_eq!(v2, p);
        let v1 = Plan::from_bytes(&legacy(&p, 1)).unwrap();
        assert_eq!(v1.tiles(), p.tiles());
        assert_eq!(v1.tile_size(), TileSize::square(8));
        assert_eq!(v1.transforms(), [Transform::NONE; 4]);
        // A version 2 plan cut short of its transforms does not pass for one.
        let v2 = legacy(&p, 2);
        let short = sealed(v2[..v2.len() - 8 - 4].to_vec());
        assert!(Plan::from_bytes(&short).is_err());
    }
}
