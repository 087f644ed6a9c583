//! Jobs and attempts on SQLite.

use crate::rows::{JOB_COLS, attempt_from_row, job_from_row};
use crate::{SqliteStore, map_err};
use chrono::{DateTime, Utc};
use kairos_core::Job;
use kairos_core::clock::to_millis;
use kairos_store::*;
use serde_json::json;
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
pub(crate) const INSERT_MANY: &str = "INSERT INTO jobs (id, kind, state, payload, endpoint_id, schedule_id, fire_at, period_key, dedupe_key, attempt, max_attempts, retry, run_at, created_at)
SELECT value ->> 'id', value ->> 'kind', 'available', value ->> 'payload', value ->> 'endpoint_id', value ->> 'schedule_id', value ->> 'fire_at', value ->> 'period_key', value ->> 'dedupe_key', 0, value ->> 'max_attempts', value ->> 'retry', value ->> 'run_at', value ->> 'created_at'
FROM jsonb_each(?1) WHERE true
ON CONFLICT (dedupe_key) DO NOTHING
RETURNING id";

/// Chunk size for bulk inserts: large enough to amortize the round trip, small enough to keep
/// a transaction short.
const INSERT_CHUNK: usize = 5_000;

impl SqliteStore {
    pub(crate) async fn job_insert_impl(&self, p: JobInsert) -> Result<JobInserted> {
        let mut tx = self
            .write
            .begin()
            .await
            .map_err(|e| map_err("job insert", e))?;
        let created: Vec<String> = sqlx::query_scalar(INSERT_MANY)
            .bind(insert_json(std::slice::from_ref(&p)).to_string())
            .fetch_all(&mut *tx)
            .await
            .map_err(|e| map_err("job insert", e))?;
        let row = if created.is_empty() {
            // The dedupe key exists: answer with the job that holds it.
            sqlx::query(sql("SELECT {cols} FROM jobs WHERE dedupe_key = ?1"))
                .bind(&p.dedupe_key)
                .fetch_one(&mut *tx)
                .await
        } else {
            sqlx::query(sql("SELECT {cols} FROM jobs WHERE id = ?1"))
                .bind(&p.id)
                .fetch_one(&mut *tx)
                .await
        }
        .map_err(|e| map_err("job insert", e))?;
        let job = job_from_row(&row)?;
        tx.commit().await.map_err(|e| map_err("job insert", e))?;
        Ok(JobInserted {
            job,
            created: !created.is_empty(),
        })
    }

    pub(crate) async fn job_insert_many_impl(&self, p: Vec<JobInsert>) -> Result<Vec<String>> {
        let mut ids = Vec::new();
        for chunk in p.chunks(INSERT_CHUNK) {
            let created: Vec<String> = sqlx::query_scalar(INSERT_MANY)
                .bind(insert_json(chunk).to_string())
                .fetch_all(&self.write)
                .await
                .map_err(|e| map_err("job insert many", e))?;
            ids.extend(created);
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
        // SQLite has no SKIP LOCKED; with one writer connection the conditional UPDATE cannot
        // race with another claimer in this process, and across processes SQLite's write lock
        // serializes it. `INDEXED BY jobs_due` pins the plan to the partial index: without
        // statistics the planner otherwise picks `jobs_state_kind` and sorts every available
        // row, which makes the claim slow down as the backlog grows. The unary `+` keeps the
        // outer filter off any index (the id lookup is the right plan).
        let rows = sqlx::query(sql(
            "UPDATE jobs SET state = 'running', attempt = attempt + 1, locked_by = ?1,
                    lease_token = ?2, lease_expires_at = ?3, attempted_at = ?4
             WHERE id IN (SELECT id FROM jobs INDEXED BY jobs_due
                          WHERE state = 'available' AND run_at <= ?4
                          ORDER BY run_at, id LIMIT ?5)
               AND +state = 'available'
             RETURNING {cols}",
        ))
        .bind(&p.node)
        .bind(&p.lease_token)
        .bind(to_millis(p.lease_until))
        .bind(to_millis(p.now))
        .bind(p.limit.max(0))
        .fetch_all(&self.write)
        .await
        .map_err(|e| map_err("job claim", e))?;
        let mut jobs = rows.iter().map(job_from_row).collect::<Result<Vec<_>>>()?;
        // RETURNING order is unspecified: restore oldest-first (S0-2).
        jobs.sort_by(|a, b| (a.run_at, &a.id).cmp(&(b.run_at, &b.id)));
        Ok(jobs)
    }

    pub(crate) async fn job_lease_renew_impl(&self, p: JobLeaseRenew) -> Result<u64> {
        let list: Vec<_> = p
            .jobs
            .iter()
            .map(|(id, t)| json!({"id": id, "token": t}))
            .collect();
        let done = sqlx::query(
            "UPDATE jobs SET lease_expires_at = ?2
             FROM (SELECT value ->> 'id' AS id, value ->> 'token' AS token FROM jsonb_each(?1)) AS r
             WHERE jobs.id = r.id AND jobs.lease_token = r.token AND +jobs.state = 'running'",
        )
        .bind(serde_json::Value::Array(list).to_string())
        .bind(to_millis(p.lease_until))
        .execute(&self.write)
        .await
        .map_err(|e| map_err("job lease renew", e))?;
        Ok(done.rows_affected())
    }

    pub(crate) async fn job_complete_many_impl(
        &self,
        p: Vec<JobComplete>,
    ) -> Result<CompleteReport> {
        if p.is_empty() {
            return Ok(CompleteReport::default());
        }
        let batch = kairos_store::batch::completions_batch(&p, ENC);
        let body = batch.to_string();
        let mut tx = self
            .write
            .begin()
            .await
            .map_err(|e| map_err("job complete", e))?;
        // The attempt log first, joined on the live lease so a stale completion records
        // nothing; then the state change under the same condition (fencing). Both loop over
        // the JSON array and look jobs up by primary key: `CROSS JOIN` fixes the loop order
        // and the unary `+` keeps the planner from scanning running jobs via the state index
        // instead (which made a batch cost O(running × batch)).
        sqlx::query(
            "INSERT INTO job_attempts (job_id, attempt, started_at, finished_at, outcome, error_class, status_code, error, response, provider_id, node)
             SELECT c.id, jobs.attempt, c.started_at, c.finished_at, c.outcome, c.error_class, c.status_code, c.error, c.response, c.provider_id, c.node
             FROM (SELECT value ->> 'id' AS id, value ->> 'token' AS token, value ->> 'started_at' AS started_at,
                          value ->> 'finished_at' AS finished_at, value ->> 'outcome' AS outcome,
                          value ->> 'error_class' AS error_class, value ->> 'status_code' AS status_code,
                          value ->> 'error' AS error, value ->> 'response' AS response,
                          value ->> 'provider_id' AS provider_id, value ->> 'node' AS node
                   FROM jsonb_each(?1)) AS c
             CROSS JOIN jobs
             WHERE jobs.id = c.id AND jobs.lease_token = c.token AND +jobs.state = 'running'",
        )
        .bind(&body)
        .execute(&mut *tx)
        .await
        .map_err(|e| map_err("job complete (attempts)", e))?;
        let applied: Vec<String> = sqlx::query_scalar(
            "UPDATE jobs SET state = c.state,
                    run_at = COALESCE(c.run_at, jobs.run_at),
                    attempt = jobs.attempt - c.refund,
                    finished_at = CASE WHEN c.state = 'available' THEN NULL ELSE c.finished_at END,
                    locked_by = NULL, lease_token = NULL, lease_expires_at = NULL,
                    last_error = c.error, reason = c.reason
             FROM (SELECT value ->> 'id' AS id, value ->> 'token' AS token, value ->> 'state' AS state,
                          value ->> 'run_at' AS run_at, value ->> 'refund' AS refund,
                          value ->> 'finished_at' AS finished_at, value ->> 'error' AS error,
                          value ->> 'reason' AS reason
                   FROM jsonb_each(?1)) AS c
             WHERE jobs.id = c.id AND jobs.lease_token = c.token AND +jobs.state = 'running'
             RETURNING jobs.id",
        )
        .bind(&body)
        .fetch_all(&mut *tx)
        .await
        .map_err(|e| map_err("job complete", e))?;
        tx.commit().await.map_err(|e| map_err("job complete", e))?;
        let applied_set: std::collections::HashSet<&str> =
            applied.iter().map(|s| s.as_str()).collect();
        let stale = p
            .iter()
            .filter(|c| !applied_set.contains(c.id.as_str()))
            .map(|c| c.id.clone())
            .collect();
        Ok(CompleteReport {
            applied: applied.len() as u64,
            stale,
        })
    }

    pub(crate) async fn job_cancel_impl(&self, p: JobCancel) -> Result<Option<Job>> {
        let mut tx = self
            .write
            .begin()
            .await
            .map_err(|e| map_err("job cancel", e))?;
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
        let mut tx = self
            .write
            .begin()
            .await
            .map_err(|e| map_err("job retry", e))?;
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
        let now = to_millis(p.now);
        let mut tx = self
            .write
            .begin()
            .await
            .map_err(|e| map_err("job rescue", e))?;
        let rows = sqlx::query(
            "SELECT id, lease_token FROM jobs INDEXED BY jobs_lease
             WHERE state = 'running' AND lease_expires_at < ?1
             ORDER BY lease_expires_at LIMIT ?2",
        )
        .bind(now)
        .bind(p.limit.max(0))
        .fetch_all(&mut *tx)
        .await
        .map_err(|e| map_err("job rescue", e))?;
        let mut ids = Vec::with_capacity(rows.len());
        for row in rows {
            let id: String = row.try_get("id").map_err(|e| map_err("job rescue", e))?;
            sqlx::query(
                "INSERT INTO job_attempts (job_id, attempt, started_at, finished_at, outcome, error_class, error, node)
                 SELECT id, attempt, COALESCE(attempted_at, ?2), ?2, 'lost', 'transient', 'lease expired: the worker stopped or lost contact', locked_by
                 FROM jobs WHERE id = ?1",
            )
            .bind(&id)
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(|e| map_err("job rescue", e))?;
            sqlx::query(
                "UPDATE jobs SET state = CASE WHEN attempt >= max_attempts THEN 'dead' ELSE 'available' END,
                        finished_at = CASE WHEN attempt >= max_attempts THEN ?2 ELSE NULL END,
                        run_at = ?2, last_error = 'lease expired',
                        locked_by = NULL, lease_token = NULL, lease_expires_at = NULL
                 WHERE id = ?1",
            )
            .bind(&id)
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(|e| map_err("job rescue", e))?;
            ids.push(id);
        }
        tx.commit().await.map_err(|e| map_err("job rescue", e))?;
        Ok(ids)
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
