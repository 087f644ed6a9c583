//! Migration 0039 on a PostgreSQL schema created before it: the quarters the sampler had
//! counted get their finished jobs per kind and state from what the job table holds. Skips
//! loudly without a server, unless `KAIROS_TEST_POSTGRES=required`.

mod common;

use chrono::Duration;
use kairos_store::quarter_of;
use kairos_store_conformance::fixtures::t0;
use kairos_store_conformance::slo::{
    BEFORE_0039_JOBS, COUNTED_BEFORE_0039, kind_counts_of_the_release_before_after_0039,
};
use kairos_store_postgres::PostgresStore;
use sqlx::Connection;

#[tokio::test]
async fn migration_0039_counts_the_finished_jobs_of_the_quarters_counted_before() {
    let Some(guard) =
        kairos_testkit::pg::fresh_schema("kairos_mig39", "The migration 0039 test").await
    else {
        return;
    };
    let mut conn = common::schema_before(&guard, 39).await;
    let q = quarter_of(t0());
    for (id, kind, state, minute) in BEFORE_0039_JOBS {
        sqlx::query(
            "INSERT INTO jobs (id, kind, state, payload, max_attempts, run_at, created_at,
                               finished_at)
             VALUES ($1, $2, $3, '{}', 3, $4, $4, $5)",
        )
        .bind(id)
        .bind(kind)
        .bind(state)
        .bind(t0() - Duration::hours(1))
        .bind(q + Duration::minutes(minute))
        .execute(&mut conn)
        .await
        .expect("a job of the release before");
    }
    for minute in COUNTED_BEFORE_0039 {
        sqlx::query("INSERT INTO counted_quarters (start, counted_at) VALUES ($1, $1)")
            .bind(q + Duration::minutes(minute))
            .execute(&mut conn)
            .await
            .expect("a quarter counted before");
    }
    conn.close().await.expect("close");

    // Connecting the store applies 0039.
    let store = PostgresStore::connect(&guard.url, &guard.schema)
        .await
        .expect("connect and migrate");
    kind_counts_of_the_release_before_after_0039(&store).await;
    store.close().await;
}
