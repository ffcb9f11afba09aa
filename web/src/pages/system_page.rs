//! The System page: queue depths, the running roles and where they run.

use super::page_answer::page;
use super::words::moment;
use crate::api::system_status::{QueueDepth, SystemView, queue_depths, system_view};
use crate::api_error::ApiResult;
use crate::app_state::AppState;
use actix_web::{HttpResponse, web};
use askama::Template;

#[derive(Template)]
#[template(path = "system.html")]
pub(super) struct SystemPage {
    queues: Vec<QueueDepth>,
    total: u64,
    targets: Vec<(String, u64)>,
    seen: SystemView,
    /// `(id, last seen, slices, slots)` of each processor.
    processors: Vec<(String, (String, String), u32, u32)>,
    /// `(listener, last seen)` of each process listening for slices.
    listeners: Vec<(String, (String, String))>,
    /// Each running process, with when it started.
    roles: Vec<(tessera_shared::registry::RoleRegistration, (String, String))>,
    /// Whether the service has a key (then the page offers to sign out).
    signed_in: bool,
}

pub(super) async fn system(state: web::Data<AppState>) -> ApiResult<HttpResponse> {
    let queues = queue_depths(&state).await?;
    let snapshot = state.platform.accounting.snapshot();
    let targets = snapshot
        .by_target
        .iter()
        .map(|(target, ops)| (target.clone(), ops.values().sum()))
        .collect();
    let seen = system_view(&state).await?;
    let processors = seen
        .processors
        .iter()
        .map(|p| (p.id.clone(), moment(p.last_seen), p.slices, p.slots))
        .collect();
    let listeners = seen
        .slice_listeners
        .iter()
        .map(|l| (l.listener.clone(), moment(l.last_seen)))
        .collect();
    let roles = seen
        .roles
        .iter()
        .map(|r| (r.clone(), moment(r.started_at)))
        .collect();
    page(&SystemPage {
        queues,
        total: snapshot.total,
        targets,
        seen,
        processors,
        listeners,
        roles,
        signed_in: state.guard.required(),
    })
}
