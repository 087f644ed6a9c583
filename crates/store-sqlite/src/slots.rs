//! Concurrency keys on SQLite: the slots a claimed batch's keyed jobs take, on the writer
//! thread in one transaction after the claim (`kairos_store::concurrency` says how and why).
//! The one writer serializes claims, so no lock is needed; the primary key `(key, slot)` is
//! the backstop all the same.

use crate::writer::map_native;
use chrono::{DateTime, Utc};
use kairos_core::clock::to_millis;
use kairos_store::Result;
use kairos_store::concurrency::{SlotWant, WAIT_CONCURRENCY_KEY, plan, wait_until, waited_ms};
use rusqlite::{Connection, params};

/// Take slots for `wants` (jobs claimed under `token`); put back those that get none. Returns
/// the ids of the jobs put back.
pub(crate) fn take(
    conn: &Connection,
    wants: &[SlotWant],
    token: &str,
    now: DateTime<Utc>,
) -> Result<Vec<String>> {
    let what = "job claim: concurrency slots";
    let err = |e| map_native(what, e);
    let keys = kairos_store::concurrency::keys(wants);
    let mut held = Vec::new();
    {
        let mut free = conn
            .prepare_cached(
                "DELETE FROM concurrency_slots
                 WHERE key = ?1
                   AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = concurrency_slots.job_id
                                   AND j.state = 'running'
                                   AND j.lease_token = concurrency_slots.lease_token)",
            )
            .map_err(err)?;
        let mut read = conn
            .prepare_cached("SELECT slot FROM concurrency_slots WHERE key = ?1")
            .map_err(err)?;
        for k in &keys {
            free.execute([k]).map_err(err)?;
            let slots = read
                .query_map([k], |r| r.get::<_, i64>(0))
                .map_err(err)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(err)?;
            held.extend(slots.into_iter().map(|s| (k.clone(), s)));
        }
    }
    let mut plan = plan(wants, &held, now);
    let mut insert = conn
        .prepare_cached(
            "INSERT INTO concurrency_slots (key, slot, job_id, lease_token, taken_at)
             VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (key, slot) DO NOTHING",
        )
        .map_err(err)?;
    let mut clear = conn
        .prepare_cached(
            "UPDATE jobs SET wait_reason = NULL WHERE id = ?1 AND wait_reason IS NOT NULL",
        )
        .map_err(err)?;
    let mut lost = Vec::new();
    for (key, slot, job) in &plan.take {
        if insert
            .execute(params![key, slot, job, token, to_millis(now)])
            .map_err(err)?
            == 0
        {
            let max = wants.iter().find(|w| w.key == *key).map_or(1, |w| w.max);
            lost.push((job.clone(), wait_until(now, 0, max)));
        } else {
            clear.execute([job]).map_err(err)?;
        }
    }
    plan.wait.extend(lost);
    let mut back = conn
        .prepare_cached(
            "UPDATE jobs SET state = 'available', attempt = attempt - 1, run_at = ?2,
                    wait_reason = ?3, locked_by = NULL, lease_token = NULL,
                    lease_expires_at = NULL
             WHERE id = ?1 AND lease_token = ?4 AND state = 'running'",
        )
        .map_err(err)?;
    for (job, due) in &plan.wait {
        back.execute(params![job, to_millis(*due), WAIT_CONCURRENCY_KEY, token])
            .map_err(err)?;
    }
    if !plan.wait.is_empty() {
        let due: Vec<DateTime<Utc>> = plan.wait.iter().map(|(_, d)| *d).collect();
        conn.prepare_cached(
            "INSERT INTO job_waits (reason, waits, wait_ms) VALUES (?1, ?2, ?3)
             ON CONFLICT (reason) DO UPDATE SET waits = waits + excluded.waits,
                 wait_ms = wait_ms + excluded.wait_ms",
        )
        .and_then(|mut s| {
            s.execute(params![
                WAIT_CONCURRENCY_KEY,
                due.len() as i64,
                waited_ms(&due, now)
            ])
        })
        .map_err(err)?;
    }
    Ok(plan.wait.into_iter().map(|(id, _)| id).collect())
}
