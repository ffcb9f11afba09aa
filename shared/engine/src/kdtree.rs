//! A static 3-D k-d tree over tile mean colours (Lab), for k-nearest-neighbour candidate search.
//! Built once per library; ties are broken by tile index so results never depend on build order.

use crate::color::{Lab, dist2};

pub struct KdTree {
    /// Points laid out as an implicit balanced tree: the median of each range is its root.
    points: Vec<(Lab, u32)>,
}

impl KdTree {
    pub fn new(means: &[Lab]) -> Self {
        let mut points: Vec<(Lab, u32)> = means
            .iter()
            .enumerate()
            .map(|(i, m)| (*m, i as u32))
            .collect();
        build(&mut points, 0);
        KdTree { points }
    }

    /// The `k` nearest tiles to `q` by Euclidean Lab distance, nearest first, as `(d2, tile)`.
    pub fn nearest(&self, q: &Lab, k: usize, out: &mut Vec<(f32, u32)>) {
        out.clear();
        if k == 0 {
            return;
        }
        self.search(0, self.points.len(), 0, q, k, out);
    }

    fn search(
        &self,
        lo: usize,
        hi: usize,
        depth: usize,
        q: &Lab,
        k: usize,
        best: &mut Vec<(f32, u32)>,
    ) {
        if lo >= hi {
            return;
        }
        let mid = lo + (hi - lo) / 2;
        let (p, idx) = &self.points[mid];
        let d = dist2(q, p);
        insert(best, k, (d, *idx));
        let axis = depth % 3;
        let diff = q[axis] - p[axis];
        let (near, far) = if diff < 0.0 {
            ((lo, mid), (mid + 1, hi))
        } else {
            ((mid + 1, hi), (lo, mid))
        };
        self.search(near.0, near.1, depth + 1, q, k, best);
        if best.len() < k || diff * diff <= best[best.len() - 1].0 {
            self.search(far.0, far.1, depth + 1, q, k, best);
        }
    }
}

fn cmp_key(a: &(f32, u32), b: &(f32, u32)) -> std::cmp::Ordering {
    a.0.total_cmp(&b.0).then(a.1.cmp(&b.1))
}

fn insert(best: &mut Vec<(f32, u32)>, k: usize, item: (f32, u32)) {
    if best.len() == k && cmp_key(&item, &best[k - 1]).is_ge() {
        return;
    }
    let pos = best.partition_point(|b| cmp_key(b, &item).is_lt());
    if best.len() == k {
        best.pop();
    }
    best.insert(pos, item);
}

fn build(points: &mut [(Lab, u32)], depth: usize) {
    if points.len() <= 1 {
        return;
    }
    let axis = depth % 3;
    let mid = points.len() / 2;
    points.select_nth_unstable_by(mid, |a, b| {
        a.0[axis].total_cmp(&b.0[axis]).then(a.1.cmp(&b.1))
    });
    let (left, right) = points.split_at_mut(mid);
    build(left, depth + 1);
    build(&mut right[1..], depth + 1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_agrees_with_brute_force() {
        let mut s = 12345u64;
        let mut rnd = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 33) % 1000) as f32 / 10.0
        };
        let pts: Vec<Lab> = (0..500)
            .map(|_| [rnd(), rnd() - 50.0, rnd() - 50.0])
            .collect();
        let tree = KdTree::new(&pts);
        let mut got = Vec::new();
        for _ in 0..50 {
            let q = [rnd(), rnd() - 50.0, rnd() - 50.0];
            tree.nearest(&q, 7, &mut got);
            let mut all: Vec<(f32, u32)> = pts
                .iter()
                .enumerate()
                .map(|(i, p)| (dist2(&q, p), i as u32))
                .collect();
            all.sort_by(cmp_key);
            assert_eq!(got, all[..7].to_vec());
        }
    }
}
