//! Plans under a cap on uses, made as one assignment over the whole grid ([`crate::capped`]),
//! where matching in scan order would run short: cells met late would find the tiles that suit
//! them taken, and take what is left. A cap that no tile reaches among the cells' first choices
//! keeps the scan order, which then matches as an unlimited library does.

use super::{Assigner, CellDesc, Matched, Matcher, Plan, Ranked, no_tile_fits, score};
use crate::capped::{self, Candidates, Limits};
use crate::color::perceptual;
use crate::error::Error;
use crate::kdtree::KdTree;
use crate::transform::Transform;

/// Whether matching in scan order under `cap` gives each cell what an unlimited library would:
/// no tile is the first choice of more cells than the cap allows.
pub(super) fn scan_order_suffices(rows: &[Vec<Matched>], cap: u32, tiles: usize) -> bool {
    let mut first = vec![0u32; tiles];
    for (_, _, ranked) in rows.iter().flatten() {
        if let Some(&(_, t, _)) = ranked.first() {
            first[t as usize] += 1;
            if first[t as usize] > cap {
                return false;
            }
        }
    }
    true
}

impl Matcher<'_> {
    /// Fills the whole grid from its described rows as one assignment under the cap and the
    /// floor on uses, then improves each cell with its neighbours known, as the scan order
    /// does.
    pub(super) fn assign_globally(
        &self,
        grid: &mut Assigner,
        plan: &mut Plan,
        rows: Vec<Vec<Matched>>,
    ) -> Result<(), Error> {
        let n = self.library.len();
        let mut descs = Vec::with_capacity(plan.tiles.len());
        let mut cells = Vec::with_capacity(plan.tiles.len());
        for (here, (desc, colour, list)) in rows.into_iter().flatten().enumerate() {
            grid.target_l[here] = desc.mean[0];
            plan.colours[here] = colour;
            cells.push(self.candidates(list));
            descs.push(desc);
        }
        let feasible = self.feasible(grid, &descs, &cells)?;
        for ((cell, desc), &pick) in cells.iter_mut().zip(&descs).zip(&feasible) {
            self.name_in(&mut cell.list, desc, pick.0);
        }
        let widen = |cell: usize, width: usize| {
            let mut wider =
                self.candidates(self.rank(&descs[cell], width, &mut Vec::new(), &|_| true));
            self.name_in(&mut wider.list, &descs[cell], feasible[cell].0);
            wider
        };
        let limits = Limits {
            tiles: n,
            cap: self.opts.max_uses.unwrap_or(u32::MAX) as usize,
            floor: self.opts.min_uses as usize,
            cols: grid.cols,
            radius: self.opts.repeat_radius as usize,
        };
        let picks: Vec<(u32, Transform)> = match capped::assign(&mut cells, limits, &widen) {
            Some(index) => index
                .iter()
                .zip(&cells)
                .map(|(&i, c)| (c.list[i as usize].1, c.list[i as usize].2))
                .collect(),
            None => feasible,
        };
        let mut uses = vec![0u32; n];
        for (here, &pick) in picks.iter().enumerate() {
            grid.place(plan, &mut uses, here, pick);
        }
        let lists: Vec<Ranked> = cells.into_iter().map(|c| c.list).collect();
        self.refine_rows(grid, (plan, &mut uses), &lists, (0, self.opts.min_uses));
        Ok(())
    }

    /// A cell's ranked list as the auction reads it.
    fn candidates(&self, list: Ranked) -> Candidates {
        let reach = if list.len() >= self.library.len() {
            f32::INFINITY
        } else {
            list.last().map_or(f32::INFINITY, |c| c.0)
        };
        Candidates { list, reach }
    }

    /// Puts tile `t` in `list` (in order of cost) when it is not there.
    fn name_in(&self, list: &mut Ranked, desc: &CellDesc, t: u32) {
        if !list.iter().any(|c| c.1 == t) {
            let (cost, turn) = score(desc, self.library, t, self.opts, &self.turns);
            let at = list.partition_point(|c| c.0 <= cost);
            // Lists are many: one more entry, not twice the room.
            list.reserve_exact(1);
            list.insert(at, (cost, t, turn));
        }
    }

    /// An assignment that keeps every limit, made quickly, so that the auction's lists hold
    /// one: with a floor, its copies placed first ([`crate::fair::place_copies`]); then each
    /// cell in scan order takes the first of its candidates with room; the cells left over
    /// take, in scan order, the nearest tile by mean colour that still has room.
    fn feasible(
        &self,
        grid: &Assigner,
        descs: &[CellDesc],
        cells: &[Candidates],
    ) -> Result<Vec<(u32, Transform)>, Error> {
        let (library, opts) = (self.library, self.opts);
        let (n, cols) = (library.len(), grid.cols);
        let cap = opts.max_uses.unwrap_or(u32::MAX);
        let mut made = Feasible {
            tiles: vec![u32::MAX; cells.len()],
            picks: vec![(u32::MAX, Transform::NONE); cells.len()],
            uses: vec![0u32; n],
        };
        if opts.min_uses > 0 {
            let outside: Vec<f32> = cells.iter().map(|c| c.list[0].0).collect();
            let means: Vec<_> = descs.iter().map(|d| d.mean).collect();
            let cost_of = self.cell_scores(descs);
            let copies = crate::fair::place_copies(
                &means,
                &outside,
                library,
                &cost_of,
                (cols, opts.repeat_radius as usize, opts.min_uses),
            )?;
            for (here, copy) in copies.into_iter().enumerate() {
                if let Some(pick) = copy {
                    made.put(here, pick);
                }
            }
        }
        let mut pending = Vec::new();
        for (here, cell) in cells.iter().enumerate() {
            if made.tiles[here] != u32::MAX {
                continue;
            }
            let (y, x) = (here / cols, here % cols);
            match cell.list.iter().find(|c| made.room(grid, (x, y), c.1, cap)) {
                Some(&(_, t, turn)) => made.put(here, (t, turn)),
                None => pending.push(here),
            }
        }
        // The cells left over take, in scan order, the nearest tile by mean colour that has
        // room: the nearest of as many as a cell has neighbours, and one more, is open to it.
        if !pending.is_empty() {
            let points: Vec<_> = library.means().iter().map(perceptual).collect();
            let open = |u: u32| if u < cap { 0.0 } else { f32::NEG_INFINITY };
            let weights: Vec<f32> = made.uses.iter().map(|&u| open(u)).collect();
            let mut tree = KdTree::with_weights(&points, &weights);
            let look = (2 * opts.repeat_radius as usize + 1).pow(2);
            let mut near = Vec::new();
            for here in pending {
                let (y, x) = (here / cols, here % cols);
                tree.least_offset(&perceptual(&descs[here].mean), look, &mut near);
                let t = near
                    .iter()
                    .map(|e| e.1)
                    .find(|&t| made.room(grid, (x, y), t, cap))
                    .ok_or_else(|| no_tile_fits(n))?;
                let turn = score(&descs[here], library, t, opts, &self.turns).1;
                made.put(here, (t, turn));
                tree.set_weight(t, open(made.uses[t as usize]));
            }
        }
        Ok(made.picks)
    }
}

/// The feasible assignment as it is made: each cell's tile, and each tile's uses.
struct Feasible {
    tiles: Vec<u32>,
    picks: Vec<(u32, Transform)>,
    uses: Vec<u32>,
}

impl Feasible {
    fn put(&mut self, here: usize, (t, turn): (u32, Transform)) {
        self.tiles[here] = t;
        self.picks[here] = (t, turn);
        self.uses[t as usize] += 1;
    }

    /// Whether tile `t` has room under `cap` and is not within the repeat radius of `(x, y)`.
    fn room(&self, grid: &Assigner, (x, y): (usize, usize), t: u32, cap: u32) -> bool {
        self.uses[t as usize] < cap && !grid.repeats(&self.tiles, x, y, t)
    }
}
