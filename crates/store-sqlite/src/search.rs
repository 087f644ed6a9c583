//! `job_search`: the operator's filtered, keyset-paginated job list.

use crate::rows::{JOB_COLS, job_from_row, ms_opt};
use crate::{SqliteStore, map_err};
use kairos_core::Job;
use kairos_store::{JobSearch, Result};
use sqlx::AssertSqlSafe;

impl SqliteStore {
    pub(crate) async fn job_search_impl(&self, p: JobSearch) -> Result<Vec<Job>> {
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
}
