//! Retention of the tables besides jobs, artifacts and inbound events: one bounded `DELETE`
//! per batch, oldest first. What each table keeps is in `kairos_store::RetentionTable`.
//! Differs from SQLite: the batch is locked with SKIP LOCKED, so two pruners never wait on
//! each other, and expansions are addressed by `ctid`.

use crate::{PostgresStore, map_err};
use kairos_store::{Result, RetentionPrune, RetentionTable};

/// The statement for `table`: `$1` the cut-off in milliseconds, `$2` the batch size.
fn statement(table: RetentionTable) -> &'static str {
    match table {
        RetentionTable::DedupeTombstones => {
            "DELETE FROM dedupe_tombstones WHERE dedupe_key IN (
                 SELECT dedupe_key FROM dedupe_tombstones WHERE finished_at < $1
                 ORDER BY finished_at LIMIT $2 FOR UPDATE SKIP LOCKED)"
        }
        RetentionTable::Exposures => {
            "DELETE FROM exposures WHERE job_id IN (
                 SELECT job_id FROM exposures WHERE created_at < $1
                 ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED)"
        }
        // An unfinished expansion is a cursor still in use.
        RetentionTable::Expansions => {
            "DELETE FROM expansions WHERE ctid IN (
                 SELECT ctid FROM expansions WHERE done AND updated_at < $1
                 ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED)"
        }
        // The newest entry of an address still suppressed says why it is; it stays.
        RetentionTable::SuppressionLog => {
            "DELETE FROM suppression_log WHERE id IN (
                 SELECT l.id FROM suppression_log l WHERE l.created_at < $1
                   AND NOT (EXISTS (SELECT 1 FROM suppressions s WHERE s.address = l.address)
                            AND l.id = (SELECT MAX(m.id) FROM suppression_log m
                                        WHERE m.address = l.address))
                 ORDER BY l.created_at LIMIT $2 FOR UPDATE SKIP LOCKED)"
        }
        // A firing alert, or a recovery not yet notified, is live state of the monitor.
        RetentionTable::SloAlerts => {
            "DELETE FROM slo_alerts WHERE key IN (
                 SELECT key FROM slo_alerts
                 WHERE NOT active AND seq = notified_seq AND updated_at < $1
                 ORDER BY updated_at LIMIT $2 FOR UPDATE SKIP LOCKED)"
        }
    }
}

pub(crate) async fn prune(store: &PostgresStore, p: RetentionPrune) -> Result<u64> {
    if p.limit <= 0 {
        return Ok(0);
    }
    let done = sqlx::query(statement(p.table))
        .bind(p.before)
        .bind(p.limit)
        .execute(&store.pool)
        .await
        .map_err(|e| map_err("retention prune", e))?;
    Ok(done.rows_affected())
}
