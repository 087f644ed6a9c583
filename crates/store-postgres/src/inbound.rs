//! Inbound provider events on PostgreSQL, and the suppression cascade they (and
//! `suppression_apply`) run.

use crate::rows::Pg;
use crate::{PostgresStore, map_err};
use async_trait::async_trait;
use kairos_store::sql::rows;
use kairos_store::*;
use sqlx::postgres::PgRow;
use sqlx::{Postgres, Transaction};

pub(crate) fn suppression_from_row(r: &PgRow) -> Result<Suppression> {
    rows::suppression(&Pg(r))
}

/// Suppress one address and disable its subscriptions inside `tx` (the shared body of
/// `suppression_apply` and `inbound_event_record`).
pub(crate) async fn apply_in_tx(
    keys: &KeyCache,
    tx: &mut Transaction<'_, Postgres>,
    p: &SuppressionApply,
) -> Result<SuppressionApplied> {
    let address = normalize_address(&p.address);
    let now = p.now;
    // An erased address is suppressed already, as its keyed hash: no plain entry next to it.
    let erased = match crate::erasure::hash_of(keys, tx, &address).await? {
        Some(h) => {
            sqlx::query_scalar::<_, i32>("SELECT 1 FROM suppressions WHERE address_hash = $1")
                .bind(h)
                .fetch_optional(&mut **tx)
                .await
                .map_err(|e| map_err("suppression apply", e))?
                .is_some()
        }
        None => false,
    };
    let created = !erased
        && sqlx::query(
            "INSERT INTO suppressions (address, reason, source_event_id, created_at)
         VALUES ($1, $2, $3, $4) ON CONFLICT (address) DO NOTHING",
        )
        .bind(&address)
        .bind(&p.reason)
        .bind(&p.source_event_id)
        .bind(now)
        .execute(&mut **tx)
        .await
        .map_err(|e| map_err("suppression apply", e))?
        .rows_affected()
            > 0;
    if created {
        sqlx::query(
            "INSERT INTO suppression_log (address, action, reason, source_event_id, created_at)
             VALUES ($1, 'added', $2, $3, $4)",
        )
        .bind(&address)
        .bind(&p.reason)
        .bind(&p.source_event_id)
        .bind(now)
        .execute(&mut **tx)
        .await
        .map_err(|e| map_err("suppression log", e))?;
    }
    // The cascade: every subscription of every recipient with this address. PostgreSQL's
    // lower() follows the database's locale; the expression index of 0006 serves this lookup.
    let disabled = sqlx::query(
        "UPDATE subscriptions SET enabled = false, updated_at = $2
         WHERE enabled AND recipient_id IN
               (SELECT id FROM recipients WHERE lower(btrim(email)) = $1)",
    )
    .bind(&address)
    .bind(now)
    .execute(&mut **tx)
    .await
    .map_err(|e| map_err("suppression cascade", e))?
    .rows_affected();
    Ok(SuppressionApplied {
        created,
        subscriptions_disabled: disabled,
    })
}

#[async_trait]
impl InboundStore for PostgresStore {
    async fn inbound_event_record(&self, p: InboundEventRecord) -> Result<InboundEventRecorded> {
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(|e| map_err("inbound event record", e))?;
        // First delivery iff the row is created. The job is the one whose attempt
        // recorded the provider's message id.
        let inserted: Option<Option<String>> = sqlx::query_scalar(
            "INSERT INTO inbound_events
                 (source, id, type, provider_message_id, job_id, action, payload, received_at)
             VALUES ($1, $2, $3, $4,
                     (SELECT job_id FROM job_attempts WHERE $4::text IS NOT NULL AND provider_id = $4
                      ORDER BY id LIMIT 1),
                     $5, $6, $7)
             ON CONFLICT (source, id) DO NOTHING
             RETURNING job_id",
        )
        .bind(&p.source)
        .bind(&p.id)
        .bind(&p.event_type)
        .bind(&p.provider_message_id)
        .bind(&p.action)
        .bind(&p.payload)
        .bind(p.now)
        .fetch_optional(&mut *tx)
        .await
        .map_err(|e| map_err("inbound event record", e))?;
        let Some(job_id) = inserted else {
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
        let mut out = InboundEventRecorded {
            created: true,
            job_id,
            ..Default::default()
        };
        for address in &p.suppress {
            let a = apply_in_tx(
                &self.keys,
                &mut tx,
                &SuppressionApply {
                    address: address.clone(),
                    reason: p.reason.clone(),
                    source_event_id: Some(p.id.clone()),
                    now: p.now,
                },
            )
            .await?;
            out.suppressions_created += u64::from(a.created);
            out.subscriptions_disabled += a.subscriptions_disabled;
        }
        tx.commit()
            .await
            .map_err(|e| map_err("inbound event record", e))?;
        Ok(out)
    }

    async fn inbound_event_get(&self, source: &str, id: &str) -> Result<Option<InboundEvent>> {
        let row = sqlx::query(
            "SELECT source, id, type, provider_message_id, job_id, action, payload, received_at
             FROM inbound_events WHERE source = $1 AND id = $2",
        )
        .bind(source)
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| map_err("inbound event get", e))?;
        row.map(|r| rows::inbound_event(&Pg(&r))).transpose()
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
