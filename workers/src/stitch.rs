//! Stitching: the slices of a job, streamed in order into one PNG and a block upload.
//!
//! Three stages overlap: this task reads slice blobs with ranged gets and regroups their rows into
//! bands of a fixed size; a blocking thread encodes the bands (PNG); a task hands the compressed
//! chunks to the [`BlobUpload`]. Bounded channels join them, so memory holds a few bands and
//! chunks, never the image. The bands do not depend on the slice layout, so the same pixels give
//! the same bytes; the upload becomes visible whole, only at `finish`, so two controllers
//! stitching the same job at once rewrite identical bytes and never leave a torn output.

use std::io::Write;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use tessera_engine::{BandSink, PngSink};
use tessera_shared::storage::{BlobMeta, BlobStore, StorageError};
use tokio::sync::mpsc;

/// Size of the compressed chunks handed to the upload (one staged block each).
const CHUNK_BYTES: usize = 4 << 20;

#[derive(Debug, thiserror::Error)]
pub enum StitchError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The slices do not make the image they should (a bug or damaged blobs: not retried).
    #[error("cannot stitch: {0}")]
    Invalid(String),
}

/// Streams `slices` (blob keys of raw RGB8 rows, top to bottom, with their sizes) into a PNG of
/// `width` x `height` at `output`, reading about `band_bytes` at a time.
pub async fn stitch_png(
    blobs: Arc<dyn BlobStore>,
    slices: &[(String, u64)],
    output: &str,
    width: u32,
    height: u32,
    band_bytes: usize,
) -> Result<BlobMeta, StitchError> {
    let row_bytes = width as usize * 3;
    let total: u64 = slices.iter().map(|(_, size)| size).sum();
    if total != row_bytes as u64 * u64::from(height) {
        return Err(StitchError::Invalid(format!(
            "the slices hold {total} bytes, a {width} x {height} image needs {}",
            row_bytes as u64 * u64::from(height)
        )));
    }
    let band = (band_bytes / row_bytes).max(1) * row_bytes;

    let (band_tx, mut band_rx) = mpsc::channel::<Bytes>(2);
    let (chunk_tx, mut chunk_rx) = mpsc::channel::<Bytes>(2);
    let encoder = tokio::task::spawn_blocking(move || {
        let writer = ChunkWriter {
            tx: chunk_tx,
            buf: Vec::with_capacity(CHUNK_BYTES),
        };
        let mut sink =
            PngSink::new(writer, width, height).map_err(|e| StitchError::Invalid(e.to_string()))?;
        while let Some(rows) = band_rx.blocking_recv() {
            sink.write_rows(&rows)
                .map_err(|e| StitchError::Invalid(e.to_string()))?;
        }
        sink.finish()
            .map_err(|e| StitchError::Invalid(e.to_string()))
    });
    let upload = blobs.upload(output).await?;
    let uploader = tokio::spawn(async move {
        let mut upload = upload;
        while let Some(chunk) = chunk_rx.recv().await {
            if let Err(e) = upload.write(chunk).await {
                return Err((e, upload));
            }
        }
        Ok(upload)
    });

    let read = read_bands(&*blobs, slices, band, &band_tx).await;
    drop(band_tx);
    let encoded = encoder
        .await
        .map_err(|e| StitchError::Invalid(format!("the encoder stopped: {e}")))
        .and_then(|r| r);
    let upload = match uploader.await {
        Ok(Ok(upload)) => upload,
        Ok(Err((e, upload))) => {
            let _ = upload.abort().await;
            return Err(e.into());
        }
        Err(e) => return Err(StitchError::Invalid(format!("the upload stopped: {e}"))),
    };
    if let Err(e) = read.and(encoded) {
        let _ = upload.abort().await;
        return Err(e);
    }
    Ok(upload.finish().await?)
}

/// Reads the slices in order and sends their rows on in bands of exactly `band` bytes (the last
/// one shorter).
async fn read_bands(
    blobs: &dyn BlobStore,
    slices: &[(String, u64)],
    band: usize,
    tx: &mpsc::Sender<Bytes>,
) -> Result<(), StitchError> {
    let mut pending = BytesMut::with_capacity(band);
    for (key, size) in slices {
        let mut offset = 0u64;
        while offset < *size {
            let want = (band - pending.len()) as u64;
            let end = (offset + want).min(*size);
            let got = blobs.get_range(key, offset..end).await?;
            if got.len() as u64 != end - offset {
                return Err(StitchError::Invalid(format!(
                    "slice {key} is shorter than its listed size"
                )));
            }
            offset = end;
            pending.extend_from_slice(&got);
            if pending.len() == band {
                let full = std::mem::replace(&mut pending, BytesMut::with_capacity(band));
                if tx.send(full.freeze()).await.is_err() {
                    // The encoder stopped; its error is reported by the caller.
                    return Ok(());
                }
            }
        }
    }
    if !pending.is_empty() {
        let _ = tx.send(pending.freeze()).await;
    }
    Ok(())
}

/// Collects the encoder's output into chunks and hands each to the upload task.
struct ChunkWriter {
    tx: mpsc::Sender<Bytes>,
    buf: Vec<u8>,
}

impl ChunkWriter {
    fn send(&mut self) -> std::io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK_BYTES));
        self.tx
            .blocking_send(Bytes::from(chunk))
            .map_err(|_| std::io::Error::other("the upload stopped"))
    }
}

impl Write for ChunkWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        let room = CHUNK_BYTES - self.buf.len();
        let n = data.len().min(room);
        self.buf.extend_from_slice(&data[..n]);
        if self.buf.len() == CHUNK_BYTES {
            self.send()?;
        }
        Ok(n)
    }

    /// Chunks go out when full or at the end: a flush does not cut a short block.
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for ChunkWriter {
    fn drop(&mut self) {
        // The encoder drops its writer when the image is complete: the rest goes out now. If
        // the upload task is gone, it has failed and reports that itself.
        let _ = self.send();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_shared::storage::PutMode;
    use tessera_shared::storage::embedded::EmbeddedStorage;

    /// Stores `pixels` cut after the given rows and stitches them.
    async fn stitched(
        blobs: &Arc<dyn BlobStore>,
        pixels: &[u8],
        width: u32,
        cuts: &[usize],
        band: usize,
    ) -> Bytes {
        let row = width as usize * 3;
        let height = pixels.len() / row;
        let job = uuid::Uuid::new_v4();
        let mut bounds = vec![0];
        bounds.extend_from_slice(cuts);
        bounds.push(height);
        let mut slices = Vec::new();
        for (seq, pair) in bounds.windows(2).enumerate() {
            let key = format!("sliceoutput/{job}/{seq:05}");
            let part = Bytes::copy_from_slice(&pixels[pair[0] * row..pair[1] * row]);
            blobs
                .put(&key, part.clone(), PutMode::CreateNew)
                .await
                .unwrap();
            slices.push((key, part.len() as u64));
        }
        let output = format!("imageoutput/{job}");
        stitch_png(blobs.clone(), &slices, &output, width, height as u32, band)
            .await
            .unwrap();
        blobs.get(&output).await.unwrap()
    }

    #[tokio::test]
    async fn the_slice_layout_does_not_change_the_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = EmbeddedStorage::open(dir.path()).unwrap().blobs();
        let (width, height) = (37u32, 91usize);
        let pixels: Vec<u8> = (0..width as usize * 3 * height)
            .map(|i| ((i * 7919) % 251) as u8)
            .collect();
        let whole = stitched(&blobs, &pixels, width, &[], 1000).await;
        let cut = stitched(&blobs, &pixels, width, &[1, 40, 41, 90], 1000).await;
        assert_eq!(whole, cut);
        let decoder = png::Decoder::new(std::io::Cursor::new(whole.to_vec()));
        let mut reader = decoder.read_info().unwrap();
        let mut out = vec![0; reader.output_buffer_size().unwrap()];
        reader.next_frame(&mut out).unwrap();
        assert_eq!(out, pixels);
    }

    #[tokio::test]
    async fn slices_of_the_wrong_size_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = EmbeddedStorage::open(dir.path()).unwrap().blobs();
        blobs
            .put(
                "sliceoutput/x/00000",
                Bytes::from(vec![0; 30]),
                PutMode::CreateNew,
            )
            .await
            .unwrap();
        let slices = [("sliceoutput/x/00000".to_string(), 30)];
        let err = stitch_png(blobs, &slices, "imageoutput/x", 4, 3, 1000)
            .await
            .unwrap_err();
        assert!(matches!(err, StitchError::Invalid(_)), "{err}");
    }
}
