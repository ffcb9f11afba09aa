//! A library's contact sheet, its geometry: which tiles it shows, its size and its URL (the route
//! that draws and serves it is `routes::sheet`; the pages lay it out).

/// Most tiles across a sheet.
pub const SHEET_COLUMNS: u32 = 12;

/// Most rows of tiles on a sheet.
pub const SHEET_ROWS: u32 = 8;

/// Side of one tile on a sheet, in pixels.
pub const SHEET_TILE: u32 = 32;

/// The sheet's URL for one library version (what the pages link, cacheable for good).
pub fn sheet_url(library: &str, version: u32) -> String {
    format!("/api/v1/libraries/{library}/sheet?version={version}")
}

/// The tiles a sheet shows: all of them when they fit, else an even spread over the library.
pub fn spread(tiles: u32) -> Vec<u32> {
    let shown = tiles.min(SHEET_COLUMNS * SHEET_ROWS);
    (0..shown)
        .map(|i| (u64::from(i) * u64::from(tiles) / u64::from(shown)) as u32)
        .collect()
}

/// The size of a sheet of `tiles` tiles, in pixels: as few rows as [`SHEET_COLUMNS`] allow, then
/// as few columns as those rows need (so at most one column is not full).
pub fn sheet_size(tiles: u32) -> (u32, u32) {
    let shown = tiles.clamp(1, SHEET_COLUMNS * SHEET_ROWS);
    let rows = shown.div_ceil(SHEET_COLUMNS);
    let cols = shown.div_ceil(rows);
    (cols * SHEET_TILE, rows * SHEET_TILE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spread_covers_the_library_without_repeats() {
        assert_eq!(spread(5), vec![0, 1, 2, 3, 4]);
        let many = spread(1000);
        assert_eq!(many.len(), 96);
        assert_eq!(many[0], 0);
        assert!(*many.last().unwrap() >= 980);
        assert!(many.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(sheet_size(5), (5 * 32, 32));
        assert_eq!(sheet_size(41), (11 * 32, 4 * 32));
        assert_eq!(sheet_size(12), (12 * 32, 32));
        assert_eq!(sheet_size(13), (7 * 32, 2 * 32));
        assert_eq!(sheet_size(5000), (12 * 32, 8 * 32));
        assert_eq!(sheet_size(0), (32, 32));
    }
}
