//! Jobs and attempts on SQLite. The queue's hot path (insert, claim, complete, lease renewal,
//! rescue) runs on the native writer thread (`writer.rs`, statements in `native.rs`); reads and
//! the rarer writes (cancel, retry) go through the sqlx pools.

use crate::native;
use crate::rows::{JOB_COLS, attempt_from_row, job_from_row};
use crate::{SqliteStore, map_err};
use chrono::{DateTime, Utc};
use kairos_core::Job;
use kairos_core::clock::to_millis;
use kairos_store::*;
use sqlx::{AssertSqlSafe, Row};

/// Build `SELECT … FROM jobs`-style SQL from the column list once; the column list is a
/// constant, so the assembled string is safe.
fn sql(template: &str) -> AssertSqlSafe<String> {
    AssertSqlSafe(template.replace("{cols}", JOB_COLS))
}

/// How SQLite wants batch values: integer milliseconds and JSON as TEXT.
pub(crate) const ENC: kairos_store::batch::BatchEncoding = kairos_store::batch::BatchEncoding {
    instant: |t| serde_json::Value::from(to_millis(t)),
    json_as_text: true,
};

pub(crate) fn insert_json(jobs: &[JobInsert]) -> serde_json::Value {
    kairos_store::batch::jobs_batch(jobs, ENC)
}

/// Insert many jobs from a JSON array in one statement. `WHERE true` resolves SQLite's parse
/// ambiguity between `SELECT … ON CONFLICT` and a join constraint. `jsonb_each` (not
/// `json_each`) yields each element as JSONB, so `value ->> 'key'` is a lookup instead of a
/// re-parse of the element's text for every column.
pub(crate) const INSERT_MANY: &str = "INSERT INTO jobs (id, kind, state, payload, endpoint_id, schedule_id, fire_at, period_key, dedupe_key, attempt, max_attempts, retry, run_at, created_at, channel)
SELECT value ->> 'id', value ->> 'kind', 'available', value ->> 'payload', value ->> 'endpoint_id', value ->> 'schedule_id', value ->> 'fire_at', value ->> 'period_key', value ->> 'dedupe_key', 0, value ->> 'max_attempts', value ->> 'retry', value ->> 'run_at', value ->> 'created_at', value ->> 'channel'
FROM jsonb_each(?1) WHERE true
ON CONFLICT (dedupe_key) DO NOTHING
RETURNING id";

/// Chunk size for bulk inserts: large enough to amortize the round trip, small enough to keep
/// a transaction short.
const INSERT_CHUNK: usize = 5_000;

impl SqliteStore {
    pub(crate) async fn job_insert_impl(&self, p: JobInsert) -> Result<JobInserted> {
        let new = native::NewJob::encode(p)?;
        let (job, created) = self.hot.call(move |c| native::insert_one(c, &new)).await?;
        Ok(JobInserted {
            job: job.decode()?,
            created,
        })
    }

    pub(crate) async fn job_insert_many_impl(&self, p: Vec<JobInsert>) -> Result<Vec<String>> {
        let mut ids = Vec::with_capacity(p.len());
        let mut rest = p.into_iter().peekable();
        // One transaction per chunk, so a huge insert does not hold the writer for long.
        while rest.peek().is_some() {
            let chunk = rest
                .by_ref()
                .take(INSERT_CHUNK)
                .map(native::NewJob::encode)
                .collect::<Result<Vec<_>>>()?;
            ids.extend(
                self.hot
                    .call(move |c| native::insert_many(c, &chunk))
                    .await?,
            );
        }
        Ok(ids)
    }

    pub(crate) async fn job_get_impl(&self, id: &str) -> Result<Option<Job>> {
        let row = sqlx::query(sql("SELECT {cols} FROM jobs WHERE id = ?1"))
            .bind(id)
            .fetch_optional(&self.read)
            .await
            .map_err(|e| map_err("job get", e))?;
        row.as_ref().map(job_from_row).transpose()
    }

    pub(crate) async fn job_list_impl(&self, p: JobList) -> Result<Vec<Job>> {
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

    pub(crate) async fn job_claim_impl(&self, p: JobClaim) -> Result<Vec<Job>> {
        let now = p.now;
        let rows = self.hot.call(move |c| native::claim(c, &p)).await?;
        // A row that cannot be decoded dies alone: its batch-mates are returned and run, and
        // it is dead-lettered under its lease with the decoding error (it could never run).
        let mut jobs = Vec::with_capacity(rows.len());
        let mut bad = Vec::new();
        for row in rows {
            let (id, token) = row.id_and_lease();
            match row.decode() {
                Ok(job) => jobs.push(job),
                Err(e) => {
                    tracing::error!(job_id = %id, error = %e, "claimed job cannot be decoded; dead-lettered");
                    bad.push((id, token, kairos_core::error_chain(&e)));
                }
            }
        }
        if !bad.is_empty() {
            self.hot
                .call(move |c| native::dead_undecodable(c, &bad, now))
                .await?;
        }
        // RETURNING order is unspecified: restore oldest-first (S0-2).
        jobs.sort_by(|a, b| (a.run_at, &a.id).cmp(&(b.run_at, &b.id)));
        Ok(jobs)
    }

    pub(crate) async fn job_lease_renew_impl(&self, p: JobLeaseRenew) -> Result<u64> {
        self.hot.call(move |c| native::lease_renew(c, &p)).await
    }

    pub(crate) async fn job_complete_many_impl(
        &self,
        p: Vec<JobComplete>,
    ) -> Result<CompleteReport> {
        if p.is_empty() {
            return Ok(CompleteReport::default());
        }
        self.hot.call(move |c| native::complete_many(c, &p)).await
    }

    pub(crate) async fn job_cancel_impl(&self, p: JobCancel) -> Result<Option<Job>> {
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

    pub(crate) async fn job_retry_impl(&self, p: JobRetry) -> Result<Option<Job>> {
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

    pub(crate) async fn job_rescue_impl(&self, p: JobRescue) -> Result<Vec<String>> {
        self.hot.call(move |c| native::rescue(c, &p)).await
    }

    pub(crate) async fn attempt_list_impl(&self, job_id: &str) -> Result<Vec<Attempt>> {
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

    pub(crate) async fn job_next_run_at_impl(&self) -> Result<Option<DateTime<Utc>>> {
        let ms: Option<i64> = sqlx::query_scalar(
            "SELECT MIN(run_at) FROM jobs INDEXED BY jobs_due WHERE state = 'available'",
        )
        .fetch_one(&self.read)
        .await
        .map_err(|e| map_err("job next run_at", e))?;
        Ok(ms.map(kairos_core::clock::from_millis))
    }

    pub(crate) async fn job_count_by_state_impl(&self) -> Result<Vec<(String, i64)>> {
        let rows =
            sqlx::query("SELECT state, COUNT(*) AS n FROM jobs GROUP BY state ORDER BY state")
                .fetch_all(&self.read)
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
}

async fn fetch_job(
    tx: &mut sqlx::Transaction<'static, sqlx::Sqlite>,
    id: &str,
) -> Result<Option<Job>> {
    let row = sqlx::query(sql("SELECT {cols} FROM jobs WHERE id = ?1"))
        .bind(id)
        .fetch_optional(&mut **tx)
        .await
        .map_err(|e| map_err("job get", e))?;
    row.as_ref().map(job_from_row).transpose()
}
