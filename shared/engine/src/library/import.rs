//! Importing a library: a folder or a zip of images, each decoded within the budget, cropped by
//! the library's rule and described, with what was skipped and why.

use super::*;

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
}

/// A photo prepared once ([`Library::from_photo`]): its tile, and its square thumbnail.
pub struct PreparedPhoto {
    /// A library of one tile, prepared as the library's options say: put in with
    /// [`Library::edited`].
    pub tile: Library,
    /// The photo's centred square, at most the side asked, as a JPEG.
    pub thumbnail: Vec<u8>,
    /// The thumbnail's mean colour.
    pub colour: [u8; 3],
    /// A perceptual hash of the centred square (a difference hash: 8 rows of 8 brighter-or-not
    /// steps between 9 columns): photos that look alike differ in few of its bits.
    pub likeness: u64,
    /// How far the square's brightness spreads (its standard deviation, 0 to 255): near 0, a
    /// blank or near-uniform frame.
    pub spread: f32,
}

/// The difference hash and the brightness's spread of a square of packed RGB8 `pixels`.
fn screen(pixels: &[u8]) -> (u64, f32) {
    let side = ((pixels.len() / 3) as f64).sqrt() as usize;
    let luma = |x: usize, y: usize| {
        let p = &pixels[(y * side + x) * 3..][..3];
        0.299 * f64::from(p[0]) + 0.587 * f64::from(p[1]) + 0.114 * f64::from(p[2])
    };
    if side == 0 {
        return (0, 0.0);
    }
    // Mean brightness of each of 9 x 8 blocks.
    let mut blocks = [[0f64; 9]; 8];
    for (by, row) in blocks.iter_mut().enumerate() {
        let (y0, y1) = (by * side / 8, ((by + 1) * side / 8).max(by * side / 8 + 1));
        for (bx, block) in row.iter_mut().enumerate() {
            let (x0, x1) = (bx * side / 9, ((bx + 1) * side / 9).max(bx * side / 9 + 1));
            let (mut sum, mut n) = (0.0, 0.0);
            for y in y0..y1.min(side) {
                for x in x0..x1.min(side) {
                    sum += luma(x, y);
                    n += 1.0;
                }
            }
            *block = sum / f64::max(n, 1.0);
        }
    }
    let mut hash = 0u64;
    for row in &blocks {
        for pair in row.windows(2) {
            hash = hash << 1 | u64::from(pair[0] < pair[1]);
        }
    }
    let step = (side / 64).max(1);
    let (mut sum, mut squares, mut n) = (0.0, 0.0, 0.0);
    for y in (0..side).step_by(step) {
        for x in (0..side).step_by(step) {
            let v = luma(x, y);
            sum += v;
            squares += v * v;
            n += 1.0;
        }
    }
    let mean = sum / n;
    (hash, (squares / n - mean * mean).max(0.0).sqrt() as f32)
}

impl Library {
    /// A library of no tiles, prepared with `opts`: what a library made by edits starts from.
    pub fn empty(opts: &ImportOptions) -> Result<Library, Error> {
        check_options(opts)?;
        let mut library = Assembler::new(opts, Vec::new(), 0).finish().0;
        library.seal();
        Ok(library)
    }

    /// Decodes a photo once (within the decoders' budget) into the tile `name` of a library
    /// prepared with `opts`, captioned `caption` (none if empty), and into its centred square
    /// of at most `thumbnail` pixels a side as a JPEG of `quality`, with its mean colour.
    pub fn from_photo(
        (name, caption): (&str, &str),
        bytes: &[u8],
        opts: &ImportOptions,
        (thumbnail, quality): (u32, u8),
    ) -> Result<PreparedPhoto, String> {
        check_options(opts).map_err(|e| e.to_string())?;
        let decoded = crate::decode::decode_for_tile(bytes, opts.rendition_size.max(thumbnail))?;
        let centred = (TileShape::SQUARE, CropRule::Centre);
        let square = crate::decode::crop_decoded(&decoded, [255; 3], centred)?;
        let (likeness, spread) = screen(&square.rgb);
        let (thumbnail, colour) = crate::decode::thumbnail_of(square.rgb, thumbnail, quality)?;
        let cropped =
            crate::decode::crop_decoded(&decoded, opts.background, (opts.shape, opts.crop))?;
        drop(decoded);
        let mut assembler = Assembler::new(opts, Vec::new(), 1);
        assembler.feed(vec![(name.to_string(), Ok(prepare_cropped(cropped, opts)))]);
        let (mut tile, report) = assembler.finish();
        if tile.is_empty() {
            return Err(report.skipped.first().map_or_else(
                || "the photo could not be made a tile".to_string(),
                |(_, reason)| reason.clone(),
            ));
        }
        if !caption.is_empty() {
            tile.captions = vec![caption.to_string()];
        }
        tile.seal();
        Ok(PreparedPhoto {
            tile,
            thumbnail,
            colour,
            likeness,
            spread,
        })
    }
}

pub(super) fn check_options(opts: &ImportOptions) -> Result<(), Error> {
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

pub(super) fn hidden(name: &str) -> bool {
    name.split('/')
        .any(|part| part.starts_with('.') || part == "__MACOSX")
}

pub(super) fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), Error> {
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
pub(super) fn split_images<T>(
    files: Vec<T>,
    name: impl Fn(&T) -> &str,
) -> (Vec<T>, Vec<(String, String)>) {
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
pub(super) fn prepare(_name: &str, bytes: &[u8], opts: &ImportOptions) -> Result<Prepared, String> {
    let cropped = decode_crop(
        bytes,
        opts.background,
        (opts.shape, opts.crop),
        opts.rendition_size,
    )?;
    Ok(prepare_cropped(cropped, opts))
}

/// A decoded crop made a tile's rendition.
fn prepare_cropped(cropped: Cropped, opts: &ImportOptions) -> Prepared {
    let Cropped {
        width: w,
        height: h,
        rgb: px,
        alpha,
    } = cropped;
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
    Prepared {
        name: String::new(),
        identity,
        rendition,
        alpha,
    }
}

/// Files prepared at once in an import: each batch's renditions go into the library as it is
/// assembled and are dropped, so an import holds the library and one batch, not two copies.
pub(super) const BATCH: usize = 1024;

/// Builds the library of prepared files fed in name order, a batch at a time, with duplicates
/// merged; not sealed (its version is set by [`Library::seal`] once captions are in).
pub(super) struct Assembler {
    pub(super) lib: Library,
    pub(super) report: ImportReport,
    /// The first file of each identity kept.
    pub(super) seen: std::collections::BTreeMap<(u64, u64), String>,
    pub(super) pixels: Vec<u8>,
    /// Opacity, from the first transparent tile on (the opaque ones before it filled in).
    pub(super) alpha: Option<Vec<u8>>,
    /// Pixels per rendition.
    pub(super) area: usize,
}

impl Assembler {
    /// For up to `files` files (the renditions' buffer is reserved once for them all), `others`
    /// the files not images by their name, with the reason.
    pub(super) fn new(
        opts: &ImportOptions,
        others: Vec<(String, String)>,
        files: usize,
    ) -> Assembler {
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
    pub(super) fn feed(&mut self, batch: Vec<(String, Result<Prepared, String>)>) {
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

    pub(super) fn finish(self) -> (Library, ImportReport) {
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

/// An import's progress: files done, and whether its caller asked it to stop.
pub(super) struct Steps<'a> {
    pub(super) stopped: std::sync::atomic::AtomicBool,
    pub(super) done: std::sync::atomic::AtomicUsize,
    pub(super) progress: &'a (dyn Fn(usize, usize) -> bool + Sync),
}

impl Steps<'_> {
    /// Counts a file done of `total`, and asks whether to go on.
    pub(super) fn step(&self, total: usize) {
        use std::sync::atomic::Ordering;
        let d = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        if !(self.progress)(d, total) {
            self.stopped.store(true, Ordering::Relaxed);
        }
    }

    pub(super) fn stopped(&self) -> bool {
        self.stopped.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// [`Error::Stopped`] once the caller has asked to stop.
    pub(super) fn check(&self) -> Result<(), Error> {
        if self.stopped() {
            Err(Error::Stopped)
        } else {
            Ok(())
        }
    }
}

/// Imports the images of a folder (and its subfolders), a batch at a time in parallel.
pub(super) fn import_folder(
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
pub(super) fn import_zip(
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
