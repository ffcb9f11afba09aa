//! A preview of a job before it is made: the same photo, library, grid and options, at a few
//! pixels a tile. The grid is the job's own (up to [`MAX_PREVIEW_COLS`] cells across, beyond
//! which the preview is coarser than the mosaic), and so are the repetition rules, the tile
//! transforms, the blend and the background; adaptive sizes show in the mosaic only.

use tessera_engine::{Library, Plan, TileCache, VecSink, decode_target, render_to_sink};
use tessera_shared::error_code::ErrorCode;

use tessera_shared::spec::{JobLimits, JobSpec};

use crate::api_error::ApiError;

/// Cells across a preview at most.
pub const MAX_PREVIEW_COLS: u32 = 200;
/// About how wide a preview is, in pixels.
const PREVIEW_WIDTH: u32 = 800;

/// A preview image: JPEG bytes and its size.
#[derive(Debug)]
pub struct Sketch {
    pub jpeg: bytes::Bytes,
    pub width: u32,
    pub height: u32,
    /// Cells across and down: the job's, or fewer when it has more than a preview shows.
    pub cols: u32,
    pub rows: u32,
    /// The real mosaic's size in pixels.
    pub mosaic_width: u32,
    pub mosaic_height: u32,
    /// The photo's size, upright: the page learns it here when the browser cannot show the
    /// photo itself (HEIC in most browsers).
    pub photo_width: u32,
    pub photo_height: u32,
}

/// Makes the preview of `spec` for the photo `bytes` from `library` (the version `spec`
/// names): adapted and refused as the job would be (its size, the library's shape and size;
/// `given` says which fields the submission gave). CPU-bound.
pub fn sketch(
    bytes: &[u8],
    spec: &JobSpec,
    library: &Library,
    limits: &JobLimits,
    given: impl Fn(&str) -> bool,
) -> Result<Sketch, ApiError> {
    let target = decode_target(bytes, library.background()).map_err(|e| {
        ApiError::unprocessable(
            ErrorCode::CorruptImage,
            format!("the image cannot be decoded: {e}"),
        )
    })?;
    let (width, height) = target.dimensions();
    // The job's own grid, as the job would be sized.
    let size = spec.size(width, height, limits).map_err(ApiError::from)?;
    let mut spec = spec.clone();
    let name = spec.library.id.clone();
    spec.fit_library(&size, (&name, library.len() as u32, library.shape()), given)
        .map_err(ApiError::from)?;
    let cols = size.sizing.cols.min(MAX_PREVIEW_COLS);
    // Tiles of the library's shape, a few pixels a side, the short side at least 4.
    let shape = library.shape();
    let (mut tw, mut th) = shape.fit((PREVIEW_WIDTH / cols).clamp(4, 32));
    while tw.min(th) < 4 {
        (tw, th) = shape.fit(tw.max(th) + 1);
    }
    let preview = spec.sketch(cols, (tw, th));
    // The photo at a few pixels a cell: enough for its cells' colours, and enough pixels for
    // every cell however small the photo.
    let small_w = cols * 4;
    let small_h = ((u64::from(small_w) * u64::from(height)) / u64::from(width)).max(1) as u32;
    let small = if small_w < width {
        image::imageops::thumbnail(&target, small_w, small_h)
    } else {
        image::imageops::resize(
            &target,
            small_w,
            small_h,
            image::imageops::FilterType::Triangle,
        )
    };
    drop(target);
    let relaxed = JobLimits {
        max_output_pixels: u64::MAX,
        ..limits.clone()
    };
    let sized = preview
        .size(small.width(), small.height(), &relaxed)
        .map_err(ApiError::from)?;
    let background = preview.options.tile_background().resolve(&small, library);
    let over = background.and_then(|bg| library.over(bg));
    let library = over.as_ref().unwrap_or(library);
    let engine =
        |e: tessera_engine::Error| ApiError::unprocessable(ErrorCode::PreviewFailed, e.to_string());
    let plan = Plan::make(&small, library, &sized.options).map_err(engine)?;
    let cache = TileCache::new(library, plan.tile_size());
    let mut pixels = VecSink::default();
    render_to_sink(&plan, &cache, &mut pixels, u32::MAX, &|_, _| {}).map_err(engine)?;
    let (w, h) = (plan.width(), plan.total_height());
    let jpeg = crate::imaging::stored_mosaic::encode_jpeg(&pixels.pixels, (w, h), 85)?;
    Ok(Sketch {
        jpeg,
        width: w,
        height: h,
        cols: plan.cols(),
        rows: plan.total_rows(),
        mosaic_width: size.output.width,
        mosaic_height: size.output.height,
        photo_width: width,
        photo_height: height,
    })
}
