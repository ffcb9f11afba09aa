//! The library's index: the file a library is saved in and read back from (magic, version,
//! tiles, names, captions, descriptors, renditions, digest).

use super::*;

impl Library {
    /// Serializes the whole index into one blob: magic, format version, options, tiles, and a
    /// trailing digest that [`Library::from_bytes`] verifies.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = self.body_bytes();
        let digest = Fnv::digest(&out);
        out.extend_from_slice(&digest.to_le_bytes());
        out
    }

    pub(super) fn body_bytes(&self) -> Vec<u8> {
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
    pub(super) fn write_body(&self, sink: &mut Sink) -> std::io::Result<()> {
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
    pub(super) fn parse(bytes: &[u8]) -> Result<(Library, std::ops::Range<usize>), Error> {
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
    pub(super) fn parse_body(
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
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        Self::open_index_in(file, path)
    }

    /// [`Library::open_index`] of a file already open (one with no name, say), `path` naming
    /// it in errors.
    pub fn open_index_in(mut file: std::fs::File, path: &Path) -> Result<Library, Error> {
        let io = |e| Error::io(path, e);
        file.rewind().map_err(io)?;
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
        let io = |e| Error::io(path, e);
        let mut file = std::fs::File::create(path).map_err(io)?;
        self.write_index(&mut file).map_err(io)?;
        file.sync_all().map_err(io)
    }

    /// Writes [`Library::to_bytes`] to `out` a part at a time (renditions left in a file pass
    /// through a buffer, never held whole).
    pub fn write_index(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        use std::io::Write as _;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, out);
        let mut digest = FnvStream::default();
        self.write_body(&mut |part| {
            digest.update(part);
            out.write_all(part)
        })?;
        out.write_all(&digest.finish().to_le_bytes())?;
        out.flush()
    }

    /// About how long an index of `tiles` tiles like these is, in bytes: their renditions and
    /// descriptors.
    pub fn index_len_estimate(&self, tiles: usize) -> u64 {
        let (w, h) = self.rendition_dims();
        let area = w as u64 * h as u64;
        let k2 = self.grid as u64 * self.grid as u64;
        tiles as u64 * (area * 3 + (1 + k2) * 12 + 48)
    }

    /// True when the renditions are left in a file ([`Library::open_index`],
    /// [`Library::edited_on_disk`]), not held in memory.
    pub fn renditions_on_disk(&self) -> bool {
        matches!(self.pixels, Renditions::File { .. })
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

/// The magic, then a format version this build reads, which it returns.
pub(super) fn check_magic_and_version(bytes: &[u8]) -> Result<u32, Error> {
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

/// [`Fnv::digest`] of the next `len` bytes of `file`, read in chunks of 1 MiB (whole words
/// until the last, as the digest takes them) on one thread and hashed on another, so the copy
/// from the page cache and the hashing overlap.
pub(super) fn streamed_digest(file: &mut std::fs::File, len: usize) -> std::io::Result<u64> {
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
