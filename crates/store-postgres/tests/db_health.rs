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

/// How many times the schema's `jobs` table was vacuumed by hand.
async fn vacuums(url: &str, schema: &str) -> i64 {
    let mut c = sqlx::PgConnection::connect(url).await.expect("connect");
    let n: i64 = sqlx::query_scalar(
        "SELECT vacuum_count FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'jobs'",
    )
    .bind(schema)
    .fetch_one(&mut c)
    .await
    .expect("vacuum_count");
    c.close().await.expect("close");
    n
}

/// `db_vacuum` vacuums the job tables when the server's autovacuum is off (as on this
/// project's CI machine, where the pruner's deletes were otherwise never reclaimed and the
/// job tables of a steady run grew without end), and always when forced; it says whether
/// autovacuum is on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn db_vacuum_vacuums_the_job_tables_when_autovacuum_is_off_or_when_forced() {
    let Some((store, guard)) = common::open().await else {
        return;
    };
    for _ in 0..20 {
        store.job_insert(job(t0())).await.expect("insert");
    }
    let mut c = sqlx::PgConnection::connect(&guard.url)
        .await
        .expect("connect");
    let on: bool = sqlx::query_scalar("SELECT current_setting('autovacuum') = 'on'")
        .fetch_one(&mut c)
        .await
        .expect("setting");
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DELETE FROM {}.jobs",
        guard.schema
    )))
    .execute(&mut c)
    .await
    .expect("delete");
    c.close().await.expect("close");

    let before = vacuums(&guard.url, &guard.schema).await;
    let v = store
        .db_vacuum(kairos_store::DbVacuum::default())
        .await
        .expect("vacuum");
    assert_eq!(v.autovacuum, Some(on));
    let expect: Vec<String> = if on {
        Vec::new()
    } else {
        vec!["jobs".into(), "job_attempts".into()]
    };
    assert_eq!(v.tables, expect, "vacuumed only without autovacuum");
    let after = vacuums(&guard.url, &guard.schema).await;
    assert_eq!(after - before, i64::from(!on), "{before} → {after}");

    let forced = store
        .db_vacuum(kairos_store::DbVacuum { force: true })
        .await
        .expect("forced vacuum");
    assert_eq!(forced.tables, vec!["jobs", "job_attempts"]);
    assert_eq!(vacuums(&guard.url, &guard.schema).await, after + 1);
}
