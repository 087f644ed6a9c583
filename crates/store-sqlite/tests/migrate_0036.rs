//! Migrations 0036 and 0037 on a database created before them: the queue's samples gain the
//! minute's succeeded and dead jobs, the monitor's last pass what it found. A sample taken
//! before keeps every value and reads them as unknown (`None`), so the overview's charts count
//! its minute from the job table; a sample taken after has them. A pass recorded before keeps
//! its instant and has no findings, so the overview evaluates the checks itself.

use kairos_store_conformance::fixtures::t0;
use kairos_store_sqlite::SqliteStore;
use sqlx::Connection;

mod common;

#[tokio::test]
async fn migrations_0036_and_0037_keep_samples_and_passes_and_read_what_they_lack_as_unknown() {
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
    sqlx::query("INSERT INTO monitor_passes (service, last_pass_at) VALUES ('monitor', ?)")
        .bind(minute + 30_000)
        .execute(&mut conn)
        .await
        .expect("a pass of the release before");
    conn.close().await.expect("close");

    let store = SqliteStore::open(&path).await.expect("open and migrate");
    kairos_store_conformance::timeline::samples_and_pass_of_the_release_before_after_0037(&store)
        .await;
}
