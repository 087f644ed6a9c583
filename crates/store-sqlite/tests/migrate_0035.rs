//! Migration 0035 on a database created at the previous migration: `jobs` and `job_attempts`
//! are rebuilt with their state checks compared in place. Every row comes through unchanged
//! (ids included), the dedupe keys are still enforced (live ones and a pruned job's
//! tombstone), the checks still refuse an unknown state, and no statement of the queue's hot
//! path builds a temporary b-tree for them any more.

use kairos_store::prelude::*;
use kairos_store::{ErrorKind, JobInsert};
use kairos_store_conformance::fixtures;
use kairos_store_sqlite::SqliteStore;
use sqlx::{Connection, Row};

mod common;

use common::opcodes;

/// Every column of every job and attempt, as text, in id order.
async fn dump(conn: &mut sqlx::SqliteConnection) -> Vec<String> {
    let mut out = Vec::new();
    for sql in [
        "SELECT * FROM jobs ORDER BY id",
        "SELECT * FROM job_attempts ORDER BY id",
    ] {
        for row in sqlx::query(sql).fetch_all(&mut *conn).await.expect("dump") {
            let cols: Vec<String> = (0..row.len())
                .map(|i| {
                    row.try_get::<Option<String>, _>(i)
                        .map(|v| format!("{v:?}"))
                        .or_else(|_| row.try_get::<Option<i64>, _>(i).map(|v| format!("{v:?}")))
                        .expect("text or integer")
                })
                .collect();
            out.push(cols.join("|"));
        }
    }
    out
}

/// The statements of the hot path that set a job's state or insert an attempt.
const WRITES: [&str; 3] = [
    "INSERT INTO jobs (id, kind, state, payload, max_attempts, run_at, created_at)
     VALUES ('job_x', 'webhook', 'available', '{}', 1, 0, 0)",
    "UPDATE jobs SET state = 'succeeded', finished_at = 1 WHERE id = 'job_x'",
    "INSERT INTO job_attempts (job_id, attempt, started_at, finished_at, outcome)
     VALUES ('job_x', 1, 0, 1, 'failed')",
];

#[tokio::test]
async fn migration_0035_keeps_every_job_attempt_and_key_and_checks_states_without_a_temporary_btree()
 {
    // The schema as the release before 0035 left it.
    let common::Before {
        _dir,
        path,
        url,
        mut conn,
    } = common::before(35).await;
    // Before: each of these statements opens a temporary b-tree for an IN list.
    for sql in WRITES {
        assert!(
            opcodes(&path, sql).iter().any(|o| o == "OpenEphemeral"),
            "the check this migration replaces builds a b-tree: {sql}"
        );
    }
    // One job in each state, some keyed, with every kind of column set somewhere.
    for (i, state) in kairos_core::JobState::ALL
        .iter()
        .map(|s| s.as_str())
        .enumerate()
    {
        sqlx::query(
            "INSERT INTO jobs (id, kind, state, payload, endpoint_id, dedupe_key, attempt,
                               max_attempts, run_at, created_at, finished_at, lease_token,
                               last_error, topic, concurrency_key, concurrency_max, http_origin)
             VALUES (?1, 'webhook', ?2, '{\"n\":1}', 'ep_1', ?3, ?4, 5, ?5, 0, ?6, ?7, ?8,
                     'weekly', ?9, 2, 'https://a.example:443')",
        )
        .bind(format!("job_old_{i}"))
        .bind(state)
        .bind((i % 2 == 0).then(|| format!("key_{i}")))
        .bind(i as i64)
        .bind(1_000 + i as i64)
        .bind((i >= 2).then_some(2_000 + i as i64))
        .bind((state == "running").then_some("lease_old"))
        .bind((state == "dead").then_some("boom"))
        .bind((i == 1).then_some("tenant_1"))
        .execute(&mut conn)
        .await
        .expect("insert an old job");
    }
    for (attempt, outcome) in [(1, "failed"), (2, "lost"), (3, "cancelled")] {
        sqlx::query(
            "INSERT INTO job_attempts (job_id, attempt, started_at, finished_at, outcome,
                                       status_code, error, node)
             VALUES ('job_old_5', ?1, 10, 20, ?2, 503, 'unavailable', 'node_1')",
        )
        .bind(attempt)
        .bind(outcome)
        .execute(&mut conn)
        .await
        .expect("insert an old attempt");
    }
    // A pruned job's key: its tombstone.
    sqlx::query(
        "INSERT INTO dedupe_tombstones (dedupe_key, job_id, finished_at)
         VALUES ('key_pruned', 'job_gone', 5)",
    )
    .execute(&mut conn)
    .await
    .expect("tombstone");
    let before = dump(&mut conn).await;
    conn.close().await.expect("close");

    // Opening the store applies 0035.
    let store = SqliteStore::open(&path).await.expect("open and migrate");
    // A live key answers with its job, a pruned one is still refused, a new one is created.
    let keyed = |key: &str| JobInsert {
        dedupe_key: Some(key.into()),
        ..fixtures::job(fixtures::t0())
    };
    let again = store
        .job_insert(keyed("key_2"))
        .await
        .expect("insert with a live key");
    assert!(!again.created, "a live key inserts nothing");
    assert_eq!(again.job.id, "job_old_2");
    let pruned = store
        .job_insert(keyed("key_pruned"))
        .await
        .expect_err("a pruned job's key is refused");
    assert_eq!(pruned.kind(), ErrorKind::Conflict);
    let fresh = store
        .job_insert(keyed("key_new"))
        .await
        .expect("insert with a new key");
    assert!(fresh.created);
    store.close().await;

    let mut conn = sqlx::SqliteConnection::connect(&url)
        .await
        .expect("reconnect");
    let after = dump(&mut conn).await;
    let fresh_row = after
        .iter()
        .position(|r| r.starts_with(&format!("Some({:?})", fresh.job.id)))
        .expect("the new job is stored");
    let mut kept = after.clone();
    kept.remove(fresh_row);
    assert_eq!(kept, before, "every old job and attempt, column by column");
    // The checks still refuse an unknown state and outcome.
    for sql in [
        "INSERT INTO jobs (id, kind, state, payload, max_attempts, run_at, created_at)
         VALUES ('job_bad', 'webhook', 'finished', '{}', 1, 0, 0)",
        "UPDATE jobs SET state = 'paused' WHERE id = 'job_old_0'",
        "INSERT INTO job_attempts (job_id, attempt, started_at, finished_at, outcome)
         VALUES ('job_old_0', 1, 0, 1, 'timeout')",
    ] {
        let err = sqlx::query(sql)
            .execute(&mut conn)
            .await
            .expect_err("an unknown state is refused");
        assert!(err.to_string().contains("CHECK"), "{sql}: {err}");
    }
    // The next attempt continues the ids (the endpoint health service reads past the last).
    let id: i64 = sqlx::query_scalar(
        "INSERT INTO job_attempts (job_id, attempt, started_at, finished_at, outcome)
         VALUES ('job_old_5', 4, 30, 40, 'failed') RETURNING id",
    )
    .fetch_one(&mut conn)
    .await
    .expect("a new attempt");
    assert_eq!(id, 4);
    conn.close().await.expect("close");
    // After: no temporary b-tree on the hot path's writes.
    for sql in WRITES {
        assert!(
            !opcodes(&path, sql).iter().any(|o| o == "OpenEphemeral"),
            "a state check still builds a b-tree: {sql}"
        );
    }
}
