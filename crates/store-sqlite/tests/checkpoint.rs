//! `SqliteStore::checkpoint`: the whole WAL is copied into the database file and truncated,
//! and nothing committed is lost on the way.

use chrono::Utc;
use kairos_store::prelude::*;
use kairos_store_conformance::fixtures::job;
use kairos_store_sqlite::SqliteStore;

#[tokio::test]
async fn checkpoint_empties_the_wal_and_keeps_every_job() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("kairos.db");
    let store = SqliteStore::open(&path).await.expect("open");
    let due = Utc::now() + chrono::Duration::days(365);
    // Fewer than 32 commits: the writer thread has not asked for a checkpoint of its own.
    for _ in 0..4 {
        store
            .job_insert_many((0..2_000).map(|_| job(due)).collect())
            .await
            .expect("insert");
    }
    let wal = dir.path().join("kairos.db-wal");
    let before = std::fs::metadata(&wal).expect("wal").len();
    assert!(before > 0, "the inserts are in the WAL");
    store.checkpoint().await.expect("checkpoint");
    assert_eq!(
        std::fs::metadata(&wal).expect("wal").len(),
        0,
        "WAL truncated"
    );
    // Every job is in the database file: a fresh store on it reads them all.
    store.close().await;
    let again = SqliteStore::open(&path).await.expect("reopen");
    let next = again.job_next_run_at().await.expect("next run");
    assert_eq!(
        next.map(|t| t.timestamp_millis()),
        Some(due.timestamp_millis())
    );
    let counts = again.job_count_by_state().await.expect("counts");
    let available: i64 = counts
        .iter()
        .filter(|(state, _)| state == "available")
        .map(|(_, n)| n)
        .sum();
    assert_eq!(available, 8_000);
    again.close().await;
}
