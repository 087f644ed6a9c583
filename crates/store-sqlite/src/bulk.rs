//! Bulk cancel and retry on SQLite: one `BEGIN IMMEDIATE` transaction per batch — pick the
//! candidates in ascending id order after the cursor, then update those still in a state the
//! action applies to.

use crate::map_err;
use crate::rows::ms_opt;
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
pub(crate) async fn pick(
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
