//! Flow control on PostgreSQL: the check of a claimed batch's concurrency keys, and the slots
//! and tokens its limited deliveries take, after the claim (`kairos_store::flow` and
//! `kairos_store::concurrency` say how and why).
//!
//! Differs from SQLite, whose claims are serialized by its one writer, so that a claim's
//! count of a key's running jobs is exact: here claims on many connections and nodes race.
//!
//! **Concurrency keys: one statement, no slots.** The claim left out the jobs of a key at its
//! max by counting the key's running jobs under an unexpired lease, but in its own snapshot:
//! two claims that run at once can each take a job of a key with one free place. So after the
//! claim has committed, one statement ([`KEY_CHECK`]) counts again, for each keyed job of the
//! batch, the key's other running jobs under an unexpired lease (those of other claims, and
//! those of this batch before it in claim order), and puts the job back (`available`, its
//! attempt as it was, `wait_reason = 'concurrency_key'`, due again a moment later) when they
//! already fill its `max`. The check runs after the claim's commit, so of two racing claims
//! the later check sees the other's job: at worst both give their job back, never do both
//! keep it, and no handler starts before its job passed. One round trip, where the slot
//! transaction it replaces (advisory locks, free and read slots, insert, commit) took five.
//!
//! **Endpoint and origin limits** take slots (`max_in_flight`) and tokens (`rate_limit`) in
//! one transaction: an endpoint by its `endpoint_limits` row (`FOR UPDATE`), an origin by its
//! `host_limits` row (after the endpoints), each taken in one order (sorted ids, then sorted
//! origins), so that two claims never wait for each other in a cycle. Under the locks each
//! statement sees what the previous holder committed (READ COMMITTED takes a snapshot per
//! statement), and the primary key `(key, slot)` stays the backstop: an insert that would
//! exceed it does nothing, and its job waits.

use crate::map_err;
use chrono::{DateTime, Utc};
use kairos_core::Job;
use kairos_store::concurrency::{WAIT_BASE, WAIT_CONCURRENCY_KEY, WAIT_MAX, wants};
use kairos_store::flow::{
    EndpointFlow, HOST_PREFIX, Limited, endpoints, flow_plan, lost_race, lost_reason, needed,
    slot_keys, split_targets, wait_totals,
};
use kairos_store::{JobClaim, Result};
use sqlx::{PgConnection, PgPool, Row};
use std::collections::HashSet;

/// Put back the batch's keyed jobs (`$1`, claimed under the lease `$2`) whose key's other
/// running jobs under an unexpired lease (at `$3`) fill its limit: those of other leases, and
/// those of this batch before the job in claim order (`run_at`, `id`), counted on
/// `jobs_keyed_running`. The limit is the job's `max`, or a smaller one of those jobs (as
/// slots do: a job with `max: 1` runs alone). The jobs put back are spread as
/// `concurrency::wait_until` spreads them (`$4` the base wait, `$5` the longest, in ms), and
/// added to the `job_waits` counters (`$6` the reason).
const KEY_CHECK: &str = "WITH over AS (
         SELECT j.id, LEAST(j.concurrency_max, o.lo) AS m,
                row_number() OVER (PARTITION BY j.concurrency_key ORDER BY j.run_at, j.id) AS n
         FROM jobs j
         CROSS JOIN LATERAL (
             SELECT count(*) AS c, min(h.concurrency_max) AS lo FROM jobs h
             WHERE h.concurrency_key = j.concurrency_key AND h.state = 'running'
               AND h.lease_expires_at > $3 AND h.id <> j.id
               AND (h.lease_token IS DISTINCT FROM $2 OR (h.run_at, h.id) < (j.run_at, j.id))) o
         WHERE j.id = ANY($1) AND j.lease_token = $2 AND j.state || '' = 'running'
           AND o.c >= LEAST(j.concurrency_max, o.lo)),
     back AS (
         UPDATE jobs SET state = 'available', attempt = attempt - 1,
                run_at = $3 + LEAST(((over.n - 1) / GREATEST(over.m, 1) + 1) * $4, $5)::float8
                              * interval '1 millisecond',
                wait_reason = $6, locked_by = NULL, lease_token = NULL, lease_expires_at = NULL
         FROM over WHERE jobs.id = over.id AND jobs.lease_token = $2 AND jobs.state || '' = 'running'
         RETURNING jobs.id, jobs.run_at),
     counted AS (
         INSERT INTO job_waits (reason, waits, wait_ms)
         SELECT $6, count(*), sum((EXTRACT(EPOCH FROM run_at - $3) * 1000)::bigint)
         FROM back HAVING count(*) > 0
         ON CONFLICT (reason) DO UPDATE SET waits = job_waits.waits + excluded.waits,
             wait_ms = job_waits.wait_ms + excluded.wait_ms)
     SELECT run_at, id FROM back";

const WHAT: &str = "job claim: flow control";

fn err(e: sqlx::Error) -> kairos_store::Error {
    map_err(WHAT, e)
}

/// Take slots and tokens for `jobs`, claimed by `p` (`limited`: those whose endpoint or
/// origin has limits, and which); put back those that get none. Returns the jobs that may run.
pub(crate) async fn take(
    pool: &PgPool,
    claim: &PgPool,
    p: &JobClaim,
    jobs: Vec<Job>,
    limited: Limited,
) -> Result<(Vec<Job>, Vec<(DateTime<Utc>, String)>)> {
    if !needed(&jobs, &limited) {
        return Ok((jobs, Vec::new()));
    }
    let (jobs, back) = key_check(claim, p, jobs).await?;
    if limited.is_empty() {
        return Ok((jobs, back));
    }
    Ok((endpoint_take(pool, p, jobs, limited).await?, back))
}

/// [`KEY_CHECK`], on a claim connection (`pool`: its plan is made for its parameters, a nested
/// loop over the batch's keys): the batch without the keyed jobs put back, and those put back
/// (when they are due again, id) for the claim cursor.
async fn key_check(
    pool: &PgPool,
    p: &JobClaim,
    jobs: Vec<Job>,
) -> Result<(Vec<Job>, Vec<(DateTime<Utc>, String)>)> {
    let keyed: Vec<String> = wants(&jobs).into_iter().map(|w| w.job_id).collect();
    if keyed.is_empty() {
        return Ok((jobs, Vec::new()));
    }
    let back: Vec<(DateTime<Utc>, String)> = sqlx::query_as(KEY_CHECK)
        .bind(&keyed)
        .bind(&p.lease_token)
        .bind(p.now)
        .bind(WAIT_BASE.num_milliseconds())
        .bind(WAIT_MAX.num_milliseconds())
        .bind(WAIT_CONCURRENCY_KEY)
        .fetch_all(pool)
        .await
        .map_err(err)?;
    if back.is_empty() {
        return Ok((jobs, back));
    }
    let ids: HashSet<&str> = back.iter().map(|b| b.1.as_str()).collect();
    let jobs = jobs
        .into_iter()
        .filter(|j| !ids.contains(j.id.as_str()))
        .collect();
    Ok((jobs, back))
}

/// Slots and tokens for the batch's deliveries to endpoints and origins with limits
/// (`limited`), in one transaction; the jobs that get none are put back. Their concurrency
/// keys were checked before ([`key_check`]): the plan is made without them.
async fn endpoint_take(
    pool: &PgPool,
    p: &JobClaim,
    jobs: Vec<Job>,
    limited: Limited,
) -> Result<Vec<Job>> {
    let unkeyed: Vec<Job> = jobs
        .iter()
        .map(|j| Job {
            concurrency: None,
            ..j.clone()
        })
        .collect();
    let mut tx = pool.begin().await.map_err(err)?;
    let flows = read_flows(&mut tx, &endpoints(&unkeyed, &limited)).await?;
    let keys = slot_keys(&unkeyed, &flows);
    // Free slots are deleted; the rest are held. A slot whose job's lease has expired is free
    // too: its node crashed or lost the job, which the rescuer will hand out again (and it
    // then takes a slot of its own). The SELECT shares the DELETE's snapshot, so
    // it still sees the deleted rows and leaves them out by name.
    let held = sqlx::query(
        "WITH gone AS (
             DELETE FROM concurrency_slots c
             WHERE c.key = ANY($1)
               AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = c.job_id
                               AND j.state || '' = 'running' AND j.lease_token = c.lease_token
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
    let mut plan = flow_plan(&unkeyed, &limited, &flows, &held, p.now);
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
         WHERE jobs.id = w.id AND jobs.lease_token = $4 AND jobs.state || '' = 'running'",
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
