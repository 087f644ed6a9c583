//! Which part of a window to read from stored per-bucket counts and which from the job table:
//! one planner for the monitor's quarter-hour counts ([`crate::monitor::quarters`]) and the
//! admin's per-minute samples (its throughput charts).
//!
//! A window `[since, until)` is covered by buckets of one width aligned on the epoch. A bucket
//! that was counted (stored) and lies wholly in `[since, end)` is summed; everything else —
//! the part before the first whole bucket, the buckets without a count, and `[end, until)`
//! (the bucket in progress, or the last minutes a chart counts again) — is counted from the
//! job table, in at most [`MAX_SPANS`] ranges. More gaps merge into the first range, and the
//! buckets inside it are then not summed: every instant of the window is read exactly once.

use chrono::{DateTime, TimeDelta, Utc};
use std::collections::BTreeSet;

/// At most this many ranges of the job table are counted for one window; more gaps between
/// the counted buckets are counted as one range from the first gap.
pub const MAX_SPANS: usize = 8;

/// Where a window's counts come from: the counted buckets to sum, and the ranges of the job
/// table to count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The starts of the counted buckets to sum (none inside a span).
    pub buckets: BTreeSet<DateTime<Utc>>,
    /// The ranges `[from, until)` of the job table to count, oldest first; the last ends at
    /// the window's end.
    pub spans: Vec<(DateTime<Utc>, DateTime<Utc>)>,
    /// The buckets' width.
    pub width: TimeDelta,
}

/// The start of the bucket of `width` (aligned on the epoch) holding `t`.
fn start_of(t: DateTime<Utc>, width: TimeDelta) -> DateTime<Utc> {
    let w = width.num_milliseconds().max(1);
    DateTime::from_timestamp_millis(t.timestamp_millis().div_euclid(w) * w).unwrap_or(t)
}

impl Plan {
    /// The plan for the window `[since, until)` with buckets of `width`, given the buckets
    /// counted (`taken`, by their start): those wholly in `[since, end)` are summed. A width
    /// that is not positive sums nothing.
    pub fn of(
        taken: &[DateTime<Utc>],
        since: DateTime<Utc>,
        end: DateTime<Utc>,
        until: DateTime<Utc>,
        width: TimeDelta,
    ) -> Plan {
        if width <= TimeDelta::zero() {
            // No buckets to sum: the whole window from the job table.
            return Plan {
                buckets: BTreeSet::new(),
                spans: vec![(since, until)]
                    .into_iter()
                    .filter(|(a, b)| a < b)
                    .collect(),
                width,
            };
        }
        let first = if start_of(since, width) == since {
            since
        } else {
            start_of(since, width) + width
        };
        let end = start_of(end.min(until), width).max(first);
        let taken: BTreeSet<_> = taken.iter().copied().collect();
        let mut buckets = BTreeSet::new();
        let mut spans = Vec::new();
        let mut open = (since < first).then_some(since);
        let mut b = first;
        while b < end {
            if taken.contains(&b) {
                if let Some(from) = open.take() {
                    spans.push((from, b));
                }
                buckets.insert(b);
            } else if open.is_none() {
                open = Some(b);
            }
            b += width;
        }
        spans.push((open.unwrap_or(end).min(until), until));
        spans.retain(|(from, to)| from < to);
        while spans.len() > MAX_SPANS {
            spans[1].0 = spans[0].0;
            spans.remove(0);
        }
        if let Some((from, to)) = spans.first().copied() {
            buckets.retain(|b| *b < from || *b >= to);
        }
        Plan {
            buckets,
            spans,
            width,
        }
    }

    /// The runs `[from, to)` of consecutive buckets the plan sums, oldest first: at most one
    /// more than the spans between them.
    pub fn runs(&self) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
        let mut out: Vec<(DateTime<Utc>, DateTime<Utc>)> = Vec::new();
        for b in &self.buckets {
            match out.last_mut() {
                Some((_, to)) if to == b => *to = *b + self.width,
                _ => out.push((*b, *b + self.width)),
            }
        }
        out
    }

    /// The length of the job table the plan counts.
    pub fn counted(&self) -> TimeDelta {
        self.spans
            .iter()
            .map(|(from, to)| *to - *from)
            .fold(TimeDelta::zero(), |a, b| a + b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).expect("instant").to_utc()
    }

    fn at(hm: &str) -> DateTime<Utc> {
        t(&format!("2026-12-05T{hm}:00Z"))
    }

    const QUARTER: TimeDelta = TimeDelta::minutes(15);
    const MINUTE: TimeDelta = TimeDelta::minutes(1);

    /// Quarters: the window's start up to its first whole quarter, the gap and the quarter in
    /// progress are counted; the counted quarters summed in runs.
    #[test]
    fn a_window_sums_its_counted_buckets_and_counts_the_edges_and_gaps() {
        let since = t("2026-12-05T10:07:30Z");
        let until = t("2026-12-05T11:20:00.001Z");
        // 10:15, 10:30 and 11:00 counted; 10:45 not (no leader); 11:15 is in progress.
        let taken = [at("10:00"), at("10:15"), at("10:30"), at("11:00")];
        let p = Plan::of(&taken, since, until, until, QUARTER);
        assert_eq!(
            p.spans,
            vec![
                (since, at("10:15")),
                (at("10:45"), at("11:00")),
                (at("11:15"), until),
            ]
        );
        assert_eq!(
            p.buckets.iter().copied().collect::<Vec<_>>(),
            vec![at("10:15"), at("10:30"), at("11:00")],
            "10:00 starts before the window: its part is counted from the job table"
        );
        assert_eq!(
            p.runs(),
            vec![(at("10:15"), at("10:45")), (at("11:00"), at("11:15"))],
            "the buckets summed, in runs between the gaps"
        );
    }

    #[test]
    fn a_window_starting_on_a_bucket_counts_nothing_before_it() {
        let p = Plan::of(
            &[at("10:00"), at("10:15")],
            at("10:00"),
            at("10:30"),
            at("10:30"),
            QUARTER,
        );
        assert!(p.spans.is_empty(), "{p:?}");
        assert_eq!(p.buckets.len(), 2);
    }

    #[test]
    fn without_counts_the_whole_window_is_one_range() {
        let since = t("2026-12-05T10:07:30Z");
        let until = t("2026-12-05T12:00:00Z");
        let p = Plan::of(&[], since, until, until, QUARTER);
        assert_eq!(p.spans, vec![(since, until)]);
        assert!(p.buckets.is_empty());
    }

    #[test]
    fn many_gaps_are_counted_as_at_most_eight_ranges_without_summing_inside_them() {
        let since = at("00:00");
        let until = at("06:00");
        // Every other quarter counted: 12 gaps.
        let taken: Vec<_> = (0..24).step_by(2).map(|i| since + QUARTER * i).collect();
        let p = Plan::of(&taken, since, until, until, QUARTER);
        assert_eq!(p.spans.len(), MAX_SPANS);
        assert_eq!(p.spans[0].0, since + QUARTER, "from the first gap");
        assert_eq!(p.spans[MAX_SPANS - 1].1, until);
        let (from, to) = p.spans[0];
        assert!(
            p.buckets.iter().all(|b| *b < from || *b >= to),
            "a bucket inside the first range would be counted twice: {p:?}"
        );
        assert!(p.runs().len() <= MAX_SPANS + 1, "{:?}", p.runs());
        // Every minute of the window is counted exactly once: summed buckets plus ranges.
        let summed = QUARTER * p.buckets.len() as i32;
        assert_eq!(summed + p.counted(), until - since);
    }

    #[test]
    fn a_width_of_zero_counts_the_whole_window_and_does_not_loop() {
        let (since, until) = (at("10:00"), at("11:00"));
        let p = Plan::of(&[at("10:00")], since, until, until, TimeDelta::zero());
        assert_eq!(p.spans, vec![(since, until)]);
        assert!(p.buckets.is_empty() && p.runs().is_empty());
    }

    /// Minutes with an `end` before the window's end: the last minutes are counted again even
    /// when they were counted (a chart's samples of the last minutes may miss late commits).
    #[test]
    fn buckets_from_the_end_on_are_counted_even_when_counted() {
        let since = at("10:00");
        let now = t("2026-12-05T10:07:30Z");
        let until = now + TimeDelta::milliseconds(1);
        // 10:01 not sampled; 10:06 sampled but recounted from 10:06 on.
        let taken = ["10:00", "10:02", "10:03", "10:04", "10:05", "10:06"].map(at);
        let p = Plan::of(&taken, since, at("10:06"), until, MINUTE);
        assert_eq!(
            p.spans,
            vec![(at("10:01"), at("10:02")), (at("10:06"), until)]
        );
        assert_eq!(
            p.runs(),
            vec![(at("10:00"), at("10:01")), (at("10:02"), at("10:06"))]
        );
    }
}
