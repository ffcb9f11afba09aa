//! An uploaded archive unpacked under the upload's limits: every entry's name checked before
//! anything is written (none may leave the folder), the entries counted, their real bytes
//! counted as they are written (a zip bomb's declared sizes are not trusted), and the disk kept
//! above its floor; then the images' pixels measured against what one upload may decode.

use std::io::{Read, Write};
use std::path::{Component, Path};

use tessera_shared::error_code::ErrorCode;

use crate::api_error::{ApiError, ApiResult};

/// Free bytes on the disk that holds `path`, if known.
pub(crate) fn free_bytes(path: &Path) -> Option<u64> {
    let stat = rustix::fs::statvfs(path).ok()?;
    Some(stat.f_bavail.saturating_mul(stat.f_frsize))
}

/// Bytes unpacked between two looks at the disk's free space.
const FREE_CHECK_BYTES: u64 = 4 << 20;

/// Unpacks `archive` into `into`, counting its files against `max_files` and its real bytes
/// against `max_unpacked` (declared sizes can lie), and, with `keep_free` (a folder and the
/// bytes its disk must keep free), stopping with 507 once the disk would go below that: every
/// upload unpacking at once sees the others' bytes there.
pub(crate) fn extract(
    archive: &Path,
    into: &Path,
    (max_files, count): (u32, &mut u32),
    (max_unpacked, unpacked): (u64, &mut u64),
    keep_free: Option<(&Path, u64)>,
) -> ApiResult<()> {
    let mut since_check = 0u64;
    let bad = |e: zip::result::ZipError| {
        ApiError::unprocessable(
            ErrorCode::BadArchive,
            format!("the archive cannot be read: {e}"),
        )
    };
    let file = std::fs::File::open(archive).map_err(ApiError::internal)?;
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file)).map_err(bad)?;
    if *count as u64 + zip.len() as u64 > max_files as u64 {
        return Err(ApiError::unprocessable(
            ErrorCode::ArchiveTooLarge,
            format!(
                "the archive has {} entries, over the limit of {max_files}",
                zip.len()
            ),
        ));
    }
    check_entries(&mut zip, max_unpacked, *unpacked, keep_free)?;
    std::fs::create_dir_all(into).map_err(ApiError::internal)?;
    for i in 0..zip.len() {
        let entry = zip.by_index(i).map_err(bad)?;
        if entry.is_dir() {
            continue;
        }
        *count += 1;
        let Some(relative) = entry.enclosed_name() else {
            return Err(ApiError::unprocessable(
                ErrorCode::UnsafeArchive,
                format!(
                    "the archive entry {:?} points outside the archive",
                    entry.name()
                ),
            ));
        };
        let target = into.join(&relative);
        // An entry whose path runs through a file (`a.png`, then `a.png/b.png`), or names a
        // folder, is the archive's fault.
        let clash = |e: std::io::Error| {
            ApiError::unprocessable(
                ErrorCode::BadArchive,
                format!(
                    "the archive entry {:?} clashes with another entry: {e}",
                    relative.display()
                ),
            )
        };
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(clash)?;
        }
        let out = std::fs::File::create_new(&target).map_err(clash)?;
        copy_entry(
            entry,
            out,
            (max_unpacked, unpacked),
            keep_free,
            &mut since_check,
        )?;
    }
    Ok(())
}

/// Checks every entry's name and the declared sizes before anything is written: the bytes
/// they declare together.
fn check_entries<R: Read + std::io::Seek>(
    zip: &mut zip::ZipArchive<R>,
    max_unpacked: u64,
    unpacked: u64,
    keep_free: Option<(&Path, u64)>,
) -> ApiResult<u64> {
    let bad = |e: zip::result::ZipError| {
        ApiError::unprocessable(
            ErrorCode::BadArchive,
            format!("the archive cannot be read: {e}"),
        )
    };
    let mut declared: u64 = 0;
    for i in 0..zip.len() {
        let entry = zip.by_index_raw(i).map_err(bad)?;
        let name = entry.name().to_string();
        if !safe_entry_name(&name) {
            return Err(ApiError::unprocessable(
                ErrorCode::UnsafeArchive,
                format!("the archive entry {name:?} points outside the archive"),
            ));
        }
        declared = declared.saturating_add(entry.size());
    }
    if unpacked.saturating_add(declared) > max_unpacked {
        return Err(ApiError::unprocessable(
            ErrorCode::ArchiveTooLarge,
            format!("the archive unpacks to more than {max_unpacked} bytes"),
        ));
    }
    if let Some((folder, keep)) = keep_free
        && let Some(free) = free_bytes(folder)
        && free < keep.saturating_add(declared)
    {
        return Err(ApiError::insufficient_storage(format!(
            "{} bytes free for unpacking, the archive declares {declared}",
            free.saturating_sub(keep)
        )));
    }
    Ok(declared)
}

/// Copies one entry's bytes into `out`, counting the real bytes (declared sizes can lie)
/// against `max_unpacked`, and looking at the disk's free space every [`FREE_CHECK_BYTES`].
fn copy_entry(
    entry: impl Read,
    mut out: std::fs::File,
    (max_unpacked, unpacked): (u64, &mut u64),
    keep_free: Option<(&Path, u64)>,
    since_check: &mut u64,
) -> ApiResult<()> {
    let room = max_unpacked - *unpacked;
    let mut limited = entry.take(room + 1);
    let mut buf = [0u8; 64 * 1024];
    loop {
        let n = limited.read(&mut buf).map_err(|e| {
            ApiError::unprocessable(
                ErrorCode::BadArchive,
                format!("the archive is corrupt: {e}"),
            )
        })?;
        if n == 0 {
            return Ok(());
        }
        *unpacked += n as u64;
        if *unpacked > max_unpacked {
            return Err(ApiError::unprocessable(
                ErrorCode::ArchiveTooLarge,
                format!("the archive unpacks to more than {max_unpacked} bytes"),
            ));
        }
        *since_check += n as u64;
        if *since_check >= FREE_CHECK_BYTES
            && let Some((folder, keep)) = keep_free
        {
            *since_check = 0;
            if free_bytes(folder).is_some_and(|free| free < keep + FREE_CHECK_BYTES) {
                return Err(ApiError::insufficient_storage(format!(
                    "the disk is full: the archive unpacked {} bytes before the free space \
                     ran out",
                    *unpacked
                )));
            }
        }
        out.write_all(&buf[..n]).map_err(ApiError::internal)?;
    }
}

/// A relative path of plain components only: no root, no drive, no `..`, no backslashes.
fn safe_entry_name(name: &str) -> bool {
    !name.is_empty()
        && !name.contains('\\')
        && !name.contains('\0')
        && Path::new(name)
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

/// The images under `dir` (by extension) and their pixels together, read from each header
/// (an image whose header does not read counts none: the import skips it, naming why).
pub(crate) fn measure_images(dir: &Path) -> (u64, u64, Vec<(String, String)>) {
    let (mut images, mut pixels, mut others) = (0u64, 0u64, Vec::new());
    measure_into(dir, dir, &mut images, &mut pixels, &mut others);
    (images, pixels, others)
}

/// [`measure_images`] for the folder `at` inside the upload's `root`.
fn measure_into(
    root: &Path,
    at: &Path,
    images: &mut u64,
    pixels: &mut u64,
    others: &mut Vec<(String, String)>,
) {
    let Ok(entries) = std::fs::read_dir(at) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            measure_into(root, &path, images, pixels, others);
            continue;
        }
        let name = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .display()
            .to_string();
        match tessera_engine::decode::not_an_image(&name) {
            None => {
                *images += 1;
                if let Some((w, h)) = tessera_engine::decode::image_size(&path) {
                    *pixels = pixels.saturating_add(u64::from(w) * u64::from(h));
                }
            }
            Some(_) if name.eq_ignore_ascii_case(tessera_engine::library::CAPTIONS_FILE) => {}
            Some(reason) => others.push((name, reason)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::safe_entry_name;

    #[test]
    fn entry_names() {
        assert!(safe_entry_name("tiles/a.png"));
        assert!(safe_entry_name("a.png"));
        for bad in [
            "../a.png",
            "/etc/passwd",
            "a/../../b.png",
            "..\\a.png",
            "c:\\x.png",
            "",
        ] {
            assert!(!safe_entry_name(bad), "{bad}");
        }
    }
}
