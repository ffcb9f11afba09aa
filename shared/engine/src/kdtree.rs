//! A static k-d tree of `D` dimensions (3 by default: tile mean colours in Lab), for
//! k-nearest-neighbour candidate search. Built once per library (leaves of a few points, split at
//! the median of the widest axis); ties are broken by point index so results never depend on
//! build order.

use crate::color::dist2;

pub struct KdTree<const D: usize = 3> {
    /// Point ids reordered so that every leaf is a contiguous run.
    ids: Vec<u32>,
    /// Each point by its id, for the warm start of [`KdTree::nearest`].
    by_id: Vec<[f32; D]>,
    nodes: Vec<Node>,
    /// Each leaf's points by dimension, one lane per point in `ids` order (lanes past the leaf's
    /// end unused), so that a leaf's distances are computed at once in vector registers.
    lanes: Vec<[[f32; LEAF]; D]>,
    /// With [`KdTree::with_weights`]: each point's weight (in `ids` order) and the largest
    /// weight under each node.
    weights: Vec<f32>,
    node_max: Vec<f32>,
    /// With weights, for [`KdTree::set_weight`]: each node's parent, each position's leaf, and
    /// each point's position in `ids`.
    parent: Vec<u32>,
    leaf_of: Vec<u32>,
    position: Vec<u32>,
}

enum Node {
    Leaf {
        start: u32,
        end: u32,
        /// Index in [`KdTree::lanes`].
        block: u32,
    },
    Split {
        axis: u8,
        value: f32,
        left: u32,
        right: u32,
    },
}

const LEAF: usize = 8;

impl<const D: usize> KdTree<D> {
    pub fn new(means: &[[f32; D]]) -> Self {
        let mut items: Vec<([f32; D], u32)> = means
            .iter()
            .enumerate()
            .map(|(i, m)| (*m, i as u32))
            .collect();
        let (mut nodes, mut lanes) = (Vec::new(), Vec::new());
        if !items.is_empty() {
            build(&mut items, 0, &mut nodes, &mut lanes);
        }
        KdTree {
            ids: items.iter().map(|p| p.1).collect(),
            by_id: means.to_vec(),
            nodes,
            lanes,
            weights: Vec::new(),
            node_max: Vec::new(),
            parent: Vec::new(),
            leaf_of: Vec::new(),
            position: Vec::new(),
        }
    }

    /// A tree for [`KdTree::least_offset`]: point `i` at `points[i]` with weight `weights[i]`.
    pub fn with_weights(points: &[[f32; D]], weights: &[f32]) -> Self {
        let mut tree = KdTree::new(points);
        tree.weights = tree.ids.iter().map(|&i| weights[i as usize]).collect();
        tree.node_max = vec![f32::NEG_INFINITY; tree.nodes.len()];
        if !tree.nodes.is_empty() {
            tree.fill_max(0);
        }
        tree.parent = vec![u32::MAX; tree.nodes.len()];
        tree.leaf_of = vec![0; tree.ids.len()];
        for (i, node) in tree.nodes.iter().enumerate() {
            match *node {
                Node::Leaf { start, end, .. } => {
                    tree.leaf_of[start as usize..end as usize].fill(i as u32)
                }
                Node::Split { left, right, .. } => {
                    tree.parent[left as usize] = i as u32;
                    tree.parent[right as usize] = i as u32;
                }
            }
        }
        tree.position = vec![0; tree.ids.len()];
        for (at, &id) in tree.ids.iter().enumerate() {
            tree.position[id as usize] = at as u32;
        }
        tree
    }

    /// Sets point `id`'s weight, in a tree made by [`KdTree::with_weights`]. A weight of minus
    /// infinity takes the point out of [`KdTree::least_offset`]'s answers.
    pub fn set_weight(&mut self, id: u32, weight: f32) {
        let at = self.position[id as usize] as usize;
        self.weights[at] = weight;
        let mut node = self.leaf_of[at];
        while node != u32::MAX {
            let max = self.max_under(node);
            if self.node_max[node as usize] == max {
                return;
            }
            self.node_max[node as usize] = max;
            node = self.parent[node as usize];
        }
    }

    fn fill_max(&mut self, node: u32) -> f32 {
        if let Node::Split { left, right, .. } = self.nodes[node as usize] {
            self.fill_max(left);
            self.fill_max(right);
        }
        let max = self.max_under(node);
        self.node_max[node as usize] = max;
        max
    }

    /// The largest weight under `node`: its leaf's, or its children's `node_max`.
    fn max_under(&self, node: u32) -> f32 {
        match self.nodes[node as usize] {
            Node::Leaf { start, end, .. } => self.weights[start as usize..end as usize]
                .iter()
                .copied()
                .fold(f32::NEG_INFINITY, f32::max),
            Node::Split { left, right, .. } => {
                self.node_max[left as usize].max(self.node_max[right as usize])
            }
        }
    }

    /// The `k` points of least Euclidean distance from `q` less their weight, least first, as
    /// `(key, id)`. The tree must have been made by [`KdTree::with_weights`].
    pub fn least_offset(&self, q: &[f32; D], k: usize, out: &mut Vec<(f32, u32)>) {
        out.clear();
        if k == 0 || self.nodes.is_empty() || self.node_max.is_empty() {
            return;
        }
        self.search_offset(0, q, 0.0, k, out);
        settle(out, k);
    }

    fn search_offset(
        &self,
        node: u32,
        q: &[f32; D],
        plane: f32,
        k: usize,
        best: &mut Vec<(f32, u32)>,
    ) {
        // No point under this node is nearer than `plane`, nor weighs more than its maximum
        // (none counts when that is minus infinity).
        let max = self.node_max[node as usize];
        if max == f32::NEG_INFINITY || best.len() == k && plane - max >= best[k - 1].0 {
            return;
        }
        match self.nodes[node as usize] {
            Node::Leaf { start, end, block } => {
                let d = self.leaf_dist2(block, q);
                for (i, &d) in (start as usize..end as usize).zip(&d) {
                    if self.weights[i] > f32::NEG_INFINITY {
                        insert(best, k, (d.sqrt() - self.weights[i], self.ids[i]));
                    }
                }
            }
            Node::Split { .. } => {
                let (near, far, _, diff) = self.sides(node, q);
                self.search_offset(near, q, plane, k, best);
                self.search_offset(far, q, plane.max(diff.abs()), k, best);
            }
        }
    }

    /// The `k` nearest points to `q` by Euclidean distance, nearest first, as `(d2, id)`.
    ///
    /// What `out` holds on entry is a warm start: when it names `k` points (a neighbouring
    /// cell's answer, usually), they are `k` points within the farthest of them from `q`, so the
    /// search looks no farther. The answer is the one a search from nothing gives.
    pub fn nearest(&self, q: &[f32; D], k: usize, out: &mut Vec<(f32, u32)>) {
        let mut bound = f32::INFINITY;
        if k > 0 && out.len() == k {
            let mut far = 0f32;
            for &(_, id) in out.iter() {
                match self.by_id.get(id as usize) {
                    Some(p) => far = far.max(dist2(q, p)),
                    None => {
                        far = f32::INFINITY;
                        break;
                    }
                }
            }
            bound = far;
        }
        out.clear();
        if k == 0 || self.nodes.is_empty() {
            return;
        }
        if self.ids.len() <= SCAN_ALL {
            self.scan(q, k, bound, out);
            return;
        }
        self.search(0, q, &mut [0.0; D], (k, bound), out);
        settle(out, k);
    }

    /// [`KdTree::nearest`] in a small tree: every leaf's distances in vector registers, the
    /// points within `bound` kept, then the `k` least of them. For a few hundred points (in
    /// three dimensions as in seven) the descent's bookkeeping and sorted insertions cost more
    /// than the distances they save.
    fn scan(&self, q: &[f32; D], k: usize, bound: f32, out: &mut Vec<(f32, u32)>) {
        // Each point within reach as one number: a distance (never negative) orders as its
        // bits, so (distance, id) orders as [`cmp_key`] does.
        let mut keys = [0u64; SCAN_ALL];
        let mut n = 0;
        for node in &self.nodes {
            if let Node::Leaf { start, end, block } = *node {
                let d = self.leaf_dist2(block, q);
                for (i, &d) in (start as usize..end as usize).zip(&d) {
                    keys[n] = (d.to_bits() as u64) << 32 | self.ids[i] as u64;
                    n += (d <= bound) as usize;
                }
            }
        }
        let keys = &mut keys[..n];
        if n > k {
            keys.select_nth_unstable(k - 1);
        }
        let keys = &mut keys[..n.min(k)];
        keys.sort_unstable();
        out.extend(
            keys.iter()
                .map(|&key| (f32::from_bits((key >> 32) as u32), key as u32)),
        );
    }

    /// The squared distance from `q` of every lane of leaf `block`, summed over dimensions in
    /// the order [`dist2`] sums them, so the figures are the same to the last bit.
    #[inline(always)]
    fn leaf_dist2(&self, block: u32, q: &[f32; D]) -> [f32; LEAF] {
        let mut d = [0f32; LEAF];
        for (row, &qd) in self.lanes[block as usize].iter().zip(q) {
            for (d, &x) in d.iter_mut().zip(row) {
                let diff = x - qd;
                *d += diff * diff;
            }
        }
        d
    }

    /// Split `node`'s children, the one on `q`'s side of its plane first, its axis, and how far
    /// `q` lies from the plane along it (signed).
    fn sides(&self, node: u32, q: &[f32; D]) -> (u32, u32, usize, f32) {
        let Node::Split {
            axis,
            value,
            left,
            right,
        } = self.nodes[node as usize]
        else {
            unreachable!("only a split node has sides");
        };
        let diff = q[axis as usize] - value;
        if diff < 0.0 {
            (left, right, axis as usize, diff)
        } else {
            (right, left, axis as usize, diff)
        }
    }

    /// The search under `node`, looking no farther than `bound` (squared). `off` holds, by
    /// axis, how far `q` lies outside the node's box (0 inside): the box's squared distance,
    /// summed in the order [`KdTree::leaf_dist2`] sums, is never more than any of its points'.
    fn search(
        &self,
        node: u32,
        q: &[f32; D],
        off: &mut [f32; D],
        (k, bound): (usize, f32),
        best: &mut Vec<(f32, u32)>,
    ) {
        match self.nodes[node as usize] {
            Node::Leaf { start, end, block } => {
                let d = self.leaf_dist2(block, q);
                // Most leaves hold no point within the limit: one test of all lanes says so.
                let limit = reach(best, k, bound);
                let lanes = (end - start) as usize;
                if d[..lanes].iter().all(|&d| d > limit) {
                    return;
                }
                for (i, &d) in (start as usize..end as usize).zip(&d) {
                    let limit = reach(best, k, bound);
                    // Ties at the limit still compete on the tile index.
                    if d <= limit {
                        insert(best, k, (d, self.ids[i]));
                    }
                }
            }
            Node::Split { .. } => {
                let (near, far, axis, diff) = self.sides(node, q);
                self.search(near, q, off, (k, bound), best);
                let limit = reach(best, k, bound);
                let before = off[axis];
                off[axis] = diff;
                if off.iter().fold(0.0, |s, &o| s + o * o) <= limit {
                    self.search(far, q, off, (k, bound), best);
                }
                off[axis] = before;
            }
        }
    }
}

fn cmp_key(a: &(f32, u32), b: &(f32, u32)) -> std::cmp::Ordering {
    a.0.total_cmp(&b.0).then(a.1.cmp(&b.1))
}

/// Keeps `item` among the `k` least of `best`, which is sorted under [`cmp_key`] (worst last)
/// except while a list longer than [`SORTED_FILL`] fills: that one is sorted once, when full,
/// rather than shifted on every insertion ([`settle`] sorts one that never fills).
#[inline(always)]
fn insert(best: &mut Vec<(f32, u32)>, k: usize, item: (f32, u32)) {
    if best.len() < k {
        best.push(item);
        if k > SORTED_FILL {
            if best.len() == k {
                best.sort_unstable_by(cmp_key);
            }
            return;
        }
    } else if cmp_key(&item, &best[k - 1]).is_ge() {
        return;
    } else {
        best[k - 1] = item;
    }
    // The new last point moves down to its place: in a long list, found by halves and the
    // points past it moved up at once.
    let last = best.len() - 1;
    if k > SORTED_FILL {
        let at = best[..last].partition_point(|b| cmp_key(b, &item).is_lt());
        best.copy_within(at..last, at + 1);
        best[at] = item;
        return;
    }
    let mut at = last;
    while at > 0 && cmp_key(&best[at - 1], &item).is_gt() {
        best[at] = best[at - 1];
        at -= 1;
    }
    best[at] = item;
}

/// The most points [`KdTree::nearest`] scans all of rather than searches.
const SCAN_ALL: usize = 512;

/// The longest list [`insert`] keeps sorted from its first point.
const SORTED_FILL: usize = 64;

/// Sorts the answer of a search that found fewer than `k` points, which [`insert`] leaves
/// unsorted when `k` is over [`SORTED_FILL`].
fn settle(best: &mut [(f32, u32)], k: usize) {
    if best.len() < k && k > SORTED_FILL {
        best.sort_unstable_by(cmp_key);
    }
}

/// How far a search keeping `k` points in `best` (sorted) still looks: its worst point once it
/// has `k`, and `bound` until then.
#[inline(always)]
fn reach(best: &[(f32, u32)], k: usize, bound: f32) -> f32 {
    if best.len() == k {
        best[k - 1].0
    } else {
        bound
    }
}

/// Builds the subtree over `items` (which start at `offset` in the final order), each leaf's
/// points laid out by dimension in `lanes`; returns its node.
fn build<const D: usize>(
    items: &mut [([f32; D], u32)],
    offset: usize,
    nodes: &mut Vec<Node>,
    lanes: &mut Vec<[[f32; LEAF]; D]>,
) -> u32 {
    let id = nodes.len() as u32;
    if items.len() <= LEAF {
        let mut leaf = [[0f32; LEAF]; D];
        for (lane, item) in items.iter().enumerate() {
            for (row, &x) in leaf.iter_mut().zip(&item.0) {
                row[lane] = x;
            }
        }
        nodes.push(Node::Leaf {
            start: offset as u32,
            end: (offset + items.len()) as u32,
            block: lanes.len() as u32,
        });
        lanes.push(leaf);
        return id;
    }
    // Split on the axis of widest spread, at the median.
    let axis = (0..D)
        .map(|a| {
            let (lo, hi) = items.iter().fold((f32::MAX, f32::MIN), |(lo, hi), p| {
                (lo.min(p.0[a]), hi.max(p.0[a]))
            });
            (hi - lo, a)
        })
        .max_by(|x, y| x.0.total_cmp(&y.0).then(y.1.cmp(&x.1)))
        .map_or(0, |x| x.1);
    let mid = items.len() / 2;
    items.select_nth_unstable_by(mid, |a, b| {
        a.0[axis].total_cmp(&b.0[axis]).then(a.1.cmp(&b.1))
    });
    let value = items[mid].0[axis];
    nodes.push(Node::Leaf {
        start: 0,
        end: 0,
        block: 0,
    });
    let (l, r) = items.split_at_mut(mid);
    let left = build(l, offset, nodes, lanes);
    let right = build(r, offset + mid, nodes, lanes);
    nodes[id as usize] = Node::Split {
        axis: axis as u8,
        value,
        left,
        right,
    };
    id
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::color::Lab;

    /// Numbers 0 to 99.9 from a seeded linear congruential generator.
    fn numbers(seed: u64) -> impl FnMut() -> f32 {
        let mut state = crate::seeded(seed);
        move || ((state() >> 33) % 1000) as f32 / 10.0
    }

    /// A walk of nearby queries, each warm-started from the last answer (and once from another
    /// tree's), answers as a search from nothing does.
    #[test]
    fn a_warm_start_changes_no_answer() {
        let mut rnd = numbers(777);
        let pts: Vec<Lab> = (0..2000)
            .map(|_| [rnd(), rnd() - 50.0, rnd() - 50.0])
            .collect();
        // A tree searched, warm-started once from a tree scanned whole, and the other way.
        let (large, small) = (KdTree::new(&pts), KdTree::new(&pts[..300]));
        for (tree, other) in [(&large, &small), (&small, &large)] {
            walk(tree, other, &mut rnd);
        }
    }

    fn walk(tree: &KdTree, other: &KdTree, rnd: &mut impl FnMut() -> f32) {
        let (mut warm, mut cold) = (Vec::new(), Vec::new());
        let mut q = [50.0, 0.0, 0.0];
        for step in 0..300 {
            q = [
                q[0] + rnd() / 20.0 - 2.5,
                q[1] + rnd() / 20.0 - 2.5,
                q[2] + rnd() / 20.0 - 2.5,
            ];
            if step == 150 {
                other.nearest(&q, 24, &mut warm);
            }
            tree.nearest(&q, 24, &mut warm);
            cold.clear();
            tree.nearest(&q, 24, &mut cold);
            assert_eq!(warm, cold, "step {step}");
        }
    }

    #[test]
    fn nearest_agrees_with_brute_force() {
        let mut rnd = numbers(12345);
        // A tree scanned whole (up to SCAN_ALL points) and one searched.
        for n in [500, 1500] {
            let pts: Vec<Lab> = (0..n)
                .map(|_| [rnd(), rnd() - 50.0, rnd() - 50.0])
                .collect();
            agrees_with_brute_force(&pts, &mut rnd);
        }
    }

    fn agrees_with_brute_force(pts: &[Lab], rnd: &mut impl FnMut() -> f32) {
        let tree = KdTree::new(pts);
        let mut got = Vec::new();
        // Short lists are kept sorted, long ones sorted when full, and one of more than all
        // the points never fills.
        let ks = [7, 24, 100, pts.len() + 100];
        for (round, k) in ks.into_iter().cycle().take(60).enumerate() {
            let q = [rnd(), rnd() - 50.0, rnd() - 50.0];
            got.clear();
            tree.nearest(&q, k, &mut got);
            let mut all: Vec<(f32, u32)> = pts
                .iter()
                .enumerate()
                .map(|(i, p)| (dist2(&q, p), i as u32))
                .collect();
            all.sort_by(cmp_key);
            assert_eq!(
                got,
                all[..k.min(pts.len())].to_vec(),
                "round {round}, k {k}"
            );
        }
    }

    #[test]
    fn least_offset_agrees_with_brute_force() {
        let mut rnd = numbers(777);
        let pts: Vec<Lab> = (0..400)
            .map(|_| [rnd(), rnd() - 50.0, rnd() - 50.0])
            .collect();
        let weights: Vec<f32> = (0..400).map(|_| rnd() / 3.0).collect();
        let tree = KdTree::with_weights(&pts, &weights);
        let mut got = Vec::new();
        for _ in 0..40 {
            let q = [rnd(), rnd() - 50.0, rnd() - 50.0];
            tree.least_offset(&q, 9, &mut got);
            let mut all: Vec<(f32, u32)> = pts
                .iter()
                .zip(&weights)
                .enumerate()
                .map(|(i, (p, w))| (dist2(&q, p).sqrt() - w, i as u32))
                .collect();
            all.sort_by(cmp_key);
            let ids = |v: &[(f32, u32)]| v.iter().map(|x| x.1).collect::<Vec<_>>();
            assert_eq!(ids(&got), ids(&all[..9]));
        }
    }

    /// Points given a weight of minus infinity drop out of the answers, and come back with
    /// their weight restored.
    #[test]
    fn retired_points_are_skipped() {
        let mut rnd = numbers(99);
        let pts: Vec<Lab> = (0..300)
            .map(|_| [rnd(), rnd() - 50.0, rnd() - 50.0])
            .collect();
        let mut tree = KdTree::with_weights(&pts, &vec![0.0; pts.len()]);
        let mut alive = vec![true; pts.len()];
        let mut got = Vec::new();
        for round in 0..400 {
            let id = (rnd() * 3.0) as usize % pts.len();
            alive[id] = round % 5 == 0;
            tree.set_weight(id as u32, if alive[id] { 0.0 } else { f32::NEG_INFINITY });
            let q = [rnd(), rnd() - 50.0, rnd() - 50.0];
            tree.least_offset(&q, 5, &mut got);
            let mut all: Vec<(f32, u32)> = (0..pts.len())
                .filter(|&i| alive[i])
                .map(|i| (dist2(&q, &pts[i]).sqrt(), i as u32))
                .collect();
            all.sort_by(cmp_key);
            let ids = |v: &[(f32, u32)]| v.iter().map(|x| x.1).collect::<Vec<_>>();
            assert_eq!(ids(&got), ids(&all[..5.min(all.len())]), "round {round}");
        }
        for id in 0..pts.len() as u32 {
            tree.set_weight(id, f32::NEG_INFINITY);
        }
        tree.least_offset(&[50.0, 0.0, 0.0], 5, &mut got);
        assert!(got.is_empty());
    }
}
