//! The native writer thread (queue hot path) and the sqlx write pool (schedules, cancel, the
//! other domains) write the same file. Under concurrent load from both, every call must
//! succeed: each side waits for SQLite's write lock (`busy_timeout`, `BEGIN IMMEDIATE` on the
//! native side) instead of failing with `SQLITE_BUSY` or deadlocking.

use chrono::Duration;
use kairos_core::JobState;
use kairos_store::prelude::*;
use kairos_store::{JobCancel, ScheduleFire};
use kairos_store_conformance::fixtures::{claim, job, schedule, t0};
use kairos_store_sqlite::SqliteStore;
use std::sync::Arc;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn both_writers_under_load_never_fail() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Arc::new(
        SqliteStore::open(&dir.path().join("kairos.db"))
            .await
            .expect("open"),
    );
    let now = t0();
    // Jobs to cancel through the sqlx pool while the writer thread claims others.
    let victims: Vec<_> = (0..200).map(|_| job(now + Duration::days(1))).collect();
    let victim_ids = store.job_insert_many(victims).await.expect("insert");

    let mut tasks = tokio::task::JoinSet::new();
    // sqlx side: schedules created and fired (a transaction that inserts jobs), cancellations.
    for i in 0..40 {
        let s = store.clone();
        tasks.spawn(async move {
            let sch = s
                .schedule_create(schedule(&format!("s{i}"), now))
                .await
                .map_err(|e| format!("schedule create: {e}"))?;
            s.schedule_fire(ScheduleFire {
                schedule_id: sch.id.clone(),
                expected_next_fire_at: Some(now),
                next_fire_at: Some(now + Duration::days(1)),
                last_fire_at: Some(now),
                jobs: vec![job(now + Duration::days(2))],
                gaps: Vec::new(),
                on_time: false,
                buffer: None,
                now,
            })
            .await
            .map_err(|e| format!("schedule fire: {e}"))?;
            Ok::<usize, String>(0)
        });
    }
    for id in victim_ids.clone() {
        let s = store.clone();
        tasks.spawn(async move {
            s.job_cancel(JobCancel {
                id,
                reason: "test".into(),
                now,
            })
            .await
            .map_err(|e| format!("job cancel: {e}"))?;
            Ok(0)
        });
    }
    // Writer-thread side: inserts and claims of due jobs.
    for _ in 0..40 {
        let s = store.clone();
        tasks.spawn(async move {
            s.job_insert_many((0..25).map(|_| job(now)).collect())
                .await
                .map_err(|e| format!("job insert many: {e}"))?;
            let got = s
                .job_claim(claim(now, 25, "n"))
                .await
                .map_err(|e| format!("job claim: {e}"))?;
            Ok(got.len())
        });
    }
    let mut claimed = 0;
    while let Some(r) = tasks.join_next().await {
        claimed += r.expect("task").expect("every call succeeds");
    }
    assert_eq!(claimed, 40 * 25, "every due job claimed exactly once");
    for id in &victim_ids {
        let j = store.job_get(id).await.expect("get").expect("exists");
        assert_eq!(j.state, JobState::Cancelled);
    }
    store.close().await;
}
