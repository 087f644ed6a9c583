//! `db_health_read` on PostgreSQL: a session that holds a `REPEATABLE READ` snapshot is
//! listed with its pid, application name and transaction start, its age measured by the
//! server, and is gone once it commits; dead row versions of kairos's tables are listed.
//! Skipped loudly when PostgreSQL is not reachable (see `common`).

mod common;

use kairos_store::prelude::*;
use kairos_store::{DbHealthRead, NodeStore};
use kairos_store_conformance::fixtures::{job, t0};
use sqlx::Connection;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_holding_a_snapshot_is_listed_with_its_pid_until_it_ends() {
    let Some((store, guard)) = common::open().await else {
        return;
    };
    let (mut holder, pid) = kairos_testkit::pg::hold_snapshot(&guard.url, "analytics-report").await;
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;

    let h = store
        .db_health_read(DbHealthRead { now: t0() })
        .await
        .expect("read");
    let mine = h
        .held
        .iter()
        .find(|s| s.pid == Some(i64::from(pid)))
        .unwrap_or_else(|| panic!("session {pid} not listed: {h:?}"));
    assert!(mine.age_secs >= 1.0, "{mine:?}");
    assert_eq!(mine.application.as_deref(), Some("analytics-report"));
    assert!(mine.xact_start.is_some());
    assert_eq!(mine.state.as_deref(), Some("idle in transaction"));
    assert!(h.oldest_age_secs() >= mine.age_secs);
    assert!(h.wal_bytes.is_none());
    assert!(
        h.dead_tuples.iter().any(|(t, _)| t == "jobs"),
        "kairos's tables are listed: {:?}",
        h.dead_tuples
    );

    sqlx::query("COMMIT")
        .execute(&mut holder)
        .await
        .expect("commit");
    let h = store
        .db_health_read(DbHealthRead { now: t0() })
        .await
        .expect("read");
    assert!(
        h.held.iter().all(|s| s.pid != Some(i64::from(pid))),
        "a committed session holds nothing: {h:?}"
    );
    // The store's own work does not hold cleanup back between statements.
    store.job_insert(job(t0())).await.expect("insert");
    holder.close().await.expect("close");
}
