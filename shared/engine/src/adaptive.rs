//! Adaptive tile sizes (`--adaptive MIN..MAX`): a quadtree over blocks of the largest tile puts
//! large tiles where the photo is flat and small ones where it is detailed, with no more tiles
//! than the uniform grid of the same options would have.
//!
//! The output is cut into blocks of `MAX` px; each block is a leaf or splits into four, down to
//! `MIN` px. Splits go, one at a time, to the leaf whose target region has the most lightness
//! detail (the sum of squared deviations of L* over its samples) until the tile budget is spent.
//! Leaves are matched in order, a row of blocks after another, with the uniform matcher's
//! ranking (mean colour, sub-grid lightness, transforms) and its repetition limits: no identical
//! tile within `repeat_radius` times a leaf's own side around it, and the use cap. A row of
//! blocks renders from its leaves alone, so any cut into rows of blocks renders the same bytes.
//!
//! The pipeline ships such cuts: [`AdaptivePlan::rows`] keeps some rows of blocks, and
//! [`AdaptivePlan::to_bytes`] saves a plan (whole or cut) as a blob of its own format, told from
//! a uniform plan's by its magic ([`AdaptivePlan::is_blob`]), sealed with a digest like plans.

use std::borrow::Borrow;
use std::collections::BinaryHeap;
use std::ops::Range;

use rayon::prelude::*;

use crate::color::{Lab, srgb_to_lab32};
use crate::hash::Fnv;
use crate::library::Library;
use crate::plan::{CellDesc, PlanOptions, Shortlist, Sizing, empty_library, no_tile_fits, rank};
use crate::render::{TileCache, blend_shift, copy_tile};
use crate::resample::AreaResampler;
use crate::shape::TILE_SIZES;
use crate::shape::TileSize;
use crate::transform::Transform;
use crate::{error::Error, output::BandSink};

mod format;
#[cfg(test)]
use format::{HEADER_BYTES, LEAF_BYTES};

/// Version of the adaptive plan blob layout.
pub const ADAPTIVE_PLAN_FORMAT_VERSION: u32 = 1;
/// Tile sizes from `min` to `max` px, each twice the one before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdaptiveSizes {
    pub min: u32,
    pub max: u32,
}

impl std::str::FromStr for AdaptiveSizes {
    type Err = String;

    /// `MIN..MAX`, as `8..32`.
    fn from_str(s: &str) -> Result<Self, String> {
        let (min, max) = s
            .split_once("..")
            .ok_or_else(|| format!("{s:?} is not MIN..MAX (as 8..32)"))?;
        let side = |v: &str| {
            v.trim()
                .parse::<u32>()
                .map_err(|_| format!("{v:?} is not a tile size in pixels"))
        };
        AdaptiveSizes::new(side(min)?, side(max)?).map_err(|e| e.to_string())
    }
}

impl std::fmt::Display for AdaptiveSizes {
    /// `MIN..MAX`, as parsed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}..{}", self.min, self.max)
    }
}

impl AdaptiveSizes {
    /// Sizes from `min` to `max` px: each within the tile sizes, and `max` is `min` doubled one
    /// or more times.
    pub fn new(min: u32, max: u32) -> Result<AdaptiveSizes, Error> {
        let sizes = AdaptiveSizes { min, max };
        sizes.check()?;
        Ok(sizes)
    }

    fn check(self) -> Result<(), Error> {
        let bad = |m: String| Err(Error::InvalidOption(m));
        if !TILE_SIZES.contains(&self.min) || !TILE_SIZES.contains(&self.max) {
            return bad(format!(
                "adaptive sizes {}..{}: each from {} to {} px",
                self.min,
                self.max,
                TILE_SIZES.start(),
                TILE_SIZES.end()
            ));
        }
        if self.max <= self.min
            || !self.max.is_multiple_of(self.min)
            || !(self.max / self.min).is_power_of_two()
        {
            return bad(format!(
                "adaptive sizes {}..{}: the largest must be the smallest doubled one or more times \
                 (as 8..32)",
                self.min, self.max
            ));
        }
        Ok(())
    }

    /// Quadtree levels below a block.
    fn depth(self) -> u32 {
        (self.max / self.min).trailing_zeros()
    }

    /// Whether `size` is one of the sizes: `min` doubled zero or more times, up to `max`.
    fn holds(self, size: u32) -> bool {
        (self.min..=self.max).contains(&size)
            && size.is_multiple_of(self.min)
            && (size / self.min).is_power_of_two()
    }
}

/// The size of an adaptive mosaic, known from the target's size and the options alone (before
/// any matching): the uniform grid's size rounded up to whole blocks of the largest square.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdaptiveSizing {
    pub sizes: AdaptiveSizes,
    /// Output size in pixels.
    pub width: u32,
    pub height: u32,
    /// Blocks of the largest square across and down.
    pub block_cols: u32,
    pub block_rows: u32,
    /// Most tiles the mosaic may hold: the uniform grid's.
    pub budget: u64,
}

impl AdaptiveSizing {
    /// Works out the output size of `sizes` over a `target_w` x `target_h` target under
    /// `opts`, checking the sizes, that the tiles are square, the output limit and that the
    /// blocks alone fit the tile budget.
    pub fn new(
        target_w: u32,
        target_h: u32,
        opts: &PlanOptions,
        sizes: AdaptiveSizes,
    ) -> Result<AdaptiveSizing, Error> {
        sizes.check()?;
        if !opts.tile_size.is_square() {
            return Err(Error::InvalidOption(format!(
                "adaptive tiles are square: the tile size is {}",
                opts.tile_size
            )));
        }
        let uniform = Sizing::new(target_w, target_h, opts)?;
        let budget = u64::from(uniform.cols) * u64::from(uniform.rows);
        let (bw, bh) = (
            uniform.width.div_ceil(sizes.max),
            uniform.height.div_ceil(sizes.max),
        );
        let (width, height) = (
            u64::from(bw) * u64::from(sizes.max),
            u64::from(bh) * u64::from(sizes.max),
        );
        if width * height > opts.max_output_pixels
            || width > u64::from(u32::MAX)
            || height > u64::from(u32::MAX)
        {
            return Err(Error::OutputTooLarge {
                width,
                height,
                limit: opts.max_output_pixels,
            });
        }
        let blocks = u64::from(bw) * u64::from(bh);
        if blocks > budget {
            return Err(Error::AdaptiveBudget {
                blocks,
                max: sizes.max,
                budget,
            });
        }
        Ok(AdaptiveSizing {
            sizes,
            width: width as u32,
            height: height as u32,
            block_cols: bw,
            block_rows: bh,
            budget,
        })
    }

    /// The grid of the smallest squares: columns and rows.
    pub fn grid(&self) -> (u32, u32) {
        (self.width / self.sizes.min, self.height / self.sizes.min)
    }
}

/// One tile of an adaptive mosaic: its square in output pixels, the tile and how it is turned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leaf {
    pub x: u32,
    pub y: u32,
    pub size: u32,
    pub tile: u32,
    pub transform: Transform,
    /// The target's mean colour over the square (for `blend`).
    pub colour: [u8; 3],
}

/// Square -> tile for an adaptive mosaic (the whole of it, or some rows of blocks cut from it
/// with [`AdaptivePlan::rows`]), leaves grouped by row of blocks, with each leaf's target colour,
/// so a row of blocks renders from its leaves and the library alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdaptivePlan {
    sizes: AdaptiveSizes,
    /// The whole mosaic's size in pixels.
    width: u32,
    height: u32,
    blend: u8,
    library_version: u64,
    /// The first row of blocks held.
    first_row: u32,
    /// Leaves of the held rows of blocks, a row after another, each row in reading order of its
    /// squares' corners.
    leaves: Vec<Leaf>,
    /// Where each held row of blocks starts in `leaves` (and one past the last).
    row_starts: Vec<usize>,
}

/// Sums over the target's samples (one per sub-grid cell of the smallest tile), for any square.
struct Samples {
    /// Samples across.
    w: usize,
    /// sRGB per sample.
    rgb: Vec<[f32; 3]>,
    /// Integral images of L* and L*^2 ((w + 1) x (h + 1)).
    sum_l: Vec<f64>,
    sum_l2: Vec<f64>,
}

impl Samples {
    fn new(target: &image::RgbImage, w: usize, h: usize) -> Samples {
        let resampler = AreaResampler::new(target.width() as usize, target.height() as usize, w, h);
        let raw = resampler.rows(target.as_raw(), 0..h);
        let rgb: Vec<[f32; 3]> = raw.chunks_exact(3).map(|p| [p[0], p[1], p[2]]).collect();
        let lightness: Vec<f64> = rgb
            .par_iter()
            .map(|p| f64::from(srgb_to_lab32([p[0] as f64, p[1] as f64, p[2] as f64])[0]))
            .collect();
        let mut sum_l = vec![0f64; (w + 1) * (h + 1)];
        let mut sum_l2 = vec![0f64; (w + 1) * (h + 1)];
        for y in 0..h {
            let (mut row, mut row2) = (0f64, 0f64);
            for x in 0..w {
                let l = lightness[y * w + x];
                row += l;
                row2 += l * l;
                let at = (y + 1) * (w + 1) + x + 1;
                sum_l[at] = sum_l[at - w - 1] + row;
                sum_l2[at] = sum_l2[at - w - 1] + row2;
            }
        }
        Samples {
            w,
            rgb,
            sum_l,
            sum_l2,
        }
    }

    /// Sum of squared deviations of L* from its mean over samples `x0..x1` x `y0..y1`.
    fn detail(&self, (x0, y0, x1, y1): (usize, usize, usize, usize)) -> f64 {
        let w = self.w + 1;
        let rect = |s: &[f64]| s[y1 * w + x1] - s[y0 * w + x1] - s[y1 * w + x0] + s[y0 * w + x0];
        let n = ((x1 - x0) * (y1 - y0)) as f64;
        let (l, l2) = (rect(&self.sum_l), rect(&self.sum_l2));
        (l2 - l * l / n).max(0.0)
    }

    /// Mean sRGB over samples `x0..x1` x `y0..y1`.
    fn mean(&self, (x0, y0, x1, y1): (usize, usize, usize, usize)) -> [f64; 3] {
        let mut sum = [0f64; 3];
        for y in y0..y1 {
            for p in &self.rgb[y * self.w + x0..y * self.w + x1] {
                for c in 0..3 {
                    sum[c] += f64::from(p[c]);
                }
            }
        }
        let n = ((x1 - x0) * (y1 - y0)) as f64;
        sum.map(|s| s / n)
    }
}

/// A square of the quadtree, in units of the smallest tile, with its detail (for the heap).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Node {
    detail: f64,
    x: u32,
    y: u32,
    units: u32,
}

impl Eq for Node {}

impl Ord for Node {
    /// Most detail first; ties to the square nearer the top left, so the tree is deterministic.
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.detail
            .total_cmp(&other.detail)
            .then(other.y.cmp(&self.y))
            .then(other.x.cmp(&self.x))
    }
}

impl PartialOrd for Node {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl AdaptivePlan {
    /// Plans `target` in squares of `sizes`, with no more tiles than `opts`' uniform grid has.
    /// The output covers that grid's size, rounded up to whole blocks of the largest square.
    pub fn make(
        target: &image::RgbImage,
        library: &Library,
        opts: &PlanOptions,
        sizes: AdaptiveSizes,
    ) -> Result<AdaptivePlan, Error> {
        sizes.check()?;
        if !library.shape().is_square() || !opts.tile_size.is_square() {
            return Err(Error::InvalidOption(format!(
                "adaptive tiles are square: the library's tiles are {} and the tile size {}",
                library.shape(),
                opts.tile_size
            )));
        }
        let sizing = AdaptiveSizing::new(target.width(), target.height(), opts, sizes)?;
        let n = library.len();
        if n == 0 {
            return Err(empty_library());
        }
        let k = library.grid();
        let (bw, bh) = (sizing.block_cols, sizing.block_rows);
        let per_block = (sizes.max / sizes.min) as usize;
        let samples = Samples::new(
            target,
            bw as usize * per_block * k,
            bh as usize * per_block * k,
        );
        let leaves = split(&samples, sizes, (bw, bh), sizing.budget as usize, k);
        Self::matched(
            library,
            opts,
            sizes,
            (sizing.width, sizing.height),
            leaves,
            &samples,
            k,
        )
    }

    /// Matches the squares in order (rows of blocks, reading order within) under the limits.
    fn matched(
        library: &Library,
        opts: &PlanOptions,
        sizes: AdaptiveSizes,
        (width, height): (u32, u32),
        mut squares: Vec<Node>,
        samples: &Samples,
        k: usize,
    ) -> Result<AdaptivePlan, Error> {
        let per_block = sizes.max / sizes.min;
        squares.sort_by_key(|s| (s.y / per_block, s.y, s.x));
        let n = library.len();
        let turns: Vec<(Transform, Vec<usize>)> = Transform::allowed(opts.flip, opts.rotate, true)
            .into_iter()
            .map(|t| (t, t.permutation(k, k)))
            .collect();
        let tree = Shortlist::new(library, opts, &turns);
        let ncand = opts.candidates.clamp(1, n);
        // Descriptors and rankings in parallel; the choices, which depend on the squares placed
        // before, in order.
        let described: Vec<(CellDesc, [u8; 3], crate::plan::Ranked)> = squares
            .par_iter()
            .map_init(Vec::new, |scratch, s| {
                let (desc, colour) = describe(samples, s, k);
                let ranked = rank(
                    &desc,
                    (library, &tree),
                    ncand,
                    opts,
                    &turns,
                    scratch,
                    &|_| true,
                );
                (desc, colour, ranked)
            })
            .collect();
        let (gw, gh) = ((width / sizes.min) as usize, (height / sizes.min) as usize);
        let mut owner = vec![u32::MAX; gw * gh];
        let mut uses = vec![0u32; if opts.max_uses.is_some() { n } else { 0 }];
        let mut leaves: Vec<Leaf> = Vec::with_capacity(squares.len());
        for (s, (desc, colour, mut ranked)) in squares.iter().zip(described) {
            let mut width_now = ncand;
            let allowed = |t: u32, leaves: &[Leaf], uses: &[u32]| {
                opts.max_uses.is_none_or(|cap| uses[t as usize] < cap)
                    && no_repeat_near((&owner, gw, gh), leaves, s, opts.repeat_radius * s.units, t)
            };
            let mut pick = ranked
                .iter()
                .find(|c| allowed(c.1, &leaves, &uses))
                .copied();
            while pick.is_none() && width_now < n {
                width_now = (width_now * 4).min(n);
                let free = |t: u32| opts.max_uses.is_none_or(|cap| uses[t as usize] < cap);
                ranked = rank(
                    &desc,
                    (library, &tree),
                    width_now,
                    opts,
                    &turns,
                    &mut Vec::new(),
                    &free,
                );
                pick = ranked
                    .iter()
                    .find(|c| allowed(c.1, &leaves, &uses))
                    .copied();
            }
            let Some((_, tile, transform)) = pick else {
                return Err(no_tile_fits(n));
            };
            if let Some(u) = uses.get_mut(tile as usize) {
                *u += 1;
            }
            let index = leaves.len() as u32;
            for y in s.y..s.y + s.units {
                let row = y as usize * gw;
                owner[row + s.x as usize..row + (s.x + s.units) as usize].fill(index);
            }
            leaves.push(Leaf {
                x: s.x * sizes.min,
                y: s.y * sizes.min,
                size: s.units * sizes.min,
                tile,
                transform,
                colour,
            });
        }
        let row_starts = index_rows(&leaves, sizes.max, 0..height / sizes.max)?;
        Ok(AdaptivePlan {
            sizes,
            width,
            height,
            blend: opts.blend,
            library_version: library.version(),
            first_row: 0,
            leaves,
            row_starts,
        })
    }

    /// The whole mosaic's width in pixels.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// The whole mosaic's height in pixels.
    pub fn height(&self) -> u32 {
        self.height
    }

    pub fn sizes(&self) -> AdaptiveSizes {
        self.sizes
    }

    pub fn blend(&self) -> u8 {
        self.blend
    }

    pub fn library_version(&self) -> u64 {
        self.library_version
    }

    /// The leaves of the held rows of blocks.
    pub fn leaves(&self) -> &[Leaf] {
        &self.leaves
    }

    /// Rows of blocks (each `max` px tall) in the whole mosaic.
    pub fn block_rows(&self) -> u32 {
        self.height / self.sizes.max
    }

    /// The rows of blocks this plan holds.
    pub fn block_row_range(&self) -> Range<u32> {
        self.first_row..self.first_row + (self.row_starts.len() - 1) as u32
    }

    /// Height in pixels of the rows of blocks this plan holds.
    pub fn band_height(&self) -> u32 {
        self.block_row_range().len() as u32 * self.sizes.max
    }

    /// The rows of blocks `range` (absolute, within [`AdaptivePlan::block_row_range`]) as a
    /// plan of their own.
    pub fn rows(&self, range: Range<u32>) -> Result<AdaptivePlan, Error> {
        let held = self.block_row_range();
        if range.start > range.end || range.start < held.start || range.end > held.end {
            return Err(Error::InvalidOption(format!(
                "rows of blocks {range:?} are outside the plan's rows {held:?}"
            )));
        }
        let (a, b) = (
            (range.start - held.start) as usize,
            (range.end - held.start) as usize,
        );
        let first = self.row_starts[a];
        Ok(AdaptivePlan {
            first_row: range.start,
            leaves: self.leaves[first..self.row_starts[b]].to_vec(),
            row_starts: self.row_starts[a..=b].iter().map(|s| s - first).collect(),
            ..*self
        })
    }

    /// The tile sizes the leaves use, smallest first.
    pub fn tile_sizes(&self) -> Vec<u32> {
        let mut sizes: Vec<u32> = self.leaves.iter().map(|l| l.size).collect();
        sizes.sort_unstable();
        sizes.dedup();
        sizes
    }

    /// Pixels (RGB8) of rows of blocks `rows` (within [`AdaptivePlan::block_row_range`]), from
    /// the leaves in them alone, a row of blocks per rayon task. `caches` holds a tile cache for
    /// each of [`AdaptivePlan::tile_sizes`] (held, or shared as `Arc`s).
    pub fn render_rows<'t, C: Borrow<TileCache<'t>> + Sync>(
        &self,
        caches: &[C],
        rows: Range<u32>,
    ) -> Result<Vec<u8>, Error> {
        let mut out = Vec::new();
        self.render_into(caches, rows, &mut out, true)?;
        Ok(out)
    }

    /// [`AdaptivePlan::render_rows`] on the calling thread alone, into `out` (resized to the
    /// band): for callers that already run one band per core (the image processors).
    pub fn render_rows_serial<'t, C: Borrow<TileCache<'t>> + Sync>(
        &self,
        caches: &[C],
        rows: Range<u32>,
        out: &mut Vec<u8>,
    ) -> Result<(), Error> {
        self.render_into(caches, rows, out, false)
    }

    /// Checks that `caches` can render the leaves of `rows`, and picks each size's cache.
    fn caches_for<'c, 't, C: Borrow<TileCache<'t>>>(
        &self,
        caches: &'c [C],
        rows: &Range<u32>,
    ) -> Result<Vec<Option<&'c TileCache<'t>>>, Error> {
        let held = self.block_row_range();
        if rows.start > rows.end || rows.start < held.start || rows.end > held.end {
            return Err(Error::InvalidOption(format!(
                "rows of blocks {rows:?} are outside the plan's rows {held:?}"
            )));
        }
        // Indexed by the size's doubling of `min`.
        let mut by_size = vec![None; self.sizes.depth() as usize + 1];
        for cache in caches {
            let cache: &TileCache = cache.borrow();
            if cache.library().version() != self.library_version {
                return Err(Error::PlanMismatch(format!(
                    "the plan was made with library {:016x}, not {}",
                    self.library_version,
                    cache.library().version_hex()
                )));
            }
            cache.check_shape()?;
            let size = cache.tile_size();
            if size.is_square() && self.sizes.holds(size.width) {
                by_size[(size.width / self.sizes.min).trailing_zeros() as usize] = Some(cache);
            }
        }
        let a = self.row_starts[(rows.start - held.start) as usize];
        let b = self.row_starts[(rows.end - held.start) as usize];
        for leaf in &self.leaves[a..b] {
            let Some(cache) = by_size[(leaf.size / self.sizes.min).trailing_zeros() as usize]
            else {
                return Err(Error::InvalidOption(format!(
                    "no tiles of {} px to render",
                    leaf.size
                )));
            };
            if leaf.tile as usize >= cache.library().len() {
                return Err(Error::PlanMismatch(format!(
                    "tile {} is not in the library",
                    leaf.tile
                )));
            }
        }
        Ok(by_size)
    }

    fn render_into<'t, C: Borrow<TileCache<'t>> + Sync>(
        &self,
        caches: &[C],
        rows: Range<u32>,
        out: &mut Vec<u8>,
        parallel: bool,
    ) -> Result<(), Error> {
        let by_size = self.caches_for(caches, &rows)?;
        let held = self.block_row_range();
        let max = self.sizes.max as usize;
        let row_bytes = self.width as usize * 3;
        let band = row_bytes * max;
        out.resize(band * rows.len(), 0);
        let blend = i32::from(self.blend);
        let block_row = |(pixels, row): (&mut [u8], u32)| {
            let at = (row - held.start) as usize;
            for leaf in &self.leaves[self.row_starts[at]..self.row_starts[at + 1]] {
                let cache = by_size[(leaf.size / self.sizes.min).trailing_zeros() as usize]
                    .expect("checked: a cache for every leaf's size");
                let (tile, mean) = cache.turned(leaf.tile, leaf.transform);
                let shift = (blend != 0).then(|| blend_shift(mean, leaf.colour, blend));
                let s = leaf.size as usize;
                let top = leaf.y as usize - row as usize * max;
                copy_tile(
                    pixels,
                    row_bytes,
                    (leaf.x as usize, top),
                    tile,
                    (s, s),
                    shift,
                );
            }
        };
        if parallel {
            out.par_chunks_mut(band).zip(rows).for_each(block_row);
        } else {
            out.chunks_mut(band).zip(rows).for_each(block_row);
        }
        Ok(())
    }

    /// Renders the rows of blocks the plan holds into `sink`, a few at a time.
    pub fn render_to_sink(&self, library: &Library, sink: &mut dyn BandSink) -> Result<(), Error> {
        let caches: Vec<TileCache> = self
            .tile_sizes()
            .into_iter()
            .map(|size| TileCache::new(library, TileSize::square(size)))
            .collect();
        let rows = self.block_row_range();
        let step = ((8 << 20) / (self.width as usize * 3 * self.sizes.max as usize)).max(1) as u32;
        for first in rows.clone().step_by(step as usize) {
            sink.write_owned(self.render_rows(&caches, first..(first + step).min(rows.end))?)?;
        }
        Ok(())
    }
}

/// Where each row of blocks of `rows` starts in `leaves` (and one past the last), which must be
/// in the order of their rows of blocks (`max` px tall) and within `rows`.
fn index_rows(leaves: &[Leaf], max: u32, rows: Range<u32>) -> Result<Vec<usize>, Error> {
    let mut starts = Vec::with_capacity(rows.len() + 1);
    let mut at = 0;
    for row in rows.clone() {
        starts.push(at);
        while at < leaves.len() && leaves[at].y / max == row {
            at += 1;
        }
    }
    starts.push(at);
    if at != leaves.len() {
        return Err(Error::BadPlan(format!(
            "leaves out of the order of the rows of blocks {rows:?}"
        )));
    }
    Ok(starts)
}

/// The quadtree: blocks of `sizes.max`, split where the detail is greatest while the leaves
/// stay within `budget`.
fn split(
    samples: &Samples,
    sizes: AdaptiveSizes,
    (bw, bh): (u32, u32),
    budget: usize,
    k: usize,
) -> Vec<Node> {
    let per_block = 1u32 << sizes.depth();
    let node = |x: u32, y: u32, units: u32| {
        let at = |v: u32| v as usize * k;
        Node {
            detail: samples.detail((at(x), at(y), at(x + units), at(y + units))),
            x,
            y,
            units,
        }
    };
    let mut leaves = Vec::new();
    let mut heap = BinaryHeap::new();
    for by in 0..bh {
        for bx in 0..bw {
            heap.push(node(bx * per_block, by * per_block, per_block));
        }
    }
    let mut count = heap.len();
    while let Some(top) = heap.pop() {
        if top.units == 1 || count + 3 > budget || top.detail <= 0.0 {
            leaves.push(top);
            continue;
        }
        let half = top.units / 2;
        for (dx, dy) in [(0, 0), (half, 0), (0, half), (half, half)] {
            heap.push(node(top.x + dx, top.y + dy, half));
        }
        count += 3;
    }
    leaves
}

/// A square's descriptors (mean and `k x k` sub-grid in Lab, from sRGB means) and its colour.
fn describe(samples: &Samples, s: &Node, k: usize) -> (CellDesc, [u8; 3]) {
    let span = s.units as usize; // samples per sub-cell along each side
    let (x0, y0) = (s.x as usize * k, s.y as usize * k);
    let mut subs = Vec::with_capacity(k * k);
    let mut sum = [0f64; 3];
    for sy in 0..k {
        for sx in 0..k {
            let rect = (
                x0 + sx * span,
                y0 + sy * span,
                x0 + (sx + 1) * span,
                y0 + (sy + 1) * span,
            );
            let rgb = samples.mean(rect);
            for c in 0..3 {
                sum[c] += rgb[c];
            }
            subs.push(srgb_to_lab32(rgb));
        }
    }
    let kk = (k * k) as f64;
    let rgb = sum.map(|v| v / kk);
    let mean: Lab = srgb_to_lab32(rgb);
    (
        CellDesc { mean, subs },
        rgb.map(|v| v.round().clamp(0.0, 255.0) as u8),
    )
}

/// Whether tile `t` is nowhere within `r` units of square `s` in the squares placed so far
/// (`owner`: each unit of the `gw x gh` grid's leaf, or `u32::MAX`).
fn no_repeat_near(
    (owner, gw, gh): (&[u32], usize, usize),
    leaves: &[Leaf],
    s: &Node,
    r: u32,
    t: u32,
) -> bool {
    if r == 0 {
        return true;
    }
    let x0 = s.x.saturating_sub(r) as usize;
    let y0 = s.y.saturating_sub(r) as usize;
    let x1 = ((s.x + s.units + r) as usize).min(gw);
    let y1 = ((s.y + s.units + r) as usize).min(gh);
    (y0..y1).all(|y| {
        owner[y * gw + x0..y * gw + x1]
            .iter()
            .all(|&o| o == u32::MAX || leaves[o as usize].tile != t)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A plan of 4..16 px squares over 32 x 32 px: two rows of two blocks, the second block
    /// split into four.
    fn plan() -> AdaptivePlan {
        let leaf = |x, y, size, tile, turn| Leaf {
            x,
            y,
            size,
            tile,
            transform: Transform::from_u8(turn).unwrap(),
            colour: [tile as u8, 2, 3],
        };
        let leaves = vec![
            leaf(0, 0, 16, 0, 0),
            leaf(16, 0, 8, 1, 5),
            leaf(24, 0, 8, 2, 0),
            leaf(16, 8, 8, 3, 1),
            leaf(24, 8, 8, 4, 0),
            leaf(0, 16, 16, 5, 7),
            leaf(16, 16, 16, 6, 0),
        ];
        AdaptivePlan {
            sizes: AdaptiveSizes { min: 4, max: 16 },
            width: 32,
            height: 32,
            blend: 20,
            library_version: 0xfeed,
            first_row: 0,
            row_starts: index_rows(&leaves, 16, 0..2).unwrap(),
            leaves,
        }
    }

    /// `body` with its digest, as [`AdaptivePlan::to_bytes`] ends it.
    fn sealed(mut body: Vec<u8>) -> Vec<u8> {
        let d = Fnv::digest(&body);
        body.extend_from_slice(&d.to_le_bytes());
        body
    }

    /// The plan's bytes without the digest, changed by `edit`, sealed again.
    fn edited(p: &AdaptivePlan, edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let bytes = p.to_bytes();
        let mut body = bytes[..bytes.len() - 8].to_vec();
        edit(&mut body);
        sealed(body)
    }

    #[test]
    fn plans_and_their_rows_round_trip() {
        let p = plan();
        assert_eq!(p.block_row_range(), 0..2);
        let bytes = p.to_bytes();
        assert!(AdaptivePlan::is_blob(&bytes));
        assert!(!AdaptivePlan::is_blob(b"TSRPLAN\n..."));
        assert_eq!(AdaptivePlan::from_bytes(&bytes).unwrap(), p);
        for (range, leaves) in [(0..1, 5), (1..2, 2), (0..2, 7), (1..1, 0)] {
            let cut = p.rows(range.clone()).unwrap();
            assert_eq!(cut.block_row_range(), range);
            assert_eq!(cut.leaves().len(), leaves);
            assert_eq!(cut.band_height(), range.len() as u32 * 16);
            assert_eq!((cut.width(), cut.height()), (32, 32));
            assert_eq!(AdaptivePlan::from_bytes(&cut.to_bytes()).unwrap(), cut);
        }
        assert_eq!(p.rows(0..2).unwrap(), p);
        assert_eq!(
            p.rows(0..2).unwrap().rows(1..2).unwrap(),
            p.rows(1..2).unwrap()
        );
        assert!(p.rows(1..3).is_err());
        assert!(p.rows(1..2).unwrap().rows(0..1).is_err());
    }

    #[test]
    fn corrupt_and_truncated_plans_are_refused_in_words() {
        let p = plan();
        let bytes = p.to_bytes();
        let says = |bytes: &[u8], words: &str| {
            let err = AdaptivePlan::from_bytes(bytes).unwrap_err().to_string();
            assert!(err.contains(words), "{words}: {err}");
        };
        says(b"TSRPLAN\nnot this kind", "bad magic");
        says(&bytes[..20], "truncated");
        says(&bytes[..bytes.len() - 1], "digest mismatch");
        says(&bytes[..bytes.len() - 21], "digest mismatch");
        let mut flipped = bytes.clone();
        flipped[60] ^= 1;
        says(&flipped, "digest mismatch");
        // Sealed again after the change: the checks of what the bytes say.
        says(
            &edited(&p, |b| b[8..12].copy_from_slice(&2u32.to_le_bytes())),
            "format version 2",
        );
        says(&edited(&p, |b| b.truncate(b.len() - 20)), "leaf count");
        says(
            &edited(&p, |b| b[16..20].copy_from_slice(&12u32.to_le_bytes())),
            "doubled",
        );
        // A square that is not one of the quadtree's: 8 px at x = 20.
        says(
            &edited(&p, |b| {
                let at = HEADER_BYTES + LEAF_BYTES;
                b[at..at + 4].copy_from_slice(&20u32.to_le_bytes());
            }),
            "not a square of the quadtree",
        );
        // A transform that is not one of the 8.
        says(&edited(&p, |b| b[HEADER_BYTES + 16] = 9), "transform");
        // Leaves out of the order of their rows of blocks: the last one moved up a row.
        says(
            &edited(&p, |b| {
                let y = HEADER_BYTES + 6 * LEAF_BYTES + 4;
                b[y..y + 4].copy_from_slice(&0u32.to_le_bytes());
            }),
            "order",
        );
        // Rows held past the mosaic's.
        says(
            &edited(&p, |b| b[28..32].copy_from_slice(&1u32.to_le_bytes())),
            "inconsistent header",
        );
        // A square missing: the rows are not covered.
        let mut gap = p.rows(0..1).unwrap();
        gap.leaves.pop();
        gap.row_starts = vec![0, 4];
        says(&gap.to_bytes(), "do not cover");
    }

    #[test]
    fn sizes_parse_and_refuse_in_words() {
        assert_eq!(
            "8..32".parse::<AdaptiveSizes>(),
            Ok(AdaptiveSizes { min: 8, max: 32 })
        );
        for (bad, says) in [
            ("8-32", "MIN..MAX"),
            ("8..24", "doubled"),
            ("16..8", "doubled"),
            ("2..8", "from 4 to 256"),
            ("8..x", "not a tile size"),
        ] {
            let err = bad.parse::<AdaptiveSizes>().unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}
