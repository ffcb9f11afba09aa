//! The grid's size and the options a plan is made with, and what a library must hold to fill
//! a grid.

use super::*;

/// Default output limit: one gigapixel.
pub const DEFAULT_MAX_OUTPUT_PIXELS: u64 = 1 << 30;

/// How the target is cut into cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grid {
    /// This many cells across; rows follow the target's aspect ratio (with non-square cells,
    /// fewer or more rows, so that the output keeps the target's shape).
    Cells(u32),
    /// One cell per target pixel (output = target size x tile size: non-square tiles stretch
    /// the output by their shape).
    PerPixel,
    /// Exactly this grid, whatever the target's shape: a job sized already by the door that
    /// took it.
    Exact { cols: u32, rows: u32 },
}

/// Options of a mosaic: everything that, with the target and library, fixes the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanOptions {
    /// Cell size in output pixels; its shape must be the library's.
    pub tile_size: TileSize,
    pub grid: Grid,
    /// No identical tile within this Chebyshev distance in cells; 0 allows any repetition.
    pub repeat_radius: u32,
    /// Optional cap on the uses of any one tile.
    pub max_uses: Option<u32>,
    /// Every tile at least this many times (0: no floor). The grid must have at least the
    /// library's tiles times this many cells.
    pub min_uses: u32,
    /// Colour blend toward each cell's colour, 0 to 100 %.
    pub blend: u8,
    /// Largest output allowed, in pixels.
    pub max_output_pixels: u64,
    /// Candidates taken from the colour index per cell before re-ranking on structure.
    pub candidates: usize,
    /// Weight of the sub-grid pattern term (each sub-cell's Lab around the cell's mean) against
    /// the squared CIEDE2000 of the means.
    pub structure_weight: f32,
    /// Weight of the sub-grid lightness term (mean squared L* difference over the sub-cells):
    /// tiles whose light and dark parts sit where the cell's do.
    pub lightness_weight: f32,
    /// Weight of the lightness-gradient term: for each neighbouring cell already placed, the
    /// squared difference between the mosaic's and the target's step in L* from there. Keeps
    /// edges and smooth areas as the photo has them, which is what reads from a distance.
    pub gradient_weight: f32,
    /// Local-improvement passes after each batch of rows is assigned: every cell takes the
    /// candidate that lowers its cost given all its neighbours, within the repetition limits.
    pub refine_passes: u32,
    /// Tiles may be mirrored left-right.
    pub flip: bool,
    /// Tiles may be turned by 90, 180 or 270 degrees (with `flip`, all 8 symmetries of the
    /// square); tiles that are not square turn by 180 degrees only. Each candidate tile is
    /// placed under the transform that best fits the cell's sub-grid; repetition limits count
    /// the tile whatever its transform.
    pub rotate: bool,
}

impl Default for PlanOptions {
    fn default() -> Self {
        Self {
            tile_size: TileSize::square(16),
            grid: Grid::Cells(128),
            repeat_radius: 1,
            max_uses: None,
            min_uses: 0,
            blend: 0,
            max_output_pixels: DEFAULT_MAX_OUTPUT_PIXELS,
            candidates: 24,
            structure_weight: 0.0,
            lightness_weight: 1.2,
            gradient_weight: 1.0,
            refine_passes: 2,
            flip: false,
            rotate: false,
        }
    }
}

impl PlanOptions {
    /// The structure weights for colour against form `form` (0 to 100): 0 leaves colour alone
    /// and 50 gives the defaults. With `s = form / 50`, the gradient and pattern weights are the
    /// defaults times `s`, the lightness weight times `s²`: form comes first from the steps
    /// between cells, which cost little colour, and the sub-cells' lightness, which costs more,
    /// catches up toward the default.
    pub fn with_form(self, form: u8) -> Self {
        let scale = f32::from(form.min(100)) / 50.0;
        let base = PlanOptions::default();
        PlanOptions {
            lightness_weight: base.lightness_weight * scale * scale,
            gradient_weight: base.gradient_weight * scale,
            structure_weight: base.structure_weight * scale,
            ..self
        }
    }
}

/// The grid and output size a target gets under some options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizing {
    pub cols: u32,
    pub rows: u32,
    pub tile_size: TileSize,
    pub width: u32,
    pub height: u32,
}

impl Sizing {
    /// Works out the grid and output size, checking the tile size and the output limit.
    pub fn new(target_w: u32, target_h: u32, opts: &PlanOptions) -> Result<Sizing, Error> {
        opts.tile_size.check()?;
        let tile = opts.tile_size;
        if opts.blend > 100 {
            return Err(Error::InvalidOption(format!(
                "blend {} % (0 to 100)",
                opts.blend
            )));
        }
        if target_w == 0 || target_h == 0 {
            return Err(Error::Decode("the target image is empty".into()));
        }
        let (cols, rows) = match opts.grid {
            Grid::PerPixel => (target_w, target_h),
            Grid::Cells(0) => {
                return Err(Error::InvalidOption(
                    "cells across must be at least 1".into(),
                ));
            }
            Grid::Exact { cols, rows } if cols == 0 || rows == 0 => {
                return Err(Error::InvalidOption(format!(
                    "a grid of {cols} x {rows} cells: at least one each way"
                )));
            }
            Grid::Exact { cols, rows } => (cols, rows),
            Grid::Cells(c) => {
                let mut rows = c as f64 * target_h as f64 / target_w as f64;
                // Cells that are not square: as many rows as keep the output's shape the
                // target's. (Square cells skip the step, so their sizing is as it always was.)
                if !tile.is_square() {
                    rows *= tile.width as f64 / tile.height as f64;
                }
                (c, rows.round().max(1.0).min(u32::MAX as f64) as u32)
            }
        };
        let width = cols as u64 * tile.width as u64;
        let height = rows as u64 * tile.height as u64;
        if width * height > opts.max_output_pixels
            || width > u32::MAX as u64
            || height > u32::MAX as u64
        {
            return Err(Error::OutputTooLarge {
                width,
                height,
                limit: opts.max_output_pixels,
            });
        }
        Ok(Sizing {
            cols,
            rows,
            tile_size: tile,
            width: width as u32,
            height: height as u32,
        })
    }
}

/// The fewest distinct tiles a `cols` x `rows` grid needs so that no tile repeats within
/// `repeat_radius` cells (the cells already placed around a cell, in the order cells are filled,
/// must all differ from it). At least 1: an empty library cannot fill any grid.
pub fn tiles_needed(cols: u32, rows: u32, repeat_radius: u32) -> usize {
    let (cols, rows, r) = (cols as usize, rows as usize, repeat_radius as usize);
    if r == 0 || cols == 0 || rows == 0 {
        return 1;
    }
    (r.min(rows - 1) * (2 * r + 1).min(cols) + r.min(cols - 1) + 1).min(cols * rows)
}

/// Most cells of bookkeeping a floor of several copies per tile may keep: each copy closes the
/// cells within the repeat radius to its siblings, `tiles x min_uses x (2r + 1)²` in all.
pub const MAX_FLOOR_CLOSED_CELLS: u64 = 1 << 25;

/// Why every tile at least `min_uses` times cannot be placed on a `cols` x `rows` grid with
/// `tiles` tiles under `repeat_radius`, where the numbers alone say so: `None` when they do
/// not. Cheap, so that a job is refused at its submission rather than after its search.
pub fn floor_unworkable(
    (cols, rows): (u32, u32),
    tiles: u64,
    repeat_radius: u32,
    min_uses: u32,
) -> Option<String> {
    if min_uses == 0 {
        return None;
    }
    let (cols, rows, r, m) = (
        u64::from(cols),
        u64::from(rows),
        u64::from(repeat_radius),
        u64::from(min_uses),
    );
    let cells = cols * rows;
    if tiles.saturating_mul(m) > cells {
        return Some(format!(
            "{tiles} tiles at least {m} times each need {} cells; the grid has {cells} \
             ({cols} x {rows}): use more cells, fewer uses of each tile or fewer tiles",
            tiles.saturating_mul(m)
        ));
    }
    // Copies of one tile are more than r cells apart, across and down: a grid holds at most
    // one in each block of (r + 1) x (r + 1) cells.
    let apart = cols.div_ceil(r + 1) * rows.div_ceil(r + 1);
    if m > apart {
        return Some(format!(
            "a tile fits at most {apart} times on a {cols} x {rows} grid with no copy within \
             {r} cells of another, so it cannot be placed {m} times: ask for fewer uses of \
             each tile, let tiles repeat closer together, or add cells"
        ));
    }
    let closed = tiles
        .saturating_mul(m)
        .saturating_mul((2 * r + 1).saturating_mul(2 * r + 1));
    if m > 1 && closed > MAX_FLOOR_CLOSED_CELLS {
        return Some(format!(
            "{tiles} tiles at least {m} times each, none within {r} cells of itself, is more \
             than the planner places ({closed} cells kept apart, at most \
             {MAX_FLOOR_CLOSED_CELLS}): ask for fewer uses of each tile or let tiles repeat \
             closer together"
        ));
    }
    None
}

/// Whether `library` can fill a grid of `size` under `opts`: not empty, of the tiles' shape,
/// enough distinct tiles for the repetition radius, enough uses under the cap, and a floor on
/// uses that can be placed.
pub(super) fn check_plannable(
    size: &Sizing,
    library: &Library,
    opts: &PlanOptions,
) -> Result<(), Error> {
    check_shape(size.tile_size, library.shape())?;
    let (cols, rows) = (size.cols as usize, size.rows as usize);
    let n = library.len();
    if n == 0 {
        return Err(empty_library());
    }
    let r = opts.repeat_radius as usize;
    if r > 0 {
        let needed = tiles_needed(size.cols, size.rows, opts.repeat_radius);
        if n < needed {
            return Err(Error::LibraryTooSmall {
                tiles: n,
                needed,
                hint: format!(
                    "repeat radius {r} needs at least {needed} distinct tiles: lower --repeat-radius \
                     or add tiles"
                ),
            });
        }
    }
    if let Some(cap) = opts.max_uses
        && (n as u64) * (cap as u64) < (cols * rows) as u64
    {
        return Err(Error::LibraryTooSmall {
            tiles: n,
            needed: (cols * rows).div_ceil(cap.max(1) as usize),
            hint: format!(
                "{} cells with at most {cap} uses per tile: raise the use cap, use fewer cells \
                     or add tiles",
                cols * rows
            ),
        });
    }
    let min_uses = opts.min_uses;
    if min_uses > 0 {
        let grid = (size.cols, size.rows);
        if let Some(why) = floor_unworkable(grid, n as u64, opts.repeat_radius, min_uses) {
            return Err(Error::InvalidOption(why));
        }
        if opts.max_uses.is_some_and(|cap| cap < min_uses) {
            return Err(Error::InvalidOption(format!(
                "min_uses {min_uses} is over max_uses {}",
                opts.max_uses.unwrap_or_default()
            )));
        }
    }
    Ok(())
}
