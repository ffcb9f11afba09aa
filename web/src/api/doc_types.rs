//! Types that exist to describe bodies in the API document, below the handlers that answer with
//! them and the document that lists those handlers.

use utoipa::ToSchema;

/// Binary content (an image).
#[derive(ToSchema)]
#[schema(value_type = String, format = Binary)]
pub struct Binary(pub Vec<u8>);
