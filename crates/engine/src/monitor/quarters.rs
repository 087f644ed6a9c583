//! The windows of the week- and day-long checks from the sampler's quarter-hour counts
//! (migration 0038, [`kairos_store::quarters`]), and the job table only where they do not
//! reach: the mails sent per topic with their bounces and complaints over the deliverability
//! window ([`sent_per_topic`]), the jobs decided per schedule or topic over the skip-rate
//! window ([`decided`]), and the jobs finished per kind and state over the failure-rate window
//! ([`finished`]).
//!
//! A week of mail at 100 a second is sixty million jobs, a day of jobs eight million, an hour
//! 360,000: reading them at every pass (once a minute) kept a database backend busy. The sampler counts each
//! quarter hour once; a pass sums the counted quarters of its window and counts from the job
//! table only the rest ([`Plan`]): the part of the window before its first whole quarter, the
//! quarter in progress (and the last one until the sampler counts it), and quarters without a
//! count — at most [`MAX_SPANS`] ranges. A counted quarter's bounced and complained mails are
//! kept current by the inbound path as each mail's first event of the type is recorded.

use chrono::{DateTime, Duration, Utc};
use kairos_store::{
    DecidedCount, JobCount, JobCountDecided, JobCountFinished, QUARTER, QuarterCountList,
    QuarterCountOf, QuarterCountSum, QuarterSums, Store, TopicCount, TopicCountRange, quarter_of,
};
use std::collections::{BTreeMap, BTreeSet};

/// At most this many ranges of the job table are counted for one window; more gaps between
/// the counted quarters are counted as one range from the window's start.
pub const MAX_SPANS: usize = 8;

/// Where a window's counts come from: the counted quarters to sum, and the ranges of the
/// job table to count.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The starts of the counted quarters whose counts are summed (none inside a span).
    pub quarters: BTreeSet<DateTime<Utc>>,
    /// The ranges `[from, until)` of the job table to count, oldest first; the last ends at
    /// the window's end.
    pub spans: Vec<(DateTime<Utc>, DateTime<Utc>)>,
}

impl Plan {
    /// The plan for the window `[since, until)`, given the quarters counted (`taken`).
    pub fn of(taken: &[DateTime<Utc>], since: DateTime<Utc>, until: DateTime<Utc>) -> Plan {
        let first = if quarter_of(since) == since {
            since
        } else {
            quarter_of(since) + QUARTER
        };
        // Only whole quarters that ended by the window's end can be summed.
        let end = quarter_of(until).max(first);
        let taken: BTreeSet<_> = taken.iter().copied().collect();
        let mut quarters = BTreeSet::new();
        let mut spans = Vec::new();
        let mut open = (since < first).then_some(since);
        let mut q = first;
        while q < end {
            if taken.contains(&q) {
                if let Some(from) = open.take() {
                    spans.push((from, q));
                }
                quarters.insert(q);
            } else if open.is_none() {
                open = Some(q);
            }
            q += QUARTER;
        }
        spans.push((open.unwrap_or(end).min(until), until));
        spans.retain(|(from, to)| from < to);
        while spans.len() > MAX_SPANS {
            spans[1].0 = spans[0].0;
            spans.remove(0);
        }
        if let Some((from, to)) = spans.first().copied() {
            quarters.retain(|q| *q < from || *q >= to);
        }
        Plan { quarters, spans }
    }

    /// The runs `[from, to)` of consecutive quarters the plan sums, oldest first: at most one
    /// more than the spans between them.
    pub fn runs(&self) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
        let mut out: Vec<(DateTime<Utc>, DateTime<Utc>)> = Vec::new();
        for q in &self.quarters {
            match out.last_mut() {
                Some((_, to)) if to == q => *to = *q + QUARTER,
                _ => out.push((*q, *q + QUARTER)),
            }
        }
        out
    }
}

/// The plan of `[since, until)` from the quarters counted, and the counts `of` one kind summed
/// over its runs by the database: a pass reads a row per key (topic, schedule, kind) and run,
/// not per key and quarter.
async fn summed(
    store: &dyn Store,
    of: QuarterCountOf,
    since: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Result<(Plan, QuarterSums), kairos_store::Error> {
    let marks = store
        .quarter_count_list(QuarterCountList {
            since: quarter_of(since),
            until,
            of: QuarterCountOf::Marks,
        })
        .await?;
    let plan = Plan::of(&marks.taken, since, until);
    let mut sums = QuarterSums::default();
    for (from, to) in plan.runs() {
        let s = store
            .quarter_count_sum(QuarterCountSum {
                since: from,
                until: to,
                of,
            })
            .await?;
        sums.topics.extend(s.topics);
        sums.decided.extend(s.decided);
        sums.kinds.extend(s.kinds);
    }
    Ok((plan, sums))
}

/// One topic's mails sent in a window, and of those the bounced and the complained about.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sent {
    /// Mail jobs that succeeded.
    pub sent: i64,
    /// Of those, mails with an `email.bounced` event.
    pub bounced: i64,
    /// Of those, mails with an `email.complained` event.
    pub complained: i64,
}

/// Mail jobs (`mail_kinds`) with a topic that succeeded in `[since, until)`, per topic (only
/// topics with at least one), with their bounced and complained mails, ordered by topic.
pub async fn sent_per_topic(
    store: &dyn Store,
    mail_kinds: &[String],
    since: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Result<BTreeMap<String, Sent>, kairos_store::Error> {
    let (plan, sums) = summed(store, QuarterCountOf::Topics, since, until).await?;
    let mut sent: BTreeMap<String, Sent> = BTreeMap::new();
    let mut add = |c: TopicCount| {
        if mail_kinds.contains(&c.kind) {
            let s = sent.entry(c.topic).or_default();
            s.sent += c.succeeded;
            s.bounced += c.bounced;
            s.complained += c.complained;
        }
    };
    sums.topics.into_iter().for_each(&mut add);
    for (from, to) in plan.spans {
        for c in store
            .topic_count_range(TopicCountRange {
                since: from,
                until: to,
            })
            .await?
        {
            add(c);
        }
    }
    // A quarter's bounces can come before its count (no mail sent counted yet): not a topic
    // that sent mail.
    sent.retain(|_, s| s.sent > 0);
    Ok(sent)
}

/// The jobs decided (succeeded, skipped, dead) in `[since, until)` per schedule, or per topic
/// for jobs of `topic_kinds` without a schedule, state and skip reason: the counted quarters'
/// groups and the job table's ([`kairos_store::InsightStore::job_count_decided`]) under one
/// rule, [`kairos_store::DecidedGroup::subject`] (rows of the sums and of the ranges are not
/// added to each other).
pub async fn decided(
    store: &dyn Store,
    topic_kinds: &[String],
    since: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Result<Vec<DecidedCount>, kairos_store::Error> {
    let (plan, sums) = summed(store, QuarterCountOf::Decided, since, until).await?;
    let mut out: Vec<DecidedCount> = sums
        .decided
        .into_iter()
        .filter_map(|g| g.subject(topic_kinds))
        .collect();
    for (from, to) in plan.spans {
        let groups = store
            .job_count_decided(JobCountDecided {
                since: from,
                until: to,
            })
            .await?;
        out.extend(groups.into_iter().filter_map(|g| g.subject(topic_kinds)));
    }
    Ok(out)
}

/// The jobs finished in `[since, until)` per kind and state, as
/// [`kairos_store::InsightStore::job_count_finished`] counts them (one row per kind and state
/// of each counted quarter and of each range counted from the job table, not summed with each
/// other).
pub async fn finished(
    store: &dyn Store,
    since: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Result<Vec<JobCount>, kairos_store::Error> {
    let (plan, sums) = summed(store, QuarterCountOf::Kinds, since, until).await?;
    let mut out = sums.kinds;
    for (from, to) in plan.spans {
        out.extend(
            store
                .job_count_finished(JobCountFinished {
                    since: from,
                    until: to,
                })
                .await?,
        );
    }
    Ok(out)
}

/// The length of the job table a plan counts (for tests and the docs' figures).
pub fn counted(plan: &Plan) -> Duration {
    plan.spans
        .iter()
        .map(|(from, to)| *to - *from)
        .fold(Duration::zero(), |a, b| a + b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).expect("instant").to_utc()
    }

    fn q(hm: &str) -> DateTime<Utc> {
        t(&format!("2026-12-05T{hm}:00Z"))
    }

    #[test]
    fn a_window_sums_its_counted_quarters_and_counts_the_edges_and_gaps() {
        let since = t("2026-12-05T10:07:30Z");
        let until = t("2026-12-05T11:20:00.001Z");
        // 10:15, 10:30 and 11:00 counted; 10:45 not (no leader); 11:15 is in progress.
        let taken = [q("10:00"), q("10:15"), q("10:30"), q("11:00")];
        let p = Plan::of(&taken, since, until);
        assert_eq!(
            p.spans,
            vec![
                (since, q("10:15")),
                (q("10:45"), q("11:00")),
                (q("11:15"), until),
            ]
        );
        assert_eq!(
            p.quarters.iter().copied().collect::<Vec<_>>(),
            vec![q("10:15"), q("10:30"), q("11:00")],
            "10:00 starts before the window: its part is counted from the job table"
        );
        assert_eq!(
            p.runs(),
            vec![(q("10:15"), q("10:45")), (q("11:00"), q("11:15"))],
            "the quarters summed, in runs between the gaps"
        );
    }

    #[test]
    fn a_window_starting_on_a_quarter_counts_nothing_before_it() {
        let p = Plan::of(&[q("10:00"), q("10:15")], q("10:00"), q("10:30"));
        assert!(p.spans.is_empty(), "{p:?}");
        assert_eq!(p.quarters.len(), 2);
    }

    #[test]
    fn without_counts_the_whole_window_is_one_range() {
        let since = t("2026-12-05T10:07:30Z");
        let until = t("2026-12-05T12:00:00Z");
        let p = Plan::of(&[], since, until);
        assert_eq!(p.spans, vec![(since, until)]);
        assert!(p.quarters.is_empty());
    }

    #[test]
    fn many_gaps_are_counted_as_at_most_eight_ranges_without_summing_inside_them() {
        let since = q("00:00");
        let until = q("06:00");
        // Every other quarter counted: 12 gaps.
        let taken: Vec<_> = (0..24).step_by(2).map(|i| since + QUARTER * i).collect();
        let p = Plan::of(&taken, since, until);
        assert_eq!(p.spans.len(), MAX_SPANS);
        assert_eq!(p.spans[0].0, since + QUARTER, "from the first gap");
        assert_eq!(p.spans[MAX_SPANS - 1].1, until);
        let (from, to) = p.spans[0];
        assert!(
            p.quarters.iter().all(|q| *q < from || *q >= to),
            "a quarter inside the first range would be counted twice: {p:?}"
        );
        assert!(
            p.runs().len() <= MAX_SPANS + 1,
            "a run between two spans at most: {:?}",
            p.runs()
        );
        // Every minute of the window is counted exactly once: summed quarters plus ranges.
        let summed = QUARTER * p.quarters.len() as i32;
        assert_eq!(summed + counted(&p), until - since);
    }
}
