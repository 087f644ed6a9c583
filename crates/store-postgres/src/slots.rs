//! Concurrency keys on PostgreSQL: the slots a claimed batch's keyed jobs take, in one
//! transaction after the claim (`kairos_store::concurrency` says how and why).
//!
//! Differs from SQLite: claims of one key on many nodes take turns on a transaction-scoped
//! advisory lock per key, taken in one order (sorted hashes) so that two claims never wait
//! for each other in a cycle. Under the lock each statement sees the slots the previous
//! holder committed (READ COMMITTED takes a snapshot per statement), and the primary key
//! `(key, slot)` stays the backstop: an insert that would exceed it does nothing, and its job
//! waits.

use crate::map_err;
use chrono::{DateTime, Utc};
use kairos_core::Job;
use kairos_store::concurrency::{WAIT_CONCURRENCY_KEY, keys, plan, waited_ms, wants};
use kairos_store::{JobClaim, Result};
use sqlx::{PgPool, Row};
use std::collections::HashSet;

/// The advisory lock class of concurrency keys (the two-key form: class, hash of the key).
const LOCK_CLASS: i32 = 3_434;

/// Take slots for the keyed jobs of `jobs`, claimed by `p`; put back those that get none.
/// Returns the jobs that may run (every job without a key, and those that took a slot).
pub(crate) async fn take(pool: &PgPool, p: &JobClaim, jobs: Vec<Job>) -> Result<Vec<Job>> {
    let wants = wants(&jobs);
    if wants.is_empty() {
        return Ok(jobs);
    }
    let what = "job claim: concurrency slots";
    let keys = keys(&wants);
    let mut tx = pool.begin().await.map_err(|e| map_err(what, e))?;
    sqlx::query(
        "SELECT pg_advisory_xact_lock($1, h)
         FROM (SELECT DISTINCT hashtext(k) AS h FROM unnest($2::text[]) AS k ORDER BY 1) AS s",
    )
    .bind(LOCK_CLASS)
    .bind(&keys)
    .execute(&mut *tx)
    .await
    .map_err(|e| map_err(what, e))?;
    // Free slots are deleted; the rest are held. The SELECT shares the DELETE's snapshot, so
    // it still sees the deleted rows and leaves them out by name.
    let held = sqlx::query(
        "WITH gone AS (
             DELETE FROM concurrency_slots c
             WHERE c.key = ANY($1)
               AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = c.job_id
                               AND j.state = 'running' AND j.lease_token = c.lease_token)
             RETURNING c.key, c.slot)
         SELECT key, slot FROM concurrency_slots
         WHERE key = ANY($1) AND (key, slot) NOT IN (SELECT key, slot FROM gone)",
    )
    .bind(&keys)
    .fetch_all(&mut *tx)
    .await
    .map_err(|e| map_err(what, e))?
    .iter()
    .map(|r| Ok((r.try_get("key")?, i64::from(r.try_get::<i32, _>("slot")?))))
    .collect::<std::result::Result<Vec<(String, i64)>, sqlx::Error>>()
    .map_err(|e| map_err(what, e))?;
    let mut plan = plan(&wants, &held, p.now);
    let (k, s, j): (Vec<String>, Vec<i32>, Vec<String>) = plan
        .take
        .iter()
        .map(|(k, s, j)| (k.clone(), i32::try_from(*s).unwrap_or(i32::MAX), j.clone()))
        .fold((vec![], vec![], vec![]), |mut acc, (k, s, j)| {
            acc.0.push(k);
            acc.1.push(s);
            acc.2.push(j);
            acc
        });
    let took: Vec<String> = sqlx::query_scalar(
        "INSERT INTO concurrency_slots (key, slot, job_id, lease_token, taken_at)
         SELECT t.key, t.slot, t.job_id, $4, $5
         FROM unnest($1::text[], $2::int[], $3::text[]) AS t(key, slot, job_id)
         ORDER BY t.key, t.slot
         ON CONFLICT (key, slot) DO NOTHING
         RETURNING job_id",
    )
    .bind(&k)
    .bind(&s)
    .bind(&j)
    .bind(&p.lease_token)
    .bind(p.now)
    .fetch_all(&mut *tx)
    .await
    .map_err(|e| map_err(what, e))?;
    // A slot another claim took after all (the backstop): that job waits too.
    let took: HashSet<String> = took.into_iter().collect();
    for (key, _, job) in plan.take.iter().filter(|t| !took.contains(&t.2)) {
        let max = wants.iter().find(|w| w.key == *key).map_or(1, |w| w.max);
        plan.wait
            .push((job.clone(), kairos_store::concurrency::wait_until(p.now, 0, max)));
    }
    let (ids, due): (Vec<String>, Vec<DateTime<Utc>>) = plan.wait.iter().cloned().unzip();
    if !ids.is_empty() {
        sqlx::query(
            "UPDATE jobs SET state = 'available', attempt = attempt - 1, run_at = w.run_at,
                    wait_reason = $3, locked_by = NULL, lease_token = NULL,
                    lease_expires_at = NULL
             FROM unnest($1::text[], $2::timestamptz[]) AS w(id, run_at)
             WHERE jobs.id = w.id AND jobs.lease_token = $4 AND jobs.state = 'running'",
        )
        .bind(&ids)
        .bind(&due)
        .bind(WAIT_CONCURRENCY_KEY)
        .bind(&p.lease_token)
        .execute(&mut *tx)
        .await
        .map_err(|e| map_err(what, e))?;
        sqlx::query(
            "INSERT INTO job_waits (reason, waits, wait_ms) VALUES ($1, $2, $3)
             ON CONFLICT (reason) DO UPDATE SET waits = job_waits.waits + excluded.waits,
                 wait_ms = job_waits.wait_ms + excluded.wait_ms",
        )
        .bind(WAIT_CONCURRENCY_KEY)
        .bind(ids.len() as i64)
        .bind(waited_ms(&due, p.now))
        .execute(&mut *tx)
        .await
        .map_err(|e| map_err(what, e))?;
    }
    let ran: Vec<&String> = took.iter().collect();
    if !ran.is_empty() {
        sqlx::query(
            "UPDATE jobs SET wait_reason = NULL WHERE id = ANY($1) AND wait_reason IS NOT NULL",
        )
        .bind(&ran)
        .execute(&mut *tx)
        .await
        .map_err(|e| map_err(what, e))?;
    }
    tx.commit().await.map_err(|e| map_err(what, e))?;
    let waiting: HashSet<&str> = ids.iter().map(String::as_str).collect();
    Ok(jobs
        .into_iter()
        .filter(|j| !waiting.contains(j.id.as_str()))
        .collect())
}
