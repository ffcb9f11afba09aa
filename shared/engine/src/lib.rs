//! The mosaic engine: tile libraries, perceptual matching without repeats, streaming render.
//! Pure and synchronous: no async runtime and no storage live here (rayon for data parallelism).
//!
//! The flow: [`Library`] imports tiles (or loads a saved index), [`Plan::make`] matches every cell
//! of a target once for the whole image, [`Plan::rows`] cuts rows that the pipeline can ship to a
//! processor, [`render_band`] turns such rows into pixels (byte-identical to the same rows of a
//! whole render), and a [`BandSink`] such as [`PngSink`] or [`JpegSink`] encodes bands as they come.
//! [`AdaptivePlan`] is the same flow with square tiles of several sizes: made whole, cut into rows
//! of blocks with [`AdaptivePlan::rows`], each rendered on its own.

pub mod adaptive;
pub mod background;
mod budget;
mod capped;
pub mod cells;
pub mod color;
pub mod crop;
pub mod decode;
mod error;
mod fair;
pub mod finish;
pub mod fragment;
mod hash;
mod heif_items;
pub mod jpeg_frame;
mod kdtree;
#[allow(unsafe_code)]
mod libheif;
pub mod library;
pub mod metrics;
pub mod output;
pub mod overlay;
pub mod plan;
mod profile;
pub mod pyramid;
pub mod render;
mod resample;
pub mod seek;
pub mod shape;
pub mod tiff;
mod tiff_read;
pub mod transform;
mod view;

/// A seeded linear congruential generator for tests: each call steps it and gives its state.
#[cfg(test)]
pub(crate) fn seeded(mut s: u64) -> impl FnMut() -> u64 {
    move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        s
    }
}

pub use adaptive::{AdaptivePlan, AdaptiveSizes, AdaptiveSizing, Leaf};
pub use background::{TileBackground, choose_background, lay_over};
pub use cells::{
    CellMap, CellSource, PLACEMENTS_CSV_HEADER, Placement, PlacementIndex, csv_cell, csv_field,
    write_placements_csv,
};
pub use crop::CropRule;
pub use decode::{Format, decode_target, jpeg_cut_off};
pub use error::Error;
pub use finish::{Finish, FinishSink, Grout};
pub use fragment::{
    FRAGMENT_HEADER_BYTES, FragmentEncoder, FragmentHeader, FragmentPngWriter, adler32_combine,
    encode_png_fragment, point_interval,
};
/// The decoded target image type.
pub use image::RgbImage;
pub use library::{
    ImportOptions, ImportReport, Library, PreparedPhoto, hex_colour, parse_hex_colour,
    summarise_skipped,
};
pub use metrics::{
    MosaicCells, Quality, evaluate, evaluate_file, overlaid_difference, plan_quality,
};
pub use output::{
    BandSink, JpegSink, OutputFormat, ParallelPngSink, PngSink, TeeSink, ThreadedSink, VecSink,
    file_sink, open_file_sink,
};
pub use overlay::{MAX_OVERLAY_PERCENT, Overlay};
pub use plan::{DEFAULT_MAX_OUTPUT_PIXELS, Grid, Plan, PlanOptions, Sizing};
pub use profile::srgb_icc;
pub use pyramid::{DziSink, Pyramid, PyramidTile};
pub use render::{TileCache, render_band, render_band_into, render_band_serial, render_to_sink};
pub use seek::{IdatData, Scanlines, SeekIndex, SeekPoint, Span};
pub use shape::{MAX_ASPECT, TILE_SIZES, TileShape, TileSize};
pub use transform::Transform;
pub use view::{VIEW_MAX_CELLS, VIEW_SCALE};
