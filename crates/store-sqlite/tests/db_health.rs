//! `db_health_read` on SQLite: a reader in another connection that keeps its snapshot keeps
//! checkpoints behind, which is reported (with how long, by the caller's clock) until a
//! checkpoint catches up; the WAL's size is reported too.

use chrono::Duration;
use kairos_store::prelude::*;
use kairos_store::{DbHealthRead, NodeStore};
use kairos_store_conformance::fixtures::{job, t0};
use kairos_store_sqlite::SqliteStore;

/// 40 commits: more than the 32 after which the writer asks for a checkpoint.
async fn commits(store: &SqliteStore) {
    for _ in 0..40 {
        store.job_insert(job(t0())).await.expect("insert");
    }
}

/// Poll (boundedly) until `f` holds on a fresh read at `now`.
async fn read_until(
    store: &SqliteStore,
    now: chrono::DateTime<chrono::Utc>,
    what: &str,
    f: impl Fn(&kairos_store::DbHealth) -> bool,
) -> kairos_store::DbHealth {
    for _ in 0..300 {
        let h = store
            .db_health_read(DbHealthRead { now })
            .await
            .expect("read");
        if f(&h) {
            return h;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("timed out waiting for: {what}");
}

#[tokio::test]
async fn a_reader_holding_its_snapshot_is_reported_until_checkpoints_catch_up() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("kairos.db");
    let store = SqliteStore::open(&path).await.expect("open");
    let quiet = store
        .db_health_read(DbHealthRead { now: t0() })
        .await
        .expect("read");
    assert!(
        quiet.held.is_empty(),
        "nothing held on a fresh store: {quiet:?}"
    );
    assert!(quiet.dead_tuples.is_empty());

    // A reader in another connection takes a snapshot and keeps it.
    let reader = rusqlite::Connection::open(&path).expect("reader");
    reader
        .execute_batch("BEGIN; SELECT count(*) FROM jobs;")
        .expect("read transaction");
    commits(&store).await;
    let first = read_until(&store, t0(), "checkpoints behind", |h| !h.held.is_empty()).await;
    assert_eq!(
        first.held[0].pid, None,
        "a reader elsewhere cannot be named"
    );
    assert_eq!(
        first.held[0].age_secs, 0.0,
        "the clock starts at the first read"
    );
    assert!(first.wal_bytes.is_some_and(|b| b > 0), "{first:?}");

    // Still held ten minutes later by the caller's clock: the age grows.
    let later = t0() + Duration::minutes(10);
    let h = store
        .db_health_read(DbHealthRead { now: later })
        .await
        .expect("read");
    assert_eq!(h.held.len(), 1, "{h:?}");
    assert_eq!(h.held[0].age_secs, 600.0);
    assert_eq!(h.oldest_age_secs(), 600.0);

    // Let go: commits go on until a checkpoint catches up, and nothing is held any more. (A
    // checkpoint that ran while later commits were still appending to the WAL ends behind
    // too, and the next is asked for 32 commits later.)
    reader.execute_batch("COMMIT").expect("end read");
    drop(reader);
    let mut caught_up = false;
    for _ in 0..100 {
        commits(&store).await;
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        let h = store
            .db_health_read(DbHealthRead { now: later })
            .await
            .expect("read");
        if h.held.is_empty() {
            caught_up = true;
            break;
        }
    }
    assert!(caught_up, "checkpoints caught up once the reader let go");
}

/// `db_vacuum` on SQLite does nothing and says so: deleted rows' pages are reused by the
/// next inserts, and a `VACUUM` would rewrite the whole file under the write lock.
#[tokio::test]
async fn db_vacuum_is_a_no_op_on_sqlite() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = SqliteStore::open(&dir.path().join("kairos.db"))
        .await
        .expect("open");
    commits(&store).await;
    let v = store
        .db_vacuum(kairos_store::DbVacuum { force: true })
        .await
        .expect("vacuum");
    assert_eq!(v, kairos_store::DbVacuumed::default());
}
