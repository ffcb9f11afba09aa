//! One conformance suite per storage port, run against every backend.
//!
//! Each behaviour is an `async fn(&Backend)` in [`queues`] or [`blobs`]. A backend joins the suite
//! with a factory, `async fn() -> Backend`, and one line per port in its own module:
//!
//! ```ignore
//! // tests/it/conformance/azure.rs (declared with `mod azure;` at the end of this file)
//! use super::Backend;
//!
//! async fn backend() -> Backend {
//!     let storage = /* connect to Azurite */;
//!     Backend::new(storage.queues(), storage.blobs(), ())
//! }
//!
//! mod queues { queue_conformance!(super::backend); }
//! mod blobs { blob_conformance!(super::backend); }
//! ```
//!
//! Each expands to one `#[tokio::test]` per behaviour (`conformance::azure::queues::<name>`), each
//! calling the factory afresh. Every test makes its own uniquely named queue (`t-<12 hex>`) and blob
//! container (`c-<12 hex>`), keeps queues shallow, and asserts only what Azure Storage documents,
//! so the same tests hold against Azurite.

use std::any::Any;
use std::sync::Arc;

use tessera_shared::storage::{BlobStore, QueueStore};

pub mod blobs;
pub mod queues;

/// A backend under test: both stores, and whatever must live as long as the test (a temporary
/// folder, a server handle).
pub struct Backend {
    pub queues: Arc<dyn QueueStore>,
    pub blobs: Arc<dyn BlobStore>,
    _keep: Box<dyn Any + Send + Sync>,
}

impl Backend {
    pub fn new(
        queues: Arc<dyn QueueStore>,
        blobs: Arc<dyn BlobStore>,
        keep: impl Any + Send + Sync,
    ) -> Self {
        Backend {
            queues,
            blobs,
            _keep: Box::new(keep),
        }
    }
}

/// A queue name no other test uses.
pub fn unique_queue() -> String {
    crate::support::unique_name("t")
}

/// A blob container name no other test uses.
pub fn unique_container() -> String {
    crate::support::unique_name("c")
}

/// Expands to one test per behaviour listed, each calling `$factory` for a fresh backend.
macro_rules! conformance_tests {
    ($factory:path, $port:ident, [$($name:ident),* $(,)?]) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let backend = $factory().await;
                $crate::conformance::$port::$name(&backend).await;
            }
        )*
    };
}

/// Every queue behaviour, as tests against the backend `$factory` makes.
#[allow(unused_macros)]
macro_rules! queue_conformance {
    ($factory:path) => {
        conformance_tests!(
            $factory,
            queues,
            [
                create_is_idempotent,
                list_queues_is_sorted_and_includes_created,
                delete_queue_removes_it_and_its_messages,
                missing_queue_is_not_found,
                invalid_queue_names_are_rejected,
                send_then_receive_round_trips,
                receive_from_empty_queue_is_empty,
                received_message_is_hidden_from_others,
                visibility_expiry_redelivers_with_dequeue_count_plus_one,
                delete_removes_message,
                delete_with_stale_receipt_fails,
                update_with_stale_receipt_fails,
                update_returns_new_receipt_and_old_goes_stale,
                updated_body_is_seen_on_redelivery,
                update_extends_visibility,
                update_to_zero_makes_visible_now,
                update_does_not_count_a_dequeue,
                delete_of_deleted_message_is_not_found,
                update_of_deleted_message_is_not_found,
                batch_receive_takes_up_to_max,
                batch_limits_are_enforced,
                visibility_over_seven_days_is_invalid,
                body_over_limit_is_too_large,
                body_at_limit_round_trips,
                delay_hides_message_until_due,
                time_to_live_expires_message,
                expiration_time_follows_time_to_live,
                peek_does_not_consume_or_count,
                peek_skips_hidden_messages,
                approximate_depth_counts_hidden_messages,
                clear_empties_queue,
                metadata_round_trips_and_replaces,
                new_queue_has_empty_metadata,
                batch_receive_returns_each_message_once,
                concurrent_receivers_never_share_a_message,
                sent_receipt_can_delete,
            ]
        );
    };
}

/// Every blob behaviour, as tests against the backend `$factory` makes.
#[allow(unused_macros)]
macro_rules! blob_conformance {
    ($factory:path) => {
        conformance_tests!(
            $factory,
            blobs,
            [
                put_then_get_round_trips,
                get_of_missing_blob_is_not_found,
                head_reports_size_etag_and_time,
                put_returns_what_head_reports,
                overwrite_replaces_content_and_etag,
                create_new_fails_when_blob_exists,
                create_new_is_exclusive_under_concurrent_writers,
                create_new_after_delete_succeeds,
                if_match_with_current_etag_succeeds,
                if_match_with_stale_etag_fails,
                if_match_on_missing_blob_fails,
                if_match_is_exclusive_under_concurrent_writers,
                concurrent_overwrites_leave_one_whole_value,
                readers_never_see_a_partial_overwrite,
                delete_removes_blob,
                delete_of_missing_blob_is_not_found,
                get_range_returns_the_slice,
                get_range_past_the_end_is_cut,
                empty_blob_round_trips,
                binary_content_round_trips,
                nested_names_and_unusual_characters_work,
                invalid_keys_are_rejected,
                list_by_prefix_is_in_key_order,
                list_pages_with_continuation,
                list_prefix_is_not_a_folder_boundary,
                list_of_unmatched_prefix_is_empty,
                list_items_carry_metadata,
                list_forgets_deleted_blobs,
                large_upload_round_trips,
                upload_is_invisible_until_finish,
                upload_abort_leaves_key_untouched,
                upload_replaces_existing_blob,
                upload_of_many_small_chunks_round_trips,
            ]
        );
    };
}

mod azure;
mod embedded;
