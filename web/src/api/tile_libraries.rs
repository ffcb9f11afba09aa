//! Tile libraries: `GET /api/v1/libraries`, `GET /api/v1/libraries/{id}`,
//! `POST /api/v1/libraries` (multipart: `name` and either one .zip or several image files) and
//! `DELETE /api/v1/libraries/{id}`.
//!
//! Every library has an owner: the client, or the named key, that uploaded it, or the operator.
//! Only the owner (or the operator) replaces or deletes it; a private library is seen and used
//! by its owner alone, a shared one by everyone.
//!
//! An upload is spooled under hard limits (total bytes, file count, a body that keeps coming).
//! An archive is checked before anything is extracted, then extracted under the same limits with
//! every entry's real size counted (a zip bomb's declared sizes are not trusted): names that leave
//! the directory are refused, the entry count and total uncompressed size are capped.

use std::path::{Path, PathBuf};
use tessera_shared::error_code::ErrorCode;

use actix_multipart::{Field, Multipart};
use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use serde::Serialize;
use tokio::io::AsyncWriteExt;
use utoipa::ToSchema;

use tessera_engine::{CropRule, ImportOptions, TileShape, parse_hex_colour};
use tessera_shared::libraries::{
    LibraryError, LibraryRecord, Owner, Publication, SkippedFile, Visibility, library_id_from_name,
    validate_library_id,
};
use tessera_shared::library_import::{ImportError, import_library_while};

use crate::api::path_target::from_path;
use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;
use crate::guards::archive::{extract, free_bytes, measure_images};
use crate::guards::client::{client_cookie, known_requester, requester};
use crate::guards::peer::PeerSocket;
use crate::guards::upload::{
    BodyClock, DRAIN_SLACK, drain, drainable, field_name, file_name, read_text, require_multipart,
};
use crate::web_settings::WebSettings;

use tessera_engine::decode::FORMAT_NAMES;

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
        crate::api::error_sets::StorageErrors,
    ),
)]
pub async fn list(req: HttpRequest, state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let libraries = visible_libraries(&state, known_requester(&req).as_ref()).await?;
    Ok(HttpResponse::Ok().json(LibraryList { libraries }))
}

/// The libraries `who` may see: the shared ones, and its own (all of them, for the operator).
pub(crate) async fn visible_libraries(
    state: &AppState,
    who: Option<&Owner>,
) -> ApiResult<Vec<LibraryRecord>> {
    let mut libraries = state.platform.libraries().list().await?;
    libraries.retain(|l| l.visible_to(who));
    Ok(libraries)
}

/// Library `id` if `req` may see it; another's private library is not found.
pub(crate) async fn visible_library(
    state: &AppState,
    req: &HttpRequest,
    id: &str,
) -> ApiResult<LibraryRecord> {
    let not_found =
        || ApiError::not_found(ErrorCode::LibraryNotFound, format!("no library {id:?}"));
    if validate_library_id(id).is_err() {
        return Err(not_found());
    }
    let record = state.platform.libraries().get(id).await?;
    if record.visible_to(known_requester(req).as_ref()) {
        Ok(record)
    } else {
        Err(not_found())
    }
}

/// Library `id` and its requester, if the requester may change it (its owner or the
/// operator): another's library it sees is 403, one it does not see is not found.
pub(crate) async fn changeable(
    state: &AppState,
    req: &HttpRequest,
    id: &str,
) -> ApiResult<(LibraryRecord, Owner)> {
    let record = visible_library(state, req, id).await?;
    match known_requester(req) {
        Some(who) if record.may_change(&who) => Ok((record, who)),
        _ => Err(LibraryError::NotOwner(record.id).into()),
    }
}

/// The library named by the path's `{id}`, when its requester may see it (another's private
/// library is 404).
pub struct VisibleLibrary(pub LibraryRecord);

from_path!(VisibleLibrary, |state, req, id| async move {
    Ok(VisibleLibrary(visible_library(&state, &req, &id).await?))
});

/// The library named by the path's `{id}`, for one who may change it.
pub struct ChangeableLibrary {
    pub record: LibraryRecord,
    pub who: Owner,
}

from_path!(ChangeableLibrary, |state, req, id| async move {
    let (record, who) = changeable(&state, &req, &id).await?;
    Ok(ChangeableLibrary { record, who })
});

/// One tile library.
#[utoipa::path(
    get,
    path = "/api/v1/libraries/{id}",
    operation_id = "get_library",
    tag = "libraries",
    params(("id" = String, Path, pattern = r"^[a-z0-9][a-z0-9-]{0,47}$", description = "The library's id")),
    responses(
        (status = 200, description = "The library", body = LibraryRecord),
        crate::api::error_sets::LookupErrors,
    ),
)]
pub async fn get(library: VisibleLibrary) -> ApiResult<HttpResponse> {
    Ok(HttpResponse::Ok().json(library.0))
}

/// Delete a tile library: every version's index and contact sheet.
///
/// Only its owner (the client or key that uploaded it) or the operator may: 403
/// not_library_owner for anyone else (another's private library answers 404). A library an
/// active job renders from answers 409 library_in_use; delete it once the job ends.
#[utoipa::path(
    delete,
    path = "/api/v1/libraries/{id}",
    operation_id = "delete_library",
    tag = "libraries",
    params(
        ("id" = String, Path, pattern = r"^[a-z0-9][a-z0-9-]{0,47}$", description = "The library's id"),
        ("X-Client-Id" = Option<Uuid>, Header, nullable = false, description = "The client that uploaded the library (or its tessera_client cookie)."),
    ),
    responses(
        (status = 204, description = "Deleted"),
        crate::api::error_sets::ChangeErrors,
    ),
)]
pub async fn delete(
    library: ChangeableLibrary,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let record = library.record;
    let deleted = state.platform.libraries().delete(&record.id).await?;
    state.loaded_libraries.drop_library(&record.id);
    tracing::info!(library = %record.id, blobs = deleted, "library deleted");
    Ok(HttpResponse::NoContent().finish())
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
    /// How many of the skipped files are not images by their name (their extension).
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
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = r"[^\s\u0085]",
        example = "Holiday"
    )]
    pub name: String,
    /// true: publish a new version of an existing library (default false).
    #[schema(required = false, default = false)]
    pub replace: bool,
    /// Shape of the tiles, width:height (`1:1` by default; `4:3`, `3:2`, `16:9`, `2:3`, ...,
    /// terms of 1 to 16, at most 4:1 either way): each image is cropped (see `crop`) at this
    /// shape, and jobs on the library use tiles of this shape (a tile_size of 24x18 for 4:3).
    /// The document's pattern lists the shapes taken (`TileShape::pattern`).
    #[schema(required = false, default = "1:1", example = "4:3")]
    pub shape: String,
    /// Where each image is cropped to the shape: `attention` (the default: where its detail,
    /// skin tones and colour are) or `centre`. The library's record keeps the rule, and photos
    /// added later are cropped by it.
    #[schema(
        required = false,
        default = "attention",
        pattern = "^(attention|centre)$"
    )]
    pub crop: String,
    /// The colour transparent parts of the images are laid over, RRGGBB hex (a leading `#` is
    /// allowed; `ffffff` by default).
    #[schema(
        required = false,
        default = "ffffff",
        pattern = r"^#?[0-9A-Fa-f]{6}$",
        example = "ffffff"
    )]
    pub background: String,
    /// `private`: only the uploader (its client id or named key) and the operator see and use
    /// the library; `shared` (the default): everyone may. Either way only the owner and the
    /// operator replace or delete it. A replacement without it keeps the library's.
    #[schema(required = false, default = "shared", example = "private")]
    pub visibility: Visibility,
    /// One .zip or image files (JPEG, PNG, HEIC, AVIF, WebP, TIFF, BMP or GIF).
    #[schema(value_type = Vec<String>, format = Binary, min_items = 1)]
    pub files: Vec<Vec<u8>>,
}

/// The text fields of an upload.
#[derive(Debug, Default)]
pub(crate) struct Fields {
    name: Option<String>,
    /// `true` publishes a new version of a library that exists under the name.
    replace: Option<String>,
    /// The tiles' shape, `W:H`.
    shape: Option<String>,
    /// The colour transparent parts are laid over, `RRGGBB` (or `#RRGGBB`).
    background: Option<String>,
    /// `private` or `shared`.
    visibility: Option<String>,
    /// `attention` or `centre`.
    crop: Option<String>,
    /// Tiles an edit takes out, by name (a field each).
    pub(crate) remove: Vec<String>,
}

impl Fields {
    /// The first field given that only a new library takes (name, shape, ...).
    pub(crate) fn library_fields(&self) -> Option<&'static str> {
        [
            ("name", &self.name),
            ("replace", &self.replace),
            ("shape", &self.shape),
            ("background", &self.background),
            ("visibility", &self.visibility),
            ("crop", &self.crop),
        ]
        .into_iter()
        .find_map(|(field, value)| value.is_some().then_some(field))
    }
}

/// The files of one upload, on disk.
pub(crate) struct Upload {
    _dir: tempfile::TempDir,
    /// Where the images (loose or extracted) are.
    pub(crate) files: PathBuf,
    archives: Vec<PathBuf>,
    pub(crate) count: u32,
    bytes: u64,
}

/// Create or replace a tile library from a .zip or image files.
///
/// The library's id is made from its name (lowercase letters, digits, hyphens: "Emoji" and
/// "EMOJI!!" are the same library). A name whose library exists answers 409 library_exists
/// unless replace is true, which publishes a new version (jobs submitted before keep the version
/// they named). The library belongs to the uploader: its named key, the operator's key, or its
/// client (X-Client-Id or the tessera_client cookie, minted when absent); anyone else's
/// replacement is 403 not_library_owner. Tile images that cannot be read, or hold over 200
/// megapixels, are skipped, with the reason in the report. An upload is refused with 507 when storage cannot hold its index,
/// 422 when its images hold more pixels than one upload may decode or its import takes longer
/// than its time budget, and 408 when its body stalls.
#[utoipa::path(
    post,
    path = "/api/v1/libraries",
    operation_id = "create_library",
    tag = "libraries",
    params(("X-Client-Id" = Option<Uuid>, Header, nullable = false, description = "The client the library will belong to; otherwise the tessera_client cookie, minted when absent.")),
    request_body(content = LibraryUpload, content_type = "multipart/form-data"),
    responses(
        (status = 201, description = "Imported: the library and the import report", body = Created,
            headers(("Location" = String, description = "The library's path"))),
        crate::api::error_sets::StorageErrors,
        crate::api::error_sets::UploadErrors,
        (status = 403, response = crate::api_error::ErrorBody),
        (status = 409, response = crate::api_error::ErrorBody),
        (status = 507, response = crate::api_error::ErrorBody),
    ),
)]
pub async fn create(
    req: HttpRequest,
    mut payload: Multipart,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    require_multipart(&req, "a library")?;
    let settings = &state.settings;
    let (owner, minted) = requester(&req)?;
    let (upload, fields, slot) = receive(&req, &mut payload, &state).await?;
    let asked = Asked::from_fields(fields)?;
    if upload.count == 0 {
        return Err(ApiError::bad_request(
            ErrorCode::MissingParameter,
            "upload a .zip or image files with the library's tiles",
        ));
    }
    // Whose the name is, and what the owner may keep, are settled before any work; publishing
    // checks ownership again, for uploads racing this one.
    let id = library_id_from_name(&asked.name);
    let all = state.platform.libraries().list().await?;
    check_name(settings, &all, &id, &owner, asked.replace)?;
    let options = ImportOptions {
        shape: asked.shape,
        crop: asked.crop,
        background: asked.background,
        ..ImportOptions::default()
    };
    let images = unpack(&state, &upload).await?;
    // The upload's slot is held until its archives are unpacked.
    drop(slot);
    require_index_room(&state, (&all, &owner), &options, images).await?;
    let how = Publication {
        replace: asked.replace,
        by: owner,
        visibility: asked.visibility,
        based_on: None,
    };
    let (record, report) = import(&req, &state, &upload, (&asked.name, &id), options, &how).await?;
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
    let mut response = HttpResponse::Created();
    response.insert_header((header::LOCATION, format!("/api/v1/libraries/{}", record.id)));
    if let Some(client) = minted {
        response.cookie(client_cookie(&req, client));
    }
    Ok(response.json(Created {
        library: record,
        report: summary,
    }))
}

/// Reads a library upload's parts to the spool under the upload limits, holding one of the
/// client's upload slots (released by dropping it).
pub(crate) async fn receive(
    req: &HttpRequest,
    payload: &mut Multipart,
    state: &AppState,
) -> ApiResult<(Upload, Fields, crate::guards::upload::UploadSlot)> {
    // Storage that is full takes no library, however small: refused before the body is read.
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
        .unwrap_or(0);
    state.require_room(declared.max(1), "the library").await?;
    let slot = state.uploads.take(crate::guards::client::client_address(
        req,
        state.guard.trusted_proxies(),
    ))?;
    let dir = tempfile::tempdir_in(&state.spool).map_err(ApiError::internal)?;
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
    read_parts(payload, state, &mut upload, &mut fields).await?;
    Ok((upload, fields, slot))
}

/// Refuses `images` more tiles prepared as `options` say, for libraries of `owner`, when the
/// storage, the libraries' cap over `all` or the owner's own cannot hold their renditions.
pub(crate) async fn require_index_room(
    state: &AppState,
    (all, owner): (&[LibraryRecord], &Owner),
    options: &ImportOptions,
    images: u64,
) -> ApiResult<()> {
    let (rw, rh) = options.shape.fit(options.rendition_size);
    let estimate = images * (u64::from(rw) * u64::from(rh) * 4 + 256);
    state.require_room(estimate, "the library").await?;
    let total: u64 = all.iter().map(|l| l.index_bytes).sum();
    let cap = state.settings.max_library_bytes;
    if cap > 0 && total.saturating_add(estimate) > cap {
        return Err(ApiError::insufficient_storage(format!(
            "the libraries take {total} bytes; this one would take about {estimate} more, past \
             the {cap} they may take together"
        )));
    }
    let owners: u64 = all
        .iter()
        .filter(|l| &l.owner == owner)
        .map(|l| l.index_bytes)
        .sum();
    let cap = state.settings.max_library_bytes_per_owner;
    if cap > 0 && !owner.is_operator() && owners.saturating_add(estimate) > cap {
        return Err(ApiError::insufficient_storage(format!(
            "your libraries take {owners} bytes; this would take about {estimate} more, past \
             the {cap} one owner's may take: take out a library or some of its photos"
        )));
    }
    Ok(())
}

/// What a library upload asks for, read from its text fields.
struct Asked {
    name: String,
    replace: bool,
    visibility: Option<Visibility>,
    shape: TileShape,
    crop: CropRule,
    background: [u8; 3],
}

impl Asked {
    fn from_fields(fields: Fields) -> ApiResult<Asked> {
        if !fields.remove.is_empty() {
            return Err(ApiError::bad_request(
                ErrorCode::UnknownField,
                "a new library takes no `remove`: take tiles out of a library with POST \
                 /api/v1/libraries/{id}/tiles",
            ));
        }
        let name = fields.name.filter(|n| !n.is_empty()).ok_or_else(|| {
            ApiError::bad_request(ErrorCode::MissingParameter, "name is required")
        })?;
        let replace = crate::guards::upload::parse_bool("replace", fields.replace.as_deref())?;
        let visibility = match fields.visibility.as_deref() {
            None | Some("") => None,
            Some(text) => Some(Visibility::parse(text).ok_or_else(|| {
                ApiError::bad_request(
                    ErrorCode::InvalidParameter,
                    format!("visibility must be private or shared, not {text:?}"),
                )
            })?),
        };
        let shape = parse_shape(fields.shape.as_deref())?;
        let crop = match fields.crop.as_deref() {
            None | Some("") => CropRule::default(),
            Some(text) => CropRule::parse(text).ok_or_else(|| {
                ApiError::bad_request(
                    ErrorCode::InvalidParameter,
                    format!("crop must be attention or centre, not {text:?}"),
                )
            })?,
        };
        let background = match fields.background.as_deref() {
            None | Some("") => ImportOptions::default().background,
            Some(text) => parse_hex_colour(text).map_err(|e| {
                ApiError::bad_request(ErrorCode::InvalidParameter, format!("background: {e}"))
            })?,
        };
        if name.chars().count() > MAX_NAME_CHARS {
            return Err(ApiError::bad_request(
                ErrorCode::OutOfRange,
                format!("name must be at most {MAX_NAME_CHARS} characters"),
            ));
        }
        Ok(Asked {
            name,
            replace,
            visibility,
            shape,
            crop,
            background,
        })
    }
}

/// Whether `owner` may publish library `id` among `all`: its own (replaced only when asked),
/// or a new one within the libraries an owner may keep.
fn check_name(
    settings: &WebSettings,
    all: &[LibraryRecord],
    id: &str,
    owner: &Owner,
    replace: bool,
) -> ApiResult<()> {
    match all.iter().find(|l| l.id == id) {
        Some(existing) if !existing.may_change(owner) => {
            Err(LibraryError::NotOwner(id.to_string()).into())
        }
        Some(existing) if !replace => Err(LibraryError::Exists {
            id: id.to_string(),
            name: existing.name.clone(),
        }
        .into()),
        Some(_) => Ok(()),
        None => {
            let cap = settings.max_libraries_per_owner;
            let owned = all.iter().filter(|l| &l.owner == owner).count();
            if cap > 0 && !owner.is_operator() && owned >= cap as usize {
                return Err(ApiError::unprocessable(
                    ErrorCode::TooManyLibraries,
                    format!(
                        "you have {owned} libraries, the most one owner may keep: delete one \
                         first, or replace one"
                    ),
                ));
            }
            Ok(())
        }
    }
}

/// Unpacks the upload's archives beside its loose files and counts its images: refused when
/// it holds none, or more pixels than one upload may decode.
pub(crate) async fn unpack(state: &AppState, upload: &Upload) -> ApiResult<u64> {
    let settings = &state.settings;
    let max_files = settings.max_library_files;
    let max_unpacked = settings.max_library_uncompressed_bytes;
    let max_pixels = settings.max_library_upload_pixels;
    let files_dir = upload.files.clone();
    let archives = upload.archives.clone();
    let mut count = upload.count - archives.len() as u32;
    // What unpacking must leave free on the spool's disk: the storage's own floor, where the
    // storage knows its room (the spool lies in the embedded data directory).
    let spool_free = free_bytes(&state.spool);
    let keep_free = match (state.platform.blobs.writable_bytes().await, spool_free) {
        (Some(writable), Some(free)) => Some(free.saturating_sub(writable)),
        _ => None,
    };
    let spool = state.spool.clone();
    tokio::task::spawn_blocking(move || -> ApiResult<u64> {
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
                (max_files, &mut count),
                (max_unpacked, &mut unpacked),
                keep_free.map(|keep| (spool.as_path(), keep)),
            )?;
            std::fs::remove_file(archive).map_err(ApiError::internal)?;
        }
        let (images, pixels, others) = measure_images(&files_dir);
        if images == 0 {
            let why = if others.is_empty() {
                "it holds no files".to_string()
            } else {
                tessera_engine::summarise_skipped(&others)
            };
            return Err(ApiError::unprocessable(
                ErrorCode::NoImages,
                format!("the upload holds no images ({FORMAT_NAMES} files): {why}"),
            ));
        }
        if pixels > max_pixels {
            return Err(ApiError::unprocessable(
                ErrorCode::UploadTooManyPixels,
                format!(
                    "the images hold {pixels} pixels together, over the {max_pixels} one upload \
                     may decode: send fewer or smaller images"
                ),
            ));
        }
        Ok(images)
    })
    .await
    .map_err(ApiError::internal)?
}

/// Imports the upload's images as library `name` (id `id`), a few imports at a time (each
/// decodes every tile on blocking threads). It stops, and publishes nothing, once its client
/// has gone or its time is up.
async fn import(
    req: &HttpRequest,
    state: &AppState,
    upload: &Upload,
    (name, id): (&str, &str),
    options: ImportOptions,
    how: &Publication,
) -> ApiResult<(LibraryRecord, tessera_engine::ImportReport)> {
    within_budget(Some(req), state, id, |keep_going| {
        import_library_while(
            &state.platform,
            &upload.files,
            name,
            options,
            how,
            move || keep_going.holds(),
        )
    })
    .await
}

/// While an import may go on: its client is there and its time is not up.
#[derive(Clone)]
pub(crate) struct KeepGoing {
    deadline: std::time::Instant,
    peer: Option<PeerSocket>,
}

impl KeepGoing {
    pub(crate) fn holds(&self) -> bool {
        std::time::Instant::now() < self.deadline
            && !self.peer.as_ref().is_some_and(PeerSocket::gone)
    }
}

/// Runs the import `work` of library `id`, a few imports at a time, under the time an upload
/// may take and while its client (`req`'s, if any) is there ([`KeepGoing`]); a stopped import
/// is told as such.
pub(crate) async fn within_budget<T, Work>(
    req: Option<&HttpRequest>,
    state: &AppState,
    id: &str,
    work: impl FnOnce(KeepGoing) -> Work,
) -> ApiResult<T>
where
    Work: std::future::Future<Output = Result<T, ImportError>>,
{
    let _permit = state
        .imports
        .clone()
        .acquire_owned()
        .await
        .map_err(ApiError::internal)?;
    let budget = std::time::Duration::from_secs(state.settings.import_time_budget_secs.max(1));
    let deadline = std::time::Instant::now() + budget;
    let keep_going = KeepGoing {
        deadline,
        peer: req.and_then(PeerSocket::of),
    };
    match work(keep_going).await {
        Err(ImportError::CalledOff) if std::time::Instant::now() >= deadline => {
            tracing::warn!(library = %id, "library import out of time: nothing published");
            Err(ApiError::unprocessable(
                ErrorCode::ImportTooLong,
                format!(
                    "the import took longer than the {} s an upload may: send fewer or smaller \
                     images",
                    budget.as_secs()
                ),
            ))
        }
        Err(ImportError::CalledOff) => {
            tracing::info!(library = %id, "library import called off: the client went away");
            Err(ApiError::new(
                actix_web::http::StatusCode::BAD_REQUEST,
                ErrorCode::ClientGone,
                "the client went away; nothing was published",
            ))
        }
        other => other.map_err(import_error),
    }
}

/// The tiles' shape as sent: absent is square; well-formed but too elongated is 422.
fn parse_shape(text: Option<&str>) -> ApiResult<TileShape> {
    match text {
        None | Some("") => Ok(TileShape::SQUARE),
        Some(text) => TileShape::parse(text).map_err(|e| {
            // Written as W:H with 1 to 3 digits each but not a shape tiles take (too
            // elongated, or a term over 16): the request is understood and refused.
            let well_formed = text.split_once(':').is_some_and(|(w, h)| {
                [w, h].iter().all(|v| {
                    (1..=3).contains(&v.len())
                        && !v.starts_with('0')
                        && v.bytes().all(|b| b.is_ascii_digit())
                })
            });
            if well_formed {
                ApiError::unprocessable(ErrorCode::ShapeOutOfRange, format!("shape: {e}"))
            } else {
                ApiError::bad_request(ErrorCode::InvalidParameter, format!("shape: {e}"))
            }
        }),
    }
}

/// The files' fault is 422; a name taken is 409; storage and a stopped import are ours.
pub(crate) fn import_error(e: ImportError) -> ApiError {
    match e {
        ImportError::NoImages { why, .. } => {
            tracing::info!(%why, "library upload refused");
            ApiError::unprocessable(
                ErrorCode::NoImages,
                format!("none of the uploaded files could be made a tile: {why}"),
            )
        }
        ImportError::Source { .. } => {
            tracing::info!(error = %e, "library upload refused");
            ApiError::unprocessable(
                ErrorCode::NoImages,
                "none of the uploaded images could be read as a tile",
            )
        }
        ImportError::Library(LibraryError::BadId(id)) => ApiError::bad_request(
            ErrorCode::InvalidParameter,
            LibraryError::BadId(id).to_string(),
        ),
        ImportError::Library(e) => e.into(),
        ImportError::UnknownTiles(_) => {
            ApiError::not_found(ErrorCode::TileNotFound, e.to_string()).with_field("remove")
        }
        ImportError::WouldBeEmpty => {
            ApiError::unprocessable(ErrorCode::InvalidParameter, e.to_string()).with_field("remove")
        }
        ImportError::Stopped(_) | ImportError::CalledOff => ApiError::internal(e),
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
    let mut clock = BodyClock::new(settings);
    while let Some(mut field) = clock.field(payload).await? {
        if let Err(e) = read_part(settings, upload, fields, &mut field, &mut clock).await {
            // A broken or stalled multipart stream must not be polled again.
            if drainable(&e) {
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
    clock: &mut BodyClock,
) -> ApiResult<()> {
    let field_name = field_name(field);
    if field_name == "remove" {
        if fields.remove.len() >= settings.max_library_files as usize {
            return Err(ApiError::too_large(
                ErrorCode::TooManyFiles,
                format!("at most {} tiles out per edit", settings.max_library_files),
            ));
        }
        let name = read_text(field, clock, &field_name).await?;
        fields.remove.push(name);
        return Ok(());
    }
    let slot = match field_name.as_str() {
        "name" => Some(&mut fields.name),
        "replace" => Some(&mut fields.replace),
        "shape" => Some(&mut fields.shape),
        "background" => Some(&mut fields.background),
        "visibility" => Some(&mut fields.visibility),
        "crop" => Some(&mut fields.crop),
        _ => None,
    };
    if let Some(slot) = slot {
        if slot.is_some() {
            return Err(ApiError::bad_request(
                ErrorCode::DuplicateField,
                format!("field {field_name:?} is given twice"),
            ));
        }
        *slot = Some(read_text(field, clock, &field_name).await?);
        return Ok(());
    }
    let Some(original) = file_name(field) else {
        return Err(ApiError::bad_request(
            ErrorCode::UnknownField,
            format!(
                "unknown field {field_name:?}: send `name`, `replace`, `shape`, `crop`, \
                 `background`, `visibility`, `remove` and files"
            ),
        ));
    };
    upload.count += 1;
    if upload.count > settings.max_library_files {
        return Err(ApiError::too_large(
            ErrorCode::TooManyFiles,
            format!("at most {} files per library", settings.max_library_files),
        ));
    }
    let (path, is_zip) = upload_path(upload, &original);
    let mut file = tokio::fs::File::create(&path)
        .await
        .map_err(ApiError::internal)?;
    let limit = settings.max_library_upload_bytes;
    let mut head: Vec<u8> = Vec::new();
    while let Some(chunk) = clock.chunk(field).await? {
        upload.bytes += chunk.len() as u64;
        if upload.bytes > limit {
            return Err(ApiError::too_large(
                ErrorCode::UploadTooLarge,
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

/// Where an uploaded file goes, and whether its name says it is a .zip. The client's name is
/// only a hint: its last component is kept, made safe, unique by the file's number.
fn upload_path(upload: &Upload, original: &str) -> (PathBuf, bool) {
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
    (path, is_zip)
}
