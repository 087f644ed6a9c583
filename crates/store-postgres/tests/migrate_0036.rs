//! Migrations 0036 and 0037 on a PostgreSQL schema created before them: the queue's samples
//! gain the minute's succeeded and dead jobs, the monitor's last pass what it found. A sample
//! taken before keeps every value and reads them as unknown (`None`); a sample taken after has
//! them. A pass recorded before keeps its instant and has no findings. Skips loudly without a
//! server, unless `KAIROS_TEST_POSTGRES=required`.

mod common;

use chrono::Duration;
use kairos_store_conformance::fixtures::t0;
use kairos_store_postgres::PostgresStore;
use sqlx::Connection;

#[tokio::test]
async fn migrations_0036_and_0037_keep_samples_and_passes_and_read_what_they_lack_as_unknown() {
    let Some(guard) =
        kairos_testkit::pg::fresh_schema("kairos_mig36", "The migration 0036 test").await
    else {
        return;
    };
    let mut conn = common::schema_before(&guard, 36).await;
    sqlx::query(
        "INSERT INTO queue_samples (minute, due, available, running, started, lateness_p99_ms,
                                    recorded_at)
         VALUES ($1, 3, 5, 2, 7, 120, $2)",
    )
    .bind(t0())
    .bind(t0() + Duration::seconds(65))
    .execute(&mut conn)
    .await
    .expect("a sample of the release before");
    sqlx::query("INSERT INTO monitor_passes (service, last_pass_at) VALUES ('monitor', $1)")
        .bind(t0() + Duration::seconds(30))
        .execute(&mut conn)
        .await
        .expect("a pass of the release before");
    conn.close().await.expect("close");

    // Connecting the store applies 0036, 0037 and the rest.
    let store = PostgresStore::connect(&guard.url, &guard.schema)
        .await
        .expect("connect and migrate");
    kairos_store_conformance::timeline::samples_and_pass_of_the_release_before_after_0037(&store)
        .await;
    store.close().await;
}
