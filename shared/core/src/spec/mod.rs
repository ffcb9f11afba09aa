//! What a job asks for: one [`JobSpec`] from the door to the processor.
//!
//! Each door builds it once: the web role's multipart form through [`JobSpec::from_fields`],
//! `tessera render` from its flags, the queues by deserializing the `ImageRequest` (which carries
//! it, as do the job record and every `SliceRequest`). It is checked once against the operator's
//! [`JobLimits`] ([`JobSpec::check`]), sized once ([`JobSpec::size`]: cells, rows and output
//! pixels, with the same limits in the web role and the controller), checked against its library
//! once ([`JobSpec::check_library`]) and converted once to the engine's plan options
//! ([`JobSpec::plan_options`]). [`FIELDS`] lists every field a job takes, for the form, the API
//! document and the test that keeps the doors in step.

mod field;
mod fields;
mod job;
mod named_sizes;
mod options;

pub use field::{Field, Kind, Limit, Place, SpecError, Value, field_schema, params_schema};
pub use fields::{
    Choice, FIELDS, JobField, OptionDoc, field, options_document, params, settings_in_words,
    sizing_schema, submission_schema,
};
pub use job::*;
pub use named_sizes::{
    MAX_PHOTO_SIDE, MIN_SHORT_CELLS, NAMED_SIZES, NamedSize, PAPER, named_size, paper_tile,
    size_names, thousands,
};
pub use options::{DEFAULT_FORM, OptionValue, RenderOptions, WithOptions};
