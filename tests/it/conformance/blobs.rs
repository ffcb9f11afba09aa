//! The blob port's behaviours, as Azure Blob Storage defines them.

use std::sync::Arc;

use bytes::Bytes;
use tessera_shared::storage::{BlobMeta, BlobStoreExt, PutMode, StorageError};
use time::OffsetDateTime;

use super::{Backend, unique_container};

fn key(container: &str, name: &str) -> String {
    format!("{container}/{name}")
}

async fn put(b: &Backend, key: &str, data: &[u8]) -> BlobMeta {
    b.blobs
        .put(key, Bytes::copy_from_slice(data), PutMode::Overwrite)
        .await
        .unwrap_or_else(|e| panic!("put {key}: {e}"))
}

/// Bytes that differ from their neighbours, so a misplaced chunk shows.
fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

async fn keys_under(b: &Backend, prefix: &str) -> Vec<String> {
    b.blobs
        .list_all(prefix)
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.key)
        .collect()
}

fn uniform(data: &[u8]) -> bool {
    data.iter().all(|&byte| byte == data[0])
}

pub async fn put_then_get_round_trips(b: &Backend) {
    let k = key(&unique_container(), "hello.txt");
    put(b, &k, b"hello, mosaic").await;
    assert_eq!(b.blobs.get(&k).await.unwrap(), &b"hello, mosaic"[..]);
}

pub async fn get_of_missing_blob_is_not_found(b: &Backend) {
    let container = unique_container();
    let missing_container = key(&container, "nothing");
    let err = b.blobs.get(&missing_container).await.unwrap_err();
    assert!(matches!(err, StorageError::NotFound(_)), "{err:?}");
    put(b, &key(&container, "something"), b"x").await;
    for k in [
        key(&container, "nothing"),
        key(&container, "something/below"),
    ] {
        let err = b.blobs.get(&k).await.unwrap_err();
        assert!(matches!(err, StorageError::NotFound(_)), "{k}: {err:?}");
        let err = b.blobs.head(&k).await.unwrap_err();
        assert!(matches!(err, StorageError::NotFound(_)), "{k}: {err:?}");
        let err = b.blobs.get_range(&k, 0..1).await.unwrap_err();
        assert!(matches!(err, StorageError::NotFound(_)), "{k}: {err:?}");
        assert!(!b.blobs.exists(&k).await.unwrap());
    }
}

pub async fn head_reports_size_etag_and_time(b: &Backend) {
    let k = key(&unique_container(), "data.bin");
    put(b, &k, &[7u8; 1234]).await;
    let meta = b.blobs.head(&k).await.unwrap();
    assert_eq!(meta.key, k);
    assert_eq!(meta.size, 1234);
    assert!(!meta.etag.is_empty());
    let age = OffsetDateTime::now_utc() - meta.last_modified;
    assert!(
        age.abs() < time::Duration::seconds(30),
        "last modified {age} ago"
    );
    assert!(b.blobs.exists(&k).await.unwrap());
}

pub async fn put_returns_what_head_reports(b: &Backend) {
    let k = key(&unique_container(), "a/b.json");
    let put_meta = put(b, &k, b"{\"x\":1}").await;
    let head = b.blobs.head(&k).await.unwrap();
    assert_eq!(put_meta.etag, head.etag);
    assert_eq!(put_meta.size, head.size);
    assert_eq!(put_meta.key, head.key);
}

pub async fn overwrite_replaces_content_and_etag(b: &Backend) {
    let k = key(&unique_container(), "doc");
    let first = put(b, &k, b"version one").await;
    let second = put(b, &k, b"v2").await;
    assert_ne!(first.etag, second.etag);
    assert_eq!(b.blobs.get(&k).await.unwrap(), &b"v2"[..]);
    assert_eq!(b.blobs.head(&k).await.unwrap().size, 2);
    let third = put(b, &k, b"v2").await;
    assert_ne!(
        second.etag, third.etag,
        "the same bytes written again are a new version"
    );
}

pub async fn create_new_fails_when_blob_exists(b: &Backend) {
    let k = key(&unique_container(), "once");
    let created = b
        .blobs
        .put(&k, Bytes::from_static(b"first"), PutMode::CreateNew)
        .await
        .expect("first create");
    let err = b
        .blobs
        .put(&k, Bytes::from_static(b"second"), PutMode::CreateNew)
        .await
        .unwrap_err();
    assert!(matches!(err, StorageError::AlreadyExists(_)), "{err:?}");
    assert_eq!(b.blobs.get(&k).await.unwrap(), &b"first"[..]);
    assert_eq!(b.blobs.head(&k).await.unwrap().etag, created.etag);
}

pub async fn create_new_is_exclusive_under_concurrent_writers(b: &Backend) {
    let k = key(&unique_container(), "race/winner");
    let mut tasks = Vec::new();
    for i in 0..8u8 {
        let (store, k) = (b.blobs.clone(), k.clone());
        tasks.push(tokio::spawn(async move {
            let data = Bytes::from(vec![i; 100_000]);
            (i, store.put(&k, data, PutMode::CreateNew).await)
        }));
    }
    let mut winners = Vec::new();
    for task in tasks {
        match task.await.unwrap() {
            (i, Ok(_)) => winners.push(i),
            (_, Err(StorageError::AlreadyExists(_))) => {}
            (i, Err(e)) => panic!("writer {i}: {e:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "winners: {winners:?}");
    let data = b.blobs.get(&k).await.unwrap();
    assert_eq!(data.len(), 100_000);
    assert!(data.iter().all(|&byte| byte == winners[0]));
}

pub async fn create_new_after_delete_succeeds(b: &Backend) {
    let k = key(&unique_container(), "again");
    b.blobs
        .put(&k, Bytes::from_static(b"one"), PutMode::CreateNew)
        .await
        .unwrap();
    b.blobs.delete(&k).await.unwrap();
    b.blobs
        .put(&k, Bytes::from_static(b"two"), PutMode::CreateNew)
        .await
        .expect("create after delete");
    assert_eq!(b.blobs.get(&k).await.unwrap(), &b"two"[..]);
}

pub async fn if_match_with_current_etag_succeeds(b: &Backend) {
    let k = key(&unique_container(), "record.json");
    let first = put(b, &k, b"{\"state\":\"queued\"}").await;
    let second = b
        .blobs
        .put(
            &k,
            Bytes::from_static(b"{\"state\":\"done\"}"),
            PutMode::IfMatch(first.etag.clone()),
        )
        .await
        .expect("conditional put");
    assert_ne!(second.etag, first.etag);
    assert_eq!(b.blobs.get(&k).await.unwrap(), &b"{\"state\":\"done\"}"[..]);
}

pub async fn if_match_with_stale_etag_fails(b: &Backend) {
    let k = key(&unique_container(), "record.json");
    let first = put(b, &k, b"one").await;
    put(b, &k, b"two").await;
    let err = b
        .blobs
        .put(
            &k,
            Bytes::from_static(b"three"),
            PutMode::IfMatch(first.etag),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StorageError::Precondition(_)), "{err:?}");
    assert_eq!(b.blobs.get(&k).await.unwrap(), &b"two"[..]);
}

pub async fn if_match_on_missing_blob_fails(b: &Backend) {
    let container = unique_container();
    let other = put(b, &key(&container, "other"), b"x").await;
    let k = key(&container, "missing");
    let err = b
        .blobs
        .put(&k, Bytes::from_static(b"x"), PutMode::IfMatch(other.etag))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StorageError::Precondition(_) | StorageError::NotFound(_)
        ),
        "{err:?}"
    );
    assert!(!b.blobs.exists(&k).await.unwrap());
}

pub async fn if_match_is_exclusive_under_concurrent_writers(b: &Backend) {
    let k = key(&unique_container(), "counter");
    let base = put(b, &k, b"0").await;
    let mut tasks = Vec::new();
    for i in 1..=8u8 {
        let (store, k, etag) = (b.blobs.clone(), k.clone(), base.etag.clone());
        tasks.push(tokio::spawn(async move {
            let data = Bytes::from(vec![b'0' + i; 50_000]);
            (i, store.put(&k, data, PutMode::IfMatch(etag)).await)
        }));
    }
    let mut winners = Vec::new();
    for task in tasks {
        match task.await.unwrap() {
            (i, Ok(meta)) => winners.push((i, meta)),
            (_, Err(StorageError::Precondition(_))) => {}
            (i, Err(e)) => panic!("writer {i}: {e:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "more than one conditional write won");
    let (winner, meta) = &winners[0];
    let data = b.blobs.get(&k).await.unwrap();
    assert!(data.len() == 50_000 && data.iter().all(|&byte| byte == b'0' + winner));
    assert_eq!(b.blobs.head(&k).await.unwrap().etag, meta.etag);
}

pub async fn concurrent_overwrites_leave_one_whole_value(b: &Backend) {
    let k = key(&unique_container(), "contended");
    let mut tasks = Vec::new();
    for i in 0..8u8 {
        let (store, k) = (b.blobs.clone(), k.clone());
        tasks.push(tokio::spawn(async move {
            let data = Bytes::from(vec![i; 200_000]);
            store.put(&k, data, PutMode::Overwrite).await.unwrap()
        }));
    }
    let mut etags = Vec::new();
    for task in tasks {
        etags.push(task.await.unwrap().etag);
    }
    let data = b.blobs.get(&k).await.unwrap();
    assert_eq!(data.len(), 200_000);
    assert!(uniform(&data), "the blob mixes two writes");
    assert!(etags.contains(&b.blobs.head(&k).await.unwrap().etag));
}

pub async fn readers_never_see_a_partial_overwrite(b: &Backend) {
    let k = key(&unique_container(), "flipping");
    put(b, &k, &vec![b'a'; 300_000]).await;
    let writer = {
        let (store, k) = (b.blobs.clone(), k.clone());
        tokio::spawn(async move {
            for i in 0..20 {
                let byte = if i % 2 == 0 { b'b' } else { b'a' };
                store
                    .put(&k, Bytes::from(vec![byte; 300_000]), PutMode::Overwrite)
                    .await
                    .unwrap();
            }
        })
    };
    for _ in 0..30 {
        let data = b.blobs.get(&k).await.unwrap();
        assert_eq!(data.len(), 300_000);
        assert!(uniform(&data), "a reader saw a partial write");
    }
    writer.await.unwrap();
}

pub async fn delete_removes_blob(b: &Backend) {
    let container = unique_container();
    let k = key(&container, "doomed");
    let kept = key(&container, "kept");
    put(b, &k, b"bye").await;
    put(b, &kept, b"stay").await;
    b.blobs.delete(&k).await.expect("delete");
    assert!(matches!(
        b.blobs.get(&k).await.unwrap_err(),
        StorageError::NotFound(_)
    ));
    assert!(!b.blobs.exists(&k).await.unwrap());
    assert_eq!(b.blobs.get(&kept).await.unwrap(), &b"stay"[..]);
}

pub async fn delete_of_missing_blob_is_not_found(b: &Backend) {
    let container = unique_container();
    put(b, &key(&container, "present"), b"x").await;
    let err = b
        .blobs
        .delete(&key(&container, "absent"))
        .await
        .unwrap_err();
    assert!(matches!(err, StorageError::NotFound(_)), "{err:?}");
}

pub async fn get_range_returns_the_slice(b: &Backend) {
    let k = key(&unique_container(), "range");
    let data = pattern(10_000, 1);
    put(b, &k, &data).await;
    assert_eq!(b.blobs.get_range(&k, 0..10).await.unwrap(), &data[0..10]);
    assert_eq!(
        b.blobs.get_range(&k, 4096..8192).await.unwrap(),
        &data[4096..8192]
    );
    assert_eq!(
        b.blobs.get_range(&k, 9_999..10_000).await.unwrap(),
        &data[9_999..]
    );
}

pub async fn get_range_past_the_end_is_cut(b: &Backend) {
    let k = key(&unique_container(), "short");
    put(b, &k, b"0123456789").await;
    assert_eq!(
        b.blobs.get_range(&k, 5..1_000).await.unwrap(),
        &b"56789"[..]
    );
    assert_eq!(
        b.blobs.get_range(&k, 0..u64::MAX).await.unwrap(),
        &b"0123456789"[..]
    );
}

pub async fn empty_blob_round_trips(b: &Backend) {
    let k = key(&unique_container(), "empty");
    let meta = put(b, &k, b"").await;
    assert_eq!(meta.size, 0);
    assert!(b.blobs.get(&k).await.unwrap().is_empty());
    assert_eq!(b.blobs.head(&k).await.unwrap().size, 0);
}

pub async fn binary_content_round_trips(b: &Backend) {
    let k = key(&unique_container(), "bytes.bin");
    let data: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    put(b, &k, &data).await;
    assert_eq!(b.blobs.get(&k).await.unwrap(), &data[..]);
}

pub async fn nested_names_and_unusual_characters_work(b: &Backend) {
    let container = unique_container();
    // A blob and a "folder" of the same name, names that look like suffixes, spaces, non-ASCII.
    let names = [
        "dir/x",
        "dir/x/y",
        "dir/x.d",
        "dir/x.b",
        ".hidden",
        "with space/ünïcode ✓.json",
    ];
    for (i, name) in names.iter().enumerate() {
        put(b, &key(&container, name), format!("blob {i}").as_bytes()).await;
    }
    for (i, name) in names.iter().enumerate() {
        let got = b.blobs.get(&key(&container, name)).await.unwrap();
        assert_eq!(got, format!("blob {i}").as_bytes(), "{name}");
    }
    let mut expected: Vec<String> = names.iter().map(|n| key(&container, n)).collect();
    expected.sort();
    assert_eq!(keys_under(b, &format!("{container}/")).await, expected);
}

pub async fn invalid_keys_are_rejected(b: &Backend) {
    let c = unique_container();
    let bad = [
        "no-container-separator".to_string(),
        "Upper/x".to_string(),
        "ab/x".to_string(),
        format!("{c}/"),
        format!("{c}/a/../b"),
        format!("{c}/a//b"),
        format!("{c}/back\\slash"),
    ];
    for k in &bad {
        let err = b
            .blobs
            .put(k, Bytes::from_static(b"x"), PutMode::Overwrite)
            .await
            .unwrap_err();
        assert!(matches!(err, StorageError::Invalid(_)), "put {k}: {err:?}");
        let err = b.blobs.get(k).await.unwrap_err();
        assert!(matches!(err, StorageError::Invalid(_)), "get {k}: {err:?}");
    }
}

pub async fn list_by_prefix_is_in_key_order(b: &Backend) {
    let c = unique_container();
    for name in ["a/2", "b/1", "a/10", "ab", "a/1"] {
        put(b, &key(&c, name), name.as_bytes()).await;
    }
    assert_eq!(
        keys_under(b, &key(&c, "a/")).await,
        [key(&c, "a/1"), key(&c, "a/10"), key(&c, "a/2")]
    );
    assert_eq!(
        keys_under(b, &format!("{c}/")).await,
        [
            key(&c, "a/1"),
            key(&c, "a/10"),
            key(&c, "a/2"),
            key(&c, "ab"),
            key(&c, "b/1")
        ]
    );
}

pub async fn list_pages_with_continuation(b: &Backend) {
    let c = unique_container();
    let mut expected = Vec::new();
    for i in 0..7 {
        let k = key(&c, &format!("p/{i:02}"));
        put(b, &k, b"x").await;
        expected.push(k);
    }
    put(b, &key(&c, "q/other"), b"x").await;
    let prefix = key(&c, "p/");
    let (mut listed, mut page, mut pages) = (Vec::new(), None, 0);
    loop {
        let got = b.blobs.list(&prefix, 3, page).await.unwrap();
        assert!(
            got.items.len() <= 3,
            "a page over its size: {}",
            got.items.len()
        );
        listed.extend(got.items.into_iter().map(|m| m.key));
        pages += 1;
        assert!(pages <= 10, "listing does not end");
        match got.next {
            Some(next) => page = Some(next),
            None => break,
        }
    }
    assert!(
        pages >= 3,
        "seven blobs in pages of three took {pages} pages"
    );
    assert_eq!(listed, expected);
}

pub async fn list_prefix_is_not_a_folder_boundary(b: &Backend) {
    let c = unique_container();
    for name in ["ab", "abc", "ab/x", "b"] {
        put(b, &key(&c, name), b"x").await;
    }
    assert_eq!(
        keys_under(b, &key(&c, "ab")).await,
        [key(&c, "ab"), key(&c, "ab/x"), key(&c, "abc")]
    );
}

pub async fn list_of_unmatched_prefix_is_empty(b: &Backend) {
    let c = unique_container();
    put(b, &key(&c, "present"), b"x").await;
    let page = b.blobs.list(&key(&c, "absent"), 10, None).await.unwrap();
    assert!(page.items.is_empty());
    assert_eq!(page.next, None);
}

pub async fn list_items_carry_metadata(b: &Backend) {
    let c = unique_container();
    put(b, &key(&c, "one"), &[1u8; 10]).await;
    put(b, &key(&c, "two"), &[2u8; 2000]).await;
    for item in b.blobs.list_all(&format!("{c}/")).await.unwrap() {
        let head = b.blobs.head(&item.key).await.unwrap();
        assert_eq!(item.size, head.size);
        assert_eq!(item.etag, head.etag);
    }
    let sizes: Vec<u64> = b
        .blobs
        .list_all(&format!("{c}/"))
        .await
        .unwrap()
        .iter()
        .map(|m| m.size)
        .collect();
    assert_eq!(sizes, [10, 2000]);
}

pub async fn list_forgets_deleted_blobs(b: &Backend) {
    let c = unique_container();
    for name in ["s/1", "s/2", "s/3"] {
        put(b, &key(&c, name), b"x").await;
    }
    b.blobs.delete(&key(&c, "s/2")).await.unwrap();
    assert_eq!(
        keys_under(b, &key(&c, "s/")).await,
        [key(&c, "s/1"), key(&c, "s/3")]
    );
}

pub async fn large_upload_round_trips(b: &Backend) {
    let k = key(&unique_container(), "big/mosaic.png");
    let data = Arc::new(pattern(20 * 1024 * 1024, 7));
    let mut upload = b.blobs.upload(&k).await.unwrap();
    for chunk in data.chunks(4 * 1024 * 1024 + 17) {
        upload.write(Bytes::copy_from_slice(chunk)).await.unwrap();
    }
    let meta = upload.finish().await.unwrap();
    assert_eq!(meta.size, data.len() as u64);
    assert_eq!(b.blobs.head(&k).await.unwrap().etag, meta.etag);
    let got = b.blobs.get(&k).await.unwrap();
    assert_eq!(got.len(), data.len());
    assert!(got == data[..], "the uploaded bytes differ");
    let middle = 9 * 1024 * 1024 + 5..11 * 1024 * 1024;
    let range = b.blobs.get_range(&k, middle.clone()).await.unwrap();
    assert!(range == data[middle.start as usize..middle.end as usize]);
}

pub async fn upload_is_invisible_until_finish(b: &Backend) {
    let k = key(&unique_container(), "pending");
    let mut upload = b.blobs.upload(&k).await.unwrap();
    upload
        .write(Bytes::from_static(b"part one, "))
        .await
        .unwrap();
    upload.write(Bytes::from_static(b"part two")).await.unwrap();
    assert!(!b.blobs.exists(&k).await.unwrap());
    upload.finish().await.unwrap();
    assert_eq!(b.blobs.get(&k).await.unwrap(), &b"part one, part two"[..]);
}

pub async fn upload_abort_leaves_key_untouched(b: &Backend) {
    let container = unique_container();
    let k = key(&container, "kept");
    let before = put(b, &k, b"original").await;
    let mut upload = b.blobs.upload(&k).await.unwrap();
    upload
        .write(Bytes::from_static(b"replacement"))
        .await
        .unwrap();
    upload.abort().await.unwrap();
    assert_eq!(b.blobs.get(&k).await.unwrap(), &b"original"[..]);
    assert_eq!(b.blobs.head(&k).await.unwrap().etag, before.etag);
    let fresh = key(&container, "never");
    let mut upload = b.blobs.upload(&fresh).await.unwrap();
    upload.write(Bytes::from_static(b"x")).await.unwrap();
    upload.abort().await.unwrap();
    assert!(!b.blobs.exists(&fresh).await.unwrap());
}

pub async fn upload_replaces_existing_blob(b: &Backend) {
    let k = key(&unique_container(), "replaced");
    let before = put(b, &k, b"old and longer content").await;
    let mut upload = b.blobs.upload(&k).await.unwrap();
    upload.write(Bytes::from_static(b"new")).await.unwrap();
    let after = upload.finish().await.unwrap();
    assert_ne!(after.etag, before.etag);
    assert_eq!(b.blobs.get(&k).await.unwrap(), &b"new"[..]);
    assert_eq!(b.blobs.head(&k).await.unwrap().size, 3);
}

pub async fn upload_of_many_small_chunks_round_trips(b: &Backend) {
    let k = key(&unique_container(), "chunks");
    let data = pattern(50 * 1000, 3);
    let mut upload = b.blobs.upload(&k).await.unwrap();
    for chunk in data.chunks(1000) {
        upload.write(Bytes::copy_from_slice(chunk)).await.unwrap();
    }
    assert_eq!(upload.finish().await.unwrap().size, data.len() as u64);
    assert_eq!(b.blobs.get(&k).await.unwrap(), &data[..]);
}
