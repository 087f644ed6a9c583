//! Jobs and attempts on SQLite. The queue's hot path (insert, claim, complete, lease renewal,
//! rescue) runs on the native writer thread (`writer.rs`, statements in `native.rs`); reads and
//! the rarer writes (cancel, retry) go through the sqlx pools.

use crate::native;
use crate::rows::SqRun;
use crate::{SqliteStore, map_err};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use kairos_core::Job;
use kairos_core::clock::to_millis;
use kairos_store::*;

/// Chunk size for bulk inserts: large enough to amortize the round trip, small enough to keep
/// a transaction short.
const INSERT_CHUNK: usize = 5_000;

#[async_trait]
impl JobStore for SqliteStore {
    async fn job_insert(&self, p: JobInsert) -> Result<JobInserted> {
        let new = native::NewJob::encode(p)?;
        let (job, created) = self.hot.call(move |c| native::insert_one(c, &new)).await?;
        Ok(JobInserted {
            job: job.decode()?,
            created,
        })
    }

    async fn job_insert_many(&self, p: Vec<JobInsert>) -> Result<Vec<String>> {
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

    async fn job_insert_batch(&self, p: Vec<JobInsert>) -> Result<Vec<JobInserted>> {
        let new = p
            .into_iter()
            .map(native::NewJob::encode)
            .collect::<Result<Vec<_>>>()?;
        let rows = self
            .hot
            .call(move |c| native::insert_batch(c, &new))
            .await?;
        rows.into_iter()
            .map(|(job, created)| {
                Ok(JobInserted {
                    job: job.decode()?,
                    created,
                })
            })
            .collect()
    }

    async fn job_get(&self, id: &str) -> Result<Option<Job>> {
        kairos_store::sql::job_admin::job_read(&mut kairos_store::sql::SqlDb::reader(self), id)
            .await
    }

    async fn job_claim(&self, p: JobClaim) -> Result<Vec<Job>> {
        let now = p.now;
        let p_token = p.lease_token.clone();
        let rows = self.hot.call(move |c| native::claim(c, &p)).await?;
        // A row that cannot be decoded dies alone: its batch-mates are returned and run, and
        // it is dead-lettered under its lease with the decoding error (it could never run).
        let mut jobs = Vec::with_capacity(rows.len());
        let mut limited = std::collections::HashMap::new();
        let mut bad = Vec::new();
        for (row, flow_limited, host) in rows {
            let (id, token) = row.id_and_lease();
            match row.decode() {
                Ok(job) => {
                    if let Some(target) =
                        kairos_store::flow::flow_target(&job, flow_limited, host.as_deref())
                    {
                        limited.insert(job.id.clone(), target);
                    }
                    jobs.push(job)
                }
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
        // RETURNING order is unspecified: restore oldest-first.
        jobs.sort_by(|a, b| (a.run_at, &a.id).cmp(&(b.run_at, &b.id)));
        // Jobs with a concurrency key run only with a slot of their key, deliveries to an
        // endpoint with limits only within them (`slots.rs`); a batch with neither returns
        // here without another call on the writer.
        if !kairos_store::flow::needed(&jobs, &limited) {
            return Ok(jobs);
        }
        let token = p_token;
        let batch = jobs.clone();
        let waiting = self
            .hot
            .call(move |c| crate::slots::take(c, &batch, &limited, &token, now))
            .await?;
        Ok(jobs
            .into_iter()
            .filter(|j| !waiting.contains(&j.id))
            .collect())
    }

    async fn job_lease_renew(&self, p: JobLeaseRenew) -> Result<u64> {
        self.hot.call(move |c| native::lease_renew(c, &p)).await
    }

    async fn job_complete_many(&self, p: Vec<JobComplete>) -> Result<CompleteReport> {
        if p.is_empty() {
            return Ok(CompleteReport::default());
        }
        self.hot.call(move |c| native::complete_many(c, &p)).await
    }

    async fn job_rescue(&self, p: JobRescue) -> Result<Vec<String>> {
        self.hot.call(move |c| native::rescue(c, &p)).await
    }

    async fn job_next_run_at(&self) -> Result<Option<DateTime<Utc>>> {
        let ms: Option<i64> = sqlx::query_scalar(
            "SELECT MIN(run_at) FROM jobs INDEXED BY jobs_due WHERE state = 'available'",
        )
        .fetch_one(&self.read)
        .await
        .map_err(|e| map_err("job next run_at", e))?;
        Ok(ms.map(kairos_core::clock::from_millis))
    }

    async fn job_prune(&self, p: JobPrune) -> Result<JobPruned> {
        let states = p.final_state_names();
        if states.is_empty() || p.limit <= 0 {
            return Ok(JobPruned::default());
        }
        let states = serde_json::to_string(&states).unwrap_or_else(|_| "[]".into());
        // Reads before it writes: take the write lock first (see `SqlDb::begin`).
        let mut tx = kairos_store::sql::SqlDb::begin(self, "job prune").await?;
        // The batch: oldest finished first, through the partial index on finished_at.
        let ids: Vec<String> = sqlx::query_scalar(
            "SELECT id FROM jobs INDEXED BY jobs_finished
             WHERE finished_at IS NOT NULL AND finished_at < ?1
               AND state IN (SELECT value FROM json_each(?2))
             ORDER BY finished_at LIMIT ?3",
        )
        .bind(to_millis(p.older_than))
        .bind(&states)
        .bind(p.limit)
        .fetch_all(&mut *tx)
        .await
        .map_err(|e| map_err("job prune", e))?;
        if ids.is_empty() {
            return Ok(JobPruned::default());
        }
        let ids = serde_json::to_string(&ids).unwrap_or_else(|_| "[]".into());
        // The dedupe keys outlive their jobs: re-firing an old period must not send again.
        sqlx::query(
            "INSERT INTO dedupe_tombstones (dedupe_key, job_id, finished_at)
             SELECT dedupe_key, id, finished_at FROM jobs
             WHERE id IN (SELECT value FROM json_each(?1)) AND dedupe_key IS NOT NULL
             ON CONFLICT (dedupe_key) DO NOTHING",
        )
        .bind(&ids)
        .execute(&mut *tx)
        .await
        .map_err(|e| map_err("job prune", e))?;
        // Plain successes the job rows hold (`attempted_by`) are attempts too.
        let held: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM jobs
             WHERE id IN (SELECT value FROM json_each(?1)) AND attempted_by IS NOT NULL",
        )
        .bind(&ids)
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| map_err("job prune", e))?;
        let attempts = sqlx::query(
            "DELETE FROM job_attempts WHERE job_id IN (SELECT value FROM json_each(?1))",
        )
        .bind(&ids)
        .execute(&mut *tx)
        .await
        .map_err(|e| map_err("job prune", e))?
        .rows_affected()
            + held.max(0) as u64;
        let jobs = sqlx::query("DELETE FROM jobs WHERE id IN (SELECT value FROM json_each(?1))")
            .bind(&ids)
            .execute(&mut *tx)
            .await
            .map_err(|e| map_err("job prune", e))?
            .rows_affected();
        tx.commit().await.map_err(|e| map_err("job prune", e))?;
        Ok(JobPruned { jobs, attempts })
    }

    async fn retention_prune(&self, p: RetentionPrune) -> Result<u64> {
        kairos_store::sql::retention_prune(&mut SqRun::Pool(&self.write), p).await
    }
}
