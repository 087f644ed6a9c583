//! Migration 0026 on a database created at the previous migration: the audience columns of
//! older jobs are filled from their payload's shape (a string `topic`, `recipient_id`,
//! `variant`), whatever the job's kind; a payload of another shape leaves them empty.

use kairos_store_sqlite::SqliteStore;
use sqlx::Connection;

mod common;

/// A job's id and its audience columns: topic, recipient, variant.
type AudienceRow = (String, Option<String>, Option<String>, Option<String>);

#[tokio::test]
async fn migration_0026_fills_audience_columns_by_payload_shape_not_by_kind() {
    // The schema as the release before 0026 left it.
    let common::Before {
        _dir,
        path,
        url,
        mut conn,
    } = common::before(26).await;
    for (id, kind, payload) in [
        (
            "job_mail",
            "email",
            r#"{"topic":"weekly","recipient_id":"rcp_1","variant":"b"}"#,
        ),
        // Another kind with the audience's shape: filled too (no kind name in the migration).
        (
            "job_hook",
            "webhook",
            r#"{"topic":"weekly","recipient_id":"rcp_2"}"#,
        ),
        // Not that shape: a number, an object, nothing.
        (
            "job_num",
            "email",
            r#"{"topic":7,"recipient_id":{"id":"x"}}"#,
        ),
        ("job_plain", "webhook", r#"{"n":1}"#),
    ] {
        sqlx::query(
            "INSERT INTO jobs (id, kind, state, payload, max_attempts, run_at, created_at)
             VALUES (?1, ?2, 'succeeded', ?3, 1, 0, 0)",
        )
        .bind(id)
        .bind(kind)
        .bind(payload)
        .execute(&mut conn)
        .await
        .expect("insert an old job");
    }
    conn.close().await.expect("close");

    // Opening the store applies 0026 and the rest.
    let store = SqliteStore::open(&path).await.expect("open and migrate");
    store.close().await;
    let mut conn = sqlx::SqliteConnection::connect(&url)
        .await
        .expect("reconnect");
    let rows: Vec<AudienceRow> =
        sqlx::query_as("SELECT id, topic, recipient_id, variant FROM jobs ORDER BY id")
            .fetch_all(&mut conn)
            .await
            .expect("read");
    let s = |v: &str| Some(v.to_string());
    assert_eq!(
        rows,
        vec![
            ("job_hook".into(), s("weekly"), s("rcp_2"), None),
            ("job_mail".into(), s("weekly"), s("rcp_1"), s("b")),
            ("job_num".into(), None, None, None),
            ("job_plain".into(), None, None, None),
        ]
    );
}
