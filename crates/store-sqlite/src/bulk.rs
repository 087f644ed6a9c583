//! Bulk cancel and retry on SQLite: one `BEGIN IMMEDIATE` transaction per batch — pick the
//! candidates in ascending id order after the cursor, then update those still in a state the
//! action applies to.

use crate::rows::ms_opt;
use crate::{SqliteStore, map_err};
use kairos_core::clock::to_millis;
use kairos_store::*;
use sqlx::{Sqlite, Transaction};

/// Candidates of a list of ids (a JSON array): the primary key drives the lookup.
const PICK_IDS: &str = "SELECT id FROM jobs
     WHERE id IN (SELECT value FROM json_each(?1)) AND state IN (SELECT value FROM json_each(?2))
       AND (?3 IS NULL OR id > ?3)
     ORDER BY id LIMIT ?4";

/// Candidates of a filter, walking the primary key from the cursor.
const PICK_FILTER: &str = "SELECT id FROM jobs
     WHERE state IN (SELECT value FROM json_each(?1))
       AND (?2 IS NULL OR id > ?2)
       AND (?3 IS NULL OR state = ?3) AND (?4 IS NULL OR kind = ?4)
       AND (?5 IS NULL OR schedule_id = ?5) AND (?6 IS NULL OR channel = ?6)
       AND (?7 IS NULL OR created_at < ?7) AND (?8 IS NULL OR created_at >= ?8)
       AND (?9 IS NULL OR json_extract(payload, '$.recipient_id') = ?9)
     ORDER BY id LIMIT ?10";

/// The candidates of `s` in one of `states`.
async fn pick(
    tx: &mut Transaction<'static, Sqlite>,
    s: &JobSelect,
    states: &[&str],
) -> Result<Vec<String>> {
    let states = serde_json::to_string(states).unwrap_or_default();
    let limit = s.limit.clamp(1, JOB_BULK_BATCH);
    let q = match &s.ids {
        Some(ids) => sqlx::query_scalar(PICK_IDS)
            .bind(serde_json::to_string(ids).unwrap_or_default())
            .bind(states)
            .bind(&s.after_id)
            .bind(limit),
        None => {
            let f = &s.filter;
            sqlx::query_scalar(PICK_FILTER)
                .bind(states)
                .bind(&s.after_id)
                .bind(&f.state)
                .bind(&f.kind)
                .bind(&f.schedule_id)
                .bind(&f.channel)
                .bind(ms_opt(f.created_before))
                .bind(ms_opt(f.created_after))
                .bind(&f.recipient_id)
                .bind(limit)
        }
    };
    q.fetch_all(&mut **tx)
        .await
        .map_err(|e| map_err("job bulk pick", e))
}

impl SqliteStore {
    pub(crate) async fn job_bulk_cancel_impl(&self, p: JobBulkCancel) -> Result<JobBulkDone> {
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

    pub(crate) async fn job_bulk_retry_impl(&self, p: JobBulkRetry) -> Result<JobBulkDone> {
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
}
