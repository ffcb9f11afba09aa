//! The Azure backend against a running Azurite: what is particular to Azure (signing, URLs,
//! block uploads, error mapping). The port's behaviours are in the workspace's conformance suite.

// Test helpers unwrap and print too: a panic is a failed test, with its cause.
#![allow(clippy::unwrap_used, clippy::print_stdout, clippy::print_stderr)]

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use tessera_azure::sas::AccountSasFields;
use tessera_azure::{AccountKey, AzureOptions, AzureStorage, ConnectionString, SharedCredential};
use tessera_shared::storage::{
    BlobStore, BlobStoreExt, MessageUpdate, PutMode, QueueStore, SendOptions, StorageError,
};
use time::OffsetDateTime;

fn connection_string() -> String {
    std::env::var("TESSERA_AZURE_CONNECTION_STRING").expect(
        "TESSERA_AZURE_CONNECTION_STRING is not set: run scripts/test.sh, or start Azurite with \
         scripts/azurite.sh start and set TESSERA_AZURE_CONNECTION_STRING=UseDevelopmentStorage=true",
    )
}

fn storage() -> AzureStorage {
    AzureStorage::from_connection_string(&connection_string(), AzureOptions::default()).unwrap()
}

fn unique(prefix: &str) -> String {
    format!(
        "{prefix}-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    )
}

#[tokio::test]
async fn blob_names_with_slashes_spaces_and_unicode_round_trip_and_list() {
    let s = storage();
    let c = unique("az");
    let keys = [
        format!("{c}/job 1/slice/0001.png"),
        format!("{c}/job 1/slice/0002.png"),
        format!("{c}/ünïcode/ß+%&=?.bin"),
    ];
    for (i, key) in keys.iter().enumerate() {
        s.put(key, Bytes::from(vec![i as u8; 10 + i]), PutMode::Overwrite)
            .await
            .unwrap();
    }
    for (i, key) in keys.iter().enumerate() {
        assert_eq!(s.get(key).await.unwrap(), vec![i as u8; 10 + i]);
        assert_eq!(s.head(key).await.unwrap().size, 10 + i as u64);
    }
    let listed: Vec<String> = s
        .list_all(&format!("{c}/job 1/"))
        .await
        .unwrap()
        .into_iter()
        .map(|m| m.key)
        .collect();
    assert_eq!(listed, keys[..2]);
    // Pages of one, continued by the marker.
    let first = s.list(&c, 1, None).await.unwrap();
    assert_eq!(first.items.len(), 1);
    let second = s.list(&c, 1, first.next.clone()).await.unwrap();
    assert_eq!(second.items.len(), 1);
    assert_ne!(first.items[0].key, second.items[0].key);
}

#[tokio::test]
async fn list_of_a_container_never_written_is_empty() {
    let s = storage();
    let page = s.list(&unique("az"), 10, None).await.unwrap();
    assert!(page.items.is_empty());
    assert!(page.next.is_none());
}

#[tokio::test]
async fn block_upload_stages_many_blocks_and_commits_them_in_order() {
    let s = AzureStorage::from_connection_string(
        &connection_string(),
        AzureOptions {
            block_size: 1000,
            ..AzureOptions::default()
        },
    )
    .unwrap();
    let key = format!("{}/big.bin", unique("az"));
    let data: Vec<u8> = (0..10_500u32).map(|i| (i * 7 % 251) as u8).collect();
    let mut upload = s.upload(&key).await.unwrap();
    // Uneven chunks: blocks are cut from the buffer, not from the chunks.
    for chunk in data.chunks(777) {
        upload.write(Bytes::copy_from_slice(chunk)).await.unwrap();
    }
    assert!(!s.exists(&key).await.unwrap(), "visible before finish");
    let meta = upload.finish().await.unwrap();
    assert_eq!(meta.size, data.len() as u64);
    assert_eq!(s.get(&key).await.unwrap(), data);
    assert_eq!(s.head(&key).await.unwrap().etag, meta.etag);
    assert_eq!(
        s.get_range(&key, 999..2001).await.unwrap(),
        data[999..2001].to_vec()
    );

    // A large put goes through staged blocks too (partitioned by the SDK).
    let put = s
        .put(&key, Bytes::from(data[..5000].to_vec()), PutMode::Overwrite)
        .await
        .unwrap();
    assert_eq!(put.size, 5000);
    assert_eq!(s.get(&key).await.unwrap(), data[..5000].to_vec());
}

#[tokio::test]
async fn aborted_and_empty_uploads() {
    let s = storage();
    let c = unique("az");
    let key = format!("{c}/aborted.bin");
    let mut upload = s.upload(&key).await.unwrap();
    upload
        .write(Bytes::from_static(b"never seen"))
        .await
        .unwrap();
    upload.abort().await.unwrap();
    assert!(matches!(s.get(&key).await, Err(StorageError::NotFound(_))));

    let empty = format!("{c}/empty.bin");
    let meta = s.upload(&empty).await.unwrap().finish().await.unwrap();
    assert_eq!(meta.size, 0);
    assert_eq!(s.get(&empty).await.unwrap().len(), 0);
}

#[tokio::test]
async fn a_sas_connection_string_works_and_so_do_explicit_endpoints() {
    let cs = ConnectionString::parse(&connection_string()).unwrap();
    let SharedCredential::Key(key) = &cs.credential else {
        panic!("these checks sign a SAS: they need a connection string with a key");
    };
    let now = OffsetDateTime::now_utc();
    let sas = AccountSasFields::tessera(
        now - Duration::from_secs(600),
        now + Duration::from_secs(3600),
        false,
    )
    .to_query(key);
    let with_sas = format!(
        "BlobEndpoint={}/;QueueEndpoint={}/;SharedAccessSignature=?{sas}",
        cs.blob_endpoint, cs.queue_endpoint
    );
    let s = AzureStorage::from_connection_string(&with_sas, AzureOptions::default()).unwrap();
    let q = unique("az");
    s.create_queue(&q).await.unwrap();
    s.send(&q, "by SAS", SendOptions::default()).await.unwrap();
    let got = s.receive(&q, 1, Duration::from_secs(30)).await.unwrap();
    assert_eq!(got[0].body, "by SAS");
    s.delete_queue(&q).await.unwrap();

    // A SAS signed with another key is refused: not transient, not "not found".
    let wrong = AccountKey::new(key.account.clone(), "d3Jvbmcga2V5IGJ5dGVz").unwrap();
    let bad = ConnectionString {
        credential: SharedCredential::Key(wrong),
        ..cs.clone()
    };
    let s = AzureStorage::from_parsed(bad, AzureOptions::default()).unwrap();
    match s.create_queue(&unique("az")).await {
        Err(StorageError::Other(msg)) => assert!(!msg.contains("sig="), "{msg}"),
        other => panic!("expected an authorisation failure, got {other:?}"),
    }
}

#[tokio::test]
async fn an_unreachable_endpoint_is_transient_and_fails_fast() {
    // Nothing listens on port 9 of the loopback: the connection is refused at once.
    let s = AzureStorage::from_connection_string(
        "AccountName=devstoreaccount1;AccountKey=a2V5;\
         BlobEndpoint=http://127.0.0.1:9/devstoreaccount1;\
         QueueEndpoint=http://127.0.0.1:9/devstoreaccount1",
        AzureOptions {
            max_retries: 0,
            ..AzureOptions::default()
        },
    )
    .unwrap();
    let started = Instant::now();
    let err = s.create_queue("anything").await.unwrap_err();
    assert!(err.is_transient(), "{err:?}");
    // The request's URL carries the SAS: it never reaches an error message.
    assert!(!err.to_string().contains("sig="), "{err}");
    println!("{err}");
    let err = s.get("anything/x").await.unwrap_err();
    assert!(err.is_transient(), "{err:?}");
    println!("refused connections reported in {:?}", started.elapsed());
}

#[tokio::test]
async fn queue_metadata_and_xml_special_bodies() {
    let s = storage();
    let q = unique("az");
    s.create_queue(&q).await.unwrap();
    let meta = HashMap::from([("owner".to_owned(), "tessera".to_owned())]);
    s.set_metadata(&q, &meta).await.unwrap();
    assert_eq!(s.get_metadata(&q).await.unwrap(), meta);
    // Creating again with metadata in place is still fine.
    s.create_queue(&q).await.unwrap();

    let body = r#"{"a":"<b> & \"c\" 'd' ü 🧩 ]]>"}"#;
    s.send(&q, body, SendOptions::default()).await.unwrap();
    let got = s.receive(&q, 1, Duration::from_secs(30)).await.unwrap();
    assert_eq!(got[0].body, body);
    let updated = s
        .update(
            &q,
            MessageUpdate::new(
                &got[0].id,
                &got[0].pop_receipt,
                Duration::ZERO,
                Some("<new & body>"),
            ),
        )
        .await
        .unwrap();
    assert_ne!(updated.pop_receipt, got[0].pop_receipt);
    let again = s.receive(&q, 1, Duration::from_secs(30)).await.unwrap();
    assert_eq!(again[0].body, "<new & body>");
    assert_eq!(again[0].dequeue_count, 2);
    QueueStore::delete(&s, &q, &again[0].id, &again[0].pop_receipt)
        .await
        .unwrap();
    s.delete_queue(&q).await.unwrap();
}

#[tokio::test]
async fn stale_and_deleted_receipts_map_as_azure_documents() {
    let s = storage();
    let q = unique("az");
    s.create_queue(&q).await.unwrap();
    s.send(&q, "m", SendOptions::default()).await.unwrap();
    // Zero is below Azure's one-second minimum for a receive: it is raised, not refused.
    let first = s.receive(&q, 1, Duration::ZERO).await.unwrap();
    assert_eq!(first.len(), 1);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let second = s.receive(&q, 1, Duration::from_secs(30)).await.unwrap();
    assert_eq!(second[0].id, first[0].id);
    // Received again since: the first receipt is stale, the message still there.
    let err = QueueStore::delete(&s, &q, &first[0].id, &first[0].pop_receipt)
        .await
        .unwrap_err();
    assert!(matches!(err, StorageError::ReceiptMismatch(_)), "{err:?}");
    let err = s
        .update(
            &q,
            MessageUpdate::new(&first[0].id, &first[0].pop_receipt, Duration::ZERO, None),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, StorageError::ReceiptMismatch(_)), "{err:?}");
    // Gone: not found.
    QueueStore::delete(&s, &q, &second[0].id, &second[0].pop_receipt)
        .await
        .unwrap();
    let err = QueueStore::delete(&s, &q, &second[0].id, &second[0].pop_receipt)
        .await
        .unwrap_err();
    assert!(matches!(err, StorageError::NotFound(_)), "{err:?}");
    s.delete_queue(&q).await.unwrap();
}
