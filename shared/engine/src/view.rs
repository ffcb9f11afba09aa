//! `ssim_view` of the quality metric (`shared/tools/mosaic_metrics.py`): how alike target and
//! mosaic look from across the room. Both are area-averaged to [`VIEW_SCALE`] x [`VIEW_SCALE`]
//! samples per cell, whatever the cell's shape (a 24 x 18 px cell is 4 x 4 samples of 6 x 4.5
//! px: the view keeps the cell grid, so both images are compared cell for cell),
//! turned into CIELAB L*, blurred (Gaussian, sigma 2 px, edges repeated) and compared with the
//! SSIM of 7 x 7 windows (data range 100, sample covariance), as scikit-image computes it.

use rayon::prelude::*;

use crate::color::srgb_to_lab;
use crate::resample::{AreaResampler, Taps, area_row, area_taps};

/// Samples per cell side at which the view is compared.
pub const VIEW_SCALE: usize = 4;
/// The largest grid (in cells) whose view is measured; larger grids report no `ssim_view`. A
/// cell is 16 view samples, and measuring holds about 44 bytes per sample at its peak (the
/// mosaic's RGB sums, both L* planes, both blurred planes and one blur pass), so about 700 MB
/// at this limit.
pub const VIEW_MAX_CELLS: usize = 1 << 20;

const SIGMA: f64 = 2.0;
const WINDOW: usize = 7;
const DATA_RANGE: f64 = 100.0;

/// L* of packed sRGB values (0 to 255).
pub(crate) fn lightness(rgb: &[f32]) -> Vec<f32> {
    rgb.par_chunks_exact(3)
        .map(|p| srgb_to_lab([p[0] as f64, p[1] as f64, p[2] as f64])[0] as f32)
        .collect()
}

/// The target's L* at the view scale of a `cols x rows` grid.
pub(crate) fn target_view(target: &image::RgbImage, cols: usize, rows: usize) -> Vec<f32> {
    let (w, h) = (cols * VIEW_SCALE, rows * VIEW_SCALE);
    let resampler = AreaResampler::new(target.width() as usize, target.height() as usize, w, h);
    let mut out = Vec::with_capacity(w * h);
    for y0 in (0..h).step_by(256) {
        let rgb = resampler.rows(target.as_raw(), y0..(y0 + 256).min(h));
        out.extend(lightness(&rgb));
    }
    out
}

/// The SSIM of two L* images of `w x h` seen from a distance; None if either side is under
/// the window (grids under 2 cells a side).
pub(crate) fn ssim_view(a: &[f32], b: &[f32], w: usize, h: usize) -> Option<f64> {
    if w < WINDOW || h < WINDOW || a.len() != w * h || b.len() != w * h {
        return None;
    }
    let (a, b) = (blur(a, w, h), blur(b, w, h));
    Some(ssim(&a, &b, w, h))
}

/// Gaussian blur (sigma 2, kernel to 4 sigma, edge pixels repeated), as
/// `scipy.ndimage.gaussian_filter(mode="nearest")`.
fn blur(img: &[f32], w: usize, h: usize) -> Vec<f64> {
    let radius = (4.0 * SIGMA + 0.5) as isize;
    let mut kernel: Vec<f64> = (-radius..=radius)
        .map(|i| (-0.5 * (i as f64 / SIGMA).powi(2)).exp())
        .collect();
    let sum: f64 = kernel.iter().sum();
    kernel.iter_mut().for_each(|v| *v /= sum);
    let clamp = |i: isize, n: usize| i.clamp(0, n as isize - 1) as usize;
    let mut tmp = vec![0f64; w * h];
    tmp.par_chunks_mut(w).enumerate().for_each(|(y, out)| {
        for (x, o) in out.iter_mut().enumerate() {
            *o = kernel
                .iter()
                .enumerate()
                .map(|(j, k)| {
                    let yy = clamp(y as isize + j as isize - radius, h);
                    k * img[yy * w + x] as f64
                })
                .sum();
        }
    });
    let mut out = vec![0f64; w * h];
    out.par_chunks_mut(w).enumerate().for_each(|(y, out)| {
        let row = &tmp[y * w..(y + 1) * w];
        for (x, o) in out.iter_mut().enumerate() {
            *o = kernel
                .iter()
                .enumerate()
                .map(|(j, k)| k * row[clamp(x as isize + j as isize - radius, w)])
                .sum();
        }
    });
    out
}

/// Mean SSIM over every 7 x 7 window inside the image (scikit-image's uniform-window SSIM with
/// its border crop).
fn ssim(a: &[f64], b: &[f64], w: usize, h: usize) -> f64 {
    let np = (WINDOW * WINDOW) as f64;
    let cov_norm = np / (np - 1.0);
    let (c1, c2) = ((0.01 * DATA_RANGE).powi(2), (0.03 * DATA_RANGE).powi(2));
    let (ow, oh) = (w - WINDOW + 1, h - WINDOW + 1);
    // Horizontal window sums of a, b, a², b², ab for one row.
    let hsums = |y: usize| {
        let (ra, rb) = (&a[y * w..(y + 1) * w], &b[y * w..(y + 1) * w]);
        (0..ow).map(move |x| {
            let mut s = [0f64; 5];
            for i in x..x + WINDOW {
                let (p, q) = (ra[i], rb[i]);
                s[0] += p;
                s[1] += q;
                s[2] += p * p;
                s[3] += q * q;
                s[4] += p * q;
            }
            s
        })
    };
    // Bands of output rows in parallel, each with the horizontal sums of its own rows only, so
    // memory stays small whatever the image's size.
    const BAND: usize = 32;
    let total: f64 = (0..oh.div_ceil(BAND))
        .into_par_iter()
        .map(|band| {
            let (y0, y1) = (band * BAND, ((band + 1) * BAND).min(oh));
            let rows: Vec<[f64; 5]> = (y0..y1 + WINDOW - 1).flat_map(hsums).collect();
            let mut band_total = 0.0;
            for y in 0..y1 - y0 {
                for x in 0..ow {
                    let mut s = [0f64; 5];
                    for yy in y..y + WINDOW {
                        let v = rows[yy * ow + x];
                        for c in 0..5 {
                            s[c] += v[c];
                        }
                    }
                    let [ua, ub, uaa, ubb, uab] = s.map(|v| v / np);
                    let va = cov_norm * (uaa - ua * ua);
                    let vb = cov_norm * (ubb - ub * ub);
                    let vab = cov_norm * (uab - ua * ub);
                    band_total += ((2.0 * ua * ub + c1) * (2.0 * vab + c2))
                        / ((ua * ua + ub * ub + c1) * (va + vb + c2));
                }
            }
            band_total
        })
        .sum();
    total / (ow * oh) as f64
}

/// A mosaic area-averaged to the view scale as its rows stream by: `width x height` pixels onto
/// `cols x rows` cells of [`VIEW_SCALE`]² samples each, with the weights [`AreaResampler`] uses.
pub(crate) struct ViewAccumulator {
    tx: Taps,
    /// Per source row: the view rows it falls in and its weight in each.
    into: Vec<Vec<(usize, f32)>>,
    sums: Vec<f32>,
    hrow: Vec<f32>,
    next_row: usize,
}

impl ViewAccumulator {
    pub(crate) fn new(width: usize, height: usize, cols: usize, rows: usize) -> Self {
        let (vw, vh) = (cols * VIEW_SCALE, rows * VIEW_SCALE);
        let ty = area_taps(height, vh);
        let mut into = vec![Vec::new(); height];
        for (i, weights) in ty.weights.iter().enumerate() {
            for (j, &w) in weights.iter().enumerate() {
                if w > 0.0 {
                    into[ty.start[i] + j].push((i, w));
                }
            }
        }
        Self {
            tx: area_taps(width, vw),
            into,
            sums: vec![0f32; vw * vh * 3],
            hrow: vec![0f32; vw * 3],
            next_row: 0,
        }
    }

    /// Adds one RGB8 pixel row.
    pub(crate) fn add_row(&mut self, row: &[u8]) {
        area_row(&self.tx, row, &mut self.hrow);
        let span = self.hrow.len();
        for &(i, wy) in &self.into[self.next_row] {
            for (d, s) in self.sums[i * span..(i + 1) * span]
                .iter_mut()
                .zip(&self.hrow)
            {
                *d += wy * s;
            }
        }
        self.next_row += 1;
    }

    /// The L* image at the view scale.
    pub(crate) fn lightness(&self) -> Vec<f32> {
        lightness(&self.sums)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_images_score_one_and_noise_lowers_it() {
        let (w, h) = (32, 24);
        let a: Vec<f32> = (0..w * h).map(|i| ((i * 37) % 101) as f32).collect();
        assert!((ssim_view(&a, &a, w, h).unwrap() - 1.0).abs() < 1e-9);
        let b: Vec<f32> = a
            .iter()
            .enumerate()
            .map(|(i, v)| if i % 3 == 0 { 100.0 - v } else { *v })
            .collect();
        let s = ssim_view(&a, &b, w, h).unwrap();
        assert!(s < 0.9, "{s}");
        assert_eq!(ssim_view(&a[..6 * 6], &a[..6 * 6], 6, 6), None);
    }

    #[test]
    fn streamed_view_is_the_area_average() {
        // 8 x 8 pixels onto 1 x 1 cell: 4 x 4 samples of 2 x 2 pixels each.
        let img: Vec<u8> = (0..64).flat_map(|i| [i as u8 * 3, 0, 0]).collect();
        let mut acc = ViewAccumulator::new(8, 8, 1, 1);
        img.chunks_exact(24).for_each(|r| acc.add_row(r));
        let expect = AreaResampler::new(8, 8, 4, 4).rows(&img, 0..4);
        for (a, b) in acc.sums.iter().zip(&expect) {
            assert!((a - b).abs() < 1e-3, "{a} vs {b}");
        }
    }
}
