//! The assigner: each cell's tile in scan order, under the repetition radius and the cap on
//! uses, with the cost of steps in lightness from the placed neighbours.

use super::*;

/// A cell's placed neighbours (3 x 3, in scan order): each one's L*, and the target's step in L*
/// from there to the cell.
pub(super) struct Steps {
    pub(super) at: [(f32, f32); 8],
    pub(super) len: usize,
}

impl Steps {
    /// [`Assigner::gradient`] for a tile of L* `l`.
    pub(super) fn gradient(&self, l: f32) -> f32 {
        let mut sum = 0.0;
        for &(mosaic, target_step) in &self.at[..self.len] {
            let d = (l - mosaic) - target_step;
            sum += d * d;
        }
        sum
    }
}

/// The cells of a square window of the grid but its centre, by index, row by row.
pub(super) struct Window {
    pub(super) cols: usize,
    pub(super) here: usize,
    pub(super) next: usize,
    pub(super) row_end: usize,
    pub(super) last_row_end: usize,
    /// From one row's end to the next row's start.
    pub(super) skip: usize,
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
pub(super) struct Assigner<'a> {
    pub(super) library: &'a Library,
    pub(super) opts: &'a PlanOptions,
    pub(super) cols: usize,
    /// Each placed cell's target L*, and the L* of the tile it holds.
    pub(super) target_l: Vec<f32>,
    pub(super) mosaic_l: Vec<f32>,
    /// The tiles of the other cells within the repeat radius of the cell [`Assigner::best`]
    /// is choosing for, gathered once for all its candidates.
    pub(super) held: Vec<u32>,
    /// The tiles one cell past that radius: allowed, at a cost ([`RING_PENALTY`]), so that a
    /// small library does not settle into the same few tiles in turn, in stripes.
    pub(super) ring: Vec<u32>,
}

/// How much dearer a tile is where it already stands one cell past the repeat radius.
pub(super) const RING_PENALTY: f32 = 1.5;

/// Libraries of fewer tiles than this many times the cells a repeat window holds pay it (a
/// wedding's forty photos at radius 2 do; the 310 photos at radius 5 have choices enough).
pub(super) const RING_LIBRARY_FACTOR: usize = 2;

impl Assigner<'_> {
    /// The candidate of least cost that the limits allow at `(x, y)`, with its transform;
    /// `current` is the tile the cell holds now (it does not count against itself), if any.
    pub(super) fn best(
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
    pub(super) fn eject(
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
    pub(super) fn gradient(&self, tiles: &[u32], here: usize, t: u32) -> f32 {
        self.steps(tiles, here)
            .gradient(self.library.means()[t as usize][0])
    }

    /// The placed neighbours of `here` as [`Assigner::gradient`] needs them (none without a
    /// gradient weight).
    pub(super) fn steps(&self, tiles: &[u32], here: usize) -> Steps {
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
    pub(super) fn repeats(&self, tiles: &[u32], x: usize, y: usize, t: u32) -> bool {
        let r = self.opts.repeat_radius as usize;
        r > 0
            && self
                .window(tiles, y * self.cols + x, r)
                .any(|j| tiles[j] == t)
    }

    /// The other cells within `r` of `here` (by index, row by row), on a grid of `tiles`.
    pub(super) fn window(&self, tiles: &[u32], here: usize, r: usize) -> Window {
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

    pub(super) fn place(
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

    pub(super) fn unplace(&self, uses: &mut [u32], t: u32) {
        if let Some(u) = uses.get_mut(t as usize) {
            *u -= 1;
        }
    }
}
