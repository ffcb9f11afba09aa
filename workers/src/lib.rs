//! Tessera's back-end roles, each a set of queue listeners over the storage ports:
//!
//! - the **job controller** ([`run_controller`]) takes `imagerequest`: it loads the upload, makes
//!   the plan for the whole image (so the no-repeat rule holds across slice borders and the output
//!   does not depend on the slice count), stores each slice's rows of the plan as a blob and sends
//!   one `SliceRequest` per slice. On each `sliceresponse` it records the slice in the job record,
//!   decides from storage whether every slice is in, and if so stitches the slices, streaming, into
//!   one PNG and sends the `ImageResponse`;
//!   It also takes `libraryrequest`: an event's mosaic, whose library version it makes from the
//!   event's photos, each prepared once as a tile, before it sends the job's `imagerequest`;
//! - the **image processors** ([`run_processors`]) take `slicerequest`: they render the slice's rows
//!   with the tile library (cached by id and version), write the slice blob and send a
//!   `SliceResponse`;
//!
//! Every handler is idempotent: outputs go to deterministic keys with create-only writes (or
//! rewrites of identical bytes), completion is derived from what exists, and the job record only
//! moves forward, so a message delivered twice, or a process killed at any moment, changes
//! nothing in the result.

mod controller;
mod event_libraries;
mod job_work;
mod photo_preparation;
mod processor;
mod reconciler;
mod role_settings;
mod shares;
mod stitch;

pub use controller::run_controller;
pub use job_work::slice_ranges;
pub use processor::run_processors;
pub use reconciler::{SweepReport, sweep as reconcile_stalled_jobs};
pub use role_settings::{ControllerSettings, JobsSettings, ProcessorSettings};
pub use stitch::{StitchError, convert_output, stitch_png};
pub use tessera_engine::ImportReport;
pub use tessera_shared::library_cache::{LibraryCache, LibraryLoadError};
/// Kept here too for the binary and the tests: the import itself lives in `tessera_shared`.
pub use tessera_shared::library_import::{ImportError, import_library};

use std::sync::Arc;

use tessera_shared::messages::LibraryRef;
use tessera_shared::platform::Platform;
use tessera_shared::runtime::shutdown::Shutdown;

/// A job controller and image processors in one process, sharing one library cache (a decoded
/// library is held once), with `warm` loaded at start so the first job does not wait for it.
pub async fn run_workers(
    platform: Platform,
    controller: ControllerSettings,
    processors: ProcessorSettings,
    warm: Option<LibraryRef>,
    shutdown: Shutdown,
) -> anyhow::Result<()> {
    let libraries = Arc::new(LibraryCache::new(
        platform.libraries(),
        controller.library_cache.max(processors.library_cache),
        controller
            .library_cache_mib
            .max(processors.library_cache_mib)
            << 20,
    ));
    if let Some(library) = warm {
        let cache = libraries.clone();
        tokio::spawn(async move {
            if let Err(e) = cache.get(&library).await {
                tracing::warn!(library = %library.id, error = %e, "tile library not preloaded");
            }
        });
    }
    tokio::try_join!(
        controller::run_controller_with(
            platform.clone(),
            controller,
            libraries.clone(),
            shutdown.clone()
        ),
        processor::run_processors_with(platform, processors, libraries, shutdown),
    )
    .map(|_| ())
}
