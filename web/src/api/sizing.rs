//! `POST /api/v1/sizing`: the mosaic a job would make of a photo of a given size, before the
//! photo is sent: its grid, its pixels and its print, or the refusal the submission would get.
//! The home form shows its figures from here, so that sizing is the server's alone.

use std::collections::BTreeMap;

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Serialize;
use tessera_shared::error_code::ErrorCode;
use tessera_shared::spec::FIELDS;
use utoipa::ToSchema;

use crate::api::job_broker::{spec_of, usable_library};
use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;
use crate::guards::client::{client_id, owner_of};

/// The largest photo side the route sizes for, in pixels.
const MAX_SIDE: u32 = 1 << 20;

/// The mosaic a job would make.
#[derive(Debug, Serialize, ToSchema)]
pub struct Sizing {
    /// Cells across (for adaptive sizes, of the smallest square).
    pub cols: u32,
    /// Cells down.
    pub rows: u32,
    /// The mosaic's width in pixels.
    pub width: u32,
    /// The mosaic's height in pixels.
    pub height: u32,
    /// Whether it is larger than this service makes unasked (`allow_large` was given).
    pub large: bool,
    /// The print, when the job asks for one.
    pub print: Option<PrintedSize>,
    /// What the job would be warned of (tiles that print too small to recognise).
    pub warnings: Vec<String>,
}

/// A mosaic on paper.
#[derive(Debug, Serialize, ToSchema)]
pub struct PrintedSize {
    /// The mosaic's width in centimetres.
    pub width_cm: f64,
    /// The mosaic's height in centimetres.
    pub height_cm: f64,
    /// A tile's width in centimetres.
    pub tile_cm: f64,
    /// The resolution.
    pub dpi: u32,
}

/// A sizing request (`application/x-www-form-urlencoded`): the photo's size and the fields of a
/// job submission. Its schema in the API document is the submission's, with the photo's size
/// in place of the photo (`spec::sizing_schema`); this type only names it.
#[derive(ToSchema)]
pub struct SizingRequest {
    /// The photo's width in pixels, upright.
    pub width: u32,
    /// The photo's height in pixels, upright.
    pub height: u32,
}

/// Size a mosaic before submitting it.
///
/// Takes the photo's size (`width`, `height`, upright) and any fields of a job submission, and
/// answers the grid, pixels and print the job would make, or the error a
/// submission with those fields and a photo of that size would get (with the field to change).
#[utoipa::path(
    post,
    path = "/api/v1/sizing",
    operation_id = "size_job",
    tag = "jobs",
    params(("X-Client-Id" = Option<Uuid>, Header, nullable = false, description = "The client id; otherwise the tessera_client cookie.")),
    request_body(content = SizingRequest, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "The mosaic the job would make", body = Sizing),
        (status = 400, response = crate::api_error::ErrorBody),
        (status = 415, response = crate::api_error::ErrorBody),
        (status = 422, response = crate::api_error::ErrorBody),
        crate::api::error_sets::StorageErrors,
    ),
)]
pub async fn create(
    req: HttpRequest,
    body: web::Form<Vec<(String, String)>>,
    state: web::Data<AppState>,
) -> ApiResult<HttpResponse> {
    let (mut width, mut height) = (None, None);
    let mut fields = BTreeMap::new();
    for (name, value) in body.into_inner() {
        let slot = match name.as_str() {
            "width" => &mut width,
            "height" => &mut height,
            _ => {
                let field = FIELDS.iter().find(|f| f.name == name).ok_or_else(|| {
                    ApiError::bad_request(
                        ErrorCode::UnknownField,
                        format!("unknown field {name:?}"),
                    )
                })?;
                if fields.insert(field.name, value).is_some() {
                    return Err(ApiError::bad_request(
                        ErrorCode::DuplicateField,
                        format!("field {name:?} is given more than once"),
                    ));
                }
                continue;
            }
        };
        *slot = Some(side(&name, &value)?);
    }
    let missing = |name: &str| {
        ApiError::bad_request(ErrorCode::MissingParameter, format!("{name} is required"))
    };
    let (width, height) = (
        width.ok_or_else(|| missing("width"))?,
        height.ok_or_else(|| missing("height"))?,
    );
    let spec = spec_of(&fields, &state)?;
    let (client, _) = client_id(&req)?;
    let library = usable_library(&state, &spec.library.id, &owner_of(&req, client)).await?;
    let limits = &state.settings.limits;
    let size = spec.size(width, height, limits)?;
    spec.check_library(&size, &library.id, library.tiles, library.tile_shape())?;
    let output = size.output;
    let print = spec.print.map(|print| PrintedSize {
        width_cm: tessera_shared::print::cm(output.width, print.dpi),
        height_cm: tessera_shared::print::cm(output.height, print.dpi),
        tile_cm: tessera_shared::print::cm(spec.tile().width, print.dpi),
        dpi: print.dpi,
    });
    let pixels = u64::from(output.width) * u64::from(output.height);
    Ok(HttpResponse::Ok().json(Sizing {
        cols: output.cols,
        rows: output.rows,
        width: output.width,
        height: output.height,
        large: pixels > limits.large_output_pixels,
        print,
        warnings: spec.warnings(),
    }))
}

/// A photo side: a whole number of pixels, 1 to [`MAX_SIDE`].
fn side(name: &str, value: &str) -> ApiResult<u32> {
    value
        .trim()
        .parse::<u32>()
        .ok()
        .filter(|v| (1..=MAX_SIDE).contains(v))
        .ok_or_else(|| {
            ApiError::bad_request(
                ErrorCode::InvalidParameter,
                format!("{name}: the photo's {name} in pixels, 1 to {MAX_SIDE}"),
            )
        })
}
