//! Schedules: cron / one-shot / interval specs in IANA time zones, DST, period keys, misfire.
//!
//! A schedule is a *clock*: [`ScheduleSpec`] says which instants it fires at, the schedule's
//! IANA zone ([`chrono_tz::Tz`]) says how its wall clock maps onto real instants. Every
//! instant that leaves this module is UTC; wall clock times exist only inside the math.
//!
//! # DST rules (cron)
//!
//! Cron expressions are matched against the **wall clock of the schedule's zone**, by
//! `croner` 4, which implements the vixie-cron style rules:
//!
//! - A *fixed-time* expression (a single second, a single minute and a single hour, e.g.
//!   `30 2 * * *`) whose time does not exist on a spring-forward day fires **once, at the first
//!   real instant after the gap** (`03:00-04:00` in New York); on a fall-back day, whose time
//!   happens twice, it fires **once, at the first of the two instants** (`01:30-04:00`).
//! - Any other expression (wildcards, steps, lists or ranges in second, minute or hour, e.g.
//!   `30 * * * *` or `*/15 2 * * *`) is an *interval* job: it fires at every **real** instant
//!   whose wall clock matches, so in a repeated hour it fires at both instants and in a skipped
//!   hour it does not fire at all (there is no wall clock time there to match).
//!
//! Note the edge of the classification (croner's, kept as is): a *list* of fixed times such
//! as `0 1,13 * * *` or `0,30 2 * * *` counts as an interval job, so a listed time inside a
//! repeated hour fires twice and one inside a skipped hour does not fire that day. Zones
//! change their clocks between 00:00 and 03:00 local, so this only matters for lists that
//! name those hours; write one schedule per fixed time where it matters.
//!
//! Everything is computed from explicit instants: nothing here reads the system clock.
//!
//! # Layout
//!
//! - this file: [`ScheduleSpec`] and its next/previous-firing math, zone parsing and formatting;
//! - `period`: [`PeriodUnit`] and [`period_key`] (a firing's key is its nominal instant seen
//!   in the schedule's zone);
//! - `misfire`: [`Misfire`], [`FirePlan`] and [`plan_firings`];
//! - `overlap`: [`Overlap`], what a firing does while the previous occurrence runs.

mod misfire;
mod overlap;
mod period;
#[cfg(test)]
mod tests;

pub use misfire::{
    DEFAULT_MISFIRE_THRESHOLD, DEFAULT_MISFIRE_WINDOW, FirePlan, GapReason, MAX_MISFIRE_CAP,
    Misfire, MisfireRule, MissedGap, plan, plan_firings,
};
pub use overlap::Overlap;
pub use period::{PeriodUnit, period_key};

use crate::error::Error;
use chrono::{DateTime, SecondsFormat, TimeZone, Timelike, Utc};
use chrono_tz::Tz;
use croner::parser::{CronParser, Seconds, Year};
use croner::{Cron, Direction};
use serde::{Deserialize, Serialize};

/// The shortest interval an [`ScheduleSpec::Every`] may have, in milliseconds (1 s).
pub const MIN_INTERVAL_MS: i64 = 1_000;
/// The longest interval an [`ScheduleSpec::Every`] may have, in milliseconds (366 days).
pub const MAX_INTERVAL_MS: i64 = 366 * 24 * 3600 * 1_000;

/// What clock a schedule follows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ScheduleSpec {
    /// A cron expression: 5 fields (`min hour dom month dow`, seconds are 0), or 6 with a
    /// leading seconds field, or a macro (`@yearly`, `@annually`, `@monthly`, `@weekly`,
    /// `@daily`, `@midnight`, `@hourly`). Matched against the wall clock of the schedule's zone.
    Cron {
        /// The expression, as given.
        expr: String,
    },
    /// A single instant: fires once.
    At {
        /// When.
        at: DateTime<Utc>,
    },
    /// A fixed interval of real time (not wall clock time: the zone plays no part), anchored
    /// at `anchor`: fires at `anchor + k * every` for every `k >= 0`, never before `anchor`.
    Every {
        /// The interval in milliseconds, [`MIN_INTERVAL_MS`]..=[`MAX_INTERVAL_MS`].
        every_ms: i64,
        /// The first firing; all others are whole intervals after it.
        anchor: DateTime<Utc>,
    },
}

impl ScheduleSpec {
    /// Validate: parse the cron expression (and check that it ever fires); the interval must be
    /// at least 1 s and at most 366 days. The error names the field `cron` or `interval`.
    pub fn validate(&self) -> Result<(), Error> {
        self.compile().map(|_| ())
    }

    /// The first firing strictly after `after`, in zone `tz`. `None` when there is none (a
    /// past one-shot) or the spec is invalid (call [`validate`](Self::validate) first).
    pub fn next_after(&self, tz: Tz, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.compile().ok()?.next_after(tz, after)
    }

    /// The first firing at or after `from` (to compute a new schedule's first `next_fire_at`).
    pub fn next_at_or_after(&self, tz: Tz, from: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.compile().ok()?.next_at_or_after(tz, from)
    }

    /// The latest firing at or before `at`, or `None` if there is none (used for "fire now for
    /// the current period"). Searches backwards from `at` (croner jumps field by field, so
    /// this costs about as much as [`next_after`](Self::next_after)).
    pub fn prev_at_or_before(&self, tz: Tz, at: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.compile().ok()?.prev_at_or_before(tz, at)
    }

    /// The firings in `[from, to]`, oldest first, at most `limit` of them (the SLO monitor's
    /// expected firings). Parses the spec once. Empty for an invalid spec.
    pub fn firings_between(
        &self,
        tz: Tz,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        limit: usize,
    ) -> Vec<DateTime<Utc>> {
        let Ok(clock) = self.compile() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut next = clock.next_at_or_after(tz, from);
        while let Some(t) = next {
            if t > to || out.len() >= limit {
                break;
            }
            out.push(t);
            next = clock.next_after(tz, t);
        }
        out
    }

    /// Whether the schedule fires more than once (false for [`ScheduleSpec::At`]).
    pub fn is_recurring(&self) -> bool {
        !matches!(self, ScheduleSpec::At { .. })
    }

    /// Parse once, so that loops (the misfire planner) do not re-parse the expression.
    pub(crate) fn compile(&self) -> Result<Clock, Error> {
        match self {
            ScheduleSpec::Cron { expr } => parse_cron(expr).map(|c| Clock::Cron(Box::new(c))),
            ScheduleSpec::At { at } => Ok(Clock::At(*at)),
            ScheduleSpec::Every { every_ms, anchor } => {
                if !(MIN_INTERVAL_MS..=MAX_INTERVAL_MS).contains(every_ms) {
                    return Err(Error::invalid(
                        "interval",
                        format!(
                            "{every_ms} ms is out of range: an interval must be at least 1 s and \
                             at most 366 days"
                        ),
                    ));
                }
                Ok(Clock::Every {
                    every_ns: i128::from(*every_ms) * 1_000_000,
                    anchor: *anchor,
                })
            }
        }
    }
}

/// The fields of a cron expression of 5 fields, and their ranges (a 6-field one leads with
/// `second`, 0-59).
const CRON_FIELDS: [(&str, u32, u32); 5] = [
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day-of-month", 1, 31),
    ("month", 1, 12),
    ("day-of-week", 0, 7),
];

/// Which field of a refused expression is wrong, as the operator reads it (`minute 61 out of
/// range (0-59)`, `hour field "x" is not valid`): each field is tried alone, the others `*`.
/// `None` when the fields count is wrong or no single field is to blame (croner's own message
/// is then shown).
fn cron_field_error(parser: &CronParser, expr: &str) -> Option<String> {
    let fields: Vec<&str> = expr.split_whitespace().collect();
    let names: Vec<(&str, u32, u32)> = match fields.len() {
        5 => CRON_FIELDS.to_vec(),
        6 => std::iter::once(("second", 0, 59))
            .chain(CRON_FIELDS)
            .collect(),
        _ => return None,
    };
    for (i, (field, (name, lo, hi))) in fields.iter().zip(names).enumerate() {
        let alone: Vec<&str> = (0..fields.len())
            .map(|j| if j == i { *field } else { "*" })
            .collect();
        if parser.parse(&alone.join(" ")).is_ok() {
            continue;
        }
        // A number outside the field's range, in a list, range or step base.
        let out = field
            .split(',')
            .filter_map(|item| item.split('/').next())
            .flat_map(|range| range.split('-'))
            .filter_map(|n| n.parse::<u32>().ok())
            .find(|n| !(lo..=hi).contains(n));
        return Some(match out {
            Some(n) => format!("{name} {n} out of range ({lo}-{hi})"),
            None => format!("{name} field {field:?} is not valid"),
        });
    }
    None
}

/// Parse a cron expression the way kairos accepts it: 5 or 6 fields (seconds optional,
/// leading), macros, no year field.
fn parse_cron(expr: &str) -> Result<Cron, Error> {
    let trimmed = expr.trim();
    // croner knows every macro but `@midnight`, which is `@daily` by another name.
    let normalized = if trimmed.eq_ignore_ascii_case("@midnight") {
        "@daily"
    } else {
        trimmed
    };
    // Seconds optional: 5 fields get seconds = 0, 6 fields lead with seconds. Years are
    // disallowed: a 7th field would be a year, which kairos does not offer (and an expression
    // that was meant as 6 fields with a typo would silently change meaning).
    // croner reads an empty list item (`0 , * * *`) as a field that matches nothing; the
    // never-fires probe below then walks day by day to year 9999 (a second of CPU per
    // request). Refuse it here, naming it.
    if normalized
        .split_whitespace()
        .any(|field| field.split(',').any(str::is_empty))
    {
        return Err(Error::invalid(
            "cron",
            format!("{expr:?} has an empty list item (two commas, or a comma at an end)"),
        ));
    }
    let parser = CronParser::builder()
        .seconds(Seconds::Optional)
        .year(Year::Disallowed)
        .build();
    let cron = parser.parse(normalized).map_err(|e| {
        let hint = if normalized.contains('/') {
            " (a step needs a range or `*` before it: write `5-59/5`, not `5/5`)"
        } else {
            ""
        };
        if let Some(reason) = cron_field_error(&parser, normalized) {
            return Error::invalid("cron", format!("{reason} in {expr:?}{hint}"));
        }
        Error::invalid(
            "cron",
            format!(
                "{expr:?} is not a cron expression of 5 fields (minute hour day-of-month month \
                 day-of-week), 6 with leading seconds, or a macro like @daily: {e}{hint}"
            ),
        )
    })?;
    // An expression can parse and still never fire (`0 0 30 2 *`). Catch it here, once,
    // rather than have every later search give up. The probe starts at a fixed instant (the
    // crate never reads the clock); croner's search ends at year 9999, so any pattern that
    // fires at all fires after 1970.
    let probe = Utc.timestamp_opt(0, 0).single().expect("the epoch exists");
    if cron.find_next_occurrence(&probe, true).is_err() {
        return Err(Error::invalid("cron", format!("{expr:?} never fires")));
    }
    Ok(cron)
}

/// A parsed [`ScheduleSpec`], ready for repeated searches.
#[derive(Debug, Clone)]
pub(crate) enum Clock {
    /// Boxed: a parsed pattern is ~300 bytes, the other variants ~30.
    Cron(Box<Cron>),
    At(DateTime<Utc>),
    /// Interval arithmetic is done in i128 nanoseconds so that any anchor and interval in range
    /// (and any `DateTime<Utc>`) is exact and cannot overflow.
    Every {
        every_ns: i128,
        anchor: DateTime<Utc>,
    },
}

/// Which of the four searches to run; each maps to a croner direction + inclusiveness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Search {
    /// `> t`
    After,
    /// `>= t`
    AtOrAfter,
    /// `<= t`
    AtOrBefore,
    /// `< t`
    Before,
}

impl Clock {
    pub(crate) fn next_after(&self, tz: Tz, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.search(tz, t, Search::After)
    }

    pub(crate) fn next_at_or_after(&self, tz: Tz, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.search(tz, t, Search::AtOrAfter)
    }

    pub(crate) fn prev_at_or_before(&self, tz: Tz, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.search(tz, t, Search::AtOrBefore)
    }

    pub(crate) fn prev_before(&self, tz: Tz, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        self.search(tz, t, Search::Before)
    }

    fn search(&self, tz: Tz, t: DateTime<Utc>, how: Search) -> Option<DateTime<Utc>> {
        match self {
            Clock::Cron(cron) => cron_search(cron, tz, t, how),
            Clock::At(at) => {
                let ok = match how {
                    Search::After => *at > t,
                    Search::AtOrAfter => *at >= t,
                    Search::AtOrBefore => *at <= t,
                    Search::Before => *at < t,
                };
                ok.then_some(*at)
            }
            Clock::Every { every_ns, anchor } => every_search(*every_ns, *anchor, t, how),
        }
    }

    /// The number of firings in `[from, until)`, exactly, when it can be computed without
    /// enumerating (one-shots and intervals); `None` for cron.
    pub(crate) fn count_in(&self, from: DateTime<Utc>, until: DateTime<Utc>) -> Option<u64> {
        if from >= until {
            return Some(0);
        }
        match self {
            Clock::Cron(_) => None,
            Clock::At(at) => Some(u64::from(from <= *at && *at < until)),
            Clock::Every { every_ns, anchor } => {
                // Firing k is at anchor + k*e. Those >= from start at k0 = max(0, ceil((from-a)/e)),
                // those < until end before k1 = max(0, ceil((until-a)/e)).
                let a = nanos(*anchor);
                let k = |t: DateTime<Utc>| ceil_div(nanos(t) - a, *every_ns).max(0);
                Some(u64::try_from(k(until) - k(from)).unwrap_or(u64::MAX))
            }
        }
    }
}

/// Run one search with croner in the schedule's zone.
///
/// croner works on whole wall clock seconds: it drops the sub-second part of the start and its
/// results are whole seconds. So `t` is truncated to the second first, and a sub-second part
/// turns the strict searches into the inclusive ones on the truncated second (and vice versa):
/// for `t = 09:00:00.5`, "after t" is "after 09:00:00" and "before t" is "at or before 09:00:00".
fn cron_search(cron: &Cron, tz: Tz, t: DateTime<Utc>, how: Search) -> Option<DateTime<Utc>> {
    let whole = t.with_nanosecond(0)?;
    let fractional = whole != t;
    // "At or after t" is searched as "strictly after t - 1 s" (cron has whole seconds): croner's
    // inclusive search does not return a firing that was shifted out of a spring-forward gap
    // when asked from that very instant (from 2026-03-08T07:00Z it skipped the 03:00 EDT
    // firing of `30 2 * * *`), and the planner asks exactly that. Pinned by
    // `at_or_after_returns_gap_shifted_firing`.
    let (direction, inclusive, start) = match how {
        Search::After => (Direction::Forward, false, whole),
        Search::AtOrAfter if fractional => (Direction::Forward, false, whole),
        Search::AtOrAfter => (
            Direction::Forward,
            false,
            whole - chrono::Duration::seconds(1),
        ),
        Search::AtOrBefore => (Direction::Backward, true, whole),
        Search::Before => (Direction::Backward, fractional, whole),
    };
    // Compute in the zone: croner matches the wall clock of the DateTime's zone, and resolves
    // ambiguous / nonexistent wall times with the zone's rules (see the module docs).
    let start = start.with_timezone(&tz);
    let found = match direction {
        Direction::Forward => cron.find_next_occurrence(&start, inclusive),
        Direction::Backward => cron.find_previous_occurrence(&start, inclusive),
    };
    // croner gives up (TimeSearchLimitExceeded) past year 9999 or for impossible dates: no firing.
    let found = found.ok()?.with_timezone(&Utc);
    // Belt and braces: never hand back a result on the wrong side of `t`, whatever croner
    // does at an edge (a fold, a gap); callers rely on the ordering to terminate loops.
    let ok = match how {
        Search::After => found > t,
        Search::AtOrAfter => found >= t,
        Search::AtOrBefore => found <= t,
        Search::Before => found < t,
    };
    ok.then_some(found)
}

fn every_search(
    every_ns: i128,
    anchor: DateTime<Utc>,
    t: DateTime<Utc>,
    how: Search,
) -> Option<DateTime<Utc>> {
    let d = nanos(t) - nanos(anchor);
    // The index k of the answer anchor + k*e; the answer exists only for k >= 0. Forward
    // searches from before the anchor land on the anchor itself (k clamped to 0).
    let k = match how {
        Search::After => (d.div_euclid(every_ns) + 1).max(0),
        Search::AtOrAfter => ceil_div(d, every_ns).max(0),
        Search::AtOrBefore => d.div_euclid(every_ns),
        Search::Before => ceil_div(d, every_ns) - 1,
    };
    if k < 0 {
        return None;
    }
    from_nanos(nanos(anchor) + k * every_ns)
}

/// Nanoseconds since the epoch, exact for every `DateTime<Utc>`.
fn nanos(t: DateTime<Utc>) -> i128 {
    i128::from(t.timestamp()) * 1_000_000_000 + i128::from(t.timestamp_subsec_nanos())
}

fn from_nanos(n: i128) -> Option<DateTime<Utc>> {
    let secs = i64::try_from(n.div_euclid(1_000_000_000)).ok()?;
    let sub = u32::try_from(n.rem_euclid(1_000_000_000)).ok()?;
    DateTime::from_timestamp(secs, sub)
}

/// Ceiling division for a positive divisor.
fn ceil_div(a: i128, b: i128) -> i128 {
    -((-a).div_euclid(b))
}

/// Parse an IANA zone name (`Europe/Berlin`, `America/New_York`, `UTC`). Error field
/// `timezone`.
pub fn parse_timezone(name: &str) -> Result<Tz, Error> {
    crate::text::check_text("timezone", name)?;
    name.trim().parse::<Tz>().map_err(|_| {
        Error::invalid(
            "timezone",
            format!(
                "{name:?} is not a known time zone: it must be an IANA name like \
                 \"Europe/Berlin\", \"America/New_York\" or \"UTC\""
            ),
        )
    })
}

/// `t` as RFC 3339 with the zone's offset at that instant, seconds precision
/// (`2026-03-08T03:00:00-04:00`; UTC is written `+00:00`, not `Z`). Used by `kairos cron next`.
pub fn format_local(tz: Tz, t: DateTime<Utc>) -> String {
    t.with_timezone(&tz)
        .to_rfc3339_opts(SecondsFormat::Secs, false)
}
