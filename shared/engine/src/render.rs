//! Rendering: rows of a plan into RGB8 pixel rows. A band depends only on its own plan rows and
//! the library, so bands rendered apart are byte-identical to the same rows of a whole render.

use std::sync::{Arc, OnceLock};

use rayon::prelude::*;

use crate::error::Error;
use crate::library::{Library, area_mean};
use crate::output::BandSink;
use crate::plan::Plan;
use crate::resample::{Taps, resize};
use crate::shape::{TileSize, check_shape};
use crate::transform::Transform;

/// Tile renditions at one tile size (of the library's shape: [`render_band`] and the quality
/// measures refuse another), made on first use (Lanczos3 from the stored rendition) and
/// kept for the next bands, as are their transformed copies. Holds only the tiles (and
/// transforms) a plan actually uses.
pub struct TileCache<'a> {
    library: LibraryHandle<'a>,
    size: TileSize,
    tiles: Vec<OnceLock<Rendition>>,
}

/// The library a [`TileCache`] reads: borrowed, or shared so the cache can outlive one job.
enum LibraryHandle<'a> {
    Borrowed(&'a Library),
    Shared(Arc<Library>),
}

impl std::ops::Deref for LibraryHandle<'_> {
    type Target = Library;

    fn deref(&self) -> &Library {
        match self {
            LibraryHandle::Borrowed(library) => library,
            LibraryHandle::Shared(library) => library,
        }
    }
}

struct Rendition {
    pixels: Box<[u8]>,
    mean: [u8; 3],
    /// The pixels under each transform but the first ([`Transform::NONE`]), made on first use.
    turned: [OnceLock<Box<[u8]>>; 7],
}

impl Rendition {
    /// The pixels of a rendition of `size` under `turn` (the mean is the same under all).
    fn pixels(&self, turn: Transform, size: TileSize) -> &[u8] {
        match turn.as_u8() {
            0 => &self.pixels,
            i => self.turned[i as usize - 1].get_or_init(|| {
                let (w, h) = (size.width as usize, size.height as usize);
                turn.apply(&self.pixels, w, h, 3).into_boxed_slice()
            }),
        }
    }
}

impl<'a> TileCache<'a> {
    pub fn new(library: &'a Library, size: TileSize) -> Self {
        Self {
            library: LibraryHandle::Borrowed(library),
            size,
            tiles: (0..library.len()).map(|_| OnceLock::new()).collect(),
        }
    }

    /// A cache holding its library, to be kept and shared (by the slices of a job, say): each
    /// tile is resized once however many bands use it.
    pub fn shared(library: Arc<Library>, size: TileSize) -> TileCache<'static> {
        TileCache {
            tiles: (0..library.len()).map(|_| OnceLock::new()).collect(),
            library: LibraryHandle::Shared(library),
            size,
        }
    }

    pub fn library(&self) -> &Library {
        &self.library
    }

    pub fn tile_size(&self) -> TileSize {
        self.size
    }

    /// An error unless this cache's tiles have its library's shape.
    pub fn check_shape(&self) -> Result<(), Error> {
        check_shape(self.size, self.library.shape())
    }

    /// Mean sRGB colour of tile `t` at this size.
    pub(crate) fn mean(&self, t: u32) -> [u8; 3] {
        self.get(t).mean
    }

    /// Mean colour of tile `t` at this size with `shift` added to every pixel (clamped, as
    /// rendering clamps).
    pub(crate) fn shifted_mean(&self, t: u32, shift: [i32; 3]) -> [f64; 3] {
        let tile = self.get(t);
        if shift == [0; 3] {
            return tile.mean.map(f64::from);
        }
        let mut sum = [0u64; 3];
        for p in tile.pixels.chunks_exact(3) {
            for k in 0..3 {
                sum[k] += (p[k] as i32 + shift[k]).clamp(0, 255) as u64;
            }
        }
        let n = (tile.pixels.len() / 3) as f64;
        sum.map(|s| s as f64 / n)
    }

    /// Area means of tile `t` under `turn` at this size over blocks, row-major, with `shift`
    /// added to every pixel (clamped, as rendering clamps); `tx` (`area_taps(width, k)`) and
    /// `ty` (`area_taps(height, k)`) give `k x k` blocks.
    pub(crate) fn block_means(
        &self,
        t: u32,
        turn: Transform,
        shift: [i32; 3],
        (tx, ty): (&Taps, &Taps),
    ) -> Vec<[f32; 3]> {
        let w = self.size.width as usize;
        let pixels = self.get(t).pixels(turn, self.size);
        let k = tx.start.len();
        let mut out = vec![[0f32; 3]; k * k];
        for (b, acc) in out.iter_mut().enumerate() {
            let (by, bx) = (b / k, b % k);
            for (j, wy) in ty.weights[by].iter().enumerate() {
                let y = ty.start[by] + j;
                for (i, wx) in tx.weights[bx].iter().enumerate() {
                    let p = &pixels[(y * w + tx.start[bx] + i) * 3..];
                    for c in 0..3 {
                        acc[c] += wy * wx * (p[c] as i32 + shift[c]).clamp(0, 255) as f32;
                    }
                }
            }
        }
        out
    }

    /// Tile `t` at this size under `turn` (RGB8, row-major) and its mean colour.
    pub fn turned(&self, t: u32, turn: Transform) -> (&[u8], [u8; 3]) {
        let tile = self.get(t);
        (tile.pixels(turn, self.size), tile.mean)
    }

    fn get(&self, t: u32) -> &Rendition {
        self.tiles[t as usize].get_or_init(|| {
            let base = self.library.rendition(t);
            let (rw, rh) = self.library.rendition_dims();
            let pixels = resize(
                &base,
                rw as usize,
                rh as usize,
                self.size.width as usize,
                self.size.height as usize,
            );
            let mean = area_mean(&pixels).map(|v| v.round() as u8);
            Rendition {
                pixels: pixels.into_boxed_slice(),
                mean,
                turned: Default::default(),
            }
        })
    }
}

fn check(plan: &Plan, cache: &TileCache) -> Result<(), Error> {
    if plan.library_version() != cache.library.version() {
        return Err(Error::PlanMismatch(format!(
            "the plan was made with library {:016x}, not {}",
            plan.library_version(),
            cache.library.version_hex()
        )));
    }
    if let Some(bg) = plan.background()
        && bg != cache.library.background()
    {
        return Err(Error::PlanMismatch(format!(
            "the plan lays the tiles over #{}, the library is over #{} (see Library::over)",
            crate::library::hex_colour(bg),
            crate::library::hex_colour(cache.library.background())
        )));
    }
    if plan.tile_size() != cache.size {
        return Err(Error::PlanMismatch(format!(
            "the plan has {} px tiles, the tile cache {} px",
            plan.tile_size(),
            cache.size
        )));
    }
    cache.check_shape()?;
    if let Some(&t) = plan
        .tiles()
        .iter()
        .find(|&&t| t as usize >= cache.library.len())
    {
        return Err(Error::PlanMismatch(format!(
            "tile {t} is not in the library"
        )));
    }
    Ok(())
}

/// Renders every row the plan holds: `rows x tile height` pixel rows of `width` RGB8 pixels.
pub fn render_band(plan: &Plan, cache: &TileCache) -> Result<Vec<u8>, Error> {
    let len = plan.width() as usize * 3 * plan.band_height() as usize;
    let mut out = vec![0u8; len];
    render_band_into(plan, cache, &mut out)?;
    Ok(out)
}

/// [`render_band`] on the calling thread alone, into `out` (resized to the band; a buffer
/// reused from band to band is not cleared again): for callers that already run one band per
/// core (the image processors), so rendering leaves rayon's threads to the planner.
pub fn render_band_serial(plan: &Plan, cache: &TileCache, out: &mut Vec<u8>) -> Result<(), Error> {
    let len = plan.width() as usize * 3 * plan.band_height() as usize;
    out.resize(len, 0);
    render_into(plan, cache, out, false)
}

/// [`render_band`] into a buffer of exactly the band's size.
pub fn render_band_into(plan: &Plan, cache: &TileCache, out: &mut [u8]) -> Result<(), Error> {
    render_into(plan, cache, out, true)
}

/// Renders the plan's rows into `out`, one cell row per rayon task if `parallel`.
fn render_into(
    plan: &Plan,
    cache: &TileCache,
    out: &mut [u8],
    parallel: bool,
) -> Result<(), Error> {
    check(plan, cache)?;
    let size = plan.tile_size();
    let (tw, th) = (size.width as usize, size.height as usize);
    let cols = plan.cols() as usize;
    let row_bytes = plan.width() as usize * 3;
    let cell_row_bytes = row_bytes * th;
    if out.len() != cell_row_bytes * plan.row_range().len() {
        return Err(Error::InvalidOption(
            "band buffer has the wrong size".into(),
        ));
    }
    let blend = plan.blend() as i32;
    let cell_row = |(cy, band): (usize, &mut [u8])| {
        for cx in 0..cols {
            let i = cy * cols + cx;
            let tile = cache.get(plan.tiles()[i]);
            let pixels = tile.pixels(plan.transforms()[i], size);
            let shift = (blend != 0).then(|| blend_shift(tile.mean, plan.colours()[i], blend));
            copy_tile(band, row_bytes, (cx * tw, 0), pixels, (tw, th), shift);
        }
    };
    if parallel {
        out.par_chunks_mut(cell_row_bytes)
            .enumerate()
            .for_each(cell_row);
    } else {
        out.chunks_mut(cell_row_bytes)
            .enumerate()
            .for_each(cell_row);
    }
    Ok(())
}

/// Copies a `w x h` tile (RGB8) into `band` (rows of `row_bytes`) with its top left at pixel
/// `(x, y)`, adding `shift` to every channel (clamped) when the tile is blended.
pub(crate) fn copy_tile(
    band: &mut [u8],
    row_bytes: usize,
    (x, y): (usize, usize),
    tile: &[u8],
    (w, h): (usize, usize),
    shift: Option<[i32; 3]>,
) {
    for (ty, src) in tile.chunks_exact(w * 3).take(h).enumerate() {
        let at = (y + ty) * row_bytes + x * 3;
        let dst = &mut band[at..at + w * 3];
        match shift {
            None => dst.copy_from_slice(src),
            Some(s) => {
                for (d, p) in dst.chunks_exact_mut(3).zip(src.chunks_exact(3)) {
                    for k in 0..3 {
                        d[k] = (p[k] as i32 + s[k]).clamp(0, 255) as u8;
                    }
                }
            }
        }
    }
}

/// What blending `blend` % toward the cell colour `cell` adds to each channel of a tile whose
/// mean is `mean`.
pub(crate) fn blend_shift(mean: [u8; 3], cell: [u8; 3], blend: i32) -> [i32; 3] {
    [0, 1, 2].map(|k| {
        let d = (cell[k] as i32 - mean[k] as i32) * blend;
        (d + 50 * d.signum()) / 100
    })
}

/// Renders the plan band by band (`band_cells` rows of cells at a time) into `sink`, calling
/// `progress(rows_done, rows_total)`; memory holds one band, whatever the output height.
pub fn render_to_sink(
    plan: &Plan,
    cache: &TileCache,
    sink: &mut dyn BandSink,
    band_cells: u32,
    progress: &dyn Fn(u32, u32),
) -> Result<(), Error> {
    check(plan, cache)?;
    let range = plan.row_range();
    let step = band_cells.max(1);
    let mut y = range.start;
    while y < range.end {
        let end = (y + step).min(range.end);
        let band = plan.rows(y..end)?;
        let pixels = render_band(&band, cache)?;
        sink.write_owned(pixels)?;
        progress(end - range.start, range.len() as u32);
        y = end;
    }
    Ok(())
}
