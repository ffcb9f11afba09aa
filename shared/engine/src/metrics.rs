//! The quality metric, as `shared/tools/mosaic_metrics.py` defines it: CIEDE2000 between target
//! and mosaic, both area-averaged to the cell grid (mean and 95th percentile), the SSIM of the
//! two seen from a distance (`ssim_view`, see `view.rs`), and the share of cells whose tile
//! (identified by its pixels) appears again within radius 1 and 5.
//! [`MosaicCells`] is a band sink, so a mosaic is measured as it streams out.

use std::collections::HashMap;

use crate::color::{ciede2000, srgb_to_lab};
use crate::error::Error;
use crate::hash::Fnv;
use crate::output::BandSink;
use crate::plan::Plan;
use crate::render::{TileCache, blend_shift};
use crate::resample::{AreaResampler, area_taps};
use crate::view::{VIEW_MAX_CELLS, VIEW_SCALE, ViewAccumulator, lightness, ssim_view, target_view};
use rayon::prelude::*;

/// Objective quality of a mosaic on its cell grid.
#[derive(Debug, Clone, PartialEq)]
pub struct Quality {
    pub cells: usize,
    pub de00_mean: f64,
    pub de00_p95: f64,
    /// SSIM of L* seen from a distance (higher is better, 1 at most); None on grids under 2
    /// cells a side or over [`VIEW_MAX_CELLS`] cells.
    pub ssim_view: Option<f64>,
    /// Distinct tiles used.
    pub distinct: usize,
    /// Uses of the most used tile.
    pub max_uses: usize,
    /// Share of cells whose tile appears again within Chebyshev radius 1.
    pub dup_r1: f64,
    /// The same within radius 5.
    pub dup_r5: f64,
}

impl std::fmt::Display for Quality {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "de00_mean={:.4} de00_p95={:.4} ssim_view={} cells={} distinct={} max_uses={} dup_r1={:.4} dup_r5={:.4}",
            self.de00_mean,
            self.de00_p95,
            self.ssim_view
                .map_or_else(|| "none".to_string(), |s| format!("{s:.4}")),
            self.cells,
            self.distinct,
            self.max_uses,
            self.dup_r1,
            self.dup_r5
        )
    }
}

/// Per-cell colour sums and pixel digests of a mosaic, fed row by row.
pub struct MosaicCells {
    width: usize,
    cols: usize,
    rows: usize,
    cw: usize,
    ch: usize,
    sums: Vec<[u64; 3]>,
    hashes: Vec<Fnv>,
    view: Option<ViewAccumulator>,
    next_row: usize,
}

impl MosaicCells {
    /// A `width x height` mosaic of `cols x rows` cells (the size must divide evenly).
    pub fn new(width: u32, height: u32, cols: u32, rows: u32) -> Result<Self, Error> {
        let (w, h, c, r) = (
            width as usize,
            height as usize,
            cols as usize,
            rows as usize,
        );
        if c == 0 || r == 0 || w % c != 0 || h % r != 0 {
            return Err(Error::InvalidOption(format!(
                "a {width}x{height} mosaic does not split into {cols}x{rows} equal cells"
            )));
        }
        Ok(Self {
            width: w,
            cols: c,
            rows: r,
            cw: w / c,
            ch: h / r,
            sums: vec![[0; 3]; c * r],
            hashes: vec![Fnv::new(); c * r],
            view: (c * r <= VIEW_MAX_CELLS).then(|| ViewAccumulator::new(w, h, c, r)),
            next_row: 0,
        })
    }

    /// Compares with the target (any size: it is area-averaged to the grid).
    pub fn quality(&self, target: &image::RgbImage) -> Result<Quality, Error> {
        if self.next_row != self.rows * self.ch {
            return Err(Error::InvalidOption("the mosaic is incomplete".into()));
        }
        let (c, r) = (self.cols, self.rows);
        let t = AreaResampler::new(target.width() as usize, target.height() as usize, c, r)
            .rows(target.as_raw(), 0..r);
        let n = (self.cw * self.ch) as f64;
        let de: Vec<f64> = (0..c * r)
            .map(|i| {
                let tl = srgb_to_lab([t[i * 3] as f64, t[i * 3 + 1] as f64, t[i * 3 + 2] as f64]);
                let s = self.sums[i];
                let ml = srgb_to_lab([s[0] as f64 / n, s[1] as f64 / n, s[2] as f64 / n]);
                ciede2000(tl, ml)
            })
            .collect();
        let mut table: HashMap<u64, u32> = HashMap::new();
        let ids: Vec<u32> = self
            .hashes
            .iter()
            .map(|h| {
                let next = table.len() as u32;
                *table.entry(h.finish()).or_insert(next)
            })
            .collect();
        let ssim = self.view.as_ref().and_then(|v| {
            let t = target_view(target, c, r);
            ssim_view(&t, &v.lightness(), c * VIEW_SCALE, r * VIEW_SCALE)
        });
        Ok(summarize(de, ssim, &ids, c, r))
    }
}

/// The figures from each cell's colour difference and an identity per cell's tile.
fn summarize(mut de: Vec<f64>, ssim_view: Option<f64>, ids: &[u32], c: usize, r: usize) -> Quality {
    let de00_mean = de.iter().sum::<f64>() / de.len() as f64;
    // The 95th percentile between the two figures either side of it, each found in place.
    let pos = 0.95 * (de.len() - 1) as f64;
    let (lo, frac) = (pos.floor() as usize, pos - pos.floor());
    let (_, &mut at, above) = de.select_nth_unstable_by(lo, f64::total_cmp);
    let next = above.iter().copied().min_by(f64::total_cmp).unwrap_or(at);
    let de00_p95 = at + (next - at) * frac;
    let mut counts: HashMap<u32, usize> = HashMap::new();
    ids.iter().for_each(|&i| *counts.entry(i).or_default() += 1);
    let dup = |rad: usize| {
        let hits: usize = (0..r)
            .into_par_iter()
            .map(|y| {
                (0..c)
                    .filter(|&x| {
                        let id = ids[y * c + x];
                        (y.saturating_sub(rad)..=(y + rad).min(r - 1)).any(|yy| {
                            (x.saturating_sub(rad)..=(x + rad).min(c - 1))
                                .any(|xx| (yy, xx) != (y, x) && ids[yy * c + xx] == id)
                        })
                    })
                    .count()
            })
            .sum();
        hits as f64 / (c * r) as f64
    };
    Quality {
        cells: c * r,
        de00_mean,
        de00_p95,
        ssim_view,
        distinct: counts.len(),
        max_uses: counts.values().copied().max().unwrap_or(0),
        dup_r1: dup(1),
        dup_r5: dup(5),
    }
}

/// The quality figures of the mosaic a whole plan renders, worked out from the plan and target
/// without rendering: each cell's target colour against its tile's mean at the plan's tile size,
/// blend included, the view from each tile's block means, and the repeats of the tiles chosen.
/// Tiles are seen under their transforms, as rendered. Agrees with measuring the rendered mosaic
/// up to the rounding of cell colours, and without blend or transforms on the repeats too
/// (measured from pixels, a tile tinted or turned two ways counts twice).
pub fn plan_quality(
    plan: &Plan,
    cache: &TileCache,
    target: &image::RgbImage,
) -> Result<Quality, Error> {
    let (c, r) = (plan.cols() as usize, plan.total_rows() as usize);
    if plan.row_range() != (0..plan.total_rows()) || c == 0 || r == 0 {
        return Err(Error::InvalidOption(
            "quality needs the plan of the whole image".into(),
        ));
    }
    if plan
        .tiles()
        .iter()
        .any(|&t| t as usize >= cache.library().len())
    {
        return Err(Error::PlanMismatch("a tile is not in the library".into()));
    }
    if plan.tile_size() != cache.tile_size() {
        return Err(Error::PlanMismatch(format!(
            "the plan has {} px tiles, the tile cache {} px",
            plan.tile_size(),
            cache.tile_size()
        )));
    }
    cache.check_shape()?;
    let blend = plan.blend() as i32;
    let shift = |t: u32, cell: [u8; 3]| {
        if blend == 0 {
            [0; 3]
        } else {
            blend_shift(cache.mean(t), cell, blend)
        }
    };
    // Without blend a tile shows its own mean in every cell: each tile used is converted once.
    let tile_lab: Vec<Option<[f64; 3]>> = if blend == 0 {
        let mut used = vec![false; cache.library().len()];
        for &t in plan.tiles() {
            used[t as usize] = true;
        }
        used.par_iter()
            .enumerate()
            .map(|(t, &used)| used.then(|| srgb_to_lab(cache.shifted_mean(t as u32, [0; 3]))))
            .collect()
    } else {
        Vec::new()
    };
    let de: Vec<f64> = plan
        .tiles()
        .par_iter()
        .zip(plan.colours())
        .map(|(&t, &cell)| {
            let tile = match tile_lab.get(t as usize).copied().flatten() {
                Some(lab) => lab,
                None => srgb_to_lab(cache.shifted_mean(t, shift(t, cell))),
            };
            ciede2000(srgb_to_lab(cell.map(f64::from)), tile)
        })
        .collect();
    let ssim = (c * r <= VIEW_MAX_CELLS)
        .then(|| {
            const V: usize = VIEW_SCALE;
            let vw = c * V;
            // Each cell is V x V view samples whatever its shape, as the rendered mosaic is
            // measured (see `view.rs`).
            let size = plan.tile_size();
            let tx = area_taps(size.width as usize, V);
            let ty = area_taps(size.height as usize, V);
            let mut rgb = vec![0f32; vw * r * V * 3];
            rgb.par_chunks_mut(vw * V * 3)
                .enumerate()
                .for_each(|(cy, band)| {
                    for cx in 0..c {
                        let i = cy * c + cx;
                        let t = plan.tiles()[i];
                        let turn = plan.transforms()[i];
                        let blocks =
                            cache.block_means(t, turn, shift(t, plan.colours()[i]), (&tx, &ty));
                        for (b, p) in blocks.iter().enumerate() {
                            let at = ((b / V) * vw + cx * V + b % V) * 3;
                            band[at..at + 3].copy_from_slice(p);
                        }
                    }
                });
            let t = target_view(target, c, r);
            ssim_view(&t, &lightness(&rgb), vw, r * V)
        })
        .flatten();
    // Repeats count the tiles chosen: a tile tinted or turned differently in two cells is still
    // the same tile, and one photo shown twice.
    Ok(summarize(de, ssim, plan.tiles(), c, r))
}

/// Mean and 95th percentile CIEDE2000 of the mosaic a whole plan renders with the target laid
/// over it at `percent` ([`crate::overlay::Overlay`]): each cell's tile colour (blend included) mixed
/// with its target colour as the overlay mixes the pixels. Beside [`plan_quality`]'s, which are
/// the tiles' alone.
pub fn overlaid_difference(plan: &Plan, cache: &TileCache, percent: u8) -> (f64, f64) {
    let blend = plan.blend() as i32;
    let de: Vec<f64> = plan
        .tiles()
        .par_iter()
        .zip(plan.colours())
        .map(|(&t, &cell)| {
            let shift = if blend == 0 {
                [0; 3]
            } else {
                blend_shift(cache.mean(t), cell, blend)
            };
            let tile = cache.shifted_mean(t, shift);
            let mixed = crate::overlay::overlaid(tile, cell, percent);
            ciede2000(srgb_to_lab(cell.map(f64::from)), srgb_to_lab(mixed))
        })
        .collect();
    let q = summarize(
        de,
        None,
        plan.tiles(),
        plan.cols() as usize,
        plan.total_rows() as usize,
    );
    (q.de00_mean, q.de00_p95)
}

impl BandSink for MosaicCells {
    fn write_rows(&mut self, rows: &[u8]) -> Result<(), Error> {
        let row_bytes = self.width * 3;
        if !rows.len().is_multiple_of(row_bytes)
            || self.next_row + rows.len() / row_bytes > self.rows * self.ch
        {
            return Err(Error::InvalidOption("rows do not fit the mosaic".into()));
        }
        for row in rows.chunks_exact(row_bytes) {
            if let Some(view) = &mut self.view {
                view.add_row(row);
            }
            let cy = self.next_row / self.ch;
            for cx in 0..self.cols {
                let cell = &row[cx * self.cw * 3..(cx + 1) * self.cw * 3];
                let i = cy * self.cols + cx;
                self.hashes[i].update(cell);
                let s = &mut self.sums[i];
                for p in cell.chunks_exact(3) {
                    s[0] += p[0] as u64;
                    s[1] += p[1] as u64;
                    s[2] += p[2] as u64;
                }
            }
            self.next_row += 1;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), Error> {
        Ok(())
    }
}

/// Measures a mosaic held in memory.
pub fn evaluate(
    target: &image::RgbImage,
    mosaic: &image::RgbImage,
    cols: u32,
    rows: u32,
) -> Result<Quality, Error> {
    let mut cells = MosaicCells::new(mosaic.width(), mosaic.height(), cols, rows)?;
    cells.write_rows(mosaic.as_raw())?;
    cells.quality(target)
}

/// Measures a mosaic image file; PNG is decoded row by row, so a gigapixel file needs little memory.
pub fn evaluate_file(
    target: &image::RgbImage,
    mosaic: &std::path::Path,
    cols: u32,
    rows: u32,
) -> Result<Quality, Error> {
    let file = std::fs::File::open(mosaic).map_err(|e| Error::io(mosaic, e))?;
    let is_png = mosaic
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("png"));
    if is_png {
        let mut dec = png::Decoder::new(std::io::BufReader::new(file));
        dec.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
        let mut reader = dec.read_info().map_err(|e| Error::Decode(e.to_string()))?;
        let (w, h) = (reader.info().width, reader.info().height);
        let (ct, _) = reader.output_color_type();
        let mut cells = MosaicCells::new(w, h, cols, rows)?;
        let mut rgb = Vec::with_capacity(w as usize * 3);
        while let Some(row) = reader
            .next_row()
            .map_err(|e| Error::Decode(e.to_string()))?
        {
            let data = row.data();
            rgb.clear();
            match ct {
                png::ColorType::Rgb => rgb.extend_from_slice(data),
                png::ColorType::Rgba => data
                    .chunks_exact(4)
                    .for_each(|p| rgb.extend_from_slice(&p[..3])),
                png::ColorType::Grayscale => {
                    data.iter().for_each(|&v| rgb.extend_from_slice(&[v, v, v]))
                }
                png::ColorType::GrayscaleAlpha => data
                    .chunks_exact(2)
                    .for_each(|p| rgb.extend_from_slice(&[p[0], p[0], p[0]])),
                png::ColorType::Indexed => {
                    return Err(Error::Decode("indexed PNG not expanded".into()));
                }
            }
            cells.write_rows(&rgb)?;
        }
        return cells.quality(target);
    }
    let bytes = std::fs::read(mosaic).map_err(|e| Error::io(mosaic, e))?;
    let img = crate::decode::decode_target(&bytes, [255, 255, 255])?;
    evaluate(target, &img, cols, rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The percentile and the repeats, against the plain ways of working them out: a full sort,
    /// and a scan of each cell's neighbourhood.
    #[test]
    fn summary_figures_agree_with_plain_counts() {
        let mut state = crate::seeded(3);
        let mut next = |n: u64| (state() >> 33) % n;
        for (c, r) in [(1, 1), (1, 2), (7, 5), (40, 23)] {
            let de: Vec<f64> = (0..c * r).map(|_| next(10_000) as f64 / 100.0).collect();
            let ids: Vec<u32> = (0..c * r).map(|_| next(12) as u32).collect();
            let q = summarize(de.clone(), None, &ids, c, r);
            let mut sorted = de.clone();
            sorted.sort_by(f64::total_cmp);
            let pos = 0.95 * (sorted.len() - 1) as f64;
            let lo = pos.floor() as usize;
            let hi = (lo + 1).min(sorted.len() - 1);
            let want = sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - pos.floor());
            assert_eq!(q.de00_p95.to_bits(), want.to_bits(), "{c} x {r}");
            for (rad, got) in [(1, q.dup_r1), (5, q.dup_r5)] {
                let mut hits = 0;
                for i in 0..c * r {
                    let (y, x) = ((i / c) as i64, (i % c) as i64);
                    hits += (0..c * r).any(|j| {
                        let (yy, xx) = ((j / c) as i64, (j % c) as i64);
                        j != i && ids[j] == ids[i] && (yy - y).abs() <= rad && (xx - x).abs() <= rad
                    }) as usize;
                }
                assert_eq!(got, hits as f64 / (c * r) as f64, "{c} x {r}, radius {rad}");
            }
        }
    }
}
