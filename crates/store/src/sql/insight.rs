//! The monitoring reads and the SLO alert state ([`crate::InsightStore`]), written once over
//! [`SqlRun`]: each store's impl hands them its read pool and writer.

use super::{Bind, Dialect, SqlRun, rows};
use crate::binds;
use crate::{
    Backlog, DeadScheduledRun, FinishedBucket, JobBacklog, JobCount, JobCountDecided,
    JobCountFinished, JobCountGroup, JobDeadScheduled, JobFinishedSeries, JobStateGroup,
    MonitorPassRecord, Result, ScheduleFireTimes, SloAlert, SloAlertAck, SloAlertPut,
};
use chrono::{DateTime, Utc};

/// Jobs by state.
pub async fn job_count_by_state(run: &mut impl SqlRun) -> Result<Vec<(String, i64)>> {
    run.fetch(
        "job count",
        "SELECT state, COUNT(*) AS n FROM jobs GROUP BY state ORDER BY state",
        vec![],
        &|r| Ok((r.text("state")?, r.int("n")?)),
    )
    .await
}

/// Jobs by state and kind in one group of states. The queue's states are counted one state
/// at a time, so that each read is a scan of the partial index of its state (`jobs_due`,
/// `jobs_lease`) and costs what the queue holds, not what the table retains; the retained
/// states are what is left.
pub async fn job_count_group(run: &mut impl SqlRun, p: JobCountGroup) -> Result<Vec<JobCount>> {
    let sql = match p.group {
        JobStateGroup::Queued => {
            "SELECT state, kind, n FROM (
                 SELECT 'available' AS state, kind, COUNT(*) AS n FROM jobs
                 WHERE state = 'available' GROUP BY kind
                 UNION ALL
                 SELECT 'running' AS state, kind, COUNT(*) AS n FROM jobs
                 WHERE state = 'running' GROUP BY kind
             ) q ORDER BY state, kind"
        }
        JobStateGroup::Retained => {
            "SELECT state, kind, COUNT(*) AS n FROM jobs
             WHERE state NOT IN ('available', 'running')
             GROUP BY state, kind ORDER BY state, kind"
        }
    };
    run.fetch("job count group", sql, vec![], &|r| rows::job_count(r))
        .await
}

/// The jobs of a concurrency key running now, as claims count them (`jobs_keyed_running`; a
/// crashed holder's counts until the rescuer hands its job out again).
const HELD: &str = "SELECT COUNT(*) FROM jobs h
     WHERE h.concurrency_key = j.concurrency_key AND h.state = 'running'";

/// Why an available job with a concurrency key does not run when it was never put back: its
/// key is at its max, and claims skip it (`Job::wait_reason` then reads `concurrency_key`).
/// Every other job is left as read.
pub async fn job_key_wait(run: &mut impl SqlRun, job: &mut kairos_core::Job) -> Result<()> {
    let Some(c) = job.concurrency.as_ref() else {
        return Ok(());
    };
    if job.state != kairos_core::JobState::Available
        || job.wait_reason.is_some()
        || !c.is_enforceable()
    {
        return Ok(());
    }
    let full = run
        .fetch_optional(
            "job key wait",
            &format!("SELECT ({HELD}) >= j.concurrency_max AS full FROM jobs j WHERE j.id = $1"),
            vec![Bind::Text(Some(job.id.clone()))],
            &|r| r.boolean("full"),
        )
        .await?;
    if full == Some(true) {
        job.wait_reason = Some(crate::concurrency::WAIT_CONCURRENCY_KEY.to_string());
    }
    Ok(())
}

/// Jobs waiting, per reason: those put back (`jobs_waiting` is a partial index of them), and
/// for `concurrency_key` also the available jobs of a key at its max that claims skip without
/// writing them (`jobs_keyed_due`). The running jobs are counted once per key and max, not
/// once per waiting job: a metrics scrape over a backlog of 100,000 keyed jobs made 100,000
/// counts.
pub async fn job_waiting(run: &mut impl SqlRun) -> Result<Vec<crate::concurrency::JobWaiting>> {
    let waiting = run
        .fetch(
            "job waiting",
            &format!(
                "SELECT wait_reason, COUNT(*) AS n FROM jobs
                 WHERE wait_reason IS NOT NULL AND state = 'available' GROUP BY wait_reason
                 UNION ALL
                 SELECT '{key}', CAST(COALESCE(SUM(j.n), 0) AS BIGINT) FROM (
                     SELECT concurrency_key, concurrency_max, COUNT(*) AS n FROM jobs
                     WHERE state = 'available' AND concurrency_key IS NOT NULL
                       AND wait_reason IS NULL
                     GROUP BY concurrency_key, concurrency_max) j
                 WHERE ({HELD}) >= j.concurrency_max",
                key = crate::concurrency::WAIT_CONCURRENCY_KEY
            ),
            vec![],
            &|r| Ok((r.text("wait_reason")?, r.int("n")?)),
        )
        .await?;
    let totals = run
        .fetch(
            "job waits",
            "SELECT reason, waits, wait_ms FROM job_waits",
            vec![],
            &|r| Ok((r.text("reason")?, r.int("waits")?, r.int("wait_ms")?)),
        )
        .await?;
    Ok(crate::concurrency::WAIT_REASONS
        .iter()
        .map(|reason| {
            let (waits_total, wait_ms_total) = totals
                .iter()
                .find(|t| t.0 == *reason)
                .map_or((0, 0), |t| (t.1, t.2));
            crate::concurrency::JobWaiting {
                reason: reason.to_string(),
                waiting: waiting.iter().filter(|w| w.0 == *reason).map(|w| w.1).sum(),
                waits_total,
                wait_ms_total,
            }
        })
        .collect())
}

/// The due, stuck and lease-expired jobs.
pub async fn job_backlog(run: &mut impl SqlRun, p: JobBacklog) -> Result<Backlog> {
    // Both halves read partial indexes: jobs_due (available, run_at) and jobs_lease
    // (running, lease_expires_at).
    run.fetch_one(
        "job backlog",
        "SELECT
            (SELECT COUNT(*) FROM jobs WHERE state = 'available' AND run_at <= $1) AS due,
            (SELECT MIN(run_at) FROM jobs WHERE state = 'available' AND run_at <= $1) AS oldest,
            (SELECT COUNT(*) FROM jobs WHERE state = 'available' AND run_at <= $2) AS stuck,
            (SELECT COUNT(*) FROM jobs WHERE state = 'running' AND lease_expires_at <= $3) AS expired",
        binds![p.now, p.stuck_before.min(p.now), p.lease_expired_before],
        &|r| {
            Ok(Backlog {
                due: r.opt_int("due")?.unwrap_or(0),
                oldest_due_at: r.opt_ts("oldest")?,
                stuck: r.opt_int("stuck")?.unwrap_or(0),
                lease_expired: r.opt_int("expired")?.unwrap_or(0),
            })
        },
    )
    .await
}

/// Jobs finished in a window, by state and kind.
pub async fn job_count_finished(
    run: &mut impl SqlRun,
    p: JobCountFinished,
) -> Result<Vec<JobCount>> {
    run.fetch(
        "job count finished",
        "SELECT state, kind, COUNT(*) AS n FROM jobs
         WHERE finished_at >= $1 AND finished_at < $2
         GROUP BY state, kind ORDER BY state, kind",
        binds![p.since, p.until],
        &|r| rows::job_count(r),
    )
    .await
}

/// Succeeded and dead jobs per bucket (start in epoch milliseconds, computed in SQL so one
/// query over the `jobs_finished` index answers a day of minutes).
pub async fn job_finished_series(
    run: &mut impl SqlRun,
    p: JobFinishedSeries,
) -> Result<Vec<FinishedBucket>> {
    let bucket_ms = p.bucket_secs.max(1) * 1000;
    let start = match run.dialect() {
        Dialect::Sqlite => "(finished_at / $3) * $3",
        Dialect::Postgres => {
            "(floor(extract(epoch FROM finished_at) * 1000 / $3::bigint)::bigint * $3::bigint)"
        }
    };
    let sql = format!(
        "SELECT {start} AS b, state, COUNT(*) AS n FROM jobs
         WHERE finished_at >= $1 AND finished_at < $2 AND state IN ('succeeded', 'dead')
         GROUP BY b, state ORDER BY b, state"
    );
    run.fetch(
        "job finished series",
        &sql,
        binds![p.since, p.until, bucket_ms],
        &|r| {
            let ms = r.int("b")?;
            Ok(FinishedBucket {
                start: DateTime::from_timestamp_millis(ms).unwrap_or_default(),
                state: r.text("state")?,
                count: r.int("n")?,
            })
        },
    )
    .await
}

/// The schedules with dead jobs in a window, each with its latest one.
pub async fn job_dead_scheduled(
    run: &mut impl SqlRun,
    p: JobDeadScheduled,
) -> Result<Vec<DeadScheduledRun>> {
    // The inner scan reads the partial index jobs_dead_scheduled (finished_at of dead
    // jobs of schedules): its size is the dead letters, not the jobs.
    run.fetch(
        "job dead scheduled",
        "SELECT d.schedule_id, s.name AS schedule_name, d.n, d.id, d.kind, d.channel,
                d.period_key, d.last_error, d.finished_at
         FROM (
            SELECT schedule_id, id, kind, channel, period_key, last_error, finished_at,
                   COUNT(*) OVER (PARTITION BY schedule_id) AS n,
                   ROW_NUMBER() OVER (PARTITION BY schedule_id
                                      ORDER BY finished_at DESC, id DESC) AS rn
            FROM jobs
            WHERE state = 'dead' AND schedule_id IS NOT NULL
              AND finished_at >= $1 AND finished_at < $2
         ) d
         LEFT JOIN schedules s ON s.id = d.schedule_id
         WHERE d.rn = 1
         ORDER BY d.finished_at DESC, d.schedule_id
         LIMIT $3",
        binds![p.since, p.until, p.limit.max(0)],
        &|r| rows::dead_scheduled_run(r),
    )
    .await
}

/// Jobs decided in a window, by schedule (or kind and topic for jobs without one), state and
/// skip reason: a range of `jobs_finished`, as the failure rate reads it.
pub async fn job_count_decided(
    run: &mut impl SqlRun,
    p: JobCountDecided,
) -> Result<Vec<crate::DecidedGroup>> {
    run.fetch(
        "job count decided",
        "SELECT schedule_id, CASE WHEN schedule_id IS NULL THEN kind END AS kind,
                CASE WHEN schedule_id IS NULL THEN topic END AS topic, state,
                CASE WHEN state = 'skipped' THEN reason END AS reason, COUNT(*) AS n
         FROM jobs
         WHERE finished_at >= $1 AND finished_at < $2
           AND state IN ('succeeded', 'skipped', 'dead')
           AND (schedule_id IS NOT NULL OR topic IS NOT NULL)
         GROUP BY schedule_id, CASE WHEN schedule_id IS NULL THEN kind END,
                  CASE WHEN schedule_id IS NULL THEN topic END, state,
                  CASE WHEN state = 'skipped' THEN reason END
         ORDER BY 1, 2, 3, 4, 5",
        binds![p.since, p.until],
        &|r| rows::decided_group(r),
    )
    .await
}

/// The instants a schedule fired at in a window.
pub async fn schedule_fire_times(
    run: &mut impl SqlRun,
    p: ScheduleFireTimes,
) -> Result<Vec<DateTime<Utc>>> {
    run.fetch(
        "schedule fire times",
        // A firing recorded for audience expansion counts as materialized even before (or
        // without: no subscriber) its jobs exist.
        "SELECT fire_at FROM jobs
         WHERE schedule_id = $1 AND fire_at >= $2 AND fire_at <= $3
         UNION
         SELECT fire_at FROM expansions
         WHERE schedule_id = $1 AND fire_at >= $2 AND fire_at <= $3
         ORDER BY 1",
        binds![p.schedule_id, p.since, p.until],
        &|r| r.ts("fire_at"),
    )
    .await
}

/// The columns of an SLO alert row.
const SLO_ALERT_COLUMNS: &str =
    "key, check_name, active, since, message, seq, notified_seq, updated_at, acked_at";

/// Every SLO alert.
pub async fn slo_alert_list(run: &mut impl SqlRun) -> Result<Vec<SloAlert>> {
    run.fetch(
        "slo alert list",
        &format!("SELECT {SLO_ALERT_COLUMNS} FROM slo_alerts ORDER BY key"),
        vec![],
        &|r| rows::slo_alert(r),
    )
    .await
}

/// Store an SLO alert.
pub async fn slo_alert_put(run: &mut impl SqlRun, p: SloAlertPut) -> Result<()> {
    let a = p.alert;
    run.execute(
        "slo alert put",
        "INSERT INTO slo_alerts (key, check_name, active, since, message, seq, notified_seq,
                                 updated_at, acked_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         ON CONFLICT (key) DO UPDATE SET check_name = excluded.check_name,
            active = excluded.active, since = excluded.since, message = excluded.message,
            seq = excluded.seq, notified_seq = excluded.notified_seq,
            updated_at = excluded.updated_at, acked_at = excluded.acked_at",
        binds![
            a.key,
            a.check,
            a.active,
            a.since,
            a.message,
            a.seq,
            a.notified_seq,
            a.updated_at,
            a.acked_at
        ],
    )
    .await?;
    Ok(())
}

/// Acknowledge an SLO alert: one conditional update, so that an alert the monitor cleared in
/// the meantime is not turned into a second recovery.
pub async fn slo_alert_ack(run: &mut impl SqlRun, p: SloAlertAck) -> Result<Option<SloAlert>> {
    run.execute(
        "slo alert ack",
        "UPDATE slo_alerts SET active = $2, since = $3, acked_at = $3, updated_at = $3,
                seq = seq + 1, message = $4
         WHERE key = $1 AND active = $5",
        binds![p.key.clone(), false, p.at, p.message, true],
    )
    .await?;
    run.fetch_optional(
        "slo alert get",
        &format!("SELECT {SLO_ALERT_COLUMNS} FROM slo_alerts WHERE key = $1"),
        binds![p.key],
        &|r| rows::slo_alert(r),
    )
    .await
}

/// How many times [`crate::InsightStore::quarter_count_record`] reads a quarter whose jobs are
/// being retried while it counts them before it leaves the quarter to the sampler's next run.
const RECOUNTS: usize = 3;

/// The one row of `monitor_passes` the background monitor writes.
const MONITOR_SERVICE: &str = "monitor";

/// Record a completed monitor pass.
pub async fn monitor_pass_record(run: &mut impl SqlRun, p: MonitorPassRecord) -> Result<()> {
    run.execute(
        "monitor pass record",
        "INSERT INTO monitor_passes (service, last_pass_at, report) VALUES ($1, $2, $3)
         ON CONFLICT (service) DO UPDATE
         SET last_pass_at = excluded.last_pass_at, report = excluded.report",
        binds![MONITOR_SERVICE, p.at, p.report],
    )
    .await?;
    Ok(())
}

/// The last completed monitor pass.
pub async fn monitor_pass_last(run: &mut impl SqlRun) -> Result<Option<DateTime<Utc>>> {
    run.fetch_optional(
        "monitor pass last",
        "SELECT last_pass_at FROM monitor_passes WHERE service = $1",
        binds![MONITOR_SERVICE],
        &|r| r.ts("last_pass_at"),
    )
    .await
}

/// The last completed monitor pass, with what it found.
pub async fn monitor_pass_get(run: &mut impl SqlRun) -> Result<Option<crate::MonitorPass>> {
    run.fetch_optional(
        "monitor pass get",
        "SELECT last_pass_at, report FROM monitor_passes WHERE service = $1",
        binds![MONITOR_SERVICE],
        &|r| {
            Ok(crate::MonitorPass {
                at: r.ts("last_pass_at")?,
                report: r.opt_text("report")?,
            })
        },
    )
    .await
}

#[async_trait::async_trait]
impl<D: super::SqlDb> crate::InsightStore for D {
    async fn job_count_by_state(&self) -> Result<Vec<(String, i64)>> {
        job_count_by_state(&mut self.reader()).await
    }

    async fn job_count_group(&self, p: JobCountGroup) -> Result<Vec<JobCount>> {
        job_count_group(&mut self.reader(), p).await
    }

    async fn job_backlog(&self, p: JobBacklog) -> Result<Backlog> {
        job_backlog(&mut self.reader(), p).await
    }

    async fn job_waiting(&self) -> Result<Vec<crate::concurrency::JobWaiting>> {
        job_waiting(&mut self.reader()).await
    }

    async fn job_count_finished(&self, p: JobCountFinished) -> Result<Vec<JobCount>> {
        job_count_finished(&mut self.reader(), p).await
    }

    async fn job_finished_series(&self, p: JobFinishedSeries) -> Result<Vec<FinishedBucket>> {
        job_finished_series(&mut self.reader(), p).await
    }

    async fn job_dead_scheduled(&self, p: JobDeadScheduled) -> Result<Vec<DeadScheduledRun>> {
        job_dead_scheduled(&mut self.reader(), p).await
    }

    async fn job_count_decided(&self, p: JobCountDecided) -> Result<Vec<crate::DecidedGroup>> {
        job_count_decided(&mut self.reader(), p).await
    }

    async fn schedule_fire_times(&self, p: ScheduleFireTimes) -> Result<Vec<DateTime<Utc>>> {
        schedule_fire_times(&mut self.reader(), p).await
    }

    async fn slo_alert_list(&self) -> Result<Vec<SloAlert>> {
        slo_alert_list(&mut self.reader()).await
    }

    async fn slo_alert_put(&self, p: SloAlertPut) -> Result<()> {
        slo_alert_put(&mut self.writer(), p).await
    }

    async fn slo_alert_ack(&self, p: SloAlertAck) -> Result<Option<SloAlert>> {
        slo_alert_ack(&mut self.writer(), p).await
    }

    async fn monitor_pass_record(&self, p: MonitorPassRecord) -> Result<()> {
        monitor_pass_record(&mut self.writer(), p).await
    }

    async fn monitor_pass_last(&self) -> Result<Option<DateTime<Utc>>> {
        monitor_pass_last(&mut self.reader()).await
    }

    async fn monitor_pass_get(&self) -> Result<Option<crate::MonitorPass>> {
        monitor_pass_get(&mut self.reader()).await
    }

    async fn queue_sample_record(
        &self,
        p: crate::QueueSampleRecord,
    ) -> Result<Option<crate::QueueSample>> {
        super::samples::queue_sample_record(&mut self.reader(), &mut self.writer(), p).await
    }

    async fn queue_sample_list(
        &self,
        p: crate::QueueSampleList,
    ) -> Result<Vec<crate::QueueSample>> {
        super::samples::queue_sample_list(&mut self.reader(), p).await
    }

    async fn queue_sample_prune(&self, p: crate::QueueSamplePrune) -> Result<u64> {
        super::samples::queue_sample_prune(&mut self.writer(), p).await
    }

    async fn quarter_count_record(&self, p: crate::QuarterCountRecord) -> Result<bool> {
        use super::quarter_counts::{self as qc, QuarterStored};
        let start = crate::quarter_of(p.start);
        for _ in 0..RECOUNTS {
            if qc::quarter_counted(&mut self.reader(), start).await? {
                return Ok(false);
            }
            let retried = qc::quarter_retried(&mut self.reader(), start).await?;
            let tally = qc::quarter_tally(&mut self.reader(), start).await?;
            let mut tx = self.begin("quarter count record").await?;
            let stored =
                qc::quarter_count_store(&mut Self::in_tx(&mut tx), start, p.now, retried, &tally)
                    .await?;
            match stored {
                QuarterStored::Counted => {
                    self.commit(tx, "quarter count record").await?;
                    return Ok(true);
                }
                QuarterStored::Taken => return Ok(false),
                // Dropped, the transaction rolls back: read the quarter again.
                QuarterStored::Retried => drop(tx),
            }
        }
        Ok(false)
    }

    async fn quarter_count_list(&self, p: crate::QuarterCountList) -> Result<crate::QuarterCounts> {
        super::quarter_counts::quarter_count_list(&mut self.reader(), p).await
    }

    async fn quarter_count_sum(&self, p: crate::QuarterCountSum) -> Result<crate::QuarterSums> {
        super::quarter_counts::quarter_count_sum(&mut self.reader(), p).await
    }

    async fn topic_count_range(&self, p: crate::TopicCountRange) -> Result<Vec<crate::TopicCount>> {
        super::quarter_counts::topic_count_range(&mut self.reader(), p).await
    }

    async fn quarter_count_prune(&self, p: crate::QuarterCountPrune) -> Result<u64> {
        let mut tx = self.begin("topic count prune").await?;
        let n = super::quarter_counts::quarter_count_prune(&mut Self::in_tx(&mut tx), p).await?;
        self.commit(tx, "topic count prune").await?;
        Ok(n)
    }
}
