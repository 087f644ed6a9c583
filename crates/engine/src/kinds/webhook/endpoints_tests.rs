//! Single-flight endpoint reads on a real SQLite file.

use super::*;
use chrono::Utc;
use kairos_store::{EndpointDisable, EndpointUpsert};
use kairos_store_sqlite::SqliteStore;
use std::sync::atomic::Ordering;

async fn store_with_endpoint() -> (tempfile::TempDir, Arc<dyn Store>, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(&dir.path().join("kairos.db"))
            .await
            .expect("open"),
    );
    let now = Utc::now();
    let ep = store
        .endpoint_upsert(EndpointUpsert {
            id: "ep_1".into(),
            url: "http://127.0.0.1:9/hook".into(),
            secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into(),
            now,
        })
        .await
        .expect("endpoint");
    (dir, store, ep.id)
}

/// Deliveries asking for one endpoint while a read of it is in flight join that read: no
/// read of their own, all get its answer, and no flight is left behind. The read in flight is
/// held open by the test (a real store answers in microseconds, and whether fifty futures are
/// all polled before that depends on the scheduler: under CI's load it once was not).
#[tokio::test]
async fn concurrent_deliveries_share_one_endpoint_read() {
    let (_dir, store, id) = store_with_endpoint().await;
    let endpoint = store.endpoint_get(&id).await.expect("get").expect("exists");
    let reads = EndpointReads::new(store.clone());
    let (answer, held) = tokio::sync::oneshot::channel::<Read>();
    let in_flight: Flight = async move { held.await.unwrap_or_else(|_| Err("dropped".into())) }
        .boxed()
        .shared();
    reads
        .flights
        .lock()
        .expect("lock")
        .insert(id.clone(), in_flight);
    let mut gets: Vec<_> = (0..50).map(|_| Box::pin(reads.get(&id))).collect();
    for g in &mut gets {
        assert!(
            futures::poll!(g.as_mut()).is_pending(),
            "waits for the read in flight"
        );
    }
    answer.send(Ok(Some(endpoint))).expect("send");
    let all = futures::future::join_all(gets).await;
    assert_eq!(
        reads.started.load(Ordering::Relaxed),
        0,
        "no read of their own for 50 deliveries"
    );
    for r in &all {
        let ep = r.as_ref().expect("read").as_ref().expect("endpoint exists");
        assert_eq!(ep.id, id);
    }
    assert_eq!(reads.in_flight(), 0, "the finished flight is retired");
    // And a real read is started for the next delivery, once.
    assert!(reads.get(&id).await.expect("read").is_some());
    assert_eq!(reads.started.load(Ordering::Relaxed), 1);
}

/// Nothing is cached: a read after the previous one finished sees a change made in between
/// (here a disable), as one read per delivery did.
#[tokio::test]
async fn a_change_after_a_read_is_seen_by_the_next_delivery() {
    let (_dir, store, id) = store_with_endpoint().await;
    let reads = EndpointReads::new(store.clone());
    let before = reads.get(&id).await.expect("read").expect("endpoint");
    assert!(before.disabled_at.is_none());
    store
        .endpoint_disable(EndpointDisable {
            id: id.clone(),
            reason: "test".into(),
            now: Utc::now(),
        })
        .await
        .expect("disable");
    let after = reads.get(&id).await.expect("read").expect("endpoint");
    assert!(after.disabled_at.is_some(), "the disable is seen at once");
    assert_eq!(reads.started.load(Ordering::Relaxed), 2);
}

/// A missing endpoint is `None` for every waiter, and different endpoints are read apart.
#[tokio::test]
async fn missing_and_distinct_endpoints() {
    let (_dir, store, id) = store_with_endpoint().await;
    let reads = EndpointReads::new(store.clone());
    let (a, b) = tokio::join!(reads.get(&id), reads.get("ep_missing"));
    assert!(a.expect("read").is_some());
    assert!(b.expect("read").is_none());
    assert_eq!(reads.started.load(Ordering::Relaxed), 2);
    assert_eq!(reads.in_flight(), 0);
}

/// A finished read still registered (its waiters not yet woken to retire it) is not joined:
/// its answer may be older than the delivery asking, so the delivery reads anew.
#[tokio::test]
async fn a_finished_read_is_not_joined() {
    let (_dir, store, id) = store_with_endpoint().await;
    let reads = EndpointReads::new(store.clone());
    // A stale answer (no such endpoint), finished, left in the map.
    let stale: Flight = futures::future::ready(Ok(None)).boxed().shared();
    assert!(stale.clone().await.expect("ready").is_none());
    reads
        .flights
        .lock()
        .expect("lock")
        .insert(id.clone(), stale);
    let got = reads.get(&id).await.expect("read");
    assert!(got.is_some(), "read anew, not the finished answer");
    assert_eq!(reads.started.load(Ordering::Relaxed), 1);
    assert_eq!(reads.in_flight(), 0, "the new flight retired itself");
}
