//! Mail per topic by the quarter hour it was sent in ([`crate::InsightStore::topic_count_record`]
//! and its list, range and prune; the bounces and complaints added by `inbound_event_record`),
//! written once over [`SqlRun`] (migration 0038).
//!
//! A quarter's succeeded jobs are counted once, from a quarter of `jobs_finished`, and marked
//! counted in `topic_counts_taken` in the same transaction: a quarter is counted whole or not
//! at all, and one marked without a row had no such jobs. Its bounced and complained mails are
//! added one by one as each mail's first event of that type is recorded, in the event's
//! transaction, so they are current whether the quarter was counted yet or not.

use super::{Dialect, SqlRun};
use crate::binds;
use crate::{
    Result, TOPIC_COUNT_SPAN, TopicCount, TopicCountList, TopicCountPrune, TopicCountRange,
    TopicCounts, mail_event,
};
use chrono::{DateTime, Utc};

/// `COUNT` of the jobs `j` with at least one event of `event_type` (the `inbound_events_job`
/// index of migration 0025).
fn with_event(event_type: &str) -> String {
    format!(
        "COUNT(CASE WHEN EXISTS (SELECT 1 FROM inbound_events e
             WHERE e.job_id = j.id AND e.type = '{event_type}') THEN 1 END)"
    )
}

/// The jobs with a topic that succeeded in `[since, until)`, per kind and topic, with those
/// of them that bounced and were complained about: a range of `jobs_finished`, and two index
/// probes per job.
pub async fn topic_count_range(
    run: &mut impl SqlRun,
    p: TopicCountRange,
) -> Result<Vec<TopicCount>> {
    let sql = format!(
        "SELECT j.kind, j.topic, COUNT(*) AS n, {} AS bounced, {} AS complained FROM jobs j
         WHERE j.finished_at >= $1 AND j.finished_at < $2
           AND j.state = 'succeeded' AND j.topic IS NOT NULL
         GROUP BY j.kind, j.topic ORDER BY j.kind, j.topic",
        with_event(mail_event::BOUNCED),
        with_event(mail_event::COMPLAINED),
    );
    run.fetch("topic count range", &sql, binds![p.since, p.until], &|r| {
        Ok(TopicCount {
            kind: r.text("kind")?,
            topic: r.text("topic")?,
            succeeded: r.int("n")?,
            bounced: r.int("bounced")?,
            complained: r.int("complained")?,
        })
    })
    .await
}

/// Whether the quarter starting at `start` is marked counted.
pub async fn topic_count_taken(run: &mut impl SqlRun, start: DateTime<Utc>) -> Result<bool> {
    Ok(run
        .fetch_optional(
            "topic count taken",
            "SELECT start FROM topic_counts_taken WHERE start = $1",
            binds![start],
            &|r| r.ts("start"),
        )
        .await?
        .is_some())
}

/// The jobs with a topic that succeeded in the quarter starting at `start`, per kind and
/// topic (`bounced` and `complained` left zero: the events add those).
pub async fn topic_count_quarter(
    read: &mut impl SqlRun,
    start: DateTime<Utc>,
) -> Result<Vec<TopicCount>> {
    read.fetch(
        "topic count quarter",
        "SELECT kind, topic, COUNT(*) AS n FROM jobs
         WHERE finished_at >= $1 AND finished_at < $2
           AND state = 'succeeded' AND topic IS NOT NULL
         GROUP BY kind, topic ORDER BY kind, topic",
        binds![start, start + TOPIC_COUNT_SPAN],
        &|r| {
            Ok(TopicCount {
                kind: r.text("kind")?,
                topic: r.text("topic")?,
                succeeded: r.int("n")?,
                ..TopicCount::default()
            })
        },
    )
    .await
}

/// Store `counts` as the quarter `start`'s succeeded jobs, and mark it counted at `now`, on
/// `run` (a write transaction's). False when another writer marked it first (its counts are
/// kept). A row the events created first (a bounce before the count) keeps its outcomes.
pub async fn topic_count_store(
    run: &mut impl SqlRun,
    start: DateTime<Utc>,
    now: DateTime<Utc>,
    counts: &[TopicCount],
) -> Result<bool> {
    let marked = run
        .execute(
            "topic count mark",
            "INSERT INTO topic_counts_taken (start, taken_at) VALUES ($1, $2)
             ON CONFLICT (start) DO NOTHING",
            binds![start, now],
        )
        .await?;
    if marked == 0 {
        return Ok(false);
    }
    for c in counts {
        run.execute(
            "topic count store",
            "INSERT INTO topic_counts (start, kind, topic, succeeded) VALUES ($1, $2, $3, $4)
             ON CONFLICT (start, kind, topic) DO UPDATE SET succeeded = excluded.succeeded",
            binds![start, c.kind.clone(), c.topic.clone(), c.succeeded],
        )
        .await?;
    }
    Ok(true)
}

/// The quarter (its start) of the job column `col`, in SQL.
fn quarter_sql(d: Dialect, col: &str) -> String {
    let secs = TOPIC_COUNT_SPAN.num_seconds();
    match d {
        Dialect::Sqlite => format!("({col} / {ms}) * {ms}", ms = secs * 1000),
        Dialect::Postgres => {
            format!("to_timestamp(floor(extract(epoch FROM {col}) / {secs}) * {secs})")
        }
    }
}

/// Add the event `(source, id)` just recorded to its mail's quarter when it is a bounce or a
/// complaint about a job with a topic that succeeded, and the job's first event of that type
/// (a mail counts once however many bounces it gets), on the event's transaction.
pub async fn topic_outcome_add(
    run: &mut impl SqlRun,
    job_id: &str,
    event_type: &str,
    source: &str,
    id: &str,
) -> Result<()> {
    let (bounced, complained) = match event_type {
        mail_event::BOUNCED => (1_i64, 0_i64),
        mail_event::COMPLAINED => (0, 1),
        _ => return Ok(()),
    };
    let sql = format!(
        "INSERT INTO topic_counts (start, kind, topic, bounced, complained)
         SELECT {}, j.kind, j.topic, $2, $3 FROM jobs j
         WHERE j.id = $1 AND j.state = 'succeeded' AND j.topic IS NOT NULL
           AND j.finished_at IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM inbound_events e
                           WHERE e.job_id = $1 AND e.type = $4
                             AND NOT (e.source = $5 AND e.id = $6))
         ON CONFLICT (start, kind, topic) DO UPDATE
         SET bounced = topic_counts.bounced + excluded.bounced,
             complained = topic_counts.complained + excluded.complained",
        quarter_sql(run.dialect(), "j.finished_at")
    );
    run.execute(
        "topic outcome add",
        &sql,
        binds![job_id, bounced, complained, event_type, source, id],
    )
    .await?;
    Ok(())
}

/// The quarters counted in `[since, until)` and their counts, read in one statement (one
/// snapshot): a quarter stored while it runs is in both or in neither.
pub async fn topic_count_list(run: &mut impl SqlRun, p: TopicCountList) -> Result<TopicCounts> {
    let rows = run
        .fetch(
            "topic count list",
            "SELECT t.start, c.kind, c.topic, c.succeeded, c.bounced, c.complained
             FROM topic_counts_taken t
             LEFT JOIN topic_counts c ON c.start = t.start
             WHERE t.start >= $1 AND t.start < $2
             ORDER BY t.start, c.kind, c.topic",
            binds![p.since, p.until],
            &|r| {
                let count = match r.opt_text("kind")? {
                    Some(kind) => Some(TopicCount {
                        kind,
                        topic: r.text("topic")?,
                        succeeded: r.int("succeeded")?,
                        bounced: r.int("bounced")?,
                        complained: r.int("complained")?,
                    }),
                    None => None,
                };
                Ok((r.ts("start")?, count))
            },
        )
        .await?;
    let mut out = TopicCounts::default();
    for (start, count) in rows {
        if out.taken.last() != Some(&start) {
            out.taken.push(start);
        }
        if let Some(c) = count {
            out.counts.push((start, c));
        }
    }
    Ok(out)
}

/// Delete the counts and marks of the quarters starting before `p.before`; how many quarters.
pub async fn topic_count_prune(run: &mut impl SqlRun, p: TopicCountPrune) -> Result<u64> {
    run.execute(
        "topic count prune",
        "DELETE FROM topic_counts WHERE start < $1",
        binds![p.before],
    )
    .await?;
    run.execute(
        "topic count prune taken",
        "DELETE FROM topic_counts_taken WHERE start < $1",
        binds![p.before],
    )
    .await
}
