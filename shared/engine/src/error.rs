//! The engine's one error type.

use std::path::{Path, PathBuf};

/// Everything the engine can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read the archive: {0}")]
    Archive(String),
    #[error("cannot decode the image: {0}")]
    Decode(String),
    /// An import was asked to stop (its client went away, or its time ran out).
    #[error("the import was stopped")]
    Stopped,
    #[error("not a usable tile index: {0}")]
    BadIndex(String),
    #[error(
        "tile index format version {found} is not supported (this build reads version {supported}): re-create the index"
    )]
    IndexVersion { found: u32, supported: u32 },
    #[error("not a usable plan: {0}")]
    BadPlan(String),
    #[error("the plan does not fit: {0}")]
    PlanMismatch(String),
    #[error("tile size {0} px is out of range: use 4 to 256 px")]
    TileSize(u32),
    /// The tiles' shape is not the library's: the message names both and what to do.
    #[error("the tile shape does not fit the library: {0}")]
    ShapeMismatch(String),
    #[error(
        "the output would be {width} x {height} px, over the limit of {limit} pixels: use fewer cells, a smaller tile size or raise the limit"
    )]
    OutputTooLarge { width: u64, height: u64, limit: u64 },
    #[error("the library is too small ({tiles} tiles, at least {needed} needed): {hint}")]
    LibraryTooSmall {
        tiles: usize,
        needed: usize,
        hint: String,
    },
    /// Adaptive tiles whose largest squares alone are more than the uniform grid's tiles.
    #[error(
        "{blocks} blocks of {max} px already exceed the {budget} tiles of the uniform grid: use a smaller largest size, more cells or a larger tile size"
    )]
    AdaptiveBudget { blocks: u64, max: u32, budget: u64 },
    #[error("bad captions: {0}")]
    Captions(String),
    #[error("invalid option: {0}")]
    InvalidOption(String),
    #[error("cannot encode the output: {0}")]
    Encode(String),
}

impl Error {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
