//! Migration 0036 on a database created at the previous migration: the queue's samples gain
//! the minute's succeeded and dead jobs. A sample taken before keeps every value and reads
//! them as unknown (`None`), so the overview's charts count its minute from the job table; a
//! sample taken after has them.

use chrono::Duration;
use kairos_store::prelude::*;
use kairos_store::{QueueSampleList, QueueSampleRecord};
use kairos_store_conformance::fixtures::t0;
use kairos_store_sqlite::SqliteStore;
use sqlx::Connection;

mod common;

#[tokio::test]
async fn migration_0036_keeps_the_samples_and_reads_their_finished_jobs_as_unknown() {
    let common::Before {
        _dir,
        path,
        mut conn,
        ..
    } = common::before(36).await;
    let minute = t0().timestamp_millis();
    sqlx::query(
        "INSERT INTO queue_samples (minute, due, available, running, started, lateness_p99_ms,
                                    recorded_at)
         VALUES (?, 3, 5, 2, 7, 120, ?)",
    )
    .bind(minute)
    .bind(minute + 65_000)
    .execute(&mut conn)
    .await
    .expect("a sample of the release before");
    conn.close().await.expect("close");

    let store = SqliteStore::open(&path).await.expect("open and migrate");
    let later = t0() + Duration::minutes(1);
    store
        .queue_sample_record(QueueSampleRecord {
            minute: later,
            now: later + Duration::seconds(65),
        })
        .await
        .expect("record")
        .expect("a new minute");
    let samples = store
        .queue_sample_list(QueueSampleList {
            since: t0(),
            until: t0() + Duration::minutes(2),
        })
        .await
        .expect("list");
    assert_eq!(samples.len(), 2);
    let old = &samples[0];
    assert_eq!(
        (
            old.due,
            old.available,
            old.running,
            old.started,
            old.lateness_p99_ms
        ),
        (3, 5, 2, 7, Some(120))
    );
    assert_eq!((old.succeeded, old.dead), (None, None));
    assert_eq!((samples[1].succeeded, samples[1].dead), (Some(0), Some(0)));
}
