//! Stitching: the slices' PNG fragments, streamed in order into one PNG and a block upload.
//!
//! The processors filtered and compressed their slices; stitching only frames the compressed
//! bytes: this task reads the fragments with ranged gets and wraps them in IDAT chunks around a
//! zlib stream (checksum combined from the fragments' own), and a task hands chunks of the file
//! to the [`BlobUpload`]. A bounded channel joins the two, so memory holds a read and a few
//! chunks, never the image. The same fragments give the same bytes; the upload becomes visible
//! whole, only at `finish`, so two controllers stitching the same job at once rewrite identical
//! bytes and never leave a torn output.
//!
//! Beside the output, at [`BlobKey::SeekIndex`], the stitcher writes the PNG's [`SeekIndex`]:
//! every fragment's start and the points its header lists, where inflating can start afresh,
//! so readers can decode a few rows of a gigapixel mosaic from a ranged read. It is written
//! after the output, so an output without its index is only ever an older one.
//!
//! [`BlobUpload`]: tessera_shared::storage::BlobUpload

use std::io::Write;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use tessera_engine::{FRAGMENT_HEADER_BYTES, FragmentHeader, FragmentPngWriter, SeekIndex};
use tessera_shared::keys::BlobKey;
use tessera_shared::storage::reader::BlobReader;
use tessera_shared::storage::{BlobMeta, BlobStore, PutMode, StorageError};
use tokio::sync::mpsc;

/// Size of the chunks handed to the upload (one staged block each).
const CHUNK_BYTES: usize = 4 << 20;

#[derive(Debug, thiserror::Error)]
pub enum StitchError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The slices do not make the image they should (a bug or damaged blobs: not retried).
    #[error("cannot stitch: {0}")]
    Invalid(String),
}

fn invalid(e: impl std::fmt::Display) -> StitchError {
    StitchError::Invalid(e.to_string())
}

/// Streams `slices` (blob keys of PNG fragments, top to bottom, with their sizes) into a PNG of
/// `width` x `height` printed at `dpi` at `output`, reading about `band_bytes` at a time; then
/// writes the PNG's seek index at [`BlobKey::SeekIndex`] of `output`.
pub async fn stitch_png(
    blobs: Arc<dyn BlobStore>,
    slices: &[(String, u64)],
    output: &str,
    (width, height): (u32, u32),
    dpi: u32,
    band_bytes: usize,
) -> Result<BlobMeta, StitchError> {
    if let Some((key, _)) = slices
        .iter()
        .find(|(_, size)| *size <= FRAGMENT_HEADER_BYTES as u64)
    {
        return Err(StitchError::Invalid(format!(
            "slice {key} is too short for a PNG fragment"
        )));
    }
    let band = band_bytes.max(64 << 10);
    let (chunk_tx, mut chunk_rx) = mpsc::channel::<Bytes>(2);
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

    let framed = frame(&*blobs, slices, (width, height, dpi), band, &chunk_tx).await;
    drop(chunk_tx);
    let upload = match uploader.await {
        Ok(Ok(upload)) => upload,
        Ok(Err((e, upload))) => {
            let _ = upload.abort().await;
            return Err(e.into());
        }
        Err(e) => return Err(StitchError::Invalid(format!("the upload stopped: {e}"))),
    };
    let index = match framed {
        Ok(index) => index,
        Err(e) => {
            let _ = upload.abort().await;
            return Err(e);
        }
    };
    let meta = upload.finish().await?;
    let key = BlobKey::SeekIndex {
        output: output.to_string(),
    }
    .path();
    blobs
        .put(&key, Bytes::from(index.to_bytes()), PutMode::Overwrite)
        .await?;
    Ok(meta)
}

/// Reads the fragments in order, `band` bytes at a time, and sends the PNG on in chunks of
/// exactly [`CHUNK_BYTES`] (the last one shorter); gives the PNG's seek index.
async fn frame(
    blobs: &dyn BlobStore,
    slices: &[(String, u64)],
    (width, height, dpi): (u32, u32, u32),
    band: usize,
    tx: &mpsc::Sender<Bytes>,
) -> Result<SeekIndex, StitchError> {
    let mut png = FragmentPngWriter::new(Chunks::default(), width, height, dpi).map_err(invalid)?;
    for (key, size) in slices {
        let mut offset = 0u64;
        while offset < *size {
            let end = (offset + band as u64).min(*size);
            let got = blobs.get_range(key, offset..end).await?;
            if got.len() as u64 != end - offset {
                return Err(StitchError::Invalid(format!(
                    "slice {key} is shorter than its listed size"
                )));
            }
            let mut data = &got[..];
            if offset == 0 {
                let bad =
                    |e: tessera_engine::Error| StitchError::Invalid(format!("slice {key}: {e}"));
                let len = FragmentHeader::len_at(data).map_err(bad)?;
                if len as u64 >= *size {
                    return Err(StitchError::Invalid(format!(
                        "slice {key} is too short for its PNG fragment header"
                    )));
                }
                // A header longer than a read (a very tall slice) is read whole first.
                let whole;
                let header = if len > data.len() {
                    whole = blobs.get_range(key, 0..len as u64).await?;
                    FragmentHeader::parse(&whole).map_err(bad)?
                } else {
                    FragmentHeader::parse(data).map_err(bad)?
                };
                png.begin_fragment(&header).map_err(bad)?;
                if len > data.len() {
                    offset = len as u64;
                    continue;
                }
                data = &data[len..];
            }
            offset = end;
            png.write_deflate(data).map_err(invalid)?;
            send_full(png.get_mut(), tx).await?;
        }
    }
    let (mut rest, index) = png.finish_indexed().map_err(invalid)?;
    send_full(&mut rest, tx).await?;
    if !rest.0.is_empty() {
        send(rest.0.split().freeze(), tx).await?;
    }
    Ok(index)
}

async fn send(chunk: Bytes, tx: &mpsc::Sender<Bytes>) -> Result<(), StitchError> {
    // A closed channel means the upload failed; the caller reports its error.
    tx.send(chunk)
        .await
        .map_err(|_| StitchError::Invalid("the upload stopped".into()))
}

async fn send_full(chunks: &mut Chunks, tx: &mpsc::Sender<Bytes>) -> Result<(), StitchError> {
    while chunks.0.len() >= CHUNK_BYTES {
        let chunk = chunks.0.split_to(CHUNK_BYTES).freeze();
        send(chunk, tx).await?;
    }
    Ok(())
}

/// Makes the result file of `format` at `output` from the stitched PNG at `png_key`: the PNG's
/// rows decoded as ranged reads bring them, encoded into a temporary file (TIFF's directories
/// go at its end, so it must seek), which is then uploaded. Memory holds a read, a band of rows
/// and the encoder's own band; disk holds the file until it is uploaded.
pub async fn convert_output(
    blobs: Arc<dyn BlobStore>,
    png: (&str, u64),
    output: &str,
    format: tessera_engine::OutputFormat,
    dpi: u32,
) -> Result<BlobMeta, StitchError> {
    let (png_key, png_size) = png;
    let reader = BlobReader::new(
        blobs.clone(),
        png_key.to_string(),
        tokio::runtime::Handle::current(),
        (0..png_size, CHUNK_BYTES),
    );
    let mut file = tokio::task::spawn_blocking(move || encode_from_png(reader, format, dpi))
        .await
        .map_err(|e| StitchError::Invalid(format!("the conversion stopped: {e}")))??;
    let mut upload = blobs.upload(output).await?;
    let copied = async {
        use std::io::Read;
        loop {
            let mut chunk = vec![0u8; CHUNK_BYTES];
            let mut filled = 0;
            while filled < chunk.len() {
                let n = file.read(&mut chunk[filled..]).map_err(invalid)?;
                if n == 0 {
                    break;
                }
                filled += n;
            }
            if filled == 0 {
                return Ok::<(), StitchError>(());
            }
            chunk.truncate(filled);
            upload.write(Bytes::from(chunk)).await?;
        }
    }
    .await;
    match copied {
        Ok(()) => Ok(upload.finish().await?),
        Err(e) => {
            let _ = upload.abort().await;
            Err(e)
        }
    }
}

/// Decodes the PNG `reader` gives and encodes it as `format` into a temporary file, returned
/// at its start. A storage error while reading stays one, so the caller retries it.
fn encode_from_png(
    reader: std::io::BufReader<BlobReader>,
    format: tessera_engine::OutputFormat,
    dpi: u32,
) -> Result<std::fs::File, StitchError> {
    use std::io::{Seek, SeekFrom};
    let decoding = |e: png::DecodingError| match &e {
        png::DecodingError::IoError(io) => {
            BlobReader::storage_error(io).map_or_else(|| invalid(&e), StitchError::Storage)
        }
        _ => invalid(e),
    };
    let mut png = png::Decoder::new(reader).read_info().map_err(decoding)?;
    let info = png.info();
    if info.color_type != png::ColorType::Rgb || info.bit_depth != png::BitDepth::Eight {
        return Err(StitchError::Invalid("the stitched PNG is not RGB8".into()));
    }
    let (width, height) = (info.width, info.height);
    let mut file = tempfile::tempfile().map_err(invalid)?;
    let mut sink = tessera_engine::open_file_sink(
        file.try_clone().map_err(invalid)?,
        (width, height),
        format,
        dpi,
    )
    .map_err(invalid)?;
    let band_bytes = (4usize << 20).max(width as usize * 3);
    let mut band = Vec::with_capacity(band_bytes);
    while let Some(row) = png.next_row().map_err(decoding)? {
        band.extend_from_slice(row.data());
        if band.len() >= band_bytes {
            sink.write_owned(std::mem::replace(&mut band, Vec::with_capacity(band_bytes)))
                .map_err(invalid)?;
        }
    }
    if !band.is_empty() {
        sink.write_owned(band).map_err(invalid)?;
    }
    sink.finish().map_err(invalid)?;
    drop(sink);
    file.seek(SeekFrom::Start(0)).map_err(invalid)?;
    Ok(file)
}

/// The PNG's bytes not yet handed to the upload.
#[derive(Default)]
struct Chunks(BytesMut);

impl Write for Chunks {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_engine::encode_png_fragment;
    use tessera_shared::storage::BlobStoreExt;
    use tessera_shared::storage::embedded::EmbeddedStorage;

    /// Stores `pixels` cut after the given rows as fragments and stitches them.
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
            let part = encode_png_fragment(&pixels[pair[0] * row..pair[1] * row], width).unwrap();
            let size = part.len() as u64;
            blobs
                .put(&key, Bytes::from(part), PutMode::CreateNew)
                .await
                .unwrap();
            slices.push((key, size));
        }
        let output = format!("imageoutput/{job}");
        stitch_png(
            blobs.clone(),
            &slices,
            &output,
            (width, height as u32),
            300,
            band,
        )
        .await
        .unwrap();
        blobs.get(&output).await.unwrap()
    }

    fn decode(png_bytes: &[u8]) -> Vec<u8> {
        let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes.to_vec()));
        let mut reader = decoder.read_info().unwrap();
        let mut out = vec![0; reader.output_buffer_size().unwrap()];
        reader.next_frame(&mut out).unwrap();
        out
    }

    #[tokio::test]
    async fn any_slice_layout_gives_the_pixels_and_the_same_slices_the_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = EmbeddedStorage::open(dir.path()).unwrap().blobs();
        let (width, height) = (2000u32, 800usize);
        // Noise in most rows (so the PNG is several upload chunks), a pattern in the rest.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let pixels: Vec<u8> = (0..width as usize * 3 * height)
            .map(|i| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                if (i / 6000).is_multiple_of(4) {
                    (i % 13) as u8
                } else {
                    (state >> 56) as u8
                }
            })
            .collect();
        let whole = stitched(&blobs, &pixels, width, &[], 100_000).await;
        assert_eq!(decode(&whole), pixels);
        // Output of several upload chunks, read in small pieces.
        let cut = stitched(&blobs, &pixels, width, &[1, 40, 41, 790], 70_000).await;
        assert!(cut.len() > CHUNK_BYTES, "{} bytes", cut.len());
        assert_eq!(decode(&cut), pixels);
        let again = stitched(&blobs, &pixels, width, &[1, 40, 41, 790], 1 << 20).await;
        assert_eq!(cut, again);
    }

    #[tokio::test]
    async fn the_seek_index_beside_the_output_finds_every_fragments_rows() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = EmbeddedStorage::open(dir.path()).unwrap().blobs();
        // Wide rows: points inside fragments too.
        let (width, height) = (6000u32, 400usize);
        let row = width as usize * 3;
        let pixels: Vec<u8> = (0..row * height)
            .map(|i| ((i / row) as u8).wrapping_mul(7) ^ (i % 251) as u8)
            .collect();
        let png = stitched(&blobs, &pixels, width, &[3, 300], 1000).await;
        let listed = blobs.list_all("seekindex/").await.unwrap();
        assert_eq!(listed.len(), 1);
        let index = SeekIndex::parse(&blobs.get(&listed[0].key).await.unwrap()).unwrap();
        assert_eq!(index.png_len(), png.len() as u64);
        let rows: Vec<u32> = index.points.iter().map(|p| p.row).collect();
        let step = tessera_engine::point_interval(width);
        let mut want = vec![0, 3, 300];
        want.extend((3 + step..300).step_by(step as usize));
        want.extend((300 + step..height as u32).step_by(step as usize));
        want.sort();
        assert_eq!(rows, want);
        for pair in rows.windows(2) {
            let span = index.span(pair[0]..pair[1]).unwrap();
            assert_eq!(span.first_row, pair[0]);
            let file = &png[span.file.start as usize..span.file.end as usize];
            let mut lines =
                tessera_engine::Scanlines::new(index.idat_data(file, span.stream.clone()), width);
            for y in pair[0]..pair[1] {
                let y = y as usize;
                assert!(lines.next_row().unwrap() == &pixels[y * row..(y + 1) * row]);
            }
        }
    }

    #[tokio::test]
    async fn slices_that_do_not_make_the_image_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let blobs = EmbeddedStorage::open(dir.path()).unwrap().blobs();
        let fragment = encode_png_fragment(&[7; 4 * 3 * 2], 4).unwrap();
        let size = fragment.len() as u64;
        blobs
            .put(
                "sliceoutput/x/00000",
                Bytes::from(fragment),
                PutMode::CreateNew,
            )
            .await
            .unwrap();
        blobs
            .put(
                "sliceoutput/x/00001",
                Bytes::from(vec![0; 30]),
                PutMode::CreateNew,
            )
            .await
            .unwrap();
        let good = ("sliceoutput/x/00000".to_string(), size);
        let raw = ("sliceoutput/x/00001".to_string(), 30);
        // Listed longer than it is.
        let short = ("sliceoutput/x/00000".to_string(), size + 5);
        for (slices, height) in [
            (vec![good.clone()], 3),
            (vec![good.clone(), good.clone()], 3),
            (vec![good.clone(), raw], 4),
            (vec![good.clone(), short], 4),
        ] {
            let err = stitch_png(
                blobs.clone(),
                &slices,
                "imageoutput/x",
                (4, height),
                300,
                1000,
            )
            .await
            .unwrap_err();
            assert!(matches!(err, StitchError::Invalid(_)), "{err}");
        }
        assert!(!blobs.exists("imageoutput/x").await.unwrap());
    }
}
