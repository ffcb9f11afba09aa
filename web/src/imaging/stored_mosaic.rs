//! Access to a finished mosaic, for the routes that serve it (result, preview, zoom tiles) and the
//! pages that show it: the pyramid's and the preview's geometry, the result's size and seek
//! index, a reader of its blob in ranges, and a streaming decoder that shrinks rows as they come.
//!
//! The pyramid: level 0 is the full resolution; level `l` is the mosaic shrunk by `2^l` (each
//! pixel the mean of a `2^l` square block, cut short at the right and bottom edges); tile `(x, y)`
//! of a level covers its pixels `256x..256(x+1)` across and `256y..256(y+1)` down (edge tiles are
//! smaller). The top level is the smallest whose whole image fits in one tile.

use std::ops::Range;
use std::sync::Arc;
use tessera_shared::error_code::ErrorCode;

use actix_web::http::StatusCode;

use tessera_engine::{Scanlines, SeekIndex};
use tessera_shared::jobs::{JobRecord, JobState};
use tessera_shared::keys::BlobKey;
use tessera_shared::storage::reader::BlobReader;
use tessera_shared::storage::{BlobStore, StorageError};

use crate::api_error::{ApiError, ApiResult};

/// The longest side of a preview, in pixels.
pub const PREVIEW_MAX_SIDE: u32 = 1024;

/// The size of the preview of a `width` x `height` mosaic.
pub fn preview_size(width: u32, height: u32) -> (u32, u32) {
    let scale = (f64::from(PREVIEW_MAX_SIDE) / f64::from(width.max(height))).min(1.0);
    let side = |n: u32| ((f64::from(n) * scale).round() as u32).clamp(1, n);
    (side(width), side(height))
}

/// The output pixel that input pixel `i` of `n` falls in, of `out`.
pub fn preview_bin(i: u32, n: u32, out: u32) -> u32 {
    (u64::from(i) * u64::from(out) / u64::from(n)) as u32
}

pub use tessera_engine::pyramid::{PYRAMID_TILE as TILE, level_size, top_level};
/// Bytes per ranged read when decoding.
const READ_BYTES: usize = 1 << 20;

/// The key of a done job's result; 409 for a job not done.
pub(crate) fn done_result(record: &JobRecord) -> ApiResult<String> {
    match record.state {
        JobState::Done => Ok(record
            .result_blob
            .clone()
            .unwrap_or_else(|| BlobKey::ImageOutput { job: record.id }.path())),
        state => Err(ApiError::new(
            StatusCode::CONFLICT,
            ErrorCode::JobNotDone,
            format!("the job is {}; its mosaic is not ready", state.as_str()),
        )),
    }
}

/// The seek index beside a result, if it has a usable one.
pub(crate) async fn read_index(blobs: &dyn BlobStore, key: &str) -> ApiResult<Option<SeekIndex>> {
    let index_key = BlobKey::SeekIndex {
        output: key.to_string(),
    }
    .path();
    match blobs.get(&index_key).await {
        Ok(bytes) => match SeekIndex::parse(&bytes) {
            Ok(index) => Ok(Some(index)),
            Err(e) => {
                tracing::warn!(%index_key, error = %e, "seek index unusable; decoding from the start");
                Ok(None)
            }
        },
        Err(StorageError::NotFound(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// A done job's mosaic size: its record's (the stitcher writes the result at that size), else
/// the result's PNG header's (an older record without one).
pub(crate) async fn result_size(
    blobs: &dyn BlobStore,
    key: &str,
    record: &JobRecord,
) -> ApiResult<(u32, u32)> {
    match record.output {
        Some(o) => Ok((o.width, o.height)),
        None => png_size(blobs, key).await,
    }
}

/// A done job whose result blob is gone.
pub(crate) fn missing() -> ApiError {
    ApiError::not_found(
        ErrorCode::ResultMissing,
        "the job is done but its result is no longer stored",
    )
}

/// Width and height from the PNG's header.
async fn png_size(blobs: &dyn BlobStore, key: &str) -> ApiResult<(u32, u32)> {
    let head = match blobs.get_range(key, 0..24).await {
        Ok(head) if head.len() == 24 && head[12..16] == *b"IHDR" => head,
        Ok(_) => return Err(ApiError::internal("the result is not a PNG")),
        Err(StorageError::NotFound(_)) => return Err(missing()),
        Err(e) => return Err(e.into()),
    };
    let be = |i: usize| u32::from_be_bytes(head[i..i + 4].try_into().expect("4 bytes"));
    Ok((be(16), be(20)))
}

/// A result to decode rows of.
pub(crate) struct Source {
    pub(crate) blobs: Arc<dyn BlobStore>,
    pub(crate) key: String,
    pub(crate) index: Option<SeekIndex>,
    pub(crate) width: u32,
    pub(crate) height: u32,
}

pub(crate) fn decode_err(e: impl std::fmt::Display) -> ApiError {
    ApiError::internal(format!("decoding the result: {e}"))
}

impl Source {
    /// Calls `each` with every row of `rows` (RGB8), top to bottom: from the nearest
    /// random-access point with an index, else from the PNG's start.
    pub(crate) fn rows(
        &self,
        handle: &tokio::runtime::Handle,
        rows: Range<u32>,
        mut each: impl FnMut(u32, &[u8]),
    ) -> ApiResult<()> {
        let reader = |range: Range<u64>| {
            BlobReader::new(
                self.blobs.clone(),
                self.key.clone(),
                handle.clone(),
                (range, READ_BYTES),
            )
        };
        if let Some(index) = &self.index
            && let Some(span) = index.span(rows.clone())
        {
            let data = index.idat_data(reader(span.file), span.stream.clone());
            let mut lines = Scanlines::new(data, index.width);
            for y in span.first_row..rows.end {
                let line = lines.next_row().map_err(decode_err)?;
                if y >= rows.start {
                    each(y, line);
                }
            }
            return Ok(());
        }
        let mut decoder = png::Decoder::new(reader(0..u64::MAX));
        decoder.set_transformations(png::Transformations::normalize_to_color8());
        decoder.set_ignore_text_chunk(true);
        let mut png = decoder.read_info().map_err(decode_err)?;
        let channels = png.output_color_type().0.samples();
        let width = png.info().width as usize;
        let mut rgb = vec![0u8; width * 3];
        for y in 0..rows.end {
            let row = png
                .next_row()
                .map_err(decode_err)?
                .ok_or_else(|| decode_err("the image ends early"))?;
            if y < rows.start {
                continue;
            }
            let data = row.data();
            for (px, out) in data.chunks_exact(channels).zip(rgb.chunks_exact_mut(3)) {
                if channels < 3 {
                    out.fill(px[0]);
                } else {
                    out.copy_from_slice(&px[..3]);
                }
            }
            each(y, &rgb);
        }
        Ok(())
    }
}

/// Shrinks rows by whole-pixel area: each output pixel is the rounded mean of the input pixels
/// whose column falls in its bin, over the rows given to it.
pub(crate) struct Shrink {
    bins: Vec<u32>,
    counts: Vec<u32>,
    sums: Vec<u64>,
    rows: u32,
}

impl Shrink {
    /// For input rows `bins.len()` px wide, column `i` going to output column `bins[i]`.
    pub(crate) fn new(bins: Vec<u32>) -> Self {
        let out = bins.last().map_or(0, |b| *b as usize + 1);
        let mut counts = vec![0; out];
        for &b in &bins {
            counts[b as usize] += 1;
        }
        Self {
            bins,
            counts,
            sums: vec![0; out * 3],
            rows: 0,
        }
    }

    pub(crate) fn add(&mut self, row: &[u8]) {
        for (px, &b) in row.chunks_exact(3).zip(&self.bins) {
            let at = b as usize * 3;
            for (sum, v) in self.sums[at..at + 3].iter_mut().zip(px) {
                *sum += u64::from(*v);
            }
        }
        self.rows += 1;
    }

    /// The output row of the rows added since the last one (none: no row).
    pub(crate) fn take(&mut self) -> Option<Vec<u8>> {
        if self.rows == 0 {
            return None;
        }
        let mut out = Vec::with_capacity(self.sums.len());
        for (i, sum) in self.sums.iter_mut().enumerate() {
            let n = u64::from(self.counts[i / 3]) * u64::from(self.rows);
            out.push(((*sum + n / 2) / n) as u8);
            *sum = 0;
        }
        self.rows = 0;
        Some(out)
    }
}

/// RGB `pixels` as a JPEG of `quality` (1 to 100).
pub(crate) fn encode_jpeg(
    pixels: &[u8],
    (width, height): (u32, u32),
    quality: u8,
) -> ApiResult<bytes::Bytes> {
    let mut out = Vec::new();
    image::codecs::jpeg::JpegEncoder::new_with_quality(&mut out, quality)
        .encode(pixels, width, height, image::ExtendedColorType::Rgb8)
        .map_err(ApiError::internal)?;
    Ok(bytes::Bytes::from(out))
}

/// A tile as PNG (fast compression: tiles are made while a viewer waits).
pub(crate) fn encode_png(pixels: &[u8], width: u32, height: u32) -> ApiResult<bytes::Bytes> {
    tessera_engine::pyramid::encode_png_rgb(pixels, width, height)
        .map(bytes::Bytes::from)
        .map_err(ApiError::internal)
}
