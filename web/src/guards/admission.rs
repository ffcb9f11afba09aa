//! Who may start a job now: at most so many active jobs per client, per address and in the
//! whole service. The counts and the new job's record are checked and written under one lock,
//! so parallel submissions cannot slip past a quota together.
//!
//! A client's and the service's active jobs are counted from storage (their markers), so they
//! hold across web processes; an address's are counted from the jobs this process admitted,
//! checked against storage when they reach the cap.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Duration;
use tessera_shared::error_code::ErrorCode;

use actix_web::http::StatusCode;
use tokio::sync::{Mutex, MutexGuard};
use uuid::Uuid;

use tessera_shared::keys::BlobKey;
use tessera_shared::platform::Platform;
use tessera_shared::storage::{BlobStoreExt, StorageError};

use crate::api_error::{ApiError, ApiResult};
use crate::web_settings::WebSettings;

/// How long a client over a quota is asked to wait (`Retry-After`).
const RETRY_AFTER: Duration = Duration::from_secs(10);

/// The quotas of active jobs, and the jobs this process admitted by address.
#[derive(Debug, Default)]
pub struct Admission {
    by_address: Mutex<HashMap<IpAddr, Vec<Uuid>>>,
}

/// A place held for one job while its record is written: the lock is held until the job is
/// [`Seat::admitted`] (or the seat is dropped, admitting nothing).
pub struct Seat<'a> {
    held: MutexGuard<'a, HashMap<IpAddr, Vec<Uuid>>>,
    address: Option<IpAddr>,
}

impl Seat<'_> {
    /// The job's record is written: it counts against its address from now on.
    pub fn admitted(mut self, job: Uuid) {
        if let Some(address) = self.address {
            self.held.entry(address).or_default().push(job);
        }
    }
}

impl Admission {
    /// Checks every quota for a new job of `client` from `address` and holds a seat for it; the
    /// next submission waits until this one is admitted or gives up.
    pub async fn seat<'a>(
        &'a self,
        platform: &Platform,
        settings: &WebSettings,
        client: Uuid,
        address: Option<IpAddr>,
    ) -> ApiResult<Seat<'a>> {
        let address = address.map(crate::guards::client::limited_network);
        let mut held = self.by_address.lock().await;
        let quota = settings.max_active_jobs_per_client;
        if quota > 0 {
            let active = platform.jobs().active_of_client(client).await?;
            if active >= quota as usize {
                return Err(over(
                    StatusCode::TOO_MANY_REQUESTS,
                    ErrorCode::TooManyActiveJobs,
                    format!(
                        "{active} of your jobs are still running, the most allowed at once: \
                         submit again when one has ended"
                    ),
                ));
            }
        }
        let quota = settings.max_active_jobs_per_address;
        if quota > 0
            && let Some(address) = address
        {
            let jobs = held.entry(address).or_default();
            if jobs.len() >= quota as usize {
                // Only now are the jobs looked up: the ended ones leave the count.
                let mut running = Vec::with_capacity(jobs.len());
                for job in jobs.drain(..) {
                    match platform
                        .blobs
                        .exists(&BlobKey::ActiveJob { job }.path())
                        .await
                    {
                        Ok(false) => {}
                        Ok(true) | Err(_) => running.push(job),
                    }
                }
                *jobs = running;
            }
            if jobs.len() >= quota as usize {
                return Err(over(
                    StatusCode::TOO_MANY_REQUESTS,
                    ErrorCode::TooManyActiveJobsFromAddress,
                    format!(
                        "{} jobs from your address are still running, the most allowed at \
                         once: submit again when one has ended",
                        jobs.len()
                    ),
                ));
            }
        }
        let cap = settings.max_active_jobs;
        if cap > 0 {
            let active = match platform.blobs.list_all(BlobKey::ACTIVE_JOBS_PREFIX).await {
                Ok(markers) => markers.len(),
                Err(StorageError::NotFound(_)) => 0,
                Err(e) => return Err(e.into()),
            };
            if active >= cap as usize {
                return Err(over(
                    StatusCode::SERVICE_UNAVAILABLE,
                    ErrorCode::ServiceBusy,
                    format!(
                        "the service has {active} jobs running, the most it takes at once: \
                         try again in a while"
                    ),
                ));
            }
        }
        Ok(Seat { held, address })
    }
}

fn over(status: StatusCode, code: ErrorCode, message: String) -> ApiError {
    ApiError::new(status, code, message).retry_after(RETRY_AFTER)
}
