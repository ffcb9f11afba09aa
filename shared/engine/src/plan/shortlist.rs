//! A cell's candidates: the shortlist cut by a k-d tree, and the cost that ranks it (colour,
//! light and dark, structure).

use super::*;

/// A described cell: descriptors, sRGB colour, and its ranked candidates.
pub(super) type Matched = (CellDesc, [u8; 3], Ranked);

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
    pub(super) fn nearest(&self, desc: &CellDesc, k: usize, out: &mut Vec<(f32, u32)>) {
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
pub(super) fn thirds(k: usize, o: usize) -> Vec<f32> {
    let (lo, hi) = (o as f32 * k as f32 / 3.0, (o + 1) as f32 * k as f32 / 3.0);
    (0..k)
        .map(|j| ((j as f32 + 1.0).min(hi) - (j as f32).max(lo)).max(0.0) * 3.0 / k as f32)
        .collect()
}

/// The L* of `light` (a `k x k` grid, row by row, `k` the length of each of `weights`, from
/// [`thirds`]) averaged over a 3 x 3 grid.
pub(super) fn light_grid(light: impl Fn(usize) -> f32, weights: &[Vec<f32>; 3]) -> [f32; 9] {
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
pub(super) const FORM_DIMS: usize = 7;

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
pub(super) fn form_point(
    mean: &Lab,
    grid: &[f32; 9],
    scale: f32,
    any_turn: bool,
) -> [f32; FORM_DIMS] {
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
pub(super) fn mean_point(mean: &Lab, scale: f32) -> [f32; 3] {
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
pub(super) fn sort_by_cost(list: &mut [(f32, u32, Transform)]) {
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
pub(super) fn structure(
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
pub(super) const DARK_WEIGHT: f32 = 16.0;
pub(super) const DARK_KNEE: f32 = 4.0;
