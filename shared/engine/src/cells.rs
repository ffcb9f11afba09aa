//! Which tile went where: a finished mosaic's cell map, kept beside its result so that a viewer
//! can say which photo a cell shows, after the library version it came from is gone.
//!
//! The map holds, for each cell, an index into a table of the tiles the plan used (library index,
//! file name, caption) and how the tile is turned, and is saved as one blob with a digest, like plans and indexes.
//!
//! An adaptive mosaic's map is on the grid of its smallest squares: each cell names the tile of
//! the square that covers it, and the map keeps the squares, so a viewer pointing anywhere in a
//! large square is told that square's place and size.

use crate::hash::Fnv;
use crate::library::Reader;
use crate::shape::TileSize;
use crate::transform::Transform;
use crate::{adaptive::AdaptivePlan, error::Error, library::Library, plan::Plan};

const MAGIC: &[u8; 8] = b"TSRCELL\n";
/// Version 2 added the cell height after the width (version 1 maps load with square cells);
/// version 3, written for adaptive mosaics only, adds their squares after the cells. Maps of
/// uniform grids are written as version 2, as they always were.
const FORMAT_VERSION: u32 = 3;

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
    /// An adaptive mosaic's squares, and the one covering each cell.
    squares: Option<Squares>,
}

/// Where one tile is in a mosaic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub source: CellSource,
    /// The cells it fills, `[row, column]` from the top left, counted from 0, in reading order.
    /// In a mosaic of adaptive sizes, each square it fills once, by its top-left cell.
    pub cells: Vec<[u32; 2]>,
}

impl CellSource {
    /// Whether `query` names this tile: its file name or caption holds it, in any case.
    pub fn matches(&self, query: &str) -> bool {
        let q = query.trim().to_lowercase();
        !q.is_empty()
            && (self.name.to_lowercase().contains(&q) || self.caption.to_lowercase().contains(&q))
    }

    /// Whether `query` is this tile's whole file name or caption (in any case), or its file
    /// name without folders and extension.
    pub fn is_named(&self, query: &str) -> bool {
        let q = query.trim().to_lowercase();
        let name = self.name.to_lowercase();
        let stem = name.rsplit('/').next().unwrap_or(&name);
        let stem = stem.rsplit_once('.').map_or(stem, |(s, _)| s);
        q == name || q == stem || q == self.caption.to_lowercase()
    }
}

/// The tiles a mosaic uses, each with its cells (indices in reading order), and the tiles in
/// the order of their file names ([`CellMap::placement_index`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlacementIndex {
    by_name: Vec<u32>,
    /// Where each tile's cells start in `cells` (one more than the tiles: the end).
    starts: Vec<u32>,
    cells: Vec<u32>,
}

impl PlacementIndex {
    /// The tiles (indices into [`CellMap::sources`]) by file name.
    pub fn by_name(&self) -> &[u32] {
        &self.by_name
    }

    /// The cells tile `source` fills, in reading order.
    pub fn cells_of(&self, source: u32) -> &[u32] {
        let (a, b) = (
            self.starts[source as usize],
            self.starts[source as usize + 1],
        );
        &self.cells[a as usize..b as usize]
    }
}

/// The first line of placements as CSV.
pub const PLACEMENTS_CSV_HEADER: &str = "tile,name,caption,uses,cells\n";

/// One field of a CSV line: quoted when it holds a comma, a quote or a line break, and a cell a
/// spreadsheet would read as a formula neutralised as OWASP advises (a leading quote, and the
/// field quoted).
pub fn csv_field(s: &str) -> std::borrow::Cow<'_, str> {
    let formula = s.starts_with(['=', '+', '-', '@', '\t', '\r']);
    if formula || s.contains([',', '"', '\n', '\r']) {
        let quote = if formula { "'" } else { "" };
        format!("\"{quote}{}\"", s.replace('"', "\"\"")).into()
    } else {
        s.into()
    }
}

/// A cell as placements CSV writes it: `R40C44` for row 40, column 44, counted from 1 as the
/// job page counts them (a spreadsheet reads `39:43` as a time of day).
pub fn csv_cell(row: u32, col: u32) -> String {
    format!("R{}C{}", u64::from(row) + 1, u64::from(col) + 1)
}

/// Writes `placements` as CSV: `tile,name,caption,uses,cells`, the cells as [`csv_cell`]
/// separated by spaces.
pub fn write_placements_csv(
    placements: &[Placement],
    mut w: impl std::io::Write,
) -> std::io::Result<()> {
    w.write_all(PLACEMENTS_CSV_HEADER.as_bytes())?;
    for p in placements {
        let cells: Vec<String> = p.cells.iter().map(|&[r, c]| csv_cell(r, c)).collect();
        writeln!(
            w,
            "{},{},{},{},{}",
            p.source.tile,
            csv_field(&p.source.name),
            csv_field(&p.source.caption),
            p.cells.len(),
            cells.join(" ")
        )?;
    }
    Ok(())
}

/// The squares of an adaptive mosaic.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Squares {
    /// Each square's left and top edge and side, in pixels.
    squares: Vec<[u32; 3]>,
    /// Row-major, an index into `squares` per cell.
    cells: Vec<u32>,
}

/// The distinct tiles of a map, each once, in the order they are first met.
#[derive(Default)]
struct Sources {
    index: std::collections::HashMap<u32, u32>,
    list: Vec<CellSource>,
}

impl Sources {
    /// The place of `tile` in the list, added (with its name and caption) if new.
    fn of(&mut self, library: &Library, tile: u32) -> Result<u32, Error> {
        if tile as usize >= library.len() {
            return Err(Error::PlanMismatch(format!(
                "the plan names tile {tile} of a library of {}",
                library.len()
            )));
        }
        let list = &mut self.list;
        Ok(*self.index.entry(tile).or_insert_with(|| {
            list.push(CellSource {
                tile,
                name: library.name(tile).to_string(),
                caption: library.caption(tile),
            });
            list.len() as u32 - 1
        }))
    }
}

impl CellMap {
    /// The map of a whole plan, with names and captions from the library it was made from.
    pub fn from_plan(plan: &Plan, library: &Library) -> Result<CellMap, Error> {
        if plan.row_range() != (0..plan.total_rows()) {
            return Err(Error::PlanMismatch(
                "a cell map needs the whole plan, not some of its rows".into(),
            ));
        }
        let mut sources = Sources::default();
        let mut cells = Vec::with_capacity(plan.tiles().len());
        for &tile in plan.tiles() {
            let at = sources.of(library, tile)?;
            cells.push(at);
        }
        Ok(CellMap {
            cols: plan.cols(),
            rows: plan.total_rows(),
            tile_size: plan.tile_size(),
            cells,
            transforms: plan.transforms().to_vec(),
            sources: sources.list,
            squares: None,
        })
    }

    /// The map of a whole adaptive plan on the grid of its smallest squares, with names and
    /// captions from the library it was made from.
    pub fn from_adaptive(plan: &AdaptivePlan, library: &Library) -> Result<CellMap, Error> {
        if plan.block_row_range() != (0..plan.block_rows()) {
            return Err(Error::PlanMismatch(
                "a cell map needs the whole plan, not some of its rows of blocks".into(),
            ));
        }
        let min = plan.sizes().min;
        let (cols, rows) = (plan.width() / min, plan.height() / min);
        let n = cols as usize * rows as usize;
        let mut sources = Sources::default();
        let mut cells = vec![0u32; n];
        let mut transforms = vec![Transform::NONE; n];
        let mut covering = vec![u32::MAX; n];
        let mut squares = Vec::with_capacity(plan.leaves().len());
        for (i, leaf) in plan.leaves().iter().enumerate() {
            let tile = leaf.tile;
            let at = sources.of(library, tile)?;
            squares.push([leaf.x, leaf.y, leaf.size]);
            let (x0, y0, units) = (leaf.x / min, leaf.y / min, leaf.size / min);
            for y in y0..y0 + units {
                let row = y as usize * cols as usize;
                let span = row + x0 as usize..row + (x0 + units) as usize;
                cells[span.clone()].fill(at);
                transforms[span.clone()].fill(leaf.transform);
                covering[span].fill(i as u32);
            }
        }
        if covering.contains(&u32::MAX) {
            return Err(Error::PlanMismatch(
                "the plan's squares leave cells uncovered".into(),
            ));
        }
        Ok(CellMap {
            cols,
            rows,
            tile_size: TileSize::square(min),
            cells,
            transforms,
            sources: sources.list,
            squares: Some(Squares {
                squares,
                cells: covering,
            }),
        })
    }

    pub fn cols(&self) -> u32 {
        self.cols
    }

    pub fn rows(&self) -> u32 {
        self.rows
    }

    /// The size of a cell in the mosaic, in pixels (of an adaptive mosaic: its smallest
    /// square).
    pub fn tile_size(&self) -> TileSize {
        self.tile_size
    }

    /// Whether the map is an adaptive mosaic's, its cells covered by squares of several sizes.
    pub fn is_adaptive(&self) -> bool {
        self.squares.is_some()
    }

    /// Where the tile shown at `row`, `col` lies in the mosaic: its left and top edges, width
    /// and height in pixels (the cell itself, or the adaptive square that covers it); `None`
    /// outside the grid.
    pub fn square(&self, row: u32, col: u32) -> Option<[u32; 4]> {
        if row >= self.rows || col >= self.cols {
            return None;
        }
        match &self.squares {
            None => {
                let size = self.tile_size;
                Some([col * size.width, row * size.height, size.width, size.height])
            }
            Some(s) => {
                let i = s.cells[row as usize * self.cols as usize + col as usize];
                let [x, y, side] = s.squares[i as usize];
                Some([x, y, side, side])
            }
        }
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

    /// Every tile used and its cells, in the order of their file names.
    pub fn placements(&self) -> Vec<Placement> {
        let index = self.placement_index();
        index
            .by_name()
            .iter()
            .map(|&source| Placement {
                source: self.sources[source as usize].clone(),
                cells: index
                    .cells_of(source)
                    .iter()
                    .map(|&cell| self.position(cell))
                    .collect(),
            })
            .collect()
    }

    /// The cells of each tile used, grouped by tile: four bytes a cell, however many tiles.
    /// An adaptive mosaic's squares each count once, by their top-left cell.
    pub fn placement_index(&self) -> PlacementIndex {
        let mut starts = vec![0u32; self.sources.len() + 1];
        let mut seen_square = vec![false; self.squares.as_ref().map_or(0, |s| s.squares.len())];
        let mut counted = Vec::with_capacity(self.cells.len());
        for (i, &source) in self.cells.iter().enumerate() {
            if let Some(s) = &self.squares
                && std::mem::replace(&mut seen_square[s.cells[i] as usize], true)
            {
                continue;
            }
            starts[source as usize + 1] += 1;
            counted.push(i as u32);
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut next = starts.clone();
        let mut cells = vec![0u32; counted.len()];
        for cell in counted {
            let source = self.cells[cell as usize] as usize;
            cells[next[source] as usize] = cell;
            next[source] += 1;
        }
        let mut by_name: Vec<u32> = (0..self.sources.len() as u32).collect();
        by_name.sort_by(|&a, &b| {
            self.sources[a as usize]
                .name
                .cmp(&self.sources[b as usize].name)
        });
        PlacementIndex {
            by_name,
            starts,
            cells,
        }
    }

    /// A cell's `[row, column]` from its index in reading order.
    pub fn position(&self, cell: u32) -> [u32; 2] {
        [cell / self.cols, cell % self.cols]
    }

    /// Serializes the map: magic, format version, grid, the tiles used, the cells, a digest.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(32 + self.cells.len() * 4 + self.sources.len() * 48);
        out.extend_from_slice(MAGIC);
        let version = if self.squares.is_some() {
            FORMAT_VERSION
        } else {
            2
        };
        for v in [
            version,
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
        if let Some(s) = &self.squares {
            out.extend_from_slice(&(s.squares.len() as u32).to_le_bytes());
            for v in s.squares.iter().flatten().chain(&s.cells) {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
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
        let squares = if version >= 3 {
            Some(read_squares(&mut r, (cols, rows), tile_size).ok_or_else(|| bad("squares"))?)
        } else {
            None
        };
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
            squares,
        })
    }
}

/// An adaptive map's squares, each cell's covering it; `None` if short or inconsistent.
fn read_squares(r: &mut Reader, (cols, rows): (u32, u32), cell: TileSize) -> Option<Squares> {
    if !cell.is_square() {
        return None;
    }
    let min = cell.width;
    let count = r.u32().ok()? as usize;
    let raw = r.take(count.checked_mul(12)?).ok()?;
    let squares: Vec<[u32; 3]> = raw
        .chunks_exact(12)
        .map(|c| [0, 4, 8].map(|i| u32::from_le_bytes(c[i..i + 4].try_into().expect("4 bytes"))))
        .collect();
    let n = cols as usize * rows as usize;
    let raw = r.take(n.checked_mul(4)?).ok()?;
    let cells: Vec<u32> = raw
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect();
    // Each cell lies within the square it names.
    for (i, &s) in cells.iter().enumerate() {
        let [x, y, side] = *squares.get(s as usize)?;
        let (cx, cy) = (
            (i % cols as usize) as u64 * u64::from(min),
            (i / cols as usize) as u64 * u64::from(min),
        );
        let inside =
            |edge: u32, at: u64| u64::from(edge) <= at && at < u64::from(edge) + u64::from(side);
        if !inside(x, cx) || !inside(y, cy) {
            return None;
        }
    }
    Some(Squares { squares, cells })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_csv_cell_can_start_a_formula() {
        let hostile = [
            "=HYPERLINK(\"http://x\")",
            "+1+2",
            "-3",
            "@cmd",
            "\tx",
            "\rx",
            "plain",
            "a,b",
        ];
        let placements: Vec<Placement> = hostile
            .iter()
            .enumerate()
            .map(|(i, s)| Placement {
                source: CellSource {
                    tile: i as u32,
                    name: s.to_string(),
                    caption: s.to_string(),
                },
                cells: vec![[0, i as u32]],
            })
            .collect();
        let mut out = Vec::new();
        write_placements_csv(&placements, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        // Each field as a spreadsheet reads it: unquoted, doubled quotes undone.
        let mut fields = Vec::new();
        let (mut field, mut quoted, mut chars) = (String::new(), false, text.chars().peekable());
        while let Some(c) = chars.next() {
            match c {
                '"' if quoted && chars.peek() == Some(&'"') => {
                    field.push('"');
                    chars.next();
                }
                '"' => quoted = !quoted,
                ',' | '\n' if !quoted => fields.push(std::mem::take(&mut field)),
                c => field.push(c),
            }
        }
        assert!(fields.len() > 5 * hostile.len(), "{fields:?}");
        for f in &fields {
            assert!(
                !f.starts_with(['=', '+', '-', '@', '\t', '\r']),
                "{f:?} in\n{text}"
            );
        }
        assert!(text.contains("\"'=HYPERLINK(\"\"http://x\"\")\""), "{text}");
        assert!(text.contains(",plain,plain,"), "{text}");
    }
}
