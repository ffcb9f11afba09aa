//! The real size of a HEIF or AVIF image, read from the file's structure rather than from the
//! size it declares for itself (`ispe`). libheif allocates a grid image at the size the grid
//! item's own data gives and decodes every tile the grid names, whatever `ispe` says; an
//! overlay at its canvas size. So the decode budget is worked out here from the items the decoder
//! will touch: the primary image, the tiles or layers it is made of, and its alpha plane.
//!
//! Only the boxes that say what is decoded are read (`pitm`, `iinf`, `iref`, `iloc`, `idat`,
//! `iprp`); anything malformed among them refuses the file.

use std::collections::HashMap;

/// Most items a file may name (a 12 MP iPhone photo has about 50).
const MAX_ITEMS: usize = 4096;
/// Most layers of derived images (an overlay of grids is two).
const MAX_DEPTH: u32 = 4;

/// What decoding a HEIF file's primary image really costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RealSize {
    /// The primary image's width and height as decoded (before rotation).
    pub(crate) width: u32,
    pub(crate) height: u32,
    /// Every pixel the decoder makes on the way: the image, its tiles or layers, its alpha.
    pub(crate) decoded_pixels: u64,
}

/// Reads the real size of `bytes`' primary image.
pub(crate) fn real_size(bytes: &[u8]) -> Result<RealSize, String> {
    let meta = Meta::read(bytes)?;
    let primary = meta.primary.ok_or("the HEIF names no primary image")?;
    let (width, height, mut pixels) = meta.size_of(bytes, primary, 0)?;
    // The alpha plane (an auxiliary image of the primary) is decoded with it.
    for (&item, refs) in &meta.refs {
        if refs
            .iter()
            .any(|(kind, to)| kind == b"auxl" && to.contains(&primary))
        {
            let (_, _, alpha) = meta.size_of(bytes, item, 1)?;
            pixels = pixels.saturating_add(alpha);
        }
    }
    Ok(RealSize {
        width,
        height,
        decoded_pixels: pixels,
    })
}

/// An item's references: each kind (`dimg`, `auxl`, ...) and the items it refers to.
type References = Vec<([u8; 4], Vec<u32>)>;

/// A byte cursor whose every read is checked.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, at: 0 }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or("the HEIF's structure is cut off")?;
        let out = &self.bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    fn uint(&mut self, n: usize) -> Result<u64, String> {
        Ok(self.take(n)?.iter().fold(0, |v, &b| v << 8 | u64::from(b)))
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, String> {
        Ok(self.uint(2)? as u16)
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(self.uint(4)? as u32)
    }

    fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }

    /// The next box: its type and its body.
    fn next_box(&mut self) -> Result<([u8; 4], &'a [u8]), String> {
        let size = u64::from(self.u32()?);
        let kind: [u8; 4] = self.take(4)?.try_into().expect("four bytes");
        let header = if size == 1 { 16 } else { 8 };
        let size = match size {
            0 => (self.bytes.len() - self.at + 8) as u64,
            1 => self.uint(8)?,
            n => n,
        };
        let body = usize::try_from(size)
            .ok()
            .and_then(|s| s.checked_sub(header))
            .ok_or("a HEIF box is shorter than its header")?;
        Ok((kind, self.take(body)?))
    }

    /// The version and flags of a full box.
    fn full(&mut self) -> Result<(u8, u32), String> {
        let v = self.u32()?;
        Ok(((v >> 24) as u8, v & 0xff_ffff))
    }
}

/// Where an item's data lies.
struct Location {
    /// 0: in the file; 1: in `idat`.
    method: u8,
    extents: Vec<(u64, u64)>,
}

/// The `meta` box, as far as sizes go.
#[derive(Default)]
struct Meta<'a> {
    primary: Option<u32>,
    types: HashMap<u32, [u8; 4]>,
    /// For each item, its references: kind and the items referred to.
    refs: HashMap<u32, References>,
    /// Properties in `ipco` order (index 1 is the first).
    properties: Vec<([u8; 4], &'a [u8])>,
    associations: HashMap<u32, Vec<u16>>,
    locations: HashMap<u32, Location>,
    idat: &'a [u8],
}

impl<'a> Meta<'a> {
    fn read(bytes: &'a [u8]) -> Result<Meta<'a>, String> {
        let mut file = Reader::new(bytes);
        while !file.done() {
            let (kind, body) = file.next_box()?;
            if &kind == b"meta" {
                let mut meta = Reader::new(body);
                meta.full()?;
                return Meta::children(meta);
            }
        }
        Err("the HEIF has no meta box".into())
    }

    fn children(mut r: Reader<'a>) -> Result<Meta<'a>, String> {
        let mut meta = Meta::default();
        while !r.done() {
            let (kind, body) = r.next_box()?;
            let mut b = Reader::new(body);
            match &kind {
                b"pitm" => {
                    let (v, _) = b.full()?;
                    meta.primary = Some(if v == 0 { b.u16()?.into() } else { b.u32()? });
                }
                b"iinf" => meta.read_iinf(b)?,
                b"iref" => meta.read_iref(b)?,
                b"iloc" => meta.read_iloc(b)?,
                b"iprp" => meta.read_iprp(b)?,
                b"idat" => meta.idat = body,
                _ => {}
            }
        }
        Ok(meta)
    }

    fn read_iinf(&mut self, mut b: Reader<'a>) -> Result<(), String> {
        let (v, _) = b.full()?;
        let _count = if v == 0 { b.u16()?.into() } else { b.u32()? };
        while !b.done() {
            let (kind, body) = b.next_box()?;
            if &kind != b"infe" {
                continue;
            }
            let mut e = Reader::new(body);
            let (v, _) = e.full()?;
            if v < 2 {
                continue;
            }
            let id = if v == 2 { e.u16()?.into() } else { e.u32()? };
            e.u16()?;
            let item_type: [u8; 4] = e.take(4)?.try_into().expect("four bytes");
            self.types.insert(id, item_type);
            if self.types.len() > MAX_ITEMS {
                return Err(format!("the HEIF names over {MAX_ITEMS} items"));
            }
        }
        Ok(())
    }

    fn read_iref(&mut self, mut b: Reader<'a>) -> Result<(), String> {
        let (v, _) = b.full()?;
        let id = |r: &mut Reader<'a>| -> Result<u32, String> {
            if v == 0 { Ok(r.u16()?.into()) } else { r.u32() }
        };
        let mut total = 0usize;
        while !b.done() {
            let (kind, body) = b.next_box()?;
            let mut e = Reader::new(body);
            let from = id(&mut e)?;
            let count = usize::from(e.u16()?);
            total += count;
            if total > 4 * MAX_ITEMS {
                return Err("the HEIF has too many item references".into());
            }
            let to = (0..count).map(|_| id(&mut e)).collect::<Result<_, _>>()?;
            self.refs.entry(from).or_default().push((kind, to));
        }
        Ok(())
    }

    fn read_iloc(&mut self, mut b: Reader<'a>) -> Result<(), String> {
        let (v, _) = b.full()?;
        let sizes = b.u16()?;
        let (offset_size, length_size, base_size) = (
            usize::from(sizes >> 12),
            usize::from(sizes >> 8 & 15),
            usize::from(sizes >> 4 & 15),
        );
        let index_size = if v >= 1 { usize::from(sizes & 15) } else { 0 };
        let count = if v < 2 { b.u16()?.into() } else { b.u32()? };
        if count as usize > MAX_ITEMS {
            return Err(format!("the HEIF locates over {MAX_ITEMS} items"));
        }
        for _ in 0..count {
            let id = if v < 2 { b.u16()?.into() } else { b.u32()? };
            let method = if v >= 1 { (b.u16()? & 15) as u8 } else { 0 };
            b.u16()?;
            let base = b.uint(base_size)?;
            let extents = usize::from(b.u16()?);
            let mut location = Location {
                method,
                extents: Vec::with_capacity(extents.min(64)),
            };
            for _ in 0..extents {
                b.uint(index_size)?;
                let offset = b.uint(offset_size)?;
                let length = b.uint(length_size)?;
                location.extents.push((base.saturating_add(offset), length));
            }
            self.locations.insert(id, location);
        }
        Ok(())
    }

    fn read_iprp(&mut self, mut b: Reader<'a>) -> Result<(), String> {
        while !b.done() {
            let (kind, body) = b.next_box()?;
            let mut p = Reader::new(body);
            match &kind {
                b"ipco" => {
                    while !p.done() {
                        let property = p.next_box()?;
                        self.properties.push(property);
                        if self.properties.len() > 4 * MAX_ITEMS {
                            return Err("the HEIF has too many properties".into());
                        }
                    }
                }
                b"ipma" => {
                    let (v, flags) = p.full()?;
                    let count = p.u32()?;
                    if count as usize > MAX_ITEMS {
                        return Err(format!("the HEIF describes over {MAX_ITEMS} items"));
                    }
                    for _ in 0..count {
                        let id = if v < 1 { p.u16()?.into() } else { p.u32()? };
                        let n = p.u8()?;
                        let list = self.associations.entry(id).or_default();
                        for _ in 0..n {
                            list.push(if flags & 1 == 1 {
                                p.u16()? & 0x7fff
                            } else {
                                u16::from(p.u8()? & 0x7f)
                            });
                        }
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The body of the first property of `kind` that `item` has.
    fn property(&self, item: u32, kind: &[u8; 4]) -> Option<&'a [u8]> {
        self.associations.get(&item)?.iter().find_map(|&i| {
            let (k, body) = self.properties.get(usize::from(i).checked_sub(1)?)?;
            (k == kind).then_some(*body)
        })
    }

    /// The size `item` declares for itself (`ispe`).
    fn declared(&self, item: u32) -> Option<(u32, u32)> {
        let mut r = Reader::new(self.property(item, b"ispe")?);
        r.full().ok()?;
        Some((r.u32().ok()?, r.u32().ok()?))
    }

    /// The items `item` is derived from (`dimg`), in order.
    fn sources(&self, item: u32) -> Vec<u32> {
        self.refs
            .get(&item)
            .into_iter()
            .flatten()
            .filter(|(kind, _)| kind == b"dimg")
            .flat_map(|(_, to)| to.iter().copied())
            .collect()
    }

    /// An item's own data (a grid's or an overlay's description), read whole.
    fn data(&self, file: &'a [u8], item: u32) -> Result<Vec<u8>, String> {
        let location = self.locations.get(&item).ok_or("a HEIF item has no data")?;
        let source = match location.method {
            0 => file,
            1 => self.idat,
            m => return Err(format!("a HEIF item's data is located by method {m}")),
        };
        let mut out = Vec::new();
        for &(offset, length) in &location.extents {
            let part = usize::try_from(offset)
                .ok()
                .zip(usize::try_from(length).ok())
                .and_then(|(o, l)| source.get(o..o.checked_add(l)?))
                .ok_or("a HEIF item's data lies outside the file")?;
            if out.len() + part.len() > 1 << 16 {
                return Err("a HEIF item's description is too long".into());
            }
            out.extend_from_slice(part);
        }
        Ok(out)
    }

    /// Width, height and every pixel decoded to make `item`.
    fn size_of(&self, file: &'a [u8], item: u32, depth: u32) -> Result<(u32, u32, u64), String> {
        if depth > MAX_DEPTH {
            return Err("the HEIF's images are derived too deep".into());
        }
        let kind = self.types.get(&item).ok_or("a HEIF item has no type")?;
        match kind {
            b"grid" => self.grid(file, item, depth),
            b"iovl" => self.overlay(file, item, depth),
            b"iden" => {
                let source = *self
                    .sources(item)
                    .first()
                    .ok_or("a HEIF derived image has no source")?;
                self.size_of(file, source, depth + 1)
            }
            _ => {
                let (w, h) = self
                    .declared(item)
                    .ok_or("a HEIF image does not say its size")?;
                Ok((w, h, u64::from(w) * u64::from(h)))
            }
        }
    }

    fn grid(&self, file: &'a [u8], item: u32, depth: u32) -> Result<(u32, u32, u64), String> {
        let data = self.data(file, item)?;
        let mut r = Reader::new(&data);
        r.u8()?;
        let flags = r.u8()?;
        let rows = u32::from(r.u8()?) + 1;
        let cols = u32::from(r.u8()?) + 1;
        let (w, h) = if flags & 1 == 1 {
            (r.u32()?, r.u32()?)
        } else {
            (r.u16()?.into(), r.u16()?.into())
        };
        let tiles = self.sources(item);
        if tiles.len() != (rows * cols) as usize {
            return Err(format!(
                "the HEIF's grid of {cols} x {rows} tiles names {} tiles",
                tiles.len()
            ));
        }
        let mut pixels = u64::from(w) * u64::from(h);
        let mut tile_size = None;
        for tile in tiles {
            let (tw, th, tp) = self.size_of(file, tile, depth + 1)?;
            if *tile_size.get_or_insert((tw, th)) != (tw, th) {
                return Err("the HEIF's grid tiles differ in size".into());
            }
            pixels = pixels.saturating_add(tp);
        }
        let (tw, th) = tile_size.unwrap_or((0, 0));
        // The tiles cover the image, the last column and row cut at its edge, and no more.
        let covers = |n: u32, tile: u32, side: u32| {
            let span = u64::from(n) * u64::from(tile);
            span >= u64::from(side) && span - u64::from(tile) < u64::from(side)
        };
        if !covers(cols, tw, w) || !covers(rows, th, h) {
            return Err(format!(
                "the HEIF's grid of {cols} x {rows} tiles of {tw} x {th} does not make its {w} x {h}"
            ));
        }
        self.check_declared(item, w, h)?;
        Ok((w, h, pixels))
    }

    fn overlay(&self, file: &'a [u8], item: u32, depth: u32) -> Result<(u32, u32, u64), String> {
        let data = self.data(file, item)?;
        let mut r = Reader::new(&data);
        r.u8()?;
        let flags = r.u8()?;
        r.take(8)?;
        let (w, h) = if flags & 1 == 1 {
            (r.u32()?, r.u32()?)
        } else {
            (r.u16()?.into(), r.u16()?.into())
        };
        let mut pixels = u64::from(w) * u64::from(h);
        for layer in self.sources(item) {
            pixels = pixels.saturating_add(self.size_of(file, layer, depth + 1)?.2);
        }
        self.check_declared(item, w, h)?;
        Ok((w, h, pixels))
    }

    /// Refuses a derived image larger than the size it declares.
    fn check_declared(&self, item: u32, w: u32, h: u32) -> Result<(), String> {
        match self.declared(item) {
            Some((dw, dh)) if w > dw || h > dh => Err(format!(
                "the HEIF declares {dw} x {dh} pixels but makes {w} x {h}"
            )),
            _ => Ok(()),
        }
    }
}
