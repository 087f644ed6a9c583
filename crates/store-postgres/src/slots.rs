//! Flow control on PostgreSQL: the slots and tokens a claimed batch's keyed jobs and limited
//! deliveries take, in one transaction after the claim (`kairos_store::flow` and
//! `kairos_store::concurrency` say how and why).
//!
//! Differs from SQLite: claims on many nodes take turns. A concurrency key by a
//! transaction-scoped advisory lock per key, an endpoint by its `endpoint_limits` row
//! (`FOR UPDATE`), an origin by its `host_limits` row (after the endpoints), each taken in one
//! order (sorted hashes, then sorted ids, then sorted origins), so that two
//! claims never wait for each other in a cycle. Under the locks each statement sees what the
//! previous holder committed (READ COMMITTED takes a snapshot per statement), and the primary
//! key `(key, slot)` stays the backstop: an insert that would exceed it does nothing, and its
//! job waits.

use crate::map_err;
use chrono::{DateTime, Utc};
use kairos_core::Job;
use kairos_store::concurrency::{keys, wants};
use kairos_store::flow::{
    EndpointFlow, HOST_PREFIX, Limited, endpoints, flow_plan, lost_race, lost_reason, needed,
    slot_keys, split_targets, wait_totals,
};
use kairos_store::{JobClaim, Result};
use sqlx::{PgConnection, PgPool, Row};
use std::collections::HashSet;

/// The advisory lock class of concurrency keys (the two-key form: class, hash of the key).
const LOCK_CLASS: i32 = 3_434;

const WHAT: &str = "job claim: flow control";

fn err(e: sqlx::Error) -> kairos_store::Error {
    map_err(WHAT, e)
}

/// Take slots and tokens for `jobs`, claimed by `p` (`limited`: those whose endpoint or
/// origin has limits, and which); put back those that get none. Returns the jobs that may run.
pub(crate) async fn take(
    pool: &PgPool,
    p: &JobClaim,
    jobs: Vec<Job>,
    limited: Limited,
) -> Result<Vec<Job>> {
    if !needed(&jobs, &limited) {
        return Ok(jobs);
    }
    let mut tx = pool.begin().await.map_err(err)?;
    let user_keys = keys(&wants(&jobs));
    if !user_keys.is_empty() {
        sqlx::query(
            "SELECT pg_advisory_xact_lock($1, h)
             FROM (SELECT DISTINCT hashtext(k) AS h FROM unnest($2::text[]) AS k ORDER BY 1) AS s",
        )
        .bind(LOCK_CLASS)
        .bind(&user_keys)
        .execute(&mut *tx)
        .await
        .map_err(err)?;
    }
    let flows = read_flows(&mut tx, &endpoints(&jobs, &limited)).await?;
    let keys = slot_keys(&jobs, &flows);
    // Free slots are deleted; the rest are held. A slot whose job's lease has expired is free
    // too: its node crashed or lost the job, which the rescuer will hand out again (and it
    // then takes a slot of its own). The SELECT shares the DELETE's snapshot, so
    // it still sees the deleted rows and leaves them out by name.
    let held = sqlx::query(
        "WITH gone AS (
             DELETE FROM concurrency_slots c
             WHERE c.key = ANY($1)
               AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = c.job_id
                               AND j.state = 'running' AND j.lease_token = c.lease_token
                               AND j.lease_expires_at > $2)
             RETURNING c.key, c.slot)
         SELECT key, slot FROM concurrency_slots
         WHERE key = ANY($1) AND (key, slot) NOT IN (SELECT key, slot FROM gone)",
    )
    .bind(&keys)
    .bind(p.now)
    .fetch_all(&mut *tx)
    .await
    .map_err(err)?
    .iter()
    .map(|r| Ok((r.try_get("key")?, i64::from(r.try_get::<i32, _>("slot")?))))
    .collect::<std::result::Result<Vec<(String, i64)>, sqlx::Error>>()
    .map_err(err)?;
    let mut plan = flow_plan(&jobs, &limited, &flows, &held, p.now);
    let (mut k, mut s, mut j) = (Vec::new(), Vec::new(), Vec::new());
    for (key, slot, job) in &plan.take {
        k.push(key.clone());
        s.push(i32::try_from(*slot).unwrap_or(i32::MAX));
        j.push(job.clone());
    }
    let took: Vec<(String, String)> = sqlx::query_as(
        "INSERT INTO concurrency_slots (key, slot, job_id, lease_token, taken_at)
         SELECT t.key, t.slot, t.job_id, $4, $5
         FROM unnest($1::text[], $2::int[], $3::text[]) AS t(key, slot, job_id)
         ORDER BY t.key, t.slot
         ON CONFLICT (key, slot) DO NOTHING
         RETURNING key, job_id",
    )
    .bind(&k)
    .bind(&s)
    .bind(&j)
    .bind(&p.lease_token)
    .bind(p.now)
    .fetch_all(&mut *tx)
    .await
    .map_err(err)?;
    // A slot another claim took after all (the backstop): that job waits too, and gives
    // back any other slot it took.
    let took: HashSet<(String, String)> = took.into_iter().collect();
    let lost: Vec<(String, &'static str)> = plan
        .take
        .iter()
        .filter(|(key, _, job)| !took.contains(&(key.clone(), job.clone())))
        .map(|(key, _, job)| (job.clone(), lost_reason(key)))
        .collect();
    if !lost.is_empty() {
        let ids: Vec<&str> = lost.iter().map(|l| l.0.as_str()).collect();
        sqlx::query("DELETE FROM concurrency_slots WHERE job_id = ANY($1) AND lease_token = $2")
            .bind(&ids)
            .bind(&p.lease_token)
            .execute(&mut *tx)
            .await
            .map_err(err)?;
        let gone: HashSet<&str> = ids.iter().copied().collect();
        plan.take.retain(|t| !gone.contains(t.2.as_str()));
        for (job, reason) in lost {
            if !plan.wait.iter().any(|w| w.0 == job) {
                plan.wait.push((job, lost_race(p.now), reason));
            }
        }
    }
    write_buckets(&mut tx, &plan.buckets).await?;
    put_back(&mut tx, p, &plan).await?;
    // The jobs that run need no clearing: the claim cleared their `wait_reason`.
    tx.commit().await.map_err(err)?;
    let waiting = plan.waiting();
    Ok(jobs
        .into_iter()
        .filter(|j| !waiting.contains(j.id.as_str()))
        .collect())
}

/// The limits and buckets of the flow targets `targets`, their rows locked in one order: the
/// endpoints' by id, then the origins' by origin.
async fn read_flows(tx: &mut PgConnection, targets: &[String]) -> Result<Vec<EndpointFlow>> {
    let (endpoints, origins) = split_targets(targets);
    let mut rows = Vec::new();
    if !endpoints.is_empty() {
        rows.extend(
            sqlx::query(
                "SELECT endpoint_id, per_second, burst, max_in_flight, tokens_milli, refilled_at
                 FROM endpoint_limits WHERE endpoint_id = ANY($1) ORDER BY endpoint_id FOR UPDATE",
            )
            .bind(&endpoints)
            .fetch_all(&mut *tx)
            .await
            .map_err(err)?,
        );
    }
    if !origins.is_empty() {
        rows.extend(
            sqlx::query(
                "SELECT $2::text || origin AS endpoint_id, per_second, burst, max_in_flight,
                        tokens_milli, refilled_at
                 FROM host_limits WHERE origin = ANY($1) ORDER BY origin FOR UPDATE",
            )
            .bind(&origins)
            .bind(HOST_PREFIX)
            .fetch_all(&mut *tx)
            .await
            .map_err(err)?,
        );
    }
    rows.iter()
        .map(|r| {
            Ok(EndpointFlow {
                endpoint_id: r.try_get("endpoint_id")?,
                per_second: r.try_get::<Option<i32>, _>("per_second")?.map(i64::from),
                burst: r.try_get::<Option<i32>, _>("burst")?.map(i64::from),
                max_in_flight: r.try_get::<Option<i32>, _>("max_in_flight")?.map(i64::from),
                tokens_milli: r.try_get("tokens_milli")?,
                refilled_at: r.try_get("refilled_at")?,
            })
        })
        .collect::<std::result::Result<Vec<_>, sqlx::Error>>()
        .map_err(err)
}

/// Store the buckets after the takes.
async fn write_buckets(
    tx: &mut PgConnection,
    buckets: &[(String, i64, DateTime<Utc>)],
) -> Result<()> {
    if buckets.is_empty() {
        return Ok(());
    }
    let (hosts, endpoints): (Vec<_>, Vec<_>) =
        buckets.iter().partition(|b| b.0.starts_with(HOST_PREFIX));
    for (bs, sql) in [
        (
            endpoints,
            "UPDATE endpoint_limits SET tokens_milli = b.tokens, refilled_at = b.at
             FROM unnest($1::text[], $2::bigint[], $3::timestamptz[]) AS b(id, tokens, at)
             WHERE endpoint_limits.endpoint_id = b.id",
        ),
        (
            hosts,
            "UPDATE host_limits SET tokens_milli = b.tokens, refilled_at = b.at
             FROM unnest($1::text[], $2::bigint[], $3::timestamptz[]) AS b(id, tokens, at)
             WHERE host_limits.origin = b.id",
        ),
    ] {
        if bs.is_empty() {
            continue;
        }
        let ids: Vec<&str> = bs
            .iter()
            .map(|b| b.0.strip_prefix(HOST_PREFIX).unwrap_or(b.0.as_str()))
            .collect();
        let tokens: Vec<i64> = bs.iter().map(|b| b.1).collect();
        let at: Vec<DateTime<Utc>> = bs.iter().map(|b| b.2).collect();
        sqlx::query(sql)
            .bind(&ids)
            .bind(&tokens)
            .bind(&at)
            .execute(&mut *tx)
            .await
            .map_err(err)?;
    }
    Ok(())
}

/// Put the waiting jobs back (`available`, the attempt as it was, due again, why) and add
/// them to the wait counters.
async fn put_back(
    tx: &mut PgConnection,
    p: &JobClaim,
    plan: &kairos_store::flow::FlowPlan,
) -> Result<()> {
    if plan.wait.is_empty() {
        return Ok(());
    }
    let ids: Vec<&str> = plan.wait.iter().map(|w| w.0.as_str()).collect();
    let due: Vec<DateTime<Utc>> = plan.wait.iter().map(|w| w.1).collect();
    let why: Vec<&str> = plan.wait.iter().map(|w| w.2).collect();
    sqlx::query(
        "UPDATE jobs SET state = 'available', attempt = attempt - 1, run_at = w.run_at,
                wait_reason = w.reason, locked_by = NULL, lease_token = NULL,
                lease_expires_at = NULL
         FROM unnest($1::text[], $2::timestamptz[], $3::text[]) AS w(id, run_at, reason)
         WHERE jobs.id = w.id AND jobs.lease_token = $4 AND jobs.state = 'running'",
    )
    .bind(&ids)
    .bind(&due)
    .bind(&why)
    .bind(&p.lease_token)
    .execute(&mut *tx)
    .await
    .map_err(err)?;
    let totals = wait_totals(plan, p.now);
    let reasons: Vec<&str> = totals.iter().map(|t| t.0).collect();
    let waits: Vec<i64> = totals.iter().map(|t| t.1).collect();
    let ms: Vec<i64> = totals.iter().map(|t| t.2).collect();
    sqlx::query(
        "INSERT INTO job_waits (reason, waits, wait_ms)
         SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[])
         ON CONFLICT (reason) DO UPDATE SET waits = job_waits.waits + excluded.waits,
             wait_ms = job_waits.wait_ms + excluded.wait_ms",
    )
    .bind(&reasons)
    .bind(&waits)
    .bind(&ms)
    .execute(&mut *tx)
    .await
    .map_err(err)?;
    Ok(())
}
