//! A tile's descriptors: its mean and its sub-grid of colours in Lab.

use super::*;

/// Mean sRGB colour of packed RGB8 pixels.
pub(crate) fn area_mean(px: &[u8]) -> [f64; 3] {
    let mut sum = [0u64; 3];
    for p in px.chunks_exact(3) {
        for c in 0..3 {
            sum[c] += p[c] as u64;
        }
    }
    let n = (px.len() / 3).max(1) as f64;
    sum.map(|s| s as f64 / n)
}

/// A tile's mean colour and sub-grid means, as [`describe`] gives them.
pub(super) type Described = (Lab, Vec<Lab>);

/// Mean colour and `k x k` sub-grid means of a `w x h` RGB8 image, averaged in sRGB (as the eye
/// sees it from a distance and as the quality metric measures) and converted to Lab.
pub(crate) fn describe(px: &[u8], w: usize, h: usize, k: usize) -> Described {
    let rows = px
        .chunks_exact(w * 3)
        .map(|row| row.chunks_exact(3).map(|p| [p[0], p[1], p[2]]));
    describe_rows(rows, (w, h), k)
}

/// [`describe`] of `w x h` pixels given row by row.
pub(super) fn describe_rows<R: Iterator<Item = [u8; 3]>>(
    rows: impl Iterator<Item = R>,
    (w, h): (usize, usize),
    k: usize,
) -> Described {
    let mut sums = vec![[0u64; 4]; k * k];
    // Which column of the sub-grid each pixel column falls in.
    let columns: Vec<usize> = (0..w).map(|x| x * k / w).collect();
    for (y, row) in rows.take(h).enumerate() {
        let block = &mut sums[y * k / h * k..][..k];
        for (p, &gx) in row.zip(&columns) {
            let s = &mut block[gx];
            s[0] += p[0] as u64;
            s[1] += p[1] as u64;
            s[2] += p[2] as u64;
            s[3] += 1;
        }
    }
    let mut total = [0u64; 3];
    let subs = sums
        .iter()
        .map(|s| {
            for c in 0..3 {
                total[c] += s[c];
            }
            let n = s[3].max(1) as f64;
            srgb_to_lab32([s[0] as f64 / n, s[1] as f64 / n, s[2] as f64 / n])
        })
        .collect();
    let n = (w * h) as f64;
    let mean = srgb_to_lab32([
        total[0] as f64 / n,
        total[1] as f64 / n,
        total[2] as f64 / n,
    ]);
    (mean, subs)
}
