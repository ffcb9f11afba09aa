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

use std::collections::BinaryHeap;
use std::ops::Range;

use rayon::prelude::*;

use crate::color::{Lab, srgb_to_lab32};
use crate::kdtree::KdTree;
use crate::library::Library;
use crate::plan::{CellDesc, PlanOptions, Sizing, TILE_SIZES, empty_library, no_tile_fits, rank};
use crate::render::{TileCache, blend_shift, copy_tile};
use crate::resample::AreaResampler;
use crate::shape::TileSize;
use crate::transform::Transform;
use crate::{BandSink, Error};

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
        let sizes = AdaptiveSizes {
            min: side(min)?,
            max: side(max)?,
        };
        sizes.check().map_err(|e| e.to_string())?;
        Ok(sizes)
    }
}

impl AdaptiveSizes {
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

/// Square -> tile for a whole adaptive mosaic, leaves grouped by row of blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdaptivePlan {
    sizes: AdaptiveSizes,
    width: u32,
    height: u32,
    blend: u8,
    /// Leaves, a row of blocks after another, each row in reading order of its squares' corners.
    leaves: Vec<Leaf>,
    /// Where each row of blocks starts in `leaves` (and one past the last).
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
        let uniform = Sizing::new(target.width(), target.height(), opts)?;
        let budget = uniform.cols as usize * uniform.rows as usize;
        let (bw, bh) = (
            uniform.width.div_ceil(sizes.max),
            uniform.height.div_ceil(sizes.max),
        );
        let (width, height) = (bw * sizes.max, bh * sizes.max);
        if u64::from(width) * u64::from(height) > opts.max_output_pixels {
            return Err(Error::OutputTooLarge {
                width: width.into(),
                height: height.into(),
                limit: opts.max_output_pixels,
            });
        }
        if (bw as usize) * (bh as usize) > budget {
            return Err(Error::InvalidOption(format!(
                "{} blocks of {} px already exceed the {budget} tiles of the uniform grid: use a \
                 smaller largest size or a larger tile size",
                bw * bh,
                sizes.max
            )));
        }
        let n = library.len();
        if n == 0 {
            return Err(empty_library());
        }
        let k = library.grid();
        let per_block = (sizes.max / sizes.min) as usize;
        let samples = Samples::new(
            target,
            bw as usize * per_block * k,
            bh as usize * per_block * k,
        );
        let leaves = split(&samples, sizes, (bw, bh), budget, k);
        Self::matched(library, opts, sizes, (width, height), leaves, &samples, k)
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
        let tree = KdTree::new(library.means());
        let turns: Vec<(Transform, Vec<usize>)> = Transform::allowed(opts.flip, opts.rotate, true)
            .into_iter()
            .map(|t| (t, t.permutation(k, k)))
            .collect();
        let ncand = opts.candidates.clamp(1, n);
        // Descriptors and rankings in parallel; the choices, which depend on the squares placed
        // before, in order.
        let described: Vec<(CellDesc, [u8; 3], crate::plan::Ranked)> = squares
            .par_iter()
            .map_init(Vec::new, |scratch, s| {
                let desc = describe(samples, s, k);
                let colour = desc.1;
                let ranked = rank(&desc.0, library, &tree, ncand, opts, &turns, scratch);
                (desc.0, colour, ranked)
            })
            .collect();
        let (gw, gh) = ((width / sizes.min) as usize, (height / sizes.min) as usize);
        let mut owner = vec![u32::MAX; gw * gh];
        let mut uses = vec![0u32; if opts.max_uses.is_some() { n } else { 0 }];
        let mut leaves: Vec<Leaf> = Vec::with_capacity(squares.len());
        for (s, (desc, colour, mut ranked)) in squares.iter().zip(described) {
            let mut width_now = ncand;
            let allowed = |t: u32, leaves: &[Leaf], uses: &[u32]| {
                if let Some(cap) = opts.max_uses
                    && uses[t as usize] >= cap
                {
                    return false;
                }
                let r = opts.repeat_radius * s.units;
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
            };
            let mut pick = ranked
                .iter()
                .find(|c| allowed(c.1, &leaves, &uses))
                .copied();
            while pick.is_none() && width_now < n {
                width_now = (width_now * 4).min(n);
                ranked = rank(
                    &desc,
                    library,
                    &tree,
                    width_now,
                    opts,
                    &turns,
                    &mut Vec::new(),
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
        let rows = height / sizes.max;
        let mut row_starts = Vec::with_capacity(rows as usize + 1);
        let mut at = 0;
        for row in 0..=rows {
            while at < leaves.len() && leaves[at].y / sizes.max < row {
                at += 1;
            }
            row_starts.push(at);
        }
        Ok(AdaptivePlan {
            sizes,
            width,
            height,
            blend: opts.blend,
            leaves,
            row_starts,
        })
    }

    pub fn width(&self) -> u32 {
        self.width
    }

    pub fn height(&self) -> u32 {
        self.height
    }

    pub fn sizes(&self) -> AdaptiveSizes {
        self.sizes
    }

    pub fn leaves(&self) -> &[Leaf] {
        &self.leaves
    }

    /// Rows of blocks (each `max` px tall).
    pub fn block_rows(&self) -> u32 {
        self.height / self.sizes.max
    }

    /// The tile sizes the leaves use, smallest first.
    pub fn tile_sizes(&self) -> Vec<u32> {
        let mut sizes: Vec<u32> = self.leaves.iter().map(|l| l.size).collect();
        sizes.sort_unstable();
        sizes.dedup();
        sizes
    }

    /// Pixels (RGB8) of rows of blocks `rows`, from the leaves in them alone. `caches` holds a
    /// tile cache for each of [`AdaptivePlan::tile_sizes`].
    pub fn render_rows(&self, caches: &[TileCache], rows: Range<u32>) -> Result<Vec<u8>, Error> {
        let max = self.sizes.max as usize;
        let row_bytes = self.width as usize * 3;
        let band = row_bytes * max;
        let mut out = vec![0u8; band * rows.len()];
        let blend = i32::from(self.blend);
        out.par_chunks_mut(band)
            .zip(rows.clone())
            .try_for_each(|(pixels, row)| {
                let leaves =
                    &self.leaves[self.row_starts[row as usize]..self.row_starts[row as usize + 1]];
                for leaf in leaves {
                    let cache = caches
                        .iter()
                        .find(|c| c.tile_size() == TileSize::square(leaf.size))
                        .ok_or_else(|| {
                            Error::InvalidOption(format!("no tiles of {} px to render", leaf.size))
                        })?;
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
                Ok::<(), Error>(())
            })?;
        Ok(out)
    }

    /// Renders the whole mosaic into `sink`, a few rows of blocks at a time.
    pub fn render_to_sink(&self, library: &Library, sink: &mut dyn BandSink) -> Result<(), Error> {
        let caches: Vec<TileCache> = self
            .tile_sizes()
            .into_iter()
            .map(|size| TileCache::new(library, TileSize::square(size)))
            .collect();
        let rows = self.block_rows();
        let step = ((8 << 20) / (self.width as usize * 3 * self.sizes.max as usize)).max(1) as u32;
        for first in (0..rows).step_by(step as usize) {
            sink.write_owned(self.render_rows(&caches, first..(first + step).min(rows))?)?;
        }
        Ok(())
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
