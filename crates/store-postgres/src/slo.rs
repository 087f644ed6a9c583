//! Monitoring reads (metrics, SLO checks, readiness) and the SLO alert state, on PostgreSQL.
//! The same statements as SQLite's with `$n` parameters, timestamptz and boolean columns.

use crate::rows::Pg;
use crate::{PostgresStore, map_err};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use kairos_store::sql::rows;
use kairos_store::*;
use sqlx::Row;
use sqlx::postgres::PgRow;

fn counts(rs: &[PgRow], _what: &str) -> Result<Vec<JobCount>> {
    rs.iter().map(|r| rows::job_count(&Pg(r))).collect()
}

#[async_trait]
impl InsightStore for PostgresStore {
    async fn job_count_by_state(&self) -> Result<Vec<(String, i64)>> {
        let rows =
            sqlx::query("SELECT state, COUNT(*) AS n FROM jobs GROUP BY state ORDER BY state")
                .fetch_all(&self.pool)
                .await
                .map_err(|e| map_err("job count", e))?;
        rows.iter()
            .map(|r| {
                Ok((
                    r.try_get("state").map_err(|e| map_err("job count", e))?,
                    r.try_get("n").map_err(|e| map_err("job count", e))?,
                ))
            })
            .collect()
    }

    async fn job_count_by_state_kind(&self) -> Result<Vec<JobCount>> {
        let rows = sqlx::query(
            "SELECT state, kind, COUNT(*) AS n FROM jobs GROUP BY state, kind ORDER BY state, kind",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(|e| map_err("job count by state and kind", e))?;
        counts(&rows, "job count by state and kind")
    }

    async fn job_backlog(&self, p: JobBacklog) -> Result<Backlog> {
        // Both halves read partial indexes: jobs_due (available, run_at) and jobs_lease
        // (running, lease_expires_at).
        let row = sqlx::query(
            "SELECT
                (SELECT COUNT(*) FROM jobs WHERE state = 'available' AND run_at <= $1) AS due,
                (SELECT MIN(run_at) FROM jobs WHERE state = 'available' AND run_at <= $1) AS oldest,
                (SELECT COUNT(*) FROM jobs WHERE state = 'available' AND run_at <= $2) AS stuck,
                (SELECT COUNT(*) FROM jobs WHERE state = 'running' AND lease_expires_at <= $3) AS expired",
        )
        .bind(p.now)
        .bind(p.stuck_before.min(p.now))
        .bind(p.lease_expired_before)
        .fetch_one(&self.pool)
        .await
        .map_err(|e| map_err("job backlog", e))?;
        let get = |c: &str| -> Result<Option<i64>> {
            row.try_get(c).map_err(|e| map_err("job backlog", e))
        };
        let oldest: Option<DateTime<Utc>> = row
            .try_get("oldest")
            .map_err(|e| map_err("job backlog", e))?;
        Ok(Backlog {
            due: get("due")?.unwrap_or(0),
            oldest_due_at: oldest,
            stuck: get("stuck")?.unwrap_or(0),
            lease_expired: get("expired")?.unwrap_or(0),
        })
    }

    async fn job_count_finished(&self, p: JobCountFinished) -> Result<Vec<JobCount>> {
        let rows = sqlx::query(
            "SELECT state, kind, COUNT(*) AS n FROM jobs
             WHERE finished_at >= $1 AND finished_at < $2
             GROUP BY state, kind ORDER BY state, kind",
        )
        .bind(p.since)
        .bind(p.until)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| map_err("job count finished", e))?;
        counts(&rows, "job count finished")
    }

    async fn job_dead_scheduled(&self, p: JobDeadScheduled) -> Result<Vec<DeadScheduledRun>> {
        // Reads the partial index jobs_dead_scheduled, as on SQLite.
        let rows = sqlx::query(
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
        )
        .bind(p.since)
        .bind(p.until)
        .bind(p.limit.max(0))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| map_err("job dead scheduled", e))?;
        rows.iter()
            .map(|r| {
                let _e = |e| map_err("job dead scheduled", e);
                rows::dead_scheduled_run(&Pg(r))
            })
            .collect()
    }

    async fn job_count_decided(&self, p: JobCountDecided) -> Result<Vec<DecidedCount>> {
        // As on SQLite; jsonb payloads are always valid JSON.
        let rows = sqlx::query(
            "SELECT schedule_id, topic, state, reason, COUNT(*) AS n FROM (
                SELECT schedule_id,
                       CASE WHEN schedule_id IS NULL AND kind = ANY($3)
                             AND jsonb_typeof(payload -> 'topic') = 'string'
                            THEN payload ->> 'topic' END AS topic,
                       state,
                       CASE WHEN state = 'skipped' THEN reason END AS reason
                FROM jobs
                WHERE finished_at >= $1 AND finished_at < $2
                  AND state IN ('succeeded', 'skipped', 'dead')
             ) d
             WHERE schedule_id IS NOT NULL OR topic IS NOT NULL
             GROUP BY schedule_id, topic, state, reason
             ORDER BY schedule_id, topic, state, reason",
        )
        .bind(p.since)
        .bind(p.until)
        .bind(&p.topic_kinds)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| map_err("job count decided", e))?;
        rows.iter()
            .map(|r| {
                let _e = |e| map_err("job count decided", e);
                rows::decided_count(&Pg(r))
            })
            .collect()
    }

    async fn schedule_fire_times(&self, p: ScheduleFireTimes) -> Result<Vec<DateTime<Utc>>> {
        let v: Vec<DateTime<Utc>> = sqlx::query_scalar(
            // A firing recorded for audience expansion counts as materialized even before (or
            // without: no subscriber) its jobs exist.
            "SELECT fire_at FROM jobs
             WHERE schedule_id = $1 AND fire_at >= $2 AND fire_at <= $3
             UNION
             SELECT fire_at FROM expansions
             WHERE schedule_id = $1 AND fire_at >= $2 AND fire_at <= $3
             ORDER BY 1",
        )
        .bind(&p.schedule_id)
        .bind(p.since)
        .bind(p.until)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| map_err("schedule fire times", e))?;
        Ok(v)
    }

    async fn slo_alert_list(&self) -> Result<Vec<SloAlert>> {
        let rows = sqlx::query(
            "SELECT key, check_name, active, since, message, seq, notified_seq, updated_at
             FROM slo_alerts ORDER BY key",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(|e| map_err("slo alert list", e))?;
        rows.iter()
            .map(|r| {
                let _e = |e| map_err("slo alert list", e);
                rows::slo_alert(&Pg(r))
            })
            .collect()
    }

    async fn slo_alert_put(&self, p: SloAlertPut) -> Result<()> {
        let a = p.alert;
        sqlx::query(
            "INSERT INTO slo_alerts (key, check_name, active, since, message, seq, notified_seq, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (key) DO UPDATE SET check_name = excluded.check_name,
                active = excluded.active, since = excluded.since, message = excluded.message,
                seq = excluded.seq, notified_seq = excluded.notified_seq,
                updated_at = excluded.updated_at",
        )
        .bind(&a.key)
        .bind(&a.check)
        .bind(a.active)
        .bind(a.since)
        .bind(&a.message)
        .bind(a.seq)
        .bind(a.notified_seq)
        .bind(a.updated_at)
        .execute(&self.pool)
        .await
        .map_err(|e| map_err("slo alert put", e))?;
        Ok(())
    }
}
