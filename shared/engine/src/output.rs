//! Streaming output: band sinks that take RGB8 pixel rows top to bottom and encode them as they
//! come (PNG, JPEG), so peak memory does not grow with the output height. The pipeline's stitcher
//! feeds bands of slices into the same sinks.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::thread::JoinHandle;

use crate::error::Error;
use crate::fragment::{FragmentPngWriter, encode_png_fragment};

/// Receives an image as consecutive runs of whole RGB8 rows, top to bottom.
pub trait BandSink {
    /// Takes the next rows (a multiple of the row length in bytes).
    fn write_rows(&mut self, rows: &[u8]) -> Result<(), Error>;

    /// Takes the next rows by value; sinks that hand bands to another thread avoid a copy.
    fn write_owned(&mut self, rows: Vec<u8>) -> Result<(), Error> {
        self.write_rows(&rows)
    }

    /// Completes the image; an error if fewer rows came than the image has.
    fn finish(&mut self) -> Result<(), Error>;
}

impl<S: BandSink + ?Sized> BandSink for Box<S> {
    fn write_rows(&mut self, rows: &[u8]) -> Result<(), Error> {
        (**self).write_rows(rows)
    }

    fn write_owned(&mut self, rows: Vec<u8>) -> Result<(), Error> {
        (**self).write_owned(rows)
    }

    fn finish(&mut self) -> Result<(), Error> {
        (**self).finish()
    }
}

impl<S: BandSink + ?Sized> BandSink for &mut S {
    fn write_rows(&mut self, rows: &[u8]) -> Result<(), Error> {
        (**self).write_rows(rows)
    }

    fn write_owned(&mut self, rows: Vec<u8>) -> Result<(), Error> {
        (**self).write_owned(rows)
    }

    fn finish(&mut self) -> Result<(), Error> {
        (**self).finish()
    }
}

/// Output encodings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    Png,
    /// JPEG with a quality of 1 to 100.
    Jpeg {
        quality: u8,
    },
    /// Tiled, pyramidal TIFF ([`crate::tiff::TiffSink`]).
    Tiff,
}

impl OutputFormat {
    /// The format a file name asks for (`.png`, `.jpg`, `.jpeg`, `.tif`, `.tiff`).
    pub fn from_path(path: &Path, jpeg_quality: u8) -> Result<OutputFormat, Error> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("png") => Ok(OutputFormat::Png),
            Some("jpg" | "jpeg") => Ok(OutputFormat::Jpeg {
                quality: jpeg_quality,
            }),
            Some("tif" | "tiff") => Ok(OutputFormat::Tiff),
            _ => Err(Error::InvalidOption(format!(
                "cannot tell the output format of {}: use .png, .jpg, .jpeg, .tif or .tiff",
                path.display()
            ))),
        }
    }
}

impl<W: Write + std::io::Seek> BandSink for crate::tiff::TiffSink<W> {
    fn write_rows(&mut self, rows: &[u8]) -> Result<(), Error> {
        crate::tiff::TiffSink::write_rows(self, rows)
    }

    fn finish(&mut self) -> Result<(), Error> {
        crate::tiff::TiffSink::finish(self)
    }
}

/// Counts rows so every sink rejects too many or too few.
#[derive(Debug, Clone, Copy)]
struct RowCount {
    row_bytes: usize,
    left: u64,
}

impl RowCount {
    fn take(&mut self, bytes: usize) -> Result<(), Error> {
        if !bytes.is_multiple_of(self.row_bytes) {
            return Err(Error::Encode("a band must hold whole rows".into()));
        }
        let rows = (bytes / self.row_bytes) as u64;
        if rows > self.left {
            return Err(Error::Encode("more rows than the image has".into()));
        }
        self.left -= rows;
        Ok(())
    }

    fn done(&self) -> Result<(), Error> {
        if self.left != 0 {
            return Err(Error::Encode(format!(
                "{} rows missing at the end of the image",
                self.left
            )));
        }
        Ok(())
    }
}

/// Streaming PNG (RGB8) through `png`'s stream writer, with fast deflate.
pub struct PngSink<W: Write + 'static> {
    writer: Option<png::StreamWriter<'static, W>>,
    count: RowCount,
}

impl<W: Write + 'static> PngSink<W> {
    /// A PNG of `width` x `height` printed at `dpi`.
    pub fn new(w: W, width: u32, height: u32, dpi: u32) -> Result<Self, Error> {
        let mut enc = png::Encoder::new(w, width, height);
        let per_metre = (f64::from(dpi) / 0.0254).round() as u32;
        enc.set_pixel_dims(Some(png::PixelDimensions {
            xppu: per_metre,
            yppu: per_metre,
            unit: png::Unit::Meter,
        }));
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        enc.set_compression(png::Compression::Fast);
        enc.set_filter(png::Filter::Up);
        enc.set_source_srgb(png::SrgbRenderingIntent::Perceptual);
        let writer = enc.write_header().map_err(enc_err)?;
        let row_bytes = width as usize * 3;
        let writer = writer
            .into_stream_writer_with_size(row_bytes.clamp(1 << 16, 1 << 22))
            .map_err(enc_err)?;
        Ok(Self {
            writer: Some(writer),
            count: RowCount {
                row_bytes,
                left: height as u64,
            },
        })
    }
}

fn enc_err(e: impl std::fmt::Display) -> Error {
    Error::Encode(e.to_string())
}

impl<W: Write + 'static> BandSink for PngSink<W> {
    fn write_rows(&mut self, rows: &[u8]) -> Result<(), Error> {
        self.count.take(rows.len())?;
        let w = self
            .writer
            .as_mut()
            .ok_or_else(|| Error::Encode("already finished".into()))?;
        w.write_all(rows).map_err(enc_err)
    }

    fn finish(&mut self) -> Result<(), Error> {
        self.count.done()?;
        let w = self
            .writer
            .take()
            .ok_or_else(|| Error::Encode("already finished".into()))?;
        w.finish().map_err(enc_err)
    }
}

/// Streaming baseline JPEG: `jpeg-encoder` pulls rows on its own thread from the bands pushed
/// here, 16 rows at a time, so only a band or two is ever held.
pub struct JpegSink {
    encoder: RowThread,
    count: RowCount,
}

/// A thread taking rows in bands over a channel (an encoder), its answer read when it ends.
struct RowThread {
    tx: Option<SyncSender<Vec<u8>>>,
    handle: Option<JoinHandle<Result<(), Error>>>,
    /// What runs there, as errors name it ("the JPEG encoder").
    what: &'static str,
}

impl RowThread {
    fn spawn(
        name: &str,
        what: &'static str,
        run: impl FnOnce(Receiver<Vec<u8>>) -> Result<(), Error> + Send + 'static,
    ) -> Result<Self, Error> {
        let (tx, rx) = sync_channel::<Vec<u8>>(1);
        let handle = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || run(rx))
            .map_err(enc_err)?;
        Ok(RowThread {
            tx: Some(tx),
            handle: Some(handle),
            what,
        })
    }

    fn send(&mut self, rows: Vec<u8>) -> Result<(), Error> {
        let tx = self
            .tx
            .as_ref()
            .ok_or_else(|| Error::Encode("already finished".into()))?;
        if tx.send(rows).is_err() {
            // The thread failed: its error is the one worth reporting.
            let stopped = Error::Encode(format!("{} stopped early", self.what));
            return self.join().and(Err(stopped));
        }
        Ok(())
    }

    /// Closes the channel and waits for the thread's answer.
    fn join(&mut self) -> Result<(), Error> {
        self.tx.take();
        match self.handle.take() {
            Some(h) => h
                .join()
                .map_err(|_| Error::Encode(format!("{} panicked", self.what)))?,
            None => Err(Error::Encode("already finished".into())),
        }
    }
}

struct ChannelImage {
    width: u16,
    height: u16,
    rx: Receiver<Vec<u8>>,
    state: std::cell::RefCell<(Vec<u8>, usize)>,
}

impl jpeg_encoder::ImageBuffer for ChannelImage {
    fn get_jpeg_color_type(&self) -> jpeg_encoder::JpegColorType {
        jpeg_encoder::JpegColorType::Ycbcr
    }

    fn width(&self) -> u16 {
        self.width
    }

    fn height(&self) -> u16 {
        self.height
    }

    fn fill_buffers(&self, y: u16, buffers: &mut [Vec<u8>; 4]) {
        let row_bytes = self.width as usize * 3;
        let mut st = self.state.borrow_mut();
        // `st.1` is the image row of the band's first row; rows come in order (the last one
        // may be asked for again as padding).
        while (y as usize) >= st.1 + st.0.len() / row_bytes {
            let next_first = st.1 + st.0.len() / row_bytes;
            match self.rx.recv() {
                Ok(band) => *st = (band, next_first),
                Err(_) => {
                    // The producer gave up: pad with black; the sink reports its error.
                    *st = (vec![0; row_bytes], y as usize);
                }
            }
        }
        let off = (y as usize - st.1) * row_bytes;
        for p in st.0[off..off + row_bytes].chunks_exact(3) {
            let (yy, cb, cr) = jpeg_encoder::rgb_to_ycbcr(p[0], p[1], p[2]);
            buffers[0].push(yy);
            buffers[1].push(cb);
            buffers[2].push(cr);
        }
    }
}

/// Encodes the rows `image` receives as a baseline JPEG (4:2:0, sRGB profile) into `w`.
fn encode_jpeg<W: Write>(
    mut w: W,
    image: ChannelImage,
    quality: u8,
    dpi: u32,
) -> Result<(), String> {
    let mut enc = jpeg_encoder::Encoder::new(&mut w, quality);
    enc.set_sampling_factor(jpeg_encoder::SamplingFactor::F_2_2);
    let dpi = dpi.min(u32::from(u16::MAX)) as u16;
    enc.set_density(jpeg_encoder::Density::Inch { x: dpi, y: dpi });
    enc.add_icc_profile(crate::profile::srgb_icc())
        .map_err(|e| e.to_string())?;
    enc.encode_image(image).map_err(|e| e.to_string())?;
    w.flush().map_err(|e| e.to_string())
}

impl JpegSink {
    pub fn new<W: Write + Send + 'static>(
        w: W,
        width: u32,
        height: u32,
        (quality, dpi): (u8, u32),
    ) -> Result<Self, Error> {
        if width > 65_535 || height > 65_535 {
            return Err(Error::OutputTooLarge {
                width: width as u64,
                height: height as u64,
                limit: 65_535 * 65_535,
            });
        }
        if !(1..=100).contains(&quality) {
            return Err(Error::InvalidOption(format!(
                "JPEG quality {quality} (1 to 100)"
            )));
        }
        let encoder = RowThread::spawn("jpeg-encoder", "the JPEG encoder", move |rx| {
            let image = ChannelImage {
                width: width as u16,
                height: height as u16,
                rx,
                state: std::cell::RefCell::new((Vec::new(), 0)),
            };
            encode_jpeg(w, image, quality, dpi).map_err(Error::Encode)
        })?;
        Ok(Self {
            encoder,
            count: RowCount {
                row_bytes: width as usize * 3,
                left: height as u64,
            },
        })
    }
}

impl BandSink for JpegSink {
    fn write_rows(&mut self, rows: &[u8]) -> Result<(), Error> {
        self.write_owned(rows.to_vec())
    }

    fn write_owned(&mut self, rows: Vec<u8>) -> Result<(), Error> {
        self.count.take(rows.len())?;
        self.encoder.send(rows)
    }

    fn finish(&mut self) -> Result<(), Error> {
        self.count.done()?;
        self.encoder.join()
    }
}

/// Runs another sink on its own thread, so encoding overlaps the rendering of the next band.
pub struct ThreadedSink {
    thread: RowThread,
}

impl ThreadedSink {
    pub fn new(mut inner: Box<dyn BandSink + Send>) -> Result<Self, Error> {
        let thread = RowThread::spawn("band-sink", "the encoder", move |rx| {
            for band in rx {
                inner.write_owned(band)?;
            }
            inner.finish()
        })?;
        Ok(Self { thread })
    }
}

impl BandSink for ThreadedSink {
    fn write_rows(&mut self, rows: &[u8]) -> Result<(), Error> {
        self.write_owned(rows.to_vec())
    }

    fn write_owned(&mut self, rows: Vec<u8>) -> Result<(), Error> {
        self.thread.send(rows)
    }

    fn finish(&mut self) -> Result<(), Error> {
        self.thread.join()
    }
}

/// Collects every row in memory (tests, small images).
#[derive(Debug, Default, Clone)]
pub struct VecSink {
    pub pixels: Vec<u8>,
}

impl BandSink for VecSink {
    fn write_rows(&mut self, rows: &[u8]) -> Result<(), Error> {
        self.pixels.extend_from_slice(rows);
        Ok(())
    }

    fn finish(&mut self) -> Result<(), Error> {
        Ok(())
    }
}

/// Sends every band to each of several sinks in order (e.g. the quality metric, a Deep Zoom
/// pyramid and an encoder); the last takes each band by value, so an encoder goes last.
pub struct TeeSink<'a>(pub Vec<Box<dyn BandSink + 'a>>);

impl BandSink for TeeSink<'_> {
    fn write_rows(&mut self, rows: &[u8]) -> Result<(), Error> {
        self.0.iter_mut().try_for_each(|s| s.write_rows(rows))
    }

    fn write_owned(&mut self, rows: Vec<u8>) -> Result<(), Error> {
        let Some((last, others)) = self.0.split_last_mut() else {
            return Ok(());
        };
        others.iter_mut().try_for_each(|s| s.write_rows(&rows))?;
        last.write_owned(rows)
    }

    fn finish(&mut self) -> Result<(), Error> {
        self.0.iter_mut().try_for_each(|s| s.finish())
    }
}

/// PNG with every band compressed on its own, in parallel on rayon's threads, as a fragment
/// (the format and compression the image processors use), and the fragments written in order.
/// At most a few bands are in flight, so memory stays bounded by bands.
pub struct ParallelPngSink<W: Write> {
    writer: Option<FragmentPngWriter<W>>,
    width: u32,
    count: RowCount,
    done_tx: Sender<(u64, Result<Vec<u8>, Error>)>,
    done_rx: Receiver<(u64, Result<Vec<u8>, Error>)>,
    /// Bands handed out and fragments written so far.
    sent: u64,
    written: u64,
    /// Fragments compressed ahead of their turn.
    ready: BTreeMap<u64, Vec<u8>>,
    max_in_flight: u64,
}

impl<W: Write> ParallelPngSink<W> {
    /// A PNG of `width` x `height` printed at `dpi`.
    pub fn new(w: W, width: u32, height: u32, dpi: u32) -> Result<Self, Error> {
        let (done_tx, done_rx) = channel();
        Ok(Self {
            writer: Some(FragmentPngWriter::new(w, width, height, dpi)?),
            width,
            count: RowCount {
                row_bytes: width as usize * 3,
                left: height as u64,
            },
            done_tx,
            done_rx,
            sent: 0,
            written: 0,
            ready: BTreeMap::new(),
            max_in_flight: rayon::current_num_threads() as u64 + 1,
        })
    }

    /// Waits for one compressed band, then writes whatever is next in order.
    fn collect_one(&mut self) -> Result<(), Error> {
        let (seq, fragment) = self
            .done_rx
            .recv()
            .map_err(|_| Error::Encode("a compression task was lost".into()))?;
        self.ready.insert(seq, fragment?);
        let writer = self
            .writer
            .as_mut()
            .ok_or_else(|| Error::Encode("already finished".into()))?;
        while let Some(fragment) = self.ready.remove(&self.written) {
            writer.write_fragment(&fragment)?;
            self.written += 1;
        }
        Ok(())
    }
}

impl<W: Write> BandSink for ParallelPngSink<W> {
    fn write_rows(&mut self, rows: &[u8]) -> Result<(), Error> {
        self.write_owned(rows.to_vec())
    }

    fn write_owned(&mut self, rows: Vec<u8>) -> Result<(), Error> {
        self.count.take(rows.len())?;
        while self.sent - self.written >= self.max_in_flight {
            self.collect_one()?;
        }
        let (seq, width, done) = (self.sent, self.width, self.done_tx.clone());
        rayon::spawn(move || {
            // The receiver is gone only if the sink failed already.
            let _ = done.send((seq, encode_png_fragment(&rows, width)));
        });
        self.sent += 1;
        Ok(())
    }

    fn finish(&mut self) -> Result<(), Error> {
        while self.written < self.sent {
            self.collect_one()?;
        }
        self.count.done()?;
        let writer = self
            .writer
            .take()
            .ok_or_else(|| Error::Encode("already finished".into()))?;
        writer.finish()?.flush().map_err(enc_err)
    }
}

/// Creates `path` and an encoder for it, for an image printed at `dpi`: PNG bands compressed in
/// parallel, JPEG on its own thread, or tiled TIFF.
pub fn file_sink(
    path: &Path,
    size: (u32, u32),
    format: OutputFormat,
    dpi: u32,
) -> Result<Box<dyn BandSink + Send>, Error> {
    let file = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
    open_file_sink(file, size, format, dpi)
}

/// [`file_sink`] into a file already open (for writing, at its start).
pub fn open_file_sink(
    file: std::fs::File,
    (width, height): (u32, u32),
    format: OutputFormat,
    dpi: u32,
) -> Result<Box<dyn BandSink + Send>, Error> {
    let w = std::io::BufWriter::with_capacity(1 << 20, file);
    Ok(match format {
        OutputFormat::Png => Box::new(ParallelPngSink::new(w, width, height, dpi)?),
        OutputFormat::Jpeg { quality } => Box::new(ThreadedSink::new(Box::new(JpegSink::new(
            w,
            width,
            height,
            (quality, dpi),
        )?))?),
        OutputFormat::Tiff => Box::new(crate::tiff::TiffSink::new(w, width, height, dpi)?),
    })
}
