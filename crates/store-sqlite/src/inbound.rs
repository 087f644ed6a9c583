//! Inbound provider events on SQLite, and the suppression cascade they (and
//! `suppression_apply`) run.

use crate::rows::SqRun;
use crate::{SqliteStore, map_err};
use async_trait::async_trait;
use kairos_store::sql::inbound;
use kairos_store::*;
use sqlx::{Sqlite, Transaction};

/// Suppress one address and disable its subscriptions inside `tx` (the shared body of
/// `suppression_apply` and `inbound_event_record`).
pub(crate) async fn apply_in_tx(
    keys: &KeyCache,
    tx: &mut Transaction<'_, Sqlite>,
    p: &SuppressionApply,
) -> Result<SuppressionApplied> {
    inbound::suppression_apply(keys, &mut SqRun::Conn(&mut *tx), p).await
}

#[async_trait]
impl InboundStore for SqliteStore {
    async fn inbound_event_record(&self, p: InboundEventRecord) -> Result<InboundEventRecorded> {
        let mut tx = self.begin_write("inbound event record").await?;
        let Some(out) = inbound::event_record(&self.keys, &mut SqRun::Conn(&mut tx), &p).await?
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
        inbound::event_get(&mut SqRun::Pool(&self.write), source, id).await
    }

    async fn inbound_event_prune(&self, p: InboundEventPrune) -> Result<u64> {
        let done = sqlx::query(
            "DELETE FROM inbound_events WHERE rowid IN (
                 SELECT rowid FROM inbound_events WHERE received_at < ?1
                 ORDER BY received_at LIMIT ?2)",
        )
        .bind(kairos_core::clock::to_millis(p.before))
        .bind(p.limit.max(0))
        .execute(&self.write)
        .await
        .map_err(|e| map_err("inbound event prune", e))?;
        Ok(done.rows_affected())
    }
}
