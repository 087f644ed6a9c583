//! Where the rescuer starts reading expired leases: the rescue floor.
//!
//! **Why.** The rescuer looks for running jobs whose lease ended before `now` in the partial
//! index `jobs_lease` (`lease_expires_at WHERE state = 'running'`). Every claim and every lease
//! renewal writes a row version with a lease, and every completion leaves that version dead;
//! while another session holds a snapshot open, vacuum can remove none of their index entries,
//! so a scan of `lease_expires_at < now` walks, every five seconds, one entry for each job run
//! since the snapshot began whose lease would have ended by now — its cost grows with the work
//! already done, like the claims' did before the claim cursor (`cursor.rs`).
//!
//! **How.** A lease is always set in the future of the clock that sets it (a claim's or a
//! renewal's `now` plus the lease), so once a rescue has read every expired lease up to its
//! `now` and returned fewer than it asked for, the entries below that `now` are dead or were
//! rescued: the next rescue starts its scan there (the *floor*, less [`MARGIN`]). What can
//! still hold an expired lease below the floor:
//! - a lease set here with a clock that went back (a test's manual clock): each claim and
//!   renewal here lowers the mark the next rescue starts from ([`RescueFloor::leased`]);
//! - a row the rescue skipped because another statement had it locked (a completion that then
//!   rolled back), a lease set by another node whose clock is more than a lease behind, a
//!   claim whose transaction stayed open longer than its lease: a *full pass*, from the start
//!   of the index, every [`FULL_EVERY`] of the rescuer's clock or every [`FULL_EVERY_RUNS`]
//!   rescues, finds them, and pays the walk over the dead entries once a minute instead of on
//!   every run.
//!
//! Correctness never depends on the floor: the rescue's `state = 'running'` check, its
//! `lease_expires_at < now` and `SKIP LOCKED` decide what is rescued; the floor only decides
//! where to start looking.

use chrono::{DateTime, TimeDelta, Utc};
use std::sync::Mutex;

/// The floor stays this far behind the `now` of the rescue that read up to it: a claim on
/// another node whose clock is a little behind, committed just after the rescue's snapshot,
/// may have set a lease a little below that `now` only if its lease is shorter than this
/// plus the clocks' difference.
pub(crate) const MARGIN: TimeDelta = TimeDelta::seconds(1);

/// A full pass at least this often, by the rescues' `now`.
pub(crate) const FULL_EVERY: TimeDelta = TimeDelta::seconds(60);

/// A full pass after this many rescues from the floor, whatever the clock says (a manual
/// clock that does not move still passes in full).
pub(crate) const FULL_EVERY_RUNS: u32 = 12;

#[derive(Debug, Default)]
struct State {
    /// Every lease below it was read by a rescue, but for the dirty mark. `None`: unknown.
    floor: Option<DateTime<Utc>>,
    /// The lowest lease set here since the last rescue started.
    dirty: Option<DateTime<Utc>>,
    /// Rescues from the floor since the last full pass.
    runs: u32,
    /// The `now` of the last full pass; `None`: the next rescue passes in full.
    full_at: Option<DateTime<Utc>>,
}

/// The rescue floor of one store. Cheap to share behind an `Arc`.
#[derive(Debug, Default)]
pub(crate) struct RescueFloor {
    state: Mutex<State>,
}

/// Where one rescue starts: `None` is a full pass (from the start of the index).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RescueStart {
    pub from: Option<DateTime<Utc>>,
    /// The floor when the rescue started.
    floor: Option<DateTime<Utc>>,
}

impl RescueFloor {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Where a rescue at `now` starts; `full` asks for a full pass (a restarted node's first
    /// rescue, which reads its jobs whatever their lease). Takes the dirty mark.
    pub(crate) fn start(&self, now: DateTime<Utc>, full: bool) -> RescueStart {
        let mut s = self.lock();
        let dirty = s.dirty.take();
        let full = full
            || s.floor.is_none()
            || s.runs >= FULL_EVERY_RUNS
            || s.full_at
                .is_none_or(|at| now - at >= FULL_EVERY || now < at);
        let from = if full {
            s.runs = 0;
            s.full_at = Some(now);
            None
        } else {
            s.runs = s.runs.saturating_add(1);
            match (s.floor, dirty) {
                (Some(f), Some(d)) => Some(f.min(d)),
                (f, None) => f,
                (None, d) => d,
            }
        };
        RescueStart {
            from,
            floor: s.floor,
        }
    }

    /// A rescue that started at `start` and asked for `limit` jobs got `got` of them, `last`
    /// the latest lease among them. A rescue that came back short read every expired lease
    /// from its start to `now`; a full one read up to `last`.
    pub(crate) fn rescued(
        &self,
        start: &RescueStart,
        now: DateTime<Utc>,
        limit: usize,
        got: usize,
        last: Option<DateTime<Utc>>,
    ) {
        let mut s = self.lock();
        let bound = now - MARGIN;
        let read_to = if got < limit {
            Some(bound)
        } else {
            // A restarted node's jobs come with leases not ended yet: never past `now`.
            last.map(|l| l.min(bound))
        };
        let Some(read_to) = read_to else { return };
        match start.floor {
            // A full rescue that stopped below the old floor: what lies between is not read
            // yet (leases set here below the floor since): mark it.
            Some(f) if read_to < f => {
                s.dirty = Some(s.dirty.map_or(read_to, |d| d.min(read_to)));
            }
            _ => {
                if s.floor.is_none_or(|f| f < read_to) {
                    s.floor = Some(read_to);
                }
            }
        }
    }

    /// The rescue that started at `start` failed: what it took is left for the next one (its
    /// start marked again, or a full pass owed).
    pub(crate) fn failed(&self, start: &RescueStart) {
        let mut s = self.lock();
        match start.from {
            Some(from) => s.dirty = Some(s.dirty.map_or(from, |d| d.min(from))),
            None => s.full_at = None,
        }
    }

    /// Leases were set here (a claim, a renewal) that end at `until`, after their commit.
    pub(crate) fn leased(&self, until: DateTime<Utc>) {
        let mut s = self.lock();
        if s.floor.is_some_and(|f| until < f) {
            s.dirty = Some(s.dirty.map_or(until, |d| d.min(until)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t(s: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_700_000_000 + s, 0).unwrap()
    }

    #[test]
    fn first_rescue_passes_in_full_then_starts_at_its_now() {
        let f = RescueFloor::default();
        let s = f.start(t(10), false);
        assert_eq!(s.from, None);
        f.rescued(&s, t(10), 100, 3, Some(t(9)));
        assert_eq!(f.start(t(15), false).from, Some(t(10) - MARGIN));
    }

    #[test]
    fn a_rescue_that_filled_up_continues_from_its_last_lease() {
        let f = RescueFloor::default();
        let s = f.start(t(10), false);
        f.rescued(&s, t(10), 2, 2, Some(t(4)));
        let s = f.start(t(15), false);
        assert_eq!(s.from, Some(t(4)));
        f.rescued(&s, t(15), 2, 1, Some(t(6)));
        assert_eq!(f.start(t(20), false).from, Some(t(15) - MARGIN));
    }

    #[test]
    fn a_restarted_nodes_unexpired_leases_never_lift_the_floor_past_now() {
        let f = RescueFloor::default();
        let s = f.start(t(10), true);
        assert_eq!(s.from, None);
        f.rescued(&s, t(10), 2, 2, Some(t(40)));
        assert_eq!(f.start(t(15), false).from, Some(t(10) - MARGIN));
    }

    #[test]
    fn a_lease_set_here_below_the_floor_is_read_by_the_next_rescue() {
        let f = RescueFloor::default();
        let s = f.start(t(100), false);
        f.rescued(&s, t(100), 10, 0, None);
        f.leased(t(30));
        f.leased(t(200));
        let s = f.start(t(101), false);
        assert_eq!(s.from, Some(t(30)));
        f.rescued(&s, t(101), 10, 1, Some(t(30)));
        assert_eq!(f.start(t(102), false).from, Some(t(101) - MARGIN));
    }

    #[test]
    fn a_full_rescue_below_the_floor_leaves_the_rest_marked() {
        let f = RescueFloor::default();
        let s = f.start(t(100), false);
        f.rescued(&s, t(100), 10, 0, None);
        f.leased(t(20));
        let s = f.start(t(101), false);
        assert_eq!(s.from, Some(t(20)));
        f.rescued(&s, t(101), 1, 1, Some(t(20)));
        assert_eq!(f.start(t(102), false).from, Some(t(20)));
    }

    #[test]
    fn a_failed_rescue_leaves_its_start_for_the_next() {
        let f = RescueFloor::default();
        let s = f.start(t(100), false);
        f.failed(&s);
        assert_eq!(f.start(t(101), false).from, None, "the full pass is owed");
        let s = f.start(t(100), true);
        f.rescued(&s, t(100), 10, 0, None);
        f.leased(t(20));
        let s = f.start(t(101), false);
        assert_eq!(s.from, Some(t(20)));
        f.failed(&s);
        assert_eq!(f.start(t(102), false).from, Some(t(20)), "the mark is kept");
    }

    #[test]
    fn passes_in_full_once_a_minute_and_after_many_runs_of_a_still_clock() {
        let f = RescueFloor::default();
        let s = f.start(t(0), false);
        f.rescued(&s, t(0), 10, 0, None);
        assert!(f.start(t(5), false).from.is_some());
        assert_eq!(f.start(t(60), false).from, None, "a minute later");
        let s = f.start(t(60), false);
        assert!(s.from.is_some());
        let mut runs = 1;
        while f.start(t(60), false).from.is_some() {
            runs += 1;
            assert!(runs <= FULL_EVERY_RUNS, "no full pass after {runs} runs");
        }
        assert_eq!(runs, FULL_EVERY_RUNS);
        assert_eq!(f.start(t(30), false).from, None, "a clock that went back");
    }
}
