//! The pictures the front end makes and serves itself: access to a stored mosaic (result,
//! preview, zoom tiles), its upper zoom levels, draft mosaics before a job, a library's
//! contact-sheet layout, and an event photo's thumbnail.

pub mod draft_mosaic;
pub(crate) mod photo_square;
pub mod sheet_layout;
pub mod stored_mosaic;
pub(crate) mod zoom_levels;
