//! Migration 0026 on a PostgreSQL schema created at the previous migration: the audience
//! columns of older jobs are filled from their payload's shape (a string `topic`,
//! `recipient_id`, `variant`), whatever the job's kind; a payload of another shape leaves them
//! empty. Skips loudly without a server, unless `KAIROS_TEST_POSTGRES=required`.

mod common;

use kairos_store_postgres::PostgresStore;
use sqlx::Connection;

/// A job's id and its audience columns: topic, recipient, variant.
type AudienceRow = (String, Option<String>, Option<String>, Option<String>);

#[tokio::test]
async fn migration_0026_fills_audience_columns_by_payload_shape_not_by_kind_on_postgres() {
    let Some(guard) =
        kairos_testkit::pg::fresh_schema("kairos_mig26", "The migration 0026 test").await
    else {
        return;
    };
    let mut conn = common::schema_before(&guard, 26).await;
    for (id, kind, payload) in [
        (
            "job_mail",
            "email",
            r#"{"topic":"weekly","recipient_id":"rcp_1","variant":"b"}"#,
        ),
        (
            "job_hook",
            "webhook",
            r#"{"topic":"weekly","recipient_id":"rcp_2"}"#,
        ),
        (
            "job_num",
            "email",
            r#"{"topic":7,"recipient_id":{"id":"x"}}"#,
        ),
        ("job_plain", "webhook", r#"{"n":1}"#),
    ] {
        sqlx::query(
            "INSERT INTO jobs (id, kind, state, payload, max_attempts, run_at, created_at)
             VALUES ($1, $2, 'succeeded', $3::jsonb, 1, now(), now())",
        )
        .bind(id)
        .bind(kind)
        .bind(payload)
        .execute(&mut conn)
        .await
        .expect("insert an old job");
    }
    // Connecting the store applies 0026 and the rest.
    let store = PostgresStore::connect(&guard.url, &guard.schema)
        .await
        .expect("connect and migrate");
    store.close().await;
    let rows: Vec<AudienceRow> =
        sqlx::query_as("SELECT id, topic, recipient_id, variant FROM jobs ORDER BY id")
            .fetch_all(&mut conn)
            .await
            .expect("read");
    conn.close().await.expect("close");
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
