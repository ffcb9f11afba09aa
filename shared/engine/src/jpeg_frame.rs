//! A JPEG's frame header (SOF), read by walking its segments: what its decoder will hold before
//! it hands back a pixel. A progressive JPEG keeps every DCT coefficient of every component at
//! full size (two bytes each) until its last scan, whatever scale it is decoded at, so its real
//! cost is known only from the frame's components and their sampling, never from its output size.

/// The frame of a JPEG: its size, whether its scans are progressive, and each component's
/// sampling factors (horizontal, vertical).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JpegFrame {
    pub width: u32,
    pub height: u32,
    pub progressive: bool,
    pub sampling: Vec<(u8, u8)>,
}

impl JpegFrame {
    /// The frame of `bytes`, if they are a JPEG whose segments reach a frame header.
    pub fn read(bytes: &[u8]) -> Option<JpegFrame> {
        if !bytes.starts_with(&[0xFF, 0xD8]) {
            return None;
        }
        let mut i = 2;
        loop {
            while *bytes.get(i)? != 0xFF {
                i += 1;
            }
            while *bytes.get(i)? == 0xFF {
                i += 1;
            }
            let code = *bytes.get(i)?;
            i += 1;
            if matches!(code, 0xD0..=0xD8 | 0x01) {
                continue;
            }
            let length = usize::from(u16::from_be_bytes([*bytes.get(i)?, *bytes.get(i + 1)?]));
            // Start of frame: every SOFn but DHT (C4), JPG (C8) and DAC (CC).
            if matches!(code, 0xC0..=0xCF) && !matches!(code, 0xC4 | 0xC8 | 0xCC) {
                return Self::parse(code, bytes.get(i + 2..i + length)?);
            }
            if code == 0xDA || code == 0xD9 {
                return None;
            }
            i += length;
        }
    }

    fn parse(code: u8, body: &[u8]) -> Option<JpegFrame> {
        let height = u32::from(u16::from_be_bytes([*body.get(1)?, *body.get(2)?]));
        let width = u32::from(u16::from_be_bytes([*body.get(3)?, *body.get(4)?]));
        let count = usize::from(*body.get(5)?);
        let sampling = (0..count)
            .map(|c| {
                let factors = *body.get(6 + c * 3 + 1)?;
                Some(((factors >> 4).max(1), (factors & 0x0F).max(1)))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(JpegFrame {
            width,
            height,
            // SOF2, SOF6, SOF10 and SOF14 are progressive.
            progressive: matches!(code, 0xC2 | 0xC6 | 0xCA | 0xCE),
            sampling,
        })
    }

    /// Bytes the decoder holds for the coefficients of a progressive frame: each component's
    /// 8 x 8 blocks over whole MCUs, 64 coefficients of two bytes each; 0 for a sequential one,
    /// which is decoded a row of MCUs at a time.
    pub fn coefficient_bytes(&self) -> u64 {
        if !self.progressive {
            return 0;
        }
        let hmax = u64::from(self.sampling.iter().map(|s| s.0).max().unwrap_or(1));
        let vmax = u64::from(self.sampling.iter().map(|s| s.1).max().unwrap_or(1));
        let mcus_across = u64::from(self.width).div_ceil(8 * hmax);
        let mcus_down = u64::from(self.height).div_ceil(8 * vmax);
        self.sampling
            .iter()
            .map(|&(h, v)| mcus_across * u64::from(h) * mcus_down * u64::from(v) * 128)
            .sum()
    }
}

/// The coefficient memory of the JPEG in `bytes` ([`JpegFrame::coefficient_bytes`]); 0 when it
/// is not a JPEG or has no frame.
pub fn coefficient_bytes(bytes: &[u8]) -> u64 {
    JpegFrame::read(bytes).map_or(0, |frame| frame.coefficient_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jpeg(width: u16, height: u16, progressive: bool) -> Vec<u8> {
        let img = image::RgbImage::from_fn(u32::from(width), u32::from(height), |x, y| {
            image::Rgb([x as u8, y as u8, 90])
        });
        let mut out = Vec::new();
        let mut encoder = jpeg_encoder::Encoder::new(&mut out, 90);
        encoder.set_progressive(progressive);
        encoder.set_sampling_factor(jpeg_encoder::SamplingFactor::R_4_2_0);
        encoder
            .encode(img.as_raw(), width, height, jpeg_encoder::ColorType::Rgb)
            .unwrap();
        out
    }

    #[test]
    fn a_progressive_frame_costs_its_coefficients_and_a_sequential_one_nothing() {
        let frame = JpegFrame::read(&jpeg(100, 60, true)).unwrap();
        assert_eq!(
            (frame.width, frame.height, frame.progressive),
            (100, 60, true)
        );
        assert_eq!(frame.sampling, vec![(2, 2), (1, 1), (1, 1)]);
        // MCUs of 16 x 16: 7 across, 4 down; luma 14 x 8 blocks, each chroma 7 x 4.
        assert_eq!(frame.coefficient_bytes(), (14 * 8 + 2 * 7 * 4) * 128);
        assert_eq!(coefficient_bytes(&jpeg(100, 60, false)), 0);
        assert_eq!(coefficient_bytes(b"\x89PNG"), 0);
    }
}
