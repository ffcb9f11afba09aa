//! What a request's path names by its `{id}` (a job, an event, a library), loaded for the
//! extractors the routes begin with.

use actix_web::{HttpRequest, web};
use futures_util::future::LocalBoxFuture;

use crate::api_error::{ApiError, ApiResult};
use crate::app_state::AppState;

/// Runs `load` with the app state, the request and the path's `{id}` (empty when the route has
/// none), as an extractor's future.
pub(crate) fn load_path_target<T, F, Fut>(
    req: &HttpRequest,
    load: F,
) -> LocalBoxFuture<'static, Result<T, ApiError>>
where
    T: 'static,
    F: FnOnce(web::Data<AppState>, HttpRequest, String) -> Fut + 'static,
    Fut: Future<Output = ApiResult<T>> + 'static,
{
    let id = req.match_info().get("id").unwrap_or_default().to_string();
    let state = req.app_data::<web::Data<AppState>>().cloned();
    let req = req.clone();
    Box::pin(async move {
        let state = state.ok_or_else(|| ApiError::internal("the app state is missing"))?;
        load(state, req, id).await
    })
}

/// Implements `FromRequest` for `$target` with `$load`, a closure of the app state, the request
/// and the path's `{id}` that loads it ([`load_path_target`]).
macro_rules! from_path {
    ($target:ty, $load:expr) => {
        impl actix_web::FromRequest for $target {
            type Error = crate::api_error::ApiError;
            type Future = futures_util::future::LocalBoxFuture<'static, Result<Self, Self::Error>>;

            fn from_request(
                req: &actix_web::HttpRequest,
                _: &mut actix_web::dev::Payload,
            ) -> Self::Future {
                crate::api::path_target::load_path_target(req, $load)
            }
        }
    };
}
pub(crate) use from_path;
