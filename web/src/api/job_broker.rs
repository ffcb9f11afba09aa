//! The job broker (`POST /api/v1/jobs`) and job status (`GET /api/v1/jobs/{id}`).
//!
//! A submission is checked in full before anything is stored: every parameter, the library, the
//! image (format, header dimensions, a complete decode) and the mosaic's size. Then the input blob,
//! the job record (queued) and the `ImageRequest` are written, in that order, so a message never
//! names a job or an input that does not exist.

use actix_multipart::{Field, Multipart};
use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use tessera_shared::error_code::ErrorCode;
use utoipa::ToSchema;
use uuid::Uuid;

use tessera_shared::accounting;
use tessera_shared::jobs::{JobParams, JobRecord};
use tessera_shared::keys::BlobKey;
use tessera_shared::libraries::{LibraryError, LibraryRecord, Owner, validate_library_id};
use tessera_shared::lifecycle::{delete_job, release_intermediates};
use tessera_shared::messages::{Envelope, ImageRequest, LibraryRequest};
use tessera_shared::spec::{Defaults, FIELDS, JobSpec};
use tessera_shared::storage::PutMode;

use crate::api::requested_job::RequestedJob;
use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;
use crate::guards::client::{client_address, client_cookie, client_id, credential_owner};
use crate::guards::inspect::{probe_target, verify_target};
use crate::guards::upload::{
    BodyClock, DRAIN_SLACK, drain, drainable, field_name, file_name, read_limited, read_text,
    require_multipart,
};
use crate::job_view::{JobView, job_path};

/// The fields of a submission, as sent: the image, and the text of each of the job
/// specification's fields ([`tessera_shared::spec::FIELDS`]).
#[derive(Debug, Default)]
pub(crate) struct Form {
    pub(crate) image: Option<(bytes::Bytes, String)>,
    pub(crate) fields: std::collections::BTreeMap<&'static str, String>,
}

/// A job to queue: the target, its checked specification and the fields the submitter gave.
pub(crate) struct Submission {
    pub(crate) image: (bytes::Bytes, String),
    pub(crate) spec: JobSpec,
    /// The names of the fields given (the rest took defaults): what fitting the job to its
    /// library leaves as asked.
    pub(crate) chosen: std::collections::BTreeSet<&'static str>,
    /// Who besides its owner may see the job (an event's mosaics: its guests, by the event's
    /// link): the service's own, never read from a submission.
    pub(crate) sharing: tessera_shared::jobs::Sharing,
    /// An event's mosaic, whose library is made by the controller: never a submission's.
    pub(crate) event: Option<EventLibrary>,
}

/// An event's mosaic: the next version of its library is made by the job controller from the
/// event's prepared photos listed for the job (`libraryrequest`), so the job is fitted to
/// their number, and names the version before (if any) until the new one is made.
pub(crate) struct EventLibrary {
    pub(crate) event: Uuid,
    pub(crate) tiles: u32,
    pub(crate) before: Option<u32>,
}

impl Submission {
    /// The job a submitted form asks for: its image, and its fields read and checked.
    pub(crate) fn of_form(form: Form, state: &AppState) -> ApiResult<Submission> {
        let image = form.image.ok_or_else(|| missing("image"))?;
        Ok(Submission {
            image,
            spec: spec_of(&form.fields, state)?,
            chosen: form.fields.keys().copied().collect(),
            sharing: Default::default(),
            event: None,
        })
    }
}

/// A job submission (`multipart/form-data`): the image and the job specification's fields. Its
/// schema in the API document is the specification's own (`spec::submission_schema`); this type
/// only names it.
#[derive(ToSchema)]
pub struct JobSubmission {
    /// The target image.
    #[schema(value_type = String, format = Binary)]
    pub image: Vec<u8>,
}

/// Submit a mosaic job.
///
/// Queued when every parameter, the library and the image check out; `Location` names the job.
#[utoipa::path(
    post,
    path = "/api/v1/jobs",
    operation_id = "submit_job",
    tag = "jobs",
    params(("X-Client-Id" = Option<Uuid>, Header, nullable = false, description = "The client id; otherwise the tessera_client cookie, minted when absent.")),
    request_body(content = JobSubmission, content_type = "multipart/form-data"),
    responses(
        (status = 202, description = "Queued; Location names the job", body = JobView,
            headers(("Location" = String, description = "The job's path"))),
        crate::api::error_sets::UploadErrors,
        (status = 403, response = crate::api_error::ErrorBody),
        (status = 429, description = "too_many_active_jobs: the client (its cookie or X-Client-Id) has web.max_active_jobs_per_client jobs running; too_many_active_jobs_from_address: its address has web.max_active_jobs_per_address", body = crate::api_error::ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
        (status = 503, description = "service_busy: web.max_active_jobs are running; too_many_uploads: web.max_uploads_in_flight are being read; or storage is unavailable", body = crate::api_error::ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
        (status = 507, description = "insufficient_storage: no room for the job (the embedded backend keeps storage.min_free_bytes free)", body = crate::api_error::ErrorBody,
            headers(("Retry-After" = u64, description = "Seconds to wait"))),
    ),
)]
pub async fn submit(
    req: HttpRequest,
    mut payload: Multipart,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    require_multipart(&req, "a job")?;
    let (client, minted) = client_id(&req)?;
    let address = client_address(&req, state.guard.trusted_proxies());
    // Over a quota already: refused before the upload is read (checked again before storing).
    drop(
        state
            .admission
            .seat(&state.platform, &state.settings, client, address)
            .await?,
    );
    let slot = state.uploads.take(crate::guards::client::client_address(
        &req,
        state.guard.trusted_proxies(),
    ))?;
    let form = read_form(&mut payload, &state).await?;
    drop(slot);
    let submission = Submission::of_form(form, &state)?;
    let job = Uuid::new_v4();
    let span = tracing::info_span!("submit", %job, %client);
    let record = tracing::Instrument::instrument(
        accounting::with_job(
            job,
            enqueue(
                &state,
                job,
                (client, credential_owner(&req)),
                address,
                submission,
            ),
        ),
        span,
    )
    .await?;
    let mut response = HttpResponse::Accepted();
    response.insert_header((header::LOCATION, job_path(job)));
    if minted {
        response.cookie(client_cookie(&req, client));
    }
    Ok(response.json(JobView::new(&record, &state.settings.retention)))
}

/// Reads every field; on a refusal, drains a bounded amount of what is left (see [`drain`]).
pub(crate) async fn read_form(payload: &mut Multipart, state: &AppState) -> ApiResult<Form> {
    let mut form = Form::default();
    let limit = state.settings.max_upload_bytes;
    let mut clock = BodyClock::new(&state.settings);
    while let Some(mut field) = clock.field(payload).await? {
        if let Err(e) = read_field(&mut form, &mut field, &mut clock, limit).await {
            // A broken or stalled multipart stream must not be polled again.
            if drainable(&e) {
                drain(payload, field, limit.saturating_add(DRAIN_SLACK)).await;
            }
            return Err(e);
        }
    }
    Ok(form)
}

pub(crate) async fn read_field(
    form: &mut Form,
    field: &mut Field,
    clock: &mut BodyClock,
    limit: u64,
) -> ApiResult<()> {
    let name = field_name(field);
    if name == "image" {
        if form.image.is_some() {
            return Err(duplicate(&name));
        }
        let input_name = file_name(field).unwrap_or_default();
        let bytes = read_limited(field, clock, limit, || {
            ApiError::too_large(
                ErrorCode::UploadTooLarge,
                format!("the image is over the upload limit of {limit} bytes"),
            )
        })
        .await?;
        form.image = Some((bytes.freeze(), input_name));
        return Ok(());
    }
    let declared = declared_field(&name)?;
    if form.fields.contains_key(declared) {
        return Err(duplicate(&name));
    }
    let text = read_text(field, clock, &name).await?;
    form.fields.insert(declared, text);
    Ok(())
}

/// The declared name of a job's field `name` (`spec::FIELDS`), or 400 unknown_field.
pub(crate) fn declared_field(name: &str) -> ApiResult<&'static str> {
    FIELDS
        .iter()
        .find(|f| f.name == name)
        .map(|f| f.name)
        .ok_or_else(|| {
            ApiError::bad_request(ErrorCode::UnknownField, format!("unknown field {name:?}"))
        })
}

pub(crate) fn duplicate(name: &str) -> ApiError {
    ApiError::bad_request(
        ErrorCode::DuplicateField,
        format!("field {name:?} is given twice"),
    )
}

pub(crate) fn missing(name: &str) -> ApiError {
    ApiError::bad_request(ErrorCode::MissingParameter, format!("{name} is required"))
}

/// The job specification a submission's fields make, with the service's defaults, checked
/// against its limits (a preview reads a submission the same way).
pub(crate) fn spec_of(
    fields: &std::collections::BTreeMap<&'static str, String>,
    state: &AppState,
) -> ApiResult<JobSpec> {
    let settings = &state.settings;
    let defaults = Defaults {
        library: settings.default_library.clone(),
        slices: settings.default_slices,
    };
    let spec = JobSpec::from_fields(|name| fields.get(name).map(String::as_str), &defaults)?;
    check_spec(&spec, state)?;
    Ok(spec)
}

/// Checks `spec` against the service's limits and its webhook against the allow-list.
pub(crate) fn check_spec(spec: &JobSpec, state: &AppState) -> ApiResult<()> {
    let settings = &state.settings;
    spec.check(&settings.limits)?;
    if let Some(webhook) = &spec.webhook {
        let url = tessera_shared::spec::check_webhook(webhook)?;
        if !settings.webhooks.allows(&url) {
            return Err(ApiError::unprocessable(
                ErrorCode::WebhookNotAllowed,
                format!(
                    "webhook host {} is not on this service's allow-list (web.webhooks.allow){}",
                    url.host_str().unwrap_or_default(),
                    if settings.webhooks.secret.get().is_none() {
                        "; webhooks are off here"
                    } else {
                        ""
                    }
                ),
            ));
        }
    }
    Ok(())
}

/// The library `id` names, if `owner` may make mosaics of it: someone else's private library
/// is no library to others (422 unknown_library, as one that does not exist).
pub(crate) async fn usable_library(
    state: &AppState,
    id: &str,
    owner: &Owner,
) -> ApiResult<LibraryRecord> {
    let unknown = || {
        ApiError::unprocessable(
            ErrorCode::UnknownLibrary,
            format!("there is no library {id:?}"),
        )
    };
    if validate_library_id(id).is_err() {
        return Err(unknown());
    }
    match state.platform.libraries().get(id).await {
        Ok(record) if record.visible_to(Some(owner)) => Ok(record),
        Ok(_) | Err(LibraryError::NotFound(_)) => Err(unknown()),
        Err(e) => Err(e.into()),
    }
}

/// Who planning is shared by ([`JobRecord::submitter`]): the key, else the address's network.
fn submitter(key_holder: Option<&Owner>, address: Option<std::net::IpAddr>) -> Option<String> {
    match (key_holder, address) {
        (Some(holder), _) => Some(holder.as_str().to_string()),
        (None, Some(ip)) => Some(format!(
            "address:{}",
            crate::guards::client::limited_network(ip)
        )),
        (None, None) => None,
    }
}

/// Checks everything, then stores the input and the record and sends the request.
pub(crate) async fn enqueue(
    state: &AppState,
    job: Uuid,
    (client, key_holder): (Uuid, Option<Owner>),
    address: Option<std::net::IpAddr>,
    job_asked: Submission,
) -> ApiResult<JobRecord> {
    let owner = key_holder.clone().unwrap_or_else(|| Owner::client(client));
    let settings = &state.settings;
    let Submission {
        image: (image, input_name),
        mut spec,
        chosen,
        sharing,
        event,
    } = job_asked;
    let (tiles, shape) = pinned_library(state, &mut spec, &owner, event.as_ref()).await?;

    let probe = probe_target(&image, settings.max_input_pixels)?;
    let bytes = image.clone();
    let _room = state.decode_memory.room_for(probe.decode_bytes).await?;
    let info = tokio::task::spawn_blocking(move || verify_target(&bytes, &probe))
        .await
        .map_err(ApiError::internal)??;

    let size = spec.size(info.width, info.height, &settings.limits)?;
    let name = spec.library.id.clone();
    let adapted = spec.fit_library(&size, (&name, tiles, shape), |f| chosen.contains(f))?;
    let output = size.output;

    let input_blob = BlobKey::ImageInput { job }.path();
    let platform = &state.platform;
    // Room for the upload, the slices and the result (the raw pixels are about both).
    let needed = image.len() as u64 + u64::from(output.width) * u64::from(output.height) * 3;
    state.require_room(needed, "the job").await?;
    let seat = state
        .admission
        .seat(platform, settings, client, address)
        .await?;
    platform
        .blobs
        .put(&input_blob, image, PutMode::CreateNew)
        .await?;
    let mut record = JobRecord::new(
        job,
        client,
        JobParams {
            spec: spec.clone(),
            input_name: input_name.chars().take(255).collect(),
        },
    );
    record.submitter = submitter(key_holder.as_ref(), address);
    record.key_holder = key_holder;
    record.sharing = sharing;
    record.output = Some(output);
    record.sized_to = Some(size.grid());
    let sized_to = record.sized_to;
    record.adapted = adapted;
    record.library_of_event = event.as_ref().map(|made| made.event);
    // What the submission has cost so far, with the record's own write.
    let spent = platform.accounting.take_job(job) + 1;
    record.transactions.insert("web".into(), spent);
    platform.jobs().create(&record).await?;
    // The client's index of its jobs (the "my jobs" page lists it by prefix).
    platform
        .blobs
        .put(
            &BlobKey::ClientJob { client, job }.path(),
            bytes::Bytes::new(),
            PutMode::Overwrite,
        )
        .await?;
    seat.admitted(job);
    let request = ImageRequest {
        job_id: job,
        input_blob,
        spec,
        sized_to,
        redrive: false,
    };
    if let Err(e) = send_request(platform, client, request, event.map(|made| made.event)).await {
        // The record exists: say why the job will never start rather than leave it queued.
        let _ = platform
            .jobs()
            .update(job, |r| r.fail("the job could not be queued"))
            .await;
        return Err(e.into());
    }
    tracing::info!(
        width = output.width,
        height = output.height,
        format = ?info.format,
        "job queued"
    );
    Ok(record)
}

/// Pins `spec` to its library's version for `owner` and gives its tiles and their shape; an
/// event's mosaic names the version before (the controller makes the next, of the photos'
/// number).
async fn pinned_library(
    state: &AppState,
    spec: &mut JobSpec,
    owner: &Owner,
    event: Option<&EventLibrary>,
) -> ApiResult<(u32, tessera_engine::TileShape)> {
    Ok(match event {
        None => {
            let library = usable_library(state, &spec.library.id, owner).await?;
            spec.library = library.reference();
            (library.tiles, library.tile_shape())
        }
        Some(made) => {
            spec.library.version = made.before.unwrap_or(1);
            (made.tiles, tessera_engine::TileShape::SQUARE)
        }
    })
}

/// Sends the job's `request`, or for an event's mosaic the request to make its library first
/// (the controller then sends the job's).
async fn send_request(
    platform: &tessera_shared::platform::Platform,
    client: Uuid,
    request: ImageRequest,
    event: Option<Uuid>,
) -> Result<(), tessera_shared::storage::StorageError> {
    match event {
        None => platform
            .queue::<ImageRequest>()
            .send(&Envelope::new(client, request))
            .await
            .map(drop),
        Some(event_id) => {
            let request = LibraryRequest {
                event_id,
                job_id: request.job_id,
            };
            platform
                .queue::<LibraryRequest>()
                .send(&Envelope::new(client, request))
                .await
                .map(drop)
        }
    }
}

/// A job's state and progress.
#[utoipa::path(
    get,
    path = "/api/v1/jobs/{id}",
    operation_id = "get_job",
    tag = "jobs",
    params(("id" = Uuid, Path, description = "The job's id")),
    responses(
        (status = 200, description = "The job", body = JobView),
        crate::api::error_sets::LookupErrors,
    ),
)]
pub async fn get(job: RequestedJob, state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let RequestedJob { record, .. } = job;
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(JobView::new(&record, &state.settings.retention)))
}

/// Delete an ended job and everything it holds.
///
/// Removes the job's record, result, preview, zoom tiles and anything left of its upload and
/// slices; afterwards the job answers 404. Only the client that submitted the job may delete it
/// (its tessera_client cookie or X-Client-Id), or for a job submitted with a key, that key (and
/// the operator's key, any job): 403 not_your_job otherwise. A job still running
/// answers 409 job_active. Without a deletion, an ended job is kept for retention.result_days
/// (its expires_at).
#[utoipa::path(
    delete,
    path = "/api/v1/jobs/{id}",
    operation_id = "delete_job",
    tag = "jobs",
    params(
        ("id" = Uuid, Path, description = "The job's id"),
        ("X-Client-Id" = Option<Uuid>, Header, nullable = false, description = "The client that submitted the job (or its tessera_client cookie)."),
    ),
    responses(
        (status = 204, description = "Deleted"),
        crate::api::error_sets::ChangeErrors,
    ),
)]
pub async fn delete(
    req: HttpRequest,
    job: RequestedJob,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    job.check_managed_by(&req, "delete")?;
    let RequestedJob { id, record } = job;
    if !record.state.is_final() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            ErrorCode::JobActive,
            "the job is still running: delete it once it is done or failed",
        ));
    }
    let deleted = delete_job(&*state.platform.blobs, &record)
        .await
        .map_err(ApiError::storage)?;
    tracing::info!(job = %id, blobs = deleted, "job deleted");
    state.changes.changed(id);
    Ok(HttpResponse::NoContent().finish())
}

/// The reason a cancelled job gives.
pub const CANCELLED: &str = "cancelled by the client that submitted it";

/// Cancel a running job.
///
/// The job ends at once as failed, with the reason "cancelled by the client that submitted it";
/// slices already rendering finish and are dropped, and what the job left in storage is freed.
/// Only the client that submitted the job may cancel it (its tessera_client cookie or
/// X-Client-Id), or for a job submitted with a key, that key (and the operator's key, any
/// job): 403 not_your_job otherwise. A job that has already ended answers 409
/// job_ended.
#[utoipa::path(
    post,
    path = "/api/v1/jobs/{id}/cancel",
    operation_id = "cancel_job",
    tag = "jobs",
    params(
        ("id" = Uuid, Path, description = "The job's id"),
        ("X-Client-Id" = Option<Uuid>, Header, nullable = false, description = "The client that submitted the job (or its tessera_client cookie)."),
    ),
    responses(
        (status = 200, description = "Cancelled: the job, failed", body = JobView),
        crate::api::error_sets::ChangeErrors,
    ),
)]
pub async fn cancel(
    req: HttpRequest,
    job: RequestedJob,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    job.check_managed_by(&req, "cancel")?;
    let id = job.id;
    let mut cancelled = false;
    let record = state
        .platform
        .jobs()
        .update(id, |r| {
            cancelled = r.fail(CANCELLED);
            cancelled
        })
        .await?;
    if !cancelled {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            ErrorCode::JobEnded,
            format!("the job has already ended ({})", record.state.as_str()),
        ));
    }
    tracing::info!(job = %id, "job cancelled");
    // Best effort: the reconciler's sweep frees what is left of an ended job anyway.
    if let Err(e) = release_intermediates(&*state.platform.blobs, id, true).await {
        tracing::warn!(job = %id, error = %e, "the cancelled job's intermediates are left to the sweep");
    }
    state.changes.changed(id);
    Ok(HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(JobView::new(&record, &state.settings.retention)))
}
