//! The upper levels of a big mosaic's pyramid, made in one pass as soon as its job is done, so
//! that a viewer zooming to a coarse level finds its tiles kept instead of waiting for the rows
//! under a whole band of the level to be inflated.
//!
//! One decode of the result feeds every level: level 1 sums 2 x 2 blocks of pixels, each level
//! above sums 2 x 2 blocks of the sums below. Sums compose exactly, so each pixel is the rounded
//! mean of its 2^l block (cut short at the right and bottom edges), the same as a tile made
//! alone (`routes::tiles`). Memory holds one row of sums and one band of 256 rows per level.

use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::Semaphore;

use tessera_shared::jobs::{JobRecord, JobState};
use tessera_shared::keys::BlobKey;
use tessera_shared::storage::{BlobStore, PutMode};

use crate::error::ApiResult;
use crate::mosaic::{Source, TILE, encode_png, level_size, top_level};

/// Mosaics from this many pixels get their upper levels made when done (smaller ones make a
/// band of a level within a fraction of a second when it is first asked for).
pub const WARM_MIN_PIXELS: u64 = 1 << 27;

/// One mosaic at a time: each decode takes a core.
static WARMING: Semaphore = Semaphore::const_new(1);

/// Makes and keeps levels 1 and up of `record`'s mosaic in the background, if it is done and
/// big enough; failures are logged (tiles are then made when asked for).
pub(crate) fn warm_in_background(blobs: Arc<dyn BlobStore>, record: &JobRecord) {
    let (Some(output), Some(key)) = (record.output, record.result_blob.clone()) else {
        return;
    };
    let (width, height) = (output.width, output.height);
    if record.state != JobState::Done || u64::from(width) * u64::from(height) < WARM_MIN_PIXELS {
        return;
    }
    let job = record.id;
    tokio::spawn(async move {
        let Ok(_turn) = WARMING.acquire().await else {
            return;
        };
        let started = std::time::Instant::now();
        let handle = tokio::runtime::Handle::current();
        let source = Source {
            blobs: blobs.clone(),
            key,
            index: None,
            width,
            height,
        };
        let made = tokio::task::spawn_blocking(move || {
            let mut tiles = 0u64;
            upper_levels(&source, &handle, |level, x, y, png| {
                let key = BlobKey::ImageTile { job, level, x, y }.path();
                handle
                    .block_on(blobs.put(&key, png, PutMode::Overwrite))
                    .map_err(crate::error::ApiError::storage)?;
                tiles += 1;
                Ok(())
            })
            .map(|()| tiles)
        })
        .await;
        match made {
            Ok(Ok(tiles)) => tracing::info!(
                %job,
                tiles,
                ms = started.elapsed().as_millis() as u64,
                "upper pyramid levels made"
            ),
            Ok(Err(e)) => tracing::warn!(%job, error = %e.message, "upper pyramid levels not made"),
            Err(e) => tracing::warn!(%job, error = %e, "upper pyramid levels not made"),
        }
    });
}

/// One level's state: the sums of the output row being gathered, and the rows made since the
/// last band of tiles.
struct Level {
    level: u32,
    width: u32,
    height: u32,
    sums: Vec<u64>,
    band: Vec<u8>,
    band_rows: u32,
}

/// Calls `keep(level, x, y, png)` for every tile of levels 1 to the top, from one decode.
pub(crate) fn upper_levels(
    source: &Source,
    handle: &tokio::runtime::Handle,
    mut keep: impl FnMut(u32, u32, u32, Bytes) -> ApiResult<()>,
) -> ApiResult<()> {
    let (width, height) = (source.width, source.height);
    let top = top_level(width, height);
    if top == 0 {
        return Ok(());
    }
    let mut levels: Vec<Level> = (1..=top)
        .map(|level| {
            let (w, h) = level_size(width, height, level);
            Level {
                level,
                width: w,
                height: h,
                sums: vec![0; w as usize * 3],
                band: Vec::new(),
                band_rows: 0,
            }
        })
        .collect();
    let mut failed = None;
    source.rows(handle, 0..height, |y, row| {
        if failed.is_some() {
            return;
        }
        let sums = &mut levels[0].sums;
        for (x, px) in row.chunks_exact(3).enumerate() {
            let at = (x >> 1) * 3;
            sums[at] += u64::from(px[0]);
            sums[at + 1] += u64::from(px[1]);
            sums[at + 2] += u64::from(px[2]);
        }
        if (y % 2 == 1 || y + 1 == height)
            && let Err(e) = row_done(&mut levels, 0, y >> 1, (width, height), &mut keep)
        {
            failed = Some(e);
        }
    })?;
    failed.map_or(Ok(()), Err)
}

/// Output row `row` of `levels[i]` has all its sums: makes its pixels, cuts a band of tiles when
/// it has 256 rows (or is the last), and adds the sums into the level above.
fn row_done(
    levels: &mut [Level],
    i: usize,
    row: u32,
    (width, height): (u32, u32),
    keep: &mut impl FnMut(u32, u32, u32, Bytes) -> ApiResult<()>,
) -> ApiResult<()> {
    let (below, above) = levels.split_at_mut(i + 1);
    let this = &mut below[i];
    let block = 1u64 << this.level;
    let rows_in = (u64::from(height) - u64::from(row) * block).min(block);
    for (j, px) in this.sums.chunks_exact(3).enumerate() {
        let cols_in = (u64::from(width) - j as u64 * block).min(block);
        let n = cols_in * rows_in;
        this.band
            .extend(px.iter().map(|&s| ((s + n / 2) / n) as u8));
    }
    this.band_rows += 1;
    if let Some(next) = above.first_mut() {
        for (j, px) in this.sums.chunks_exact(3).enumerate() {
            let at = (j >> 1) * 3;
            next.sums[at] += px[0];
            next.sums[at + 1] += px[1];
            next.sums[at + 2] += px[2];
        }
    }
    this.sums.iter_mut().for_each(|s| *s = 0);
    let last = row + 1 == this.height;
    if this.band_rows == TILE || last {
        let ty = row / TILE;
        let w = this.width as usize;
        for tx in 0..this.width.div_ceil(TILE) {
            let (a, b) = (
                (tx * TILE) as usize * 3,
                ((tx + 1) * TILE).min(this.width) as usize * 3,
            );
            let pixels: Vec<u8> = this
                .band
                .chunks_exact(w * 3)
                .flat_map(|r| &r[a..b])
                .copied()
                .collect();
            let png = encode_png(&pixels, ((b - a) / 3) as u32, this.band_rows)?;
            keep(this.level, tx, ty, png)?;
        }
        this.band.clear();
        this.band_rows = 0;
    }
    if !above.is_empty() && (row % 2 == 1 || last) {
        row_done(levels, i + 1, row >> 1, (width, height), keep)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use bytes::Bytes;
    use image::ImageEncoder as _;
    use tessera_shared::storage::embedded::EmbeddedStorage;
    use tessera_shared::storage::{BlobStore, PutMode};

    use super::upper_levels;
    use crate::mosaic::{Source, TILE, level_size, top_level};
    use crate::routes::tiles::make_tiles;

    fn decode(png: &Bytes) -> (u32, u32, Vec<u8>) {
        let img = image::load_from_memory(png).expect("a PNG").to_rgb8();
        (img.width(), img.height(), img.into_raw())
    }

    /// Every tile made in the one pass is, pixel for pixel, the tile made alone, on a mosaic
    /// whose sides are not multiples of any block (edge blocks are cut short).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[allow(clippy::unwrap_used)]
    async fn one_pass_makes_every_upper_tile_as_a_tile_made_alone() {
        let (width, height) = (1157u32, 1531u32);
        let pixels: Vec<u8> = (0..width * height * 3)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let mut png = Vec::new();
        image::codecs::png::PngEncoder::new(&mut png)
            .write_image(&pixels, width, height, image::ExtendedColorType::Rgb8)
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let blobs: std::sync::Arc<dyn BlobStore> =
            EmbeddedStorage::open(dir.path()).unwrap().blobs();
        blobs
            .put("results/result.png", Bytes::from(png), PutMode::Overwrite)
            .await
            .unwrap();
        let source = Source {
            blobs,
            key: "results/result.png".into(),
            index: None,
            width,
            height,
        };
        let handle = tokio::runtime::Handle::current();
        let made = tokio::task::spawn_blocking(move || {
            let mut made = BTreeMap::new();
            upper_levels(&source, &handle, |level, x, y, png| {
                assert!(
                    made.insert((level, x, y), png).is_none(),
                    "{level}/{x}/{y} twice"
                );
                Ok(())
            })
            .unwrap();
            let mut alone = BTreeMap::new();
            for level in 1..=top_level(width, height) {
                let (_, lh) = level_size(width, height, level);
                for y in 0..lh.div_ceil(TILE) {
                    for (x, png) in make_tiles(&source, &handle, level, 0, y).unwrap() {
                        alone.insert((level, x, y), png);
                    }
                }
            }
            (made, alone)
        })
        .await
        .unwrap();
        let (made, alone) = made;
        assert_eq!(
            made.keys().collect::<Vec<_>>(),
            alone.keys().collect::<Vec<_>>()
        );
        assert!(made.len() > 10, "{} tiles", made.len());
        for (at, png) in &made {
            assert!(decode(png) == decode(&alone[at]), "tile {at:?} differs");
        }
    }
}
