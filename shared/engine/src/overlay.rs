//! The target laid over the tiles at an opacity ("ghosting"): opt-in, and reported beside the
//! tiles' own quality figures so that it is never mistaken for matching.

use crate::resample::AreaResampler;

/// The most opacity an overlay may have, in percent.
pub const MAX_OVERLAY_PERCENT: u8 = 50;

/// The target resized to the mosaic's size, laid over rendered rows at `percent` opacity. Rows
/// are worked out one at a time from the target, so any band of rows gives the same bytes as
/// the whole image.
pub struct Overlay<'a> {
    target: &'a image::RgbImage,
    resampler: AreaResampler,
    pub(crate) width: u32,
    percent: u8,
}

impl<'a> Overlay<'a> {
    /// For a mosaic of `width` x `height` pixels.
    pub fn new(target: &'a image::RgbImage, width: u32, height: u32, percent: u8) -> Self {
        Overlay {
            target,
            resampler: AreaResampler::new(
                target.width() as usize,
                target.height() as usize,
                width as usize,
                height as usize,
            ),
            width,
            percent: percent.min(MAX_OVERLAY_PERCENT),
        }
    }

    /// Lays the target over `pixels`, packed RGB8 rows of the mosaic from row `first_row` on.
    pub fn apply(&self, pixels: &mut [u8], first_row: u32) {
        if self.percent == 0 || self.width == 0 {
            return;
        }
        let row_bytes = self.width as usize * 3;
        let rows = pixels.len() / row_bytes;
        let a = f32::from(self.percent) / 100.0;
        let first = first_row as usize;
        let target = self
            .resampler
            .rows(self.target.as_raw(), first..first + rows);
        for (p, t) in pixels.iter_mut().zip(&target) {
            *p = ((1.0 - a) * f32::from(*p) + a * t)
                .round()
                .clamp(0.0, 255.0) as u8;
        }
    }
}

/// A cell's colour with the overlay: its tiles' colour `tile` and its target colour `target`
/// mixed at `percent` (the mean of the overlaid pixels, but for rounding).
pub fn overlaid(tile: [f64; 3], target: [u8; 3], percent: u8) -> [f64; 3] {
    let a = f64::from(percent.min(MAX_OVERLAY_PERCENT)) / 100.0;
    std::array::from_fn(|c| (1.0 - a) * tile[c] + a * f64::from(target[c]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands_give_the_whole_images_bytes_and_the_opacity_mixes() {
        let target = image::RgbImage::from_fn(37, 23, |x, y| {
            image::Rgb([(x * 7) as u8, (y * 11) as u8, 200])
        });
        let (w, h) = (90u32, 60u32);
        let tiles: Vec<u8> = (0..w * h * 3).map(|i| (i % 251) as u8).collect();
        let overlay = Overlay::new(&target, w, h, 30);
        let mut whole = tiles.clone();
        overlay.apply(&mut whole, 0);
        let mut banded = tiles.clone();
        for (i, band) in banded.chunks_mut(w as usize * 3 * 7).enumerate() {
            overlay.apply(band, i as u32 * 7);
        }
        assert_eq!(whole, banded);
        assert_ne!(whole, tiles);
        // A flat target and flat tiles: exactly the mix.
        let flat = image::RgbImage::from_pixel(10, 10, image::Rgb([200, 100, 0]));
        let mut px = vec![0u8; 20 * 3];
        Overlay::new(&flat, 20, 1, 30).apply(&mut px, 0);
        assert_eq!(&px[..3], &[60, 30, 0]);
        // Capped at 50 %.
        let mut px = vec![0u8; 3];
        Overlay::new(&flat, 1, 1, 90).apply(&mut px, 0);
        assert_eq!(px, vec![100, 50, 0]);
    }
}
