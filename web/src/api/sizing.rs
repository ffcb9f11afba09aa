//! `POST /api/v1/sizing`: the mosaic a job would make of a photo of a given size, before the
//! photo is sent: its grid, its pixels and its print, or the refusal the submission would get.
//! The home form shows its figures from here, so that sizing is the server's alone.

use std::collections::BTreeMap;

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Serialize;
use tessera_engine::TileShape;
use tessera_shared::error_code::ErrorCode;
use tessera_shared::spec::{
    JobSpec, MAX_PHOTO_SIDE, NAMED_SIZES, PAPER, named_size, paper_tile, size_names,
};
use utoipa::ToSchema;

use crate::api::job_broker::{declared_field, duplicate, missing, spec_of, usable_library};
use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;
use crate::guards::client::{client_id, owner_of};

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
    /// The most tiles it holds: every cell's, or for adaptive sizes the grid's budget.
    pub tiles: u64,
    /// Whether it is larger than this service makes unasked (`allow_large` was given).
    pub large: bool,
    /// The print, when the job asks for one.
    pub print: Option<PrintedSize>,
    /// The tile size in pixels (`16`, `24x18`): the one given, or the named size's.
    pub tile_size: String,
    /// What the job would be warned of (tiles that print too small to recognise).
    pub warnings: Vec<String>,
    /// What the job would change of the options left at their defaults so that the library
    /// can make it, and why (a library too small for the default repetition radius).
    pub adapted: Vec<String>,
    /// The mosaic of each size by name for this photo and library.
    pub sizes: Vec<NamedFigures>,
}

/// The mosaic of a size by name.
#[derive(Debug, Serialize, ToSchema)]
pub struct NamedFigures {
    /// The size's name (`screen`, `poster`, `print`).
    pub name: &'static str,
    /// The mosaic's width in pixels.
    pub width: u32,
    /// The mosaic's height in pixels.
    pub height: u32,
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
    let SizingFields {
        width,
        height,
        named,
        mut fields,
    } = SizingFields::read(body.into_inner())?;
    let mut spec = spec_of(&fields, &state)?;
    let (client, _) = client_id(&req)?;
    let library = usable_library(&state, &spec.library.id, &owner_of(&req, client)).await?;
    let shape = library.tile_shape();
    let limits = &state.settings.limits;
    let sizes = named_figures((&fields, &spec), &state, width, height, shape);
    if let Some(named) = named {
        name_the_grid(
            &mut fields,
            &named,
            &spec,
            width,
            height,
            shape,
            limits.max_cells,
        )?;
        spec = spec_of(&fields, &state)?;
    }
    let size = spec.size(width, height, limits)?;
    let adapted = spec.fit_library(&size, (&library.id, library.tiles, shape), |name| {
        fields.contains_key(name)
    })?;
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
        tile_size: spec.tile().to_string(),
        tiles: u64::from(size.sizing.cols) * u64::from(size.sizing.rows),
        large: pixels > limits.large_output_pixels,
        print,
        warnings: spec.warnings(),
        adapted,
        sizes,
    }))
}

/// A sizing request's fields: the photo's size, the size by name if one is chosen, and the
/// job's fields.
struct SizingFields {
    width: u32,
    height: u32,
    named: Option<String>,
    fields: BTreeMap<&'static str, String>,
}

impl SizingFields {
    fn read(body: Vec<(String, String)>) -> ApiResult<SizingFields> {
        let (mut width, mut height, mut named) = (None, None, None);
        let mut fields = BTreeMap::new();
        for (name, value) in body {
            match name.as_str() {
                "width" => width = Some(side(&name, &value)?),
                "height" => height = Some(side(&name, &value)?),
                "size" => named = Some(size_name(&value)?),
                _ => {
                    if fields.insert(declared_field(&name)?, value).is_some() {
                        return Err(duplicate(&name));
                    }
                }
            }
        }
        Ok(SizingFields {
            width: width.ok_or_else(|| missing("width"))?,
            height: height.ok_or_else(|| missing("height"))?,
            named,
            fields,
        })
    }
}

/// The grid fields of a size by name, in place of the ones given: the named sizes' tiles and
/// cells, or for `paper` the tile for the print's resolution.
fn name_the_grid(
    fields: &mut BTreeMap<&'static str, String>,
    named: &str,
    spec: &JobSpec,
    width: u32,
    height: u32,
    shape: TileShape,
    max_cells: u32,
) -> ApiResult<()> {
    if named == PAPER {
        fields.insert(
            "tile_size",
            paper_tile(spec.print.as_ref(), shape).to_string(),
        );
        fields.remove("cells");
        fields.remove("per_pixel");
        return Ok(());
    }
    let size = named_size(named).ok_or_else(|| size_refused(named))?;
    let (tile, across) = size
        .grid(width, height, shape, max_cells)
        .map_err(|e| ApiError::unprocessable(ErrorCode::InvalidParameter, e).with_field("size"))?;
    for grid in ["print", "per_pixel"] {
        fields.remove(grid);
    }
    fields.insert("tile_size", tile.to_string());
    fields.insert("cells", across.to_string());
    Ok(())
}

/// Each named size's mosaic for this photo and library, with the job's other fields; a size
/// those fields refuse is left out.
fn named_figures(
    (fields, spec): (&BTreeMap<&'static str, String>, &JobSpec),
    state: &AppState,
    width: u32,
    height: u32,
    shape: TileShape,
) -> Vec<NamedFigures> {
    let limits = &state.settings.limits;
    NAMED_SIZES
        .iter()
        .filter_map(|size| {
            let mut fields = fields.clone();
            name_the_grid(
                &mut fields,
                size.name,
                spec,
                width,
                height,
                shape,
                limits.max_cells,
            )
            .ok()?;
            let output = spec_of(&fields, state)
                .ok()?
                .size(width, height, limits)
                .ok()?
                .output;
            Some(NamedFigures {
                name: size.name,
                width: output.width,
                height: output.height,
            })
        })
        .collect()
}

/// A size by name, as the request gives it: one of [`NAMED_SIZES`] or [`PAPER`].
fn size_name(value: &str) -> ApiResult<String> {
    if value == PAPER || named_size(value).is_some() {
        Ok(value.to_string())
    } else {
        Err(size_refused(value))
    }
}

fn size_refused(value: &str) -> ApiError {
    ApiError::bad_request(
        ErrorCode::InvalidParameter,
        format!("size {value:?}: one of {}", size_names().join(", ")),
    )
    .with_field("size")
}

/// A photo side: a whole number of pixels, 1 to [`MAX_PHOTO_SIDE`].
fn side(name: &str, value: &str) -> ApiResult<u32> {
    value
        .trim()
        .parse::<u32>()
        .ok()
        .filter(|v| (1..=MAX_PHOTO_SIDE).contains(v))
        .ok_or_else(|| {
            ApiError::bad_request(
                ErrorCode::InvalidParameter,
                format!("{name}: the photo's {name} in pixels, 1 to {MAX_PHOTO_SIDE}"),
            )
        })
}
