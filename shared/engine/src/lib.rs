//! The mosaic engine: tile libraries, perceptual matching without repeats, streaming render.
//! Pure and synchronous: no async runtime and no storage live here.
