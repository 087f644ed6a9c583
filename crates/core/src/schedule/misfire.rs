//! Misfire policies and the planner that turns a due schedule into the firings to materialize.

use super::{Clock, ScheduleSpec};
use crate::error::Error;
use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// The largest `cap` of [`Misfire::All`].
pub const MAX_MISFIRE_CAP: u32 = 1_000;
/// The `cap` of a bare `all`.
const DEFAULT_ALL_CAP: u32 = 10;
/// How many missed firings the planner enumerates one by one to count them. Past this, the
/// count of a cron schedule is extrapolated (see [`plan_firings`]).
const COUNT_BOUND: usize = 10_000;
/// The most on-time firings one plan materializes (only reachable when the on-time threshold
/// spans more than this many firings, e.g. a 3-hour threshold on an every-second schedule).
const MAX_ON_TIME: usize = 10_000;

/// The misfire threshold when neither the schedule nor the node sets one (60 s).
pub const DEFAULT_MISFIRE_THRESHOLD: std::time::Duration = std::time::Duration::from_secs(60);
/// The misfire window when the schedule sets none (7 days): a firing later than this is not
/// run whatever the policy.
pub const DEFAULT_MISFIRE_WINDOW: std::time::Duration =
    std::time::Duration::from_secs(7 * 24 * 3600);

/// What to do with firings missed while kairos was down (or behind).
///
/// The default is [`Misfire::Once`]: a firing due while no node ran still runs, late, once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "policy", rename_all = "snake_case")]
pub enum Misfire {
    /// Drop missed firings; only on-time ones fire.
    Skip,
    /// Fire the most recent missed firing (once), drop the older ones.
    #[default]
    Once,
    /// Fire the most recent `cap` missed firings, oldest first; drop the older ones.
    All {
        /// At most this many missed firings, 1..=[`MAX_MISFIRE_CAP`].
        cap: u32,
    },
}

impl Misfire {
    /// Parse `skip`, `once`, `all` (cap 10) or `all:N` (1 <= N <= 1000), case-insensitive.
    /// Error field `misfire`.
    pub fn parse(s: &str) -> Result<Self, Error> {
        let t = s.trim().to_ascii_lowercase();
        let bad = || {
            Error::invalid(
                "misfire",
                format!(
                    "{s:?} is not a misfire policy: use \"skip\", \"once\", \"all\" (at most \
                     {DEFAULT_ALL_CAP}) or \"all:N\" with 1 <= N <= {MAX_MISFIRE_CAP}"
                ),
            )
        };
        match t.as_str() {
            "skip" => Ok(Misfire::Skip),
            "once" => Ok(Misfire::Once),
            "all" => Ok(Misfire::All {
                cap: DEFAULT_ALL_CAP,
            }),
            other => {
                let n = other.strip_prefix("all:").ok_or_else(bad)?;
                let cap: u32 = n.trim().parse().map_err(|_| bad())?;
                if (1..=MAX_MISFIRE_CAP).contains(&cap) {
                    Ok(Misfire::All { cap })
                } else {
                    Err(bad())
                }
            }
        }
    }

    /// The canonical string (`skip`, `once`, `all:N`), which [`parse`](Self::parse) reads back.
    pub fn to_string_repr(&self) -> String {
        match self {
            Misfire::Skip => "skip".to_string(),
            Misfire::Once => "once".to_string(),
            Misfire::All { cap } => format!("all:{cap}"),
        }
    }

    /// How many missed firings the policy keeps. A cap above [`MAX_MISFIRE_CAP`] (possible by
    /// building or deserializing the enum directly) is clamped to it, which keeps the planner
    /// bounded.
    fn keep(self) -> usize {
        match self {
            Misfire::Skip => 0,
            Misfire::Once => 1,
            Misfire::All { cap } => cap.min(MAX_MISFIRE_CAP) as usize,
        }
    }
}

/// The misfire settings of one schedule: its policy, its threshold and its window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MisfireRule {
    /// What to do with firings later than `threshold`.
    pub policy: Misfire,
    /// A firing at most this late is on time and always fires.
    pub threshold: Duration,
    /// A firing later than this never fires (it is a [`GapReason::Window`] gap).
    pub window: Duration,
}

/// Why the firings of a [`MissedGap`] did not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GapReason {
    /// The misfire policy dropped them (`skip`, or the older ones of `once` / `all:N`).
    Skip,
    /// They were later than the schedule's misfire window.
    Window,
}

impl GapReason {
    /// The stored and shown name: `skip`, `window`.
    pub fn as_str(self) -> &'static str {
        match self {
            GapReason::Skip => "skip",
            GapReason::Window => "window",
        }
    }
}

/// A run of consecutive due firings that were not materialized, for one reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MissedGap {
    /// Why they did not run.
    pub reason: GapReason,
    /// The first missed nominal firing.
    pub first: DateTime<Utc>,
    /// The last missed nominal firing.
    pub last: DateTime<Utc>,
    /// How many (extrapolated past the planner's counting bound, see [`plan_firings`]).
    pub count: u64,
}

/// The result of planning one due schedule.
#[derive(Debug, Clone, PartialEq)]
pub struct FirePlan {
    /// Nominal firing instants to materialize now, oldest first.
    pub fires: Vec<DateTime<Utc>>,
    /// How many due firings were not materialized (the sum of the gaps' counts).
    pub skipped: u64,
    /// The due firings not materialized, one record per reason, oldest first.
    pub gaps: Vec<MissedGap>,
    /// The schedule's next firing strictly after `now` (None: it is finished, e.g. a fired
    /// one-shot).
    pub next_fire_at: Option<DateTime<Utc>>,
}

/// Plan the firings of a schedule whose stored `next_fire_at` is `<= now`.
///
/// - *Due* firings are the nominal instants `t` of the schedule with `next_fire_at <= t <= now`.
/// - A due firing with `now - t <= threshold` is **on time** and always fires.
/// - Older ones are **missed** and follow `misfire`: [`Misfire::Skip`] fires none,
///   [`Misfire::Once`] the most recent missed one, [`Misfire::All`] the most recent `cap`.
/// - `fires` is missed-kept then on-time, oldest first; `next_fire_at` is the first firing
///   strictly after `now`.
/// - If `next_fire_at > now`, nothing is due: no fires, `next_fire_at` unchanged.
/// - An invalid spec (see [`ScheduleSpec::validate`]) never fires: no fires, `next_fire_at`
///   `None`.
///
/// # Bounded work
///
/// A schedule that fires every second and was down for 3 days has 259,200 missed firings; the
/// planner never enumerates or allocates them all:
///
/// - missed firings are walked forward and counted up to 10,000, keeping only the last `cap`
///   (a ring buffer); past that bound, the kept ones are found by walking **backwards** from the
///   end of the missed range (at most `cap` <= 1000 steps), so `fires` stays exact;
/// - `skipped` is exact for one-shots and intervals (arithmetic) and for cron schedules with
///   up to 10,000 missed firings. Beyond that, a cron schedule's count is **extrapolated**
///   from the rate of the first 10,000 (exact for evenly spaced expressions like `* * * * * *`,
///   approximate for uneven ones). It is a statistic, so approximate is acceptable;
/// - on-time firings are capped at 10,000 (the most recent ones are kept, the older ones are
///   treated as missed); only a threshold spanning more than 10,000 firings reaches this.
///
/// A negative `threshold` counts as zero. No window applies (see [`plan`]).
pub fn plan_firings(
    spec: &ScheduleSpec,
    tz: Tz,
    misfire: Misfire,
    next_fire_at: DateTime<Utc>,
    now: DateTime<Utc>,
    threshold: Duration,
) -> FirePlan {
    let rule = MisfireRule {
        policy: misfire,
        threshold,
        window: Duration::MAX,
    };
    plan(spec, tz, rule, next_fire_at, now)
}

/// [`plan_firings`] with a misfire window: a due firing later than `rule.window` never fires
/// and is recorded as a [`GapReason::Window`] gap; the policy applies to the missed firings
/// within the window, and the ones it drops are a [`GapReason::Skip`] gap. A window shorter
/// than the threshold counts as the threshold (an on-time firing always fires).
pub fn plan(
    spec: &ScheduleSpec,
    tz: Tz,
    rule: MisfireRule,
    next_fire_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> FirePlan {
    let nothing = |next_fire_at| FirePlan {
        fires: Vec::new(),
        skipped: 0,
        gaps: Vec::new(),
        next_fire_at,
    };
    if next_fire_at > now {
        return nothing(Some(next_fire_at));
    }
    let Ok(clock) = spec.compile() else {
        return nothing(None);
    };
    let next = clock.next_after(tz, now);
    // Start from the first real firing at or after the stored one (the stored value normally
    // *is* a firing; if the expression was edited since, this realigns it).
    let Some(first) = clock
        .next_at_or_after(tz, next_fire_at)
        .filter(|f| *f <= now)
    else {
        return nothing(next);
    };
    let before = |d: Duration| {
        now.checked_sub_signed(d.max(Duration::zero()))
            .unwrap_or(DateTime::<Utc>::MIN_UTC)
    };
    let cutoff = before(rule.threshold);
    let window_cutoff = before(rule.window).min(cutoff);

    // On-time firings: [max(first, cutoff), now].
    let on_time = on_time_firings(&clock, tz, first, cutoff, now);
    // Everything due before the oldest on-time firing is missed. With no on-time firing, that
    // is everything due before the cutoff (and nothing lies in [cutoff, now]).
    let missed_until = on_time.first().copied().unwrap_or(cutoff);
    let mut gaps = Vec::new();

    // Missed firings older than the window: never run, whatever the policy.
    let window_end = window_cutoff.min(missed_until);
    let (_, too_old) = missed_firings(&clock, tz, first, window_end, 0);
    let mut start = Some(first);
    if too_old > 0 {
        gaps.push(MissedGap {
            reason: GapReason::Window,
            first,
            last: last_before(&clock, tz, first, window_end),
            count: too_old,
        });
        start = clock.next_at_or_after(tz, window_end);
    }

    // Missed firings within the window follow the policy.
    let (kept, dropped) = match start.filter(|s| *s < missed_until) {
        Some(s) => {
            let (kept, count) = missed_firings(&clock, tz, s, missed_until, rule.policy.keep());
            let dropped = count.saturating_sub(kept.len() as u64);
            if dropped > 0 {
                // The dropped ones are the oldest: they end just before the first kept one.
                let end = kept.first().copied().unwrap_or(missed_until);
                gaps.push(MissedGap {
                    reason: GapReason::Skip,
                    first: s,
                    last: last_before(&clock, tz, s, end),
                    count: dropped,
                });
            }
            (kept, dropped)
        }
        None => (Vec::new(), 0),
    };

    let mut fires = kept;
    fires.extend(on_time);
    FirePlan {
        fires,
        skipped: too_old + dropped,
        gaps,
        next_fire_at: next,
    }
}

/// The last firing before `end`, not before `first` (`first` itself when there is none, which
/// callers rule out by counting at least one firing in `[first, end)`).
fn last_before(clock: &Clock, tz: Tz, first: DateTime<Utc>, end: DateTime<Utc>) -> DateTime<Utc> {
    clock
        .prev_before(tz, end)
        .filter(|x| *x >= first)
        .unwrap_or(first)
}

/// The on-time firings `[max(first, cutoff), now]`, oldest first, at most [`MAX_ON_TIME`] (the
/// most recent ones).
fn on_time_firings(
    clock: &Clock,
    tz: Tz,
    first: DateTime<Utc>,
    cutoff: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Vec<DateTime<Utc>> {
    let start = if cutoff > first {
        clock.next_at_or_after(tz, cutoff)
    } else {
        Some(first)
    };
    let mut out = Vec::new();
    let mut t = start;
    while let Some(x) = t.filter(|x| *x <= now) {
        if out.len() == MAX_ON_TIME {
            // Too many to keep them all: keep the most recent MAX_ON_TIME, found backwards
            // from `now`, so that the cap drops the oldest (they become "missed").
            return recent_before(clock, tz, first, now, true, MAX_ON_TIME);
        }
        out.push(x);
        t = clock.next_after(tz, x);
    }
    out
}

/// The missed firings `[first, until)`: the most recent `keep` of them (oldest first) and how
/// many there are in all (see [`plan_firings`] for when the count is extrapolated).
fn missed_firings(
    clock: &Clock,
    tz: Tz,
    first: DateTime<Utc>,
    until: DateTime<Utc>,
    keep: usize,
) -> (Vec<DateTime<Utc>>, u64) {
    if first >= until {
        return (Vec::new(), 0);
    }
    // Walk forward, remembering only the last `keep` (a ring buffer: bounded memory).
    let mut ring: VecDeque<DateTime<Utc>> = VecDeque::with_capacity(keep);
    let mut count = 0usize;
    let mut last = first;
    let mut t = Some(first);
    while let Some(x) = t.filter(|x| *x < until) {
        if count == COUNT_BOUND {
            // Bound hit: stop enumerating. The kept ones are the last `keep` before `until`,
            // found backwards (<= 1000 steps); the count is computed or extrapolated.
            let kept = recent_before(clock, tz, first, until, false, keep);
            let total = clock
                .count_in(first, until)
                .unwrap_or_else(|| extrapolate(count as u64, first, last, until));
            return (kept, total);
        }
        if keep > 0 {
            if ring.len() == keep {
                ring.pop_front();
            }
            ring.push_back(x);
        }
        count += 1;
        last = x;
        t = clock.next_after(tz, x);
    }
    (ring.into(), count as u64)
}

/// The most recent `n` firings `>= first` and before `end` (`<= end` when `inclusive`), oldest
/// first, found by walking backwards: at most `n` searches.
fn recent_before(
    clock: &Clock,
    tz: Tz,
    first: DateTime<Utc>,
    end: DateTime<Utc>,
    inclusive: bool,
    n: usize,
) -> Vec<DateTime<Utc>> {
    let mut out = Vec::with_capacity(n);
    let mut t = if inclusive {
        clock.prev_at_or_before(tz, end)
    } else {
        clock.prev_before(tz, end)
    };
    while let Some(x) = t.filter(|x| *x >= first) {
        if out.len() == n {
            break;
        }
        out.push(x);
        t = clock.prev_before(tz, x);
    }
    out.reverse();
    out
}

/// Estimate the firings in `[first, until)` from `counted` firings seen in `[first, last]`:
/// the rate so far, applied to the rest of the range. Exact for evenly spaced schedules.
fn extrapolate(
    counted: u64,
    first: DateTime<Utc>,
    last: DateTime<Utc>,
    until: DateTime<Utc>,
) -> u64 {
    let seen = (last - first).num_milliseconds().max(1) as f64;
    let rest = (until - last).num_milliseconds().max(0) as f64;
    // `counted` firings span counted-1 gaps over `seen`; the rest holds rest/gap more, minus
    // the one at `last` already counted when the rest ends on a firing.
    let gap = seen / (counted.saturating_sub(1).max(1)) as f64;
    let more = (rest / gap).ceil() - 1.0;
    counted + more.max(0.0) as u64
}
