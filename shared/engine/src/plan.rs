//! Sizing and matching: the plan (cell -> tile) for a whole target, made once so that the
//! repetition constraint holds everywhere, then cut into rows that render on their own.

mod assign;
mod format;
mod global;
mod keep;
mod shortlist;
mod sizing;

use assign::*;
pub use format::PLAN_FORMAT_VERSION;
use shortlist::*;
pub(crate) use shortlist::{Shortlist, rank};
use sizing::check_plannable;
pub use sizing::{
    DEFAULT_MAX_OUTPUT_PIXELS, Grid, MAX_FLOOR_CLOSED_CELLS, PlanOptions, Sizing, floor_unworkable,
    tiles_needed,
};

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
}

/// Candidate tiles of a cell with their cost and the transform they take, best first.
pub(crate) use crate::capped::Ranked;

/// Rows of cells described (and their candidates ranked) as one batch, while the batch before
/// is assigned.
const DESCRIBE_ROWS: usize = 16;

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
