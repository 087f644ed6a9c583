//! Migration 0038 on a PostgreSQL schema created before it: the bounces and complaints
//! recorded before are added to their mails' quarter-hour topic counts, each mail once per
//! type. Skips loudly without a server, unless `KAIROS_TEST_POSTGRES=required`.

mod common;

use chrono::Duration;
use kairos_store_conformance::deliverability::{
    BEFORE_0038_EVENTS, BEFORE_0038_JOBS, bounces_of_the_release_before_after_0038,
};
use kairos_store_conformance::fixtures::t0;
use kairos_store_postgres::PostgresStore;
use sqlx::Connection;

#[tokio::test]
async fn migration_0038_adds_the_bounces_and_complaints_recorded_before_to_their_quarters() {
    let Some(guard) =
        kairos_testkit::pg::fresh_schema("kairos_mig38", "The migration 0038 test").await
    else {
        return;
    };
    let mut conn = common::schema_before(&guard, 38).await;
    for (id, topic, minute) in BEFORE_0038_JOBS {
        sqlx::query(
            "INSERT INTO jobs (id, kind, state, payload, max_attempts, run_at, created_at,
                               finished_at, topic)
             VALUES ($1, 'email', 'succeeded', '{}', 3, $2, $2, $3, $4)",
        )
        .bind(id)
        .bind(t0())
        .bind(t0() + Duration::minutes(minute))
        .bind(topic)
        .execute(&mut conn)
        .await
        .expect("a mail of the release before");
    }
    for (id, event_type, job) in BEFORE_0038_EVENTS {
        sqlx::query(
            "INSERT INTO inbound_events (source, id, type, job_id, action, payload, received_at)
             VALUES ('resend', $1, $2, $3, 'recorded', '{}', $4)",
        )
        .bind(id)
        .bind(event_type)
        .bind(job)
        .bind(t0() + Duration::minutes(10))
        .execute(&mut conn)
        .await
        .expect("an event of the release before");
    }
    conn.close().await.expect("close");

    // Connecting the store applies 0038.
    let store = PostgresStore::connect(&guard.url, &guard.schema)
        .await
        .expect("connect and migrate");
    bounces_of_the_release_before_after_0038(&store).await;
    store.close().await;
}
