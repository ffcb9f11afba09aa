//! An event's wish list: the colours of its target that the photos so far cannot match, and
//! about how many photos of each would fill them.
//!
//! The target is kept as the mean colour of each cell of a coarse grid ([`target_colours`]),
//! each photo as its mean colour ([`mean_colour`] of what its tile shows). A cell is matched when
//! some photo lies within [`MATCH_DISTANCE`] of it (CIE76 in CIELAB). The cells left unmatched
//! are grouped by colour (k-means, at most [`GROUPS`]), and a group asks for as many photos as
//! its cells would take if each photo filled its share of the target: the cells over the photos
//! so far, counting at least [`PHOTOS_EXPECTED`] photos so that a new event asks for a useful
//! number.

use serde::Serialize;
use tessera_engine::color::srgb_to_lab;

/// Grid cells across the target's long side, for its colours.
pub const SAMPLED_SIDE: u32 = 32;
/// Farthest a photo's colour may be from a cell's (CIE76 ΔE) for the cell to count as matched.
pub const MATCH_DISTANCE: f64 = 15.0;
/// Most colours on the list.
pub const GROUPS: usize = 8;
/// Photos an event counts on at least, when it has fewer.
pub const PHOTOS_EXPECTED: usize = 30;

/// A colour the photos are short of.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct Wish {
    /// The colour, as `#rrggbb`.
    pub color: String,
    /// The colour in words ("dark blue").
    pub words: String,
    /// About how many photos of this colour would fill its part of the target.
    pub photos: u32,
    /// The part of the target no photo matches in this colour, 0 to 1.
    pub share: f64,
}

/// The mean colour of each cell of a grid [`SAMPLED_SIDE`] across the target's long side, row by
/// row.
pub fn target_colours(img: &tessera_engine::RgbImage) -> Vec<[u8; 3]> {
    let (w, h) = img.dimensions();
    let long = w.max(h).max(1);
    let (cols, rows) = (
        (w * SAMPLED_SIDE).div_ceil(long).clamp(1, SAMPLED_SIDE),
        (h * SAMPLED_SIDE).div_ceil(long).clamp(1, SAMPLED_SIDE),
    );
    let mut out = Vec::with_capacity((cols * rows) as usize);
    for r in 0..rows {
        for c in 0..cols {
            let (x0, x1) = (c * w / cols, ((c + 1) * w / cols).max(c * w / cols + 1));
            let (y0, y1) = (r * h / rows, ((r + 1) * h / rows).max(r * h / rows + 1));
            let mut sum = [0u64; 3];
            let mut n = 0u64;
            for y in y0..y1.min(h) {
                for x in x0..x1.min(w) {
                    let p = img.get_pixel(x, y).0;
                    for i in 0..3 {
                        sum[i] += u64::from(p[i]);
                    }
                    n += 1;
                }
            }
            out.push(sum.map(|s| (s / n.max(1)) as u8));
        }
    }
    out
}

/// The mean colour of packed RGB8 pixels.
pub fn mean_colour(rgb: &[u8]) -> [u8; 3] {
    let mut sum = [0u64; 3];
    for p in rgb.chunks_exact(3) {
        for i in 0..3 {
            sum[i] += u64::from(p[i]);
        }
    }
    let n = (rgb.len() / 3).max(1) as u64;
    sum.map(|s| (s / n) as u8)
}

fn lab(rgb: [u8; 3]) -> [f64; 3] {
    srgb_to_lab(rgb.map(f64::from))
}

fn distance(a: &[f64; 3], b: &[f64; 3]) -> f64 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt()
}

/// The wish list of a target of `target` colours ([`target_colours`]) with `photos` so far
/// (their mean colours): most photos wanted first, none with no photo wanted.
pub fn wishlist(target: &[[u8; 3]], photos: &[[u8; 3]]) -> Vec<Wish> {
    let photos: Vec<[f64; 3]> = photos.iter().map(|&p| lab(p)).collect();
    let unmatched: Vec<([f64; 3], [u8; 3])> = target
        .iter()
        .map(|&c| (lab(c), c))
        .filter(|(c, _)| photos.iter().all(|p| distance(c, p) > MATCH_DISTANCE))
        .collect();
    if unmatched.is_empty() {
        return Vec::new();
    }
    let cells_per_photo = target.len() as f64 / photos.len().max(PHOTOS_EXPECTED) as f64;
    let points: Vec<[f64; 3]> = unmatched.iter().map(|u| u.0).collect();
    let (centres, member_of) = groups(&points, GROUPS.min(points.len()));
    let mut wishes: Vec<Wish> = centres
        .iter()
        .enumerate()
        .map(|(g, centre)| {
            let rgb: Vec<u8> = unmatched
                .iter()
                .zip(&member_of)
                .filter(|(_, m)| **m == g)
                .flat_map(|(u, _)| u.1)
                .collect();
            (centre, rgb.len() / 3, mean_colour(&rgb))
        })
        .filter(|(_, n, _)| *n > 0)
        .map(|(centre, n, rgb)| Wish {
            color: format!("#{:02x}{:02x}{:02x}", rgb[0], rgb[1], rgb[2]),
            words: words(centre),
            photos: (n as f64 / cells_per_photo).ceil() as u32,
            share: n as f64 / target.len() as f64,
        })
        .filter(|w| w.photos > 0)
        .collect();
    wishes.sort_by(|a, b| b.photos.cmp(&a.photos).then(a.color.cmp(&b.color)));
    // Two groups one name would call alike ("red" and "red") are one wish: the larger's
    // swatch, the photos of both.
    let mut named: Vec<Wish> = Vec::with_capacity(wishes.len());
    for wish in wishes {
        match named.iter_mut().find(|w| w.words == wish.words) {
            Some(kept) => {
                kept.photos += wish.photos;
                kept.share += wish.share;
            }
            None => named.push(wish),
        }
    }
    named
}

/// k-means of `points` into `k` groups, seeded by farthest points from the first (so the same
/// points always give the same groups): the centres and the group of each point.
fn groups(points: &[[f64; 3]], k: usize) -> (Vec<[f64; 3]>, Vec<usize>) {
    let mut centres = vec![points[0]];
    while centres.len() < k {
        let farthest = points
            .iter()
            .max_by(|a, b| {
                let near = |p: &[f64; 3]| {
                    centres
                        .iter()
                        .map(|c| distance(p, c))
                        .fold(f64::MAX, f64::min)
                };
                near(a).total_cmp(&near(b))
            })
            .copied()
            .expect("points");
        centres.push(farthest);
    }
    let mut member_of = vec![0usize; points.len()];
    for _ in 0..12 {
        let mut sums = vec![[0.0f64; 3]; k];
        let mut members = vec![0usize; k];
        for (p, of) in points.iter().zip(&mut member_of) {
            let g = (0..k)
                .min_by(|&a, &b| distance(p, &centres[a]).total_cmp(&distance(p, &centres[b])))
                .expect("groups");
            *of = g;
            members[g] += 1;
            for i in 0..3 {
                sums[g][i] += p[i];
            }
        }
        for g in 0..k {
            if members[g] > 0 {
                centres[g] = sums[g].map(|s| s / members[g] as f64);
            }
        }
    }
    (centres, member_of)
}

/// A CIELAB colour in words: its lightness and its hue ("dark blue", "light grey", "brown").
fn words(lab: &[f64; 3]) -> String {
    let [l, a, b] = *lab;
    let chroma = a.hypot(b);
    if chroma < 12.0 {
        return match l {
            l if l < 20.0 => "black",
            l if l < 40.0 => "dark grey",
            l if l < 70.0 => "grey",
            l if l < 90.0 => "light grey",
            _ => "white",
        }
        .to_string();
    }
    let hue = b.atan2(a).to_degrees().rem_euclid(360.0);
    let name = match hue {
        h if h < 25.0 => "pink",
        h if h < 50.0 => "red",
        h if h < 75.0 => "orange",
        h if h < 105.0 => "yellow",
        h if h < 170.0 => "green",
        h if h < 230.0 => "teal",
        h if h < 315.0 => "blue",
        h if h < 345.0 => "purple",
        _ => "pink",
    };
    match (name, l) {
        ("orange" | "red" | "yellow", l) if l < 45.0 => "brown".to_string(),
        (name, l) if l < 35.0 => format!("dark {name}"),
        (name, l) if l > 75.0 => format!("light {name}"),
        (name, _) => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A target whose left `red` columns of 32 are red and the rest dark blue.
    fn halves(red: u32) -> Vec<[u8; 3]> {
        let pixels: Vec<u8> = (0..320 * 320)
            .flat_map(|i| {
                if i % 320 < red * 10 {
                    [200, 30, 30]
                } else {
                    [20, 30, 120]
                }
            })
            .collect();
        target_colours(&tessera_engine::RgbImage::from_raw(320, 320, pixels).unwrap())
    }

    #[test]
    fn the_list_asks_for_the_colours_no_photo_matches() {
        let target = halves(16);
        assert_eq!(target.len(), 32 * 32);
        // No photos: both colours wanted, each half of the target, 15 photos each of 30.
        let wishes = wishlist(&target, &[]);
        assert_eq!(wishes.len(), 2, "{wishes:?}");
        for w in &wishes {
            assert!((w.share - 0.5).abs() < 1e-9, "{w:?}");
            assert_eq!(w.photos, 15, "{w:?}");
        }
        // Red photos: only the blue is wanted, in words.
        let wishes = wishlist(&target, &[[205, 35, 30], [190, 25, 35]]);
        assert_eq!(wishes.len(), 1, "{wishes:?}");
        assert_eq!(wishes[0].words, "dark blue");
        assert!(wishes[0].color.starts_with('#') && wishes[0].color.len() == 7);
        // A larger blue part asks for more photos.
        let more = wishlist(&halves(8), &[[205, 35, 30]]);
        assert!(more[0].photos > wishes[0].photos, "{more:?} {wishes:?}");
        // Both colours at hand: nothing wanted.
        assert!(wishlist(&target, &[[200, 30, 30], [20, 30, 120]]).is_empty());
    }
}
