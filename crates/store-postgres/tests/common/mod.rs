//! Shared by the PostgreSQL test binaries: a store in a fresh schema per test (dropped when
//! the test ends), over `kairos_testkit::pg` (the server, the loud skip, the schema guard).
#![allow(dead_code)] // each test binary uses a different part of this module

use kairos_store_postgres::PostgresStore;
#[allow(unused_imports)] // not every test binary uses both
pub use kairos_testkit::pg::{SchemaGuard, database_url};

/// A store in a fresh schema, and the guard that drops the schema; `None` when the server is
/// not reachable and not required (the test is skipped).
pub async fn open() -> Option<(PostgresStore, SchemaGuard)> {
    let guard =
        kairos_testkit::pg::fresh_schema("kairos_test", "The PostgreSQL conformance suite").await?;
    let store = PostgresStore::connect(&guard.url, &guard.schema)
        .await
        .unwrap_or_else(|e| {
            panic!(
                "opening the PostgreSQL store in schema {}: {e}",
                guard.schema
            )
        });
    Some((store, guard))
}

/// A second store on the schema of `guard`: another node's view of the same database, with
/// its own pools (and claim cursor).
pub async fn second(guard: &SchemaGuard) -> PostgresStore {
    PostgresStore::connect(&guard.url, &guard.schema)
        .await
        .unwrap_or_else(|e| panic!("a second store on schema {}: {e}", guard.schema))
}

/// A connection to the schema of `guard`, created and migrated as the release before
/// migration `version` left it (its `search_path` set to the schema).
pub async fn schema_before(guard: &SchemaGuard, version: i64) -> sqlx::PgConnection {
    let migrator =
        kairos_store::sql::migrate::migrator_before(kairos_store::sql::Dialect::Postgres, version);
    kairos_testkit::pg::schema_migrated(guard, &migrator).await
}

/// Index entries the scans of `index` in `schema` have read, once the store's connections
/// have reported their statistics (a backend reports them when it exits).
pub async fn index_entries_read(url: &str, schema: &str, index: &str) -> i64 {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(url).await.expect("connect");
    let mut last = -1;
    for _ in 0..40 {
        let read: i64 = sqlx::query_scalar(
            "SELECT COALESCE(SUM(idx_tup_read), 0)::bigint FROM pg_stat_user_indexes
             WHERE schemaname = $1 AND indexrelname = $2",
        )
        .bind(schema)
        .bind(index)
        .fetch_one(&mut conn)
        .await
        .expect("stats");
        if read > 0 && read == last {
            return read;
        }
        last = read;
        sqlx::query("SELECT pg_stat_clear_snapshot()")
            .execute(&mut conn)
            .await
            .expect("clear");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    last
}

/// Claims every due job on `store` at `now`, `batch` at a time, and completes each as a
/// success, until a claim comes back empty; how many ran.
pub async fn run_all(store: &PostgresStore, now: chrono::DateTime<chrono::Utc>, batch: i64) -> i64 {
    use kairos_store::prelude::*;
    let mut done = 0;
    for _ in 0..1_000_000 {
        let claimed = store
            .job_claim(kairos_store_conformance::fixtures::claim(now, batch, "a"))
            .await
            .expect("claim");
        if claimed.is_empty() {
            break;
        }
        done += claimed.len() as i64;
        let c = claimed
            .iter()
            .map(|j| {
                kairos_store_conformance::jobs::complete(j, kairos_store::Transition::Succeeded)
            })
            .collect();
        store.job_complete_many(c).await.expect("complete");
    }
    done
}

/// Run `statement` (a store call) so that it fails for real: a second session holds the job
/// table of `guard`'s schema locked, and the backend of the statement waiting on that lock is
/// ended (`pg_terminate_backend`). Returns what the call returned, then lets the table go.
pub async fn fail_while_jobs_locked<T: Send + 'static>(
    guard: &SchemaGuard,
    statement: impl std::future::Future<Output = T> + Send + 'static,
) -> T {
    use sqlx::Executor;
    let (mut locker, locker_pid) =
        kairos_testkit::pg::session(&guard.url, "kairos-test-locker").await;
    locker.execute("BEGIN").await.expect("begin");
    let lock = format!(
        "LOCK TABLE \"{}\".jobs IN ACCESS EXCLUSIVE MODE",
        guard.schema
    );
    locker
        .execute(sqlx::AssertSqlSafe(lock))
        .await
        .expect("lock");
    let running = tokio::spawn(statement);
    let mut ended = false;
    for _ in 0..500 {
        let waiting: Option<i32> = sqlx::query_scalar(
            // pg_locks, not pg_stat_activity: inside the locker's transaction the activity
            // view is read once and kept, so a backend the pool opened after the first look
            // (the statement's) would never show; the lock table is read afresh each time.
            "SELECT pid FROM pg_locks WHERE NOT granted AND $1 = ANY(pg_blocking_pids(pid)) LIMIT 1",
        )
        .bind(locker_pid)
        .fetch_optional(&mut locker)
        .await
        .expect("blocked statement");
        if let Some(pid) = waiting {
            ended = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
                .bind(pid)
                .fetch_one(&mut locker)
                .await
                .expect("terminate");
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(ended, "the statement waited on the lock and was ended");
    let out = running.await.expect("task");
    locker.execute("ROLLBACK").await.expect("unlock");
    out
}
