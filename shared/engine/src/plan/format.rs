//! The plan's blob: the format a plan (or a slice's rows of it) travels in between the
//! controller and the processors, and its CSV for people.

use super::*;

pub(super) const MAGIC: &[u8; 8] = b"TSRPLAN\n";
/// Version of the plan blob layout: 2 added each cell's transform, 3 the tile height after the
/// tile width, 4 the background transparent tiles lie over after the library version. Versions
/// 1 (every cell untransformed) and 2 still load, with square tiles, and 1 to 3 with the
/// library's own background.
pub const PLAN_FORMAT_VERSION: u32 = 4;

impl Plan {
    /// Serializes the plan: magic, format version, header, tiles, colours, transforms and a
    /// digest.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(48 + self.tiles.len() * 8 + 8);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&PLAN_FORMAT_VERSION.to_le_bytes());
        for v in [
            self.cols,
            self.total_rows,
            self.first_row,
            self.row_range().len() as u32,
            self.tile_size.width,
            self.tile_size.height,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.push(self.blend);
        out.extend_from_slice(&self.library_version.to_le_bytes());
        match self.background {
            Some(bg) => {
                out.push(1);
                out.extend_from_slice(&bg);
            }
            None => out.extend_from_slice(&[0; 4]),
        }
        for t in &self.tiles {
            out.extend_from_slice(&t.to_le_bytes());
        }
        for c in &self.colours {
            out.extend_from_slice(c);
        }
        out.extend(self.transforms.iter().map(|t| t.as_u8()));
        let d = Fnv::digest(&out);
        out.extend_from_slice(&d.to_le_bytes());
        out
    }

    /// Loads a plan saved by [`Plan::to_bytes`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Plan, Error> {
        let bad = |m: &str| Error::BadPlan(m.to_string());
        if !bytes.starts_with(MAGIC) {
            return Err(bad("not a plan (bad magic)"));
        }
        if bytes.len() < MAGIC.len() + 4 + 20 + 1 + 8 + 8 {
            return Err(bad("truncated"));
        }
        let (body, tail) = bytes.split_at(bytes.len() - 8);
        let u32_at = |at: usize| u32::from_le_bytes(body[at..at + 4].try_into().expect("4 bytes"));
        let version = u32_at(8);
        if !(1..=PLAN_FORMAT_VERSION).contains(&version) {
            return Err(bad(&format!(
                "format version {version}, this build reads 1 to {PLAN_FORMAT_VERSION}"
            )));
        }
        if Fnv::digest(body) != u64::from_le_bytes(tail.try_into().expect("8 bytes")) {
            return Err(bad("digest mismatch: the plan is corrupt or truncated"));
        }
        let (cols, total_rows, first_row, count, tile_width) =
            (u32_at(12), u32_at(16), u32_at(20), u32_at(24), u32_at(28));
        // Version 3 has the tile height next; earlier plans are square.
        let (tile_height, at) = if version >= 3 {
            if body.len() < 45 {
                return Err(bad("truncated"));
            }
            (u32_at(32), 36)
        } else {
            (tile_width, 32)
        };
        let tile_size = TileSize {
            width: tile_width,
            height: tile_height,
        };
        let blend = body[at];
        let library_version = u64::from_le_bytes(body[at + 1..at + 9].try_into().expect("8 bytes"));
        // Version 4 has the background next: a flag and a colour.
        let (background, start) = if version >= 4 {
            match body.get(at + 9..at + 13) {
                Some([0, 0, 0, 0]) => (None, at + 13),
                Some(&[1, r, g, b]) => (Some([r, g, b]), at + 13),
                _ => return Err(bad("inconsistent header")),
            }
        } else {
            (None, at + 9)
        };
        let cells = cols as usize * count as usize;
        // Bytes per cell: a tile, a colour and (from version 2) a transform.
        let per_cell = if version == 1 { 7 } else { 8 };
        if Some(body.len()) != cells.checked_mul(per_cell).map(|n| n + start)
            || first_row as u64 + count as u64 > total_rows as u64
            || tile_size.check().is_err()
            || blend > 100
        {
            return Err(bad("inconsistent header"));
        }
        let tiles = body[start..start + cells * 4]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect();
        let colours = body[start + cells * 4..start + cells * 7]
            .chunks_exact(3)
            .map(|c| [c[0], c[1], c[2]])
            .collect();
        let transforms: Vec<Transform> = if version == 1 {
            vec![Transform::NONE; cells]
        } else {
            body[start + cells * 7..]
                .iter()
                .map(|&b| Transform::from_u8(b))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| bad("a cell's transform is not one of the 8 (0 to 7)"))?
        };
        if let Some(t) = transforms
            .iter()
            .find(|t| !t.keeps_shape(tile_size.is_square()))
        {
            return Err(bad(&format!(
                "a cell's tile is turned by {t}, which {tile_size} px tiles cannot take (only \
                 square tiles turn by a quarter)"
            )));
        }
        Ok(Plan {
            cols,
            total_rows,
            first_row,
            tile_size,
            blend,
            library_version,
            background,
            tiles,
            colours,
            transforms,
        })
    }

    /// Writes the plan as CSV: `row,col,tile,name,transform` (name quoted where needed;
    /// transform as [`Transform::name`]: `none`, `flip`, `rot90`, ..., `flip+rot270`, where flip
    /// mirrors left-right before the clockwise turn).
    pub fn write_csv(&self, library: &Library, mut w: impl std::io::Write) -> std::io::Result<()> {
        writeln!(w, "row,col,tile,name,transform")?;
        let c = self.cols as usize;
        for (i, (&t, tr)) in self.tiles.iter().zip(&self.transforms).enumerate() {
            let name = library
                .names()
                .get(t as usize)
                .map(String::as_str)
                .unwrap_or("");
            let name = if name.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", name.replace('"', "\"\""))
            } else {
                name.to_string()
            };
            writeln!(
                w,
                "{},{},{t},{name},{tr}",
                self.first_row as usize + i / c,
                i % c
            )?;
        }
        Ok(())
    }
}
