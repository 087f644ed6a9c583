//! Inbound provider events on PostgreSQL, and the suppression cascade they (and
//! `suppression_apply`) run.

use crate::rows::PgRun;
use crate::{PostgresStore, map_err};
use async_trait::async_trait;
use kairos_store::sql::inbound;
use kairos_store::*;
use sqlx::{Postgres, Transaction};

/// Suppress one address and disable its subscriptions inside `tx` (the shared body of
/// `suppression_apply` and `inbound_event_record`).
pub(crate) async fn apply_in_tx(
    keys: &KeyCache,
    tx: &mut Transaction<'_, Postgres>,
    p: &SuppressionApply,
) -> Result<SuppressionApplied> {
    inbound::suppression_apply(keys, &mut PgRun::Conn(&mut *tx), p).await
}

#[async_trait]
impl InboundStore for PostgresStore {
    async fn inbound_event_record(&self, p: InboundEventRecord) -> Result<InboundEventRecorded> {
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(|e| map_err("inbound event record", e))?;
        let Some(out) = inbound::event_record(&self.keys, &mut PgRun::Conn(&mut tx), &p).await?
        else {
            drop(tx);
            let job_id = self
                .inbound_event_get(&p.source, &p.id)
                .await?
                .and_then(|e| e.job_id);
            return Ok(InboundEventRecorded {
                created: false,
                job_id,
                ..Default::default()
            });
        };
        tx.commit()
            .await
            .map_err(|e| map_err("inbound event record", e))?;
        Ok(out)
    }

    async fn inbound_event_get(&self, source: &str, id: &str) -> Result<Option<InboundEvent>> {
        inbound::event_get(&mut PgRun::Pool(&self.pool), source, id).await
    }

    async fn inbound_event_prune(&self, p: InboundEventPrune) -> Result<u64> {
        // Differs from SQLite: ctid and SKIP LOCKED, like the other prunes.
        let done = sqlx::query(
            "DELETE FROM inbound_events WHERE ctid IN (
                 SELECT ctid FROM inbound_events WHERE received_at < $1
                 ORDER BY received_at LIMIT $2 FOR UPDATE SKIP LOCKED)",
        )
        .bind(p.before)
        .bind(p.limit.max(0))
        .execute(&self.pool)
        .await
        .map_err(|e| map_err("inbound event prune", e))?;
        Ok(done.rows_affected())
    }
}
