//! What a decoder may spend: the bounds every format's reader checks before it allocates.

/// Most bytes a file's metadata (colour profile, EXIF, XMP, text) may take once decompressed.
/// Only PNG compresses its metadata; in the other formats it is bounded by the file's size.
pub const MAX_METADATA_BYTES: usize = 16 << 20;

/// Refuses `w x h` when a side is over `limits`, naming the sizes.
pub(crate) fn check_side(w: u32, h: u32, limits: &image::Limits) -> Result<(), String> {
    let over = limits.max_image_width.is_some_and(|max| w > max)
        || limits.max_image_height.is_some_and(|max| h > max);
    if over {
        let max = |m: Option<u32>| m.map_or("any".into(), |m| m.to_string());
        return Err(format!(
            "{w}x{h} pixels is over the {}x{} allowed",
            max(limits.max_image_width),
            max(limits.max_image_height)
        ));
    }
    Ok(())
}
