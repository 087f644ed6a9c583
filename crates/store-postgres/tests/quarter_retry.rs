//! A dead job retried while the sampler counts its quarter, on PostgreSQL, where the two run
//! on different connections at once: whichever order their statements meet in, the job is
//! counted in the quarter once or not at all, never in both quarters. Each test holds a row
//! the count must write in a transaction of its own, so the count stops at a known statement
//! while the retry runs. Skips loudly without a server, unless `KAIROS_TEST_POSTGRES=required`.

mod common;

use chrono::Duration;
use kairos_store::prelude::*;
use kairos_store::{JobRetry, QuarterCountRecord, Transition};
use kairos_store_conformance::slo::{counts_of_quarter, finished_in_a_quarter};
use kairos_store_postgres::PostgresStore;
use sqlx::PgConnection;
use std::sync::Arc;

/// A session on the schema of `guard` that has begun a transaction: the blocker.
async fn blocker(guard: &common::SchemaGuard) -> (PgConnection, i32) {
    let (mut conn, pid) = kairos_testkit::pg::session(&guard.url, "kairos-test-blocker").await;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "SET search_path TO {}",
        guard.schema
    )))
    .execute(&mut conn)
    .await
    .expect("search_path");
    sqlx::query("BEGIN")
        .execute(&mut conn)
        .await
        .expect("begin");
    (conn, pid)
}

/// Wait (at most ten seconds) until a session whose statement contains `statement` waits for
/// a lock held by `holder` (by any session when `None`); false when none did.
async fn waits_on(conn: &mut PgConnection, holder: Option<i32>, statement: &str) -> bool {
    for _ in 0..1_000 {
        let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity
             WHERE datname = current_database() AND cardinality(pg_blocking_pids(pid)) > 0
               AND ($1::int IS NULL OR $1 = ANY (pg_blocking_pids(pid)))
               AND query LIKE '%' || $2 || '%'",
        )
        .bind(holder)
        .bind(statement)
        .fetch_one(&mut *conn)
        .await
        .expect("pg_stat_activity");
        if n > 0 {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    false
}

/// Two dead jobs finished in a quarter; a count of it started while a blocker holds the row
/// `hold` writes, and waiting on it at `statement`: the store, the quarter, the jobs, the
/// count in flight, the blocker (roll it back to let the count go on) and a session to watch
/// with.
async fn count_held_at(
    guard: &common::SchemaGuard,
    store: PostgresStore,
    hold: &str,
    statement: &str,
) -> Held {
    let store = Arc::new(store);
    let (q, jobs) = finished_in_a_quarter(&*store, vec![Transition::Dead; 2]).await;
    let (mut block, pid) = blocker(guard).await;
    sqlx::query(sqlx::AssertSqlSafe(hold.to_string()))
        .bind(q)
        .execute(&mut block)
        .await
        .expect("hold a row the count writes");
    let count = tokio::spawn({
        let store = store.clone();
        async move {
            store
                .quarter_count_record(QuarterCountRecord {
                    start: q,
                    now: q + Duration::minutes(20),
                })
                .await
        }
    });
    let mut watch = kairos_testkit::pg::session(&guard.url, "kairos-test-watch")
        .await
        .0;
    assert!(
        waits_on(&mut watch, Some(pid), statement).await,
        "the count waits on the held row at {statement}"
    );
    Held {
        store,
        q,
        jobs,
        count,
        block,
        watch,
    }
}

impl Held {
    /// Let the count go on (roll the blocker back) and check it stored the quarter.
    async fn release(&mut self) {
        sqlx::query("ROLLBACK")
            .execute(&mut self.block)
            .await
            .expect("release");
        let count = (&mut self.count).await.expect("the count ran");
        assert!(count.expect("count"), "the count stored the quarter");
    }

    /// The quarter's (dead, skipped, succeeded) kind and decided counts.
    async fn counts(&self) -> ([i64; 3], [i64; 3]) {
        counts_of_quarter(&*self.store, self.q).await
    }
}

/// What [`count_held_at`] gives.
struct Held {
    store: Arc<PostgresStore>,
    q: chrono::DateTime<chrono::Utc>,
    jobs: Vec<kairos_core::Job>,
    count: tokio::task::JoinHandle<kairos_store::Result<bool>>,
    block: PgConnection,
    watch: PgConnection,
}

/// The count read the quarter (two dead jobs) and waits to mark it; a retry of one of them
/// commits meanwhile. The count must not store what it read: it sees the retry's mark, reads
/// again, and counts the one job still dead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_committed_after_the_count_read_the_quarter_is_not_counted_in_it() {
    let Some((store, guard)) = common::open().await else {
        return;
    };
    // The count's first write is the quarter's mark: hold that row.
    let mut held = count_held_at(
        &guard,
        store,
        "INSERT INTO counted_quarters (start, counted_at) VALUES ($1, $1)",
        "INSERT INTO counted_quarters",
    )
    .await;
    held.store
        .job_retry(JobRetry {
            id: held.jobs[0].id.clone(),
            now: held.q + Duration::minutes(20),
        })
        .await
        .expect("retry")
        .expect("the job is retried");
    held.release().await;
    assert_eq!(
        held.counts().await,
        ([1, 0, 0], [1, 0, 0]),
        "the retried job is not in the quarter it left"
    );
}

/// The count has marked the quarter and waits to store its kind counts; a retry of one of its
/// jobs starts meanwhile. The retry must wait for the count to commit and then take the job
/// out of the counts it stored (without the wait it found no counts to take from, and the
/// count stored the job as dead).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_during_the_count_waits_for_it_and_takes_the_job_out() {
    let Some((store, guard)) = common::open().await else {
        return;
    };
    // Hold a kind count row the count will write, after its mark.
    let mut held = count_held_at(
        &guard,
        store,
        "INSERT INTO kind_counts (start, kind, state, n) VALUES ($1, 'webhook', 'dead', 0)",
        "INSERT INTO kind_counts",
    )
    .await;
    let retry = tokio::spawn({
        let (store, id, now) = (
            held.store.clone(),
            held.jobs[0].id.clone(),
            held.q + Duration::minutes(20),
        );
        async move { store.job_retry(JobRetry { id, now }).await }
    });
    // The retry waits on the count (its mark of the quarter). Without the mark it finishes
    // instead, this wait ends unmet, and the counts below show the job stored dead.
    waits_on(&mut held.watch, None, "INSERT INTO quarter_retries").await;
    held.release().await;
    retry
        .await
        .expect("the retry ran")
        .expect("retry")
        .expect("the job is retried");
    assert_eq!(
        held.counts().await,
        ([1, 0, 0], [1, 0, 0]),
        "the retried job is taken out of the counts stored"
    );
}

/// The count's steps in the order of the race ([`kairos_store_conformance::slo`]).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_retried_while_its_quarter_is_read_is_counted_once() {
    let Some((store, _guard)) = common::open().await else {
        return;
    };
    kairos_store_conformance::slo::a_job_retried_while_its_quarter_is_read_is_counted_once::<
        PostgresStore,
    >(Arc::new(store))
    .await;
}
