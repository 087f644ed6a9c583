//! `job_search`: the operator's filtered, keyset-paginated job list.

use crate::rows::{JOB_COLS, job_from_row};
use crate::{PostgresStore, map_err};
use kairos_core::Job;
use kairos_store::{JobSearch, Result};
use sqlx::AssertSqlSafe;

impl PostgresStore {
    pub(crate) async fn job_search_impl(&self, p: JobSearch) -> Result<Vec<Job>> {
        // Differs from SQLite: typed NULL checks (`$n::text IS NULL`), timestamptz bounds.
        let q = format!(
            "SELECT {JOB_COLS} FROM jobs
             WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR kind = $2)
               AND ($3::text IS NULL OR schedule_id = $3) AND ($4::text IS NULL OR period_key = $4)
               AND ($5::timestamptz IS NULL OR created_at >= $5)
               AND ($6::timestamptz IS NULL OR created_at < $6)
               AND ($7::text IS NULL OR id < $7)
               AND ($9::text IS NULL OR payload->>'topic' = $9)
               AND ($10::text IS NULL OR payload->>'recipient_id' = $10)
             ORDER BY id DESC LIMIT $8"
        );
        let rows = sqlx::query(AssertSqlSafe(q))
            .bind(p.state)
            .bind(p.kind)
            .bind(p.schedule_id)
            .bind(p.period_key)
            .bind(p.created_from)
            .bind(p.created_to)
            .bind(p.before_id)
            .bind(p.limit.clamp(1, 1000))
            .bind(p.topic)
            .bind(p.recipient_id)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| map_err("job search", e))?;
        rows.iter().map(job_from_row).collect()
    }
}
