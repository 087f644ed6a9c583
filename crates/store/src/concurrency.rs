//! Concurrency keys in the stores: which claimed jobs take a slot, and when the others are
//! due again. Pure: both stores read the taken slots, ask [`plan`], and write its answer in
//! one transaction.
//!
//! **A claim skips a key at its max.** The claim leaves out a due job whose key already has
//! `max` jobs running under an unexpired lease (a probe of `jobs_keyed_running`; a job
//! without a key costs one null test), and takes at most `max` jobs of one key in a batch.
//! Counting running jobs rather than slots also covers jobs claimed a moment ago that have
//! not taken their slot yet. Such a job stays as it is: no attempt, no write,
//! no put-back; it counts as waiting (`InsightStore::job_waiting`) and its `wait_reason`
//! reads `concurrency_key`. Without the skip, with 1,000 keys of `max: 1`, about half the
//! jobs claimed were written back to wait, each at the cost of a claim and a put-back. The
//! claim cursor of PostgreSQL, which would otherwise start the next claim above a skipped
//! job, is pointed at the lowest keyed job still due after each claim while keyed jobs are
//! about (`jobs_keyed_due`). The cost moves to reads: a key with a large due backlog at its
//! max is read past by every claim (its jobs are index entries and rows read, not written).
//!
//! **How a claim enforces a key.** On PostgreSQL claims race (two nodes, two connections), so
//! the skip is not the guard there: after the claim commits, one statement counts each keyed
//! job's key again and puts back the jobs whose key's other running jobs fill its max
//! (`store-postgres/src/slots.rs`). On SQLite, whose one writer serializes claims, the
//! claim's count is exact; there, and for an endpoint's `max_in_flight` on both
//! databases, slots guard it. When a claimed batch holds jobs that need slots, the store, in
//! one transaction: deletes the key's free slots (a slot is
//! held only while its job is `running` under the lease that took it, so a slot whose job
//! finished, was rescued, cancelled or erased is free without any of those paths knowing
//! about keys); reads the slots still held; inserts one row per slot it takes (the primary
//! key `(key, slot)` with `slot < max` is the backstop: a key never has more than `max`
//! rows); and puts the jobs that got no slot back: `available`, their attempt counter as it
//! was, due again a little later ([`wait_until`]), `wait_reason = 'concurrency_key'`. The
//! delay moves them past the jobs of other keys, which are claimed meanwhile: a busy key does
//! not block the others.

use chrono::{DateTime, TimeDelta, Utc};
use kairos_core::Job;
use std::collections::{BTreeMap, BTreeSet};

/// `wait_reason` of a job put back because its key had no free slot.
pub const WAIT_CONCURRENCY_KEY: &str = "concurrency_key";

/// How long the first job of a key that found no free slot waits before it is due again.
pub const WAIT_BASE: TimeDelta = TimeDelta::milliseconds(200);

/// The longest a job put back waits before it is due again (it then looks for a slot again).
pub const WAIT_MAX: TimeDelta = TimeDelta::seconds(5);

/// A claimed job that needs a slot of its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotWant {
    /// The job.
    pub job_id: String,
    /// Its key.
    pub key: String,
    /// How many of the key's jobs may run at once.
    pub max: u32,
}

/// What a claim does with its jobs that have keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlotPlan {
    /// Slots to take: (key, slot, job id).
    pub take: Vec<(String, i64, String)>,
    /// Jobs to put back, and when they are due again.
    pub wait: Vec<(String, DateTime<Utc>)>,
}

/// The slot requests of a claimed batch: its jobs with an enforceable key (a failed key takes
/// no slot: the executor fails that job before it runs).
pub fn wants(jobs: &[Job]) -> Vec<SlotWant> {
    jobs.iter()
        .filter_map(|j| {
            let c = j.concurrency.as_ref()?;
            c.is_enforceable().then(|| SlotWant {
                job_id: j.id.clone(),
                key: c.key.clone(),
                max: c.max,
            })
        })
        .collect()
}

/// The keys of `wants`, sorted and distinct (the order locks are taken in).
pub fn keys(wants: &[SlotWant]) -> Vec<String> {
    let set: BTreeSet<&str> = wants.iter().map(|w| w.key.as_str()).collect();
    set.into_iter().map(str::to_string).collect()
}

/// When the `rank`-th job (from 0) of a key with limit `max` that found no slot is due again:
/// the later in line, the later, so that a key's backlog comes back spread out instead of all
/// at once.
pub fn wait_until(now: DateTime<Utc>, rank: usize, max: u32) -> DateTime<Utc> {
    let rounds = i32::try_from(rank / max.max(1) as usize).unwrap_or(i32::MAX);
    let wait = WAIT_BASE
        .checked_mul(rounds.saturating_add(1))
        .unwrap_or(WAIT_MAX)
        .min(WAIT_MAX);
    now + wait
}

/// Jobs put back to wait for one reason: how many wait now, and how often and how long jobs
/// were made to wait since the database was made (`InsightStore::job_waiting`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobWaiting {
    /// `concurrency_key` (and, later, `rate_limit`, `in_flight`).
    pub reason: String,
    /// Available jobs put back for this reason and not yet run.
    pub waiting: i64,
    /// Put-backs so far.
    pub waits_total: i64,
    /// Milliseconds of waiting imposed so far.
    pub wait_ms_total: i64,
}

/// The reasons a due job may wait, in the order metrics list them.
pub const WAIT_REASONS: [&str; 3] = ["rate_limit", "in_flight", WAIT_CONCURRENCY_KEY];

/// Which of `wants` take a slot, given the slots of their keys still held (`held`: key,
/// slot). A key's limit is the smallest `max` its jobs in this batch ask for; the jobs take
/// the key's lowest free slots in batch order, and the rest wait.
pub fn plan(wants: &[SlotWant], held: &[(String, i64)], now: DateTime<Utc>) -> SlotPlan {
    let mut limit: BTreeMap<&str, u32> = BTreeMap::new();
    for w in wants {
        let m = limit.entry(w.key.as_str()).or_insert(w.max);
        *m = (*m).min(w.max);
    }
    let mut busy: BTreeMap<&str, BTreeSet<i64>> = BTreeMap::new();
    for (k, s) in held {
        busy.entry(k.as_str()).or_default().insert(*s);
    }
    let mut next_free: BTreeMap<&str, i64> = BTreeMap::new();
    let mut waiting: BTreeMap<&str, usize> = BTreeMap::new();
    let mut out = SlotPlan::default();
    for w in wants {
        let max = i64::from(limit[w.key.as_str()]);
        let taken = busy.entry(w.key.as_str()).or_default();
        let from = next_free.entry(w.key.as_str()).or_insert(0);
        let free = (*from..max).find(|s| !taken.contains(s));
        match free {
            Some(s) => {
                taken.insert(s);
                *from = s + 1;
                out.take.push((w.key.clone(), s, w.job_id.clone()));
            }
            None => {
                let rank = waiting.entry(w.key.as_str()).or_insert(0);
                out.wait.push((
                    w.job_id.clone(),
                    wait_until(now, *rank, limit[w.key.as_str()]),
                ));
                *rank += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn want(id: &str, key: &str, max: u32) -> SlotWant {
        SlotWant {
            job_id: id.into(),
            key: key.into(),
            max,
        }
    }

    fn t0() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default()
    }

    #[test]
    fn a_key_takes_at_most_max_slots_and_other_keys_are_not_blocked() {
        let w = [
            want("a1", "a", 2),
            want("a2", "a", 2),
            want("a3", "a", 2),
            want("b1", "b", 1),
        ];
        let p = plan(&w, &[], t0());
        let took: Vec<&str> = p.take.iter().map(|t| t.2.as_str()).collect();
        assert_eq!(took, ["a1", "a2", "b1"]);
        assert_eq!(p.wait, vec![("a3".to_string(), t0() + WAIT_BASE)]);
    }

    #[test]
    fn held_slots_are_not_taken_again() {
        let w = [want("a2", "a", 2), want("a3", "a", 2)];
        let p = plan(&w, &[("a".into(), 0)], t0());
        assert_eq!(p.take, vec![("a".into(), 1, "a2".into())]);
        assert_eq!(p.wait.len(), 1);
        let p = plan(&w, &[("a".into(), 0), ("a".into(), 1)], t0());
        assert!(p.take.is_empty());
        assert_eq!(p.wait.len(), 2);
    }

    #[test]
    fn the_smallest_max_of_a_batch_is_the_keys_limit() {
        let w = [want("a1", "a", 3), want("a2", "a", 1)];
        let p = plan(&w, &[], t0());
        assert_eq!(p.take.len(), 1);
    }

    #[test]
    fn a_backlog_comes_back_spread_out_and_capped() {
        assert_eq!(wait_until(t0(), 0, 1), t0() + WAIT_BASE);
        assert_eq!(wait_until(t0(), 1, 1), t0() + WAIT_BASE * 2);
        assert_eq!(wait_until(t0(), 1, 2), t0() + WAIT_BASE);
        assert_eq!(wait_until(t0(), 1_000_000, 1), t0() + WAIT_MAX);
    }
}
