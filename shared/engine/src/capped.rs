//! Tiles to cells under a cap on each tile's uses, and a floor, as one assignment over the whole
//! grid: Bertsekas's forward auction with ε-scaling, the cells bidding.
//!
//! Each tile has `cap` slots, each with its own price; a cell values every slot of a tile at
//! minus the tile's cost there (the square root of the matcher's score, so that the total is a
//! sum of colour distances, as the mosaic's mean colour difference is). A cell bids for the
//! slot worth most to it at current prices, raising its price by the margin over the next best
//! slot plus ε, and the cell it displaces bids again. The slots no cell needs are held by
//! stand-ins, one per spare slot, that value every slot at zero and so bid for the cheapest
//! (kept in a heap); a tile holds at most `cap - floor` of them, so that every tile ends with at
//! least `floor` cells. With as many bidders as slots, prices carry over from one ε to the
//! next, and the last phase ends within [`EPSILON`] per cell of the best assignment over the
//! cells' candidate lists.
//!
//! The lists grow while they may hide a better slot: a tile outside a cell's list costs at
//! least what the last of its ranked candidates costs, and prices are never negative, so a cell
//! whose best slot is worth less than that looks wider (up to [`MAX_WIDTH`] candidates). Each
//! list also names a tile of a feasible assignment the caller made first, so the auction always
//! has an assignment to find. A cell never takes a tile another cell holds within the repeat
//! radius, as the matcher keeps it.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use rayon::prelude::*;

use crate::fair::unit;
use crate::transform::Transform;

/// The last phase's ε, in units of colour difference: the assignment is optimal over the lists
/// within this much per cell.
const EPSILON: f32 = 0.02;
/// Each phase divides ε by this.
const EPSILON_STEP: f32 = 6.0;
/// A list that may hide a better slot grows this many times longer.
const GROWTH: usize = 4;
/// Widest list a cell grows to: [`MAX_ENTRIES`] shared among the cells, within these bounds.
/// Time grows with the width: on 10,880 cells and 7,425 tiles at most twice each, lists of
/// 128, 256, 384, 512 and 1,536 end 5.8, 4.2, 3.0, 2.4 and 0.6 % above the exact optimum, in
/// 1.8, 2.7, 3.3, 4.6 and 9.3 s.
const MAX_WIDTH: usize = 384;
const MIN_WIDTH: usize = 64;
const MAX_ENTRIES: usize = 4 << 20;
/// Bids the whole auction may take per bidder. Past them (a price war among cells whose lists
/// share too few slots, in a grid about as large as the library's uses), the assignment of the
/// last finished phase stands, or the caller's feasible one before the first. On 200,000 cells
/// of 100,000 tiles at most twice, the five phases take 140 or more.
const BIDS_PER_BIDDER: usize = 120;

const NONE: u32 = u32::MAX;

/// Candidate tiles of a cell with their cost and the transform they take, least cost first (the
/// matcher's ranking).
pub(crate) type Ranked = Vec<(f32, u32, Transform)>;

/// A cell's candidates as the auction reads them: the ranked list (by cost, least first), and
/// the cost of the last
/// candidate the ranking reached (no tile outside the list costs less), or infinity when the
/// list holds the whole library.
pub(crate) struct Candidates {
    pub(crate) list: Ranked,
    pub(crate) reach: f32,
}

/// The shape of the problem: tiles, the cap and floor on each one's uses, and the grid's width
/// and repeat radius.
#[derive(Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) tiles: usize,
    pub(crate) cap: usize,
    pub(crate) floor: usize,
    pub(crate) cols: usize,
    pub(crate) radius: usize,
}

/// The cheapest of the `cap` slots from `first` (the first of equal prices; `NONE` when every
/// price is infinite) with its price, and the next cheapest price.
fn scan_two_cheapest(price: &[f32], first: usize, cap: usize) -> ((f32, u32), f32) {
    let (mut best, mut second) = ((f32::INFINITY, NONE), f32::INFINITY);
    for (s, &p) in price.iter().enumerate().skip(first).take(cap) {
        if p < best.0 {
            second = best.0;
            best = (p, s as u32);
        } else if p < second {
            second = p;
        }
    }
    (best, second)
}

/// Slots a tile may have before its two cheapest are kept in a [`SlotTree`] rather than found
/// by a scan of its slots at each bid.
const SCANNED_SLOTS: usize = 64;

/// Each tile's cheapest slot (the first of equal prices) and next cheapest price, as a scan of
/// its slots finds them, kept in a tournament tree over each tile's slots: a change and a
/// look in `O(log cap)` rather than `O(cap)`, for caps in the thousands.
struct SlotTree {
    /// Slots a tile has.
    cap: usize,
    /// Leaves a tile's tree has (its slots, to the next power of two).
    width: usize,
    /// Each tile's `2 * width` nodes, the root at 1: the least price, its slot (`NONE` for an
    /// infinite one) and the second least price below the node.
    nodes: Vec<(f32, u32, f32)>,
}

impl SlotTree {
    /// Every slot at price 0, as an auction starts.
    fn new(tiles: usize, cap: usize) -> SlotTree {
        let width = cap.next_power_of_two();
        let mut tree = SlotTree {
            cap,
            width,
            nodes: vec![(f32::INFINITY, NONE, f32::INFINITY); tiles * 2 * width],
        };
        for t in 0..tiles {
            for i in 0..cap {
                tree.nodes[t * 2 * width + width + i] = (0.0, (t * cap + i) as u32, f32::INFINITY);
            }
            for node in (1..width).rev() {
                tree.join(t, node);
            }
        }
        tree
    }

    /// Node `node` of tile `t` from its two children.
    fn join(&mut self, t: usize, node: usize) {
        let base = t * 2 * self.width;
        let (a, b) = (self.nodes[base + 2 * node], self.nodes[base + 2 * node + 1]);
        let (won, lost) = if b.0 < a.0 { (b, a) } else { (a, b) };
        self.nodes[base + node] = (won.0, won.1, lost.0.min(a.2).min(b.2));
    }

    /// Slot `slot` now costs `price`.
    fn set(&mut self, slot: usize, price: f32) {
        let (t, i) = (slot / self.cap, slot % self.cap);
        let base = t * 2 * self.width;
        let at = if price < f32::INFINITY {
            slot as u32
        } else {
            NONE
        };
        self.nodes[base + self.width + i] = (price, at, f32::INFINITY);
        let mut node = (self.width + i) / 2;
        while node >= 1 {
            self.join(t, node);
            node /= 2;
        }
    }

    /// Tile `t`'s cheapest slot with its price, and the next cheapest price.
    fn two_cheapest(&self, t: usize) -> ((f32, u32), f32) {
        let (least, slot, second) = self.nodes[t * 2 * self.width + 1];
        ((least, slot), second)
    }
}

/// The auction's state in one phase.
struct Market<'a> {
    limits: Limits,
    cells: &'a mut [Candidates],
    widen: &'a (dyn Fn(usize, usize) -> Candidates + Sync),
    price: Vec<f32>,
    /// Each slot's bidder (cells first, then stand-ins), or [`NONE`].
    owner: Vec<u32>,
    /// Each cell's slot and the index of its tile in its list.
    held: Vec<(u32, u32)>,
    /// Each cell's tile, for the repeat radius.
    tile_at: Vec<u32>,
    /// Stand-ins on each tile.
    stand_ins: Vec<u32>,
    /// Slots by price, for the stand-ins, one entry each at most. Prices only rise, so an
    /// entry's price is at most its slot's: a stale one is put back at its price when it comes
    /// up. Slots of tiles that hold all the stand-ins they may are left out (`queued` false).
    cheapest: BinaryHeap<Reverse<(u32, u32)>>,
    queued: Vec<bool>,
    /// Each tile's slots left out of the heap since it was last filled.
    dropped: Vec<Vec<u32>>,
    epsilon: f32,
    /// Tiles within the repeat radius of the bidding cell.
    near: Vec<u32>,
    /// Each cell's candidates as (value, tile), in the order of its list.
    values: Vec<Vec<(f32, u32)>>,
    /// Each tile's least slot price.
    tile_min: Vec<f32>,
    /// Each tile's two cheapest slots, kept as its slots change when a tile has many.
    slot_tree: Option<SlotTree>,
    /// Widest list a cell grows to.
    max_width: usize,
}

/// Each cell's index into its list: the assignment of most total value, within ε per cell,
/// over the lists as they grew (or of the last finished phase, when the bids ran out). `None`
/// when no phase finished (a repeat radius that leaves some cell nothing, in practice), so that
/// the caller keeps its own assignment.
pub(crate) fn assign(
    cells: &mut [Candidates],
    limits: Limits,
    widen: &(dyn Fn(usize, usize) -> Candidates + Sync),
) -> Option<Vec<u32>> {
    assign_within(cells, limits, widen, BIDS_PER_BIDDER)
}

/// [`assign`], with `budget` bids per bidder.
fn assign_within(
    cells: &mut [Candidates],
    limits: Limits,
    widen: &(dyn Fn(usize, usize) -> Candidates + Sync),
    budget: usize,
) -> Option<Vec<u32>> {
    let n = cells.len();
    let slots = limits.tiles * limits.cap;
    let spread = cells
        .iter()
        .flat_map(|c| c.list.iter())
        .fold(0f32, |a, c| a.max(unit(c.0)));
    let mut market = Market {
        limits,
        cells,
        widen,
        price: vec![0.0; slots],
        owner: vec![NONE; slots],
        held: vec![(NONE, NONE); n],
        tile_at: vec![NONE; n],
        stand_ins: vec![0; limits.tiles],
        cheapest: BinaryHeap::new(),
        queued: vec![true; slots],
        dropped: vec![Vec::new(); limits.tiles],
        epsilon: first_epsilon(spread),
        near: Vec::new(),
        values: Vec::new(),
        tile_min: vec![0.0; limits.tiles],
        slot_tree: (limits.cap > SCANNED_SLOTS).then(|| SlotTree::new(limits.tiles, limits.cap)),
        max_width: (MAX_ENTRIES / n.max(1)).clamp(MIN_WIDTH, MAX_WIDTH),
    };
    market.values = market.cells.iter().map(|c| values_of(&c.list)).collect();
    let most = budget * slots;
    let mut bids = 0usize;
    // Each cell's tile when the last phase finished.
    let mut kept: Option<Vec<u32>> = None;
    let mut first = true;
    loop {
        if market.phase(first, &mut bids, most).is_none() {
            return kept.and_then(|tiles| market.indices(&tiles));
        }
        first = false;
        if market.epsilon <= EPSILON {
            break;
        }
        kept = Some(market.tile_at.clone());
        market.epsilon = (market.epsilon / EPSILON_STEP).max(EPSILON);
    }
    Some(market.held.iter().map(|h| h.1).collect())
}

/// The first phase's ε: about a quarter of the largest cost, and [`EPSILON`] times a power of
/// [`EPSILON_STEP`], so that the last phase is not a short step.
fn first_epsilon(spread: f32) -> f32 {
    let mut epsilon = EPSILON;
    while epsilon * EPSILON_STEP <= spread / 4.0 {
        epsilon *= EPSILON_STEP;
    }
    epsilon
}

/// A list's entries as (value, tile): minus the square root of the cost.
fn values_of(list: &Ranked) -> Vec<(f32, u32)> {
    list.iter()
        .map(|&(score, t, _)| (-unit(score), t))
        .collect()
}

/// What a cell does on its turn: bid, or first look wider.
enum Turn {
    Bid(Bid),
    Widen,
}

/// A bid: the slot, the index of its tile in the bidding cell's list (a stand-in has none),
/// and the price it is raised to.
struct Bid {
    slot: u32,
    index: u32,
    price: f32,
}

impl Market<'_> {
    /// One phase at the current ε, counting its bids into `bids`; `None` when they pass `most`
    /// or a cell has no tile open to it. Cells whose lists need widening wait, and are widened
    /// together when the others are done.
    fn phase(&mut self, first: bool, bids: &mut usize, most: usize) -> Option<()> {
        let cells = self.held.len();
        let mut queue = self.release(first);
        let mut wide = Vec::new();
        loop {
            if queue.is_empty() && !wide.is_empty() {
                self.widen(&wide);
                queue.extend(wide.drain(..));
            }
            let Some(bidder) = queue.pop_front() else {
                return Some(());
            };
            *bids += 1;
            if *bids > most {
                return None;
            }
            let bid = if (bidder as usize) < cells {
                match self.cell_bid(bidder as usize)? {
                    Turn::Bid(bid) => bid,
                    Turn::Widen => {
                        wide.push(bidder);
                        continue;
                    }
                }
            } else {
                self.stand_in_bid()?
            };
            if let Some(out) = self.take(bidder, bid) {
                queue.push_back(out);
            }
        }
    }

    /// The bidders of a new phase: every one at first; after that, those whose slot is no
    /// longer within ε of their best at current prices, which give it up. The others keep
    /// theirs, so a phase mends the last one's assignment rather than making its own.
    fn release(&mut self, first: bool) -> VecDeque<u32> {
        let cells = self.held.len();
        self.cheapest.clear();
        let entries =
            (0..self.price.len() as u32).map(|s| Reverse((self.price[s as usize].to_bits(), s)));
        self.cheapest.extend(entries);
        self.queued.fill(true);
        self.dropped.iter_mut().for_each(Vec::clear);
        if first {
            return (0..self.price.len() as u32).collect();
        }
        for cell in 0..cells {
            let (slot, index) = self.held[cell];
            let values = &self.values[cell];
            let own = values[index as usize].0 - self.price[slot as usize];
            let best = values
                .iter()
                .map(|&(value, t)| value - self.tile_min[t as usize])
                .fold(f32::NEG_INFINITY, f32::max);
            if own < best - self.epsilon {
                self.owner[slot as usize] = NONE;
                self.held[cell] = (NONE, NONE);
                self.tile_at[cell] = NONE;
            }
        }
        let cap = self.limits.cap;
        let least = self.price.iter().fold(f32::INFINITY, |a, &p| a.min(p));
        let mut placed = vec![false; self.price.len()];
        for s in 0..self.price.len() {
            let o = self.owner[s] as usize;
            if o == NONE as usize {
                continue;
            }
            if o >= cells && self.price[s] > least + self.epsilon {
                self.owner[s] = NONE;
                self.stand_ins[s / cap] -= 1;
                continue;
            }
            placed[o] = true;
        }
        (0..self.price.len() as u32)
            .filter(|&b| !placed[b as usize])
            .collect()
    }

    /// The cheapest and next cheapest slot of tile `t`, with their prices.
    fn two_cheapest(&self, t: u32) -> ((f32, u32), f32) {
        match &self.slot_tree {
            Some(tree) => tree.two_cheapest(t as usize),
            None => scan_two_cheapest(&self.price, t as usize * self.limits.cap, self.limits.cap),
        }
    }

    /// The tiles of the cells within the repeat radius of `cell`, into `self.near`.
    fn gather_near(&mut self, cell: usize) {
        self.near.clear();
        let Limits { cols, radius, .. } = self.limits;
        if radius == 0 {
            return;
        }
        let rows = self.tile_at.len() / cols;
        let (y, x) = (cell / cols, cell % cols);
        for ny in y.saturating_sub(radius)..(y + radius + 1).min(rows) {
            for nx in x.saturating_sub(radius)..(x + radius + 1).min(cols) {
                let t = self.tile_at[ny * cols + nx];
                if t != NONE && ny * cols + nx != cell {
                    self.near.push(t);
                }
            }
        }
        if self.near.len() > 16 {
            self.near.sort_unstable();
        }
    }

    fn is_near(&self, t: u32) -> bool {
        if self.near.len() > 16 {
            self.near.binary_search(&t).is_ok()
        } else {
            self.near.contains(&t)
        }
    }

    /// The bid of cell `cell`: its best slot and the margin over its next best; or, while a
    /// tile outside its list might be worth more, that it must look wider first. `None` when no
    /// tile of the library is open to it under the repeat radius.
    fn cell_bid(&mut self, cell: usize) -> Option<Turn> {
        self.gather_near(cell);
        let (mut best, mut second) = self.best_two(cell, false);
        if best.1 != NONE && self.is_near(self.cells[cell].list[best.1 as usize].1) {
            (best, second) = self.best_two(cell, true);
        }
        let Candidates { reach, ref list } = self.cells[cell];
        let width = list.len();
        // A tile beyond the list is worth at most minus its reach, at price zero.
        if best.0 < -unit(reach) && reach.is_finite() && width < self.max_width {
            return Some(Turn::Widen);
        }
        if best.1 == NONE {
            return None;
        }
        let (_, t, _) = self.cells[cell].list[best.1 as usize];
        let ((price, slot), next_price) = self.two_cheapest(t);
        // The same tile's next cheapest slot may be the next best.
        let second = second.max(best.0 + price - next_price);
        let margin = if second == f32::NEG_INFINITY {
            0.0
        } else {
            best.0 - second
        };
        Some(Turn::Bid(Bid {
            slot,
            index: best.1,
            price: price + margin + self.epsilon,
        }))
    }

    /// Each cell's index of tile `tiles[cell]` in its list (lists only grow, so it is there).
    fn indices(&self, tiles: &[u32]) -> Option<Vec<u32>> {
        let find = |(values, &t): (&Vec<(f32, u32)>, &u32)| {
            values.iter().position(|v| v.1 == t).map(|i| i as u32)
        };
        self.values.iter().zip(tiles).map(find).collect()
    }

    /// Makes the lists of `wide` [`GROWTH`] times longer (up to the widest), all at once.
    fn widen(&mut self, wide: &[u32]) {
        let (widen, cells, max) = (self.widen, &*self.cells, self.max_width);
        let lists: Vec<Candidates> = wide
            .par_iter()
            .map(|&c| widen(c as usize, (cells[c as usize].list.len() * GROWTH).min(max)))
            .collect();
        for (&c, list) in wide.iter().zip(lists) {
            self.values[c as usize] = values_of(&list.list);
            self.cells[c as usize] = list;
        }
    }

    /// The candidate of `cell` worth most at current prices (its worth and index in the list)
    /// and the worth of the next; with `open`, only tiles outside the repeat radius count.
    fn best_two(&self, cell: usize, open: bool) -> ((f32, u32), f32) {
        let (mut best, mut second) = ((f32::NEG_INFINITY, NONE), f32::NEG_INFINITY);
        let mins = &self.tile_min;
        for (i, &(value, t)) in self.values[cell].iter().enumerate() {
            // Sorted by value, and prices are never negative: nothing further is worth more.
            if value <= second {
                break;
            }
            let worth = value - mins[t as usize];
            if worth > second && !(open && self.is_near(t)) {
                if worth > best.0 {
                    second = best.0;
                    best = (worth, i as u32);
                } else {
                    second = worth;
                }
            }
        }
        (best, second)
    }

    /// Sets tile `t`'s least slot price after a change.
    fn price_changed(&mut self, t: u32) {
        self.tile_min[t as usize] = self.two_cheapest(t).0.0;
    }

    /// The cheapest slot a stand-in may hold, left on the heap.
    fn cheapest_open(&mut self) -> Option<u32> {
        let room = (self.limits.cap - self.limits.floor) as u32;
        loop {
            let &Reverse((bits, s)) = self.cheapest.peek()?;
            let price = self.price[s as usize].to_bits();
            if price != bits {
                self.cheapest.pop();
                self.cheapest.push(Reverse((price, s)));
            } else if self.stand_ins[s as usize / self.limits.cap] >= room {
                self.cheapest.pop();
                self.queued[s as usize] = false;
                self.dropped[s as usize / self.limits.cap].push(s);
            } else {
                return Some(s);
            }
        }
    }

    /// A stand-in's bid: the cheapest slot it may hold, raised to just past the next cheapest.
    /// The slot leaves the heap, and [`Market::take`] puts it back at its new price.
    fn stand_in_bid(&mut self) -> Option<Bid> {
        let slot = self.cheapest_open()?;
        self.cheapest.pop();
        let p1 = self.price[slot as usize];
        let p2 = self.cheapest_open().map_or(p1, |s| self.price[s as usize]);
        Some(Bid {
            slot,
            index: NONE,
            price: p2 + self.epsilon,
        })
    }

    /// Gives `bid.slot` to `bidder` at the bid's price; the bidder it displaces, if any.
    fn take(&mut self, bidder: u32, bid: Bid) -> Option<u32> {
        let cells = self.held.len();
        let cap = self.limits.cap;
        let (s, t) = (bid.slot as usize, bid.slot / cap as u32);
        self.price[s] = bid.price;
        if let Some(tree) = &mut self.slot_tree {
            tree.set(s, bid.price);
        }
        self.price_changed(t);
        let out = std::mem::replace(&mut self.owner[s], bidder);
        if out != NONE {
            if (out as usize) < cells {
                self.held[out as usize] = (NONE, NONE);
                self.tile_at[out as usize] = NONE;
            } else {
                self.stand_ins[t as usize] -= 1;
                // The tile may take a stand-in again: its slots go back on the heap.
                for s in std::mem::take(&mut self.dropped[t as usize]) {
                    if !std::mem::replace(&mut self.queued[s as usize], true) {
                        self.cheapest
                            .push(Reverse((self.price[s as usize].to_bits(), s)));
                    }
                }
            }
        }
        if (bidder as usize) < cells {
            self.held[bidder as usize] = (bid.slot, bid.index);
            self.tile_at[bidder as usize] = t;
        } else {
            self.stand_ins[t as usize] += 1;
            self.cheapest.push(Reverse((bid.price.to_bits(), bid.slot)));
        }
        (out != NONE).then_some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Costs of `tiles` tiles in `cells` cells, pseudo-random.
    fn costs(seed: u64, cells: usize, tiles: usize) -> Vec<Vec<f32>> {
        let mut state = crate::seeded(seed);
        (0..cells)
            .map(|_| {
                (0..tiles)
                    .map(|_| ((state() >> 33) % 400) as f32 + 1.0)
                    .collect()
            })
            .collect()
    }

    /// Every cell's whole library as its list, by cost.
    fn lists(costs: &[Vec<f32>]) -> Vec<Candidates> {
        costs
            .iter()
            .map(|row| {
                let mut list: Ranked = row
                    .iter()
                    .enumerate()
                    .map(|(t, &c)| (c, t as u32, Transform::NONE))
                    .collect();
                list.sort_by(|a, b| a.0.total_cmp(&b.0));
                Candidates {
                    list,
                    reach: f32::INFINITY,
                }
            })
            .collect()
    }

    /// Each tile's uses in the assignment `index` of the lists `cands`.
    fn uses(cands: &[Candidates], index: &[u32], tiles: usize) -> Vec<usize> {
        let mut uses = vec![0; tiles];
        for (c, &i) in cands.iter().zip(index) {
            uses[c.list[i as usize].1 as usize] += 1;
        }
        uses
    }

    /// The least total cost of a tile per cell, each at most `cap` and at least `floor` times,
    /// by trying every way.
    fn brute_force(costs: &[Vec<f32>], tiles: usize, (cap, floor): (usize, usize)) -> f32 {
        let cells = costs.len();
        let mut best = f32::INFINITY;
        for code in 0..tiles.pow(cells as u32) {
            let mut uses = vec![0; tiles];
            let (mut c, mut total) = (code, 0.0);
            for row in costs {
                uses[c % tiles] += 1;
                total += unit(row[c % tiles]);
                c /= tiles;
            }
            if uses.iter().all(|&u| u <= cap && u >= floor) {
                best = best.min(total);
            }
        }
        best
    }

    /// The auction's assignment keeps the cap and the floor and costs at most ε per cell more
    /// than the best one, found by trying every way.
    #[test]
    fn the_auction_finds_the_best_assignment_under_a_cap_and_a_floor() {
        let (cells, tiles) = (7, 4);
        for seed in 0..12 {
            for (cap, floor) in [(2, 0), (2, 1), (3, 1)] {
                let costs = costs(seed, cells, tiles);
                let mut cands = lists(&costs);
                let limits = Limits {
                    tiles,
                    cap,
                    floor,
                    cols: cells,
                    radius: 0,
                };
                let widen = |_: usize, _: usize| unreachable!("every list holds every tile");
                let index = assign(&mut cands, limits, &widen).expect("an assignment");
                let uses = uses(&cands, &index, tiles);
                let total: f32 = cands
                    .iter()
                    .zip(&index)
                    .map(|(c, &i)| unit(c.list[i as usize].0))
                    .sum();
                assert!(uses.iter().all(|&u| u <= cap && u >= floor), "{uses:?}");
                let best = brute_force(&costs, tiles, (cap, floor));
                assert!(
                    total <= best + cells as f32 * EPSILON + 1e-3,
                    "seed {seed}, cap {cap}, floor {floor}: {total} against {best}"
                );
            }
        }
    }

    /// The slot tree answers as a scan of a tile's slots does, ties and infinite prices
    /// included, through any order of changes.
    #[test]
    fn the_slot_tree_answers_as_a_scan_does() {
        let (tiles, cap) = (3, 100);
        let mut tree = SlotTree::new(tiles, cap);
        let mut price = vec![0.0f32; tiles * cap];
        let mut state = crate::seeded(7);
        for step in 0..5000 {
            let s = ((state() >> 33) % (tiles * cap) as u64) as usize;
            // Few distinct prices, so that ties are common; now and then an infinite one.
            let p = match step % 97 {
                0 => f32::INFINITY,
                _ => ((state() >> 33) % 20) as f32 * 0.25,
            };
            price[s] = p;
            tree.set(s, p);
            for t in 0..tiles {
                let scanned = scan_two_cheapest(&price, t * cap, cap);
                assert_eq!(tree.two_cheapest(t), scanned, "step {step}, tile {t}");
            }
        }
    }

    /// An auction out of bids keeps the assignment of its last finished phase, which keeps
    /// the cap and the floor, or gives none before the first.
    #[test]
    fn an_auction_out_of_bids_keeps_its_last_phase() {
        let (cells, tiles, cap, floor) = (40, 24, 2, 1);
        let costs = costs(3, cells, tiles);
        let limits = Limits {
            tiles,
            cap,
            floor,
            cols: cells,
            radius: 0,
        };
        let widen = |_: usize, _: usize| unreachable!("every list holds every tile");
        let (mut kept, mut none) = (0, 0);
        for budget in 1..12 {
            let mut cands = lists(&costs);
            let Some(index) = assign_within(&mut cands, limits, &widen, budget) else {
                none += 1;
                continue;
            };
            kept += 1;
            let uses = uses(&cands, &index, tiles);
            assert!(uses.iter().all(|&u| u <= cap && u >= floor), "{uses:?}");
        }
        assert!(kept > 0 && none > 0, "{kept} kept, {none} none");
    }

    /// No two cells within the repeat radius take the same tile.
    #[test]
    fn the_auction_keeps_the_repeat_radius() {
        let (cols, rows, tiles) = (6, 5, 12);
        let costs = costs(7, cols * rows, tiles);
        let mut cands = lists(&costs);
        let limits = Limits {
            tiles,
            cap: 3,
            floor: 1,
            cols,
            radius: 1,
        };
        let widen = |_: usize, _: usize| unreachable!("every list holds every tile");
        let index = assign(&mut cands, limits, &widen).expect("an assignment");
        let tile: Vec<u32> = cands
            .iter()
            .zip(&index)
            .map(|(c, &i)| c.list[i as usize].1)
            .collect();
        for a in 0..tile.len() {
            for b in a + 1..tile.len() {
                let near = (a / cols).abs_diff(b / cols) <= 1 && (a % cols).abs_diff(b % cols) <= 1;
                assert!(!(near && tile[a] == tile[b]), "cells {a} and {b}");
            }
        }
        let mut uses = vec![0; tiles];
        tile.iter().for_each(|&t| uses[t as usize] += 1);
        assert!(uses.iter().all(|&u| (1..=3).contains(&u)), "{uses:?}");
    }
}
