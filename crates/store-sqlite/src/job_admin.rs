//! Operator work on jobs on SQLite: lists, search, cancel and retry (one or in bulk), the
//! attempt log and occurrences. Bulk actions run one `BEGIN IMMEDIATE` transaction per batch.

use crate::bulk::pick;
use crate::jobs::{fetch_job, sql};
use crate::rows::Sq;
use crate::rows::{JOB_COLS, attempt_from_row, job_from_row, ms_opt};
use crate::{SqliteStore, map_err};
use async_trait::async_trait;
use kairos_core::Job;
use kairos_core::clock::to_millis;
use kairos_store::sql::rows;
use kairos_store::*;
use sqlx::AssertSqlSafe;

#[async_trait]
impl JobAdminStore for SqliteStore {
    async fn job_list(&self, p: JobList) -> Result<Vec<Job>> {
        let rows = sqlx::query(sql("SELECT {cols} FROM jobs
             WHERE (?1 IS NULL OR state = ?1) AND (?2 IS NULL OR kind = ?2)
               AND (?3 IS NULL OR schedule_id = ?3) AND (?4 IS NULL OR id < ?4)
             ORDER BY id DESC LIMIT ?5"))
        .bind(p.state.as_ref().map(|s| s.as_str().to_string()))
        .bind(p.kind)
        .bind(p.schedule_id)
        .bind(p.before_id)
        .bind(p.limit.unwrap_or(100).clamp(1, 10_000))
        .fetch_all(&self.read)
        .await
        .map_err(|e| map_err("job list", e))?;
        rows.iter().map(job_from_row).collect()
    }

    async fn job_search(&self, p: JobSearch) -> Result<Vec<Job>> {
        // Every filter is `(? IS NULL OR …)` so that one prepared statement serves every
        // combination; ordering by the primary key keeps each page an index range. The
        // payload filters (topic, recipient) have no index: they are checked row by row while
        // walking that range, which is fine for an operator's page of 50.
        let q = format!(
            "SELECT {JOB_COLS} FROM jobs
             WHERE (?1 IS NULL OR state = ?1) AND (?2 IS NULL OR kind = ?2)
               AND (?3 IS NULL OR schedule_id = ?3) AND (?4 IS NULL OR period_key = ?4)
               AND (?5 IS NULL OR created_at >= ?5) AND (?6 IS NULL OR created_at < ?6)
               AND (?7 IS NULL OR id < ?7)
               AND (?9 IS NULL OR json_extract(payload, '$.topic') = ?9)
               AND (?10 IS NULL OR json_extract(payload, '$.recipient_id') = ?10)
             ORDER BY id DESC LIMIT ?8"
        );
        let rows = sqlx::query(AssertSqlSafe(q))
            .bind(p.state)
            .bind(p.kind)
            .bind(p.schedule_id)
            .bind(p.period_key)
            .bind(ms_opt(p.created_from))
            .bind(ms_opt(p.created_to))
            .bind(p.before_id)
            .bind(p.limit.clamp(1, 1000))
            .bind(p.topic)
            .bind(p.recipient_id)
            .fetch_all(&self.read)
            .await
            .map_err(|e| map_err("job search", e))?;
        rows.iter().map(job_from_row).collect()
    }

    async fn job_cancel(&self, p: JobCancel) -> Result<Option<Job>> {
        let mut tx = self.begin_write("job cancel").await?;
        sqlx::query(
            "UPDATE jobs SET state = 'cancelled', finished_at = ?2, reason = ?3,
                    locked_by = NULL, lease_token = NULL, lease_expires_at = NULL
             WHERE id = ?1 AND state IN ('available', 'running')",
        )
        .bind(&p.id)
        .bind(to_millis(p.now))
        .bind(&p.reason)
        .execute(&mut *tx)
        .await
        .map_err(|e| map_err("job cancel", e))?;
        let job = fetch_job(&mut tx, &p.id).await?;
        tx.commit().await.map_err(|e| map_err("job cancel", e))?;
        Ok(job)
    }

    async fn job_retry(&self, p: JobRetry) -> Result<Option<Job>> {
        let mut tx = self.begin_write("job retry").await?;
        // A finished-but-not-succeeded job gets a fresh set of attempts; a waiting job is
        // moved to now. Succeeded and running jobs are left alone: re-running them would send
        // twice.
        sqlx::query(
            "UPDATE jobs SET
                    attempt = CASE WHEN state = 'available' THEN attempt ELSE 0 END,
                    state = 'available', run_at = ?2, finished_at = NULL, reason = NULL
             WHERE id = ?1 AND state IN ('available', 'dead', 'cancelled', 'skipped')",
        )
        .bind(&p.id)
        .bind(to_millis(p.now))
        .execute(&mut *tx)
        .await
        .map_err(|e| map_err("job retry", e))?;
        let job = fetch_job(&mut tx, &p.id).await?;
        tx.commit().await.map_err(|e| map_err("job retry", e))?;
        Ok(job)
    }

    async fn job_bulk_cancel(&self, p: JobBulkCancel) -> Result<JobBulkDone> {
        let mut tx = self.begin_write("job bulk cancel").await?;
        let ids = pick(&mut tx, &p.select, &["available", "running"]).await?;
        let count = if ids.is_empty() {
            0
        } else {
            sqlx::query(
                "UPDATE jobs SET state = 'cancelled', finished_at = ?2, reason = ?3,
                        locked_by = NULL, lease_token = NULL, lease_expires_at = NULL
                 WHERE id IN (SELECT value FROM json_each(?1)) AND state IN ('available', 'running')",
            )
            .bind(serde_json::to_string(&ids).unwrap_or_default())
            .bind(to_millis(p.now))
            .bind(&p.reason)
            .execute(&mut *tx)
            .await
            .map_err(|e| map_err("job bulk cancel", e))?
            .rows_affected()
        };
        tx.commit()
            .await
            .map_err(|e| map_err("job bulk cancel", e))?;
        Ok(JobBulkDone {
            count,
            last_id: ids.last().cloned(),
        })
    }

    async fn job_bulk_retry(&self, p: JobBulkRetry) -> Result<JobBulkDone> {
        let mut tx = self.begin_write("job bulk retry").await?;
        let ids = pick(&mut tx, &p.select, &["dead", "cancelled"]).await?;
        let count = if ids.is_empty() {
            0
        } else {
            sqlx::query(
                "UPDATE jobs SET attempt = 0, state = 'available', run_at = ?2,
                        finished_at = NULL, reason = NULL
                 WHERE id IN (SELECT value FROM json_each(?1)) AND state IN ('dead', 'cancelled')",
            )
            .bind(serde_json::to_string(&ids).unwrap_or_default())
            .bind(to_millis(p.now))
            .execute(&mut *tx)
            .await
            .map_err(|e| map_err("job bulk retry", e))?
            .rows_affected()
        };
        tx.commit()
            .await
            .map_err(|e| map_err("job bulk retry", e))?;
        Ok(JobBulkDone {
            count,
            last_id: ids.last().cloned(),
        })
    }

    async fn attempt_list(&self, job_id: &str) -> Result<Vec<Attempt>> {
        let rows = sqlx::query(
            "SELECT job_id, attempt, started_at, finished_at, outcome, error_class, status_code, error, response, provider_id, node
             FROM job_attempts WHERE job_id = ?1 ORDER BY id",
        )
        .bind(job_id)
        .fetch_all(&self.read)
        .await
        .map_err(|e| map_err("attempt list", e))?;
        rows.iter().map(attempt_from_row).collect()
    }

    async fn occurrence_list(&self, p: OccurrenceList) -> Result<Vec<OccurrenceCount>> {
        let rows = sqlx::query(
            "WITH periods AS (
                 SELECT period_key, MIN(fire_at) AS fire_at FROM jobs
                 WHERE schedule_id = ?1 AND period_key IS NOT NULL AND (?2 IS NULL OR period_key = ?2)
                 GROUP BY period_key ORDER BY fire_at DESC, period_key DESC LIMIT ?3)
             SELECT j.period_key, p.fire_at, COALESCE(j.channel, j.kind) AS channel, j.state, COUNT(*) AS n
             FROM jobs j JOIN periods p ON p.period_key = j.period_key
             WHERE j.schedule_id = ?1
             GROUP BY j.period_key, p.fire_at, COALESCE(j.channel, j.kind), j.state
             ORDER BY p.fire_at DESC, j.period_key DESC, channel, j.state",
        )
        .bind(&p.schedule_id)
        .bind(&p.period_key)
        .bind(p.limit.unwrap_or(20))
        .fetch_all(&self.read)
        .await
        .map_err(|e| map_err("occurrence list", e))?;
        rows.iter()
            .map(|r| rows::occurrence_count(&Sq(r)))
            .collect()
    }
}
