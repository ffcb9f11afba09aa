//! Boards: an event printed as a sticker wall. The board is a fixed grid over the target; each
//! photo, once in (approved, or prepared when approval is off), is given the free cell where it
//! costs least at once, and keeps it for good: its sticker goes on the printed board.
//!
//! A cell is claimed by a blob of its own written only if absent (`board/cells/{row}-{col}`,
//! naming the photo), so two photos placed at once never get the same cell, whatever the
//! processes; the photo's record then names the cell, and an empty marker
//! (`board/placed/{row}-{col}.{photo}`) lets one listing show the whole board. A sticker is
//! printed once across printer stations the same way (`board/printed/{row}-{col}`).
//!
//! Which free cell: the cheapest by CIEDE2000 between the photo's colour and the cell's, but
//! among the cells nearly as cheap ([`NEAR_BEST`]) the one whose colour the free cells have
//! most of, so that the rarer colours stay free for the photos that match them.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tessera_engine::color::{ciede2000, srgb_to_lab};
use uuid::Uuid;

use super::{EventError, EventStore, forget};
use crate::storage::{BlobStoreExt, PutMode, StorageError};

/// Cells costing at most this much more than the cheapest free one (CIEDE2000) are as good for
/// the photo: of them it takes the most common colour.
pub const NEAR_BEST: f64 = 3.0;
/// The nearly-as-cheap cells weighed by how common their colour is, at most.
const NEAR_WEIGHED: usize = 64;
/// Cells within this distance (CIE76) of a cell's colour count as its colour.
const SAME_COLOUR: f64 = 6.0;
/// Boards with at most this many cells free place each photo by a whole assignment
/// ([`Board::choose`]): its cost grows with the cube of the free cells.
pub const ASSIGNED_UP_TO: usize = 250;
/// How long a board's listing of its claims serves the placements after it in this process
/// (with this process's own claims marked as they are made): a cell claimed elsewhere
/// meanwhile costs a collision, which lists the claims again.
const CLAIMS_SERVE: std::time::Duration = std::time::Duration::from_secs(1);
/// How long a board's listing of the photos expected serves: they change a photo at a time
/// and only weigh the assignment.
const EXPECTED_SERVE: std::time::Duration = std::time::Duration::from_secs(5);
/// A board unplaced for this long is forgotten by [`SEEN`].
const SEEN_FOR: std::time::Duration = std::time::Duration::from_secs(600);

/// What this process's last listings of each board it places photos on found, so that a
/// placement lists the board's thousands of names about once a second, not once a photo.
static SEEN: std::sync::Mutex<Option<std::collections::HashMap<Uuid, Seen>>> =
    std::sync::Mutex::new(None);

/// A board's cells taken and photos expected, as last listed.
struct Seen {
    taken: Vec<bool>,
    taken_at: std::time::Instant,
    expected: Option<(Vec<[u8; 3]>, std::time::Instant)>,
}

/// `f` on `event`'s [`Seen`] (one with nothing listed yet when there is none); boards
/// unplaced for [`SEEN_FOR`] are forgotten.
fn with_seen<T>(event: Uuid, f: impl FnOnce(&mut Seen) -> T) -> T {
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    let seen = seen.get_or_insert_with(std::collections::HashMap::new);
    seen.retain(|_, s| s.taken_at.elapsed() < SEEN_FOR);
    let entry = seen.entry(event).or_insert_with(|| Seen {
        taken: Vec::new(),
        taken_at: std::time::Instant::now(),
        expected: None,
    });
    f(entry)
}

/// Board sides in cells.
pub const BOARD_SIDE: std::ops::RangeInclusive<u32> = 2..=400;
/// A board's cells at most (Luster's College Football Playoff board had 5,104).
pub const MAX_BOARD_CELLS: u32 = 40_000;
/// A sticker's side in millimetres.
pub const STICKER_MM: std::ops::RangeInclusive<f64> = 10.0..=100.0;
/// The colour shift's cap a board takes unless its owner chooses (CIEDE2000 units).
pub const DEFAULT_SHIFT_CAP: f32 = 10.0;
/// Attempts to claim a cell before a photo is left for the next try (each failed one means
/// another photo took the cell meanwhile).
const CLAIM_TRIES: usize = 16;

/// A board: its grid, the stickers' size and print, and the target's colour in each cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Board {
    pub cols: u32,
    pub rows: u32,
    /// A cell's side on the board, and so a sticker's, in millimetres.
    pub sticker_mm: f64,
    /// The stickers' print resolution.
    pub dpi: u32,
    /// How far a sticker's colour is moved toward its cell's at most (CIEDE2000 units, as
    /// AndreaMosaic's colour change; 0: never).
    pub shift_cap: f32,
    /// The target's mean colour in each cell, row by row.
    pub cells: Vec<[u8; 3]>,
}

/// A cell of a board, as printed: row and column from 1.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
pub struct Cell {
    pub row: u32,
    pub col: u32,
}

impl Cell {
    /// `R12-C030` style: the name its claim blobs use (sorted by row, then column).
    fn key(self) -> String {
        format!("{:04}-{:04}", self.row, self.col)
    }

    fn parse(key: &str) -> Option<Cell> {
        let (row, col) = key.split_once('-')?;
        Some(Cell {
            row: row.parse().ok()?,
            col: col.parse().ok()?,
        })
    }
}

impl std::fmt::Display for Cell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "row {}, column {}", self.row, self.col)
    }
}

/// A filled cell as the board's listing shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placed {
    pub cell: Cell,
    /// The photo on its sticker; none for a cell the owner filled with the target's colour.
    pub photo: Option<Uuid>,
    /// The colour of what is on it: the photo's own (its sticker's is moved toward the
    /// cell's, [`Board::sticker_colour`]), or the target's; none on cells placed before it
    /// was kept.
    pub colour: Option<[u8; 3]>,
    /// When it was placed.
    pub at: time::OffsetDateTime,
}

/// A sheet of stickers a printer station took, kept so that it can be printed again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sheet {
    /// From 1, in the order they were taken.
    pub number: u32,
    pub cells: Vec<Cell>,
    pub paper: String,
    /// Whether its stickers' colours were shifted toward their cells'.
    pub shifted: bool,
    #[serde(with = "time::serde::rfc3339")]
    pub taken_at: time::OffsetDateTime,
}

/// How the owner fills a board's last free cells ([`EventStore::fill_free`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Filling {
    /// Each free cell takes a second print of the photo in that costs least there.
    Photos,
    /// Each free cell takes a plain sticker of the target's colour.
    Colour,
}

/// The content of a cell's claim for a cell filled with the target's colour.
const COLOUR_FILL: &str = "colour";

fn hex(c: [u8; 3]) -> String {
    format!("{:02x}{:02x}{:02x}", c[0], c[1], c[2])
}

fn parse_hex(text: &str) -> Option<[u8; 3]> {
    if text.len() != 6 {
        return None;
    }
    let byte = |i: usize| u8::from_str_radix(text.get(i..i + 2)?, 16).ok();
    Some([byte(0)?, byte(2)?, byte(4)?])
}

impl Placed {
    /// Parses a marker's name: `{cell}.{photo or colour}[.{rrggbb}]`.
    fn parse(name: &str, at: time::OffsetDateTime) -> Option<Placed> {
        let mut parts = name.split('.');
        let cell = Cell::parse(parts.next()?)?;
        let photo = match parts.next()? {
            COLOUR_FILL => None,
            id => Some(id.parse().ok()?),
        };
        let colour = parts.next().and_then(parse_hex);
        Some(Placed {
            cell,
            photo,
            colour,
            at,
        })
    }

    fn marker(&self) -> String {
        let what = self
            .photo
            .map_or_else(|| COLOUR_FILL.to_string(), |p| p.to_string());
        match self.colour {
            Some(c) => format!("{}.{what}.{}", self.cell.key(), hex(c)),
            None => format!("{}.{what}", self.cell.key()),
        }
    }
}

impl Board {
    /// The board over a target whose cells' mean colours are `cells` (row by row).
    pub fn new(cols: u32, rows: u32, sticker_mm: f64, cells: Vec<[u8; 3]>) -> Board {
        Board {
            cols,
            rows,
            sticker_mm,
            dpi: crate::print::DEFAULT_DPI,
            shift_cap: DEFAULT_SHIFT_CAP,
            cells,
        }
    }

    /// The cells' colours of a `cols` x `rows` board over `target`: the target's centre at
    /// the board's shape (square cells), each cell's mean.
    pub fn cells_over(target: &image::RgbImage, cols: u32, rows: u32) -> Vec<[u8; 3]> {
        let (w, h) = (target.width() as f64, target.height() as f64);
        let aspect = f64::from(cols) / f64::from(rows);
        let (cw, ch) = if w / h > aspect {
            (h * aspect, h)
        } else {
            (w, w / aspect)
        };
        let (x0, y0) = ((w - cw) / 2.0, (h - ch) / 2.0);
        let (sx, sy) = (cw / f64::from(cols), ch / f64::from(rows));
        let mut cells = Vec::with_capacity(cols as usize * rows as usize);
        for r in 0..rows {
            for c in 0..cols {
                let xs = (x0 + f64::from(c) * sx) as u32
                    ..((x0 + f64::from(c + 1) * sx).ceil() as u32).min(target.width());
                let ys = (y0 + f64::from(r) * sy) as u32
                    ..((y0 + f64::from(r + 1) * sy).ceil() as u32).min(target.height());
                let mut sum = [0u64; 3];
                let mut n = 0u64;
                for y in ys {
                    for x in xs.clone() {
                        let p = target.get_pixel(x, y);
                        for k in 0..3 {
                            sum[k] += u64::from(p[k]);
                        }
                        n += 1;
                    }
                }
                cells.push(sum.map(|v| (v / n.max(1)) as u8));
            }
        }
        cells
    }

    /// How many cells it has.
    pub fn len(&self) -> usize {
        self.cols as usize * self.rows as usize
    }

    /// True for a board of no cells (never made).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The target's colour in `cell`.
    pub fn colour(&self, cell: Cell) -> [u8; 3] {
        self.cells[self.at(cell)]
    }

    fn at(&self, cell: Cell) -> usize {
        (cell.row as usize - 1) * self.cols as usize + cell.col as usize - 1
    }

    fn cell(&self, at: usize) -> Cell {
        Cell {
            row: (at / self.cols as usize) as u32 + 1,
            col: (at % self.cols as usize) as u32 + 1,
        }
    }

    /// The colour a photo of mean `photo` prints in `cell`: moved toward the cell's by the
    /// capped shift.
    pub fn sticker_colour(&self, photo: [u8; 3], cell: Cell) -> [u8; 3] {
        use tessera_engine::color::lab_to_srgb;
        let p = srgb_to_lab(photo.map(f64::from));
        let s = capped_shift(photo, self.colour(cell), self.shift_cap);
        lab_to_srgb([p[0] + s[0], p[1] + s[1], p[2] + s[2]])
            .map(|v| v.round().clamp(0.0, 255.0) as u8)
    }

    /// The colours the free cells want, most cells first: what guests' photos should be like
    /// for the board's rest (a photo a cell).
    pub fn wishlist(&self, filled: &[Cell]) -> Vec<crate::wishlist::Wish> {
        let mut taken = vec![false; self.len()];
        for &cell in filled {
            if let Some(t) = self.index(cell).and_then(|i| taken.get_mut(i)) {
                *t = true;
            }
        }
        let free: Vec<[u8; 3]> = (0..self.len())
            .filter(|&i| !taken[i])
            .map(|i| self.cells[i])
            .collect();
        let mut wishes = crate::wishlist::wishlist(&free, &[]);
        for wish in &mut wishes {
            wish.photos = (wish.share * free.len() as f64).round() as u32;
        }
        wishes
    }

    /// Where `cell` is in [`Board::cells`], if it is on the board.
    pub fn index(&self, cell: Cell) -> Option<usize> {
        ((1..=self.rows).contains(&cell.row) && (1..=self.cols).contains(&cell.col))
            .then(|| self.at(cell))
    }

    /// A sticker's side in pixels at the board's resolution.
    pub fn sticker_px(&self) -> u32 {
        (self.sticker_mm / 25.4 * f64::from(self.dpi)).round() as u32
    }

    /// The free cell a photo of colour `colour` should take, `taken` the cells claimed (by
    /// index, row by row) and `expected` the colours of the photos it expects next (those in
    /// and not placed yet first, then a sample of those placed, as the photos still to come
    /// will be like them); none when the board is full.
    ///
    /// While few cells are free ([`ASSIGNED_UP_TO`]), the photo takes its cell in the best
    /// assignment of itself and the expected photos to the free cells (the Hungarian method,
    /// on the colour error after the capped shift): a cell another photo is likely to need more
    /// is left to it. Past that, the cheapest cell, of those nearly as cheap the colour the
    /// free cells have most of.
    pub fn choose(&self, colour: [u8; 3], taken: &[bool], expected: &[[u8; 3]]) -> Option<Cell> {
        let free: Vec<usize> = (0..self.len())
            .filter(|&i| !taken.get(i).copied().unwrap_or(false))
            .collect();
        if free.is_empty() {
            return None;
        }
        if free.len() <= ASSIGNED_UP_TO && !expected.is_empty() {
            let lab = |c: [u8; 3]| srgb_to_lab(c.map(f64::from));
            let cells: Vec<[f64; 3]> = free.iter().map(|&c| lab(self.cells[c])).collect();
            // Each distinct colour's row of costs once: the expected photos repeat.
            let mut rows_of: std::collections::HashMap<[u8; 3], std::rc::Rc<[f64]>> =
                std::collections::HashMap::new();
            let costs: Vec<std::rc::Rc<[f64]>> = std::iter::once(colour)
                .chain(expected.iter().copied().cycle().take(free.len() - 1))
                .map(|p| {
                    rows_of
                        .entry(p)
                        .or_insert_with(|| {
                            let p = lab(p);
                            cells.iter().map(|&c| self.error_lab(p, c)).collect()
                        })
                        .clone()
                })
                .collect();
            let assigned = assignment(&costs);
            return Some(self.cell(free[assigned[0]]));
        }
        self.nearest(colour, &free)
    }

    /// The colour error of a sticker of colour `photo` in a cell of colour `cell`, after its
    /// capped shift (CIEDE2000).
    pub fn error(&self, photo: [u8; 3], cell: [u8; 3]) -> f64 {
        let lab = |c: [u8; 3]| srgb_to_lab([c[0] as f64, c[1] as f64, c[2] as f64]);
        self.error_lab(lab(photo), lab(cell))
    }

    /// [`Board::error`] of colours given in Lab.
    fn error_lab(&self, p: [f64; 3], c: [f64; 3]) -> f64 {
        let s = shift_lab(p, c, self.shift_cap);
        ciede2000([p[0] + s[0], p[1] + s[1], p[2] + s[2]], c)
    }

    /// Of the `free` cells, the cheapest for `colour`, of those nearly as cheap the colour the
    /// free cells have most of.
    fn nearest(&self, colour: [u8; 3], free: &[usize]) -> Option<Cell> {
        let lab = |c: [u8; 3]| srgb_to_lab([c[0] as f64, c[1] as f64, c[2] as f64]);
        let free: Vec<(usize, [f64; 3])> = free.iter().map(|&i| (i, lab(self.cells[i]))).collect();
        let costs: Vec<f64> = free
            .iter()
            .map(|&(i, _)| self.error(colour, self.cells[i]))
            .collect();
        let best = costs.iter().copied().fold(f64::INFINITY, f64::min);
        // The cheapest of those nearly as cheap as the best: weighing each against every free
        // cell's colour costs their number times the free cells'.
        let mut near: Vec<usize> = (0..free.len())
            .filter(|&k| costs[k] <= best + NEAR_BEST)
            .collect();
        if near.len() > NEAR_WEIGHED {
            near.select_nth_unstable_by(NEAR_WEIGHED, |&a, &b| costs[a].total_cmp(&costs[b]));
            near.truncate(NEAR_WEIGHED);
        }
        let common = |k: usize| {
            let c = free[k].1;
            free.iter()
                .filter(|(_, o)| {
                    let d: f64 = (0..3).map(|i| (o[i] - c[i]).powi(2)).sum();
                    d <= SAME_COLOUR * SAME_COLOUR
                })
                .count()
        };
        let chosen = near.into_iter().max_by(|&a, &b| {
            common(a)
                .cmp(&common(b))
                .then(costs[b].total_cmp(&costs[a]))
                .then(free[b].0.cmp(&free[a].0))
        })?;
        Some(self.cell(free[chosen].0))
    }
}

/// The least-cost assignment of the rows of `costs` (a square matrix) to its columns: each
/// row's column (the Hungarian method, O(n³)).
pub fn assignment<R: std::ops::Deref<Target = [f64]>>(costs: &[R]) -> Vec<usize> {
    let n = costs.len();
    let (mut u, mut v) = (vec![0.0; n + 1], vec![0.0; n + 1]);
    let (mut p, mut way) = (vec![0usize; n + 1], vec![0usize; n + 1]);
    for i in 1..=n {
        p[0] = i;
        let mut j0 = 0;
        let mut minv = vec![f64::INFINITY; n + 1];
        let mut used = vec![false; n + 1];
        loop {
            used[j0] = true;
            let (i0, mut delta, mut j1) = (p[j0], f64::INFINITY, 0);
            for j in 1..=n {
                if !used[j] {
                    let cur = costs[i0 - 1][j - 1] - u[i0] - v[j];
                    if cur < minv[j] {
                        minv[j] = cur;
                        way[j] = j0;
                    }
                    if minv[j] < delta {
                        delta = minv[j];
                        j1 = j;
                    }
                }
            }
            for j in 0..=n {
                if used[j] {
                    u[p[j]] += delta;
                    v[j] -= delta;
                } else {
                    minv[j] -= delta;
                }
            }
            j0 = j1;
            if p[j0] == 0 {
                break;
            }
        }
        loop {
            let j1 = way[j0];
            p[j0] = p[j1];
            j0 = j1;
            if j0 == 0 {
                break;
            }
        }
    }
    let mut of_row = vec![0; n];
    for j in 1..=n {
        if p[j] > 0 {
            of_row[p[j] - 1] = j - 1;
        }
    }
    of_row
}

/// A sticker's colour moved toward its cell's: the shift in Lab from `photo`'s mean toward
/// `cell`'s, no longer than `cap` (CIE76 units, which CIEDE2000 never exceeds by much), to add
/// to each pixel's Lab.
pub fn capped_shift(photo: [u8; 3], cell: [u8; 3], cap: f32) -> [f64; 3] {
    let lab = |c: [u8; 3]| srgb_to_lab([c[0] as f64, c[1] as f64, c[2] as f64]);
    shift_lab(lab(photo), lab(cell), cap)
}

/// [`capped_shift`] of colours given in Lab.
fn shift_lab(p: [f64; 3], c: [f64; 3], cap: f32) -> [f64; 3] {
    let d = [c[0] - p[0], c[1] - p[1], c[2] - p[2]];
    let len = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
    let scale = if len > f64::from(cap) && len > 0.0 {
        f64::from(cap) / len
    } else {
        1.0
    };
    [d[0] * scale, d[1] * scale, d[2] * scale]
}

impl EventStore {
    /// The board's cells claimed so far, and by which photo.
    pub async fn placed(&self, event: Uuid) -> Result<Vec<Placed>, EventError> {
        let prefix = format!("events/{event}/board/placed/");
        let listed = match self.blobs.list_all(&prefix).await {
            Ok(listed) => listed,
            Err(StorageError::NotFound(_)) => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        let mut placed: Vec<Placed> = listed
            .iter()
            .filter_map(|b| Placed::parse(b.key.strip_prefix(&prefix)?, b.last_modified))
            .collect();
        placed.sort_by_key(|p| (p.at, p.cell));
        Ok(placed)
    }

    /// Which of `board`'s cells are claimed, by index.
    async fn taken(&self, event: Uuid, board: &Board) -> Result<Vec<bool>, EventError> {
        let mut taken = vec![false; board.len()];
        for cell in self.claimed(event).await? {
            if let Some(i) = board.index(cell) {
                taken[i] = true;
            }
        }
        Ok(taken)
    }

    /// The cells claimed, placed or not yet (a claim's marker follows it).
    async fn claimed(&self, event: Uuid) -> Result<Vec<Cell>, EventError> {
        self.cells_under(&format!("events/{event}/board/cells/"))
            .await
    }

    /// The cells named by the blobs under `prefix` (none when nothing is there).
    async fn cells_under(&self, prefix: &str) -> Result<Vec<Cell>, EventError> {
        match self.blobs.list_all(prefix).await {
            Ok(listed) => Ok(listed
                .iter()
                .filter_map(|b| Cell::parse(b.key.strip_prefix(prefix)?))
                .collect()),
            Err(StorageError::NotFound(_)) => Ok(Vec::new()),
            Err(e) => Err(e.into()),
        }
    }

    /// Gives photo `photo` (of colour `colour`) its cell on `board`, unless it has one: the
    /// cell chosen, claimed so that no other photo takes it, and named in the photo's record.
    /// `Ok(None)` when the board is full (or the photo is gone).
    pub async fn place(
        &self,
        event: Uuid,
        board: &Board,
        photo: Uuid,
        colour: [u8; 3],
    ) -> Result<Option<Cell>, EventError> {
        let Some(record) = self.find_photo(event, photo).await? else {
            return Ok(None);
        };
        if let Some(cell) = record.cell {
            return Ok(Some(cell));
        }
        let mut taken = self.taken_seen(event, board, false).await?;
        // The photos expected next matter only to a whole assignment: listing them (every
        // photo in) is left out while many cells are free.
        let free = taken.iter().filter(|&&t| !t).count();
        let expected = if free <= ASSIGNED_UP_TO {
            self.expected_seen(event).await?
        } else {
            Vec::new()
        };
        for _ in 0..CLAIM_TRIES {
            let (chooser, seen) = (board.clone(), taken.clone());
            let expected = expected.clone();
            let chosen =
                tokio::task::spawn_blocking(move || chooser.choose(colour, &seen, &expected))
                    .await
                    .map_err(|e| StorageError::Other(e.to_string().into()))?;
            let Some(cell) = chosen else {
                return Ok(None);
            };
            let claim = format!("events/{event}/board/cells/{}", cell.key());
            let named = Bytes::from(photo.to_string());
            match self.blobs.put(&claim, named, PutMode::CreateNew).await {
                Ok(_) => {
                    let at = board.at(cell);
                    with_seen(event, |s| {
                        if let Some(t) = s.taken.get_mut(at) {
                            *t = true;
                        }
                    });
                }
                Err(StorageError::AlreadyExists(_)) => {
                    // Taken meanwhile (or by this photo, on a try after a crash).
                    if self.blobs.get(&claim).await.ok().as_deref()
                        == Some(photo.to_string().as_bytes())
                    {
                        return self.name_cell(event, photo, colour, cell).await.map(Some);
                    }
                    // Others placed at the same moment took it: every claim made since is
                    // seen at once, not found one collision at a time.
                    taken = self.taken_seen(event, board, true).await?;
                    taken[board.at(cell)] = true;
                    continue;
                }
                Err(e) => return Err(e.into()),
            }
            return match self.name_cell(event, photo, colour, cell).await {
                Ok(cell) => Ok(Some(cell)),
                Err(e) => {
                    // The photo keeps no cell: the claim goes, for another photo.
                    let _ = forget(self.blobs.delete(&claim).await);
                    Err(e)
                }
            };
        }
        Err(StorageError::Transient(
            format!("photo {photo}: every cell it tried was taken meanwhile").into(),
        )
        .into())
    }

    /// [`EventStore::taken`] as this process last listed it, within [`CLAIMS_SERVE`] (listed
    /// now when `fresh`).
    async fn taken_seen(
        &self,
        event: Uuid,
        board: &Board,
        fresh: bool,
    ) -> Result<Vec<bool>, EventError> {
        let cells = board.len();
        let kept = with_seen(event, |s| {
            (!fresh && s.taken.len() == cells && s.taken_at.elapsed() < CLAIMS_SERVE)
                .then(|| s.taken.clone())
        });
        if let Some(taken) = kept {
            return Ok(taken);
        }
        let taken = self.taken(event, board).await?;
        with_seen(event, |s| {
            s.taken = taken.clone();
            s.taken_at = std::time::Instant::now();
        });
        Ok(taken)
    }

    /// The colours of the photos expected next: those placed (newest first), standing for the
    /// photos still to come; as this process last listed them, within [`EXPECTED_SERVE`].
    async fn expected_seen(&self, event: Uuid) -> Result<Vec<[u8; 3]>, EventError> {
        let kept = with_seen(event, |s| match &s.expected {
            Some((expected, at)) if at.elapsed() < EXPECTED_SERVE => Some(expected.clone()),
            _ => None,
        });
        if let Some(expected) = kept {
            return Ok(expected);
        }
        // From the board's one listing: the photos in flight are too few to matter.
        let expected: Vec<[u8; 3]> = self
            .placed(event)
            .await?
            .iter()
            .rev()
            .filter_map(|p| p.colour)
            .collect();
        with_seen(event, |s| {
            s.expected = Some((expected.clone(), std::time::Instant::now()));
        });
        Ok(expected)
    }

    /// Names `cell` in photo `photo`'s record (the one it keeps, if it had one already) and
    /// lists it on the board.
    async fn name_cell(
        &self,
        event: Uuid,
        photo: Uuid,
        colour: [u8; 3],
        cell: Cell,
    ) -> Result<Cell, EventError> {
        let record = self
            .update_photo(event, photo, |p| {
                if p.cell.is_some() {
                    return false;
                }
                p.cell = Some(cell);
                true
            })
            .await?;
        let cell = record.and_then(|r| r.cell).unwrap_or(cell);
        self.mark_placed(event, cell, Some(photo), colour).await?;
        Ok(cell)
    }

    /// The empty marker that lists `cell` as filled, naming what is on it and its colour.
    async fn mark_placed(
        &self,
        event: Uuid,
        cell: Cell,
        photo: Option<Uuid>,
        colour: [u8; 3],
    ) -> Result<(), EventError> {
        let placed = Placed {
            cell,
            photo,
            colour: Some(colour),
            at: time::OffsetDateTime::now_utc(),
        };
        let marker = format!("events/{event}/board/placed/{}", placed.marker());
        self.blobs
            .put(&marker, Bytes::new(), PutMode::Overwrite)
            .await?;
        Ok(())
    }

    /// Fills every free cell (the owner's end game): with a second print of the photo in
    /// that costs least there (of `photos`, the photos in and their colours), or with the
    /// target's colour. Each cell is claimed as a photo's is, so a photo placed meanwhile
    /// keeps the cell it won. The cells filled.
    pub async fn fill_free(
        &self,
        event: Uuid,
        board: &Board,
        with: Filling,
        photos: &[(Uuid, [u8; 3])],
    ) -> Result<Vec<Cell>, EventError> {
        let taken = self.taken(event, board).await?;
        let mut filled = Vec::new();
        for at in (0..board.len()).filter(|&i| !taken[i]) {
            let cell = board.cell(at);
            let target = board.cells[at];
            let chosen = match with {
                Filling::Colour => None,
                Filling::Photos => photos
                    .iter()
                    .min_by(|a, b| {
                        board
                            .error(a.1, target)
                            .total_cmp(&board.error(b.1, target))
                    })
                    .copied(),
            };
            let (content, photo, colour) = match chosen {
                Some((photo, colour)) => (photo.to_string(), Some(photo), colour),
                None => (COLOUR_FILL.to_string(), None, target),
            };
            let claim = format!("events/{event}/board/cells/{}", cell.key());
            match self
                .blobs
                .put(&claim, Bytes::from(content), PutMode::CreateNew)
                .await
            {
                Ok(_) => {}
                Err(StorageError::AlreadyExists(_)) => continue,
                Err(e) => return Err(e.into()),
            }
            self.mark_placed(event, cell, photo, colour).await?;
            filled.push(cell);
        }
        Ok(filled)
    }

    /// Places `photo` on `record`'s board if the event is one and the photo is in (approved
    /// and prepared) without a cell yet: its cell, if it has one now.
    /// The colours `record`'s photos are short of: a board's free cells', else the target's
    /// parts no photo in (`approved`) matches.
    pub async fn wishlist_of(
        &self,
        record: &super::EventRecord,
        approved: &[super::Listed],
    ) -> Result<Vec<crate::wishlist::Wish>, EventError> {
        let Some(board) = &record.board else {
            return Ok(record.wishlist(approved));
        };
        let filled: Vec<Cell> = self
            .placed(record.id)
            .await?
            .iter()
            .map(|p| p.cell)
            .collect();
        Ok(board.wishlist(&filled))
    }

    pub async fn place_if_in(
        &self,
        record: &super::EventRecord,
        photo: &super::EventPhoto,
    ) -> Result<Option<Cell>, EventError> {
        let (Some(board), Some(colour)) = (&record.board, photo.colour) else {
            return Ok(None);
        };
        if photo.cell.is_some() || !photo.prepared || photo.state != super::PhotoState::Approved {
            return Ok(photo.cell);
        }
        self.place(record.id, board, photo.id, colour).await
    }

    /// Claims the printing of the stickers of `cells` for one sheet: those no other sheet took,
    /// in the order given.
    pub async fn claim_printing(
        &self,
        event: Uuid,
        cells: &[Cell],
    ) -> Result<Vec<Cell>, EventError> {
        let mut mine = Vec::new();
        for &cell in cells {
            let key = format!("events/{event}/board/printed/{}", cell.key());
            match self.blobs.put(&key, Bytes::new(), PutMode::CreateNew).await {
                Ok(_) => mine.push(cell),
                Err(StorageError::AlreadyExists(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(mine)
    }

    /// The cells whose stickers were printed.
    /// Keeps a sheet just taken under the next free number, so that it can be printed again.
    pub async fn record_sheet(
        &self,
        event: Uuid,
        cells: Vec<Cell>,
        paper: &str,
        shifted: bool,
    ) -> Result<Sheet, EventError> {
        let prefix = format!("events/{event}/board/sheets/");
        let mut number = match self.blobs.list_all(&prefix).await {
            Ok(listed) => listed.len() as u32 + 1,
            Err(StorageError::NotFound(_)) => 1,
            Err(e) => return Err(e.into()),
        };
        let mut sheet = Sheet {
            number,
            cells,
            paper: paper.to_string(),
            shifted,
            taken_at: time::OffsetDateTime::now_utc(),
        };
        for _ in 0..CLAIM_TRIES {
            sheet.number = number;
            let body = serde_json::to_vec(&sheet)
                .map_err(|e| StorageError::Other(e.to_string().into()))?;
            match self
                .blobs
                .put(
                    &format!("{prefix}{number:06}"),
                    body.into(),
                    PutMode::CreateNew,
                )
                .await
            {
                Ok(_) => return Ok(sheet),
                Err(StorageError::AlreadyExists(_)) => number += 1,
                Err(e) => return Err(e.into()),
            }
        }
        Err(StorageError::Transient(format!("event {event}: no free sheet number").into()).into())
    }

    /// Sheet `number` as it was taken, if there is one.
    pub async fn sheet(&self, event: Uuid, number: u32) -> Result<Option<Sheet>, EventError> {
        match self
            .blobs
            .get(&format!("events/{event}/board/sheets/{number:06}"))
            .await
        {
            Ok(body) => serde_json::from_slice(&body)
                .map(Some)
                .map_err(|e| EventError::Corrupt(event, format!("sheet {number}: {e}"))),
            Err(StorageError::NotFound(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The sheets taken, newest first: the numbers and times of all, the whole of the newest
    /// `whole` (the rest with no cells listed).
    pub async fn sheets(&self, event: Uuid, whole: usize) -> Result<Vec<Sheet>, EventError> {
        let prefix = format!("events/{event}/board/sheets/");
        let listed = match self.blobs.list_all(&prefix).await {
            Ok(listed) => listed,
            Err(StorageError::NotFound(_)) => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        let mut sheets = Vec::with_capacity(listed.len());
        for (k, item) in listed.iter().rev().enumerate() {
            let Some(number) = item.key.strip_prefix(&prefix).and_then(|n| n.parse().ok()) else {
                continue;
            };
            let read = if k < whole {
                self.sheet(event, number).await?
            } else {
                None
            };
            sheets.push(read.unwrap_or(Sheet {
                number,
                cells: Vec::new(),
                paper: String::new(),
                shifted: true,
                taken_at: item.last_modified,
            }));
        }
        Ok(sheets)
    }

    pub async fn printed(&self, event: Uuid) -> Result<Vec<Cell>, EventError> {
        self.cells_under(&format!("events/{event}/board/printed/"))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_photo_takes_its_colours_cell_and_leaves_a_rare_colour_free() {
        // Four grey cells and one red: a greyish-red photo near both takes a grey one.
        let grey = [128, 128, 128];
        let red = [200, 40, 40];
        let board = Board::new(5, 1, 25.0, vec![grey, grey, red, grey, grey]);
        let mut taken = vec![false; 5];
        let red_photo = board.choose([205, 45, 42], &taken, &[]).unwrap();
        assert_eq!(red_photo, Cell { row: 1, col: 3 });
        taken[2] = true;
        let grey_photo = board.choose([120, 130, 125], &taken, &[]).unwrap();
        assert_eq!(grey_photo.row, 1);
        assert_ne!(grey_photo.col, 3);
        assert!(board.choose(grey, &[true; 5], &[]).is_none());
        // A pinkish photo closer to the red cell than to grey ones leaves it to the red photo
        // expected next, and takes a grey cell.
        let taken = vec![false; 5];
        let pinkish = board
            .choose([170, 100, 100], &taken, &[[205, 45, 42]])
            .unwrap();
        assert_ne!(pinkish.col, 3);
        let alone = board.choose([170, 100, 100], &taken, &[]).unwrap();
        assert_eq!(alone.col, 3);
    }

    #[test]
    fn the_shift_moves_toward_the_cell_no_further_than_its_cap() {
        let shift = capped_shift([40, 40, 40], [220, 220, 220], 10.0);
        let len = shift.iter().map(|d| d * d).sum::<f64>().sqrt();
        assert!((len - 10.0).abs() < 1e-9, "{len}");
        assert!(shift[0] > 0.0, "{shift:?}");
        let small = capped_shift([100, 100, 100], [102, 100, 100], 10.0);
        assert!(small.iter().map(|d| d * d).sum::<f64>().sqrt() < 2.0);
    }
}
