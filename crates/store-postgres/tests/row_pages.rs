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
