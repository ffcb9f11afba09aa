//! The queue port's behaviours, as Azure Storage queues define them.
//!
//! Times: a "short" visibility is one second and tests wait a little over two before expecting the
//! message back, since Azure counts whole seconds. Order is never asserted: Azure promises none.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tessera_shared::storage::{
    MAX_BATCH, MAX_MESSAGE_BYTES, MAX_VISIBILITY, MessageUpdate, ReceivedMessage, SendOptions,
    SentMessage, StorageError,
};
use time::OffsetDateTime;

use super::{Backend, unique_queue};

const SHORT: Duration = Duration::from_secs(1);
const LONG: Duration = Duration::from_secs(60);
/// Comfortably past [`SHORT`], on backends that count whole seconds too.
const PAST_SHORT: Duration = Duration::from_millis(2200);
/// How far two clocks' readings of one event may differ (whole-second timestamps).
const SLACK: time::Duration = time::Duration::seconds(2);

async fn new_queue(b: &Backend) -> String {
    let queue = unique_queue();
    b.queues.create_queue(&queue).await.expect("create queue");
    queue
}

async fn send(b: &Backend, queue: &str, body: &str) -> SentMessage {
    b.queues
        .send(queue, body, SendOptions::default())
        .await
        .expect("send")
}

async fn receive_one(b: &Backend, queue: &str, visibility: Duration) -> ReceivedMessage {
    let mut got = b
        .queues
        .receive(queue, 1, visibility)
        .await
        .expect("receive");
    assert_eq!(got.len(), 1, "expected one visible message in {queue}");
    got.remove(0)
}

async fn assert_empty(b: &Backend, queue: &str) {
    let got = b
        .queues
        .receive(queue, MAX_BATCH, LONG)
        .await
        .expect("receive");
    assert!(got.is_empty(), "expected no visible message, got {got:?}");
}

fn close(a: OffsetDateTime, b: OffsetDateTime) -> bool {
    (a - b).abs() <= SLACK
}

/// The one message of `queue`, hidden now, received (for `visibility`) as soon as it is due
/// again (within `PAST_SHORT` or so).
async fn receive_when_due(b: &Backend, queue: &str, visibility: Duration) -> ReceivedMessage {
    crate::support::wait_for(PAST_SHORT * 4, async || {
        let mut got = b
            .queues
            .receive(queue, 1, visibility)
            .await
            .expect("receive");
        got.pop().ok_or(format!("no message due again in {queue}"))
    })
    .await
}

/// The message is still there: after its visibility lapses it comes back.
async fn assert_survives(b: &Backend, queue: &str, id: &str) {
    let again = receive_when_due(b, queue, LONG).await;
    assert_eq!(again.id, id);
}

fn is_stale_receipt(e: &StorageError) -> bool {
    // Azure answers a stale receipt with 400 PopReceiptMismatch, or in some cases 404.
    matches!(
        e,
        StorageError::ReceiptMismatch(_) | StorageError::NotFound(_)
    )
}

pub async fn create_is_idempotent(b: &Backend) {
    let queue = new_queue(b).await;
    send(b, &queue, "kept").await;
    b.queues.create_queue(&queue).await.expect("second create");
    assert_eq!(b.queues.approximate_depth(&queue).await.unwrap(), 1);
    assert_eq!(receive_one(b, &queue, LONG).await.body, "kept");
}

pub async fn list_queues_is_sorted_and_includes_created(b: &Backend) {
    let first = new_queue(b).await;
    let second = new_queue(b).await;
    let names = b.queues.list_queues().await.expect("list");
    assert!(
        names.contains(&first) && names.contains(&second),
        "{names:?}"
    );
    assert!(names.is_sorted(), "not sorted: {names:?}");
}

pub async fn delete_queue_removes_it_and_its_messages(b: &Backend) {
    let queue = new_queue(b).await;
    send(b, &queue, "gone").await;
    b.queues.delete_queue(&queue).await.expect("delete queue");
    assert!(!b.queues.list_queues().await.unwrap().contains(&queue));
    let err = b.queues.receive(&queue, 1, LONG).await.unwrap_err();
    assert!(matches!(err, StorageError::NotFound(_)), "{err:?}");
}

pub async fn missing_queue_is_not_found(b: &Backend) {
    let queue = unique_queue();
    let q = &b.queues;
    let errors = [
        q.send(&queue, "x", SendOptions::default()).await.err(),
        q.receive(&queue, 1, LONG).await.err(),
        q.peek(&queue, 1).await.err(),
        q.approximate_depth(&queue).await.err(),
        q.get_metadata(&queue).await.err(),
        q.set_metadata(&queue, &HashMap::new()).await.err(),
        q.clear(&queue).await.err(),
        q.delete_queue(&queue).await.err(),
    ];
    for (i, err) in errors.into_iter().enumerate() {
        assert!(
            matches!(err, Some(StorageError::NotFound(_))),
            "operation {i} on a missing queue gave {err:?}"
        );
    }
}

pub async fn invalid_queue_names_are_rejected(b: &Backend) {
    let too_long = "a".repeat(64);
    for name in [
        "ab",
        "Upper-case",
        "a--b",
        "-abc",
        "abc-",
        "under_score",
        &too_long,
    ] {
        let err = b.queues.create_queue(name).await.unwrap_err();
        assert!(matches!(err, StorageError::Invalid(_)), "{name}: {err:?}");
        let err = b
            .queues
            .send(name, "x", SendOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(err, StorageError::Invalid(_)), "{name}: {err:?}");
    }
}

pub async fn send_then_receive_round_trips(b: &Backend) {
    let queue = new_queue(b).await;
    let body = "héllo ✓ <tag attr=\"1\"> & 'quotes' {\"json\": [1, 2]}";
    let sent = send(b, &queue, body).await;
    let before = OffsetDateTime::now_utc();
    let got = receive_one(b, &queue, LONG).await;
    assert_eq!(got.id, sent.id);
    assert_eq!(got.body, body);
    assert_eq!(got.dequeue_count, 1);
    assert!(close(got.insertion_time, sent.insertion_time));
    assert!(close(
        got.expiration_time,
        got.insertion_time + time::Duration::days(7)
    ));
    assert!(close(
        got.next_visible,
        before + time::Duration::seconds(60)
    ));
}

pub async fn receive_from_empty_queue_is_empty(b: &Backend) {
    let queue = new_queue(b).await;
    assert_empty(b, &queue).await;
}

pub async fn received_message_is_hidden_from_others(b: &Backend) {
    let queue = new_queue(b).await;
    send(b, &queue, "one").await;
    receive_one(b, &queue, LONG).await;
    assert_empty(b, &queue).await;
    assert!(b.queues.peek(&queue, MAX_BATCH).await.unwrap().is_empty());
}

pub async fn visibility_expiry_redelivers_with_dequeue_count_plus_one(b: &Backend) {
    let queue = new_queue(b).await;
    let sent = send(b, &queue, "again").await;
    let first = receive_one(b, &queue, SHORT).await;
    assert_eq!(first.dequeue_count, 1);
    let second = receive_when_due(b, &queue, LONG).await;
    assert_eq!(second.id, sent.id);
    assert_eq!(second.body, "again");
    assert_eq!(second.dequeue_count, 2);
    assert_ne!(second.pop_receipt, first.pop_receipt);
}

pub async fn delete_removes_message(b: &Backend) {
    let queue = new_queue(b).await;
    send(b, &queue, "done").await;
    let got = receive_one(b, &queue, SHORT).await;
    b.queues
        .delete(&queue, &got.id, &got.pop_receipt)
        .await
        .expect("delete");
    assert_eq!(b.queues.approximate_depth(&queue).await.unwrap(), 0);
    tokio::time::sleep(PAST_SHORT).await;
    assert_empty(b, &queue).await;
}

pub async fn delete_with_stale_receipt_fails(b: &Backend) {
    let queue = new_queue(b).await;
    send(b, &queue, "stale").await;
    let first = receive_one(b, &queue, SHORT).await;
    let second = receive_when_due(b, &queue, SHORT).await;
    let err = b
        .queues
        .delete(&queue, &first.id, &first.pop_receipt)
        .await
        .unwrap_err();
    assert!(is_stale_receipt(&err), "{err:?}");
    assert_survives(b, &queue, &second.id).await;
}

pub async fn update_with_stale_receipt_fails(b: &Backend) {
    let queue = new_queue(b).await;
    send(b, &queue, "stale").await;
    let first = receive_one(b, &queue, SHORT).await;
    let second = receive_when_due(b, &queue, SHORT).await;
    let err = b
        .queues
        .update(
            &queue,
            MessageUpdate::new(&first.id, &first.pop_receipt, LONG, Some("hijack")),
        )
        .await
        .unwrap_err();
    assert!(is_stale_receipt(&err), "{err:?}");
    let third = receive_when_due(b, &queue, LONG).await;
    assert_eq!(third.id, second.id);
    assert_eq!(
        third.body, "stale",
        "a stale update must not change the body"
    );
}

pub async fn update_returns_new_receipt_and_old_goes_stale(b: &Backend) {
    let queue = new_queue(b).await;
    send(b, &queue, "renewed").await;
    let got = receive_one(b, &queue, LONG).await;
    let updated = b
        .queues
        .update(
            &queue,
            MessageUpdate::new(&got.id, &got.pop_receipt, LONG, None),
        )
        .await
        .expect("update");
    assert_ne!(updated.pop_receipt, got.pop_receipt);
    let err = b
        .queues
        .delete(&queue, &got.id, &got.pop_receipt)
        .await
        .unwrap_err();
    assert!(is_stale_receipt(&err), "{err:?}");
    b.queues
        .delete(&queue, &got.id, &updated.pop_receipt)
        .await
        .expect("delete with the new receipt");
    assert_eq!(b.queues.approximate_depth(&queue).await.unwrap(), 0);
}

pub async fn updated_body_is_seen_on_redelivery(b: &Backend) {
    let queue = new_queue(b).await;
    send(b, &queue, "before").await;
    let got = receive_one(b, &queue, LONG).await;
    b.queues
        .update(
            &queue,
            MessageUpdate::new(&got.id, &got.pop_receipt, Duration::ZERO, Some("after ✓")),
        )
        .await
        .expect("update");
    let again = receive_one(b, &queue, LONG).await;
    assert_eq!(again.id, got.id);
    assert_eq!(again.body, "after ✓");
    assert_eq!(again.dequeue_count, 2);
}

pub async fn update_extends_visibility(b: &Backend) {
    let queue = new_queue(b).await;
    send(b, &queue, "lease").await;
    let got = receive_one(b, &queue, SHORT).await;
    let updated = b
        .queues
        .update(
            &queue,
            MessageUpdate::new(&got.id, &got.pop_receipt, LONG, None),
        )
        .await
        .expect("update");
    assert!(updated.next_visible > got.next_visible);
    tokio::time::sleep(PAST_SHORT).await;
    assert_empty(b, &queue).await;
}

pub async fn update_to_zero_makes_visible_now(b: &Backend) {
    let queue = new_queue(b).await;
    send(b, &queue, "release").await;
    let got = receive_one(b, &queue, LONG).await;
    b.queues
        .update(
            &queue,
            MessageUpdate::new(&got.id, &got.pop_receipt, Duration::ZERO, None),
        )
        .await
        .expect("update");
    let again = receive_one(b, &queue, LONG).await;
    assert_eq!(again.id, got.id);
}

pub async fn update_does_not_count_a_dequeue(b: &Backend) {
    let queue = new_queue(b).await;
    send(b, &queue, "count").await;
    let got = receive_one(b, &queue, LONG).await;
    b.queues
        .update(
            &queue,
            MessageUpdate::new(&got.id, &got.pop_receipt, Duration::ZERO, None),
        )
        .await
        .expect("update");
    let peeked = b.queues.peek(&queue, 1).await.unwrap();
    assert_eq!(peeked.len(), 1);
    assert_eq!(peeked[0].dequeue_count, 1);
}

pub async fn delete_of_deleted_message_is_not_found(b: &Backend) {
    let queue = new_queue(b).await;
    send(b, &queue, "twice").await;
    let got = receive_one(b, &queue, LONG).await;
    b.queues
        .delete(&queue, &got.id, &got.pop_receipt)
        .await
        .unwrap();
    let err = b
        .queues
        .delete(&queue, &got.id, &got.pop_receipt)
        .await
        .unwrap_err();
    assert!(matches!(err, StorageError::NotFound(_)), "{err:?}");
}

pub async fn update_of_deleted_message_is_not_found(b: &Backend) {
    let queue = new_queue(b).await;
    send(b, &queue, "gone").await;
    let got = receive_one(b, &queue, LONG).await;
    b.queues
        .delete(&queue, &got.id, &got.pop_receipt)
        .await
        .unwrap();
    let err = b
        .queues
        .update(
            &queue,
            MessageUpdate::new(&got.id, &got.pop_receipt, LONG, None),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StorageError::NotFound(_)), "{err:?}");
}

pub async fn batch_receive_takes_up_to_max(b: &Backend) {
    let queue = new_queue(b).await;
    for i in 0..5 {
        send(b, &queue, &format!("m{i}")).await;
    }
    let first = b.queues.receive(&queue, 3, LONG).await.unwrap();
    assert_eq!(first.len(), 3);
    let rest = b.queues.receive(&queue, MAX_BATCH, LONG).await.unwrap();
    assert_eq!(rest.len(), 2);
    assert!(rest.iter().all(|m| m.dequeue_count == 1));
}

pub async fn batch_limits_are_enforced(b: &Backend) {
    let queue = new_queue(b).await;
    for max in [0, MAX_BATCH + 1] {
        let err = b.queues.receive(&queue, max, LONG).await.unwrap_err();
        assert!(
            matches!(err, StorageError::Invalid(_)),
            "receive {max}: {err:?}"
        );
        let err = b.queues.peek(&queue, max).await.unwrap_err();
        assert!(
            matches!(err, StorageError::Invalid(_)),
            "peek {max}: {err:?}"
        );
    }
    for _ in 0..MAX_BATCH + 2 {
        send(b, &queue, "x").await;
    }
    assert_eq!(
        b.queues.peek(&queue, MAX_BATCH).await.unwrap().len(),
        MAX_BATCH
    );
    assert_eq!(
        b.queues
            .receive(&queue, MAX_BATCH, LONG)
            .await
            .unwrap()
            .len(),
        MAX_BATCH
    );
}

pub async fn visibility_over_seven_days_is_invalid(b: &Backend) {
    let queue = new_queue(b).await;
    let too_long = MAX_VISIBILITY + Duration::from_secs(1);
    let err = b.queues.receive(&queue, 1, too_long).await.unwrap_err();
    assert!(matches!(err, StorageError::Invalid(_)), "{err:?}");
    send(b, &queue, "x").await;
    let got = receive_one(b, &queue, LONG).await;
    let err = b
        .queues
        .update(
            &queue,
            MessageUpdate::new(&got.id, &got.pop_receipt, too_long, None),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StorageError::Invalid(_)), "{err:?}");
}

pub async fn body_over_limit_is_too_large(b: &Backend) {
    let queue = new_queue(b).await;
    let big = "x".repeat(MAX_MESSAGE_BYTES + 1);
    let err = b
        .queues
        .send(&queue, &big, SendOptions::default())
        .await
        .unwrap_err();
    assert!(matches!(err, StorageError::TooLarge { .. }), "{err:?}");
    send(b, &queue, "small").await;
    let got = receive_one(b, &queue, LONG).await;
    let err = b
        .queues
        .update(
            &queue,
            MessageUpdate::new(&got.id, &got.pop_receipt, LONG, Some(&big)),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StorageError::TooLarge { .. }), "{err:?}");
    assert_eq!(b.queues.approximate_depth(&queue).await.unwrap(), 1);
}

pub async fn body_at_limit_round_trips(b: &Backend) {
    let queue = new_queue(b).await;
    let body: String = (0..MAX_MESSAGE_BYTES)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    send(b, &queue, &body).await;
    assert_eq!(receive_one(b, &queue, LONG).await.body, body);
}

pub async fn delay_hides_message_until_due(b: &Backend) {
    let queue = new_queue(b).await;
    let options = SendOptions {
        visibility_delay: SHORT,
        time_to_live: None,
    };
    let sent = b.queues.send(&queue, "later", options).await.unwrap();
    assert!(sent.next_visible > sent.insertion_time);
    assert_empty(b, &queue).await;
    assert!(b.queues.peek(&queue, 1).await.unwrap().is_empty());
    assert_eq!(b.queues.approximate_depth(&queue).await.unwrap(), 1);
    let got = receive_when_due(b, &queue, LONG).await;
    assert_eq!(got.id, sent.id);
    assert_eq!(got.dequeue_count, 1);
}

pub async fn time_to_live_expires_message(b: &Backend) {
    let queue = new_queue(b).await;
    let options = SendOptions {
        visibility_delay: Duration::ZERO,
        time_to_live: Some(SHORT),
    };
    b.queues.send(&queue, "brief", options).await.unwrap();
    send(b, &queue, "lasting").await;
    crate::support::wait_for(PAST_SHORT * 4, async || {
        let peeked = b.queues.peek(&queue, MAX_BATCH).await.unwrap();
        let bodies: Vec<String> = peeked.into_iter().map(|m| m.body).collect();
        if bodies == ["lasting"] {
            Ok(())
        } else {
            Err(format!("still {bodies:?}"))
        }
    })
    .await;
    let got = b.queues.receive(&queue, MAX_BATCH, LONG).await.unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].body, "lasting");
}

pub async fn expiration_time_follows_time_to_live(b: &Backend) {
    let queue = new_queue(b).await;
    let options = SendOptions {
        visibility_delay: Duration::ZERO,
        time_to_live: Some(Duration::from_secs(120)),
    };
    let sent = b.queues.send(&queue, "ttl", options).await.unwrap();
    assert!(close(
        sent.expiration_time,
        sent.insertion_time + time::Duration::seconds(120)
    ));
    let peeked = b.queues.peek(&queue, 1).await.unwrap();
    assert!(close(peeked[0].expiration_time, sent.expiration_time));
}

pub async fn peek_does_not_consume_or_count(b: &Backend) {
    let queue = new_queue(b).await;
    let sent = send(b, &queue, "look").await;
    for _ in 0..2 {
        let peeked = b.queues.peek(&queue, MAX_BATCH).await.unwrap();
        assert_eq!(peeked.len(), 1);
        assert_eq!(peeked[0].id, sent.id);
        assert_eq!(peeked[0].body, "look");
        assert_eq!(peeked[0].dequeue_count, 0);
    }
    let got = receive_one(b, &queue, LONG).await;
    assert_eq!(got.dequeue_count, 1);
}

pub async fn peek_skips_hidden_messages(b: &Backend) {
    let queue = new_queue(b).await;
    send(b, &queue, "first").await;
    let hidden = receive_one(b, &queue, LONG).await;
    send(b, &queue, "second").await;
    let peeked = b.queues.peek(&queue, MAX_BATCH).await.unwrap();
    assert_eq!(peeked.len(), 1);
    assert_ne!(peeked[0].id, hidden.id);
}

pub async fn approximate_depth_counts_hidden_messages(b: &Backend) {
    let queue = new_queue(b).await;
    assert_eq!(b.queues.approximate_depth(&queue).await.unwrap(), 0);
    for i in 0..3 {
        send(b, &queue, &format!("m{i}")).await;
    }
    let got = receive_one(b, &queue, LONG).await;
    assert_eq!(b.queues.approximate_depth(&queue).await.unwrap(), 3);
    b.queues
        .delete(&queue, &got.id, &got.pop_receipt)
        .await
        .unwrap();
    assert_eq!(b.queues.approximate_depth(&queue).await.unwrap(), 2);
}

pub async fn clear_empties_queue(b: &Backend) {
    let queue = new_queue(b).await;
    for i in 0..4 {
        send(b, &queue, &format!("m{i}")).await;
    }
    receive_one(b, &queue, LONG).await;
    b.queues.clear(&queue).await.expect("clear");
    assert_eq!(b.queues.approximate_depth(&queue).await.unwrap(), 0);
    assert!(b.queues.peek(&queue, MAX_BATCH).await.unwrap().is_empty());
    send(b, &queue, "after").await;
    assert_eq!(receive_one(b, &queue, LONG).await.body, "after");
}

pub async fn metadata_round_trips_and_replaces(b: &Backend) {
    let queue = new_queue(b).await;
    let first = HashMap::from([
        ("owner".to_string(), "controller".to_string()),
        ("poisonthreshold".to_string(), "5".to_string()),
    ]);
    b.queues.set_metadata(&queue, &first).await.unwrap();
    assert_eq!(b.queues.get_metadata(&queue).await.unwrap(), first);
    let second = HashMap::from([("role".to_string(), "processor".to_string())]);
    b.queues.set_metadata(&queue, &second).await.unwrap();
    assert_eq!(b.queues.get_metadata(&queue).await.unwrap(), second);
}

pub async fn new_queue_has_empty_metadata(b: &Backend) {
    let queue = new_queue(b).await;
    assert!(b.queues.get_metadata(&queue).await.unwrap().is_empty());
}

pub async fn batch_receive_returns_each_message_once(b: &Backend) {
    let queue = new_queue(b).await;
    let mut sent = HashSet::new();
    for i in 0..10 {
        sent.insert(send(b, &queue, &format!("m{i}")).await.id);
    }
    let got = b.queues.receive(&queue, MAX_BATCH, LONG).await.unwrap();
    let ids: HashSet<String> = got.iter().map(|m| m.id.clone()).collect();
    assert_eq!(ids.len(), got.len(), "a message came twice in one batch");
    assert_eq!(ids, sent);
    let bodies: HashSet<&str> = got.iter().map(|m| m.body.as_str()).collect();
    assert_eq!(bodies.len(), 10);
}

pub async fn concurrent_receivers_never_share_a_message(b: &Backend) {
    let queue = new_queue(b).await;
    let total = 24;
    for i in 0..total {
        send(b, &queue, &format!("m{i}")).await;
    }
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let (store, queue, seen) = (b.queues.clone(), queue.clone(), seen.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..20 {
                let got = store.receive(&queue, 4, LONG).await.unwrap();
                if got.is_empty() {
                    break;
                }
                for m in got {
                    store.delete(&queue, &m.id, &m.pop_receipt).await.unwrap();
                    seen.lock().unwrap().push(m.id);
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let seen = seen.lock().unwrap().clone();
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "a message was delivered twice");
    assert_eq!(seen.len(), total);
}

pub async fn sent_receipt_can_delete(b: &Backend) {
    let queue = new_queue(b).await;
    let sent = send(b, &queue, "unsent").await;
    b.queues
        .delete(&queue, &sent.id, &sent.pop_receipt)
        .await
        .expect("delete with the receipt from send");
    assert_eq!(b.queues.approximate_depth(&queue).await.unwrap(), 0);
}
