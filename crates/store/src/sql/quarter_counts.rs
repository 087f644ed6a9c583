//! The quarter-hour counts of [`crate::quarters`] ([`crate::InsightStore::quarter_count_record`]
//! and its list and prune, `topic_count_range`; the bounces and complaints added by
//! `inbound_event_record`; the retried jobs taken out by `job_retry`), written once over
//! [`SqlRun`] (migrations 0038, 0039 and 0040).
//!
//! A quarter's succeeded jobs per topic, its decided jobs and its finished jobs per kind
//! (migration 0039) are counted once, from a quarter of `jobs_finished`, and marked counted in
//! `counted_quarters` in the same transaction: a quarter is counted whole or not at all, and
//! one marked without a row had no such jobs. Its bounced and complained mails are added one by
//! one as each mail's first event of that type is recorded, in the event's transaction, so
//! they are current whether the quarter was counted yet or not; a finished job sent back to
//! the queue is taken out in the retry's transaction. The jobs are read outside the count's
//! transaction, so a retry marks its quarters (`quarter_retries`, 0040) and a count that finds
//! the mark changed since its read discards the read ([`QuarterStored::Retried`]).

use super::{Dialect, SqlRun, rows};
use crate::binds;
use crate::{
    DecidedGroup, JobCount, QUARTER, QuarterCountList, QuarterCountOf, QuarterCountPrune,
    QuarterCountSum, QuarterCounts, QuarterSums, Result, TopicCount, TopicCountRange, mail_event,
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
        "SELECT j.kind, j.topic, COUNT(*) AS succeeded, {} AS bounced, {} AS complained
         FROM jobs j
         WHERE j.finished_at >= $1 AND j.finished_at < $2
           AND j.state = 'succeeded' AND j.topic IS NOT NULL
         GROUP BY j.kind, j.topic ORDER BY j.kind, j.topic",
        with_event(mail_event::BOUNCED),
        with_event(mail_event::COMPLAINED),
    );
    run.fetch("topic count range", &sql, binds![p.since, p.until], &|r| {
        rows::topic_count(r)
    })
    .await
}

/// Whether the quarter starting at `start` is marked counted.
pub async fn quarter_counted(run: &mut impl SqlRun, start: DateTime<Utc>) -> Result<bool> {
    Ok(run
        .fetch_optional(
            "topic count taken",
            "SELECT start FROM counted_quarters WHERE start = $1",
            binds![start],
            &|r| r.ts("start"),
        )
        .await?
        .is_some())
}

/// What one quarter holds, counted from the job table before it is stored.
#[derive(Debug, Default)]
pub struct QuarterTally {
    /// Succeeded jobs with a topic, per kind and topic.
    pub topics: Vec<TopicCount>,
    /// Decided jobs per schedule or topic, state and reason.
    pub decided: Vec<DecidedGroup>,
    /// Finished jobs per kind and state.
    pub kinds: Vec<JobCount>,
}

/// How many times finished jobs of the quarter starting at `start` were sent back to the queue
/// (migration 0040; 0 for none): read before its jobs are, and given to
/// [`quarter_count_store`].
pub async fn quarter_retried(run: &mut impl SqlRun, start: DateTime<Utc>) -> Result<i64> {
    Ok(run
        .fetch_optional(
            "quarter retries read",
            "SELECT n FROM quarter_retries WHERE start = $1",
            binds![start],
            &|r| r.int("n"),
        )
        .await?
        .unwrap_or(0))
}

/// One group of a quarter's finished jobs: what [`quarter_tally`] reads before it folds the
/// groups into the three counts.
struct Finished {
    kind: String,
    topic: Option<String>,
    schedule_id: Option<String>,
    state: String,
    /// The skip reason (skipped jobs only).
    reason: Option<String>,
    n: i64,
}

/// Read what the quarter starting at `start` holds from the job table, outside the write
/// transaction (so SQLite's writer is not held while it runs): one read of a quarter of
/// `jobs_finished`, grouped by every column one of the three counts keys on, and folded into
/// them here. (Three reads, one per count, took twice the server time: about 1.2 s against
/// 0.6 s for 1.8 million jobs on PostgreSQL.) The groups are as many as the quarter's
/// distinct kinds, topics, schedules, states and skip reasons together, not its jobs.
pub async fn quarter_tally(read: &mut impl SqlRun, start: DateTime<Utc>) -> Result<QuarterTally> {
    let groups = read
        .fetch(
            "quarter tally",
            "SELECT kind, topic, schedule_id, state,
                    CASE WHEN state = 'skipped' THEN reason END AS reason, COUNT(*) AS n
             FROM jobs
             WHERE finished_at >= $1 AND finished_at < $2
             GROUP BY kind, topic, schedule_id, state, CASE WHEN state = 'skipped' THEN reason END",
            binds![start, start + QUARTER],
            &|r| {
                Ok(Finished {
                    kind: r.text("kind")?,
                    topic: r.opt_text("topic")?,
                    schedule_id: r.opt_text("schedule_id")?,
                    state: r.text("state")?,
                    reason: r.opt_text("reason")?,
                    n: r.int("n")?,
                })
            },
        )
        .await?;
    Ok(fold(groups))
}

/// The three counts of a quarter from its groups, keyed as `topic_count_range`,
/// `job_count_decided` and `job_count_finished` key them.
fn fold(groups: Vec<Finished>) -> QuarterTally {
    use std::collections::BTreeMap;
    let mut topics: BTreeMap<(String, String), i64> = BTreeMap::new();
    type DecidedKey = (
        Option<String>,
        Option<String>,
        Option<String>,
        String,
        Option<String>,
    );
    let mut decided: BTreeMap<DecidedKey, i64> = BTreeMap::new();
    let mut kinds: BTreeMap<(String, String), i64> = BTreeMap::new();
    for g in groups {
        *kinds.entry((g.state.clone(), g.kind.clone())).or_default() += g.n;
        if g.state == "succeeded"
            && let Some(topic) = &g.topic
        {
            *topics.entry((g.kind.clone(), topic.clone())).or_default() += g.n;
        }
        let is_decided = matches!(g.state.as_str(), "succeeded" | "skipped" | "dead");
        if is_decided && (g.schedule_id.is_some() || g.topic.is_some()) {
            // A schedule's jobs count under the schedule alone; others under kind and topic.
            // No key part is empty, as `rows::decided_group` reads them.
            let key = |v: Option<String>| v.filter(|v| !v.is_empty());
            let (kind, topic) = match g.schedule_id {
                Some(_) => (None, None),
                None => (Some(g.kind), g.topic),
            };
            *decided
                .entry((
                    key(g.schedule_id),
                    key(kind),
                    key(topic),
                    g.state,
                    key(g.reason),
                ))
                .or_default() += g.n;
        }
    }
    QuarterTally {
        topics: topics
            .into_iter()
            .map(|((kind, topic), succeeded)| TopicCount {
                kind,
                topic,
                succeeded,
                bounced: 0,
                complained: 0,
            })
            .collect(),
        decided: decided
            .into_iter()
            .map(
                |((schedule_id, kind, topic, state, reason), count)| DecidedGroup {
                    schedule_id,
                    kind,
                    topic,
                    state,
                    reason,
                    count,
                },
            )
            .collect(),
        kinds: kinds
            .into_iter()
            .map(|((state, kind), count)| JobCount { state, kind, count })
            .collect(),
    }
}

/// What [`quarter_count_store`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuarterStored {
    /// The counts are stored and the quarter marked counted.
    Counted,
    /// Another writer marked the quarter first; its counts are kept.
    Taken,
    /// A finished job of the quarter was sent back to the queue after the tally's
    /// [`quarter_retried`] was read, so the tally may count a job that is no longer there:
    /// roll the transaction back and read the quarter again.
    Retried,
}

/// Store `tally` as the quarter `start`'s counts and mark it counted at `now`, on `run` (a
/// write transaction's), unless another writer marked it first or a job of it was retried
/// since `retried` ([`quarter_retried`], read before the tally) was read. A row the events
/// created first (a bounce before the count) keeps its outcomes.
pub async fn quarter_count_store(
    run: &mut impl SqlRun,
    start: DateTime<Utc>,
    now: DateTime<Utc>,
    retried: i64,
    tally: &QuarterTally,
) -> Result<QuarterStored> {
    let marked = run
        .execute(
            "topic count mark",
            "INSERT INTO counted_quarters (start, counted_at) VALUES ($1, $2)
             ON CONFLICT (start) DO NOTHING",
            binds![start, now],
        )
        .await?;
    if marked == 0 {
        return Ok(QuarterStored::Taken);
    }
    // A retry bumps its quarters' row before it takes its jobs out of their counts, in its
    // transaction. Writing the row here takes its lock: on PostgreSQL a retry in flight
    // commits first (and its bump is read back here) or waits for this transaction (and then
    // finds the counts to take from). SQLite has one writer at a time already.
    let now_retried = run
        .fetch_one(
            "quarter retries check",
            "INSERT INTO quarter_retries (start, n) VALUES ($1, 0)
             ON CONFLICT (start) DO UPDATE SET n = quarter_retries.n RETURNING n",
            binds![start],
            &|r| r.int("n"),
        )
        .await?;
    if now_retried != retried {
        return Ok(QuarterStored::Retried);
    }
    for d in &tally.decided {
        let none = |v: &Option<String>| v.clone().unwrap_or_default();
        run.execute(
            "decided count store",
            "INSERT INTO decided_counts (start, schedule_id, kind, topic, state, reason, n)
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
            binds![
                start,
                none(&d.schedule_id),
                none(&d.kind),
                none(&d.topic),
                d.state.clone(),
                none(&d.reason),
                d.count
            ],
        )
        .await?;
    }
    for k in &tally.kinds {
        run.execute(
            "kind count store",
            "INSERT INTO kind_counts (start, kind, state, n) VALUES ($1, $2, $3, $4)
             ON CONFLICT DO NOTHING",
            binds![start, k.kind.clone(), k.state.clone(), k.count],
        )
        .await?;
    }
    for c in &tally.topics {
        run.execute(
            "topic count store",
            "INSERT INTO topic_counts (start, kind, topic, succeeded) VALUES ($1, $2, $3, $4)
             ON CONFLICT (start, kind, topic) DO UPDATE SET succeeded = excluded.succeeded",
            binds![start, c.kind.clone(), c.topic.clone(), c.succeeded],
        )
        .await?;
    }
    Ok(QuarterStored::Counted)
}

/// The quarter (its start) of the job column `col`, in SQL.
fn quarter_sql(d: Dialect, col: &str) -> String {
    let secs = QUARTER.num_seconds();
    match d {
        Dialect::Sqlite => format!("({col} / {ms}) * {ms}", ms = secs * 1000),
        Dialect::Postgres => {
            format!("to_timestamp(floor(extract(epoch FROM {col}) / {secs}) * {secs})")
        }
    }
}

/// Add the event `(source, id)` just recorded to its mail's quarter when it is a bounce or a
/// complaint about a job with a topic that succeeded, and the job's first event of that type
/// (a mail counts once however many bounces it gets, even two recorded at the same moment), on
/// the event's transaction.
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
    // Two events about one mail recorded at once must not both find no earlier one: on
    // PostgreSQL the second waits here for the first to commit, and its check below (a new
    // statement, a new snapshot) then sees it. SQLite has one writer at a time already.
    if run.dialect() == Dialect::Postgres {
        run.fetch_optional(
            "topic outcome lock",
            "SELECT id FROM jobs WHERE id = $1 FOR UPDATE",
            binds![job_id],
            &|r| r.text("id"),
        )
        .await?;
    }
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

/// Take the finished jobs that `ids` (a condition on `jobs`, `$1` its one parameter, `ids`
/// bound to it) selects out of their quarters' finished and decided counts, on the transaction
/// of the retry that sends them back to the queue: a job replayed is counted in the quarter it
/// finishes in next, not in both, and a rate falls as soon as its dead jobs are replayed, as
/// when the job table was read. A quarter not counted yet has no row to take from (its count
/// will not see the job). Only `dead`, `skipped` and `cancelled` jobs can be retried; a
/// succeeded mail's `topic_counts` are never taken from.
pub async fn quarter_counts_forget(
    run: &mut impl SqlRun,
    ids_sql: &str,
    ids: crate::sql::Bind,
) -> Result<()> {
    let finished = format!(
        "{ids_sql} AND state IN ('dead', 'skipped', 'cancelled') AND finished_at IS NOT NULL"
    );
    // Two retries of one job at once must not both take it: on PostgreSQL the second waits
    // here for the first to commit, and its statements below (new snapshots) find the job
    // back in the queue. SQLite has one writer at a time already.
    if run.dialect() == Dialect::Postgres {
        run.fetch(
            "quarter counts forget lock",
            &format!("SELECT id FROM jobs WHERE {finished} FOR UPDATE"),
            vec![ids.clone()],
            &|r| r.text("id"),
        )
        .await?;
    }
    let q = quarter_sql(run.dialect(), "finished_at");
    // First mark the quarters retried from (in order of start, so two bulk retries lock their
    // rows in one order): a count being stored for one of them now either sees the mark and
    // reads the quarter again, or holds the row until it commits and its counts are taken
    // from below ([`quarter_count_store`]).
    let marks = format!(
        "INSERT INTO quarter_retries (start, n)
         SELECT {q}, COUNT(*) FROM jobs WHERE {finished} GROUP BY {q} ORDER BY 1
         ON CONFLICT (start) DO UPDATE SET n = quarter_retries.n + excluded.n"
    );
    run.execute("quarter retries mark", &marks, vec![ids.clone()])
        .await?;
    let kinds = format!(
        "UPDATE kind_counts SET n = kind_counts.n - d.c
         FROM (SELECT {q} AS start, kind, state, COUNT(*) AS c FROM jobs WHERE {finished}
               GROUP BY {q}, kind, state) d
         WHERE kind_counts.start = d.start AND kind_counts.kind = d.kind
           AND kind_counts.state = d.state"
    );
    run.execute("kind counts forget", &kinds, vec![ids.clone()])
        .await?;
    // The key a quarter's decided groups are stored under (`job_count_decided`), with '' for
    // none.
    let key = "COALESCE(schedule_id, '') AS schedule_id,
               CASE WHEN schedule_id IS NULL THEN kind ELSE '' END AS kind,
               CASE WHEN schedule_id IS NULL THEN COALESCE(topic, '') ELSE '' END AS topic,
               state, CASE WHEN state = 'skipped' THEN COALESCE(reason, '') ELSE '' END AS reason";
    let decided = format!(
        "UPDATE decided_counts SET n = decided_counts.n - d.c
         FROM (SELECT start, schedule_id, kind, topic, state, reason, COUNT(*) AS c
               FROM (SELECT {q} AS start, {key} FROM jobs
                     WHERE {finished} AND state IN ('skipped', 'dead')
                       AND (schedule_id IS NOT NULL OR topic IS NOT NULL)) j
               GROUP BY start, schedule_id, kind, topic, state, reason) d
         WHERE decided_counts.start = d.start AND decided_counts.schedule_id = d.schedule_id
           AND decided_counts.kind = d.kind AND decided_counts.topic = d.topic
           AND decided_counts.state = d.state AND decided_counts.reason = d.reason"
    );
    run.execute("decided counts forget", &decided, vec![ids])
        .await?;
    Ok(())
}

/// The rows of a list joined to its marks (`None`: a quarter counted without a row): each
/// quarter's start once into `taken`, and the counts with their start.
fn split<T>(
    rows: Vec<(DateTime<Utc>, Option<T>)>,
    taken: &mut Vec<DateTime<Utc>>,
) -> Vec<(DateTime<Utc>, T)> {
    let mut out = Vec::new();
    for (start, count) in rows {
        if taken.last() != Some(&start) {
            taken.push(start);
        }
        out.extend(count.map(|c| (start, c)));
    }
    out
}

/// The quarters counted in `[since, until)` and one kind of their counts, read in one
/// statement (one snapshot): a quarter stored while it runs is in both or in neither.
pub async fn quarter_count_list(
    run: &mut impl SqlRun,
    p: QuarterCountList,
) -> Result<QuarterCounts> {
    let mut out = QuarterCounts::default();
    match p.of {
        QuarterCountOf::Marks => {
            out.taken = run
                .fetch(
                    "counted quarter list",
                    "SELECT start FROM counted_quarters WHERE start >= $1 AND start < $2
                     ORDER BY start",
                    binds![p.since, p.until],
                    &|r| r.ts("start"),
                )
                .await?;
        }
        QuarterCountOf::Topics => {
            let listed = run
                .fetch(
                    "topic count list",
                    "SELECT t.start, c.kind, c.topic, c.succeeded, c.bounced, c.complained
                     FROM counted_quarters t
                     LEFT JOIN topic_counts c ON c.start = t.start
                     WHERE t.start >= $1 AND t.start < $2
                     ORDER BY t.start, c.kind, c.topic",
                    binds![p.since, p.until],
                    &|r| {
                        let count = match r.opt_text("kind")? {
                            Some(_) => Some(rows::topic_count(r)?),
                            None => None,
                        };
                        Ok((r.ts("start")?, count))
                    },
                )
                .await?;
            out.topics = split(listed, &mut out.taken);
        }
        QuarterCountOf::Decided => {
            let listed = run
                .fetch(
                    "decided count list",
                    "SELECT t.start, d.schedule_id, d.kind, d.topic, d.state, d.reason, d.n
                     FROM counted_quarters t
                     LEFT JOIN decided_counts d ON d.start = t.start
                     WHERE t.start >= $1 AND t.start < $2
                     ORDER BY t.start",
                    binds![p.since, p.until],
                    &|r| {
                        let count = match r.opt_text("state")? {
                            Some(_) => Some(rows::decided_group(r)?),
                            None => None,
                        };
                        Ok((r.ts("start")?, count))
                    },
                )
                .await?;
            out.decided = split(listed, &mut out.taken);
        }
        QuarterCountOf::Kinds => {
            let listed = run
                .fetch(
                    "kind count list",
                    "SELECT t.start, k.kind, k.state, k.n
                     FROM counted_quarters t
                     LEFT JOIN kind_counts k ON k.start = t.start
                     WHERE t.start >= $1 AND t.start < $2
                     ORDER BY t.start, k.kind, k.state",
                    binds![p.since, p.until],
                    &|r| {
                        let count = match r.opt_text("kind")? {
                            Some(_) => Some(rows::job_count(r)?),
                            None => None,
                        };
                        Ok((r.ts("start")?, count))
                    },
                )
                .await?;
            out.kinds = split(listed, &mut out.taken);
        }
    }
    Ok(out)
}

/// The counts of one kind summed over the quarters starting in `[p.since, p.until)`, per key:
/// a range of each table's primary key, one row per key out.
pub async fn quarter_count_sum(run: &mut impl SqlRun, p: QuarterCountSum) -> Result<QuarterSums> {
    let mut out = QuarterSums::default();
    let range = binds![p.since, p.until];
    match p.of {
        QuarterCountOf::Marks => {}
        QuarterCountOf::Topics => {
            out.topics = run
                .fetch(
                    "topic count sum",
                    "SELECT kind, topic, CAST(SUM(succeeded) AS BIGINT) AS succeeded,
                            CAST(SUM(bounced) AS BIGINT) AS bounced,
                            CAST(SUM(complained) AS BIGINT) AS complained
                     FROM topic_counts WHERE start >= $1 AND start < $2
                     GROUP BY kind, topic ORDER BY kind, topic",
                    range,
                    &|r| rows::topic_count(r),
                )
                .await?;
        }
        QuarterCountOf::Decided => {
            out.decided = run
                .fetch(
                    "decided count sum",
                    "SELECT schedule_id, kind, topic, state, reason, CAST(SUM(n) AS BIGINT) AS n
                     FROM decided_counts WHERE start >= $1 AND start < $2
                     GROUP BY schedule_id, kind, topic, state, reason
                     ORDER BY schedule_id, kind, topic, state, reason",
                    range,
                    &|r| rows::decided_group(r),
                )
                .await?;
        }
        QuarterCountOf::Kinds => {
            out.kinds = run
                .fetch(
                    "kind count sum",
                    "SELECT kind, state, CAST(SUM(n) AS BIGINT) AS n
                     FROM kind_counts WHERE start >= $1 AND start < $2
                     GROUP BY kind, state ORDER BY kind, state",
                    range,
                    &|r| rows::job_count(r),
                )
                .await?;
        }
    }
    Ok(out)
}

/// Delete the counts and marks of the quarters starting before `p.before`; how many quarters.
pub async fn quarter_count_prune(run: &mut impl SqlRun, p: QuarterCountPrune) -> Result<u64> {
    for (what, sql) in [
        (
            "topic count prune",
            "DELETE FROM topic_counts WHERE start < $1",
        ),
        (
            "decided count prune",
            "DELETE FROM decided_counts WHERE start < $1",
        ),
        (
            "kind count prune",
            "DELETE FROM kind_counts WHERE start < $1",
        ),
        (
            "quarter retries prune",
            "DELETE FROM quarter_retries WHERE start < $1",
        ),
    ] {
        run.execute(what, sql, binds![p.before]).await?;
    }
    run.execute(
        "counted quarter prune",
        "DELETE FROM counted_quarters WHERE start < $1",
        binds![p.before],
    )
    .await
}
