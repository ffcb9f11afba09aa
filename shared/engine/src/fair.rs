//! Every tile at least `min_uses` times ("use every photo"): the plan the matcher made is
//! completed as a transportation problem. Each use a tile still lacks is supplied by a
//! successive shortest augmenting path over the whole grid: the tile takes a cell, that cell's
//! tile takes another cell if it cannot spare one, and so on, until a tile with uses to spare
//! gives one up. The path of least added cost is found by a label-correcting search (costs may
//! fall as well as rise) over the tiles, whose edges are each tile's nearest cells by colour
//! (a k-d tree over the cells' means), so a tile no cell ranks still reaches the cells that suit
//! it best. `max_uses` and the repeat radius hold along every path; flips and turns are chosen
//! per cell as the matcher chooses them.
//!
//! Cost: each augmenting search visits at most [`SEARCH_TILES`] tiles of [`NEAREST_CELLS`]
//! edges (more for a tile that finds no path), so completing `d` missing uses is
//! O(d · SEARCH_TILES · NEAREST_CELLS · log) on top of the matcher's own pass.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use crate::color::Lab;
use crate::kdtree::KdTree;
use crate::{Error, Library, Transform};

/// What tile `tile` costs in cell `cell`, and the transform it takes there.
pub(crate) type CellCost<'a> = dyn Fn(u32, u32) -> (f32, Transform) + 'a;

/// Cells each tile may take, nearest first by mean colour, before a search widens them.
const NEAREST_CELLS: usize = 48;
/// Tiles one augmenting search may settle before it settles for the best path found.
const SEARCH_TILES: usize = 512;

/// An augmenting step: `tile` takes `cell` (under `turn`), at this cost there.
#[derive(Clone, Copy)]
struct Step {
    tile: u32,
    cell: u32,
    turn: Transform,
    cost: f32,
}

/// Completes `tiles`/`transforms` (a plan's, row-major over `cols` columns, each cell's mean
/// colour in `cell_means`, `cost` what a tile costs in a cell) so that every tile of `library`
/// is used at least `min_uses` times, no tile repeating within `radius` cells.
pub(crate) fn complete_min_uses(
    (tiles, transforms): (&mut [u32], &mut [Transform]),
    cell_means: &[Lab],
    library: &Library,
    cost_of: &CellCost,
    (cols, radius, min_uses): (usize, usize, u32),
) -> Result<(), Error> {
    let n = library.len();
    let mut uses = vec![0u32; n];
    for &t in tiles.iter() {
        uses[t as usize] += 1;
    }
    let mut cost: Vec<f32> = tiles
        .iter()
        .enumerate()
        .map(|(c, &t)| cost_of(c as u32, t).0)
        .collect();
    let mut edges = Edges {
        tree: KdTree::new(cell_means),
        library,
        cells: cell_means.len(),
        cost_of,
        near: HashMap::new(),
        widths: HashMap::new(),
        scratch: Vec::new(),
    };
    // The tiles short of uses, in library order (the result does not depend on the machine).
    let short: Vec<u32> = (0..n as u32)
        .filter(|&t| uses[t as usize] < min_uses)
        .collect();
    for t0 in short {
        while uses[t0 as usize] < min_uses {
            let path = loop {
                let found = search(
                    t0,
                    (tiles, &cost, &uses),
                    &mut edges,
                    (cols, radius, min_uses),
                );
                if let Some(path) = found {
                    break path;
                }
                // No tile with a use to spare within reach: the short tile looks wider.
                if !edges.widen(t0) {
                    return Err(Error::LibraryTooSmall {
                        tiles: n,
                        needed: n,
                        hint: format!(
                            "tile {} cannot be placed {min_uses} times within the repeat radius \
                             and use cap: lower min_uses or the repeat radius, or add cells",
                            library.name(t0)
                        ),
                    });
                }
            };
            for step in path {
                let cell = step.cell as usize;
                let old = tiles[cell];
                uses[old as usize] -= 1;
                uses[step.tile as usize] += 1;
                tiles[cell] = step.tile;
                transforms[cell] = step.turn;
                cost[cell] = step.cost;
            }
        }
    }
    Ok(())
}

/// Each tile's nearest cells by mean colour, with what the tile costs in each, made as the
/// searches reach the tile.
struct Edges<'a> {
    tree: KdTree,
    library: &'a Library,
    cells: usize,
    cost_of: &'a CellCost<'a>,
    near: HashMap<u32, Vec<(u32, f32, Transform)>>,
    /// Cells a tile looks at, where wider than [`NEAREST_CELLS`].
    widths: HashMap<u32, usize>,
    scratch: Vec<(f32, u32)>,
}

impl Edges<'_> {
    /// Tile `t`'s cells: `(cell, cost, transform)`, nearest first.
    fn of(&mut self, t: u32) -> &[(u32, f32, Transform)] {
        let width = self.widths.get(&t).copied().unwrap_or(NEAREST_CELLS);
        let Edges {
            tree,
            library,
            cost_of,
            near,
            scratch,
            ..
        } = self;
        near.entry(t).or_insert_with(|| {
            tree.nearest(&library.means()[t as usize], width, scratch);
            scratch
                .iter()
                .map(|&(_, c)| {
                    let (cost, turn) = cost_of(c, t);
                    (c, cost, turn)
                })
                .collect()
        })
    }

    /// Lets tile `t` look at four times as many cells; false when it sees every cell already.
    fn widen(&mut self, t: u32) -> bool {
        let width = self.widths.get(&t).copied().unwrap_or(NEAREST_CELLS);
        if width >= self.cells {
            return false;
        }
        self.widths.insert(t, (width * 4).min(self.cells));
        self.near.remove(&t);
        true
    }
}

/// Whether the path that reaches `t` passes through `tile` (costs may fall along a path, so a
/// cheaper way to a tile can run through its own descendants: such a loop is not a path).
fn leads_through(dist: &HashMap<u32, (f32, Option<Step>)>, mut t: u32, tile: u32) -> bool {
    let mut steps = 0;
    while let Some(&(_, Some(step))) = dist.get(&t) {
        if step.tile == tile || t == tile {
            return true;
        }
        t = step.tile;
        steps += 1;
        if steps > dist.len() {
            return true;
        }
    }
    t == tile
}

/// Whether tile `t` appears within the repeat radius of `cell`, other than at `cell`.
fn repeats(tiles: &[u32], cols: usize, radius: usize, cell: usize, t: u32) -> bool {
    if radius == 0 {
        return false;
    }
    let rows = tiles.len() / cols;
    let (y, x) = (cell / cols, cell % cols);
    let (x0, x1) = (x.saturating_sub(radius), (x + radius).min(cols - 1));
    (y.saturating_sub(radius)..=(y + radius).min(rows - 1))
        .any(|yy| (x0..=x1).any(|xx| (yy, xx) != (y, x) && tiles[yy * cols + xx] == t))
}

/// The cheapest augmenting path from the short tile `t0`: steps in the order they apply (the
/// last gives a cell of a tile with a use to spare). `None` when no tile within reach can spare
/// a use.
fn search(
    t0: u32,
    (tiles, cost, uses): (&[u32], &[f32], &[u32]),
    edges: &mut Edges,
    (cols, radius, min_uses): (usize, usize, u32),
) -> Option<Vec<Step>> {
    // Distances as integers of a hundredth, so the heap orders them exactly.
    let key = |d: f32| (d * 100.0).round() as i64;
    let mut dist: HashMap<u32, (f32, Option<Step>)> = HashMap::new();
    dist.insert(t0, (0.0, None));
    let mut heap = BinaryHeap::new();
    heap.push(Reverse((0i64, t0)));
    let mut best: Option<(f32, Step)> = None;
    let mut settled = 0usize;
    while let Some(Reverse((k, t))) = heap.pop() {
        let Some(&(d, _)) = dist.get(&t) else {
            continue;
        };
        if key(d) != k {
            continue;
        }
        if best.is_some_and(|(b, _)| d >= b) || settled >= SEARCH_TILES {
            break;
        }
        settled += 1;
        // A tile on the path gives up the cell it is taken from and takes this one: its uses
        // stay; only `t0` gains one, within the cap since min_uses <= max_uses.
        for &(cell, c_cost, turn) in edges.of(t) {
            let holder = tiles[cell as usize];
            if holder == t || repeats(tiles, cols, radius, cell as usize, t) {
                continue;
            }
            let nd = d + c_cost - cost[cell as usize];
            let step = Step {
                tile: t,
                cell,
                turn,
                cost: c_cost,
            };
            if uses[holder as usize] > min_uses {
                if best.is_none_or(|(b, _)| nd < b) {
                    best = Some((nd, step));
                }
            } else if holder != t0
                && dist.get(&holder).is_none_or(|&(hd, _)| nd < hd)
                && !leads_through(&dist, t, holder)
            {
                dist.insert(holder, (nd, Some(step)));
                heap.push(Reverse((key(nd), holder)));
            }
        }
    }
    let (_, last) = best?;
    // Back from the last step: each step's tile was reached by the step that took its cell.
    let mut path = vec![last];
    let mut t = last.tile;
    let mut guard = 0;
    while let Some(&(_, Some(step))) = dist.get(&t) {
        path.push(step);
        t = step.tile;
        guard += 1;
        if guard > dist.len() {
            return None;
        }
    }
    if t != t0 {
        return None;
    }
    // Applied from the far end: the spare tile gives its cell first.
    Some(path)
}
