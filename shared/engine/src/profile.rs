//! Colour profiles: pixels decoded in a file's own colour space are converted to sRGB, the space
//! that matching and every output assume. ICC profiles (JPEG APP2, PNG iCCP, WebP, TIFF,
//! HEIF/AVIF), a PNG's cICP, gAMA and cHRM chunks, and HEIF/AVIF colour codes (nclx) are honoured;
//! a file that says nothing is sRGB. The conversions are moxcms's.
//!
//! A profile that maps every sampled colour to itself within one step (an sRGB profile however
//! it is written) is no conversion at all: such files decode exactly as untagged ones do.

use std::sync::{Arc, Mutex};

use moxcms::{
    Chromaticity, CicpColorPrimaries, CicpProfile, ColorPrimaries, ColorProfile, DataColorSpace,
    InPlaceTransformExecutor, Layout, MatrixCoefficients, TransferCharacteristics,
    TransformOptions, XyY,
};
use rayon::prelude::*;

use sha2::{Digest, Sha256};

/// The colour space a file declares for its pixels.
#[derive(Clone)]
pub(crate) struct Declared {
    /// `None`: sRGB, or nothing said, or something we do not convert (a CMYK profile: the
    /// decoder has made RGB of it already).
    profile: Option<ColorProfile>,
    /// Tells declarations apart in the transform cache: a SHA-256 of what was declared, so that
    /// no file can make its profile's conversion stand in for another's.
    key: [u8; 32],
}

impl Declared {
    pub(crate) const SRGB: Declared = Declared {
        profile: None,
        key: [0; 32],
    };

    /// An embedded ICC profile. One that cannot be read is taken as sRGB.
    pub(crate) fn icc(bytes: &[u8]) -> Declared {
        let Ok(profile) = ColorProfile::new_from_slice(bytes) else {
            return Declared::SRGB;
        };
        Declared::of(profile, cache_key(b"icc", bytes))
    }

    /// Colour codes (ITU-T H.273): HEIF/AVIF's nclx, PNG's cICP. Unknown codes are sRGB.
    pub(crate) fn cicp(primaries: u8, transfer: u8) -> Declared {
        let (Ok(color_primaries), Ok(transfer_characteristics)) = (
            CicpColorPrimaries::try_from(primaries),
            TransferCharacteristics::try_from(transfer),
        ) else {
            return Declared::SRGB;
        };
        let mut profile = ColorProfile::new_srgb();
        let known = profile.update_rgb_colorimetry_from_cicp(CicpProfile {
            color_primaries,
            transfer_characteristics,
            matrix_coefficients: MatrixCoefficients::Bt709,
            full_range: true,
        });
        if !known {
            return Declared::SRGB;
        }
        let key = u64::from(primaries) << 8 | u64::from(transfer);
        Declared::of(profile, cache_key(b"cicp", &key.to_le_bytes()))
    }

    /// A PNG's own say: iCCP, else sRGB, else cICP, else gAMA and cHRM (either may be alone; a
    /// gAMA of 1/2.2 with sRGB's chromaticities or none is taken as sRGB, as browsers take it).
    pub(crate) fn png(info: &png::Info) -> Declared {
        if let Some(icc) = &info.icc_profile {
            return Declared::icc(icc);
        }
        if info.srgb.is_some() {
            return Declared::SRGB;
        }
        if let Some(cicp) = &info.coding_independent_code_points {
            return Declared::cicp(cicp.color_primaries, cicp.transfer_function);
        }
        let gamma = info.gama_chunk.map(png::ScaledFloat::into_value);
        let chromaticities = info.chrm_chunk.map(|c| {
            let xy =
                |(x, y): (png::ScaledFloat, png::ScaledFloat)| (x.into_value(), y.into_value());
            [xy(c.white), xy(c.red), xy(c.green), xy(c.blue)]
        });
        const SRGB_XY: [(f32, f32); 4] = [(0.3127, 0.329), (0.64, 0.33), (0.3, 0.6), (0.15, 0.06)];
        let srgb_like = chromaticities.is_none_or(|c| {
            c.iter()
                .zip(SRGB_XY)
                .all(|(a, b)| (a.0 - b.0).abs() < 0.01 && (a.1 - b.1).abs() < 0.01)
        });
        let gamma_srgb_like = gamma.is_none_or(|g| (g - 1.0 / 2.2).abs() < 0.005);
        if srgb_like && gamma_srgb_like {
            return Declared::SRGB;
        }
        let mut profile = ColorProfile::new_srgb();
        // moxcms goes by the colour codes when a profile has them: these are no longer sRGB's.
        profile.cicp = None;
        if let Some([white, red, green, blue]) = chromaticities {
            let c = |(x, y): (f32, f32)| Chromaticity::new(x, y);
            profile.update_rgb_colorimetry(
                XyY::new(f64::from(white.0), f64::from(white.1), 1.0),
                ColorPrimaries {
                    red: c(red),
                    green: c(green),
                    blue: c(blue),
                },
            );
        }
        if let Some(g) = gamma.filter(|g| *g > 0.0) {
            let curve = moxcms::curve_from_gamma(1.0 / g);
            profile.red_trc = Some(curve.clone());
            profile.green_trc = Some(curve.clone());
            profile.blue_trc = Some(curve);
        }
        let mut key = Vec::new();
        for v in gamma.into_iter().chain(
            chromaticities
                .into_iter()
                .flatten()
                .flat_map(|(x, y)| [x, y]),
        ) {
            key.extend_from_slice(&v.to_le_bytes());
        }
        Declared::of(profile, cache_key(b"png", &key))
    }

    /// An RGB profile as it is; a grey one as the RGB profile with its curve on every channel
    /// (grey pixels are neutral, so the primaries do not matter); any other: no conversion.
    fn of(mut profile: ColorProfile, key: [u8; 32]) -> Declared {
        match profile.color_space {
            DataColorSpace::Rgb => {}
            DataColorSpace::Gray if profile.gray_trc.is_some() => {
                let trc = profile.gray_trc.take();
                let mut rgb = ColorProfile::new_srgb();
                rgb.cicp = None;
                rgb.red_trc = trc.clone();
                rgb.green_trc = trc.clone();
                rgb.blue_trc = trc;
                profile = rgb;
            }
            _ => return Declared::SRGB,
        }
        Declared {
            profile: Some(profile),
            key,
        }
    }

    /// The conversion of these pixels to sRGB (`alpha`: RGBA8, else RGB8), or `None` when there
    /// is nothing to convert.
    pub(crate) fn to_srgb(&self, alpha: bool) -> Option<ToSrgb> {
        let profile = self.profile.as_ref()?;
        static CACHE: Mutex<Vec<CachedTransform>> = Mutex::new(Vec::new());
        // A poisoned cache is still a good cache: its entries are whole.
        let lock = || {
            CACHE
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        if let Some((.., found)) = lock()
            .iter()
            .find(|(key, a, _)| *key == self.key && *a == alpha)
        {
            return found.clone();
        }
        let layout = if alpha { Layout::Rgba } else { Layout::Rgb };
        let transform = profile
            .create_in_place_transform_8bit(
                layout,
                &ColorProfile::new_srgb(),
                TransformOptions::default(),
            )
            .ok()
            .map(|transform| ToSrgb {
                transform,
                channels: if alpha { 4 } else { 3 },
            })
            .filter(|t| !t.is_identity());
        let mut cache = lock();
        if cache.len() >= 32 {
            cache.remove(0);
        }
        cache.push((self.key, alpha, transform.clone()));
        transform
    }
}

/// A conversion the cache keeps: the declaration's key, whether it has alpha, the conversion.
type CachedTransform = ([u8; 32], bool, Option<ToSrgb>);

/// The transform cache's key for a declaration of `kind` made of `bytes`.
fn cache_key(kind: &[u8], bytes: &[u8]) -> [u8; 32] {
    let mut digest = Sha256::new();
    digest.update(kind);
    digest.update([0]);
    digest.update(bytes);
    digest.finalize().into()
}

/// A conversion of 8-bit RGB or RGBA pixels to sRGB, in place.
#[derive(Clone)]
pub(crate) struct ToSrgb {
    transform: Arc<dyn InPlaceTransformExecutor<u8> + Send + Sync>,
    channels: usize,
}

impl ToSrgb {
    /// Whether it leaves every colour of a 16-step grid within one step of where it was.
    fn is_identity(&self) -> bool {
        let mut grid = Vec::with_capacity(16 * 16 * 16 * self.channels);
        for r in (0..=255u8).step_by(17) {
            for g in (0..=255u8).step_by(17) {
                for b in (0..=255u8).step_by(17) {
                    grid.extend_from_slice(&[r, g, b, 255][..self.channels]);
                }
            }
        }
        let mut out = grid.clone();
        self.transform.transform(&mut out).is_ok()
            && grid.iter().zip(&out).all(|(a, b)| a.abs_diff(*b) <= 1)
    }

    /// Converts one run of pixels in place. A run the transform refuses (not whole pixels)
    /// is left as it is.
    pub(crate) fn run(&self, pixels: &mut [u8]) {
        let _ = self.transform.transform(pixels);
    }

    /// Converts a whole image in place, bands of rows in parallel.
    pub(crate) fn image(&self, pixels: &mut [u8], width: usize) {
        let row = width * self.channels;
        if row == 0 {
            return;
        }
        // Bands of about 256 KiB.
        let band = row * ((1 << 18) / row).max(1);
        pixels
            .par_chunks_mut(band)
            .for_each(|chunk| self.run(chunk));
    }
}

/// `img` in sRGB as `declared` says its pixels are: unchanged when there is nothing to do, else
/// as RGB8 or RGBA8.
pub(crate) fn image_to_srgb(img: image::DynamicImage, declared: &Declared) -> image::DynamicImage {
    let alpha = img.color().has_alpha();
    let Some(convert) = declared.to_srgb(alpha) else {
        return img;
    };
    let width = img.width() as usize;
    if alpha {
        let mut rgba = img.into_rgba8();
        convert.image(&mut rgba, width);
        image::DynamicImage::ImageRgba8(rgba)
    } else {
        let mut rgb = img.into_rgb8();
        convert.image(&mut rgb, width);
        image::DynamicImage::ImageRgb8(rgb)
    }
}

/// An sRGB ICC profile, for outputs that carry one (JPEG, TIFF). Its header's creation date
/// is fixed (1 January 2026) rather than the encoder's clock, so that the same job makes the
/// same bytes whenever it runs.
pub fn srgb_icc() -> &'static [u8] {
    static ICC: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    ICC.get_or_init(|| {
        let mut icc = ColorProfile::new_srgb().encode().unwrap_or_default();
        // The header's dateTimeNumber: six big-endian u16 at bytes 24 to 35 (ICC.1, 7.2.1).
        if let Some(date) = icc.get_mut(24..36) {
            for (field, value) in date.chunks_exact_mut(2).zip(PROFILE_DATE) {
                field.copy_from_slice(&value.to_be_bytes());
            }
        }
        icc
    })
}

/// The creation date the sRGB profile carries: year, month, day, hour, minute, second.
const PROFILE_DATE: [u16; 6] = [2026, 1, 1, 0, 0, 0];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_srgb_profile_is_dated_as_declared_not_by_the_clock() {
        let icc = srgb_icc();
        assert_eq!(&icc[36..40], b"acsp", "an ICC header");
        assert_eq!(&icc[24..26], &2026u16.to_be_bytes());
        assert_eq!(&icc[26..36], &[0, 1, 0, 1, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn srgb_in_any_spelling_is_no_conversion_and_p3_is_one() {
        assert!(Declared::icc(srgb_icc()).to_srgb(false).is_none());
        assert!(Declared::cicp(1, 13).to_srgb(true).is_none());
        let p3 = ColorProfile::new_display_p3().encode().unwrap();
        let convert = Declared::icc(&p3).to_srgb(false).expect("P3 converts");
        // P3's pure red is beyond sRGB: it saturates; a P3 mid grey stays grey.
        let mut px = vec![255, 0, 0, 128, 128, 128];
        convert.run(&mut px);
        assert_eq!(px[0], 255);
        assert!(px[1] == 0 && px[2] == 0, "{px:?}");
        assert!(px[3..].iter().all(|&v| v.abs_diff(128) <= 1), "{px:?}");
        // A saturated P3 orange is more saturated in sRGB numbers.
        let mut orange = vec![200, 120, 40];
        convert.run(&mut orange);
        assert!(orange[0] > 200 && orange[2] < 40, "{orange:?}");
    }

    /// A profile forged to collide with Display P3 under the transform cache's former key (a
    /// 64-bit FNV of the bytes, which one chosen word inverts) converts as itself, and a P3
    /// photo converted after it still converts as P3.
    #[test]
    fn a_profile_forged_to_collide_with_p3_does_not_take_its_place() {
        const PRIME: u64 = 0x0000_0100_0000_01b3;
        let step = |mut h: u64, w: u64| {
            h ^= w;
            h = h.wrapping_mul(PRIME);
            h ^ (h >> 29)
        };
        let words = |mut h: u64, bytes: &[u8]| {
            for c in bytes.chunks_exact(8) {
                h = step(h, u64::from_le_bytes(c.try_into().unwrap()));
            }
            h
        };
        let mut inverse = PRIME;
        for _ in 0..6 {
            inverse = inverse.wrapping_mul(2u64.wrapping_sub(PRIME.wrapping_mul(inverse)));
        }
        // The former key: FNV seeded with 1.
        let start = step(0xcbf2_9ce4_8422_2325, 1);
        let p3 = ColorProfile::new_display_p3().encode().unwrap();
        let whole = p3.len() / 8 * 8;
        let target = words(start, &p3[..whole]);
        // A profile that swaps P3's red and blue, padded to whole words, then the one word
        // that brings the hash to P3's state, then P3's last bytes.
        let mut swapped = ColorProfile::new_display_p3();
        std::mem::swap(&mut swapped.red_colorant, &mut swapped.blue_colorant);
        let mut forged = swapped.encode().unwrap();
        forged.resize(forged.len().div_ceil(8) * 8, 0);
        let before = words(start, &forged);
        let unshifted = target ^ (target >> 29) ^ (target >> 58);
        forged.extend_from_slice(&(unshifted.wrapping_mul(inverse) ^ before).to_le_bytes());
        forged.extend_from_slice(&p3[whole..]);
        assert_eq!(
            crate::hash::Fnv::digest_seeded(&forged, 1),
            crate::hash::Fnv::digest_seeded(&p3, 1),
            "the forgery collides under the former key"
        );
        let red = |declared: &Declared| {
            let mut px = vec![220, 30, 30];
            declared.to_srgb(false).expect("converts").run(&mut px);
            px
        };
        let forged_red = red(&Declared::icc(&forged));
        assert!(
            forged_red[2] > forged_red[0],
            "the forgery turns red blue: {forged_red:?}"
        );
        let p3_red = red(&Declared::icc(&p3));
        assert!(
            p3_red[0] > 200 && p3_red[2] < 60,
            "P3 red stays red: {p3_red:?}"
        );
    }

    #[test]
    fn a_broken_profile_or_unknown_codes_are_srgb() {
        assert!(Declared::icc(b"not a profile").to_srgb(false).is_none());
        assert!(Declared::cicp(200, 200).to_srgb(false).is_none());
    }
}
