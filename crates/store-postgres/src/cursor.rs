//! Where a claim starts reading the queue: the claim cursor.
//!
//! **Why.** A claim reads the partial index `jobs_due` in `(run_at, id)` order. Claiming a job
//! writes a new row version that is no longer `available`, but the old version's index entry
//! stays until vacuum removes it, and vacuum cannot remove a row version that an open snapshot
//! may still see. While another session holds a snapshot (an analytics query, a forgotten
//! `BEGIN`, a replica with `hot_standby_feedback`), every claim read from the start of the
//! index would walk the entries of every job claimed since that snapshot began, and check each
//! against the heap: the cost of a claim grows with the jobs already done, and the queue rots
//! (300,000 jobs ran 4.3 times slower, `docs/benchmarks.md`).
//!
//! **How.** Claims take the oldest due jobs first, so the entries below the last job claimed
//! are, almost always, dead. The cursor remembers that key (the *floor*) and a claim starts its
//! index scan there (`(run_at, id) >= floor`, a B-tree descent), never walking what it already
//! claimed. A job can still become available below the floor:
//! - made available here (an insert with a `run_at` in the past, a retry, a rescue, an admin
//!   retry or replay, a schedule's firing): each path marks it *dirty* after its commit, and
//!   the next claim starts at the lowest dirty key;
//! - by another node, by an application's own transaction (`job_insert_in_tx`), by a commit
//!   that landed after a claim passed its key, or a row a claim skipped because another
//!   statement had it locked: a *sweep* finds it. A near sweep starts [`NEAR`] behind the
//!   floor, at least once a second of the claims' clock (or after [`NEAR_EVERY_SHORT`] claims
//!   that came back short): it finds what commit races and clocks a little apart leave behind,
//!   walking a couple of seconds of entries. Such a job committed after the last sweep, with
//!   a `run_at` at most `NEAR` before its commit, so a near sweep never starts lower than
//!   `NEAR` before the last sweep's clock: while a backlog is worked off, the floor is far
//!   behind the clock and a near sweep starts at the floor (the entries just below it are
//!   jobs claimed long since, 40 ms to walk every second under a held snapshot; a row skipped
//!   as locked there waits for the full sweep). A full sweep starts at the beginning of the index
//!   every [`FULL_EVERY`] (or [`FULL_EVERY_SHORT`] short claims): it finds a job another node
//!   inserted with a `run_at` long past, and pays the walk over every dead entry twice a
//!   minute instead of on every claim.
//!
//! The cursor is per store (per node): nodes claiming together walk only the entries the
//! others claimed since their own last claim. Correctness never depends on it: the claim's
//! `state = 'available'` check and `SKIP LOCKED` decide what is claimed; the cursor only
//! decides where to start looking.

use chrono::{DateTime, TimeDelta, Utc};
use std::sync::Mutex;

/// A position in `jobs_due`: `(run_at, id)`. `id = ""` is the lowest key at that instant.
pub(crate) type Key = (DateTime<Utc>, String);

/// A near sweep starts this far behind the floor, and no further than this before the last
/// sweep's clock.
pub(crate) const NEAR: TimeDelta = TimeDelta::seconds(2);

/// A near sweep at least this often, by the claims' `now`.
pub(crate) const NEAR_EVERY: TimeDelta = TimeDelta::seconds(1);

/// A near sweep after this many claims that came back short since the last one, whatever the
/// clock says (a manual clock that does not move still sweeps).
pub(crate) const NEAR_EVERY_SHORT: u32 = 64;

/// A full sweep at least this often, by the claims' `now`.
pub(crate) const FULL_EVERY: TimeDelta = TimeDelta::seconds(30);

/// A full sweep after this many claims that came back short since the last one.
pub(crate) const FULL_EVERY_SHORT: u32 = 1_024;

/// A claim that came back short read every due job up to its `now`, but a job whose insert
/// began a little earlier (its `run_at` is its node's `now`) may commit after the claim's
/// snapshot: the floor stays this far behind `now`, so such a job is read by the next claim
/// instead of waiting for a sweep (and nodes whose clocks differ by less are read as one).
/// At 5,000 jobs a second it is about 1,250 dead entries to walk.
pub(crate) const SHORT_MARGIN: TimeDelta = TimeDelta::milliseconds(250);

#[derive(Debug, Default)]
struct State {
    /// Everything due below it was claimed, but for the dirty keys. `None`: unknown.
    floor: Option<Key>,
    /// The lowest key made available here since the last claim started.
    dirty: Option<Key>,
    /// Claims that came back short since the last near and full sweep.
    short_near: u32,
    short_full: u32,
    /// The `now` of the last near and full sweep; `None`: the next claim sweeps.
    near_at: Option<DateTime<Utc>>,
    full_at: Option<DateTime<Utc>>,
    /// Until when claims look for jobs with a concurrency key they skipped (see
    /// [`ClaimCursor::keyed_seen`]).
    keyed_until: Option<DateTime<Utc>>,
}

/// The claim cursor of one store. Cheap to share behind an `Arc`.
#[derive(Debug, Default)]
pub(crate) struct ClaimCursor {
    state: Mutex<State>,
}

/// Where one claim starts: `None` is a sweep (from the start of the index).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ClaimStart {
    pub from: Option<Key>,
    /// The floor when the claim started.
    floor: Option<Key>,
}

impl ClaimCursor {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Where a claim at `now` starts. Takes the dirty mark: a job made available after this
    /// call marks it again for the next claim.
    pub(crate) fn start(&self, now: DateTime<Utc>) -> ClaimStart {
        let mut s = self.lock();
        let dirty = s.dirty.take();
        let due = |at: Option<DateTime<Utc>>, every: TimeDelta, short: u32, most: u32| match at {
            None => true,
            Some(at) => short >= most || now - at >= every || now < at,
        };
        let full = s.floor.is_none() || due(s.full_at, FULL_EVERY, s.short_full, FULL_EVERY_SHORT);
        let near = !full && due(s.near_at, NEAR_EVERY, s.short_near, NEAR_EVERY_SHORT);
        let from = if full {
            s.short_full = 0;
            s.full_at = Some(now);
            None
        } else {
            let lowest = match (s.floor.clone(), dirty) {
                (Some(f), Some(d)) => Some(f.min(d)),
                (f, None) => f,
                (None, d) => d,
            };
            if near {
                // A job that a near sweep is for committed after the last sweep read the
                // index, with a `run_at` at most `NEAR` before its commit: none lies below
                // the last sweep's `now` less `NEAR`. In a backlog the floor is far behind
                // the clock, and the two seconds below it hold only jobs claimed long since
                // (under a held snapshot, 40 ms of dead entries to walk every second).
                let since = s.near_at.map(|at| at.min(now) - NEAR);
                lowest.map(|low| {
                    let back = low.0 - NEAR;
                    match since {
                        Some(since) if since >= low.0 => low,
                        Some(since) if since > back => (since, String::new()),
                        _ => (back, String::new()),
                    }
                })
            } else {
                lowest
            }
        };
        if full || near {
            s.short_near = 0;
            s.near_at = Some(now);
        }
        ClaimStart {
            from,
            floor: s.floor.clone(),
        }
    }

    /// A claim that started at `start` and asked for `limit` jobs got `got` of them, `last`
    /// the highest key among them. A claim that came back short read every due job from its
    /// start to `now`; a full one read up to `last`.
    pub(crate) fn claimed(
        &self,
        start: &ClaimStart,
        now: DateTime<Utc>,
        limit: usize,
        got: usize,
        last: Option<Key>,
    ) {
        let mut s = self.lock();
        let read_to = if got < limit {
            s.short_near = s.short_near.saturating_add(1);
            s.short_full = s.short_full.saturating_add(1);
            Some((now - SHORT_MARGIN, String::new()))
        } else {
            last
        };
        let Some(read_to) = read_to else { return };
        match &start.floor {
            // Read past the old floor: everything below `read_to` was claimed.
            Some(f) if read_to < *f => {
                // A full claim that stopped below the old floor: what lies between is not
                // read yet (jobs made available below the floor since): mark it.
                s.dirty = Some(match s.dirty.take() {
                    Some(d) => d.min(read_to),
                    None => read_to,
                });
            }
            _ => {
                if s.floor.as_ref().is_none_or(|f| *f < read_to) {
                    s.floor = Some(read_to);
                }
            }
        }
    }

    /// The claim that started at `start` failed: what it took is left for the next one (its
    /// start marked again, or the sweep it was due owed again). Without this, a job marked
    /// dirty just before a claim that failed waited for a sweep.
    pub(crate) fn failed(&self, start: &ClaimStart) {
        let mut s = self.lock();
        match &start.from {
            Some(from) => {
                s.dirty = Some(match s.dirty.take() {
                    Some(d) => d.min(from.clone()),
                    None => from.clone(),
                });
            }
            None => s.full_at = None,
        }
    }

    /// The lowest key a due job may have, as far as this store knows (the floor, or a dirty
    /// key below it); `None` when not known. Jobs made available elsewhere below it are found
    /// by the next sweep.
    pub(crate) fn peek(&self) -> Option<Key> {
        let s = self.lock();
        match (s.floor.clone(), s.dirty.clone()) {
            (Some(f), Some(d)) => Some(f.min(d)),
            (f, None) => f,
            (None, _) => None,
        }
    }

    /// Jobs became available here with keys from `key` up, after their commit.
    pub(crate) fn made_available(&self, key: Key) {
        let mut s = self.lock();
        s.dirty = Some(match s.dirty.take() {
            Some(d) => d.min(key),
            None => key,
        });
    }

    /// A claim at `now` met jobs with a concurrency key. A claim skips the jobs of a key at
    /// its `max` (they stay `available`, below the keys it claims), so for a while after, each
    /// claim looks up the lowest keyed job still due ([`ClaimCursor::keyed_recent`]) and marks
    /// it with [`ClaimCursor::made_available`]: the next claim starts there instead of leaving
    /// it to a sweep once its key frees.
    pub(crate) fn keyed_seen(&self, now: DateTime<Utc>) {
        self.lock().keyed_until = Some(now + FULL_EVERY);
    }

    /// Whether a claim at `now` looks up the keyed jobs it may have skipped.
    pub(crate) fn keyed_recent(&self, now: DateTime<Utc>) -> bool {
        self.lock().keyed_until.is_some_and(|u| now <= u)
    }

    /// Jobs became available here at keys not known: the next claim sweeps from the start.
    pub(crate) fn forget(&self) {
        let mut s = self.lock();
        s.full_at = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t(s: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_700_000_000 + s, 0).unwrap()
    }
    fn k(s: i64, id: &str) -> Key {
        (t(s), id.to_string())
    }

    #[test]
    fn first_claim_sweeps_then_starts_at_the_last_key_claimed() {
        let c = ClaimCursor::default();
        let s = c.start(t(10));
        assert_eq!(s.from, None);
        c.claimed(&s, t(10), 2, 2, Some(k(5, "b")));
        let s = c.start(t(10));
        assert_eq!(s.from, Some(k(5, "b")));
    }

    #[test]
    fn a_short_claim_moves_the_floor_to_now_less_the_margin() {
        let c = ClaimCursor::default();
        let s = c.start(t(10));
        c.claimed(&s, t(10), 5, 1, Some(k(3, "a")));
        assert_eq!(
            c.start(t(10)).from,
            Some((t(10) - SHORT_MARGIN, String::new()))
        );
    }

    #[test]
    fn a_job_made_available_below_the_floor_is_read_by_the_next_claim() {
        let c = ClaimCursor::default();
        let s = c.start(t(10));
        c.claimed(&s, t(10), 5, 0, None);
        c.made_available(k(1, ""));
        let s = c.start(t(10));
        assert_eq!(s.from, Some(k(1, "")));
        // It filled up below the old floor: the rest below the floor is read next time.
        c.claimed(&s, t(10), 1, 1, Some(k(1, "x")));
        assert_eq!(c.start(t(10)).from, Some(k(1, "x")));
    }

    #[test]
    fn a_mark_made_while_a_claim_runs_is_kept_for_the_next() {
        let c = ClaimCursor::default();
        let s = c.start(t(10));
        c.claimed(&s, t(10), 5, 0, None);
        let s = c.start(t(10));
        c.made_available(k(2, ""));
        c.claimed(&s, t(10), 5, 0, None);
        assert_eq!(c.start(t(10)).from, Some(k(2, "")));
    }

    #[test]
    fn a_full_claim_below_the_old_floor_leaves_the_rest_marked() {
        let c = ClaimCursor::default();
        let s = c.start(t(10));
        c.claimed(&s, t(10), 5, 0, None);
        c.made_available(k(1, ""));
        c.made_available(k(3, ""));
        let s = c.start(t(10));
        assert_eq!(s.from, Some(k(1, "")));
        c.claimed(&s, t(10), 1, 1, Some(k(1, "a")));
        let s = c.start(t(10));
        assert_eq!(s.from, Some(k(1, "a")), "the job at 3 is still ahead");
        c.claimed(&s, t(10), 5, 1, Some(k(3, "b")));
        assert_eq!(c.peek(), Some((t(10) - SHORT_MARGIN, String::new())));
    }

    #[test]
    fn a_failed_claim_leaves_its_start_for_the_next() {
        let c = ClaimCursor::default();
        let s = c.start(t(10));
        c.claimed(&s, t(10), 5, 0, None);
        let floor = (t(10) - SHORT_MARGIN, String::new());
        c.made_available(k(1, ""));
        let s = c.start(t(10));
        assert_eq!(s.from, Some(k(1, "")));
        c.failed(&s);
        assert_eq!(c.start(t(10)).from, Some(k(1, "")), "the mark is back");
        assert_eq!(c.start(t(10)).from, Some(floor), "and taken by that claim");
        // A full sweep that failed is owed again.
        let s = c.start(t(40));
        assert_eq!(s.from, None);
        c.failed(&s);
        assert_eq!(c.start(t(40)).from, None, "the sweep is owed again");
    }

    #[test]
    fn sweeps_near_once_a_second_and_in_full_twice_a_minute() {
        let c = ClaimCursor::default();
        let s = c.start(t(10));
        assert_eq!(s.from, None, "the first claim sweeps in full");
        c.claimed(&s, t(10), 5, 2, Some(k(5, "b")));
        let floor = (t(10) - SHORT_MARGIN, String::new());
        assert_eq!(c.start(t(10)).from, Some(floor.clone()));
        // A second later: back to `NEAR` before the last sweep, which is a little above
        // `NEAR` below the floor (the floor is `SHORT_MARGIN` behind that sweep's clock).
        let near = (t(10) - NEAR, String::new());
        assert_eq!(c.start(t(11)).from, Some(near.clone()), "a second later");
        assert_eq!(c.start(t(11)).from, Some(floor.clone()));
        assert_eq!(c.start(t(40)).from, None, "thirty seconds later");
        c.forget();
        assert_eq!(c.start(t(40)).from, None, "forgotten");
    }

    /// In a backlog the floor is far behind the clock: a near sweep starts at the floor,
    /// since every job it could find committed after the last sweep, with a `run_at` within
    /// `NEAR` of that. Close to the clock it reads `NEAR` back from the last sweep, no less.
    #[test]
    fn a_near_sweep_in_a_backlog_does_not_walk_below_the_floor() {
        let c = ClaimCursor::default();
        let s = c.start(t(100));
        assert_eq!(s.from, None);
        // A full claim: the floor is the last key claimed, a minute and a half back.
        c.claimed(&s, t(100), 5, 5, Some(k(10, "e")));
        assert_eq!(c.start(t(100)).from, Some(k(10, "e")), "not a sweep");
        assert_eq!(
            c.start(t(101)).from,
            Some(k(10, "e")),
            "a near sweep a second later starts at the floor"
        );
        // A job made available below the floor is still read from its key.
        c.made_available(k(3, ""));
        assert_eq!(c.start(t(102)).from, Some(k(3, "")));
        // The floor within a second of the last sweep: a near sweep reads back to `NEAR`
        // before that sweep, below the floor.
        let c = ClaimCursor::default();
        let s = c.start(t(100));
        c.claimed(&s, t(100), 5, 5, Some(k(99, "z")));
        assert_eq!(c.start(t(101)).from, Some((t(98), String::new())));
    }

    #[test]
    fn a_clock_that_does_not_move_still_sweeps_after_many_short_claims() {
        let c = ClaimCursor::default();
        let s = c.start(t(10));
        c.claimed(&s, t(10), 5, 0, None);
        let mut near = 0;
        for _ in 1..FULL_EVERY_SHORT {
            let s = c.start(t(10));
            let from = s.from.clone().expect("not a full sweep yet");
            if from.0 < t(10) - SHORT_MARGIN {
                near += 1;
            }
            c.claimed(&s, t(10), 5, 0, None);
        }
        assert!(near >= 10, "{near} near sweeps");
        assert_eq!(c.start(t(10)).from, None, "after many short claims");
    }
}
