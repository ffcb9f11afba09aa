//! The background transparent tiles lie over in a mosaic: the library's own, a colour, or the
//! one that suits the target best. Emoji and other cut-out tiles are mostly background, so it
//! sets most of their colour: over white they cannot be dark, over black they cannot be light.

use std::borrow::Cow;

use rayon::prelude::*;

use crate::color::{ciede2000_batch, srgb_to_lab, srgb_to_lab32};
use crate::kdtree::KdTree;
use crate::library::{Library, hex_colour, parse_hex_colour};
use crate::resample::AreaResampler;

/// What a mosaic lays a library's transparent tiles over. Opaque libraries look the same
/// under all three.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TileBackground {
    /// The colour the library was imported over.
    #[default]
    Library,
    Colour([u8; 3]),
    /// The candidate ([`choose_background`]) over which the tiles come nearest the target.
    Auto,
}

impl TileBackground {
    /// `library`, `auto`, or a colour as `RRGGBB` or `#RRGGBB` hex (what [`Display`] writes).
    ///
    /// [`Display`]: std::fmt::Display
    pub fn parse(text: &str) -> Result<TileBackground, String> {
        if text.eq_ignore_ascii_case("auto") {
            return Ok(TileBackground::Auto);
        }
        if text.eq_ignore_ascii_case("library") {
            return Ok(TileBackground::Library);
        }
        parse_hex_colour(text)
            .map(TileBackground::Colour)
            .map_err(|_| format!("{text:?} is not library, auto or a colour as RRGGBB hex"))
    }

    /// The colour to lay `library`'s tiles over for `target`, or `None` to keep the library as
    /// it is (an opaque library, or its own background asked for).
    pub fn resolve(self, target: &image::RgbImage, library: &Library) -> Option<[u8; 3]> {
        if !library.is_transparent() {
            return None;
        }
        match self {
            TileBackground::Library => None,
            TileBackground::Colour(c) => Some(c),
            TileBackground::Auto => Some(choose_background(target, library)),
        }
    }
}

impl std::fmt::Display for TileBackground {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TileBackground::Library => f.write_str("library"),
            TileBackground::Colour(c) => write!(f, "{}", hex_colour(*c)),
            TileBackground::Auto => f.write_str("auto"),
        }
    }
}

/// `library` laid over `background` ([`Library::over`]), borrowed when that changes nothing.
pub fn lay_over(library: &Library, background: Option<[u8; 3]>) -> Cow<'_, Library> {
    match background.and_then(|bg| library.over(bg)) {
        Some(over) => Cow::Owned(over),
        None => Cow::Borrowed(library),
    }
}

/// Side of the grid the target is sampled on when choosing a background.
const SAMPLE: usize = 64;

/// The background among the library's own, black, three greys, white and the target's mean
/// colour over which the tiles' mean colours come nearest (mean CIEDE2000) to the target's, on
/// a grid of up to 64 x 64 cells with repeats allowed: the floor a mosaic approaches. The
/// earlier candidate wins a tie, so the library's own is kept unless another is better.
pub fn choose_background(target: &image::RgbImage, library: &Library) -> [u8; 3] {
    let cells = sample_cells(target);
    let n = cells.len().max(1) as f64;
    let mean = [0, 1, 2].map(|k| (cells.iter().map(|c| c.1[k]).sum::<f64>() / n).round() as u8);
    let own = library.background();
    let candidates = [
        own,
        [0, 0, 0],
        [64, 64, 64],
        [128, 128, 128],
        [192, 192, 192],
        [255, 255, 255],
        mean,
    ];
    let tiles = library.colours_and_cover();
    // Each candidate scored on all cores; the cells' distances are added in one order, so a
    // tie falls the same way every time.
    let scores: Vec<f64> = candidates
        .par_iter()
        .map(|bg| {
            let means: Vec<_> = tiles
                .iter()
                .map(|(m, cover)| {
                    srgb_to_lab32(
                        [0, 1, 2].map(|k| m[k] + (1.0 - cover) * (bg[k] as f64 - own[k] as f64)),
                    )
                })
                .collect();
            let tree = KdTree::new(&means);
            let parts: Vec<f64> = cells
                .par_chunks(256)
                .map_init(Vec::new, |scratch, chunk| {
                    let (mut near, mut de) = (Vec::with_capacity(4), [0f32; 4]);
                    chunk
                        .iter()
                        .map(|(lab, _)| {
                            let lab = lab.map(|v| v as f32);
                            tree.nearest(&lab, 4, scratch);
                            near.clear();
                            near.extend(scratch.iter().map(|&(_, t)| means[t as usize]));
                            let de = &mut de[..near.len()];
                            ciede2000_batch(lab, &near, de);
                            de.iter().fold(f64::INFINITY, |m, &d| m.min(f64::from(d)))
                        })
                        .sum()
                })
                .collect();
            parts.iter().sum::<f64>() / cells.len().max(1) as f64
        })
        .collect();
    let mut best = (f64::INFINITY, own);
    for (score, bg) in scores.into_iter().zip(candidates) {
        if score < best.0 {
            best = (score, bg);
        }
    }
    best.1
}

/// The target's area-mean colours on a grid of up to [`SAMPLE`] cells a side, as Lab and sRGB.
fn sample_cells(target: &image::RgbImage) -> Vec<([f64; 3], [f64; 3])> {
    let (w, h) = (target.width() as usize, target.height() as usize);
    let (cols, rows) = (w.clamp(1, SAMPLE), h.clamp(1, SAMPLE));
    AreaResampler::new(w, h, cols, rows)
        .rows(target.as_raw(), 0..rows)
        .chunks_exact(3)
        .map(|p| {
            let rgb = [p[0], p[1], p[2]].map(f64::from);
            (srgb_to_lab(rgb), rgb)
        })
        .collect()
}
