//! The job table leaves a fifth of each page free (`fillfactor`, migration 0034): a claim's new row
//! version lands on the page of the old one instead of on a page added at the end of the
//! table, where every writer of a busy queue meets. Skipped loudly when PostgreSQL is not
//! reachable (see `common`).

mod common;

use chrono::Duration;
use kairos_store::prelude::*;
use kairos_store_conformance::fixtures::{claim, job, t0};
use sqlx::Connection;
use std::collections::HashMap;

/// The heap page of every job row in `schema`.
async fn pages(url: &str, schema: &str) -> HashMap<String, i64> {
    let mut conn = sqlx::PgConnection::connect(url).await.expect("connect");
    let sql = format!("SELECT id::text, ((ctid::text::point)[0])::bigint FROM \"{schema}\".jobs");
    sqlx::query_as::<_, (String, i64)>(sqlx::AssertSqlSafe(sql))
        .fetch_all(&mut conn)
        .await
        .expect("pages")
        .into_iter()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claimed_rows_stay_on_their_page() {
    let Some((store, guard)) = common::open().await else {
        return;
    };
    const JOBS: i64 = 600;
    let jobs = (0..JOBS)
        .map(|i| job(t0() + Duration::milliseconds(i)))
        .collect::<Vec<_>>();
    store.job_insert_many(jobs).await.expect("insert");
    let before = pages(&guard.url, &guard.schema).await;
    let used: std::collections::HashSet<_> = before.values().collect();
    assert!(
        used.len() > 2,
        "the jobs fill several pages: {}",
        used.len()
    );

    let claimed = store
        .job_claim(claim(t0() + Duration::hours(1), JOBS, "a"))
        .await
        .expect("claim");
    assert_eq!(claimed.len() as i64, JOBS);
    let after = pages(&guard.url, &guard.schema).await;
    let stayed = before
        .iter()
        .filter(|(id, page)| after.get(*id) == Some(page))
        .count() as i64;
    // A full page (fillfactor 100) has room for no new version, so every claimed row moves
    // to a page at the end (0 of 600 stay); with a fifth of each page free, the versions that
    // fit there stay (136 of 600 here: a page whose every row is claimed at once, and each
    // running row is longer by its lease).
    assert!(
        stayed * 8 >= JOBS,
        "{stayed} of {JOBS} claimed rows stayed on their page"
    );
    store.close().await;
}

/// Migration 0034 on a schema created at 0033: it sets the room for pages written from then
/// on and moves no row (each keeps its tid), so every job and every dedupe key is still there:
/// the due job is claimed, and an insert with a taken key answers with the job that holds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migration_0034_moves_no_row_and_keeps_every_job_and_key() {
    let Some(guard) =
        kairos_testkit::pg::fresh_schema("kairos_mig34", "The migration 0034 test").await
    else {
        return;
    };
    let mut conn = common::schema_before(&guard, 34).await;
    for (id, state, key) in [
        ("job_due", "available", None),
        ("job_done", "succeeded", Some("weekly:rcp_1:2026-W49")),
    ] {
        sqlx::query(
            "INSERT INTO jobs (id, kind, state, payload, dedupe_key, max_attempts, run_at,
                               created_at)
             VALUES ($1, 'webhook', $2, '{}'::jsonb, $3, 3, $4, $4)",
        )
        .bind(id)
        .bind(state)
        .bind(key)
        .bind(t0())
        .execute(&mut conn)
        .await
        .expect("insert a job before 0034");
    }
    const TIDS: &str = "SELECT id::text, ctid::text FROM jobs ORDER BY id";
    let before_tids: Vec<(String, String)> = sqlx::query_as(TIDS)
        .fetch_all(&mut conn)
        .await
        .expect("tids");

    // Connecting the store applies 0034.
    let store = common::second(&guard).await;
    let options: Option<Vec<String>> = sqlx::query_scalar(
        "SELECT reloptions::text[] FROM pg_class
         WHERE oid = format('%I.jobs', $1::text)::regclass",
    )
    .bind(&guard.schema)
    .fetch_one(&mut conn)
    .await
    .expect("reloptions");
    assert_eq!(options, Some(vec!["fillfactor=80".to_string()]));
    let after_tids: Vec<(String, String)> = sqlx::query_as(TIDS)
        .fetch_all(&mut conn)
        .await
        .expect("tids");
    assert_eq!(after_tids, before_tids, "no row moved");

    let mut again = job(t0());
    again.dedupe_key = Some("weekly:rcp_1:2026-W49".into());
    let answer = store
        .job_insert(again)
        .await
        .expect("insert with a taken key");
    assert!(!answer.created);
    assert_eq!(answer.job.id, "job_done");
    let claimed = store
        .job_claim(claim(t0() + Duration::seconds(1), 10, "a"))
        .await
        .expect("claim");
    assert_eq!(
        claimed.iter().map(|j| j.id.as_str()).collect::<Vec<_>>(),
        ["job_due"]
    );
    store.close().await;
    conn.close().await.expect("close");
}
