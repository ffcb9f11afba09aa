//! Deterministic resampling in plain arithmetic (no CPU-specific code paths), so that every
//! processor, whatever its CPU, renders byte-identical tiles: Lanczos3 for tile renditions and an
//! exact area average for describing targets.

/// Per output coordinate: first source index and the normalised weights from there.
pub(crate) struct Taps {
    pub(crate) start: Vec<usize>,
    pub(crate) weights: Vec<Vec<f32>>,
}

fn lanczos3(x: f64) -> f64 {
    if x == 0.0 {
        return 1.0;
    }
    if x.abs() >= 3.0 {
        return 0.0;
    }
    let px = std::f64::consts::PI * x;
    3.0 * px.sin() * (px / 3.0).sin() / (px * px)
}

fn lanczos_taps(src: usize, dst: usize) -> Taps {
    let scale = src as f64 / dst as f64;
    let support = 3.0 * scale.max(1.0);
    let filter_scale = scale.max(1.0);
    let mut start = Vec::with_capacity(dst);
    let mut weights = Vec::with_capacity(dst);
    for i in 0..dst {
        let centre = (i as f64 + 0.5) * scale;
        let lo = ((centre - support).floor() as i64).max(0) as usize;
        let hi = ((centre + support).ceil() as i64).min(src as i64) as usize;
        let mut w: Vec<f64> = (lo..hi)
            .map(|j| lanczos3((j as f64 + 0.5 - centre) / filter_scale))
            .collect();
        let sum: f64 = w.iter().sum();
        if sum != 0.0 {
            w.iter_mut().for_each(|v| *v /= sum);
        }
        start.push(lo);
        weights.push(w.into_iter().map(|v| v as f32).collect());
    }
    Taps { start, weights }
}

pub(crate) fn area_taps(src: usize, dst: usize) -> Taps {
    let scale = src as f64 / dst as f64;
    let mut start = Vec::with_capacity(dst);
    let mut weights = Vec::with_capacity(dst);
    for i in 0..dst {
        let a = i as f64 * scale;
        let b = (i + 1) as f64 * scale;
        let lo = a.floor() as usize;
        let hi = (b.ceil() as usize).min(src);
        let w: Vec<f32> = (lo..hi)
            .map(|j| {
                let overlap = (b.min(j as f64 + 1.0) - a.max(j as f64)).max(0.0);
                (overlap / scale) as f32
            })
            .collect();
        start.push(lo);
        weights.push(w);
    }
    Taps { start, weights }
}

/// Separable resampling of a packed RGB8 image through the given taps, rounded back to RGB8.
/// Each output value sums its taps in order, so the loops' shape never changes a result.
fn resample_rgb8(src: &[u8], w: usize, h: usize, tx: &Taps, ty: &Taps) -> Vec<u8> {
    let dw = tx.start.len();
    let dh = ty.start.len();
    let mut tmp = vec![0f32; h * dw * 3];
    for (row, out) in src.chunks_exact(w * 3).zip(tmp.chunks_exact_mut(dw * 3)) {
        area_row(tx, row, out);
    }
    let mut dst = vec![0u8; dw * dh * 3];
    let mut acc = vec![0f32; dw * 3];
    for (y, out) in dst.chunks_exact_mut(dw * 3).enumerate() {
        acc.fill(0.0);
        let first = ty.start[y] * dw * 3;
        let rows = tmp[first..].chunks_exact(dw * 3);
        for (wt, row) in ty.weights[y].iter().zip(rows) {
            for (a, &v) in acc.iter_mut().zip(row) {
                *a += wt * v;
            }
        }
        for (d, a) in out.iter_mut().zip(&acc) {
            *d = a.round().clamp(0.0, 255.0) as u8;
        }
    }
    dst
}

/// Averages an RGB8 image over exact integer blocks (`factor` x `factor`), rounding.
fn box_reduce(src: &[u8], w: usize, h: usize, factor: usize) -> (Vec<u8>, usize, usize) {
    let (ow, oh) = (w / factor, h / factor);
    let n = (factor * factor) as u32;
    let mut dst = vec![0u8; ow * oh * 3];
    for oy in 0..oh {
        for ox in 0..ow {
            let mut acc = [0u32; 3];
            for y in oy * factor..(oy + 1) * factor {
                let row = &src[(y * w + ox * factor) * 3..(y * w + (ox + 1) * factor) * 3];
                for p in row.chunks_exact(3) {
                    acc[0] += p[0] as u32;
                    acc[1] += p[1] as u32;
                    acc[2] += p[2] as u32;
                }
            }
            for c in 0..3 {
                dst[(oy * ow + ox) * 3 + c] = ((acc[c] + n / 2) / n) as u8;
            }
        }
    }
    (dst, ow, oh)
}

/// Resizes an RGB8 image of `w` x `h` px to `dw` x `dh` px with Lanczos3. Large reductions
/// first average exact blocks down to at least three times the output size, which changes
/// nothing visible and keeps the filter short.
pub fn resize(src: &[u8], w: usize, h: usize, dw: usize, dh: usize) -> Vec<u8> {
    if (w, h) == (dw, dh) {
        return src.to_vec();
    }
    let factor = (w / (3 * dw)).min(h / (3 * dh));
    let reduced;
    let (s, sw, sh) = if factor >= 2 {
        let (cw, ch) = ((w / factor) * factor, (h / factor) * factor);
        let cropped;
        let base = if (cw, ch) != (w, h) {
            cropped = crop(src, w, ((w - cw) / 2, (h - ch) / 2), (cw, ch));
            &cropped[..]
        } else {
            src
        };
        let (rw, rh);
        (reduced, rw, rh) = box_reduce(base, cw, ch, factor);
        (&reduced[..], rw, rh)
    } else {
        (src, w, h)
    };
    let (tx, ty) = (lanczos_taps_cached(sw, dw), lanczos_taps_cached(sh, dh));
    resample_rgb8(s, sw, sh, &tx, &ty)
}

/// [`lanczos_taps`], kept per thread for the sizes last asked for: a tile cache resizes every
/// tile between the same two sizes, and the taps' sines cost as much as the resampling.
fn lanczos_taps_cached(src: usize, dst: usize) -> std::rc::Rc<Taps> {
    use std::cell::RefCell;
    use std::rc::Rc;
    type Kept = Vec<((usize, usize), Rc<Taps>)>;
    thread_local! {
        static KEPT: RefCell<Kept> = const { RefCell::new(Vec::new()) };
    }
    KEPT.with_borrow_mut(|kept| {
        if let Some((_, taps)) = kept.iter().find(|(key, _)| *key == (src, dst)) {
            return taps.clone();
        }
        let taps = Rc::new(lanczos_taps(src, dst));
        if kept.len() == 4 {
            kept.remove(0);
        }
        kept.push(((src, dst), taps.clone()));
        taps
    })
}

/// The `(w, h)` region at `(x0, y0)` of an RGB8 image `width` px wide.
fn crop(src: &[u8], width: usize, (x0, y0): (usize, usize), (w, h): (usize, usize)) -> Vec<u8> {
    let mut out = Vec::with_capacity(w * h * 3);
    for y in y0..y0 + h {
        out.extend_from_slice(&src[(y * width + x0) * 3..(y * width + x0 + w) * 3]);
    }
    out
}

/// One RGB8 row through horizontal taps: `out` (packed RGB `f32`) gets, per tap, the weighted
/// sum of the pixels under it.
pub(crate) fn area_row(taps: &Taps, row: &[u8], out: &mut [f32]) {
    for ((px, &start), weights) in out.chunks_exact_mut(3).zip(&taps.start).zip(&taps.weights) {
        let under = &row[start * 3..(start + weights.len()) * 3];
        let mut acc = [0f32; 3];
        for (wx, p) in weights.iter().zip(under.chunks_exact(3)) {
            acc[0] += wx * p[0] as f32;
            acc[1] += wx * p[1] as f32;
            acc[2] += wx * p[2] as f32;
        }
        px.copy_from_slice(&acc);
    }
}

/// Exact area average of rows `[row0, row1)` of an RGB8 image resized to `dw` x `dh`, as `f32`
/// sRGB values (0 to 255), computed only from the source rows those output rows cover.
pub struct AreaResampler {
    w: usize,
    tx: Taps,
    ty: Taps,
}

impl AreaResampler {
    pub fn new(w: usize, h: usize, dw: usize, dh: usize) -> Self {
        Self {
            w,
            tx: area_taps(w, dw),
            ty: area_taps(h, dh),
        }
    }

    /// Output rows `rows` (of the `dh` rows), packed RGB `f32`.
    pub fn rows(&self, src: &[u8], rows: std::ops::Range<usize>) -> Vec<f32> {
        let dw = self.tx.start.len();
        let mut out = vec![0f32; rows.len() * dw * 3];
        let mut hrow = vec![0f32; dw * 3];
        for (oy, y) in rows.enumerate() {
            let o = &mut out[oy * dw * 3..(oy + 1) * dw * 3];
            for (k, wy) in self.ty.weights[y].iter().enumerate() {
                let sy = self.ty.start[y] + k;
                area_row(
                    &self.tx,
                    &src[sy * self.w * 3..(sy + 1) * self.w * 3],
                    &mut hrow,
                );
                for (a, b) in o.iter_mut().zip(&hrow) {
                    *a += wy * b;
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn area_average_of_blocks_is_exact() {
        // 4x2 image -> 2x1: each output pixel averages a 2x2 block.
        let src = [
            0, 0, 0, 100, 100, 100, 10, 20, 30, 30, 40, 50, //
            200, 200, 200, 100, 100, 100, 50, 60, 70, 70, 80, 90,
        ];
        let r = AreaResampler::new(4, 2, 2, 1);
        let out = r.rows(&src, 0..1);
        assert_eq!(out, vec![100.0, 100.0, 100.0, 40.0, 50.0, 60.0]);
    }

    #[test]
    fn flat_colour_survives_lanczos() {
        let src = vec![77u8; 64 * 64 * 3];
        for out in [4, 16, 33, 64, 200] {
            assert!(
                resize(&src, 64, 64, out, out).iter().all(|&v| v == 77),
                "{out}"
            );
        }
        let big = vec![9u8; 1000 * 1000 * 3];
        assert!(resize(&big, 1000, 1000, 64, 64).iter().all(|&v| v == 9));
        let wide = vec![33u8; 400 * 300 * 3];
        let out = resize(&wide, 400, 300, 24, 18);
        assert_eq!(out.len(), 24 * 18 * 3);
        assert!(out.iter().all(|&v| v == 33));
    }
}
