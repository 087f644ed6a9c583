//! Inbound provider events, the suppression cascade they (and `suppression_apply`) run, and
//! the erasure key the suppression statements hash addresses with, written once over
//! [`SqlRun`]. Pruning differs (row address and locking) and stays with each store.

use super::{SqlRun, rows};
use crate::binds;
use crate::{
    ERASURE_KEY, InboundEvent, InboundEventRecord, InboundEventRecorded, KeyCache, Result,
    SuppressionApplied, SuppressionApply, address_hash, normalize_address,
};

/// The erasure key, if one was created: from the store's cache, else from `kairos_keys`
/// (cached once found; it never changes).
pub async fn erasure_key(keys: &KeyCache, run: &mut impl SqlRun) -> Result<Option<Vec<u8>>> {
    if let Some(k) = keys.get() {
        return Ok(Some(k.to_vec()));
    }
    let key = run
        .fetch_optional(
            "reading the erasure key",
            "SELECT key FROM kairos_keys WHERE name = $1",
            binds![ERASURE_KEY],
            &|r| r.opt_bytes("key"),
        )
        .await?
        .flatten();
    Ok(key.map(|k| keys.set(k).to_vec()))
}

/// The keyed hash of `address` if an erasure key exists (else no address was ever erased).
pub async fn hash_of(
    keys: &KeyCache,
    run: &mut impl SqlRun,
    address: &str,
) -> Result<Option<String>> {
    Ok(erasure_key(keys, run)
        .await?
        .map(|k| address_hash(&k, address)))
}

/// Suppress one address and disable its subscriptions, on a transaction's connection (the
/// shared body of `suppression_apply` and `inbound_event_record`).
pub async fn suppression_apply(
    keys: &KeyCache,
    run: &mut impl SqlRun,
    p: &SuppressionApply,
) -> Result<SuppressionApplied> {
    let address = normalize_address(&p.address);
    // An erased address is suppressed already, as its keyed hash: no plain entry next to it.
    let erased = match hash_of(keys, run, &address).await? {
        Some(h) => run
            .fetch_optional(
                "suppression apply",
                "SELECT address_hash FROM suppressions WHERE address_hash = $1",
                binds![h],
                &|_| Ok(()),
            )
            .await?
            .is_some(),
        None => false,
    };
    let created = !erased
        && run
            .execute(
                "suppression apply",
                "INSERT INTO suppressions (address, reason, source_event_id, created_at)
                 VALUES ($1, $2, $3, $4) ON CONFLICT (address) DO NOTHING",
                binds![&address, &p.reason, p.source_event_id.clone(), p.now],
            )
            .await?
            > 0;
    if created {
        run.execute(
            "suppression log",
            "INSERT INTO suppression_log (address, action, reason, source_event_id, created_at)
             VALUES ($1, 'added', $2, $3, $4)",
            binds![&address, &p.reason, p.source_event_id.clone(), p.now],
        )
        .await?;
    }
    // The cascade: every subscription of every recipient with this address. SQLite's
    // lower() folds ASCII only, PostgreSQL's follows the database's locale; the expression
    // index of migration 0006 serves this lookup (PostgreSQL reads trim() as btrim()).
    let disabled = run
        .execute(
            "suppression cascade",
            "UPDATE subscriptions SET enabled = $3, updated_at = $2
             WHERE enabled = $4 AND recipient_id IN
                   (SELECT id FROM recipients WHERE lower(trim(email)) = $1)",
            binds![&address, p.now, false, true],
        )
        .await?;
    Ok(SuppressionApplied {
        created,
        subscriptions_disabled: disabled,
    })
}

/// Record an inbound event on a transaction's connection and run its suppressions. `None`
/// when the event was recorded before (the caller rolls back and reads it).
pub async fn event_record(
    keys: &KeyCache,
    run: &mut impl SqlRun,
    p: &InboundEventRecord,
) -> Result<Option<InboundEventRecorded>> {
    // First delivery iff the row is created. The job is the one whose attempt recorded the
    // provider's message id.
    let inserted = run
        .fetch_optional(
            "inbound event record",
            "INSERT INTO inbound_events
                 (source, id, type, provider_message_id, job_id, action, payload, received_at)
             VALUES ($1, $2, $3, $4,
                     (SELECT job_id FROM job_attempts
                      WHERE CAST($4 AS TEXT) IS NOT NULL AND provider_id = $4
                      ORDER BY id LIMIT 1),
                     $5, $6, $7)
             ON CONFLICT (source, id) DO NOTHING
             RETURNING job_id",
            binds![
                &p.source,
                &p.id,
                &p.event_type,
                p.provider_message_id.clone(),
                &p.action,
                p.payload.clone(),
                p.now,
            ],
            &|r| r.opt_text("job_id"),
        )
        .await?;
    let Some(job_id) = inserted else {
        return Ok(None);
    };
    if let Some(job) = &job_id {
        super::quarter_counts::topic_outcome_add(run, job, &p.event_type, &p.source, &p.id).await?;
    }
    let mut out = InboundEventRecorded {
        created: true,
        job_id,
        ..Default::default()
    };
    for address in &p.suppress {
        let a = suppression_apply(
            keys,
            run,
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
    Ok(Some(out))
}

/// `inbound_event_get`.
pub async fn event_get(
    run: &mut impl SqlRun,
    source: &str,
    id: &str,
) -> Result<Option<InboundEvent>> {
    run.fetch_optional(
        "inbound event get",
        "SELECT source, id, type, provider_message_id, job_id, action, payload, received_at
         FROM inbound_events WHERE source = $1 AND id = $2",
        binds![source, id],
        &|r| rows::inbound_event(r),
    )
    .await
}

#[async_trait::async_trait]
impl<D: super::SqlDb> crate::InboundStore for D {
    async fn inbound_event_record(&self, p: InboundEventRecord) -> Result<InboundEventRecorded> {
        let mut tx = self.begin("inbound event record").await?;
        let Some(out) = event_record(self.keys(), &mut D::in_tx(&mut tx), &p).await? else {
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
        self.commit(tx, "inbound event record").await?;
        Ok(out)
    }

    // On the writer: an event recorded a moment ago is seen (SQLite's read pool may lag).
    async fn inbound_event_get(&self, source: &str, id: &str) -> Result<Option<InboundEvent>> {
        event_get(&mut self.writer(), source, id).await
    }

    async fn exposure_outcome_count(
        &self,
        p: crate::ExposureOutcomeCount,
    ) -> Result<Vec<crate::MailOutcomeCount>> {
        super::deliverability::exposure_outcome_count(&mut self.reader(), p).await
    }

    async fn inbound_event_count(
        &self,
        p: crate::InboundEventCount,
    ) -> Result<Vec<crate::InboundEventTally>> {
        super::deliverability::inbound_event_count(&mut self.reader(), p).await
    }

    async fn inbound_event_prune(&self, p: crate::InboundEventPrune) -> Result<u64> {
        let mut run = self.writer();
        let sql = super::prune_sql(
            run.dialect(),
            "inbound_events",
            None,
            "received_at < $1",
            "received_at",
        );
        run.execute(
            "inbound event prune",
            &sql,
            binds![p.before, p.limit.max(0)],
        )
        .await
    }
}
