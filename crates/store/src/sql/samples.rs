//! The queue's per-minute samples ([`crate::InsightStore::queue_sample_record`] and its
//! list and prune), written once over [`SqlRun`].
//!
//! A sample reads only what the hot path indexes: the due and running counts come from the
//! partial indexes of `available` and `running` jobs (`jobs_due`, `jobs_lease`), and the jobs
//! started in the minute from the jobs that finished since it began (`jobs_finished`) and
//! those still running, and the minute's succeeded and dead jobs from one minute of
//! `jobs_finished` — never a scan of the finished history.

use super::{Dialect, SqlRun};
use crate::binds;
use crate::{QueueSample, QueueSampleList, QueueSamplePrune, QueueSampleRecord, Result, minute_of};
use chrono::Duration;

/// The columns `sample` reads.
const COLS: &str =
    "minute, due, available, running, started, lateness_p99_ms, recorded_at, succeeded, dead";

fn sample(r: &dyn super::RowRead) -> Result<QueueSample> {
    Ok(QueueSample {
        minute: r.ts("minute")?,
        due: r.int("due")?,
        available: r.int("available")?,
        running: r.int("running")?,
        started: r.int("started")?,
        lateness_p99_ms: r.opt_int("lateness_p99_ms")?,
        recorded_at: r.ts("recorded_at")?,
        succeeded: r.opt_int("succeeded")?,
        dead: r.opt_int("dead")?,
    })
}

/// The lateness (milliseconds from `run_at` to the attempt's start) of the jobs whose attempt
/// started in `[$1, $2)`: those finished since `$1` and those running. A job sent back to wait
/// for a retry is not among them (its next attempt counts in its own minute).
fn started_in_minute(d: Dialect) -> String {
    let late = match d {
        Dialect::Sqlite => "attempted_at - run_at",
        Dialect::Postgres => "CAST(EXTRACT(EPOCH FROM (attempted_at - run_at)) * 1000 AS BIGINT)",
    };
    format!(
        "SELECT {late} AS late FROM jobs
         WHERE finished_at >= $1 AND attempted_at >= $1 AND attempted_at < $2
         UNION ALL
         SELECT {late} AS late FROM jobs
         WHERE state = 'running' AND lease_expires_at > $1
           AND attempted_at >= $1 AND attempted_at < $2"
    )
}

/// Measure the queue at `p.now` and store it as `p.minute`'s sample, unless there is one.
pub async fn queue_sample_record(
    read: &mut impl SqlRun,
    write: &mut impl SqlRun,
    p: QueueSampleRecord,
) -> Result<Option<QueueSample>> {
    let minute = minute_of(p.minute);
    let exists = read
        .fetch_optional(
            "queue sample exists",
            "SELECT minute FROM queue_samples WHERE minute = $1",
            binds![minute],
            &|r| r.ts("minute"),
        )
        .await?;
    if exists.is_some() {
        return Ok(None);
    }
    let (due, available, running) = read
        .fetch_one(
            "queue sample counts",
            "SELECT
                (SELECT COUNT(*) FROM jobs WHERE state = 'available' AND run_at <= $1) AS due,
                (SELECT COUNT(*) FROM jobs WHERE state = 'available') AS available,
                (SELECT COUNT(*) FROM jobs WHERE state = 'running') AS running",
            binds![p.now],
            &|r| Ok((r.int("due")?, r.int("available")?, r.int("running")?)),
        )
        .await?;
    let started_sql = started_in_minute(read.dialect());
    let end = minute + Duration::minutes(1);
    let started = read
        .fetch_one(
            "queue sample started",
            &format!("SELECT COUNT(*) AS n FROM ({started_sql}) l WHERE late >= 0"),
            binds![minute, end],
            &|r| r.int("n"),
        )
        .await?;
    let lateness_p99_ms = if started == 0 {
        None
    } else {
        // Nearest rank: the ceil(0.99 n)-th smallest, at offset ceil(0.99 n) - 1.
        let offset = (started * 99 + 99) / 100 - 1;
        read.fetch_optional(
            "queue sample lateness",
            &format!(
                "SELECT late FROM ({started_sql}) l WHERE late >= 0
                 ORDER BY late LIMIT 1 OFFSET $3"
            ),
            binds![minute, end, offset],
            &|r| r.int("late"),
        )
        .await?
    };
    // The minute's finished jobs: a range of `jobs_finished`, one minute long.
    let (succeeded, dead) = read
        .fetch_one(
            "queue sample finished",
            "SELECT
                (SELECT COUNT(*) FROM jobs WHERE finished_at >= $1 AND finished_at < $2
                   AND state = 'succeeded') AS succeeded,
                (SELECT COUNT(*) FROM jobs WHERE finished_at >= $1 AND finished_at < $2
                   AND state = 'dead') AS dead",
            binds![minute, end],
            &|r| Ok((r.int("succeeded")?, r.int("dead")?)),
        )
        .await?;
    let s = QueueSample {
        minute,
        due,
        available,
        running,
        started,
        lateness_p99_ms,
        recorded_at: p.now,
        succeeded: Some(succeeded),
        dead: Some(dead),
    };
    let n = write
        .execute(
            "queue sample record",
            "INSERT INTO queue_samples (minute, due, available, running, started,
                                        lateness_p99_ms, recorded_at, succeeded, dead)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (minute) DO NOTHING",
            binds![
                s.minute,
                s.due,
                s.available,
                s.running,
                s.started,
                s.lateness_p99_ms,
                s.recorded_at,
                s.succeeded,
                s.dead
            ],
        )
        .await?;
    Ok((n > 0).then_some(s))
}

/// The samples of the minutes in `[since, until)`, oldest first.
pub async fn queue_sample_list(
    run: &mut impl SqlRun,
    p: QueueSampleList,
) -> Result<Vec<QueueSample>> {
    run.fetch(
        "queue sample list",
        &format!(
            "SELECT {COLS} FROM queue_samples WHERE minute >= $1 AND minute < $2 ORDER BY minute"
        ),
        binds![p.since, p.until],
        &|r| sample(r),
    )
    .await
}

/// Delete the samples of the minutes before `p.before`.
pub async fn queue_sample_prune(run: &mut impl SqlRun, p: QueueSamplePrune) -> Result<u64> {
    run.execute(
        "queue sample prune",
        "DELETE FROM queue_samples WHERE minute < $1",
        binds![p.before],
    )
    .await
}
