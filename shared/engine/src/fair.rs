//! Every tile at least `min_uses` times ("use every photo"), as one assignment over the whole
//! grid.
//!
//! The matcher's plan gives each cell a tile and what it costs there: the cell's outside
//! option. The floor needs `n · min_uses` placements, one per *copy* of a tile; a copy in cell
//! `i` is worth the cell's outside option less what its tile costs there, and a cell no copy
//! takes keeps a tile of the matcher's choosing. Choosing the copies' cells is an assignment of
//! copies to cells, solved by Bertsekas's auction with ε-scaling: each copy without a cell bids
//! for the cell worth most to it at current prices, raising that cell's price by its margin
//! over the next best plus ε, and the copy it displaces bids again. Each cell left free is held
//! by a stand-in that values every cell at zero and so bids for the cheapest (kept in a heap);
//! with as many bidders as cells, prices carry over from one ε to the next, and the last phase
//! ends within [`EPSILON`] per copy of the best assignment over the cells each tile sees.
//!
//! Which cells a tile sees: its shortlist of the cells of least perceptual distance
//! ([`perceptual`]) less outside cost, the cells that lose least by giving up their own tile.
//! The best assignment of nearly as many tiles as cells is global (a copy's cell ranks in the
//! hundreds on its tile's list), so the lists are long while the library is small:
//! [`SHORTLIST_PAIRS`] divided among the tiles, from [`NEAREST_CELLS`] to [`SHORTLIST_CELLS`]
//! cells each. A greedy matching adds a cell of its own for every copy, so the auction always
//! ends.
//!
//! Cost: O(tiles · cells) distance evaluations to shortlist while that product is within
//! [`SCAN_PAIRS`] (a weighted k-d tree past it), O(tiles · L) exact prices and O(bids · L) to
//! bid, for lists of L cells. Copies of one tile keep out of each other's repeat radius; the
//! cells left free are filled by the matcher under `max_uses` and the radius.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

use rayon::prelude::*;

use crate::color::{Lab, dist2, perceptual};
use crate::kdtree::KdTree;
use crate::{error::Error, library::Library, transform::Transform};

/// What a tile costs in a cell: one pair, or one tile in many cells at once.
pub(crate) trait CellCost: Sync {
    /// What tile `tile` costs in cell `cell`, and the transform it takes there.
    fn cost(&self, cell: u32, tile: u32) -> (f32, Transform);

    /// What `tile` costs in each of `cells` (the scores alone), into `out` (cleared first).
    fn costs(&self, tile: u32, cells: &[u32], out: &mut Vec<f32>);
}

/// Pairs of tile and cell priced in all: each tile sees this many cells divided by the tiles,
/// within [`NEAREST_CELLS`] and [`SHORTLIST_CELLS`].
const SHORTLIST_PAIRS: usize = 8 << 20;
const SHORTLIST_CELLS: usize = 1024;
const NEAREST_CELLS: usize = 48;
/// Tiles times cells up to which the shortlists come from a scan of every pair.
const SCAN_PAIRS: usize = 64 << 20;
/// The last phase's ε, in the units of [`unit`]: the assignment is optimal within this much
/// per copy.
const EPSILON: f32 = 0.05;
/// Each phase divides ε by this.
const EPSILON_STEP: f32 = 5.0;
/// A round of the nearest-free-cell matching that places fewer than one in this many of the
/// copies left looks at more cells next round, and once it looks as far as it may, hands them
/// to a scan of the free cells (a flat photo, where every copy wants the same few cells).
const SCAN_WHEN_FEWER: usize = 16;
/// Bids one auction phase may take per bidder before the assignment is taken to be impossible.
const BIDS_PER_BIDDER: usize = 20;
/// Work the floor may do for each cell of the grid, and at least in all, where a unit is a cell
/// looked at or a count updated: a floor whose copies cannot settle within it fails with its
/// reason rather than hold a planning slot for minutes.
pub(crate) const WORK_PER_CELL: u64 = 20_000;
pub(crate) const WORK_AT_LEAST: u64 = 1 << 30;

/// Why the copies found no assignment.
enum Stuck {
    /// This tile's copies have no cells left that keep them apart.
    Tile(u32),
    /// The work budget ran out.
    Budget(u64),
}

/// Work done against [`WORK_PER_CELL`].
struct Work {
    done: u64,
    most: u64,
}

impl Work {
    fn for_cells(cells: usize) -> Work {
        Work {
            done: 0,
            most: (cells as u64)
                .saturating_mul(WORK_PER_CELL)
                .max(WORK_AT_LEAST),
        }
    }

    /// Counts `units`; an error once the budget is spent.
    fn spend(&mut self, units: usize) -> Result<(), Stuck> {
        self.done += units as u64;
        if self.done > self.most {
            return Err(Stuck::Budget(self.most));
        }
        Ok(())
    }
}

/// A cost in the units the assignment adds up: the square root of the matcher's score (squared
/// CIEDE2000 of the means plus the structure terms), so the sum is a sum of distances, as the
/// mean colour difference of the mosaic is, while each cell ranks tiles as the matcher does.
pub(crate) fn unit(score: f32) -> f32 {
    score.max(0.0).sqrt()
}

const NONE: u32 = u32::MAX;

/// Each tile's cells, as `(cell, value)`: what a copy of the tile is worth in each.
type Edges = [Vec<(u32, f32)>];

/// The largest value in `lists`, in size: the first phase's ε is a quarter of it.
fn spread(lists: &Edges) -> f32 {
    lists.iter().flatten().fold(0f32, |a, e| a.max(e.1.abs()))
}

/// For each tile, the `k` cells of least perceptual distance from it less the cell's
/// `outside` cost: the cells that lose least by giving up their own tile. A scan of every pair
/// while tiles times cells stays within [`SCAN_PAIRS`], a weighted k-d tree past it.
fn nearest_by_offset(cells: &[Lab], outside: &[f32], tiles: &[Lab], k: usize) -> Vec<Vec<u32>> {
    let cells: Vec<Lab> = cells.iter().map(perceptual).collect();
    if tiles.len() * cells.len() <= SCAN_PAIRS {
        tiles
            .par_iter()
            .map_init(Vec::new, |keys: &mut Vec<(f32, u32)>, t| {
                let q = perceptual(t);
                keys.clear();
                keys.extend(
                    cells
                        .iter()
                        .zip(outside)
                        .enumerate()
                        .map(|(c, (p, &o))| (dist2(&q, p).sqrt() - o, c as u32)),
                );
                if k < keys.len() {
                    keys.select_nth_unstable_by(k, |a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                }
                keys[..k].iter().map(|e| e.1).collect()
            })
            .collect()
    } else {
        let tree = KdTree::with_weights(&cells, outside);
        tiles
            .par_iter()
            .map_init(Vec::new, |scratch, t| {
                tree.least_offset(&perceptual(t), k, scratch);
                scratch.iter().map(|e| e.1).collect()
            })
            .collect()
    }
}

/// The cells the copies of each tile take: for each cell, the tile placed there by the floor
/// and its transform, or `None` for a cell the matcher fills. `outside` is what the matcher's
/// tile costs in each cell (its score), `cost_of` what a tile costs in a cell.
pub(crate) fn place_copies(
    cell_means: &[Lab],
    outside: &[f32],
    library: &Library,
    cost_of: &dyn CellCost,
    (cols, radius, min_uses): (usize, usize, u32),
) -> Result<Vec<Option<(u32, Transform)>>, Error> {
    let n = library.len();
    let cells = cell_means.len();
    // The caller has checked that the grid has room: n * min_uses <= cells.
    let m = min_uses as usize;
    let outside: Vec<f32> = outside.iter().map(|&s| unit(s)).collect();
    let value = |t: u32, c: u32| outside[c as usize] - unit(cost_of.cost(c, t).0);
    let seen = (SHORTLIST_PAIRS / n.max(1))
        .clamp(NEAREST_CELLS, SHORTLIST_CELLS)
        .min(cells);
    let near = nearest_by_offset(cell_means, &outside, library.means(), seen);
    let mut lists: Vec<Vec<(u32, f32)>> = near
        .into_par_iter()
        .enumerate()
        .map_init(Vec::new, |costs, (t, cells)| {
            cost_of.costs(t as u32, &cells, costs);
            let values = costs.iter().map(|&cost| unit(cost));
            (cells.iter().zip(values))
                .map(|(&c, cost)| (c, outside[c as usize] - cost))
                .collect()
        })
        .collect();
    let mut work = Work::for_cells(cells);
    let stuck = |why: Stuck| match why {
        Stuck::Tile(t) => Error::LibraryTooSmall {
            tiles: n,
            needed: n,
            hint: format!(
                "tile {} cannot be placed {min_uses} times within the repeat radius: ask \
                 for fewer uses of each tile, let tiles repeat closer together, or add cells",
                library.name(t)
            ),
        },
        Stuck::Budget(most) => Error::InvalidOption(format!(
            "every tile at least {min_uses} times found no placement within the planner's \
             budget ({most} steps for {cells} cells): ask for fewer uses of each tile, let \
             tiles repeat closer together, or add cells"
        )),
    };
    let own = own_cells(
        &lists,
        (cols, radius, m),
        cell_means,
        library.means(),
        &mut work,
    );
    for (t, c) in own.map_err(stuck)? {
        lists[t as usize].push((c, value(t, c)));
    }
    let cell_of = auction(&lists, cells, (cols, radius, m), &mut work).map_err(stuck)?;
    let mut placed = vec![None; cells];
    for (copy, &cell) in cell_of.iter().enumerate() {
        let t = (copy / m) as u32;
        placed[cell as usize] = Some((t, cost_of.cost(cell, t).1));
    }
    Ok(placed)
}

/// The auction: each copy's cell (copies of tile `t` are `t * m .. (t + 1) * m`), or the tile
/// whose copy found no cell it may take.
fn auction(
    lists: &Edges,
    cells: usize,
    (cols, radius, m): (usize, usize, usize),
    work: &mut Work,
) -> Result<Vec<u32>, Stuck> {
    let copies = lists.len() * m;
    let mut price = vec![0f32; cells];
    let mut owner = vec![NONE; cells];
    // Bidders: the copies, then the stand-ins for the cells left free.
    let mut cell_of = vec![NONE; cells];
    let mut cheapest: BinaryHeap<Reverse<(u32, u32)>> = BinaryHeap::new();
    // For each tile, how many of its copies each cell is within the repeat radius of.
    let mut cover: Vec<HashMap<u32, i32>> =
        vec![HashMap::new(); if m > 1 { lists.len() } else { 0 }];
    let mut epsilon = (spread(lists) / 4.0).max(EPSILON);
    // A phase takes a few bids per bidder; with the repeat radius the copies of a tile may
    // have no assignment among their edges, and prices would climb for ever: give up then.
    let most_bids = BIDS_PER_BIDDER * cells;
    loop {
        let mut bids = 0usize;
        owner.fill(NONE);
        cell_of.fill(NONE);
        cover.iter_mut().for_each(HashMap::clear);
        cheapest.clear();
        cheapest.extend((0..cells as u32).map(|c| Reverse((price[c as usize].to_bits(), c))));
        let mut queue: VecDeque<u32> = (0..cells as u32).collect();
        while let Some(bidder) = queue.pop_front() {
            bids += 1;
            if bids > most_bids {
                let t = (bidder as usize).min(copies.saturating_sub(1)) / m;
                return Err(Stuck::Tile(t as u32));
            }
            // A bid looks at its tile's cells and, with several copies, counts the cells
            // around the one it takes and the one it frees.
            let around = if m > 1 {
                2 * (2 * radius + 1).pow(2)
            } else {
                0
            };
            let looked = lists.get(bidder as usize / m).map_or(1, Vec::len);
            work.spend(looked + around)?;
            let (cell, margin) = if bidder as usize >= copies {
                // A stand-in takes the cheapest cell, raised to just past the next cheapest.
                let Some((p1, c1)) = pop_cheapest(&mut cheapest, &price) else {
                    break;
                };
                (c1, peek_cheapest(&mut cheapest, &price).unwrap_or(p1) - p1)
            } else {
                let t = bidder as usize / m;
                // A cell within the repeat radius of another copy of the tile is closed to it
                // (the bidder holds no cell while it bids).
                let near_sibling = |c: u32| m > 1 && cover[t].get(&c).is_some_and(|&n| n > 0);
                let (best, second) = best_two(lists[t].iter().copied(), &price, near_sibling);
                if best.1 == NONE {
                    return Err(Stuck::Tile(t as u32));
                }
                let margin = if second == f32::NEG_INFINITY {
                    0.0
                } else {
                    best.0 - second
                };
                (best.1, margin)
            };
            price[cell as usize] += margin + epsilon;
            cheapest.push(Reverse((price[cell as usize].to_bits(), cell)));
            let held = std::mem::replace(&mut owner[cell as usize], bidder);
            if m > 1 {
                // Copies of a tile keep a count of how many of them each cell is near.
                let mut mark = |copy: u32, by: i32| {
                    if (copy as usize) < copies {
                        let counts = &mut cover[copy as usize / m];
                        for n in neighbourhood(cell as usize, cells, cols, radius) {
                            *counts.entry(n as u32).or_insert(0) += by;
                        }
                    }
                };
                if held != NONE {
                    mark(held, -1);
                }
                mark(bidder, 1);
            }
            if held != NONE {
                cell_of[held as usize] = NONE;
                queue.push_back(held);
            }
            cell_of[bidder as usize] = cell;
        }
        if epsilon <= EPSILON {
            break;
        }
        epsilon = (epsilon / EPSILON_STEP).max(EPSILON);
    }
    cell_of.truncate(copies);
    Ok(cell_of)
}

/// The best cell of `edges` at `price` (value less price), and the second best value; cells
/// for which `closed` holds are passed over.
fn best_two(
    edges: impl Iterator<Item = (u32, f32)>,
    price: &[f32],
    closed: impl Fn(u32) -> bool,
) -> ((f32, u32), f32) {
    let (mut best, mut second) = ((f32::NEG_INFINITY, NONE), f32::NEG_INFINITY);
    for (c, v) in edges {
        let w = v - price[c as usize];
        if w > second && !closed(c) {
            if w > best.0 {
                second = best.0;
                best = (w, c);
            } else {
                second = w;
            }
        }
    }
    (best, second)
}

/// Cells taken by the feasibility matching, and how many copies of each tile have one.
struct Claims {
    taken: Vec<bool>,
    placed: Vec<usize>,
    /// The cells within the repeat radius of each tile's copies so far, closed to its others
    /// (kept only when tiles have several copies).
    closed: Vec<HashSet<u32>>,
    /// Grid width, repeat radius and copies per tile.
    grid: (usize, usize, usize),
}

impl Claims {
    fn new(tiles: usize, cells: usize, (cols, radius, m): (usize, usize, usize)) -> Self {
        Claims {
            taken: vec![false; cells],
            placed: vec![0; tiles],
            closed: vec![HashSet::new(); if m > 1 { tiles } else { 0 }],
            grid: (cols, radius, m),
        }
    }

    /// Whether a copy of tile `t` may still take cell `c`.
    fn open(&self, t: usize, c: u32) -> bool {
        self.placed[t] < self.grid.2
            && !self.taken[c as usize]
            && (self.grid.2 == 1 || !self.closed[t].contains(&c))
    }

    /// Gives a copy of tile `t` cell `c`, when it may take it.
    fn take(&mut self, t: usize, c: u32) -> bool {
        if !self.open(t, c) {
            return false;
        }
        let (cols, radius, m) = self.grid;
        self.taken[c as usize] = true;
        self.placed[t] += 1;
        if m > 1 {
            let cells = self.taken.len();
            self.closed[t].extend(neighbourhood(c as usize, cells, cols, radius).map(|n| n as u32));
        }
        true
    }
}

/// Pairs `(tile, cell)` that give each copy a cell of its own, out of the repeat radius of the
/// tile's other copies, for tiles whose edges do not already: a matching greedy by value over
/// each tile's best edges, then each copy left over takes the nearest cell by mean colour still
/// free. With them among the edges the auction has an assignment to find.
fn own_cells(
    lists: &[Vec<(u32, f32)>],
    grid: (usize, usize, usize),
    cell_means: &[Lab],
    tile_means: &[Lab],
    work: &mut Work,
) -> Result<Vec<(u32, u32)>, Stuck> {
    let m = grid.2;
    let around = if m > 1 { (2 * grid.1 + 1).pow(2) } else { 0 };
    let cells = cell_means.len();
    let mut claims = Claims::new(lists.len(), cells, grid);
    claim_best_edges(lists, &mut claims, (m, around), work)?;
    // ...and the copies left over, in rounds: each takes the nearest of its k nearest free
    // cells that no nearer pair has taken, until none is left.
    let left: Vec<u32> = (0..lists.len())
        .flat_map(|t| std::iter::repeat_n(t as u32, m - claims.placed[t]))
        .collect();
    place_left_over(
        left,
        &mut claims,
        (cell_means, tile_means),
        (m, around),
        work,
    )
}

/// Claims cells for each tile's copies from its edges: greedy by value over each tile's few
/// best edges, then each tile still short takes the free cells its list names, in list order.
fn claim_best_edges(
    lists: &[Vec<(u32, f32)>],
    claims: &mut Claims,
    (m, around): (usize, usize),
    work: &mut Work,
) -> Result<(), Stuck> {
    let keep = 2 * m + 2;
    let mut order: Vec<(f32, u32, u32)> = lists
        .par_iter()
        .enumerate()
        .flat_map_iter(|(t, list)| {
            let mut best = list.clone();
            if keep < best.len() {
                best.select_nth_unstable_by(keep, |a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                best.truncate(keep);
            }
            best.into_iter().map(move |(c, v)| (v, t as u32, c))
        })
        .collect();
    order.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    for (_, t, c) in order {
        work.spend(1)?;
        if claims.take(t as usize, c) {
            work.spend(around)?;
        }
    }
    for (t, list) in lists.iter().enumerate() {
        for &(c, _) in list {
            if claims.placed[t] == m {
                break;
            }
            work.spend(1)?;
            if claims.take(t, c) {
                work.spend(around)?;
            }
        }
    }
    Ok(())
}

/// Places the copies `left` (their tiles) in rounds: each takes the nearest of its k nearest
/// free cells by mean colour that no nearer pair has taken. When a round places few, the next
/// looks further; when that does not help, each tile short of copies scans the free cells in
/// order.
fn place_left_over(
    mut left: Vec<u32>,
    claims: &mut Claims,
    (cell_means, tile_means): (&[Lab], &[Lab]),
    (m, around): (usize, usize),
    work: &mut Work,
) -> Result<Vec<(u32, u32)>, Stuck> {
    let (tiles, cells) = (claims.placed.len(), cell_means.len());
    let mut pairs = Vec::new();
    // How many of the nearest free cells each copy looks at: more when a round places few.
    let mut k = 16usize;
    while !left.is_empty() {
        let free: Vec<u32> = (0..cells as u32)
            .filter(|&c| !claims.taken[c as usize])
            .collect();
        if free.is_empty() {
            break;
        }
        let tree = KdTree::new(
            &free
                .iter()
                .map(|&c| cell_means[c as usize])
                .collect::<Vec<_>>(),
        );
        // Copies whose nearest free cells are all equally near (a flat photo) gain nothing
        // from looking further.
        let tied = AtomicUsize::new(0);
        let mut near: Vec<(f32, u32, u32)> = left
            .par_iter()
            .enumerate()
            .map_init(Vec::new, |scratch, (i, &t)| {
                tree.nearest(&tile_means[t as usize], k.min(free.len()), scratch);
                if scratch.first().map(|e| e.0) == scratch.last().map(|e| e.0) {
                    tied.fetch_add(1, AtomicOrdering::Relaxed);
                }
                scratch
                    .iter()
                    .map(|&(d2, j)| (d2, i as u32, free[j as usize]))
                    .collect::<Vec<_>>()
            })
            .flatten()
            .collect();
        let tied = tied.into_inner() * 2 > left.len();
        near.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let mut done = vec![false; left.len()];
        work.spend(near.len() + free.len())?;
        for (_, i, c) in near {
            let t = left[i as usize];
            if !done[i as usize] && claims.take(t as usize, c) {
                work.spend(around)?;
                done[i as usize] = true;
                pairs.push((t, c));
            }
        }
        let placed_now = done.iter().filter(|&&d| d).count();
        let crowded = placed_now * SCAN_WHEN_FEWER < left.len();
        let widest = (SHORTLIST_PAIRS / left.len()).max(16).min(free.len());
        if crowded && k < widest && !tied {
            // The copies left crowd the same few cells: look further next round.
            k = (k * 4).min(widest);
        } else if crowded {
            // Still crowded (a flat photo: every cell alike), or held back by their siblings'
            // radius: each tile short of copies scans the free cells in order instead.
            for t in 0..tiles {
                for c in 0..cells as u32 {
                    if claims.placed[t] == m {
                        break;
                    }
                    work.spend(1)?;
                    if claims.take(t, c) {
                        work.spend(around)?;
                        pairs.push((t as u32, c));
                    }
                }
            }
            break;
        }
        let mut i = 0;
        left.retain(|_| {
            i += 1;
            !done[i - 1]
        });
    }
    Ok(pairs)
}

/// The cell of least price, taken off the heap (entries whose price has changed since are
/// dropped), with its price.
fn pop_cheapest(heap: &mut BinaryHeap<Reverse<(u32, u32)>>, price: &[f32]) -> Option<(f32, u32)> {
    while let Some(Reverse((bits, c))) = heap.pop() {
        if price[c as usize].to_bits() == bits {
            return Some((price[c as usize], c));
        }
    }
    None
}

/// The least price on the heap, leaving it there.
fn peek_cheapest(heap: &mut BinaryHeap<Reverse<(u32, u32)>>, price: &[f32]) -> Option<f32> {
    while let Some(&Reverse((bits, c))) = heap.peek() {
        if price[c as usize].to_bits() == bits {
            return Some(price[c as usize]);
        }
        heap.pop();
    }
    None
}

/// The cells within `radius` of `cell` (itself included), on a grid `cols` wide.
fn neighbourhood(
    cell: usize,
    cells: usize,
    cols: usize,
    radius: usize,
) -> impl Iterator<Item = usize> {
    let (y, x) = (cell / cols, cell % cols);
    let rows = cells.div_ceil(cols);
    let ys = y.saturating_sub(radius)..(y + radius + 1).min(rows);
    ys.flat_map(move |ny| {
        (x.saturating_sub(radius)..(x + radius + 1).min(cols)).map(move |nx| ny * cols + nx)
    })
    .filter(move |&c| c < cells)
}

/// Whether cells `a` and `b` of a grid `cols` wide are within `radius` cells of each other.
#[cfg(test)]
fn within(a: usize, b: usize, cols: usize, radius: usize) -> bool {
    let (ay, ax) = (a / cols, a % cols);
    let (by, bx) = (b / cols, b % cols);
    ay.abs_diff(by) <= radius && ax.abs_diff(bx) <= radius
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(seed: u64, len: usize) -> Vec<f32> {
        let mut state = crate::seeded(seed);
        (0..len)
            .map(|_| ((state() >> 33) % 1000) as f32 / 20.0 - 25.0)
            .collect()
    }

    /// The best total value of giving each of `tiles` tiles its own cell, by trying every way.
    fn brute_force(values: &[f32], tiles: usize, cells: usize) -> f32 {
        fn go(values: &[f32], t: usize, tiles: usize, cells: usize, used: &mut [bool]) -> f32 {
            if t == tiles {
                return 0.0;
            }
            let mut best = f32::NEG_INFINITY;
            for c in 0..cells {
                if !used[c] {
                    used[c] = true;
                    let v = values[t * cells + c] + go(values, t + 1, tiles, cells, used);
                    used[c] = false;
                    best = best.max(v);
                }
            }
            best
        }
        go(values, 0, tiles, cells, &mut vec![false; cells])
    }

    #[test]
    fn the_auction_finds_the_best_assignment() {
        let (tiles, cells) = (5, 8);
        for seed in 1..20 {
            let v = values(seed, tiles * cells);
            let best = brute_force(&v, tiles, cells);
            let lists: Vec<Vec<(u32, f32)>> = (0..tiles)
                .map(|t| (0..cells).map(|c| (c as u32, v[t * cells + c])).collect())
                .collect();
            // The same edges in another order.
            let reversed: Vec<Vec<(u32, f32)>> = lists
                .iter()
                .map(|l| l.iter().rev().copied().collect())
                .collect();
            for lists in [lists, reversed] {
                let cell_of = auction(&lists, cells, (cells, 0, 1), &mut Work::for_cells(cells))
                    .ok()
                    .expect("a cell for each");
                let mut seen = cell_of.clone();
                seen.sort();
                seen.dedup();
                assert_eq!(seen.len(), tiles, "one copy a cell: {cell_of:?}");
                let total: f32 = (0..tiles).map(|t| v[t * cells + cell_of[t] as usize]).sum();
                assert!(
                    total >= best - tiles as f32 * EPSILON - 1e-3,
                    "seed {seed}: {total} against the best {best}"
                );
            }
        }
    }

    #[test]
    fn copies_of_a_tile_keep_out_of_each_others_radius() {
        // Three tiles, two copies each, on a 4 x 4 grid, radius 1; every tile is worth most in
        // the top-left corner.
        let (cols, cells, tiles) = (4, 16, 3);
        let v: Vec<f32> = (0..tiles * cells)
            .map(|i| -(((i % cells) / cols + (i % cells) % cols) as f32))
            .collect();
        let lists: Vec<Vec<(u32, f32)>> = v
            .chunks(cells)
            .map(|row| {
                row.iter()
                    .enumerate()
                    .map(|(c, &x)| (c as u32, x))
                    .collect()
            })
            .collect();
        let cell_of = auction(&lists, cells, (cols, 1, 2), &mut Work::for_cells(cells))
            .ok()
            .expect("room for every copy");
        for t in 0..tiles {
            let (a, b) = (cell_of[2 * t] as usize, cell_of[2 * t + 1] as usize);
            assert!(!within(a, b, cols, 1), "tile {t}: cells {a} and {b}");
        }
    }

    #[test]
    fn every_copy_gets_a_cell_of_its_own_even_with_few_edges() {
        // Ten tiles all wanting cell 0 and seeing nothing else.
        let means: Vec<Lab> = (0..12).map(|i| [i as f32 * 5.0, 0.0, 0.0]).collect();
        let lists: Vec<Vec<(u32, f32)>> = (0..10).map(|_| vec![(0, 1.0)]).collect();
        let pairs = own_cells(
            &lists,
            (12, 0, 1),
            &means,
            &means[..10],
            &mut Work::for_cells(12),
        )
        .ok()
        .unwrap();
        let mut cells: Vec<u32> = pairs.iter().map(|p| p.1).collect();
        cells.push(0);
        cells.sort();
        cells.dedup();
        assert_eq!(pairs.len(), 9);
        assert_eq!(cells.len(), 10);
    }

    #[test]
    fn a_flat_photo_still_gives_every_copy_a_cell_apart_from_its_siblings() {
        // Every cell alike, so every tile's shortlist names the same first cells.
        let (cols, rows, tiles, m) = (64usize, 64usize, 12usize, 40usize);
        let cells = cols * rows;
        let grey = [50.0f32, 0.0, 0.0];
        let means = vec![grey; cells];
        let mut lists: Vec<Vec<(u32, f32)>> = (0..tiles)
            .map(|_| (0..256).map(|c| (c, 1.0)).collect())
            .collect();
        for (t, c) in own_cells(
            &lists,
            (cols, 1, m),
            &means,
            &vec![grey; tiles],
            &mut Work::for_cells(cells),
        )
        .ok()
        .unwrap()
        {
            lists[t as usize].push((c, 1.0));
        }
        let cell_of = auction(&lists, cells, (cols, 1, m), &mut Work::for_cells(cells))
            .ok()
            .expect("an assignment");
        for t in 0..tiles {
            let mine = &cell_of[t * m..(t + 1) * m];
            for (i, &a) in mine.iter().enumerate() {
                for &b in &mine[i + 1..] {
                    assert!(
                        !within(a as usize, b as usize, cols, 1),
                        "tile {t}: {a} {b}"
                    );
                }
            }
        }
    }

    #[test]
    fn copies_that_cannot_keep_apart_end_the_auction_with_the_tile() {
        // 6 x 6 cells hold at most 9 cells out of each other's radius 1; 12 copies cannot.
        let (cols, cells, m) = (6usize, 36usize, 12usize);
        let lists: Vec<Vec<(u32, f32)>> = (0..2)
            .map(|_| (0..cells as u32).map(|c| (c, 1.0)).collect())
            .collect();
        assert!(auction(&lists, cells, (cols, 1, m), &mut Work::for_cells(cells)).is_err());
    }
}
