//! Colour science shared by matching and the quality metric: sRGB to CIELAB (D65, as scikit-image
//! computes it) and the CIEDE2000 colour difference.

/// A CIELAB colour: `[L*, a*, b*]`.
pub type Lab = [f32; 3];

fn srgb_to_linear(c: f64) -> f64 {
    if c > 0.04045 {
        ((c + 0.055) / 1.055).powf(2.4)
    } else {
        c / 12.92
    }
}

fn lab_f(t: f64) -> f64 {
    if t > 0.008856 {
        t.cbrt()
    } else {
        7.787 * t + 16.0 / 116.0
    }
}

/// [`srgb_to_linear`] of a channel in `0.0..=255.0`, from a table for whole values (the same
/// numbers: the quality figures convert every cell's 8-bit colour).
fn channel_to_linear(v: f64) -> f64 {
    static WHOLE: std::sync::OnceLock<Vec<f64>> = std::sync::OnceLock::new();
    if v.fract() == 0.0 && (0.0..=255.0).contains(&v) {
        let table = WHOLE.get_or_init(|| {
            (0..=255)
                .map(|i| srgb_to_linear(i as f64 / 255.0))
                .collect()
        });
        table[v as usize]
    } else {
        srgb_to_linear(v / 255.0)
    }
}

/// Converts an sRGB colour with channels in `0.0..=255.0` to CIELAB (D65 white, 2-degree observer).
pub fn srgb_to_lab(rgb: [f64; 3]) -> [f64; 3] {
    let [r, g, b] = rgb.map(channel_to_linear);
    let x = (0.412453 * r + 0.357580 * g + 0.180423 * b) / 0.95047;
    let y = 0.212671 * r + 0.715160 * g + 0.072169 * b;
    let z = (0.019334 * r + 0.119193 * g + 0.950227 * b) / 1.08883;
    let (fx, fy, fz) = (lab_f(x), lab_f(y), lab_f(z));
    [116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz)]
}

/// The inverse of [`srgb_to_lab`]: the sRGB colour (channels in `0.0..=255.0`, unclamped) of
/// a CIELAB one.
pub fn lab_to_srgb(lab: [f64; 3]) -> [f64; 3] {
    let fy = (lab[0] + 16.0) / 116.0;
    let (fx, fz) = (fy + lab[1] / 500.0, fy - lab[2] / 200.0);
    let f_inv = |f: f64| {
        let t = f * f * f;
        if t > 0.008856 {
            t
        } else {
            (f - 16.0 / 116.0) / 7.787
        }
    };
    let (x, y, z) = (f_inv(fx) * 0.95047, f_inv(fy), f_inv(fz) * 1.08883);
    let linear = [
        3.240481343200526 * x - 1.5371515162713185 * y - 0.4985363261688878 * z,
        -0.9692549499965682 * x + 1.8759900014898907 * y + 0.04155592655829284 * z,
        0.05564663913517716 * x - 0.20404133836651123 * y + 1.0573110696453443 * z,
    ];
    linear.map(|c| {
        let v = if c > 0.0031308 {
            1.055 * c.powf(1.0 / 2.4) - 0.055
        } else {
            12.92 * c
        };
        v * 255.0
    })
}

/// [`srgb_to_lab`] rounded to `f32`, the precision descriptors are stored in.
pub fn srgb_to_lab32(rgb: [f64; 3]) -> Lab {
    let l = srgb_to_lab(rgb);
    [l[0] as f32, l[1] as f32, l[2] as f32]
}

/// [`srgb_to_lab32`] for describing sub-cells, within 1e-3 of it: the sRGB curve from a table of
/// 1,025 points with linear interpolation between them, and cube roots by Newton's method from
/// a bit-level first guess. Matching converts every sub-cell of every cell; the library's power
/// and cube root were a tenth of its time.
pub(crate) fn srgb_to_lab_quick(rgb: [f32; 3]) -> Lab {
    static LINEAR: std::sync::OnceLock<Vec<f32>> = std::sync::OnceLock::new();
    let table = LINEAR.get_or_init(|| {
        (0..=1024)
            .map(|i| srgb_to_linear(i as f64 / 1024.0) as f32)
            .collect()
    });
    let linear = |c: f32| {
        let at = (c.clamp(0.0, 255.0) / 255.0) * 1024.0;
        let i = (at as usize).min(1023);
        let f = at - i as f32;
        table[i] + (table[i + 1] - table[i]) * f
    };
    let [r, g, b] = rgb.map(linear);
    let x = (0.412453 * r + 0.357580 * g + 0.180423 * b) / 0.95047;
    let y = 0.212671 * r + 0.715160 * g + 0.072169 * b;
    let z = (0.019334 * r + 0.119193 * g + 0.950227 * b) / 1.08883;
    let f = |t: f32| {
        if t > 0.008856 {
            quick_cbrt(t)
        } else {
            7.787 * t + 16.0 / 116.0
        }
    };
    let (fx, fy, fz) = (f(x), f(y), f(z));
    [116.0 * fy - 16.0, 500.0 * (fx - fy), 200.0 * (fy - fz)]
}

/// The cube root of a positive `t`: a first guess from the exponent bits, then three Newton
/// steps (each squares the relative error, from a few per cent to under `f32`'s resolution).
fn quick_cbrt(t: f32) -> f32 {
    let mut y = f32::from_bits(t.to_bits() / 3 + 709_921_077);
    for _ in 0..3 {
        y -= (y * y * y - t) / (3.0 * y * y);
    }
    y
}

/// Squared Euclidean distance between two points (for Lab colours, CIE76 squared).
#[inline(always)]
pub fn dist2<const D: usize>(a: &[f32; D], b: &[f32; D]) -> f32 {
    let mut s = 0.0;
    for i in 0..D {
        let d = a[i] - b[i];
        s += d * d;
    }
    s
}

/// The CIEDE2000 colour difference (kL = kC = kH = 1), after Sharma, Wu and Dalal (2005).
///
/// The hue difference and the mean hue are taken from the two hue directions as unit vectors
/// (their cross and dot products, and their bisector) rather than from the hue angles, which
/// leaves one arctangent, for the blue-region rotation term: the same quantities with a third of
/// the transcendental functions.
pub fn ciede2000(lab1: [f64; 3], lab2: [f64; 3]) -> f64 {
    use std::f64::consts::PI;
    let [l1, a1, b1] = lab1;
    let [l2, a2, b2] = lab2;
    let c1 = (a1 * a1 + b1 * b1).sqrt();
    let c2 = (a2 * a2 + b2 * b2).sqrt();
    let cbar = (c1 + c2) / 2.0;
    let cbar7 = cbar.powi(7);
    let g = 0.5 * (1.0 - (cbar7 / (cbar7 + 25f64.powi(7))).sqrt());
    let a1p = a1 * (1.0 + g);
    let a2p = a2 * (1.0 + g);
    let c1p = (a1p * a1p + b1 * b1).sqrt();
    let c2p = (a2p * a2p + b2 * b2).sqrt();
    // Each hue as a unit vector (none for a neutral colour), then sin(Δh'/2) and the mean
    // hue's cosine and sine.
    let unit = |a: f64, b: f64, c: f64| (c > 0.0).then(|| (a / c, b / c));
    let (sin_half_dh, (cos_h, sin_h)) = match (unit(a1p, b1, c1p), unit(a2p, b2, c2p)) {
        (Some((x1, y1)), Some((x2, y2))) => {
            let (dot, cross) = (x1 * x2 + y1 * y2, x1 * y2 - y1 * x2);
            // sin(Δh'/2) from the cross product while the hues are within a quarter turn: from
            // the dot product, it would cancel to nothing in f32.
            let half = if dot > 0.0 {
                cross.abs() / (2.0 * (1.0 + dot)).sqrt()
            } else {
                ((1.0 - dot) / 2.0).max(0.0).sqrt()
            };
            let (bx, by) = (x1 + x2, y1 + y2);
            let norm = (bx * bx + by * by).sqrt();
            let mean = if norm > 1e-12 {
                (bx / norm, by / norm)
            } else {
                // Opposite hues: the mean is a quarter turn from the first, on the side the
                // hue angles' mean falls, as Sharma's conditions choose it.
                let h1 = hue_angle(b1, a1p);
                let h2 = hue_angle(b2, a2p);
                let m = if h1 + h2 < 2.0 * PI {
                    (h1 + h2 + 2.0 * PI) / 2.0
                } else {
                    (h1 + h2 - 2.0 * PI) / 2.0
                };
                let m = if (h1 - h2).abs() <= PI {
                    (h1 + h2) / 2.0
                } else {
                    m
                };
                (m.cos(), m.sin())
            };
            (if cross < 0.0 { -half } else { half }, mean)
        }
        (Some(u), None) | (None, Some(u)) => (0.0, u),
        (None, None) => (0.0, (1.0, 0.0)),
    };
    let dlp = l2 - l1;
    let dcp = c2p - c1p;
    let dhp_big = 2.0 * (c1p * c2p).sqrt() * sin_half_dh;
    let lbarp = (l1 + l2) / 2.0;
    let cbarp = (c1p + c2p) / 2.0;
    // The four cosines of T from the mean hue's cosine and sine, by the multiple-angle formulas.
    let (s1, c1) = (sin_h, cos_h);
    let (s2, c2) = (2.0 * s1 * c1, 2.0 * c1 * c1 - 1.0);
    let (s3, c3) = (s1 * (3.0 - 4.0 * s1 * s1), c1 * (4.0 * c1 * c1 - 3.0));
    let (s4, c4) = (2.0 * s2 * c2, 2.0 * c2 * c2 - 1.0);
    let (sin30, cos30) = (PI / 6.0).sin_cos();
    let (sin6, cos6) = (PI / 30.0).sin_cos();
    let (sin63, cos63) = (63.0 * PI / 180.0).sin_cos();
    let t = 1.0 - 0.17 * (c1 * cos30 + s1 * sin30) + 0.24 * c2 + 0.32 * (c3 * cos6 - s3 * sin6)
        - 0.20 * (c4 * cos63 + s4 * sin63);
    let cbarp7 = cbarp.powi(7);
    let rc = 2.0 * (cbarp7 / (cbarp7 + 25f64.powi(7))).sqrt();
    let lb50 = (lbarp - 50.0).powi(2);
    let sl = 1.0 + 0.015 * lb50 / (20.0 + lb50).sqrt();
    let sc = 1.0 + 0.045 * cbarp;
    let sh = 1.0 + 0.015 * cbarp * t;
    let hbar_deg = sin_h.atan2(cos_h).to_degrees().rem_euclid(360.0);
    let dtheta = (30f64).to_radians() * (-((hbar_deg - 275.0) / 25.0).powi(2)).exp();
    let rt = -(2.0 * dtheta).sin() * rc;
    let (tl, tc, th) = (dlp / sl, dcp / sc, dhp_big / sh);
    (tl * tl + tc * tc + th * th + rt * tc * th).sqrt()
}

/// [`ciede2000`] for ranking candidates, in `f32`, within 1e-5 of it relative (of 1e-4 for
/// differences under 10). Matching calls this for every candidate of every cell.
pub(crate) fn ciede2000_ranking(lab1: Lab, lab2: Lab) -> f32 {
    let mut out = [0f32];
    ciede2000_vectors(lab1, &[lab2], &mut out);
    out[0]
}

/// [`ciede2000_ranking`] of `q` against each of `others`, into `out` (as long as `others`).
///
/// The candidates go through in vector registers eight at a time; a last part of fewer than
/// eight is padded to eight (with `q`), as the compiled loop would take it one by one.
pub(crate) fn ciede2000_batch(q: Lab, others: &[Lab], out: &mut [f32]) {
    const LANES: usize = 8;
    let whole = others.len() / LANES * LANES;
    ciede2000_vectors(q, &others[..whole], &mut out[..whole]);
    let rest = others.len() - whole;
    if rest > 0 {
        let mut padded = [q; LANES];
        padded[..rest].copy_from_slice(&others[whole..]);
        let mut got = [0f32; LANES];
        ciede2000_vectors(q, &padded, &mut got);
        out[whole..].copy_from_slice(&got[..rest]);
    }
}

/// [`ciede2000_batch`] on the widest vectors the CPU has.
#[allow(unsafe_code)]
fn ciede2000_vectors(q: Lab, others: &[Lab], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, the one feature the function is compiled for.
        unsafe { ciede2000_batch_avx2(q, others, out) };
        return;
    }
    ciede2000_lanes(q, others, out);
}

/// [`ciede2000_lanes`] compiled for AVX2, eight candidates to an instruction rather than four.
/// The operations are the same ones (Rust never fuses a multiply and an add), so the figures
/// are the same to the last bit on every CPU.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn ciede2000_batch_avx2(q: Lab, others: &[Lab], out: &mut [f32]) {
    ciede2000_lanes(q, others, out);
}

/// The body of [`ciede2000_batch`].
///
/// Written without branches or library calls, so that the compiler runs it on several
/// candidates at once in vector registers: the blue-region rotation term takes the mean hue's
/// distance from 275° by a polynomial arctangent, its exponential from the float's exponent bits
/// and a polynomial, and its sine by a Taylor series. Pairs of nearly opposite hues, whose mean
/// hue the bisector of their directions cannot give in `f32`, are done again by [`ciede2000`].
#[inline(always)]
fn ciede2000_lanes(q: Lab, others: &[Lab], out: &mut [f32]) {
    let [l1, a1, b1] = q;
    let c1 = (a1 * a1 + b1 * b1).sqrt();
    const P25_7: f32 = 6_103_515_625.0;
    let (sin275, cos275) = (275f32).to_radians().sin_cos();
    let (sin30, cos30) = (30f32).to_radians().sin_cos();
    let (sin6, cos6) = (6f32).to_radians().sin_cos();
    let (sin63, cos63) = (63f32).to_radians().sin_cos();
    for (o, &[l2, a2, b2]) in out.iter_mut().zip(others) {
        let c2 = (a2 * a2 + b2 * b2).sqrt();
        let cbar = (c1 + c2) * 0.5;
        let cbar7 = pow7(cbar);
        let g = 0.5 * (1.0 - (cbar7 / (cbar7 + P25_7)).sqrt());
        let (a1p, a2p) = (a1 * (1.0 + g), a2 * (1.0 + g));
        let c1p = (a1p * a1p + b1 * b1).sqrt();
        let c2p = (a2p * a2p + b2 * b2).sqrt();
        // Hue directions as unit vectors, zero for a neutral colour.
        let i1 = if c1p > 0.0 { 1.0 / c1p } else { 0.0 };
        let i2 = if c2p > 0.0 { 1.0 / c2p } else { 0.0 };
        let (x1, y1, x2, y2) = (a1p * i1, b1 * i1, a2p * i2, b2 * i2);
        let (dot, cross) = (x1 * x2 + y1 * y2, x1 * y2 - y1 * x2);
        let both = c1p > 0.0 && c2p > 0.0;
        // sin(Δh'/2), from the cross product within a quarter turn (from the dot product it
        // would cancel to nothing), and 0 unless both colours have a hue.
        let near = cross.abs() / (2.0 * (1.0 + dot)).max(1e-30).sqrt();
        let far = ((1.0 - dot) * 0.5).max(0.0).sqrt();
        let half = if dot > 0.0 { near } else { far };
        let half = if cross < 0.0 { -half } else { half };
        let sin_half_dh = if both { half } else { 0.0 };
        // The mean hue: the bisector (the one hue if the other is neutral, 0° if both are).
        let (bx, by) = (x1 + x2, y1 + y2);
        let norm = (bx * bx + by * by).sqrt();
        let opposite = both && norm < 1e-2;
        let inv = if norm > 0.0 { 1.0 / norm } else { 0.0 };
        let (cos_h, sin_h) = if norm > 0.0 {
            (bx * inv, by * inv)
        } else {
            (1.0, 0.0)
        };
        let dlp = l2 - l1;
        let dcp = c2p - c1p;
        let dhp_big = 2.0 * (c1p * c2p).sqrt() * sin_half_dh;
        let lbarp = (l1 + l2) * 0.5;
        let cbarp = (c1p + c2p) * 0.5;
        let (s1, k1) = (sin_h, cos_h);
        let (s2, k2) = (2.0 * s1 * k1, 2.0 * k1 * k1 - 1.0);
        let (s3, k3) = (s1 * (3.0 - 4.0 * s1 * s1), k1 * (4.0 * k1 * k1 - 3.0));
        let (s4, k4) = (2.0 * s2 * k2, 2.0 * k2 * k2 - 1.0);
        let t = 1.0 - 0.17 * (k1 * cos30 + s1 * sin30) + 0.24 * k2 + 0.32 * (k3 * cos6 - s3 * sin6)
            - 0.20 * (k4 * cos63 + s4 * sin63);
        // The rotation term: the mean hue less 275° (the mean hue in [0°, 360°)).
        let along = cos_h * cos275 + sin_h * sin275;
        let across = sin_h * cos275 - cos_h * sin275;
        let off = atan2_f32(across, along).to_degrees();
        let off = if off >= 85.0 { off - 360.0 } else { off };
        let e = (off * (1.0 / 25.0)) * (off * (1.0 / 25.0));
        let x = 2.0 * (30f32).to_radians() * exp_neg(e);
        let x2 = x * x;
        let sin2dt =
            x * (1.0 - x2 / 6.0 * (1.0 - x2 / 20.0 * (1.0 - x2 / 42.0 * (1.0 - x2 / 72.0))));
        let cbarp7 = pow7(cbarp);
        let rc = 2.0 * (cbarp7 / (cbarp7 + P25_7)).sqrt();
        let lb50 = (lbarp - 50.0) * (lbarp - 50.0);
        let sl = 1.0 + 0.015 * lb50 / (20.0 + lb50).sqrt();
        let sc = 1.0 + 0.045 * cbarp;
        let sh = 1.0 + 0.015 * cbarp * t;
        let rt = -sin2dt * rc;
        let (tl, tc, th) = (dlp / sl, dcp / sc, dhp_big / sh);
        let de = (tl * tl + tc * tc + th * th + rt * tc * th).max(0.0).sqrt();
        *o = if opposite { f32::NAN } else { de };
    }
    for (o, other) in out.iter_mut().zip(others) {
        if o.is_nan() {
            *o = ciede2000(q.map(f64::from), other.map(f64::from)) as f32;
        }
    }
}

#[inline(always)]
fn pow7(x: f32) -> f32 {
    let x2 = x * x;
    x2 * x2 * x2 * x
}

/// `exp(-e)` for `e >= 0`, within 2e-7 relative: `2^-(e log2 e)` from the exponent bits and a
/// polynomial for the fraction; 0 past `e = 80`.
#[inline(always)]
fn exp_neg(e: f32) -> f32 {
    let y = (e.min(80.0) * std::f32::consts::LOG2_E).max(0.0);
    let n = y.floor();
    let f = y - n; // 2^-y = 2^-n * 2^-f, f in [0, 1)
    // 2^-f by its Taylor series in (-f ln 2), to the seventh power: under 2e-7.
    let z = -f * std::f32::consts::LN_2;
    let p = 1.0
        + z * (1.0
            + z * (0.5
                + z * (1.0 / 6.0
                    + z * (1.0 / 24.0 + z * (1.0 / 120.0 + z * (1.0 / 720.0 + z / 5040.0))))));
    let scale = f32::from_bits(((127 - n as i32).max(0) as u32) << 23);
    if e > 80.0 { 0.0 } else { p * scale }
}

/// `atan2(y, x)` in `f32` without branches, within 1e-6 rad: Abramowitz and Stegun's
/// polynomial (4.4.49) on `[0, 1]` and the octant's symmetries.
#[inline(always)]
fn atan2_f32(y: f32, x: f32) -> f32 {
    use std::f32::consts::{FRAC_PI_2, PI};
    let (ax, ay) = (x.abs(), y.abs());
    let (lo, hi) = (ax.min(ay), ax.max(ay));
    let t = if hi > 0.0 { lo / hi } else { 0.0 };
    let s = t * t;
    let p = -0.333_331_45
        + s * (0.199_935_51
            + s * (-0.142_089
                + s * (0.106_562_64
                    + s * (-0.075_289_64
                        + s * (0.042_909_61 + s * (-0.016_165_737 + s * 0.002_866_225_7))))));
    let r = t * (1.0 + s * p);
    let r = if ay > ax { FRAC_PI_2 - r } else { r };
    let r = if x < 0.0 { PI - r } else { r };
    if y < 0.0 { -r } else { r }
}

/// The hue angle of `(a, b)` in `[0, 2π)`, 0 for a neutral colour.
fn hue_angle(b: f64, a: f64) -> f64 {
    if b == 0.0 && a == 0.0 {
        0.0
    } else {
        b.atan2(a).rem_euclid(2.0 * std::f64::consts::PI)
    }
}

/// Lab with chroma compressed logarithmically, as DIN99 does, so that Euclidean distance ranks
/// pairs of colours nearly as CIEDE2000 does (it divides chroma differences by `1 + 0.045 C`).
pub(crate) fn perceptual(q: &Lab) -> Lab {
    let c = (q[1] * q[1] + q[2] * q[2]).sqrt();
    let s = if c > 1e-6 {
        (0.045 * c).ln_1p() / (0.045 * c)
    } else {
        1.0
    };
    [q[0], q[1] * s, q[2] * s]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lab_of_white_and_black() {
        let w = srgb_to_lab([255.0; 3]);
        assert!((w[0] - 100.0).abs() < 0.01 && w[1].abs() < 0.01 && w[2].abs() < 0.01);
        assert_eq!(srgb_to_lab([0.0; 3])[0], 0.0);
    }

    #[test]
    fn quick_lab_agrees_with_the_exact_conversion() {
        let mut worst = 0f64;
        for r in (0..=255).step_by(5) {
            for g in (0..=255).step_by(5) {
                for b in (0..=255).step_by(5) {
                    // Area averages are fractional: a quarter step off the integers too.
                    let rgb = [r as f64 + 0.25, g as f64, b as f64 + 0.75].map(|v| v.min(255.0));
                    let exact = srgb_to_lab(rgb);
                    let quick = srgb_to_lab_quick(rgb.map(|v| v as f32));
                    for c in 0..3 {
                        worst = worst.max((exact[c] - quick[c] as f64).abs());
                    }
                }
            }
        }
        assert!(worst < 1e-3, "off by {worst}");
    }

    #[test]
    fn ciede2000_matches_sharma_reference_pairs() {
        // Pairs 1, 7 and 17 of the published test data.
        let cases = [
            ([50.0, 2.6772, -79.7751], [50.0, 0.0, -82.7485], 2.0425),
            ([50.0, 0.0, 0.0], [50.0, -1.0, 2.0], 2.3669),
            ([50.0, 2.5, 0.0], [73.0, 25.0, -18.0], 27.1492),
        ];
        for (a, b, want) in cases {
            let got = ciede2000(a, b);
            assert!((got - want).abs() < 1e-4, "{a:?} {b:?}: {got} != {want}");
        }
    }

    /// CIEDE2000 as Sharma, Wu and Dalal write it, with the hue angles.
    fn ciede2000_by_angles(lab1: [f64; 3], lab2: [f64; 3]) -> f64 {
        use std::f64::consts::PI;
        let [l1, a1, b1] = lab1;
        let [l2, a2, b2] = lab2;
        let cbar = ((a1 * a1 + b1 * b1).sqrt() + (a2 * a2 + b2 * b2).sqrt()) / 2.0;
        let g = 0.5 * (1.0 - (cbar.powi(7) / (cbar.powi(7) + 25f64.powi(7))).sqrt());
        let (a1p, a2p) = (a1 * (1.0 + g), a2 * (1.0 + g));
        let (c1p, c2p) = ((a1p * a1p + b1 * b1).sqrt(), (a2p * a2p + b2 * b2).sqrt());
        let (h1p, h2p) = (hue_angle(b1, a1p), hue_angle(b2, a2p));
        let dhp = match h2p - h1p {
            _ if c1p * c2p == 0.0 => 0.0,
            d if d > PI => d - 2.0 * PI,
            d if d < -PI => d + 2.0 * PI,
            d => d,
        };
        let dhp_big = 2.0 * (c1p * c2p).sqrt() * (dhp / 2.0).sin();
        let (lbarp, cbarp) = ((l1 + l2) / 2.0, (c1p + c2p) / 2.0);
        let hbarp = if c1p * c2p == 0.0 {
            h1p + h2p
        } else if (h1p - h2p).abs() <= PI {
            (h1p + h2p) / 2.0
        } else if h1p + h2p < 2.0 * PI {
            (h1p + h2p + 2.0 * PI) / 2.0
        } else {
            (h1p + h2p - 2.0 * PI) / 2.0
        };
        let deg = |d: f64| d * PI / 180.0;
        let t = 1.0 - 0.17 * (hbarp - deg(30.0)).cos()
            + 0.24 * (2.0 * hbarp).cos()
            + 0.32 * (3.0 * hbarp + deg(6.0)).cos()
            - 0.20 * (4.0 * hbarp - deg(63.0)).cos();
        let dtheta = deg(30.0) * (-((hbarp.to_degrees() - 275.0) / 25.0).powi(2)).exp();
        let rc = 2.0 * (cbarp.powi(7) / (cbarp.powi(7) + 25f64.powi(7))).sqrt();
        let lb50 = (lbarp - 50.0).powi(2);
        let sl = 1.0 + 0.015 * lb50 / (20.0 + lb50).sqrt();
        let (sc, sh) = (1.0 + 0.045 * cbarp, 1.0 + 0.015 * cbarp * t);
        let rt = -(2.0 * dtheta).sin() * rc;
        let (tl, tc, th) = ((l2 - l1) / sl, (c2p - c1p) / sc, dhp_big / sh);
        (tl * tl + tc * tc + th * th + rt * tc * th).sqrt()
    }

    #[test]
    fn ciede2000_by_vectors_agrees_with_the_angle_formulas() {
        let mut state = crate::seeded(7);
        let mut next =
            |lo: f64, hi: f64| lo + (hi - lo) * ((state() >> 11) as f64 / (1u64 << 53) as f64);
        let mut pairs: Vec<([f64; 3], [f64; 3])> = (0..20_000)
            .map(|_| {
                let a = [next(0.0, 100.0), next(-110.0, 110.0), next(-110.0, 110.0)];
                let b = [next(0.0, 100.0), next(-110.0, 110.0), next(-110.0, 110.0)];
                (a, b)
            })
            .collect();
        // Neutral colours, equal hues and opposite hues.
        pairs.extend([
            ([50.0, 0.0, 0.0], [60.0, 0.0, 0.0]),
            ([50.0, 0.0, 0.0], [60.0, -20.0, 5.0]),
            ([50.0, 10.0, 10.0], [60.0, 20.0, 20.0]),
            ([50.0, 10.0, 0.0], [60.0, -10.0, 0.0]),
            ([50.0, 0.0, 10.0], [60.0, 0.0, -10.0]),
            ([50.0, -3.0, -40.0], [40.0, 3.0, 40.0]),
        ]);
        for (a, b) in pairs {
            let (got, want) = (ciede2000(a, b), ciede2000_by_angles(a, b));
            assert!(
                (got - want).abs() < 1e-9 * want.max(1.0),
                "{a:?} {b:?}: {got} != {want}"
            );
            let quick = ciede2000_ranking(a.map(|v| v as f32), b.map(|v| v as f32)) as f64;
            assert!(
                (quick - want).abs() < 1e-5 * want.max(10.0),
                "{a:?} {b:?}: {quick} != {want}"
            );
        }
    }

    /// Lab back to sRGB gives the colour it came from, over the whole cube.
    #[test]
    fn lab_to_srgb_undoes_srgb_to_lab() {
        for r in (0..=255).step_by(15) {
            for g in (0..=255).step_by(15) {
                for b in (0..=255).step_by(15) {
                    let rgb = [r as f64 + 0.25, g as f64, b as f64 * 0.999];
                    let back = lab_to_srgb(srgb_to_lab(rgb));
                    for c in 0..3 {
                        assert!((back[c] - rgb[c]).abs() < 1e-6, "{rgb:?} -> {back:?}");
                    }
                }
            }
        }
    }

    /// The batch gives the same bits on every CPU: what this one runs (AVX2 where it has it)
    /// equals the portable code, over batches of every length up to two vectors and a tail.
    #[test]
    fn ciede2000_batch_is_the_same_on_every_cpu() {
        let mut state = crate::seeded(11);
        let mut next =
            |lo: f32, hi: f32| lo + (hi - lo) * ((state() >> 40) as f32 / (1u64 << 24) as f32);
        let mut lab = || [next(0.0, 100.0), next(-110.0, 110.0), next(-110.0, 110.0)];
        for len in 0..=19 {
            for _ in 0..200 {
                let q = lab();
                let others: Vec<Lab> = (0..len).map(|_| lab()).collect();
                let (mut got, mut want) = (vec![0f32; len], vec![0f32; len]);
                ciede2000_batch(q, &others, &mut got);
                ciede2000_lanes(q, &others, &mut want);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "{q:?} {others:?}");
            }
        }
    }
}
