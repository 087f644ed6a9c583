//! The executor's hot path runs on connections that never plan a bitmap scan (see
//! `HOT_SETTINGS` in the crate): the queue's partial indexes are full of dead entries between
//! vacuums, and only plain index scans mark them dead. Skipped loudly when PostgreSQL is not
//! reachable (see `common`).

mod common;

use kairos_store::prelude::*;
use kairos_store_conformance::fixtures::{claim, job, t0};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hot_path_plans_once_without_bitmap_scans_or_nested_loops_and_claims_per_parameters() {
    let Some((store, _guard)) = common::open().await else {
        return;
    };
    let show = |pool: &sqlx::PgPool, setting: &'static str| {
        let pool = pool.clone();
        async move {
            sqlx::query_scalar::<_, String>(sqlx::AssertSqlSafe(format!("SHOW {setting}")))
                .fetch_one(&pool)
                .await
                .expect("show")
        }
    };
    // Claims run on the claim pool (opened lazily: its first connection is the claim's).
    assert_eq!(store.claim_pool().size(), 0);
    store.job_insert(job(t0())).await.unwrap();
    assert_eq!(store.claim_pool().size(), 0);
    assert_eq!(
        store
            .job_claim(claim(t0(), 10, "node-a"))
            .await
            .unwrap()
            .len(),
        1
    );
    assert_eq!(store.claim_pool().size(), 1, "claims use the claim pool");
    assert_eq!(show(store.hot_pool(), "enable_bitmapscan").await, "off");
    assert_eq!(
        show(store.hot_pool(), "plan_cache_mode").await,
        "force_generic_plan"
    );
    assert_eq!(show(store.hot_pool(), "enable_nestloop").await, "off");
    assert_eq!(show(store.hot_pool(), "enable_seqscan").await, "off");
    assert_eq!(show(store.pool(), "enable_seqscan").await, "on");
    assert_eq!(show(store.claim_pool(), "enable_nestloop").await, "on");
    assert_eq!(show(store.pool(), "enable_nestloop").await, "on");
    assert_eq!(
        show(store.pool(), "enable_bitmapscan").await,
        "on",
        "only the hot path changes"
    );
    assert_eq!(show(store.pool(), "plan_cache_mode").await, "auto");
    // Claims commit without waiting for the flush; completions and everything else wait.
    assert_eq!(show(store.claim_pool(), "synchronous_commit").await, "off");
    assert_eq!(show(store.claim_pool(), "enable_bitmapscan").await, "off");
    assert_eq!(
        show(store.claim_pool(), "plan_cache_mode").await,
        "force_custom_plan"
    );
    assert_eq!(show(store.hot_pool(), "synchronous_commit").await, "on");
    assert_eq!(show(store.pool(), "synchronous_commit").await, "on");

    // The hot pool is the store's: it works in the store's schema.
    let path: String = sqlx::query_scalar("SHOW search_path")
        .fetch_one(store.hot_pool())
        .await
        .unwrap();
    assert!(path.contains(store.schema()), "{path}");
    store.close().await;
}

/// The settings are there for the plans they give: on the claim connections the claim reads
/// `jobs_due` in order (an index scan, never a bitmap scan or a scan of the table), from the
/// start (a sweep) and from the cursor, with statistics of a queue of thousands of jobs.
/// A store that will run an engine opens its hot path's connections up front: both claim
/// connections and two of the hot pool's, each with its pool's settings, idle and ready; a
/// store that does not (no warm-up) opens none until its first claim.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warm_hot_path_opens_the_claim_and_completion_connections_before_the_first_claim() {
    let Some((store, _guard)) = common::open().await else {
        return;
    };
    assert_eq!(store.claim_pool().size(), 0, "lazy until warmed");
    assert_eq!(store.hot_pool().size(), 0, "lazy until warmed");
    store.warm_hot_path().await.expect("warm");
    assert_eq!(store.claim_pool().size(), 2);
    assert_eq!(store.hot_pool().size(), 2);
    // Given back to their pools (a dropped connection returns a moment later).
    for _ in 0..200 {
        if store.claim_pool().num_idle() == 2 && store.hot_pool().num_idle() == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(store.claim_pool().num_idle(), 2);
    assert_eq!(store.hot_pool().num_idle(), 2);
    // The connections carry their pools' settings.
    let commit: String = sqlx::query_scalar("SHOW synchronous_commit")
        .fetch_one(store.claim_pool())
        .await
        .expect("show");
    assert_eq!(commit, "off");
    let plans: String = sqlx::query_scalar("SHOW plan_cache_mode")
        .fetch_one(store.hot_pool())
        .await
        .expect("show");
    assert_eq!(plans, "force_generic_plan");
    // Warming again opens nothing more, and a claim uses what is open.
    store.warm_hot_path().await.expect("warm again");
    assert_eq!(store.claim_pool().size(), 2);
    store.job_insert(job(t0())).await.unwrap();
    let got = store
        .job_claim(claim(t0() + chrono::Duration::seconds(1), 10, "one"))
        .await
        .unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(store.claim_pool().size(), 2);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hot_claim_plans_read_jobs_due_in_order() {
    let Some((store, _guard)) = common::open().await else {
        return;
    };
    let jobs = (0..3_000)
        .map(|i| job(t0() + chrono::Duration::seconds(i)))
        .collect::<Vec<_>>();
    store.job_insert_many(jobs).await.expect("insert");
    sqlx::query("ANALYZE jobs")
        .execute(store.pool())
        .await
        .expect("analyze");
    let now = t0() + chrono::Duration::hours(2);
    for from_cursor in [false, true] {
        let sql = format!(
            "EXPLAIN {}",
            kairos_store_postgres::claim_statement(from_cursor)
        );
        let mut q = sqlx::query_scalar::<_, String>(sqlx::AssertSqlSafe(sql))
            .bind("node-a")
            .bind("lease_x")
            .bind(now + chrono::Duration::seconds(30))
            .bind(now)
            .bind(100_i64);
        if from_cursor {
            q = q
                .bind(t0() + chrono::Duration::seconds(1_000))
                .bind("job_0");
        }
        let plan = q
            .fetch_all(store.claim_pool())
            .await
            .expect("explain")
            .join("\n");
        assert!(
            plan.contains("jobs_due"),
            "from_cursor={from_cursor}:\n{plan}"
        );
        assert!(
            !plan.contains("Bitmap"),
            "from_cursor={from_cursor}:\n{plan}"
        );
        assert!(
            !plan.contains("Seq Scan on jobs"),
            "from_cursor={from_cursor}:\n{plan}"
        );
    }
    store.close().await;
}

/// The plan of a hot-path statement as its connection keeps it: prepared, then explained with
/// `n` null parameters (the hot connections make one generic plan per statement).
async fn generic_plan(conn: &mut sqlx::PgConnection, sql: &str, n: usize) -> String {
    sqlx::query(sqlx::AssertSqlSafe(format!("PREPARE hot_check AS {sql}")))
        .execute(&mut *conn)
        .await
        .expect("prepare");
    let nulls = vec!["NULL"; n].join(", ");
    let plan = sqlx::query_scalar::<_, String>(sqlx::AssertSqlSafe(format!(
        "EXPLAIN EXECUTE hot_check({nulls})"
    )))
    .fetch_all(&mut *conn)
    .await
    .expect("explain")
    .join("\n");
    sqlx::query("DEALLOCATE hot_check")
        .execute(&mut *conn)
        .await
        .expect("deallocate");
    plan
}

/// A hot connection plans its statements once, usually while the queue is small. The plans
/// made then must still be right when `jobs_lease` holds an entry for every job run while a
/// snapshot was held: completions and renewals probe the primary key (not all of
/// `jobs_lease`, not the whole table), and the rescue reads `jobs_lease` only up to `now`
/// (from its floor when it has one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hot_plans_made_on_a_small_queue_probe_the_key_and_bound_the_rescue() {
    let Some((store, _guard)) = common::open().await else {
        return;
    };
    let mut conn = store.hot_pool().acquire().await.expect("hot connection");
    for running in [0, 10] {
        if running > 0 {
            let jobs = (0..running).map(|_| job(t0())).collect::<Vec<_>>();
            store.job_insert_many(jobs).await.expect("insert");
            let claimed = store
                .job_claim(claim(t0(), running, "node-a"))
                .await
                .expect("claim");
            assert_eq!(claimed.len(), running as usize);
        }
        for (name, n, sql) in kairos_store_postgres::by_id_statements() {
            let plan = generic_plan(&mut conn, sql, n).await;
            assert!(
                plan.contains("jobs_pkey"),
                "{name}, {running} running:\n{plan}"
            );
            assert!(
                !plan.contains("jobs_lease"),
                "{name}, {running} running:\n{plan}"
            );
            assert!(
                !plan.contains("Seq Scan on jobs"),
                "{name}, {running} running:\n{plan}"
            );
        }
        let rescue = kairos_store_postgres::rescue_statement(false, false);
        let plan = generic_plan(&mut conn, &rescue, 3).await;
        assert!(
            plan.contains("Index Cond: (lease_expires_at < $1)"),
            "rescue, {running} running:\n{plan}"
        );
        let rescue = kairos_store_postgres::rescue_statement(false, true);
        let plan = generic_plan(&mut conn, &rescue, 4).await;
        assert!(
            plan.contains("Index Cond: ((lease_expires_at >= $4) AND (lease_expires_at < $1))"),
            "rescue from the floor, {running} running:\n{plan}"
        );
    }
    drop(conn);
    store.close().await;
}

/// The claim probes the flow-limit tables only for jobs that have an endpoint or an origin:
/// a batch of jobs with neither runs neither probe, and a job with an origin runs the
/// origin's probe once. The claim is explained with `ANALYZE` inside a transaction that is
/// rolled back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claim_probes_flow_limits_only_for_jobs_with_an_endpoint_or_origin() {
    let Some((store, _guard)) = common::open().await else {
        return;
    };
    let mut jobs = (0..200)
        .map(|i| job(t0() + chrono::Duration::milliseconds(i)))
        .collect::<Vec<_>>();
    let mut http = job(t0() + chrono::Duration::seconds(1));
    http.http_origin = Some("https://calls.example".into());
    jobs.push(http);
    store.job_insert_many(jobs).await.expect("insert");
    let now = t0() + chrono::Duration::hours(1);
    let mut tx = store.claim_pool().begin().await.expect("begin");
    let sql = format!(
        "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) {}",
        kairos_store_postgres::claim_statement(false)
    );
    let plan = sqlx::query_scalar::<_, String>(sqlx::AssertSqlSafe(sql))
        .bind("node-a")
        .bind("lease_x")
        .bind(now + chrono::Duration::seconds(30))
        .bind(now)
        .bind(1_000_i64)
        .fetch_all(&mut *tx)
        .await
        .expect("explain")
        .join("\n");
    tx.rollback().await.expect("rollback");
    let probe = |table: &str| {
        plan.lines()
            .find(|l| l.contains(&format!("on {table} ")))
            .unwrap_or_else(|| panic!("no probe of {table}:\n{plan}"))
            .to_string()
    };
    assert!(plan.contains("rows=201"), "all 201 claimed:\n{plan}");
    assert!(
        probe("endpoint_limits").contains("never executed"),
        "no job has an endpoint:\n{plan}"
    );
    assert!(
        probe("host_limits").contains("loops=1)"),
        "one job has an origin:\n{plan}"
    );
    store.close().await;
}
