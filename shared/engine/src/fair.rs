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
use std::collections::{BinaryHeap, VecDeque};

use rayon::prelude::*;

use crate::color::{Lab, dist2};
use crate::kdtree::KdTree;
use crate::{Error, Library, Transform};

/// What tile `tile` costs in cell `cell`, and the transform it takes there.
pub(crate) type CellCost<'a> = dyn Fn(u32, u32) -> (f32, Transform) + Sync + 'a;

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

/// A cost in the units the assignment adds up: the square root of the matcher's score (squared
/// CIEDE2000 of the means plus the structure terms), so the sum is a sum of distances, as the
/// mean colour difference of the mosaic is, while each cell ranks tiles as the matcher does.
fn unit(score: f32) -> f32 {
    score.max(0.0).sqrt()
}

const NONE: u32 = u32::MAX;

/// Each tile's cells, as `(cell, value)`: what a copy of the tile is worth in each.
type Edges = [Vec<(u32, f32)>];

/// The largest value in `lists`, in size: the first phase's ε is a quarter of it.
fn spread(lists: &Edges) -> f32 {
    lists.iter().flatten().fold(0f32, |a, e| a.max(e.1.abs()))
}

/// Lab with chroma compressed logarithmically, as DIN99 does, so that Euclidean distance ranks
/// pairs of colours nearly as CIEDE2000 does (it divides chroma differences by `1 + 0.045 C`).
fn perceptual(q: &Lab) -> Lab {
    let c = (q[1] * q[1] + q[2] * q[2]).sqrt();
    let s = if c > 1e-6 {
        (0.045 * c).ln_1p() / (0.045 * c)
    } else {
        1.0
    };
    [q[0], q[1] * s, q[2] * s]
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
    cost_of: &CellCost,
    (cols, radius, min_uses): (usize, usize, u32),
) -> Result<Vec<Option<(u32, Transform)>>, Error> {
    let n = library.len();
    let cells = cell_means.len();
    // The caller has checked that the grid has room: n * min_uses <= cells.
    let m = min_uses as usize;
    let outside: Vec<f32> = outside.iter().map(|&s| unit(s)).collect();
    let value = |t: u32, c: u32| outside[c as usize] - unit(cost_of(c, t).0);
    let seen = (SHORTLIST_PAIRS / n.max(1))
        .clamp(NEAREST_CELLS, SHORTLIST_CELLS)
        .min(cells);
    let near = nearest_by_offset(cell_means, &outside, library.means(), seen);
    let mut lists: Vec<Vec<(u32, f32)>> = near
        .into_par_iter()
        .enumerate()
        .map(|(t, cells)| cells.into_iter().map(|c| (c, value(t as u32, c))).collect())
        .collect();
    for (t, c) in own_cells(&lists, m, cell_means, library.means()) {
        lists[t as usize].push((c, value(t, c)));
    }
    let cell_of =
        auction(&lists, cells, (cols, radius, m)).map_err(|t| Error::LibraryTooSmall {
            tiles: n,
            needed: n,
            hint: format!(
                "tile {} cannot be placed {min_uses} times within the repeat radius: lower \
                 min_uses or the repeat radius, or add cells",
                library.name(t)
            ),
        })?;
    let mut placed = vec![None; cells];
    for (copy, &cell) in cell_of.iter().enumerate() {
        let t = (copy / m) as u32;
        placed[cell as usize] = Some((t, cost_of(cell, t).1));
    }
    Ok(placed)
}

/// The auction: each copy's cell (copies of tile `t` are `t * m .. (t + 1) * m`), or the tile
/// whose copy found no cell it may take.
fn auction(
    lists: &Edges,
    cells: usize,
    (cols, radius, m): (usize, usize, usize),
) -> Result<Vec<u32>, u32> {
    let copies = lists.len() * m;
    let mut price = vec![0f32; cells];
    let mut owner = vec![NONE; cells];
    // Bidders: the copies, then the stand-ins for the cells left free.
    let mut cell_of = vec![NONE; cells];
    let mut cheapest: BinaryHeap<Reverse<(u32, u32)>> = BinaryHeap::new();
    let mut epsilon = (spread(lists) / 4.0).max(EPSILON);
    loop {
        owner.fill(NONE);
        cell_of.fill(NONE);
        cheapest.clear();
        cheapest.extend((0..cells as u32).map(|c| Reverse((price[c as usize].to_bits(), c))));
        let mut queue: VecDeque<u32> = (0..cells as u32).collect();
        while let Some(bidder) = queue.pop_front() {
            let (cell, margin) = if bidder as usize >= copies {
                // A stand-in takes the cheapest cell, raised to just past the next cheapest.
                let Some((p1, c1)) = pop_cheapest(&mut cheapest, &price) else {
                    break;
                };
                (c1, peek_cheapest(&mut cheapest, &price).unwrap_or(p1) - p1)
            } else {
                let t = bidder as usize / m;
                // A cell within the repeat radius of another copy of the tile is closed to it.
                let siblings = (t * m..(t + 1) * m).filter(|&s| s != bidder as usize);
                let near_sibling = |c: u32| {
                    m > 1
                        && siblings.clone().any(|s| {
                            cell_of[s] != NONE
                                && within(cell_of[s] as usize, c as usize, cols, radius)
                        })
                };
                let (best, second) = best_two(lists[t].iter().copied(), &price, near_sibling);
                if best.1 == NONE {
                    return Err(t as u32);
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

/// Pairs `(tile, cell)` that give each copy a cell of its own, for tiles whose edges do not
/// already: a matching greedy by value over each tile's best edges, then each copy left over takes the
/// nearest cell by mean colour still free. With them among the edges the auction always ends.
fn own_cells(
    lists: &[Vec<(u32, f32)>],
    m: usize,
    cell_means: &[Lab],
    tile_means: &[Lab],
) -> Vec<(u32, u32)> {
    let cells = cell_means.len();
    let mut taken = vec![false; cells];
    let mut placed = vec![0usize; lists.len()];
    // Greedy by value over each tile's few best edges...
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
        if placed[t as usize] < m && !taken[c as usize] {
            taken[c as usize] = true;
            placed[t as usize] += 1;
        }
    }
    // ...then each tile still short takes the free cells its list names, in list order...
    for (t, list) in lists.iter().enumerate() {
        for &(c, _) in list {
            if placed[t] == m {
                break;
            }
            if !taken[c as usize] {
                taken[c as usize] = true;
                placed[t] += 1;
            }
        }
    }
    // ...and the copies left over, in rounds: each takes the nearest of its 16 nearest free cells that
    // no nearer pair has taken, until none is left.
    let mut left: Vec<u32> = (0..lists.len())
        .flat_map(|t| std::iter::repeat_n(t as u32, m - placed[t]))
        .collect();
    let mut pairs = Vec::new();
    while !left.is_empty() {
        let free: Vec<u32> = (0..cells as u32).filter(|&c| !taken[c as usize]).collect();
        if free.is_empty() {
            break;
        }
        let tree = KdTree::new(
            &free
                .iter()
                .map(|&c| cell_means[c as usize])
                .collect::<Vec<_>>(),
        );
        let mut near: Vec<(f32, u32, u32)> = left
            .par_iter()
            .enumerate()
            .map_init(Vec::new, |scratch, (i, &t)| {
                tree.nearest(&tile_means[t as usize], 16.min(free.len()), scratch);
                scratch
                    .iter()
                    .map(|&(d2, j)| (d2, i as u32, free[j as usize]))
                    .collect::<Vec<_>>()
            })
            .flatten()
            .collect();
        near.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
        let mut done = vec![false; left.len()];
        for (_, i, c) in near {
            if !done[i as usize] && !taken[c as usize] {
                done[i as usize] = true;
                taken[c as usize] = true;
                pairs.push((left[i as usize], c));
            }
        }
        let mut i = 0;
        left.retain(|_| {
            i += 1;
            !done[i - 1]
        });
    }
    pairs
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

/// Whether cells `a` and `b` of a grid `cols` wide are within `radius` cells of each other.
fn within(a: usize, b: usize, cols: usize, radius: usize) -> bool {
    let (ay, ax) = (a / cols, a % cols);
    let (by, bx) = (b / cols, b % cols);
    ay.abs_diff(by) <= radius && ax.abs_diff(bx) <= radius
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(seed: u64, len: usize) -> Vec<f32> {
        let mut s = seed;
        (0..len)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 33) % 1000) as f32 / 20.0 - 25.0
            })
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
                let cell_of = auction(&lists, cells, (cells, 0, 1)).expect("a cell for each");
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
        let cell_of = auction(&lists, cells, (cols, 1, 2)).expect("room for every copy");
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
        let pairs = own_cells(&lists, 1, &means, &means[..10]);
        let mut cells: Vec<u32> = pairs.iter().map(|p| p.1).collect();
        cells.push(0);
        cells.sort();
        cells.dedup();
        assert_eq!(pairs.len(), 9);
        assert_eq!(cells.len(), 10);
    }
}
