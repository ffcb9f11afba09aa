//! The `imageresponse` listener: finishes a job's record when the controller reports it done or
//! failed. Idempotent: the record only moves forward and a finished job stays as it finished, so
//! a redelivered response changes nothing.

use std::time::Duration;

use tessera_shared::jobs::{JobError, JobRecord, JobState, OutputSize};
use tessera_shared::messages::{Envelope, ImageResponse, JobOutcome};
use tessera_shared::platform::Platform;
use tessera_shared::runtime::{
    Context, Failure, Listener, ListenerHandle, ListenerSettings, poison,
};
use tessera_shared::storage::StorageError;

use crate::streams::JobChanges;

/// Starts the listener over `platform`'s `imageresponse` queue.
pub async fn start(
    platform: Platform,
    changes: JobChanges,
) -> Result<ListenerHandle, StorageError> {
    let queue = platform.queue::<ImageResponse>();
    let on_poison = {
        let platform = platform.clone();
        let changes = changes.clone();
        poison::hook(move |record| {
            let platform = platform.clone();
            let changes = changes.clone();
            async move {
                let Some(job) = record.job_id else { return };
                let reason = format!("the job's result could not be recorded: {}", record.reason);
                // Storage may be down the moment the message goes: keep trying, in a task of
                // its own.
                tokio::spawn(poison::record_fate(job, move || {
                    let (platform, changes, reason) =
                        (platform.clone(), changes.clone(), reason.clone());
                    async move {
                        match platform
                            .jobs()
                            .update(job, |rec| rec.fail(reason.clone()))
                            .await
                        {
                            Ok(_) | Err(JobError::NotFound(_)) => {
                                changes.changed(job);
                                Ok(())
                            }
                            Err(e) => Err(e),
                        }
                    }
                }));
            }
        })
    };
    let settings = ListenerSettings {
        max_concurrency: 8,
        max_backoff: Duration::from_secs(10),
        ..ListenerSettings::default()
    };
    Listener::new(queue)
        .settings(settings)
        .on_poison(on_poison)
        .start(move |message: Envelope<ImageResponse>, _context: Context| {
            let platform = platform.clone();
            let changes = changes.clone();
            async move {
                let job = message.body.job_id;
                let record = finish(&platform, message.body).await?;
                tracing::info!(%job, state = record.state.as_str(), "job finished");
                crate::pyramid::warm_in_background(platform.blobs.clone(), &record);
                changes.changed(job);
                Ok(())
            }
        })
        .await
}

/// Applies one response to its job's record.
async fn finish(platform: &Platform, response: ImageResponse) -> Result<JobRecord, Failure> {
    let job = response.job_id;
    let result = match response.outcome {
        JobOutcome::Done {
            output_blob,
            width,
            height,
        } => {
            platform
                .jobs()
                .update(job, |rec| {
                    if rec.state.is_final() {
                        return false;
                    }
                    rec.result_blob = Some(output_blob.clone());
                    match &mut rec.output {
                        Some(size) => {
                            size.width = width;
                            size.height = height;
                        }
                        None => {
                            rec.output = Some(OutputSize {
                                width,
                                height,
                                cols: 0,
                                rows: 0,
                            })
                        }
                    }
                    rec.advance(JobState::Done)
                })
                .await
        }
        JobOutcome::Failed { reason } => {
            platform
                .jobs()
                .update(job, |rec| rec.fail(reason.clone()))
                .await
        }
    };
    result.map_err(|e| match e {
        JobError::NotFound(_) => Failure::poison(format!("no record for job {job}")),
        JobError::Corrupt(..) => Failure::poison(e),
        JobError::Storage(e) => Failure::retry_because(format!("job {job}: {e}")),
    })
}
