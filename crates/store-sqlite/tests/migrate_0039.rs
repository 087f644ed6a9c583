//! Migration 0039 on a database created before it: the quarters the sampler had counted get
//! their finished jobs per kind and state from what the job table holds.

use kairos_store::quarter_of;
use kairos_store_conformance::fixtures::t0;
use kairos_store_conformance::slo::{
    BEFORE_0039_JOBS, COUNTED_BEFORE_0039, kind_counts_of_the_release_before_after_0039,
};
use kairos_store_sqlite::SqliteStore;
use sqlx::Connection;

mod common;

#[tokio::test]
async fn migration_0039_counts_the_finished_jobs_of_the_quarters_counted_before() {
    let common::Before {
        _dir,
        path,
        mut conn,
        ..
    } = common::before(39).await;
    let q = quarter_of(t0()).timestamp_millis();
    let created = (t0() - chrono::Duration::hours(1)).timestamp_millis();
    for (id, kind, state, minute) in BEFORE_0039_JOBS {
        sqlx::query(
            "INSERT INTO jobs (id, kind, state, payload, max_attempts, run_at, created_at,
                               finished_at)
             VALUES (?, ?, ?, '{}', 3, ?, ?, ?)",
        )
        .bind(id)
        .bind(kind)
        .bind(state)
        .bind(created)
        .bind(created)
        .bind(q + minute * 60_000)
        .execute(&mut conn)
        .await
        .expect("a job of the release before");
    }
    for minute in COUNTED_BEFORE_0039 {
        sqlx::query("INSERT INTO counted_quarters (start, counted_at) VALUES (?, ?)")
            .bind(q + minute * 60_000)
            .bind(q + minute * 60_000)
            .execute(&mut conn)
            .await
            .expect("a quarter counted before");
    }
    conn.close().await.expect("close");

    let store = SqliteStore::open(&path).await.expect("open and migrate");
    kind_counts_of_the_release_before_after_0039(&store).await;
}
