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

/// One tile prepared from one file.
struct Prepared {
    name: String,
    identity: (u64, u64),
    rendition: Vec<u8>,
    /// The rendition's opacity, if any of the image is transparent.
    alpha: Option<Vec<u8>>,
}

impl Library {
    /// Imports a folder (recursively), a `.zip` of images or one image.
    pub fn import(path: &Path, opts: &ImportOptions) -> Result<(Library, ImportReport), Error> {
        Self::import_with_progress(path, opts, &|_, _| true)
    }

    /// [`Library::import`] calling `progress(done, total)` as files are decoded. When it answers
    /// false the import stops: files not started yet are left, and the answer is
    /// [`Error::Stopped`].
    pub fn import_with_progress(
        path: &Path,
        opts: &ImportOptions,
        progress: &(dyn Fn(usize, usize) -> bool + Sync),
    ) -> Result<(Library, ImportReport), Error> {
        check_options(opts)?;
        let steps = Steps {
            stopped: Default::default(),
            done: Default::default(),
            progress,
        };
        let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
        let name = path.file_name().map(|n| n.to_string_lossy().to_string());
        match name {
            _ if meta.is_dir() => import_folder(path, opts, &steps),
            // A file named as an image is one tile; any other file is read as an archive.
            Some(name) if crate::decode::not_an_image(&name).is_none() => {
                let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
                Self::from_files(vec![(name, bytes)], opts)
            }
            _ => import_zip(path, opts, &steps),
        }
    }

    /// Builds a library from in-memory files `(name, bytes)`; names give the order.
    pub fn from_files(
        mut files: Vec<(String, Vec<u8>)>,
        opts: &ImportOptions,
    ) -> Result<(Library, ImportReport), Error> {
        check_options(opts)?;
        files.sort_by(|a, b| a.0.cmp(&b.0));
        let mut assembler = Assembler::new(opts, Vec::new(), files.len());
        assembler.feed(
            files
                .into_par_iter()
                .map(|(name, bytes)| {
                    let r = prepare(&name, &bytes, opts);
                    (name, r)
                })
                .collect(),
        );
        let (mut library, report) = assembler.finish();
        library.seal();
        Ok((library, report))
    }

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

    /// This library with the tiles of `added` put in (one of the same name replaces the old)
    /// and the tiles named in `removed` taken out, in name order; the other tiles keep their
    /// renditions, descriptors and captions untouched. Also returns the added tiles left out as
    /// identical to a tile kept (the added name and the kept name). `added` must have been
    /// prepared with this library's [`Library::import_options`].
    pub fn edited(
        &self,
        added: Option<&Library>,
        removed: &[String],
    ) -> Result<(Library, Vec<(String, String)>), Error> {
        if self.stored_over.is_some() {
            return Err(Error::InvalidOption(
                "a library laid over another background is not edited: edit the stored one".into(),
            ));
        }
        // The crop rule is not kept in an index, so it is not compared.
        if let Some(added) = added
            && added.import_options() != self.import_options()
        {
            return Err(Error::InvalidOption(format!(
                "the added tiles were prepared otherwise than the library's ({:?} against {:?})",
                added.import_options(),
                self.import_options()
            )));
        }
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
        let kept: Vec<(&Library, usize)> = (0..self.len())
            .filter(|&t| !gone.contains(self.names[t].as_str()))
            .map(|t| (self, t))
            .collect();
        let mut seen: std::collections::HashMap<(u64, u64), &str> = kept
            .iter()
            .map(|&(lib, t)| (identity(lib, t), lib.names[t].as_str()))
            .collect();
        let mut duplicates = Vec::new();
        let mut tiles = kept;
        for (added, t) in added
            .iter()
            .flat_map(|a| (0..a.len()).map(move |t| (*a, t)))
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
        let mut pixels = Vec::with_capacity(tiles.len() * area * 3);
        let mut alpha = Vec::with_capacity(if transparent { tiles.len() * area } else { 0 });
        for &(from, t) in &tiles {
            lib.names.push(from.names[t].clone());
            lib.means.push(from.means[t]);
            lib.subs.extend_from_slice(&from.subs[t * k2..(t + 1) * k2]);
            pixels.extend_from_slice(&from.pixels.range(t * area * 3, area * 3));
            if transparent {
                alpha.extend_from_slice(&alpha_of(from, t));
            }
            if captioned {
                lib.captions
                    .push(from.captions.get(t).cloned().unwrap_or_default());
            }
        }
        lib.pixels = Renditions::Memory(Arc::new(pixels));
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

    /// Serializes the whole index into one blob: magic, format version, options, tiles, and a
    /// trailing digest that [`Library::from_bytes`] verifies.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = self.body_bytes();
        let digest = Fnv::digest(&out);
        out.extend_from_slice(&digest.to_le_bytes());
        out
    }

    fn body_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.pixels.len() + self.names.len() * 160 + 64);
        self.write_body(&mut |part| {
            out.extend_from_slice(part);
            Ok(())
        })
        .expect("writing to memory");
        out
    }

    /// The index's body (all but its digest), handed to `sink` a part at a time, in order: the
    /// renditions and opacity pass as they are held, never copied whole.
    fn write_body(&self, sink: &mut Sink) -> std::io::Result<()> {
        let mut head = Vec::with_capacity(self.names.len() * 160 + 64);
        head.extend_from_slice(MAGIC);
        head.extend_from_slice(&INDEX_FORMAT_VERSION.to_le_bytes());
        head.push(self.grid);
        head.extend_from_slice(&self.rendition_size.to_le_bytes());
        head.extend_from_slice(&self.background);
        head.extend_from_slice(&self.shape.width().to_le_bytes());
        head.extend_from_slice(&self.shape.height().to_le_bytes());
        head.extend_from_slice(&(self.names.len() as u32).to_le_bytes());
        for name in &self.names {
            head.extend_from_slice(&(name.len() as u32).to_le_bytes());
            head.extend_from_slice(name.as_bytes());
        }
        for v in self.means.iter().chain(&self.subs).flatten() {
            head.extend_from_slice(&v.to_le_bytes());
        }
        sink(&head)?;
        if self.stored_over.is_some() {
            for t in 0..self.len() as u32 {
                sink(&self.rendition(t))?;
            }
        } else {
            self.pixels.write_to(sink)?;
        }
        match &self.alpha {
            Some(alpha) => {
                sink(&[1])?;
                alpha.write_to(sink)?;
            }
            None => sink(&[0])?,
        }
        let mut tail = Vec::new();
        for i in 0..self.names.len() {
            let caption = self.captions.get(i).map_or("", String::as_str);
            tail.extend_from_slice(&(caption.len() as u32).to_le_bytes());
            tail.extend_from_slice(caption.as_bytes());
        }
        sink(&tail)
    }

    /// True if `bytes` starts like a saved index (any format version).
    pub fn is_index(bytes: &[u8]) -> bool {
        bytes.starts_with(MAGIC)
    }

    /// True if `path` is a file that starts like a saved index (a folder or an unreadable path
    /// is not).
    pub fn is_index_file(path: &Path) -> bool {
        let mut head = [0u8; 8];
        path.is_file()
            && std::fs::File::open(path)
                .and_then(|mut f| f.read(&mut head))
                .is_ok_and(|n| Self::is_index(&head[..n]))
    }

    /// Loads an index saved by [`Library::to_bytes`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Library, Error> {
        let (mut library, pixels) = Self::parse(bytes)?;
        library.pixels = Renditions::Memory(Arc::new(bytes[pixels].to_vec()));
        Ok(library)
    }

    /// [`Library::from_bytes`] keeping the renditions where they are in `bytes`: a large index
    /// is never held twice while it loads.
    pub fn from_vec(mut bytes: Vec<u8>) -> Result<Library, Error> {
        let (mut library, pixels) = Self::parse(&bytes)?;
        bytes.truncate(pixels.end);
        bytes.drain(..pixels.start);
        bytes.shrink_to_fit();
        library.pixels = Renditions::Memory(Arc::new(bytes));
        Ok(library)
    }

    /// Checks and reads an index, all but the renditions, whose place in `bytes` it returns.
    fn parse(bytes: &[u8]) -> Result<(Library, std::ops::Range<usize>), Error> {
        let version = check_magic_and_version(bytes)?;
        if bytes.len() < 8 + MAGIC.len() + 4 {
            return Err(Error::BadIndex("truncated".into()));
        }
        let (body, tail) = bytes.split_at(bytes.len() - 8);
        let digest = u64::from_le_bytes(tail.try_into().expect("8 bytes"));
        if Fnv::digest(body) != digest {
            return Err(Error::BadIndex(
                "digest mismatch: the index is corrupt or truncated".into(),
            ));
        }
        let mut r = Reader {
            b: body,
            at: MAGIC.len() + 4,
            short: false,
        };
        let (mut library, pixels) = Self::parse_body(&mut r, body.len(), digest, version)?;
        if version >= 2 {
            let rest = library.read_alpha(&body[pixels.end..], version)?;
            library.captions = read_captions(rest, library.names.len())?;
        }
        Ok((library, pixels))
    }

    /// Reads the options, names and descriptors from `r` (past the magic and format version) and
    /// returns the place of the renditions in a body of `body_len` bytes, which `r` need not hold.
    fn parse_body(
        r: &mut Reader,
        body_len: usize,
        digest: u64,
        version: u32,
    ) -> Result<(Library, std::ops::Range<usize>), Error> {
        let grid = r.take(1)?[0];
        let rendition_size = r.u32()?;
        let bg = r.take(3)?;
        let background = [bg[0], bg[1], bg[2]];
        let shape = if version >= 3 {
            let (w, h) = (r.u32()?, r.u32()?);
            let shape = TileShape::new(w, h).map_err(|e| Error::BadIndex(e.to_string()))?;
            if (shape.width(), shape.height()) != (w, h) {
                return Err(Error::BadIndex(format!(
                    "tile shape {w}:{h} is not in lowest terms"
                )));
            }
            shape
        } else {
            TileShape::SQUARE
        };
        let opts = ImportOptions {
            background,
            grid,
            rendition_size,
            shape,
            crop: CropRule::default(),
        };
        check_options(&opts).map_err(|e| Error::BadIndex(e.to_string()))?;
        let n = r.u32()? as usize;
        let mut names = Vec::with_capacity(n.min(1 << 20));
        for _ in 0..n {
            let len = r.u32()? as usize;
            let s = std::str::from_utf8(r.take(len)?)
                .map_err(|_| Error::BadIndex("tile name is not UTF-8".into()))?;
            names.push(s.to_string());
        }
        let k2 = grid as usize * grid as usize;
        let mut lab = |count: usize| -> Result<Vec<Lab>, Error> {
            let raw = r.take(
                count
                    .checked_mul(12)
                    .ok_or_else(|| Error::BadIndex("size".into()))?,
            )?;
            Ok(raw
                .chunks_exact(12)
                .map(|c| {
                    let f =
                        |i: usize| f32::from_le_bytes(c[i * 4..i * 4 + 4].try_into().expect("4"));
                    [f(0), f(1), f(2)]
                })
                .collect())
        };
        let means = lab(n)?;
        let subs = lab(n * k2)?;
        let (rw, rh) = shape.fit(rendition_size);
        let px = (rw as usize * rh as usize * 3)
            .checked_mul(n)
            .ok_or_else(|| Error::BadIndex("size".into()))?;
        let start = r.at;
        let end = start.saturating_add(px);
        if end > body_len {
            return Err(Error::BadIndex("truncated".into()));
        }
        // Version 1 ends with the renditions; later versions have captions after them.
        if version == 1 && end != body_len {
            return Err(Error::BadIndex("trailing bytes".into()));
        }
        let library = Library {
            grid,
            rendition_size,
            background,
            shape,
            names,
            means,
            subs,
            pixels: Renditions::Memory(Arc::default()),
            stored_over: None,
            alpha: None,
            captions: Vec::new(),
            version: digest,
        };
        Ok((library, start..end))
    }

    /// Opens a saved index and keeps its renditions in the file: only the names and descriptors
    /// are held in memory, and a tile's rendition is read when it is asked for (a mosaic uses
    /// few of a large library's tiles). The whole file is checked against its digest here; it
    /// must not be rewritten in place while the library is open (replacing it is fine).
    pub fn open_index(path: &Path) -> Result<Library, Error> {
        let io = |e| Error::io(path, e);
        let mut file = std::fs::File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let mut head = vec![0u8; (MAGIC.len() + 4).min(len as usize)];
        file.read_exact(&mut head).map_err(io)?;
        let version = check_magic_and_version(&head)?;
        if len < (8 + MAGIC.len() + 4) as u64 {
            return Err(Error::BadIndex("truncated".into()));
        }
        let body_len = usize::try_from(len - 8)
            .map_err(|_| Error::BadIndex("too large for this machine".into()))?;

        file.rewind().map_err(io)?;
        let body_digest = streamed_digest(&mut file, body_len).map_err(io)?;
        let mut tail = [0u8; 8];
        file.read_exact(&mut tail).map_err(io)?;
        let digest = u64::from_le_bytes(tail);
        if body_digest != digest {
            return Err(Error::BadIndex(
                "digest mismatch: the index is corrupt or truncated".into(),
            ));
        }

        // Names and descriptors: read a prefix, longer until they fit in it.
        let mut want = 1usize << 20;
        let (mut library, pixels) = loop {
            let head_len = want.min(body_len);
            head.resize(head_len, 0);
            file.rewind().map_err(io)?;
            file.read_exact(&mut head).map_err(io)?;
            let mut r = Reader {
                b: &head,
                at: MAGIC.len() + 4,
                short: false,
            };
            match Self::parse_body(&mut r, body_len, digest, version) {
                Err(_) if r.short && head_len < body_len => want = want.saturating_mul(4),
                parsed => break parsed?,
            }
        };
        // Past the renditions: the opacity (format 4), left in the file like them, then captions.
        let mut at = pixels.end;
        let mut alpha = None;
        if version >= 4 {
            let mut flag = [0u8; 1];
            file.seek(SeekFrom::Start(at as u64)).map_err(io)?;
            file.read_exact(&mut flag).map_err(io)?;
            at += 1;
            if let Some(len) = library.alpha_len(flag[0], body_len.saturating_sub(at))? {
                alpha = Some((at, len));
                at += len;
            }
        }
        if version >= 2 {
            let mut rest = vec![0u8; body_len - at];
            file.seek(SeekFrom::Start(at as u64)).map_err(io)?;
            file.read_exact(&mut rest).map_err(io)?;
            library.captions = read_captions(&rest, library.names.len())?;
        }
        let file = Arc::new(file);
        library.alpha = alpha.map(|(start, len)| Renditions::File {
            file: file.clone(),
            start: start as u64,
            len,
        });
        library.pixels = Renditions::File {
            file,
            start: pixels.start as u64,
            len: pixels.len(),
        };
        Ok(library)
    }

    /// Saves [`Library::to_bytes`] to a file.
    pub fn save(&self, path: &Path) -> Result<(), Error> {
        use std::io::Write as _;
        let io = |e| Error::io(path, e);
        let mut out = std::io::BufWriter::new(std::fs::File::create(path).map_err(io)?);
        let mut digest = FnvStream::default();
        self.write_body(&mut |part| {
            digest.update(part);
            out.write_all(part)
        })
        .map_err(io)?;
        out.write_all(&digest.finish().to_le_bytes()).map_err(io)?;
        out.into_inner()
            .map_err(|e| io(e.into_error()))?
            .sync_all()
            .map_err(io)
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

/// Reads a saved blob front to back; an error past its end.
pub(crate) struct Reader<'a> {
    pub(crate) b: &'a [u8],
    pub(crate) at: usize,
    /// Set when a read ran past the end of `b`.
    pub(crate) short: bool,
}

impl<'a> Reader<'a> {
    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.b.len());
        self.short |= end.is_none();
        let end = end.ok_or_else(|| Error::BadIndex("truncated".into()))?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }

    pub(crate) fn u32(&mut self) -> Result<u32, Error> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
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

/// The captions section of an index (format 2 on): one length-prefixed string per tile, filling
/// `bytes` exactly. All empty reads as none, as an import without captions holds.
fn read_captions(bytes: &[u8], tiles: usize) -> Result<Vec<String>, Error> {
    let mut r = Reader {
        b: bytes,
        at: 0,
        short: false,
    };
    let mut captions = Vec::with_capacity(tiles.min(1 << 20));
    for _ in 0..tiles {
        let len = r.u32()? as usize;
        let s = std::str::from_utf8(r.take(len)?)
            .map_err(|_| Error::BadIndex("caption is not UTF-8".into()))?;
        captions.push(s.to_string());
    }
    if r.at != bytes.len() {
        return Err(Error::BadIndex("trailing bytes".into()));
    }
    if captions.iter().all(String::is_empty) {
        captions.clear();
    }
    Ok(captions)
}

/// The magic, then a format version this build reads, which it returns.
fn check_magic_and_version(bytes: &[u8]) -> Result<u32, Error> {
    if !Library::is_index(bytes) {
        return Err(Error::BadIndex("not a tile index (bad magic)".into()));
    }
    let version = bytes
        .get(MAGIC.len()..MAGIC.len() + 4)
        .ok_or_else(|| Error::BadIndex("truncated".into()))?;
    let version = u32::from_le_bytes(version.try_into().expect("4 bytes"));
    if !(1..=INDEX_FORMAT_VERSION).contains(&version) {
        return Err(Error::IndexVersion {
            found: version,
            supported: INDEX_FORMAT_VERSION,
        });
    }
    Ok(version)
}

fn check_options(opts: &ImportOptions) -> Result<(), Error> {
    if !(1..=8).contains(&opts.grid) {
        return Err(Error::InvalidOption(format!(
            "descriptor grid {} (1 to 8)",
            opts.grid
        )));
    }
    if !(4..=512).contains(&opts.rendition_size) {
        return Err(Error::InvalidOption(format!(
            "rendition size {} px (4 to 512)",
            opts.rendition_size
        )));
    }
    let (w, h) = opts.shape.fit(opts.rendition_size);
    if w.min(h) < opts.grid as u32 {
        return Err(Error::InvalidOption(format!(
            "{w} x {h} px renditions (shape {}) are too small for a {} x {} descriptor grid: \
             raise the rendition size",
            opts.shape, opts.grid, opts.grid
        )));
    }
    Ok(())
}

fn hidden(name: &str) -> bool {
    name.split('/')
        .any(|part| part.starts_with('.') || part == "__MACOSX")
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), Error> {
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let p = entry.path();
        let rel = p
            .strip_prefix(root)
            .unwrap_or(&p)
            .to_string_lossy()
            .replace('\\', "/");
        if hidden(&rel) {
            continue;
        }
        let ft = entry.file_type().map_err(|e| Error::io(&p, e))?;
        if ft.is_dir() {
            walk(root, &p, out)?;
        } else {
            out.push(rel);
        }
    }
    Ok(())
}

/// The files to decode (an image's extension), and the others named with the reason they are not
/// (the captions file apart: it is read, not imported).
fn split_images<T>(files: Vec<T>, name: impl Fn(&T) -> &str) -> (Vec<T>, Vec<(String, String)>) {
    let mut others = Vec::new();
    let images = files
        .into_iter()
        .filter(|f| {
            let n = name(f);
            match crate::decode::not_an_image(n) {
                None => true,
                Some(reason) => {
                    if !is_captions_file(n) {
                        others.push((n.to_string(), reason));
                    }
                    false
                }
            }
        })
        .collect();
    (images, others)
}

/// The files an import skipped, told in a line: each reason with how many files and the first
/// names, the commonest first (the four commonest reasons, then how many others).
pub fn summarise_skipped(skipped: &[(String, String)]) -> String {
    let mut groups: Vec<(&str, Vec<&str>)> = Vec::new();
    for (name, reason) in skipped {
        match groups.iter_mut().find(|(r, _)| r == reason) {
            Some((_, names)) => names.push(name),
            None => groups.push((reason, vec![name])),
        }
    }
    groups.sort_by_key(|(_, names)| std::cmp::Reverse(names.len()));
    let mut parts: Vec<String> = groups
        .iter()
        .take(4)
        .map(|(reason, names)| {
            let n = names.len();
            let mut shown = names[..n.min(2)].join(", ");
            if n > 2 {
                shown.push_str(&format!(" and {} more", n - 2));
            }
            let files = if n == 1 { "file" } else { "files" };
            format!("{n} {files}, {reason} ({shown})")
        })
        .collect();
    if groups.len() > 4 {
        parts.push(format!(
            "{} files for other reasons",
            groups[4..].iter().map(|g| g.1.len()).sum::<usize>()
        ));
    }
    parts.join("; ")
}

/// Decodes (EXIF orientation applied), crops the centre to the library's shape, composites onto
/// the background and resizes to the rendition size.
fn prepare(_name: &str, bytes: &[u8], opts: &ImportOptions) -> Result<Prepared, String> {
    let Cropped {
        width: w,
        height: h,
        rgb: px,
        alpha,
    } = decode_crop(
        bytes,
        opts.background,
        (opts.shape, opts.crop),
        opts.rendition_size,
    )?;
    let identity = (
        Fnv::digest_seeded(&px, w as u64),
        Fnv::digest_seeded(&px, !(h as u64)),
    );
    let (rw, rh) = opts.shape.fit(opts.rendition_size);
    let rendition = resize(&px, w, h, rw as usize, rh as usize);
    // Opacity resized as the colours are (as grey, one channel kept): compositing then
    // resizing is linear in the background, so the rendition can be laid over another later.
    let alpha = alpha.map(|a| {
        let grey: Vec<u8> = a.iter().flat_map(|&v| [v, v, v]).collect();
        resize(&grey, w, h, rw as usize, rh as usize)
            .into_iter()
            .step_by(3)
            .collect()
    });
    Ok(Prepared {
        name: String::new(),
        identity,
        rendition,
        alpha,
    })
}

/// Files prepared at once in an import: each batch's renditions go into the library as it is
/// assembled and are dropped, so an import holds the library and one batch, not two copies.
const BATCH: usize = 1024;

/// Builds the library of prepared files fed in name order, a batch at a time, with duplicates
/// merged; not sealed (its version is set by [`Library::seal`] once captions are in).
struct Assembler {
    lib: Library,
    report: ImportReport,
    /// The first file of each identity kept.
    seen: std::collections::BTreeMap<(u64, u64), String>,
    pixels: Vec<u8>,
    /// Opacity, from the first transparent tile on (the opaque ones before it filled in).
    alpha: Option<Vec<u8>>,
    /// Pixels per rendition.
    area: usize,
}

impl Assembler {
    /// For up to `files` files (the renditions' buffer is reserved once for them all), `others`
    /// the files not images by their name, with the reason.
    fn new(opts: &ImportOptions, others: Vec<(String, String)>, files: usize) -> Assembler {
        let (rw, rh) = opts.shape.fit(opts.rendition_size);
        let area = rw as usize * rh as usize;
        Assembler {
            lib: Library {
                grid: opts.grid,
                rendition_size: opts.rendition_size,
                background: opts.background,
                shape: opts.shape,
                names: Vec::new(),
                means: Vec::new(),
                subs: Vec::new(),
                pixels: Renditions::Memory(Arc::default()),
                stored_over: None,
                alpha: None,
                captions: Vec::new(),
                version: 0,
            },
            report: ImportReport {
                ignored: others.len(),
                skipped: others,
                ..Default::default()
            },
            seen: std::collections::BTreeMap::new(),
            pixels: Vec::with_capacity(files * area * 3),
            alpha: None,
            area,
        }
    }

    /// Adds a batch of files, in name order after the batches before.
    fn feed(&mut self, batch: Vec<(String, Result<Prepared, String>)>) {
        let mut kept = Vec::with_capacity(batch.len());
        for (name, r) in batch {
            match r {
                Err(reason) => self.report.skipped.push((name, reason)),
                Ok(mut p) => {
                    if let Some(first) = self.seen.get(&p.identity) {
                        self.report.duplicates.push((name, String::clone(first)));
                    } else {
                        self.seen.insert(p.identity, name.clone());
                        p.name = name;
                        kept.push(p);
                    }
                }
            }
        }
        let (rw, rh) = self.lib.rendition_dims();
        let k = self.lib.grid();
        let described: Vec<Described> = kept
            .par_iter()
            .map(|p| describe(&p.rendition, rw as usize, rh as usize, k))
            .collect();
        let area = self.area;
        for (p, (mean, subs)) in kept.into_iter().zip(described) {
            let before = self.lib.names.len();
            self.lib.names.push(p.name);
            self.lib.means.push(mean);
            self.lib.subs.extend(subs);
            self.pixels.extend_from_slice(&p.rendition);
            match (p.alpha, &mut self.alpha) {
                (Some(a), Some(alpha)) => alpha.extend_from_slice(&a),
                (Some(a), None) => {
                    let mut alpha = vec![255; before * area];
                    alpha.extend_from_slice(&a);
                    self.alpha = Some(alpha);
                }
                (None, Some(alpha)) => alpha.resize(alpha.len() + area, 255),
                (None, None) => {}
            }
        }
    }

    fn finish(self) -> (Library, ImportReport) {
        let Assembler {
            mut lib,
            mut report,
            pixels,
            alpha,
            ..
        } = self;
        report.imported = lib.names.len();
        report.skipped.sort();
        lib.pixels = Renditions::Memory(Arc::new(pixels));
        lib.alpha = alpha.map(|a| Renditions::Memory(Arc::new(a)));
        (lib, report)
    }
}

/// A colour written as `RRGGBB` hex, with or without a leading `#` (as a browser's colour input
/// gives it).
pub fn parse_hex_colour(text: &str) -> Result<[u8; 3], String> {
    let hex = text.strip_prefix('#').unwrap_or(text);
    let bad = || format!("{text:?} is not a colour: write RRGGBB hex, as ffffff");
    if hex.len() != 6 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    let byte = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).map_err(|_| bad());
    Ok([byte(0)?, byte(2)?, byte(4)?])
}

/// A colour as `rrggbb` hex, as [`parse_hex_colour`] reads it.
pub fn hex_colour(c: [u8; 3]) -> String {
    format!("{:02x}{:02x}{:02x}", c[0], c[1], c[2])
}

fn is_captions_file(name: &str) -> bool {
    name.eq_ignore_ascii_case(CAPTIONS_FILE)
}

/// A caption made from a file name: no folders or extension, `_` and `-` as spaces.
fn caption_from_name(name: &str) -> String {
    let base = name.rsplit('/').next().unwrap_or(name);
    let stem = base.rsplit_once('.').map_or(base, |(stem, _)| stem);
    let words: Vec<&str> = stem
        .split(['_', '-', ' '])
        .filter(|w| !w.is_empty())
        .collect();
    if words.is_empty() {
        base.to_string()
    } else {
        words.join(" ")
    }
}

/// Gives the tiles of an import the captions of its captions file, if it has one, and seals
/// the library. `listed` are the image files found: a caption for one of them that did not
/// become a tile (unreadable, or a duplicate) is dropped; a caption for a file not there is an
/// error.
fn with_captions<'a>(
    (mut library, report): (Library, ImportReport),
    csv: Option<Vec<u8>>,
    listed: impl Iterator<Item = &'a str>,
) -> Result<(Library, ImportReport), Error> {
    let Some(csv) = csv else {
        library.seal();
        return Ok((library, report));
    };
    let listed: std::collections::HashSet<&str> = listed.collect();
    let tiles: std::collections::HashMap<&str, usize> = library
        .names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let mut captions = vec![String::new(); library.names.len()];
    for (line, file, caption) in parse_captions(&csv)? {
        match tiles.get(file.as_str()) {
            Some(&i) => captions[i] = caption,
            None if listed.contains(file.as_str()) => {}
            None => {
                return Err(Error::Captions(format!(
                    "{CAPTIONS_FILE} line {line}: there is no image {file:?} in the library"
                )));
            }
        }
    }
    drop(tiles);
    library.captions = captions;
    library.seal();
    Ok((library, report))
}

/// The `(line, file, caption)` rows of a captions file: CSV with two columns, fields optionally
/// in double quotes (`""` for a quote), an optional `file,caption` header, blank lines skipped.
fn parse_captions(bytes: &[u8]) -> Result<Vec<(usize, String, String)>, Error> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| Error::Captions(format!("{CAPTIONS_FILE} is not UTF-8 text")))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut rows = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let bad = |why: &str| Error::Captions(format!("{CAPTIONS_FILE} line {line}: {why}"));
        if raw.trim().is_empty() {
            continue;
        }
        let fields = split_csv_line(raw).ok_or_else(|| bad("an unclosed quote"))?;
        let [file, caption] = fields.as_slice() else {
            return Err(bad(&format!(
                "{} fields; each line is file,caption (quote a caption with commas)",
                fields.len()
            )));
        };
        let (file, caption) = (file.trim(), caption.trim());
        if line == 1 && file.eq_ignore_ascii_case("file") && caption.eq_ignore_ascii_case("caption")
        {
            continue;
        }
        if file.is_empty() || caption.is_empty() {
            return Err(bad("a file name and a caption are both needed"));
        }
        if caption.chars().count() > MAX_CAPTION_CHARS {
            return Err(bad(&format!(
                "the caption is over {MAX_CAPTION_CHARS} characters"
            )));
        }
        if caption.chars().any(char::is_control) {
            return Err(bad("the caption has control characters"));
        }
        rows.push((line, file.to_string(), caption.to_string()));
    }
    Ok(rows)
}

/// The fields of one CSV line; `None` if a quote is left open.
fn split_csv_line(line: &str) -> Option<Vec<String>> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            (true, '"') => quoted = false,
            (false, '"') if field.trim().is_empty() => {
                field.clear();
                quoted = true;
            }
            (false, ',') => fields.push(std::mem::take(&mut field)),
            (_, c) => field.push(c),
        }
    }
    if quoted {
        return None;
    }
    fields.push(field);
    Some(fields)
}

/// Lays RGB8 `px`, composited with opacity `alpha` onto one background, over another: each
/// pixel gains its [`clear_gains`] `gains`.
fn recomposite(px: &mut [u8], alpha: &[u8], gains: &[[i16; 3]; 256]) {
    for (p, &a) in px.chunks_exact_mut(3).zip(alpha) {
        let over = laid_over(p, &gains[a as usize]);
        p.copy_from_slice(&over);
    }
}

/// Pixel `p` with its [`clear_gains`] `gain` added, within 0 to 255.
#[inline(always)]
fn laid_over(p: &[u8], gain: &[i16; 3]) -> [u8; 3] {
    [0, 1, 2].map(|c| (p[c] as i16 + gain[c]).clamp(0, 255) as u8)
}

/// What a pixel of each opacity gains in each channel when the background it lies over changes
/// from `from` to `to`: the clear part of the change, rounded to nearest either way.
fn clear_gains(from: [u8; 3], to: [u8; 3]) -> [[i16; 3]; 256] {
    let shift = [0, 1, 2].map(|c| to[c] as i32 - from[c] as i32);
    let mut gains = [[0i16; 3]; 256];
    for (a, gain) in gains.iter_mut().enumerate() {
        let clear = 255 - a as i32;
        for c in 0..3 {
            let d = clear * shift[c];
            gain[c] = ((d + if d >= 0 { 127 } else { -127 }) / 255) as i16;
        }
    }
    gains
}

/// [`describe`] of the `w x h` pixels `px` laid over another background: each pixel, of
/// opacity `opacity`, gains its [`clear_gains`] `gains` (clamped), as [`recomposite`] does.
fn describe_over(
    px: &[u8],
    opacity: &[u8],
    (w, h): (usize, usize),
    k: usize,
    gains: &[[i16; 3]; 256],
) -> Described {
    let rows = px.chunks_exact(w * 3).zip(opacity.chunks_exact(w));
    let rows = rows.map(|(row, alpha)| {
        (row.chunks_exact(3).zip(alpha)).map(|(p, &a)| laid_over(p, &gains[a as usize]))
    });
    describe_rows(rows, (w, h), k)
}

/// Mean sRGB colour of packed RGB8 pixels.
pub(crate) fn area_mean(px: &[u8]) -> [f64; 3] {
    let mut sum = [0u64; 3];
    for p in px.chunks_exact(3) {
        for c in 0..3 {
            sum[c] += p[c] as u64;
        }
    }
    let n = (px.len() / 3).max(1) as f64;
    sum.map(|s| s as f64 / n)
}

/// A tile's mean colour and sub-grid means, as [`describe`] gives them.
type Described = (Lab, Vec<Lab>);

/// Mean colour and `k x k` sub-grid means of a `w x h` RGB8 image, averaged in sRGB (as the eye
/// sees it from a distance and as the quality metric measures) and converted to Lab.
pub(crate) fn describe(px: &[u8], w: usize, h: usize, k: usize) -> Described {
    let rows = px
        .chunks_exact(w * 3)
        .map(|row| row.chunks_exact(3).map(|p| [p[0], p[1], p[2]]));
    describe_rows(rows, (w, h), k)
}

/// [`describe`] of `w x h` pixels given row by row.
fn describe_rows<R: Iterator<Item = [u8; 3]>>(
    rows: impl Iterator<Item = R>,
    (w, h): (usize, usize),
    k: usize,
) -> Described {
    let mut sums = vec![[0u64; 4]; k * k];
    // Which column of the sub-grid each pixel column falls in.
    let columns: Vec<usize> = (0..w).map(|x| x * k / w).collect();
    for (y, row) in rows.take(h).enumerate() {
        let block = &mut sums[y * k / h * k..][..k];
        for (p, &gx) in row.zip(&columns) {
            let s = &mut block[gx];
            s[0] += p[0] as u64;
            s[1] += p[1] as u64;
            s[2] += p[2] as u64;
            s[3] += 1;
        }
    }
    let mut total = [0u64; 3];
    let subs = sums
        .iter()
        .map(|s| {
            for c in 0..3 {
                total[c] += s[c];
            }
            let n = s[3].max(1) as f64;
            srgb_to_lab32([s[0] as f64 / n, s[1] as f64 / n, s[2] as f64 / n])
        })
        .collect();
    let n = (w * h) as f64;
    let mean = srgb_to_lab32([
        total[0] as f64 / n,
        total[1] as f64 / n,
        total[2] as f64 / n,
    ]);
    (mean, subs)
}

/// [`Fnv::digest`] of the next `len` bytes of `file`, read in chunks of 1 MiB (whole words
/// until the last, as the digest takes them) on one thread and hashed on another, so the copy
/// from the page cache and the hashing overlap.
fn streamed_digest(file: &mut std::fs::File, len: usize) -> std::io::Result<u64> {
    const CHUNK: usize = 1 << 20;
    let (full, empty) = (
        std::sync::mpsc::sync_channel::<Vec<u8>>(2),
        std::sync::mpsc::sync_channel::<Vec<u8>>(3),
    );
    for _ in 0..3 {
        empty
            .0
            .send(vec![0u8; CHUNK])
            .expect("the channel holds three");
    }
    let (to_hash, from_reader) = full;
    let (to_reader, spare) = empty;
    std::thread::scope(|scope| {
        let hasher = scope.spawn(move || {
            let mut fnv = Fnv::new();
            for chunk in from_reader {
                fnv.update(&chunk);
                // The reader may have stopped on an error: then nobody takes the buffer back.
                let _ = to_reader.send(chunk);
            }
            fnv.finish()
        });
        let mut left = len;
        while left > 0 {
            let mut chunk = spare.recv().expect("the hasher returns every buffer");
            chunk.resize(left.min(CHUNK), 0);
            file.read_exact(&mut chunk)?;
            left -= chunk.len();
            to_hash
                .send(chunk)
                .expect("the hasher runs until the reader is done");
        }
        drop(to_hash);
        Ok(hasher.join().expect("the digest does not panic"))
    })
}

/// An import's progress: files done, and whether its caller asked it to stop.
struct Steps<'a> {
    stopped: std::sync::atomic::AtomicBool,
    done: std::sync::atomic::AtomicUsize,
    progress: &'a (dyn Fn(usize, usize) -> bool + Sync),
}

impl Steps<'_> {
    /// Counts a file done of `total`, and asks whether to go on.
    fn step(&self, total: usize) {
        use std::sync::atomic::Ordering;
        let d = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        if !(self.progress)(d, total) {
            self.stopped.store(true, Ordering::Relaxed);
        }
    }

    fn stopped(&self) -> bool {
        self.stopped.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// [`Error::Stopped`] once the caller has asked to stop.
    fn check(&self) -> Result<(), Error> {
        if self.stopped() {
            Err(Error::Stopped)
        } else {
            Ok(())
        }
    }
}

/// Imports the images of a folder (and its subfolders), a batch at a time in parallel.
fn import_folder(
    path: &Path,
    opts: &ImportOptions,
    steps: &Steps,
) -> Result<(Library, ImportReport), Error> {
    let mut files = Vec::new();
    walk(path, path, &mut files)?;
    files.sort();
    let captions = match files.iter().find(|f| is_captions_file(f)) {
        Some(f) => {
            let at = path.join(f);
            Some(std::fs::read(&at).map_err(|e| Error::io(&at, e))?)
        }
        None => None,
    };
    let (images, others) = split_images(files, |f| f.as_str());
    let total = images.len();
    let mut assembler = Assembler::new(opts, others, total);
    for chunk in images.chunks(BATCH) {
        let results: Vec<_> = chunk
            .par_iter()
            .map(|name| {
                if steps.stopped() {
                    return (name.clone(), Err(String::new()));
                }
                let r = std::fs::read(path.join(name))
                    .map_err(|e| e.to_string())
                    .and_then(|bytes| prepare(name, &bytes, opts));
                steps.step(total);
                (name.clone(), r)
            })
            .collect();
        steps.check()?;
        assembler.feed(results);
    }
    let listed = images.iter().map(String::as_str);
    with_captions(assembler.finish(), captions, listed)
}

/// Imports the images of a .zip, reading a chunk of entries at a time (so that memory holds a
/// bounded number of compressed files) and decoding each chunk in parallel.
fn import_zip(
    path: &Path,
    opts: &ImportOptions,
    steps: &Steps,
) -> Result<(Library, ImportReport), Error> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file))
        .map_err(|e| Error::Archive(format!("{}: {e}", path.display())))?;
    let mut names = Vec::new();
    for i in 0..zip.len() {
        let entry = zip.by_index(i).map_err(|e| Error::Archive(e.to_string()))?;
        if entry.is_file() && !hidden(entry.name()) {
            names.push((entry.name().to_string(), i));
        }
    }
    names.sort();
    let captions = match names.iter().find(|(n, _)| is_captions_file(n)) {
        Some((_, i)) => {
            let mut bytes = Vec::new();
            zip.by_index(*i)
                .and_then(|mut e| Ok(e.read_to_end(&mut bytes)?))
                .map_err(|e| Error::Archive(format!("{CAPTIONS_FILE}: {e}")))?;
            Some(bytes)
        }
        None => None,
    };
    let (images, others) = split_images(names, |(n, _)| n.as_str());
    let total = images.len();
    let mut assembler = Assembler::new(opts, others, total);
    for chunk in images.chunks(256) {
        steps.check()?;
        let mut raw = Vec::with_capacity(chunk.len());
        for (name, i) in chunk {
            let mut bytes = Vec::new();
            let r = zip
                .by_index(*i)
                .map_err(|e| e.to_string())
                .and_then(|mut e| e.read_to_end(&mut bytes).map_err(|e| e.to_string()))
                .map(|_| bytes);
            raw.push((name.clone(), r));
        }
        let results: Vec<_> = raw
            .into_par_iter()
            .map(|(name, r)| {
                if steps.stopped() {
                    return (name, Err(String::new()));
                }
                let p = r.and_then(|bytes| prepare(&name, &bytes, opts));
                steps.step(total);
                (name, p)
            })
            .collect();
        steps.check()?;
        assembler.feed(results);
    }
    let listed = images.iter().map(|(n, _)| n.as_str());
    with_captions(assembler.finish(), captions, listed)
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
        let (edited, duplicates) = base.edited(Some(&added), &["t2.png".into()]).unwrap();
        // t1 sent again replaces itself (same pixels: no duplicate of another).
        assert!(duplicates.is_empty(), "{duplicates:?}");
        assert_eq!(edited, whole(&[0, 1, 3, 4, 5]));
        let stored = Library::from_bytes(&edited.to_bytes()).unwrap();
        assert_eq!(stored.version(), edited.version());

        // A copy under another name is left out, and named with the tile it copies.
        let copy = Library::from_files(vec![("copy.png".into(), file(0).1)], &options)
            .unwrap()
            .0;
        let (same, duplicates) = base.edited(Some(&copy), &[]).unwrap();
        assert_eq!(duplicates, [("copy.png".to_string(), "t0.png".to_string())]);
        assert_eq!(same.names(), base.names());

        // Tiles prepared otherwise are refused.
        let oblong = library(TileShape::new(3, 2).unwrap());
        assert!(base.edited(Some(&oblong), &[]).is_err());
    }
}
