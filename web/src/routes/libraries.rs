//! Tile libraries: `GET /api/v1/libraries`, `GET /api/v1/libraries/{id}` and
//! `POST /api/v1/libraries` (multipart: `name` and either one .zip or several image files).
//!
//! An upload is streamed to a temporary directory under hard limits (total bytes, file count).
//! An archive is checked before anything is extracted, then extracted under the same limits with
//! every entry's real size counted (a zip bomb's declared sizes are not trusted): names that leave
//! the directory are refused, the entry count and total uncompressed size are capped.

use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

use actix_multipart::{Field, Multipart};
use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use futures_util::StreamExt;
use serde::Serialize;
use tokio::io::AsyncWriteExt;
use utoipa::ToSchema;

use tessera_engine::{ImportOptions, TileShape, parse_hex_colour};
use tessera_shared::libraries::{
    LibraryError, LibraryRecord, SkippedFile, library_id_from_name, validate_library_id,
};
use tessera_shared::library_import::{ImportError, import_library};

use crate::error::{ApiError, ApiResult};
use crate::settings::WebSettings;
use crate::state::AppState;
use crate::upload::{DRAIN_SLACK, drain, field_name, file_name, read_text, require_multipart};

const IMAGE_EXTENSIONS: [&str; 6] = ["png", "jpg", "jpeg", "webp", "gif", "jfif"];
const MAX_NAME_CHARS: usize = 100;

/// The answer of `GET /api/v1/libraries`.
#[derive(Debug, Serialize, ToSchema)]
pub struct LibraryList {
    pub libraries: Vec<LibraryRecord>,
}

/// The tile libraries.
#[utoipa::path(
    get,
    path = "/api/v1/libraries",
    operation_id = "list_libraries",
    tag = "libraries",
    responses(
        (status = 200, description = "Every library", body = LibraryList),
        (status = 503, response = crate::error::ErrorBody),
    ),
)]
pub async fn list(state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let libraries = state.platform.libraries().list().await?;
    Ok(HttpResponse::Ok().json(LibraryList { libraries }))
}

/// One tile library.
#[utoipa::path(
    get,
    path = "/api/v1/libraries/{id}",
    operation_id = "get_library",
    tag = "libraries",
    params(("id" = String, Path, pattern = r"^[a-z0-9][a-z0-9-]{0,47}$", description = "The library's id")),
    responses(
        (status = 200, description = "The library", body = LibraryRecord),
        (status = 404, response = crate::error::ErrorBody),
        (status = 503, response = crate::error::ErrorBody),
    ),
)]
pub async fn get(path: web::Path<String>, state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let id = path.into_inner();
    if validate_library_id(&id).is_err() {
        return Err(ApiError::not_found(
            "library_not_found",
            format!("no library {id:?}"),
        ));
    }
    let record = state.platform.libraries().get(&id).await?;
    Ok(HttpResponse::Ok().json(record))
}

/// What an import did, beside the library's record.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ImportReport)]
pub struct ImportSummary {
    /// Images imported.
    pub imported: usize,
    pub skipped: Vec<SkippedFile>,
    /// Pixel-identical duplicates merged: the dropped name and the name kept.
    pub duplicates: Vec<Duplicate>,
    /// Files ignored because they are not images by their extension.
    pub ignored: usize,
}

/// A pixel-identical duplicate merged on import.
#[derive(Debug, Serialize, ToSchema)]
pub struct Duplicate {
    /// The file dropped.
    pub name: String,
    /// The file kept in its place.
    pub kept: String,
}

/// The answer of a library upload: the library and the import's report.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = LibraryCreated)]
pub struct Created {
    pub library: LibraryRecord,
    pub report: ImportSummary,
}

// The fields of a library upload as the API documents them; the handler streams them to disk
// as they come (`read_parts`).
/// A library upload (`multipart/form-data`): its name and its tiles.
#[derive(serde::Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct LibraryUpload {
    /// The library's name (not blank); its id is made from it. Blank is Unicode white space,
    /// which counts NEL (U+0085) as well as what a pattern's `\s` takes.
    #[schema(min_length = 1, max_length = 100, pattern = r"[^\s\u0085]")]
    pub name: String,
    /// true: publish a new version of an existing library (default false).
    #[schema(required = false, default = false)]
    pub replace: bool,
    /// Shape of the tiles, width:height (`1:1` by default; `4:3`, `3:2`, `3:4`, `2:3`, ..., at
    /// most 4:1 either way): each image is cropped to its centre at this shape, and jobs on
    /// the library use tiles of this shape (a tile_size of 24x18 for 4:3).
    #[schema(
        required = false,
        default = "1:1",
        pattern = r"^[1-9][0-9]{0,2}:[1-9][0-9]{0,2}$",
        example = "4:3"
    )]
    pub shape: String,
    /// The colour transparent parts of the images are laid over, RRGGBB hex (a leading `#` is
    /// allowed; `ffffff` by default).
    #[schema(
        required = false,
        default = "ffffff",
        pattern = r"^#?[0-9A-Fa-f]{6}$",
        example = "ffffff"
    )]
    pub background: String,
    /// One .zip or image files (PNG, JPEG, WebP or GIF).
    #[schema(value_type = Vec<String>, format = Binary, min_items = 1)]
    pub files: Vec<Vec<u8>>,
}

/// The text fields of an upload.
#[derive(Debug, Default)]
struct Fields {
    name: Option<String>,
    /// `true` publishes a new version of a library that exists under the name.
    replace: Option<String>,
    /// The tiles' shape, `W:H`.
    shape: Option<String>,
    /// The colour transparent parts are laid over, `RRGGBB` (or `#RRGGBB`).
    background: Option<String>,
}

/// The files of one upload, on disk.
struct Upload {
    _dir: tempfile::TempDir,
    /// Where the images (loose or extracted) are.
    files: PathBuf,
    archives: Vec<PathBuf>,
    count: u32,
    bytes: u64,
}

/// Create or replace a tile library from a .zip or image files.
///
/// The library's id is made from its name (lowercase letters, digits, hyphens: "Emoji" and
/// "EMOJI!!" are the same library). A name whose library exists answers 409 library_exists
/// unless replace is true, which publishes a new version (jobs submitted before keep the version
/// they named). Tile images over 4096 x 4096 pixels are skipped, with the reason in the report.
#[utoipa::path(
    post,
    path = "/api/v1/libraries",
    operation_id = "create_library",
    tag = "libraries",
    request_body(content = LibraryUpload, content_type = "multipart/form-data"),
    responses(
        (status = 201, description = "Imported: the library and the import report", body = Created,
            headers(("Location" = String, description = "The library's path"))),
        (status = 400, response = crate::error::ErrorBody),
        (status = 403, response = crate::error::ErrorBody),
        (status = 409, response = crate::error::ErrorBody),
        (status = 413, response = crate::error::ErrorBody),
        (status = 415, response = crate::error::ErrorBody),
        (status = 422, response = crate::error::ErrorBody),
        (status = 503, response = crate::error::ErrorBody),
    ),
)]
pub async fn create(
    req: HttpRequest,
    mut payload: Multipart,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    require_multipart(&req, "a library")?;
    let settings = &state.settings;
    let dir = tempfile::tempdir().map_err(ApiError::internal)?;
    let files = dir.path().join("files");
    std::fs::create_dir(&files).map_err(ApiError::internal)?;
    let mut upload = Upload {
        files,
        archives: Vec::new(),
        count: 0,
        bytes: 0,
        _dir: dir,
    };
    let mut fields = Fields::default();
    read_parts(&mut payload, &state, &mut upload, &mut fields).await?;
    let name = fields
        .name
        .filter(|n| !n.is_empty())
        .ok_or_else(|| ApiError::bad_request("missing_parameter", "name is required"))?;
    let replace = crate::upload::parse_bool("replace", fields.replace.as_deref())?;
    let shape = match fields.shape.as_deref() {
        None | Some("") => TileShape::SQUARE,
        Some(text) => TileShape::parse(text).map_err(|e| {
            // Written as the document says (W:H, 1 to 3 digits each) but not a shape tiles can
            // take (too elongated): the request is understood and refused.
            let well_formed = text.split_once(':').is_some_and(|(w, h)| {
                [w, h].iter().all(|v| {
                    (1..=3).contains(&v.len())
                        && !v.starts_with('0')
                        && v.bytes().all(|b| b.is_ascii_digit())
                })
            });
            if well_formed {
                ApiError::unprocessable("shape_out_of_range", format!("shape: {e}"))
            } else {
                ApiError::bad_request("invalid_parameter", format!("shape: {e}"))
            }
        })?,
    };
    let background = match fields.background.as_deref() {
        None | Some("") => ImportOptions::default().background,
        Some(text) => parse_hex_colour(text)
            .map_err(|e| ApiError::bad_request("invalid_parameter", format!("background: {e}")))?,
    };
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(ApiError::bad_request(
            "out_of_range",
            format!("name must be at most {MAX_NAME_CHARS} characters"),
        ));
    }
    if upload.count == 0 {
        return Err(ApiError::bad_request(
            "missing_parameter",
            "upload a .zip or image files with the library's tiles",
        ));
    }
    // A name taken (by the same id: "Emoji" and "EMOJI!!" are one library) is refused before
    // any work; publishing checks again, for uploads racing this one.
    if !replace {
        let id = library_id_from_name(&name);
        match state.platform.libraries().get(&id).await {
            Ok(existing) => {
                let name = existing.name;
                return Err(LibraryError::Exists { id, name }.into());
            }
            Err(LibraryError::NotFound(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    // Imports run a few at a time (each decodes every tile on blocking threads).
    let _permit = state
        .imports
        .clone()
        .acquire_owned()
        .await
        .map_err(ApiError::internal)?;
    let max_files = settings.max_library_files;
    let max_unpacked = settings.max_library_uncompressed_bytes;
    let files_dir = upload.files.clone();
    let archives = upload.archives.clone();
    let mut count = upload.count - archives.len() as u32;
    tokio::task::spawn_blocking(move || -> ApiResult<()> {
        let mut unpacked = 0;
        for (i, archive) in archives.iter().enumerate() {
            // The first archive unpacks in place (its names become the tiles' names).
            let into = if i == 0 {
                files_dir.clone()
            } else {
                files_dir.join(format!("archive-{i}"))
            };
            extract(
                archive,
                &into,
                max_files,
                &mut count,
                max_unpacked,
                &mut unpacked,
            )?;
        }
        if count_images(&files_dir) == 0 {
            return Err(ApiError::unprocessable(
                "no_images",
                "the upload holds no images (PNG, JPEG, WebP or GIF files)",
            ));
        }
        Ok(())
    })
    .await
    .map_err(ApiError::internal)??;
    let options = ImportOptions {
        shape,
        background,
        ..ImportOptions::default()
    };
    let (record, report) = import_library(&state.platform, &upload.files, &name, options, replace)
        .await
        .map_err(import_error)?;
    tracing::info!(library = %record.id, version = record.version, tiles = record.tiles, "library imported");
    let summary = ImportSummary {
        imported: report.imported,
        // The record lists the skipped files as the import reported them.
        skipped: record.skipped.clone(),
        duplicates: report
            .duplicates
            .iter()
            .map(|(name, kept)| Duplicate {
                name: name.clone(),
                kept: kept.clone(),
            })
            .collect(),
        ignored: report.ignored,
    };
    Ok(HttpResponse::Created()
        .insert_header((header::LOCATION, format!("/api/v1/libraries/{}", record.id)))
        .json(Created {
            library: record,
            report: summary,
        }))
}

/// The files' fault is 422; a name taken is 409; storage and a stopped import are ours.
fn import_error(e: ImportError) -> ApiError {
    match e {
        ImportError::NoImages { .. } | ImportError::Source { .. } => {
            tracing::info!(error = %e, "library upload refused");
            ApiError::unprocessable(
                "no_images",
                "none of the uploaded images could be read as a tile",
            )
        }
        ImportError::Library(LibraryError::BadId(id)) => {
            ApiError::bad_request("invalid_parameter", LibraryError::BadId(id).to_string())
        }
        ImportError::Library(e) => e.into(),
        ImportError::Stopped(_) => ApiError::internal(e),
    }
}

/// Reads every part; on a refusal, drains a bounded amount of what is left (see [`drain`]).
async fn read_parts(
    payload: &mut Multipart,
    state: &AppState,
    upload: &mut Upload,
    fields: &mut Fields,
) -> ApiResult<()> {
    let settings = &state.settings;
    while let Some(field) = payload.next().await {
        let mut field = field?;
        if let Err(e) = read_part(settings, upload, fields, &mut field).await {
            // A broken multipart stream has ended and must not be polled again.
            if e.code != "bad_multipart" {
                let budget = settings
                    .max_library_upload_bytes
                    .saturating_add(DRAIN_SLACK);
                drain(payload, field, budget).await;
            }
            return Err(e);
        }
    }
    Ok(())
}

async fn read_part(
    settings: &WebSettings,
    upload: &mut Upload,
    fields: &mut Fields,
    field: &mut Field,
) -> ApiResult<()> {
    let field_name = field_name(field);
    let slot = match field_name.as_str() {
        "name" => Some(&mut fields.name),
        "replace" => Some(&mut fields.replace),
        "shape" => Some(&mut fields.shape),
        "background" => Some(&mut fields.background),
        _ => None,
    };
    if let Some(slot) = slot {
        if slot.is_some() {
            return Err(ApiError::bad_request(
                "duplicate_field",
                format!("field {field_name:?} is given twice"),
            ));
        }
        *slot = Some(read_text(field, &field_name).await?);
        return Ok(());
    }
    let Some(original) = file_name(field) else {
        return Err(ApiError::bad_request(
            "unknown_field",
            format!(
                "unknown field {field_name:?}: send `name`, `replace`, `shape`, `background` and files"
            ),
        ));
    };
    upload.count += 1;
    if upload.count > settings.max_library_files {
        return Err(ApiError::too_large(
            "too_many_files",
            format!("at most {} files per library", settings.max_library_files),
        ));
    }
    // The client's name is only a hint: keep its last component, made safe, unique by index.
    let base = Path::new(&original.replace('\\', "/"))
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let safe: String = base
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let safe = safe.trim_start_matches('.').to_string();
    let is_zip = safe.to_ascii_lowercase().ends_with(".zip");
    let path = if is_zip {
        upload
            .files
            .with_file_name(format!("upload-{}.zip", upload.count))
    } else if safe.is_empty() || upload.files.join(&safe).exists() {
        upload.files.join(format!("{:05}-{safe}", upload.count))
    } else {
        upload.files.join(&safe)
    };
    let mut file = tokio::fs::File::create(&path)
        .await
        .map_err(ApiError::internal)?;
    let limit = settings.max_library_upload_bytes;
    let mut head: Vec<u8> = Vec::new();
    while let Some(chunk) = field.next().await {
        let chunk = chunk?;
        upload.bytes += chunk.len() as u64;
        if upload.bytes > limit {
            return Err(ApiError::too_large(
                "upload_too_large",
                format!("the library upload is over the limit of {limit} bytes"),
            ));
        }
        if head.len() < 4 {
            head.extend(chunk.iter().take(4 - head.len()));
        }
        file.write_all(&chunk).await.map_err(ApiError::internal)?;
    }
    file.flush().await.map_err(ApiError::internal)?;
    if is_zip || head.as_slice() == b"PK\x03\x04" {
        let zip_path = if is_zip {
            path
        } else {
            let moved = upload
                .files
                .with_file_name(format!("upload-{}.zip", upload.count));
            tokio::fs::rename(&path, &moved)
                .await
                .map_err(ApiError::internal)?;
            moved
        };
        upload.archives.push(zip_path);
    }
    Ok(())
}

/// Extracts `archive` into `into` under the limits; refuses unsafe names.
fn extract(
    archive: &Path,
    into: &Path,
    max_files: u32,
    count: &mut u32,
    max_unpacked: u64,
    unpacked: &mut u64,
) -> ApiResult<()> {
    let bad = |e: zip::result::ZipError| {
        ApiError::unprocessable("bad_archive", format!("the archive cannot be read: {e}"))
    };
    let file = std::fs::File::open(archive).map_err(ApiError::internal)?;
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file)).map_err(bad)?;
    if *count as u64 + zip.len() as u64 > max_files as u64 {
        return Err(ApiError::unprocessable(
            "archive_too_large",
            format!(
                "the archive has {} entries, over the limit of {max_files}",
                zip.len()
            ),
        ));
    }
    // Check every name and the declared sizes before writing anything.
    let mut declared: u64 = 0;
    for i in 0..zip.len() {
        let entry = zip.by_index_raw(i).map_err(bad)?;
        let name = entry.name().to_string();
        if !safe_entry_name(&name) {
            return Err(ApiError::unprocessable(
                "unsafe_archive",
                format!("the archive entry {name:?} points outside the archive"),
            ));
        }
        declared = declared.saturating_add(entry.size());
    }
    if unpacked.saturating_add(declared) > max_unpacked {
        return Err(ApiError::unprocessable(
            "archive_too_large",
            format!("the archive unpacks to more than {max_unpacked} bytes"),
        ));
    }
    std::fs::create_dir_all(into).map_err(ApiError::internal)?;
    for i in 0..zip.len() {
        let entry = zip.by_index(i).map_err(bad)?;
        if entry.is_dir() {
            continue;
        }
        *count += 1;
        let Some(relative) = entry.enclosed_name() else {
            return Err(ApiError::unprocessable(
                "unsafe_archive",
                format!(
                    "the archive entry {:?} points outside the archive",
                    entry.name()
                ),
            ));
        };
        let target = into.join(relative);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(ApiError::internal)?;
        }
        let mut out = std::fs::File::create(&target).map_err(ApiError::internal)?;
        // Count real bytes: declared sizes can lie.
        let room = max_unpacked - *unpacked;
        let mut limited = entry.take(room + 1);
        let mut buf = [0u8; 64 * 1024];
        loop {
            let n = limited.read(&mut buf).map_err(|e| {
                ApiError::unprocessable("bad_archive", format!("the archive is corrupt: {e}"))
            })?;
            if n == 0 {
                break;
            }
            *unpacked += n as u64;
            if *unpacked > max_unpacked {
                return Err(ApiError::unprocessable(
                    "archive_too_large",
                    format!("the archive unpacks to more than {max_unpacked} bytes"),
                ));
            }
            out.write_all(&buf[..n]).map_err(ApiError::internal)?;
        }
    }
    Ok(())
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

fn count_images(dir: &Path) -> usize {
    let mut n = 0;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            n += count_images(&path);
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| IMAGE_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
        {
            n += 1;
        }
    }
    n
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
