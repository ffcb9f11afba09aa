//! What the middleware learns of a request and hands to the handlers.

/// Marks a request that came as HEAD (and is routed as GET): a handler may skip making a body
/// nobody will receive.
#[derive(Debug, Clone, Copy)]
pub struct HeadRequest;
