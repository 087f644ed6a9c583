//! A real failure of the background count of finished jobs: a finished job whose kind SQLite
//! stores as a blob cannot be read back as text, so counting the finished states fails while
//! the queue's count (which never reads that row) still answers.

use chrono::{DateTime, Utc};
use kairos_server::job_counts::JobCounts;
use sqlx::Connection;

/// Insert the unreadable job into the SQLite file at `db`; the connection, to remove it later
/// (`DELETE FROM jobs WHERE id = 'unreadable'`).
pub async fn unreadable_finished_job(db: &std::path::Path) -> sqlx::SqliteConnection {
    let mut raw = sqlx::SqliteConnection::connect(&format!("sqlite://{}", db.display()))
        .await
        .expect("a second connection");
    sqlx::query(
        "INSERT INTO jobs (id, kind, state, payload, max_attempts, run_at, created_at, finished_at)
         VALUES ('unreadable', X'FF', 'succeeded', '{}', 1, 0, 0, 0)",
    )
    .execute(&mut raw)
    .await
    .expect("an unreadable finished job");
    raw
}

/// Wait (up to 10 s) for a background count to fail; when it is tried again.
pub async fn count_failure(counts: &JobCounts) -> DateTime<Utc> {
    for _ in 0..400 {
        if let Some(at) = counts.retry_at() {
            return at;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    panic!("the background count did not fail within 10 s")
}
