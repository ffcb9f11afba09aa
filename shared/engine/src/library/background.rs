//! Transparent tiles over a background: a tile laid over another colour than the one it was
//! imported over, and colours as hex.

use super::*;

/// A colour written as `RRGGBB` hex, with or without a leading `#` (as a browser's colour input
/// gives it).
pub fn parse_hex_colour(text: &str) -> Result<[u8; 3], String> {
    let hex = text.strip_prefix('#').unwrap_or(text);
    let bad = || format!("{text:?} is not a colour: write RRGGBB hex, as ffffff");
    if hex.len() != 6 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    let byte = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).map_err(|_| bad());
    Ok([byte(0)?, byte(2)?, byte(4)?])
}

/// A colour as `rrggbb` hex, as [`parse_hex_colour`] reads it.
pub fn hex_colour(c: [u8; 3]) -> String {
    format!("{:02x}{:02x}{:02x}", c[0], c[1], c[2])
}

/// Lays RGB8 `px`, composited with opacity `alpha` onto one background, over another: each
/// pixel gains its [`clear_gains`] `gains`.
pub(super) fn recomposite(px: &mut [u8], alpha: &[u8], gains: &[[i16; 3]; 256]) {
    for (p, &a) in px.chunks_exact_mut(3).zip(alpha) {
        let over = laid_over(p, &gains[a as usize]);
        p.copy_from_slice(&over);
    }
}

/// Pixel `p` with its [`clear_gains`] `gain` added, within 0 to 255.
#[inline(always)]
pub(super) fn laid_over(p: &[u8], gain: &[i16; 3]) -> [u8; 3] {
    [0, 1, 2].map(|c| (p[c] as i16 + gain[c]).clamp(0, 255) as u8)
}

/// What a pixel of each opacity gains in each channel when the background it lies over changes
/// from `from` to `to`: the clear part of the change, rounded to nearest either way.
pub(super) fn clear_gains(from: [u8; 3], to: [u8; 3]) -> [[i16; 3]; 256] {
    let shift = [0, 1, 2].map(|c| to[c] as i32 - from[c] as i32);
    let mut gains = [[0i16; 3]; 256];
    for (a, gain) in gains.iter_mut().enumerate() {
        let clear = 255 - a as i32;
        for c in 0..3 {
            let d = clear * shift[c];
            gain[c] = ((d + if d >= 0 { 127 } else { -127 }) / 255) as i16;
        }
    }
    gains
}

/// [`describe`] of the `w x h` pixels `px` laid over another background: each pixel, of
/// opacity `opacity`, gains its [`clear_gains`] `gains` (clamped), as [`recomposite`] does.
pub(super) fn describe_over(
    px: &[u8],
    opacity: &[u8],
    (w, h): (usize, usize),
    k: usize,
    gains: &[[i16; 3]; 256],
) -> Described {
    let rows = px.chunks_exact(w * 3).zip(opacity.chunks_exact(w));
    let rows = rows.map(|(row, alpha)| {
        (row.chunks_exact(3).zip(alpha)).map(|(p, &a)| laid_over(p, &gains[a as usize]))
    });
    describe_rows(rows, (w, h), k)
}
