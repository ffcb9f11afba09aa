//! The `imageresponse` listener: when the controller reports a job done or failed, tells the
//! pages and event streams, wakes the webhook sender, and starts the viewer's zoom tiles. The controller alone writes a
//! job's outcome (before it sends the response); this listener only reads it, so a redelivered
//! response changes nothing.

use std::time::Duration;

use tessera_shared::jobs::{JobError, JobRecord, JobState};
use tessera_shared::messages::{Envelope, ImageResponse, JobOutcome};
use tessera_shared::platform::Platform;
use tessera_shared::runtime::{
    Context, Failure, Listener, ListenerHandle, ListenerSettings, poison,
};
use tessera_shared::storage::StorageError;

use crate::background::job_streams::JobChanges;

/// Starts the listener over `platform`'s `imageresponse` queue.
pub async fn start(
    platform: Platform,
    changes: JobChanges,
    outbox: std::sync::Arc<tokio::sync::Notify>,
) -> Result<ListenerHandle, StorageError> {
    let queue = platform.queue::<ImageResponse>();
    // The job's outcome is in its record before its response is sent: a response set aside
    // changes nothing but the page's news of it.
    let on_poison = {
        let changes = changes.clone();
        poison::hook(move |record| {
            let changes = changes.clone();
            async move {
                if let Some(job) = record.job_id {
                    tracing::warn!(%job, reason = %record.reason, "a job's response was set aside");
                    changes.changed(job);
                }
            }
        })
    };
    let settings = ListenerSettings {
        max_concurrency: 8,
        // A response comes after its outcome is written: one read early is soon read again.
        max_retry_delay: Duration::from_secs(5),
        ..ListenerSettings::default()
    };
    Listener::new(queue)
        .settings(settings)
        .on_poison(on_poison)
        .start(move |message: Envelope<ImageResponse>, _context: Context| {
            let platform = platform.clone();
            let changes = changes.clone();
            let outbox = outbox.clone();
            async move {
                let job = message.body.job_id;
                let record = ended(&platform, &message.body).await?;
                tracing::info!(%job, state = record.state.as_str(), "job finished");
                crate::imaging::zoom_levels::warm_in_background(platform.blobs.clone(), &record);
                if record.params.spec.webhook.is_some() {
                    // Its notification is in the outbox: send it now.
                    outbox.notify_one();
                }
                changes.changed(job);
                Ok(())
            }
        })
        .await
}

/// The record of the job a response reports ended. The controller writes a job's outcome
/// before it sends the response, so a record that has not ended is read again later.
async fn ended(platform: &Platform, response: &ImageResponse) -> Result<JobRecord, Failure> {
    let job = response.job_id;
    let record = platform.jobs().get(job).await.map_err(|e| match e {
        JobError::NotFound(_) => Failure::poison(format!("no record for job {job}")),
        JobError::Corrupt(..) => Failure::poison(e),
        JobError::Storage(e) => Failure::retry_because(format!("job {job}: {e}")),
    })?;
    let reported = match response.outcome {
        JobOutcome::Done { .. } => JobState::Done,
        JobOutcome::Failed { .. } => JobState::Failed,
    };
    if !record.state.is_final() {
        return Err(Failure::retry_because(format!(
            "job {job} is reported {} but its record says {}",
            reported.as_str(),
            record.state.as_str()
        )));
    }
    Ok(record)
}
