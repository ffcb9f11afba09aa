//! Tile libraries: import from a folder or a .zip, describe each tile, keep pre-scaled renditions,
//! and save or load the whole index as one versioned byte blob that processors cache by version
//! (or open a saved index leaving the renditions in the file, read as tiles are used).

use std::borrow::Cow;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use rayon::prelude::*;

use crate::color::{Lab, lab_to_srgb, srgb_to_lab32};
use crate::crop::CropRule;
use crate::decode::{Cropped, decode_crop};
use crate::error::Error;
use crate::hash::{Fnv, FnvStream};
use crate::resample::resize;
use crate::shape::TileShape;

mod background;
mod captions;
mod describe;
mod import;
mod index;

use background::*;
pub use background::{hex_colour, parse_hex_colour};
use captions::*;
use describe::*;
pub(crate) use describe::{area_mean, describe};
use import::*;
pub use import::{PreparedPhoto, summarise_skipped};
pub(crate) use index::Reader;

const MAGIC: &[u8; 8] = b"TSRLIB\0\n";
/// Version of the index blob layout; bumped whenever the layout or descriptors change.
/// Version 2 added captions after the renditions; version 3 the tile shape after the
/// background; version 4 the renditions' transparency after the renditions, so that tiles can be
/// laid over another background ([`Library::over`]). Versions 1 (no captions), 2 (square) and 3
/// still load, as opaque libraries.
pub const INDEX_FORMAT_VERSION: u32 = 4;

/// The file in a library's folder or archive that gives its tiles captions, one `file,caption`
/// line each (CSV; an optional `file,caption` header). Tiles without one are captioned from
/// their file name.
pub const CAPTIONS_FILE: &str = "captions.csv";
/// The longest caption, in characters.
pub const MAX_CAPTION_CHARS: usize = 300;

/// How tiles are prepared on import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportOptions {
    /// Colour transparent pixels are composited onto.
    pub background: [u8; 3],
    /// Side of the descriptor's sub-grid (k x k Lab means per tile).
    pub grid: u8,
    /// Long side in pixels of the stored rendition each tile size is resized from.
    pub rendition_size: u32,
    /// Shape of the tiles: each image is cropped to this aspect ratio, by `crop`.
    pub shape: TileShape,
    /// Where in each image the crop is taken.
    pub crop: CropRule,
}

impl Default for ImportOptions {
    fn default() -> Self {
        Self {
            background: [255, 255, 255],
            grid: 3,
            rendition_size: 64,
            shape: TileShape::SQUARE,
            crop: CropRule::default(),
        }
    }
}

/// What happened on import: nothing in it is fatal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImportReport {
    /// Tiles in the library.
    pub imported: usize,
    /// Every file not imported but the duplicates, in name order: name and reason (not an
    /// image, a format not read, corrupt, too large).
    pub skipped: Vec<(String, String)>,
    /// Pixel-identical duplicates merged: the dropped name and the name kept.
    pub duplicates: Vec<(String, String)>,
    /// How many of the skipped files are not images by their name (extension).
    pub ignored: usize,
}

/// The tile index: names, descriptors and renditions, in a fixed order (sorted by name).
#[derive(Debug, Clone, PartialEq)]
pub struct Library {
    grid: u8,
    rendition_size: u32,
    background: [u8; 3],
    shape: TileShape,
    names: Vec<String>,
    means: Vec<Lab>,
    /// `grid * grid` Lab means per tile, row-major.
    subs: Vec<Lab>,
    /// Packed RGB8 renditions of [`Library::rendition_dims`], one after another, composited
    /// onto `background` (or onto `stored_over`, when set).
    pixels: Renditions,
    /// For a library laid over another background ([`Library::over`]): the background its
    /// stored renditions were composited onto. Each rendition is laid over `background` as it
    /// is read, so the renditions are shared, not copied.
    stored_over: Option<[u8; 3]>,
    /// The renditions' opacity, a byte per pixel in the same order (in memory, or left in the
    /// file like the renditions); `None`: all opaque.
    alpha: Option<Renditions>,
    /// One per tile; empty: none given (see [`Library::caption`]).
    captions: Vec<String>,
    version: u64,
}

/// Where a library's renditions are: in memory, or left in the saved index they were opened
/// from and read one tile at a time when asked for ([`Library::open_index`]).
#[derive(Debug, Clone)]
enum Renditions {
    /// Shared by a library and the libraries laid over other backgrounds from it.
    Memory(Arc<Vec<u8>>),
    File {
        /// Read at offsets (`pread`), so threads share it without a lock.
        file: Arc<std::fs::File>,
        /// Where the renditions start in the file, and their total length.
        start: u64,
        len: usize,
    },
}

impl Renditions {
    /// `len` bytes from `at` (relative to the first rendition).
    fn range(&self, at: usize, len: usize) -> Cow<'_, [u8]> {
        match self {
            Renditions::Memory(pixels) => Cow::Borrowed(&pixels[at..at + len]),
            Renditions::File { file, start, .. } => {
                let mut out = vec![0u8; len];
                file.read_exact_at(&mut out, start + at as u64)
                    .unwrap_or_else(|e| {
                        panic!("the tile index could no longer be read ({e}); it was checked when opened")
                    });
                Cow::Owned(out)
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            Renditions::Memory(pixels) => pixels.len(),
            Renditions::File { len, .. } => *len,
        }
    }

    fn all(&self) -> Cow<'_, [u8]> {
        self.range(0, self.len())
    }

    /// Hands all the bytes to `sink`: at once from memory, a mebibyte at a time from the file.
    fn write_to(&self, sink: &mut Sink) -> std::io::Result<()> {
        match self {
            Renditions::Memory(bytes) => sink(bytes),
            Renditions::File { len, .. } => {
                for at in (0..*len).step_by(1 << 20) {
                    sink(&self.range(at, (1 << 20).min(len - at)))?;
                }
                Ok(())
            }
        }
    }

    /// Bytes held in memory: all, or none when left in the file.
    fn resident_len(&self) -> usize {
        match self {
            Renditions::Memory(pixels) => pixels.len(),
            Renditions::File { .. } => 0,
        }
    }
}

/// Where [`Library::write_body`] hands the index's bytes, a part at a time.
type Sink<'a> = dyn FnMut(&[u8]) -> std::io::Result<()> + 'a;

impl PartialEq for Renditions {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.all() == other.all()
    }
}

/// A buffered writer to an edit's scratch file, if it has one.
fn scratch_writer(
    scratch: Option<&std::fs::File>,
) -> Result<Option<std::io::BufWriter<std::fs::File>>, Error> {
    let Some(file) = scratch else { return Ok(None) };
    let file = file.try_clone().map_err(scratch_error)?;
    Ok(Some(std::io::BufWriter::with_capacity(1 << 20, file)))
}

/// An error writing an edit's renditions to its scratch file.
fn scratch_error(e: std::io::Error) -> Error {
    Error::io(Path::new("the edit's scratch file"), e)
}

/// One tile prepared from one file.
struct Prepared {
    name: String,
    identity: (u64, u64),
    rendition: Vec<u8>,
    /// The rendition's opacity, if any of the image is transparent.
    alpha: Option<Vec<u8>>,
}

impl Library {
    /// What to call tile `tile`: its caption, else its file name without folders and extension,
    /// with `_` and `-` read as spaces.
    pub fn caption(&self, tile: u32) -> String {
        match self.captions.get(tile as usize) {
            Some(c) if !c.is_empty() => c.clone(),
            _ => caption_from_name(self.name(tile)),
        }
    }

    /// Sets the version from the serialized body, once the library is complete.
    fn seal(&mut self) {
        let mut digest = FnvStream::default();
        self.write_body(&mut |part| {
            digest.update(part);
            Ok(())
        })
        .expect("digesting in memory");
        self.version = digest.finish();
    }

    /// The options this library's tiles were prepared with: files added to it must be prepared
    /// the same way ([`Library::edited`]). The index does not keep the crop rule (the library's
    /// record does): the default is given.
    pub fn import_options(&self) -> ImportOptions {
        ImportOptions {
            background: self.stored_over.unwrap_or(self.background),
            grid: self.grid,
            rendition_size: self.rendition_size,
            shape: self.shape,
            crop: CropRule::default(),
        }
    }

    /// This library with the tiles of the libraries `added` put in (one of the same name replaces
    /// the old) and the tiles named in `removed` taken out, in name order; the other tiles keep
    /// their renditions, descriptors and captions untouched. Also returns the added tiles left
    /// out as identical to a tile kept (the added name and the kept name). `added` must have
    /// been prepared with this library's [`Library::import_options`].
    pub fn edited(
        &self,
        added: &[&Library],
        removed: &[String],
    ) -> Result<(Library, Vec<(String, String)>), Error> {
        self.edit(added, removed, None)
    }

    /// [`Library::edited`] with the new library's renditions written to `scratch` (an empty
    /// file, open for reading and writing) and left there, read a tile at a time as
    /// [`Library::open_index`]'s are: an edit of a library larger than memory holds only its
    /// names and descriptors.
    pub fn edited_on_disk(
        &self,
        added: &[&Library],
        removed: &[String],
        scratch: std::fs::File,
    ) -> Result<(Library, Vec<(String, String)>), Error> {
        self.edit(added, removed, Some(scratch))
    }

    /// Refuses an edit of a library laid over another background, or adding tiles prepared
    /// otherwise.
    fn check_editable(&self, added: &[&Library]) -> Result<(), Error> {
        if self.stored_over.is_some() {
            return Err(Error::InvalidOption(
                "a library laid over another background is not edited: edit the stored one".into(),
            ));
        }
        // The crop rule is not kept in an index, so it is not compared.
        if let Some(added) = added
            .iter()
            .find(|a| a.import_options() != self.import_options())
        {
            return Err(Error::InvalidOption(format!(
                "the added tiles were prepared otherwise than the library's ({:?} against {:?})",
                added.import_options(),
                self.import_options()
            )));
        }
        Ok(())
    }

    fn edit(
        &self,
        added: &[&Library],
        removed: &[String],
        scratch: Option<std::fs::File>,
    ) -> Result<(Library, Vec<(String, String)>), Error> {
        use std::io::Write as _;
        self.check_editable(added)?;
        let added_names = added
            .iter()
            .flat_map(|a| a.names.iter().map(String::as_str));
        let gone: std::collections::HashSet<&str> = removed
            .iter()
            .map(String::as_str)
            .chain(added_names)
            .collect();
        let (rw, rh) = self.rendition_dims();
        let area = (rw * rh) as usize;
        let alpha_of = |lib: &Library, t: usize| -> Vec<u8> {
            lib.alpha
                .as_ref()
                .map_or_else(|| vec![255; area], |a| a.range(t * area, area).into_owned())
        };
        let identity = |lib: &Library, t: usize| {
            let px = lib.pixels.range(t * area * 3, area * 3);
            (Fnv::digest(&px), Fnv::digest(&alpha_of(lib, t)))
        };
        let mut tiles: Vec<(&Library, usize)> = (0..self.len())
            .filter(|&t| !gone.contains(self.names[t].as_str()))
            .map(|t| (self, t))
            .collect();
        let mut seen: std::collections::HashMap<(u64, u64), &str> = tiles
            .iter()
            .map(|&(lib, t)| (identity(lib, t), lib.names[t].as_str()))
            .collect();
        let mut duplicates = Vec::new();
        for (added, t) in added
            .iter()
            .flat_map(|&a| (0..a.len()).map(move |t| (a, t)))
        {
            match seen.entry(identity(added, t)) {
                std::collections::hash_map::Entry::Occupied(first) => {
                    duplicates.push((added.names[t].clone(), first.get().to_string()))
                }
                std::collections::hash_map::Entry::Vacant(slot) => {
                    slot.insert(added.names[t].as_str());
                    tiles.push((added, t));
                }
            }
        }
        tiles.sort_by(|a, b| a.0.names[a.1].cmp(&b.0.names[b.1]));
        let transparent = tiles.iter().any(|(lib, _)| lib.is_transparent());
        let captioned = tiles.iter().any(|(lib, _)| !lib.captions.is_empty());
        let k2 = self.grid() * self.grid();
        let mut lib = Assembler::new(&self.import_options(), Vec::new(), tiles.len())
            .finish()
            .0;
        let mut in_memory = Vec::with_capacity(scratch.is_none() as usize * tiles.len() * area * 3);
        let mut on_disk = scratch_writer(scratch.as_ref())?;
        let mut alpha = Vec::with_capacity(if transparent { tiles.len() * area } else { 0 });
        for &(from, t) in &tiles {
            lib.names.push(from.names[t].clone());
            lib.means.push(from.means[t]);
            lib.subs.extend_from_slice(&from.subs[t * k2..(t + 1) * k2]);
            let rendition = from.pixels.range(t * area * 3, area * 3);
            match &mut on_disk {
                Some(out) => out.write_all(&rendition).map_err(scratch_error)?,
                None => in_memory.extend_from_slice(&rendition),
            }
            if transparent {
                alpha.extend_from_slice(&alpha_of(from, t));
            }
            if captioned {
                lib.captions
                    .push(from.captions.get(t).cloned().unwrap_or_default());
            }
        }
        if let Some(out) = on_disk {
            out.into_inner()
                .map_err(|e| scratch_error(e.into_error()))?;
        }
        lib.pixels = match scratch {
            Some(file) => Renditions::File {
                file: Arc::new(file),
                start: 0,
                len: tiles.len() * area * 3,
            },
            None => Renditions::Memory(Arc::new(in_memory)),
        };
        lib.alpha = transparent.then(|| Renditions::Memory(Arc::new(alpha)));
        lib.seal();
        Ok((lib, duplicates))
    }

    /// Bytes the library holds in memory: renditions (unless left in their file), descriptors,
    /// names and captions.
    pub fn memory_bytes(&self) -> u64 {
        let renditions = self.resident_rendition_bytes()
            + self.alpha.as_ref().map_or(0, Renditions::resident_len);
        let descriptors = (self.means.len() + self.subs.len()) * std::mem::size_of::<Lab>();
        let text: usize = self
            .names
            .iter()
            .chain(&self.captions)
            .map(|s| s.len() + std::mem::size_of::<String>())
            .sum();
        (renditions + descriptors + text) as u64
    }

    /// Number of tiles.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Content version: a 64-bit digest of the serialized index. Equal libraries, equal versions.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// [`Library::version`] as 16 hex digits, the form used in keys and messages.
    pub fn version_hex(&self) -> String {
        format!("{:016x}", self.version)
    }

    pub fn grid(&self) -> usize {
        self.grid as usize
    }

    /// The long side of the renditions, in pixels.
    pub fn rendition_size(&self) -> u32 {
        self.rendition_size
    }

    /// Width and height of the renditions, in pixels: the shape with
    /// [`Library::rendition_size`] on its long side.
    pub fn rendition_dims(&self) -> (u32, u32) {
        self.shape.fit(self.rendition_size)
    }

    /// The shape every tile is cropped to; a plan's tiles must have it.
    pub fn shape(&self) -> TileShape {
        self.shape
    }

    pub fn background(&self) -> [u8; 3] {
        self.background
    }

    pub fn name(&self, tile: u32) -> &str {
        &self.names[tile as usize]
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Mean colour of every tile, in tile order.
    pub fn means(&self) -> &[Lab] {
        &self.means
    }

    /// The `grid x grid` sub-grid means of one tile.
    pub fn sub_grid(&self, tile: u32) -> &[Lab] {
        let k2 = self.grid() * self.grid();
        &self.subs[tile as usize * k2..(tile as usize + 1) * k2]
    }

    /// The stored RGB8 rendition of one tile, [`Library::rendition_dims`] in size. A library
    /// opened with [`Library::open_index`] reads it from its file, and panics if the file can no
    /// longer be read.
    pub fn rendition(&self, tile: u32) -> Cow<'_, [u8]> {
        assert!(
            (tile as usize) < self.len(),
            "tile {tile} is not in the library"
        );
        let (w, h) = self.rendition_dims();
        let n = (w * h) as usize;
        let stored = self.pixels.range(tile as usize * n * 3, n * 3);
        match (self.stored_over, &self.alpha) {
            (Some(stored_over), Some(alpha)) => {
                let mut px = stored.into_owned();
                let gains = clear_gains(stored_over, self.background);
                recomposite(&mut px, &alpha.range(tile as usize * n, n), &gains);
                Cow::Owned(px)
            }
            _ => stored,
        }
    }

    /// True if some tile has transparent parts, which [`Library::over`] can lay over another
    /// background (libraries indexed before format 4 count as opaque).
    pub fn is_transparent(&self) -> bool {
        self.alpha.is_some()
    }

    /// True if the tiles would look otherwise over `background`: some are transparent, and it is
    /// not the one they lie over now ([`Library::over`] gives the library laid over it).
    pub fn looks_different_over(&self, background: [u8; 3]) -> bool {
        self.is_transparent() && background != self.background
    }

    /// This library with its transparent parts laid over `background` instead: descriptors
    /// remade, names, captions and version kept (a plan records the background it was made
    /// over). The renditions are shared with this library and laid over `background` as they are
    /// read. `None` if nothing would change: an opaque library, or its own background.
    pub fn over(&self, background: [u8; 3]) -> Option<Library> {
        if !self.looks_different_over(background) {
            return None;
        }
        let alpha = self.alpha.as_ref()?;
        let stored = self.stored_over.unwrap_or(self.background);
        let mut over = Library {
            grid: self.grid,
            rendition_size: self.rendition_size,
            background,
            shape: self.shape,
            names: self.names.clone(),
            means: Vec::with_capacity(self.len()),
            subs: Vec::with_capacity(self.subs.len()),
            pixels: self.pixels.clone(),
            stored_over: (background != stored).then_some(stored),
            alpha: self.alpha.clone(),
            captions: self.captions.clone(),
            version: self.version,
        };
        // Each stored rendition is laid over the new background and described in one pass,
        // without a copy of its pixels.
        let (rw, rh) = self.rendition_dims();
        let (w, h, k) = (rw as usize, rh as usize, self.grid());
        let n = w * h;
        let gains = clear_gains(stored, background);
        let described: Vec<Described> = (0..self.len())
            .into_par_iter()
            .map(|t| {
                let (px, opacity) = (self.pixels.range(t * n * 3, n * 3), alpha.range(t * n, n));
                describe_over(&px, &opacity, (w, h), k, &gains)
            })
            .collect();
        for (mean, sub) in described {
            over.means.push(mean);
            over.subs.extend(sub);
        }
        Some(over)
    }

    /// Each tile's mean sRGB colour and mean opacity (0 to 1); opaque libraries have 1 for all.
    /// The colour comes from the tile's mean (the Lab of its mean sRGB colour), so only the
    /// opacity is read.
    pub(crate) fn colours_and_cover(&self) -> Vec<([f64; 3], f64)> {
        let (rw, rh) = self.rendition_dims();
        let n = (rw * rh) as usize;
        (0..self.len())
            .into_par_iter()
            .map(|t| {
                let colour = lab_to_srgb(self.means[t].map(f64::from)).map(|v| v.clamp(0.0, 255.0));
                let cover = self.alpha.as_ref().map_or(1.0, |a| {
                    a.range(t * n, n).iter().map(|&v| v as u64).sum::<u64>() as f64
                        / (255.0 * n as f64)
                });
                (colour, cover)
            })
            .collect()
    }

    /// Bytes of renditions held in memory: all of them, or none for a library opened with
    /// [`Library::open_index`].
    pub fn resident_rendition_bytes(&self) -> usize {
        match &self.pixels {
            Renditions::Memory(pixels) => pixels.len(),
            Renditions::File { .. } => 0,
        }
    }

    /// Opens a library from a saved index ([`Library::open_index`]: renditions read when
    /// needed), a folder or a `.zip`, whichever `path` is.
    pub fn open(
        path: &Path,
        opts: &ImportOptions,
    ) -> Result<(Library, Option<ImportReport>), Error> {
        if Self::is_index_file(path) {
            return Ok((Self::open_index(path)?, None));
        }
        let (lib, report) = Self::import(path, opts)?;
        Ok((lib, Some(report)))
    }
}

impl Library {
    /// Reads the transparency section (format 4 on) from the start of `bytes`, the part of an
    /// index after the renditions, and returns what follows it.
    fn read_alpha<'a>(&mut self, bytes: &'a [u8], version: u32) -> Result<&'a [u8], Error> {
        if version < 4 {
            return Ok(bytes);
        }
        let (&flag, rest) = bytes
            .split_first()
            .ok_or_else(|| Error::BadIndex("truncated".into()))?;
        let Some(len) = self.alpha_len(flag, rest.len())? else {
            return Ok(rest);
        };
        self.alpha = Some(Renditions::Memory(Arc::new(rest[..len].to_vec())));
        Ok(&rest[len..])
    }

    /// The length of the opacity after a transparency section's `flag` (`None` for an opaque
    /// library), checked against the `available` bytes.
    fn alpha_len(&self, flag: u8, available: usize) -> Result<Option<usize>, Error> {
        match flag {
            0 => Ok(None),
            1 => {
                let (rw, rh) = self.rendition_dims();
                (rw as usize * rh as usize)
                    .checked_mul(self.len())
                    .filter(|&len| len <= available)
                    .map(Some)
                    .ok_or_else(|| Error::BadIndex("truncated".into()))
            }
            _ => Err(Error::BadIndex(format!("bad transparency flag {flag}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(w: u32, h: u32, seed: u32) -> Vec<u8> {
        let img = image::RgbImage::from_fn(w, h, |x, y| {
            image::Rgb([
                (x * 7 + seed) as u8,
                (y * 5 + seed * 3) as u8,
                (x ^ y) as u8,
            ])
        });
        let mut out = Vec::new();
        img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
            .unwrap();
        out
    }

    fn library(shape: TileShape) -> Library {
        let files = (0..3)
            .map(|i| (format!("t{i}.png"), png(40 + i * 10, 30, i)))
            .collect();
        let options = ImportOptions {
            shape,
            ..ImportOptions::default()
        };
        Library::from_files(files, &options).unwrap().0
    }

    /// A library laid over other backgrounds describes its tiles as describing its recomposited
    /// renditions does, to the last bit, for two shapes and shifts up and down.
    #[test]
    fn descriptors_over_another_background_are_those_of_its_pixels() {
        let files: Vec<(String, Vec<u8>)> = (0..6u32)
            .map(|i| {
                // A cut-out: a soft-edged disc of shaded colour.
                let (w, h) = (40 + i * 7, 36);
                let img = image::RgbaImage::from_fn(w, h, |x, y| {
                    let (dx, dy) = (x as f32 - w as f32 / 2.0, y as f32 - h as f32 / 2.0);
                    let edge = 15.0 - (dx * dx + dy * dy).sqrt();
                    let alpha = (edge * 64.0).clamp(0.0, 255.0) as u8;
                    image::Rgba([(x * 5) as u8, (y * 6 + i * 30) as u8, (i * 40) as u8, alpha])
                });
                let mut out = Vec::new();
                img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
                    .unwrap();
                (format!("t{i}.png"), out)
            })
            .collect();
        for shape in [TileShape::SQUARE, TileShape::new(3, 2).unwrap()] {
            let options = ImportOptions {
                shape,
                background: [40, 200, 90],
                ..ImportOptions::default()
            };
            let library = Library::from_files(files.clone(), &options).unwrap().0;
            assert!(library.is_transparent());
            let (w, h) = library.rendition_dims();
            for bg in [[0, 0, 0], [255, 255, 255], [200, 10, 250]] {
                let over = library.over(bg).unwrap();
                for t in 0..library.len() as u32 {
                    let (mean, subs) =
                        describe(&over.rendition(t), w as usize, h as usize, library.grid());
                    assert_eq!(over.means()[t as usize], mean, "tile {t} over {bg:?}");
                    assert_eq!(over.sub_grid(t), subs, "tile {t} over {bg:?}");
                }
            }
        }
    }

    fn sealed(mut body: Vec<u8>) -> Vec<u8> {
        let digest = Fnv::digest(&body);
        body.extend_from_slice(&digest.to_le_bytes());
        body
    }

    /// An opaque library's bytes in the layout of format `version` (1 to 3): no transparency
    /// section; in versions 1 and 2 no shape (the library must be square), and in version 1 no
    /// captions.
    fn legacy(lib: &Library, version: u32) -> Vec<u8> {
        assert!(!lib.is_transparent());
        let mut body = lib.body_bytes();
        body[8..12].copy_from_slice(&version.to_le_bytes());
        let captions: usize = (0..lib.len())
            .map(|i| 4 + lib.captions.get(i).map_or(0, String::len))
            .sum();
        let flag = body.len() - captions - 1;
        assert_eq!(body.remove(flag), 0);
        if version == 3 {
            return sealed(body);
        }
        body.drain(20..28);
        if version == 1 {
            body.truncate(body.len() - 4 * lib.len());
        }
        sealed(body)
    }

    #[test]
    fn version_1_to_3_indexes_load_as_opaque_and_1_and_2_as_square() {
        let lib = library(TileShape::SQUARE);
        for version in [1, 2, 3] {
            let old = Library::from_bytes(&legacy(&lib, version)).unwrap();
            assert_eq!(old.shape(), TileShape::SQUARE);
            assert_eq!(old.names(), lib.names());
            assert_eq!(old.means(), lib.means());
            assert_eq!(old.rendition(2), lib.rendition(2));
        }
    }

    #[test]
    fn the_shape_round_trips_and_a_bad_one_is_refused() {
        let lib = library(TileShape::new(3, 2).unwrap());
        assert_eq!(lib.rendition_dims(), (64, 43));
        assert_eq!(Library::from_bytes(&lib.to_bytes()).unwrap(), lib);
        let with_shape = |w: u32, h: u32| {
            let mut body = lib.body_bytes();
            body[20..24].copy_from_slice(&w.to_le_bytes());
            body[24..28].copy_from_slice(&h.to_le_bytes());
            Library::from_bytes(&sealed(body)).unwrap_err().to_string()
        };
        assert!(with_shape(6, 4).contains("lowest terms"));
        assert!(with_shape(9, 1).contains("elongated"));
        assert!(with_shape(0, 1).contains("at least 1"));
    }

    #[test]
    fn renditions_too_small_for_the_grid_are_refused() {
        let options = ImportOptions {
            shape: TileShape::new(4, 1).unwrap(),
            rendition_size: 16,
            grid: 8,
            ..ImportOptions::default()
        };
        let err = Library::from_files(vec![], &options).unwrap_err();
        assert!(err.to_string().contains("16 x 4 px"), "{err}");
    }

    #[test]
    fn an_edited_library_equals_one_imported_whole() {
        let file = |i: u32| (format!("t{i}.png"), png(40 + i * 10, 30, i));
        let options = ImportOptions::default();
        let whole = |ids: &[u32]| {
            let files = ids.iter().map(|&i| file(i)).collect();
            Library::from_files(files, &options).unwrap().0
        };
        let base = whole(&[0, 1, 2, 3]);
        let added = whole(&[4, 5, 1]);
        let (edited, duplicates) = base.edited(&[&added], &["t2.png".into()]).unwrap();
        // t1 sent again replaces itself (same pixels: no duplicate of another).
        assert!(duplicates.is_empty(), "{duplicates:?}");
        assert_eq!(edited, whole(&[0, 1, 3, 4, 5]));
        let stored = Library::from_bytes(&edited.to_bytes()).unwrap();
        assert_eq!(stored.version(), edited.version());

        // A copy under another name is left out, and named with the tile it copies.
        let copy = Library::from_files(vec![("copy.png".into(), file(0).1)], &options)
            .unwrap()
            .0;
        let (same, duplicates) = base.edited(&[&copy], &[]).unwrap();
        assert_eq!(duplicates, [("copy.png".to_string(), "t0.png".to_string())]);
        assert_eq!(same.names(), base.names());

        // Tiles prepared otherwise are refused.
        let oblong = library(TileShape::new(3, 2).unwrap());
        assert!(base.edited(&[&oblong], &[]).is_err());
    }

    #[test]
    fn an_edit_on_disk_equals_one_in_memory_and_holds_no_rendition() {
        let file = |i: u32| (format!("t{i}.png"), png(40 + i * 10, 30, i));
        let options = ImportOptions::default();
        let whole = |ids: &[u32]| {
            let files = ids.iter().map(|&i| file(i)).collect();
            Library::from_files(files, &options).unwrap().0
        };
        let dir = tempfile::tempdir().unwrap();
        let saved = dir.path().join("base.idx");
        whole(&[0, 1, 2, 3]).save(&saved).unwrap();
        let base = Library::open_index(&saved).unwrap();
        assert!(base.renditions_on_disk());
        let added = whole(&[4, 5]);
        let removed = ["t2.png".to_string()];
        let (in_memory, _) = base.edited(&[&added], &removed).unwrap();
        let scratch = tempfile::tempfile().unwrap();
        let (on_disk, _) = base.edited_on_disk(&[&added], &removed, scratch).unwrap();
        assert!(on_disk.renditions_on_disk() && !in_memory.renditions_on_disk());
        assert_eq!(on_disk, in_memory);
        assert_eq!(on_disk.version(), in_memory.version());
        let resident = on_disk.memory_bytes();
        assert!(
            resident * 4 < in_memory.memory_bytes(),
            "{resident} bytes held"
        );
        let mut written = Vec::new();
        on_disk.write_index(&mut written).unwrap();
        assert_eq!(written, in_memory.to_bytes());
        let estimate = base.index_len_estimate(5) as f64;
        assert!(
            (0.8..1.2).contains(&(estimate / written.len() as f64)),
            "{estimate}"
        );
    }
}
