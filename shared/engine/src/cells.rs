//! Which tile went where: a finished mosaic's cell map, kept beside its result so that a viewer
//! can say which photo a cell shows, after the library version it came from is gone.
//!
//! The map holds, for each cell, an index into a table of the tiles the plan used (library index,
//! file name, caption) and how the tile is turned, and is saved as one blob with a digest, like plans and indexes.

use crate::hash::Fnv;
use crate::library::Reader;
use crate::shape::TileSize;
use crate::transform::Transform;
use crate::{Error, Library, Plan};

const MAGIC: &[u8; 8] = b"TSRCELL\n";
/// Version 2 added the cell height after the width (version 1 maps load with square cells).
const FORMAT_VERSION: u32 = 2;

/// One tile a mosaic uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellSource {
    /// Its index in the library version the plan was made from.
    pub tile: u32,
    /// Its file name in the library (with folders, as imported).
    pub name: String,
    /// What to call it (see [`Library::caption`]).
    pub caption: String,
}

/// Cell -> source tile for a whole grid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellMap {
    cols: u32,
    rows: u32,
    tile_size: TileSize,
    /// Row-major, an index into `sources` per cell.
    cells: Vec<u32>,
    /// Row-major, how each cell's tile is turned.
    transforms: Vec<Transform>,
    sources: Vec<CellSource>,
}

impl CellMap {
    /// The map of a whole plan, with names and captions from the library it was made from.
    pub fn from_plan(plan: &Plan, library: &Library) -> Result<CellMap, Error> {
        if plan.row_range() != (0..plan.total_rows()) {
            return Err(Error::PlanMismatch(
                "a cell map needs the whole plan, not some of its rows".into(),
            ));
        }
        let mut index = std::collections::HashMap::new();
        let mut sources = Vec::new();
        let mut cells = Vec::with_capacity(plan.tiles().len());
        for &tile in plan.tiles() {
            if tile as usize >= library.len() {
                return Err(Error::PlanMismatch(format!(
                    "the plan names tile {tile} of a library of {}",
                    library.len()
                )));
            }
            let at = *index.entry(tile).or_insert_with(|| {
                sources.push(CellSource {
                    tile,
                    name: library.name(tile).to_string(),
                    caption: library.caption(tile),
                });
                sources.len() as u32 - 1
            });
            cells.push(at);
        }
        Ok(CellMap {
            cols: plan.cols(),
            rows: plan.total_rows(),
            tile_size: plan.tile_size(),
            cells,
            transforms: plan.transforms().to_vec(),
            sources,
        })
    }

    pub fn cols(&self) -> u32 {
        self.cols
    }

    pub fn rows(&self) -> u32 {
        self.rows
    }

    /// The size of a cell in the mosaic, in pixels.
    pub fn tile_size(&self) -> TileSize {
        self.tile_size
    }

    /// The tile at `row`, `col`; `None` outside the grid.
    pub fn at(&self, row: u32, col: u32) -> Option<&CellSource> {
        if row >= self.rows || col >= self.cols {
            return None;
        }
        let i = self.cells[row as usize * self.cols as usize + col as usize];
        self.sources.get(i as usize)
    }

    /// How the tile at `row`, `col` is turned; `None` outside the grid.
    pub fn transform(&self, row: u32, col: u32) -> Option<Transform> {
        if row >= self.rows || col >= self.cols {
            return None;
        }
        Some(self.transforms[row as usize * self.cols as usize + col as usize])
    }

    /// Distinct tiles used.
    pub fn sources(&self) -> &[CellSource] {
        &self.sources
    }

    /// Serializes the map: magic, format version, grid, the tiles used, the cells, a digest.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(32 + self.cells.len() * 4 + self.sources.len() * 48);
        out.extend_from_slice(MAGIC);
        for v in [
            FORMAT_VERSION,
            self.cols,
            self.rows,
            self.tile_size.width,
            self.tile_size.height,
            self.sources.len() as u32,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for s in &self.sources {
            out.extend_from_slice(&s.tile.to_le_bytes());
            for text in [&s.name, &s.caption] {
                out.extend_from_slice(&(text.len() as u32).to_le_bytes());
                out.extend_from_slice(text.as_bytes());
            }
        }
        for c in &self.cells {
            out.extend_from_slice(&c.to_le_bytes());
        }
        out.extend(self.transforms.iter().map(|t| t.as_u8()));
        let digest = Fnv::digest(&out);
        out.extend_from_slice(&digest.to_le_bytes());
        out
    }

    /// Loads a map saved by [`CellMap::to_bytes`], checking all of it.
    pub fn from_bytes(bytes: &[u8]) -> Result<CellMap, Error> {
        let bad = |m: &str| Error::BadPlan(format!("cell map: {m}"));
        if !bytes.starts_with(MAGIC) || bytes.len() < MAGIC.len() + 20 + 8 {
            return Err(bad("not a cell map"));
        }
        let (body, tail) = bytes.split_at(bytes.len() - 8);
        if Fnv::digest(body) != u64::from_le_bytes(tail.try_into().expect("8 bytes")) {
            return Err(bad("digest mismatch: corrupt or truncated"));
        }
        let mut r = Reader {
            b: body,
            at: MAGIC.len(),
            short: false,
        };
        let truncated = |_| bad("truncated");
        let version = r.u32().map_err(truncated)?;
        if !(1..=FORMAT_VERSION).contains(&version) {
            return Err(bad("unknown format version"));
        }
        let [cols, rows, width] = [(); 3].map(|()| r.u32().map_err(truncated));
        let (cols, rows, width) = (cols?, rows?, width?);
        let height = if version >= 2 {
            r.u32().map_err(truncated)?
        } else {
            width
        };
        let tile_size = TileSize::new(width, height).map_err(|_| bad("tile size"))?;
        let count = r.u32().map_err(truncated)? as usize;
        let mut sources = Vec::with_capacity(count.min(1 << 20));
        for _ in 0..count {
            let tile = r.u32().map_err(truncated)?;
            let mut text = || -> Result<String, Error> {
                let len = r.u32().map_err(truncated)? as usize;
                let raw = r.take(len).map_err(truncated)?;
                String::from_utf8(raw.to_vec()).map_err(|_| bad("text is not UTF-8"))
            };
            let (name, caption) = (text()?, text()?);
            sources.push(CellSource {
                tile,
                name,
                caption,
            });
        }
        let n = cols as usize * rows as usize;
        let raw = r
            .take(n.checked_mul(4).ok_or_else(|| bad("size"))?)
            .map_err(truncated)?;
        let cells: Vec<u32> = raw
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect();
        let transforms = r
            .take(n)
            .map_err(truncated)?
            .iter()
            .map(|&b| Transform::from_u8(b).ok_or_else(|| bad("unknown transform")))
            .collect::<Result<Vec<_>, _>>()?;
        if r.at != body.len() || cells.iter().any(|&c| c as usize >= sources.len()) {
            return Err(bad("inconsistent"));
        }
        Ok(CellMap {
            cols,
            rows,
            tile_size,
            cells,
            transforms,
            sources,
        })
    }
}
