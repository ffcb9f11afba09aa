//! The upper levels of a big mosaic's pyramid, made in one pass as soon as its job is done, so
//! that a viewer zooming to a coarse level finds its tiles kept instead of waiting for the rows
//! under a whole band of the level to be inflated.
//!
//! One decode of the result feeds every level, through the engine's [`Pyramid`]: each pixel is
//! the rounded mean of its 2^l block, the same as a tile made alone (`routes::tiles`). The levels
//! go on past the top of the zoom pyramid down to one pixel, for Deep Zoom viewers.

use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::Semaphore;

use tessera_shared::jobs::{JobRecord, JobState};
use tessera_shared::keys::BlobKey;
use tessera_shared::storage::{BlobStore, PutMode};

use crate::api_error::ApiResult;
use tessera_engine::Pyramid;
use tessera_engine::pyramid::dzi_max_level;

use crate::imaging::stored_mosaic::{Source, decode_err, encode_png};

/// Mosaics from this many pixels get their upper levels made when done (smaller ones make a
/// band of a level within a fraction of a second when it is first asked for).
pub const WARM_MIN_PIXELS: u64 = 1 << 27;

/// One mosaic at a time: each decode takes a core.
static WARMING: Semaphore = Semaphore::const_new(1);

/// Makes and keeps levels 1 and up (to one pixel) of `record`'s mosaic in the background, if it is done and
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
            let last = dzi_max_level(source.width, source.height);
            upper_levels(&source, &handle, (1, last), |level, x, y, png| {
                let key = BlobKey::ImageTile { job, level, x, y }.path();
                handle
                    .block_on(blobs.put(&key, png, PutMode::Overwrite))
                    .map_err(crate::api_error::ApiError::storage)?;
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

/// Calls `keep(level, x, y, png)` for every tile of levels `first..=last`, from one decode.
pub(crate) fn upper_levels(
    source: &Source,
    handle: &tokio::runtime::Handle,
    (first, last): (u32, u32),
    mut keep: impl FnMut(u32, u32, u32, Bytes) -> ApiResult<()>,
) -> ApiResult<()> {
    let mut pyramid = Pyramid::new(source.width, source.height, first, last);
    let mut tiles = Vec::new();
    let mut failed = None;
    source.rows(handle, 0..source.height, |_, row| {
        if failed.is_some() {
            return;
        }
        let made = pyramid
            .push_row(row, &mut tiles)
            .map_err(decode_err)
            .and_then(|()| {
                tiles.drain(..).try_for_each(|t| {
                    keep(t.level, t.x, t.y, encode_png(&t.pixels, t.width, t.height)?)
                })
            });
        if let Err(e) = made {
            failed = Some(e);
        }
    })?;
    failed.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use bytes::Bytes;
    use image::ImageEncoder as _;
    use tessera_shared::storage::embedded::EmbeddedStorage;
    use tessera_shared::storage::{BlobStore, PutMode};

    use super::upper_levels;
    use crate::api::zoom_tiles::make_tiles;
    use crate::imaging::stored_mosaic::{Source, TILE, level_size, top_level};

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
            let top = top_level(width, height);
            upper_levels(&source, &handle, (1, top), |level, x, y, png| {
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
