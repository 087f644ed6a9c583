//! Rescues while another session holds a snapshot open: the rescue floor keeps each rescue
//! from walking the `jobs_lease` entries of every job run since (which no vacuum can remove
//! while the snapshot lasts), and an expired lease below the floor — one a rescue skipped
//! because its row was locked — is still rescued, by the full pass. Skipped loudly when
//! PostgreSQL is not reachable (see `common`).

mod common;

use chrono::{DateTime, Duration, Utc};
use kairos_store::JobRescue;
use kairos_store::prelude::*;
use kairos_store_conformance::fixtures::{claim, job, t0};
use kairos_store_postgres::PostgresStore;
use sqlx::Connection;

async fn rescue(store: &PostgresStore, now: DateTime<Utc>) -> Vec<String> {
    store
        .job_rescue(JobRescue {
            now,
            limit: 1000,
            restarted_node: None,
        })
        .await
        .expect("rescue")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s0_10_rescues_under_a_held_snapshot_do_not_walk_the_leases_of_jobs_run_since() {
    let Some((store, guard)) = common::open().await else {
        return;
    };
    let (holder, _pid) = kairos_testkit::pg::hold_snapshot(&guard.url, "analytics-report").await;
    // Every job run while the snapshot is held leaves a dead `jobs_lease` entry (its running
    // version), with a lease ended long before the rescues below.
    const JOBS: i64 = 3_000;
    let jobs = (0..JOBS).map(|_| job(t0())).collect::<Vec<_>>();
    store.job_insert_many(jobs).await.expect("insert");
    let done = common::run_all(&store, t0(), 100).await;
    assert_eq!(done, JOBS, "every job ran once");
    // Two minutes of the rescuer, every five seconds. Another node claims a job meanwhile,
    // with a lease above the floor: a rescue from the floor still finds it once it ends.
    let other = common::second(&guard).await;
    let start = t0() + Duration::hours(1);
    let mut lost_at = None;
    let mut lost = String::new();
    for i in 0..24 {
        let now = start + Duration::seconds(5 * i);
        if i == 3 {
            let j = job(now);
            lost = j.id.clone();
            other.job_insert(j).await.expect("insert on the other node");
            let got = other.job_claim(claim(now, 1, "b")).await.expect("claim");
            assert_eq!(got.len(), 1, "the other node claims the job");
        }
        let rescued = rescue(&store, now).await;
        if !rescued.is_empty() {
            assert_eq!(rescued, vec![lost.clone()], "at {i}");
            assert!(lost_at.is_none(), "rescued twice");
            lost_at = Some(i);
        }
    }
    // Claimed at 15 s with a 30 s lease: rescued by the first run after 45 s.
    assert_eq!(lost_at, Some(10), "the other node's lost job");
    other.close().await;
    store.close().await;
    let read = common::index_entries_read(&guard.url, &guard.schema, "jobs_lease").await;
    // From the start of the index every time, the 24 rescues would read about 72,000 entries;
    // from the floor, the two full passes (the first run, and a minute later) read them.
    assert!(
        read <= 3 * JOBS,
        "the rescues read {read} entries of jobs_lease for {JOBS} jobs run"
    );
    drop(holder);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_skipped_while_its_row_was_locked_is_rescued_by_the_full_pass() {
    let Some((store, guard)) = common::open().await else {
        return;
    };
    let j = job(t0());
    store.job_insert(j.clone()).await.expect("insert");
    let got = store.job_claim(claim(t0(), 1, "a")).await.expect("claim");
    assert_eq!(got.len(), 1);
    // Another statement holds the row (a completion that will roll back): the rescue skips it.
    let mut locker = sqlx::PgConnection::connect(&guard.url)
        .await
        .expect("connect");
    sqlx::query("BEGIN")
        .execute(&mut locker)
        .await
        .expect("begin");
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT id FROM \"{}\".jobs WHERE id = $1 FOR UPDATE",
        guard.schema
    )))
    .bind(&j.id)
    .execute(&mut locker)
    .await
    .expect("lock the row");
    let now = t0() + Duration::minutes(5);
    assert!(
        rescue(&store, now).await.is_empty(),
        "a locked row is skipped"
    );
    sqlx::query("ROLLBACK")
        .execute(&mut locker)
        .await
        .expect("rollback");
    // Its lease now lies below the floor: the full pass, within a minute, rescues it.
    let mut rescued_at = None;
    for i in 1..=14 {
        if rescue(&store, now + Duration::seconds(5 * i)).await == vec![j.id.clone()] {
            rescued_at = Some(i);
            break;
        }
    }
    let i = rescued_at.expect("the skipped lease was never rescued");
    assert!(i <= 12, "rescued after {i} runs");
    store.close().await;
}

/// A rescue that fails gives back the mark it took: a lease set here below the floor (a claim
/// on a clock behind the rescuer's) is rescued by the next rescue, not left to the full pass a
/// minute later. The rescue is made to fail for real (the job table locked by a second
/// session, the rescue's backend ended while it waits); without the mark given back, the next
/// rescue starts at the floor, above the lease, and finds nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_set_below_the_floor_is_rescued_after_a_rescue_that_failed() {
    let Some((store, guard)) = common::open().await else {
        return;
    };
    let late = t0() + Duration::hours(1);
    assert!(
        rescue(&store, late).await.is_empty(),
        "a full pass sets the floor"
    );
    let lost = job(t0());
    store.job_insert(lost.clone()).await.expect("insert");
    let claimed = store.job_claim(claim(t0(), 1, "a")).await.expect("claim");
    assert_eq!(claimed.len(), 1, "a lease ending long below the floor");
    let at = late + Duration::seconds(5);
    let failed = common::fail_while_jobs_locked(&guard, {
        let store = store.clone();
        async move {
            store
                .job_rescue(JobRescue {
                    now: at,
                    limit: 1000,
                    restarted_node: None,
                })
                .await
        }
    })
    .await;
    assert!(failed.is_err(), "the rescue failed");
    assert_eq!(
        rescue(&store, at).await,
        vec![lost.id],
        "rescued by the next rescue"
    );
    store.close().await;
}
