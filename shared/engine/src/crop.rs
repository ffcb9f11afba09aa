//! How a picture becomes a tile of another shape: the largest crop of the tile's shape, taken
//! at the picture's centre or where its interest lies.
//!
//! The attention crop follows smartcrop's approach, reduced to what a tile needs. The picture
//! is sampled on a coarse grid (about 96 samples along its long side) and each sample scored
//! for detail (the change in lightness to its neighbours), skin tones and saturation, weighted
//! by its opacity. The crop is the largest of the shape, so it slides along one axis only: the
//! offset kept is the one whose window holds the most interest, with a slight pull to the
//! centre so that a picture of even interest is cropped as before.

use image::RgbaImage;

use crate::shape::TileShape;

/// How a picture is cropped to the tiles' shape.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum CropRule {
    /// The middle of the picture.
    Centre,
    /// Where the picture's detail, skin and colour are ([`attention_crop`]).
    #[default]
    Attention,
}

impl CropRule {
    pub fn name(self) -> &'static str {
        match self {
            CropRule::Centre => "centre",
            CropRule::Attention => "attention",
        }
    }

    pub fn parse(text: &str) -> Option<CropRule> {
        match text {
            "centre" | "center" => Some(CropRule::Centre),
            "attention" => Some(CropRule::Attention),
            _ => None,
        }
    }

    /// The crop of `image` at `shape` by this rule: `(x, y, width, height)`.
    pub fn crop(self, image: &RgbaImage, shape: TileShape) -> (usize, usize, usize, usize) {
        match self {
            CropRule::Centre => shape.crop(image.width() as usize, image.height() as usize),
            CropRule::Attention => attention_crop(image, shape),
        }
    }
}

/// Samples along the picture's long side that the interest is scored on.
const SAMPLES: usize = 96;

/// The weight of skin tones and of saturation against detail (smartcrop's 1.8 and 0.3
/// against 0.2, scaled to detail 1).
const SKIN_WEIGHT: f32 = 9.0;
const SATURATION_WEIGHT: f32 = 1.5;

/// The farthest a normalised colour may be from the skin tone to count (smartcrop's 0.8
/// threshold on one minus the distance): neutral greys are farther.
const SKIN_DISTANCE: f32 = 0.2;

/// How much a window's interest is lowered at the far end of the slide, against the centre.
const CENTRE_PULL: f32 = 0.1;

/// The largest crop of `shape` in `image`, placed along its free axis where the most interest
/// is.
pub fn attention_crop(image: &RgbaImage, shape: TileShape) -> (usize, usize, usize, usize) {
    let (w, h) = (image.width() as usize, image.height() as usize);
    let (cx, cy, cw, ch) = shape.crop(w, h);
    let across = cw < w;
    if !across && ch >= h {
        return (cx, cy, cw, ch);
    }
    let step = (w.max(h) / SAMPLES).max(1);
    let (sw, sh) = (w / step, h / step);
    if sw < 2 || sh < 2 {
        return (cx, cy, cw, ch);
    }
    // Interest summed across the fixed axis, per sample along the free one.
    let mut profile = vec![0f32; if across { sw } else { sh }];
    let at = |sx: usize, sy: usize| image.get_pixel((sx * step) as u32, (sy * step) as u32).0;
    for sy in 0..sh {
        for sx in 0..sw {
            let p = at(sx, sy);
            let right = at((sx + 1).min(sw - 1), sy);
            let below = at(sx, (sy + 1).min(sh - 1));
            let detail =
                (lightness(p) - lightness(right)).abs() + (lightness(p) - lightness(below)).abs();
            let interest = (detail + SKIN_WEIGHT * skin(p) + SATURATION_WEIGHT * saturation(p))
                * f32::from(p[3])
                / 255.0;
            profile[if across { sx } else { sy }] += interest;
        }
    }
    let free = if across { w } else { h };
    let length = if across { cw } else { ch };
    let window = (length / step).clamp(1, profile.len());
    let mut sums = vec![0f32; profile.len() + 1];
    for (i, v) in profile.iter().enumerate() {
        sums[i + 1] = sums[i] + v;
    }
    let last = profile.len() - window;
    let centre = last as f32 / 2.0;
    let mut best = (f32::MIN, last / 2);
    let mut at_centre = 0f32;
    for start in 0..=last {
        let pull = if last == 0 {
            1.0
        } else {
            1.0 - CENTRE_PULL * (start as f32 - centre).abs() / centre.max(1.0)
        };
        let score = (sums[start + window] - sums[start]) * pull;
        if start == last / 2 {
            at_centre = score;
        }
        if score > best.0 {
            best = (score, start);
        }
    }
    // No place clearly better than the middle: the centre crop, to the pixel.
    if best.0 <= at_centre * 1.001 {
        return (cx, cy, cw, ch);
    }
    // Sample offset to pixels, the window's middle kept where the samples put it.
    let middle = best.1 * step + window * step / 2;
    let offset = middle.saturating_sub(length / 2).min(free - length);
    if across {
        (offset, cy, cw, ch)
    } else {
        (cx, offset, cw, ch)
    }
}

/// Lightness, 0 to 1 (Rec. 709 weights on the encoded values: enough to find edges).
fn lightness(p: [u8; 4]) -> f32 {
    (0.2126 * f32::from(p[0]) + 0.7152 * f32::from(p[1]) + 0.0722 * f32::from(p[2])) / 255.0
}

/// How close the colour is to skin, 0 to 1: smartcrop's distance of the normalised colour from
/// a skin tone, in the lightness skin has.
fn skin(p: [u8; 4]) -> f32 {
    let [r, g, b] = [p[0], p[1], p[2]].map(f32::from);
    let mag = (r * r + g * g + b * b).sqrt();
    if mag < 1.0 {
        return 0.0;
    }
    let (dr, dg, db) = (r / mag - 0.78, g / mag - 0.57, b / mag - 0.44);
    let distance = (dr * dr + dg * dg + db * db).sqrt();
    let l = lightness(p);
    if distance < SKIN_DISTANCE && (0.2..=0.95).contains(&l) {
        1.0 - distance / SKIN_DISTANCE
    } else {
        0.0
    }
}

/// Saturation, 0 to 1, of colours neither near black nor near white.
fn saturation(p: [u8; 4]) -> f32 {
    let max = p[..3].iter().copied().max().unwrap_or(0);
    let min = p[..3].iter().copied().min().unwrap_or(0);
    let l = lightness(p);
    if max == 0 || !(0.05..=0.9).contains(&l) {
        return 0.0;
    }
    f32::from(max - min) / f32::from(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A grey picture with a saturated red square centred at `(x, y)`.
    fn with_subject(w: u32, h: u32, x: u32, y: u32) -> RgbaImage {
        RgbaImage::from_fn(w, h, |px, py| {
            if px.abs_diff(x) < w.min(h) / 8 && py.abs_diff(y) < w.min(h) / 8 {
                image::Rgba([220, 40, 30, 255])
            } else {
                image::Rgba([128, 128, 128, 255])
            }
        })
    }

    #[test]
    fn the_crop_follows_the_subject_along_the_free_axis() {
        // A portrait photo with its subject near the top: the square crop moves up to it.
        let portrait = with_subject(300, 400, 150, 70);
        let (x, y, w, h) = attention_crop(&portrait, TileShape::SQUARE);
        assert_eq!((x, w, h), (0, 300, 300));
        // Its rows 34 to 106 are in, to the sampling step of 4 px (the centre crop starts at 50).
        assert!(y <= 34 + 4 && y + h >= 106, "the subject is inside: {y}");
        // A landscape photo with its subject on the right.
        let landscape = with_subject(400, 300, 350, 150);
        let (x, y, w, _) = attention_crop(&landscape, TileShape::SQUARE);
        assert_eq!((y, w), (0, 300));
        // Its columns 314 to 386 are in, the crop no farther from the centre (50) than that takes.
        assert!((86..=100).contains(&x), "{x}");
    }

    #[test]
    fn skin_draws_the_crop_over_a_colour_as_bright_and_as_saturated() {
        // A portrait with a face-coloured disc near the bottom and a blue one near the top, as
        // saturated (0.375) and as far in lightness from the grey around them: only the skin
        // score tells them apart.
        let disc = |px: u32, py: u32, cy: u32| {
            (px.abs_diff(150).pow(2) + py.abs_diff(cy).pow(2)) < 40 * 40
        };
        let portrait = RgbaImage::from_fn(300, 400, |px, py| {
            if disc(px, py, 330) {
                image::Rgba([224, 172, 140, 255])
            } else if disc(px, py, 70) {
                image::Rgba([140, 172, 224, 255])
            } else {
                image::Rgba([175, 175, 175, 255])
            }
        });
        assert!(skin([224, 172, 140, 255]) > 0.5 && skin([140, 172, 224, 255]) == 0.0);
        let (_, y, _, h) = attention_crop(&portrait, TileShape::SQUARE);
        assert!(y + h >= 370, "the face (rows 290 to 370) is in: {y}");
        assert!(
            y > 30,
            "the crop moved off the blue disc, toward the face: {y}"
        );
    }

    #[test]
    fn an_even_picture_is_cropped_at_its_centre() {
        let plain = RgbaImage::from_pixel(400, 300, image::Rgba([90, 120, 200, 255]));
        assert_eq!(
            attention_crop(&plain, TileShape::SQUARE),
            TileShape::SQUARE.crop(400, 300)
        );
        // A picture of the shape already is kept whole.
        let square = with_subject(200, 200, 20, 20);
        assert_eq!(attention_crop(&square, TileShape::SQUARE), (0, 0, 200, 200));
    }
}
