//! Tile transforms: the 8 symmetries of the square a tile can be placed under. Convention: flip
//! mirrors left-right and is applied first, then the tile turns clockwise by quarter turns.
//! A non-square tile keeps its shape under the mirror and the half turn only: a quarter turn
//! would swap its sides, so [`Transform::allowed`] leaves quarter turns out for such tiles.

use std::fmt;

/// A symmetry of the square, stored as one byte: bit 2 is the flip, bits 0-1 the clockwise
/// quarter turns. [`Transform::NONE`] (0) places the tile as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Transform(u8);

const NAMES: [&str; 8] = [
    "none",
    "rot90",
    "rot180",
    "rot270",
    "flip",
    "flip+rot90",
    "flip+rot180",
    "flip+rot270",
];

impl Transform {
    pub const NONE: Transform = Transform(0);

    /// A mirror left-right if `flip`, then `quarter_turns` (mod 4) clockwise turns.
    pub fn new(flip: bool, quarter_turns: u8) -> Transform {
        Transform(((flip as u8) << 2) | (quarter_turns & 3))
    }

    /// The transform stored as `byte`, if it is one (0 to 7).
    pub fn from_u8(byte: u8) -> Option<Transform> {
        (byte < 8).then_some(Transform(byte))
    }

    pub fn as_u8(self) -> u8 {
        self.0
    }

    pub fn flips(self) -> bool {
        self.0 & 4 != 0
    }

    /// Clockwise quarter turns, 0 to 3.
    pub fn quarter_turns(self) -> u8 {
        self.0 & 3
    }

    /// The transforms a plan may choose from, [`Transform::NONE`] first: mirrored if `flip`,
    /// turned if `rotate`, both (all 8) if both. For tiles that are not `square`, turning means
    /// the half turn alone, the one turn that keeps a tile's shape.
    pub fn allowed(flip: bool, rotate: bool, square: bool) -> Vec<Transform> {
        (0..8)
            .map(Transform)
            .filter(|t| (flip || !t.flips()) && (rotate || t.quarter_turns() == 0))
            .filter(|t| t.keeps_shape(square))
            .collect()
    }

    /// True if this transform leaves a tile its shape: any does for a `square` tile, the mirror
    /// and the half turn for others.
    pub fn keeps_shape(self, square: bool) -> bool {
        square || self.quarter_turns().is_multiple_of(2)
    }

    /// The name used in plan CSVs: `none`, `flip`, `rot90`, `flip+rot270`, ...
    pub fn name(self) -> &'static str {
        NAMES[self.0 as usize]
    }

    /// Where the pixel at `(x, y)` of the transformed image, `width` x `height`, comes from in
    /// the untransformed one (`height` x `width` after an odd number of quarter turns).
    pub fn source(self, width: usize, height: usize, x: usize, y: usize) -> (usize, usize) {
        let (mut x, mut y, mut w, mut h) = (x, y, width, height);
        // Undo the clockwise turns (each anticlockwise turn: (x, y) <- (y, w - 1 - x), width and
        // height trading places), then the flip.
        for _ in 0..self.quarter_turns() {
            (x, y) = (y, w - 1 - x);
            (w, h) = (h, w);
        }
        if self.flips() {
            x = w - 1 - x;
        }
        (x, y)
    }

    /// For each position of a `width` x `height` image, row-major, the index it takes its value
    /// from; the transform must keep the shape (see [`Transform::keeps_shape`]).
    pub fn permutation(self, width: usize, height: usize) -> Vec<usize> {
        (0..width * height)
            .map(|i| {
                let (x, y) = self.source(width, height, i % width, i / width);
                y * width + x
            })
            .collect()
    }

    /// A `width` x `height` image of `channels` values per position (row-major), transformed;
    /// the transform must keep the shape (see [`Transform::keeps_shape`]).
    pub fn apply<T: Copy>(
        self,
        image: &[T],
        width: usize,
        height: usize,
        channels: usize,
    ) -> Vec<T> {
        if self == Transform::NONE {
            return image.to_vec();
        }
        let mut out = Vec::with_capacity(image.len());
        for j in self.permutation(width, height) {
            out.extend_from_slice(&image[j * channels..(j + 1) * channels]);
        }
        out
    }
}

impl fmt::Display for Transform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::library::describe;

    /// A 2 x 2 square, values 0 1 / 2 3.
    const SQUARE: [u8; 4] = [0, 1, 2, 3];

    #[test]
    fn flip_mirrors_and_turns_are_clockwise() {
        let t = |flip, turns| Transform::new(flip, turns).apply(&SQUARE, 2, 2, 1);
        assert_eq!(t(false, 0), [0, 1, 2, 3]);
        assert_eq!(t(true, 0), [1, 0, 3, 2]);
        // Clockwise: the left column becomes the top row, read bottom to top.
        assert_eq!(t(false, 1), [2, 0, 3, 1]);
        assert_eq!(t(false, 2), [3, 2, 1, 0]);
        assert_eq!(t(false, 3), [1, 3, 0, 2]);
        // Flip first, then turn.
        assert_eq!(t(true, 1), [3, 1, 2, 0]);
    }

    #[test]
    fn the_eight_transforms_are_distinct_and_named() {
        let all = Transform::allowed(true, true, true);
        assert_eq!(all.len(), 8);
        let side = 3;
        let square: Vec<u8> = (0..9).collect();
        let mut seen: Vec<Vec<u8>> = all
            .iter()
            .map(|t| t.apply(&square, side, side, 1))
            .collect();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), 8);
        let names: Vec<&str> = all.iter().map(|t| t.name()).collect();
        assert_eq!(names, NAMES);
        assert_eq!(Transform::allowed(false, false, true), [Transform::NONE]);
        assert_eq!(Transform::allowed(true, false, true).len(), 2);
        assert_eq!(Transform::allowed(false, true, true).len(), 4);
        // Tiles that are not square turn by the half turn alone.
        let names = |ts: Vec<Transform>| ts.iter().map(|t| t.name()).collect::<Vec<_>>();
        assert_eq!(
            names(Transform::allowed(false, true, false)),
            ["none", "rot180"]
        );
        assert_eq!(
            names(Transform::allowed(true, true, false)),
            ["none", "rot180", "flip", "flip+rot180"]
        );
        assert!(Transform::from_u8(8).is_none());
        assert_eq!(Transform::from_u8(5).map(|t| t.name()), Some("flip+rot90"));
    }

    #[test]
    fn a_transformed_rendition_has_the_transformed_sub_grid() {
        // A side the grid divides, so sub-cells map onto sub-cells exactly.
        let (side, k) = (12, 3);
        let px: Vec<u8> = (0..side * side * 3)
            .map(|i| ((i * 37 + i / 7 * 11) % 251) as u8)
            .collect();
        let (mean, subs) = describe(&px, side, side, k);
        for t in Transform::allowed(true, true, true) {
            let (m, s) = describe(&t.apply(&px, side, side, 3), side, side, k);
            assert_eq!(m, mean, "{t}");
            assert_eq!(s, t.apply(&subs, k, k, 1), "{t}");
        }
    }

    #[test]
    fn a_half_turned_or_mirrored_oblong_has_the_transformed_sub_grid() {
        let (w, h, k) = (12, 9, 3);
        let px: Vec<u8> = (0..w * h * 3)
            .map(|i| ((i * 53 + i / 5 * 7) % 253) as u8)
            .collect();
        let (mean, subs) = describe(&px, w, h, k);
        for t in Transform::allowed(true, true, false) {
            let turned = t.apply(&px, w, h, 3);
            let (m, s) = describe(&turned, w, h, k);
            assert_eq!(m, mean, "{t}");
            assert_eq!(s, t.apply(&subs, k, k, 1), "{t}");
        }
        // A half turn of 2 x 1: the two pixels trade places.
        assert_eq!(Transform::new(false, 2).apply(&[1, 2], 2, 1, 1), [2, 1]);
        assert_eq!(
            Transform::new(true, 2).apply(&[1, 2, 3, 4], 2, 2, 1),
            [3, 4, 1, 2]
        );
    }
}
