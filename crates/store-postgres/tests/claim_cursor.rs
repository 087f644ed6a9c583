//! Claims while another session holds a snapshot open: the claim cursor keeps each claim from
//! walking the index entries of the jobs already claimed (which no vacuum can remove while the
//! snapshot lasts), and a job made available behind the cursor by another node is still
//! claimed, by the next sweep. Skipped loudly when PostgreSQL is not reachable (see `common`).

mod common;

use chrono::Duration;
use kairos_store::prelude::*;
use kairos_store_conformance::fixtures::{claim, job, t0};
use kairos_store_postgres::PostgresStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s0_10_claims_under_a_held_snapshot_do_not_walk_the_jobs_already_claimed() {
    let Some((store, guard)) = common::open().await else {
        return;
    };
    let (holder, _pid) = kairos_testkit::pg::hold_snapshot(&guard.url, "analytics-report").await;
    const JOBS: i64 = 3_000;
    let jobs = (0..JOBS)
        .map(|i| job(t0() + Duration::milliseconds(i)))
        .collect::<Vec<_>>();
    store.job_insert_many(jobs).await.expect("insert");
    let now = t0() + Duration::hours(1);
    let done = common::run_all(&store, now, 10).await;
    assert_eq!(done, JOBS, "every job claimed once");
    store.close().await;
    let read = common::index_entries_read(&guard.url, &guard.schema, "jobs_due").await;
    // Read from the start each time, the 300 claims would read about 450,000 entries (each
    // the entries of every job claimed before it); from the cursor, about one per job.
    assert!(
        read <= 3 * JOBS,
        "the claims read {read} entries of jobs_due for {JOBS} jobs"
    );
    drop(holder);
}

/// A backlog worked off under a held snapshot, a second of the claims' clock between claims:
/// every claim is due a near sweep. Started two seconds of `run_at` behind the cursor, each
/// would walk the entries of every job claimed before it (all 3,000 are due within a second);
/// bounded by the last sweep's clock, a near sweep in a backlog starts at the cursor.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn near_sweeps_in_a_backlog_under_a_held_snapshot_do_not_walk_the_jobs_already_claimed() {
    let Some((store, guard)) = common::open().await else {
        return;
    };
    let (holder, _pid) = kairos_testkit::pg::hold_snapshot(&guard.url, "analytics-report").await;
    const JOBS: i64 = 3_000;
    let jobs = (0..JOBS)
        .map(|i| job(t0() + Duration::microseconds(i * 300)))
        .collect::<Vec<_>>();
    store.job_insert_many(jobs).await.expect("insert");
    let mut now = t0() + Duration::hours(1);
    let mut done = 0;
    // Claims of 100, a second apart: 30 near sweeps (and one full sweep at the start, and
    // one 30 s in).
    for _ in 0..100 {
        let got = store
            .job_claim(claim(now, 100, "one"))
            .await
            .expect("claim");
        if got.is_empty() {
            break;
        }
        done += got.len() as i64;
        now += Duration::seconds(1);
    }
    assert_eq!(done, JOBS, "every job claimed once");
    store.close().await;
    let read = common::index_entries_read(&guard.url, &guard.schema, "jobs_due").await;
    // From two seconds behind the cursor, the 30 near sweeps read about 45,000 entries; from
    // the cursor, about one per job, and the two full sweeps up to a table's worth each.
    assert!(
        read <= 4 * JOBS,
        "the claims read {read} entries of jobs_due for {JOBS} jobs"
    );
    drop(holder);
}

/// Claims on `store` at `now` plus each offset until one returns jobs.
async fn first_claim(
    store: &PostgresStore,
    now: chrono::DateTime<chrono::Utc>,
    offsets_ms: &[i64],
) -> Vec<String> {
    for ms in offsets_ms {
        let got = store
            .job_claim(claim(now + Duration::milliseconds(*ms), 10, "one"))
            .await
            .unwrap();
        if !got.is_empty() {
            return got.into_iter().map(|j| j.id).collect();
        }
    }
    vec![]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s0_2_jobs_another_node_inserts_behind_the_cursor_are_claimed_by_the_sweeps() {
    let Some((one, guard)) = common::open().await else {
        return;
    };
    let two = common::second(&guard).await;
    for i in 0..5 {
        one.job_insert(job(t0() + Duration::seconds(i)))
            .await
            .expect("insert");
    }
    let now = t0() + Duration::minutes(10);
    assert_eq!(one.job_claim(claim(now, 10, "one")).await.unwrap().len(), 5);
    // A commit that lands after the claims passed its key (or a clock a second behind): the
    // near sweep, within a second of the claims' clock.
    let near = job(now - Duration::seconds(1));
    two.job_insert(near.clone()).await.expect("insert on two");
    let got = first_claim(&one, now, &[0, 500, 1_000]).await;
    assert_eq!(got, vec![near.id.clone()]);
    // A job whose run_at is long past: the full sweep, within thirty seconds.
    let far = job(t0() - Duration::hours(1));
    two.job_insert(far.clone()).await.expect("insert on two");
    let got = first_claim(&one, now + Duration::seconds(1), &[0, 1_000, 2_000, 30_000]).await;
    assert_eq!(got, vec![far.id.clone()]);
    two.close().await;
}

/// A claim that fails gives back the mark it took: a job made available here behind the
/// cursor is claimed by the next claim, not left to a sweep. The claim is made to fail for
/// real: a second session holds the job table locked, and the claim's backend is ended while
/// it waits. The claims share one instant, so no sweep is due; without the mark given back,
/// the third claim starts at the floor, above the job, and finds nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_marked_behind_the_cursor_is_claimed_after_a_claim_that_failed() {
    let Some((store, guard)) = common::open().await else {
        return;
    };
    let now = t0() + Duration::hours(1);
    store
        .job_insert_many(vec![job(t0())])
        .await
        .expect("insert");
    let first = store.job_claim(claim(now, 10, "one")).await.expect("claim");
    assert_eq!(
        first.len(),
        1,
        "the first claim sweeps and sets the floor near now"
    );
    // Below the floor: the insert marks where the next claim starts.
    let behind = store
        .job_insert_many(vec![job(t0() + Duration::minutes(1))])
        .await
        .expect("insert behind");

    let failed = common::fail_while_jobs_locked(&guard, {
        let store = store.clone();
        async move { store.job_claim(claim(now, 10, "one")).await }
    })
    .await;
    assert!(failed.is_err(), "the claim failed");

    let got = store.job_claim(claim(now, 10, "one")).await.expect("claim");
    let got: Vec<String> = got.into_iter().map(|j| j.id).collect();
    assert_eq!(got, behind, "the job behind the cursor, at the next claim");
    store.close().await;
}
