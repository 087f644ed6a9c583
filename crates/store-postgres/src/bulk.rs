//! Bulk cancel and retry on PostgreSQL: one transaction per batch — lock the candidates in
//! ascending id order after the cursor (`FOR UPDATE`, waiting for a completion that holds a
//! row rather than skipping it: a skipped row would be passed by the cursor and never acted
//! on), then update those still in a state the action applies to.

use crate::map_err;
use kairos_store::*;
use sqlx::{Postgres, Transaction};

/// Candidates of a list of ids: the primary key drives the lookup.
const PICK_IDS: &str = "SELECT id FROM jobs
     WHERE id = ANY($1::text[]) AND state = ANY($2::text[])
       AND ($3::text IS NULL OR id > $3)
     ORDER BY id LIMIT $4 FOR UPDATE";

/// Candidates of a filter, walking the primary key from the cursor. Differs from SQLite:
/// typed NULL checks, timestamptz bounds, `payload->>`.
const PICK_FILTER: &str = "SELECT id FROM jobs
     WHERE state = ANY($1::text[])
       AND ($2::text IS NULL OR id > $2)
       AND ($3::text IS NULL OR state = $3) AND ($4::text IS NULL OR kind = $4)
       AND ($5::text IS NULL OR schedule_id = $5) AND ($6::text IS NULL OR channel = $6)
       AND ($7::timestamptz IS NULL OR created_at < $7)
       AND ($8::timestamptz IS NULL OR created_at >= $8)
       AND ($9::text IS NULL OR payload->>'recipient_id' = $9)
     ORDER BY id LIMIT $10 FOR UPDATE";

/// The candidates of `s` in one of `states`, locked until the transaction ends.
pub(crate) async fn pick(
    tx: &mut Transaction<'static, Postgres>,
    s: &JobSelect,
    states: &[&str],
) -> Result<Vec<String>> {
    let states: Vec<String> = states.iter().map(|s| s.to_string()).collect();
    let limit = s.limit.clamp(1, JOB_BULK_BATCH);
    let q = match &s.ids {
        Some(ids) => sqlx::query_scalar(PICK_IDS)
            .bind(ids)
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
                .bind(f.created_before)
                .bind(f.created_after)
                .bind(&f.recipient_id)
                .bind(limit)
        }
    };
    q.fetch_all(&mut **tx)
        .await
        .map_err(|e| map_err("job bulk pick", e))
}
