//! Migration 0038 on a database created before it: the bounces and complaints recorded before
//! are added to their mails' quarter-hour topic counts, each mail once per type, so the
//! monitor's rates read the same once the sampler counts the quarters.

use kairos_store_conformance::deliverability::{
    BEFORE_0038_EVENTS, BEFORE_0038_JOBS, bounces_of_the_release_before_after_0038,
};
use kairos_store_conformance::fixtures::t0;
use kairos_store_sqlite::SqliteStore;
use sqlx::Connection;

mod common;

#[tokio::test]
async fn migration_0038_adds_the_bounces_and_complaints_recorded_before_to_their_quarters() {
    let common::Before {
        _dir,
        path,
        mut conn,
        ..
    } = common::before(38).await;
    let t = t0().timestamp_millis();
    for (id, topic, minute) in BEFORE_0038_JOBS {
        sqlx::query(
            "INSERT INTO jobs (id, kind, state, payload, max_attempts, run_at, created_at,
                               finished_at, topic)
             VALUES (?, 'email', 'succeeded', '{}', 3, ?, ?, ?, ?)",
        )
        .bind(id)
        .bind(t)
        .bind(t)
        .bind(t + minute * 60_000)
        .bind(topic)
        .execute(&mut conn)
        .await
        .expect("a mail of the release before");
    }
    for (id, event_type, job) in BEFORE_0038_EVENTS {
        sqlx::query(
            "INSERT INTO inbound_events (source, id, type, job_id, action, payload, received_at)
             VALUES ('resend', ?, ?, ?, 'recorded', '{}', ?)",
        )
        .bind(id)
        .bind(event_type)
        .bind(job)
        .bind(t + 600_000)
        .execute(&mut conn)
        .await
        .expect("an event of the release before");
    }
    conn.close().await.expect("close");

    let store = SqliteStore::open(&path).await.expect("open and migrate");
    bounces_of_the_release_before_after_0038(&store).await;
}
