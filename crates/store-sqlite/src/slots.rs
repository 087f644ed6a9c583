//! Flow control on SQLite: the slots and tokens a claimed batch's keyed jobs and limited
//! deliveries take, on the writer thread in one transaction after the claim
//! (`kairos_store::flow` and `kairos_store::concurrency` say how and why). The one writer
//! serializes claims, so no lock is needed; the primary key `(key, slot)` is the backstop all
//! the same.

use crate::writer::map_native;
use chrono::{DateTime, Utc};
use kairos_core::Job;
use kairos_core::clock::{from_millis, to_millis};
use kairos_store::Result;
use kairos_store::flow::{
    EndpointFlow, FlowPlan, HOST_PREFIX, Limited, endpoints, flow_plan, lost_race, lost_reason,
    slot_keys, split_targets, wait_totals,
};
use rusqlite::{Connection, OptionalExtension, params};
use std::collections::HashSet;

const WHAT: &str = "job claim: flow control";

fn err(e: rusqlite::Error) -> kairos_store::Error {
    map_native(WHAT, e)
}

/// Take slots and tokens for `jobs` (claimed under `token`; `limited`: those whose endpoint or
/// origin has limits, and which); put back those that get none. Returns the ids of the jobs
/// put back.
pub(crate) fn take(
    conn: &Connection,
    jobs: &[Job],
    limited: &Limited,
    token: &str,
    now: DateTime<Utc>,
) -> Result<HashSet<String>> {
    let flows = read_flows(conn, &endpoints(jobs, limited))?;
    let keys = slot_keys(jobs, &flows);
    let mut held = Vec::new();
    {
        let mut free = conn
            .prepare_cached(
                "DELETE FROM concurrency_slots
                 WHERE key = ?1
                   AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = concurrency_slots.job_id
                                   AND j.state = 'running'
                                   AND j.lease_token = concurrency_slots.lease_token
                                   AND j.lease_expires_at > ?2)",
            )
            .map_err(err)?;
        let mut read = conn
            .prepare_cached("SELECT slot FROM concurrency_slots WHERE key = ?1")
            .map_err(err)?;
        for k in &keys {
            free.execute(params![k, to_millis(now)]).map_err(err)?;
            let slots = read
                .query_map([k], |r| r.get::<_, i64>(0))
                .map_err(err)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(err)?;
            held.extend(slots.into_iter().map(|s| (k.clone(), s)));
        }
    }
    let mut plan = flow_plan(jobs, limited, &flows, &held, now);
    let mut insert = conn
        .prepare_cached(
            "INSERT INTO concurrency_slots (key, slot, job_id, lease_token, taken_at)
             VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (key, slot) DO NOTHING",
        )
        .map_err(err)?;
    let mut lost = Vec::new();
    for (key, slot, job) in &plan.take {
        if insert
            .execute(params![key, slot, job, token, to_millis(now)])
            .map_err(err)?
            == 0
        {
            lost.push((job.clone(), lost_reason(key)));
        }
    }
    if !lost.is_empty() {
        let mut give_back = conn
            .prepare_cached("DELETE FROM concurrency_slots WHERE job_id = ?1 AND lease_token = ?2")
            .map_err(err)?;
        for (job, reason) in lost {
            give_back.execute(params![job, token]).map_err(err)?;
            plan.take.retain(|t| t.2 != job);
            if !plan.wait.iter().any(|w| w.0 == job) {
                plan.wait.push((job, lost_race(now), reason));
            }
        }
    }
    let mut bucket = conn
        .prepare_cached(
            "UPDATE endpoint_limits SET tokens_milli = ?2, refilled_at = ?3 WHERE endpoint_id = ?1",
        )
        .map_err(err)?;
    let mut host_bucket = conn
        .prepare_cached(
            "UPDATE host_limits SET tokens_milli = ?2, refilled_at = ?3 WHERE origin = ?1",
        )
        .map_err(err)?;
    for (target, tokens, at) in &plan.buckets {
        match target.strip_prefix(HOST_PREFIX) {
            Some(origin) => host_bucket.execute(params![origin, tokens, to_millis(*at)]),
            None => bucket.execute(params![target, tokens, to_millis(*at)]),
        }
        .map_err(err)?;
    }
    // The jobs that run need no clearing: the claim cleared their `wait_reason`.
    put_back(conn, &plan, token, now)?;
    Ok(plan.wait.into_iter().map(|w| w.0).collect())
}

/// The limits and buckets of the flow targets `targets` (endpoints, then origins).
fn read_flows(conn: &Connection, targets: &[String]) -> Result<Vec<EndpointFlow>> {
    let (endpoints, origins) = split_targets(targets);
    let mut out = read_table(
        conn,
        "SELECT endpoint_id, per_second, burst, max_in_flight, tokens_milli, refilled_at
         FROM endpoint_limits WHERE endpoint_id = ?1",
        &endpoints,
    )?;
    out.extend(read_table(
        conn,
        "SELECT 'host:' || origin, per_second, burst, max_in_flight, tokens_milli, refilled_at
         FROM host_limits WHERE origin = ?1",
        &origins,
    )?);
    Ok(out)
}

/// The rows of `ids` read by `sql` (which names the flow target first).
fn read_table(conn: &Connection, sql: &str, ids: &[String]) -> Result<Vec<EndpointFlow>> {
    let mut read = conn.prepare_cached(sql).map_err(err)?;
    let mut out = Vec::new();
    for e in ids {
        let f = read
            .query_row([e], |r| {
                Ok(EndpointFlow {
                    endpoint_id: r.get(0)?,
                    per_second: r.get(1)?,
                    burst: r.get(2)?,
                    max_in_flight: r.get(3)?,
                    tokens_milli: r.get(4)?,
                    refilled_at: r.get::<_, Option<i64>>(5)?.map(from_millis),
                })
            })
            .optional()
            .map_err(err)?;
        out.extend(f);
    }
    Ok(out)
}

/// Put the waiting jobs back (`available`, the attempt as it was, due again, why) and add
/// them to the wait counters.
fn put_back(conn: &Connection, plan: &FlowPlan, token: &str, now: DateTime<Utc>) -> Result<()> {
    let mut back = conn
        .prepare_cached(
            "UPDATE jobs SET state = 'available', attempt = attempt - 1, run_at = ?2,
                    wait_reason = ?3, locked_by = NULL, lease_token = NULL,
                    lease_expires_at = NULL
             WHERE id = ?1 AND lease_token = ?4 AND state = 'running'",
        )
        .map_err(err)?;
    for (job, due, reason) in &plan.wait {
        back.execute(params![job, to_millis(*due), reason, token])
            .map_err(err)?;
    }
    let mut count = conn
        .prepare_cached(
            "INSERT INTO job_waits (reason, waits, wait_ms) VALUES (?1, ?2, ?3)
             ON CONFLICT (reason) DO UPDATE SET waits = waits + excluded.waits,
                 wait_ms = wait_ms + excluded.wait_ms",
        )
        .map_err(err)?;
    for (reason, waits, ms) in wait_totals(plan, now) {
        count.execute(params![reason, waits, ms]).map_err(err)?;
    }
    Ok(())
}
