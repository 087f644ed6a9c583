//! The windows of the week-, day- and hour-long checks from the sampler's quarter-hour counts
//! (migrations 0038 and 0039, [`kairos_store::quarters`]), and the job table only where they
//! do not reach: the mails sent per topic with their bounces and complaints over the
//! deliverability window ([`sent_per_topic`]), the jobs decided per schedule or topic over the
//! skip-rate window ([`decided`]), and the jobs finished per kind and state over the
//! failure-rate window ([`finished`]).
//!
//! A week of mail at 100 a second is sixty million jobs, a day of jobs eight million, an hour
//! 360,000: reading them at every pass (once a minute) kept a database backend busy. The
//! sampler counts each quarter hour once; a pass has the database sum the counted quarters of
//! its window (one row per key for each run of consecutive quarters) and counts from the job
//! table only the rest ([`Plan`]): the part of the window before its first whole quarter, the
//! quarter in progress (and the last one until the sampler counts it), and quarters without a
//! count — at most [`crate::buckets::MAX_SPANS`] ranges. A counted quarter's bounced and
//! complained mails are kept current by the inbound path as each mail's first event of the
//! type is recorded, and a job retried leaves its quarter's counts.

use crate::buckets::Plan;
use chrono::{DateTime, Utc};
use kairos_store::{
    DecidedCount, JobCount, JobCountDecided, JobCountFinished, QUARTER, QuarterCountList,
    QuarterCountOf, QuarterCountSum, QuarterSums, Store, TopicCount, TopicCountRange, quarter_of,
};
use std::collections::BTreeMap;

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
    let plan = Plan::of(&marks.taken, since, until, until, QUARTER);
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
