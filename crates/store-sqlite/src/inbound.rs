//! Inbound events, the suppression cascade, the suppression list, the one-click unsubscribe
//! and settings on SQLite (seed 003: S3-9 … S3-13, S3-18).

use crate::{SqliteStore, map_err};
use kairos_core::clock::{from_millis, to_millis};
use kairos_store::*;
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, Sqlite, Transaction};

fn get<'r, T: sqlx::Decode<'r, Sqlite> + sqlx::Type<Sqlite>>(
    row: &'r SqliteRow,
    col: &str,
) -> Result<T> {
    row.try_get(col).map_err(|e| map_err(col, e))
}

fn suppression_from_row(r: &SqliteRow) -> Result<Suppression> {
    Ok(Suppression {
        address: get(r, "address")?,
        erased: get::<Option<String>>(r, "address_hash")?.is_some(),
        reason: get(r, "reason")?,
        source_event_id: get(r, "source_event_id")?,
        created_at: from_millis(get(r, "created_at")?),
    })
}

/// Suppress one address and disable its subscriptions inside `tx` (the shared body of
/// `suppression_apply` and `inbound_event_record`).
async fn apply_in_tx(
    keys: &KeyCache,
    tx: &mut Transaction<'_, Sqlite>,
    p: &SuppressionApply,
) -> Result<SuppressionApplied> {
    let address = normalize_address(&p.address);
    let now = to_millis(p.now);
    // An erased address is suppressed already, as its keyed hash: no plain entry next to it.
    let erased = match crate::erasure::hash_of(keys, tx, &address).await? {
        Some(h) => {
            sqlx::query_scalar::<_, i64>("SELECT 1 FROM suppressions WHERE address_hash = ?1")
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
         VALUES (?1, ?2, ?3, ?4) ON CONFLICT (address) DO NOTHING",
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
             VALUES (?1, 'added', ?2, ?3, ?4)",
        )
        .bind(&address)
        .bind(&p.reason)
        .bind(&p.source_event_id)
        .bind(now)
        .execute(&mut **tx)
        .await
        .map_err(|e| map_err("suppression log", e))?;
    }
    // The cascade (S3-12): every subscription of every recipient with this address. SQLite's
    // lower() folds ASCII only; the expression index of 0006 serves this lookup.
    let disabled = sqlx::query(
        "UPDATE subscriptions SET enabled = 0, updated_at = ?2
         WHERE enabled = 1 AND recipient_id IN
               (SELECT id FROM recipients WHERE lower(trim(email)) = ?1)",
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

impl SqliteStore {
    pub(crate) async fn inbound_event_record_impl(
        &self,
        p: InboundEventRecord,
    ) -> Result<InboundEventRecorded> {
        let mut tx = self.begin_write("inbound event record").await?;
        // First delivery iff the row is created (S3-11). The job is the one whose attempt
        // recorded the provider's message id.
        let inserted: Option<Option<String>> = sqlx::query_scalar(
            "INSERT INTO inbound_events
                 (source, id, type, provider_message_id, job_id, action, payload, received_at)
             VALUES (?1, ?2, ?3, ?4,
                     (SELECT job_id FROM job_attempts WHERE ?4 IS NOT NULL AND provider_id = ?4
                      ORDER BY id LIMIT 1),
                     ?5, ?6, ?7)
             ON CONFLICT (source, id) DO NOTHING
             RETURNING job_id",
        )
        .bind(&p.source)
        .bind(&p.id)
        .bind(&p.event_type)
        .bind(&p.provider_message_id)
        .bind(&p.action)
        .bind(p.payload.to_string())
        .bind(to_millis(p.now))
        .fetch_optional(&mut *tx)
        .await
        .map_err(|e| map_err("inbound event record", e))?;
        let Some(job_id) = inserted else {
            drop(tx);
            let job_id = self
                .inbound_event_get_impl(&p.source, &p.id)
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

    pub(crate) async fn inbound_event_get_impl(
        &self,
        source: &str,
        id: &str,
    ) -> Result<Option<InboundEvent>> {
        let row = sqlx::query(
            "SELECT source, id, type, provider_message_id, job_id, action, payload, received_at
             FROM inbound_events WHERE source = ?1 AND id = ?2",
        )
        .bind(source)
        .bind(id)
        .fetch_optional(&self.write)
        .await
        .map_err(|e| map_err("inbound event get", e))?;
        row.map(|r| {
            let payload: String = get(&r, "payload")?;
            Ok(InboundEvent {
                source: get(&r, "source")?,
                id: get(&r, "id")?,
                event_type: get(&r, "type")?,
                provider_message_id: get(&r, "provider_message_id")?,
                job_id: get(&r, "job_id")?,
                action: get(&r, "action")?,
                // Stored by us as JSON; a damaged value reads as its text, not an error.
                payload: serde_json::from_str(&payload)
                    .unwrap_or(serde_json::Value::String(payload)),
                received_at: from_millis(get(&r, "received_at")?),
            })
        })
        .transpose()
    }

    pub(crate) async fn suppression_apply_impl(
        &self,
        p: SuppressionApply,
    ) -> Result<SuppressionApplied> {
        let mut tx = self.begin_write("suppression apply").await?;
        let out = apply_in_tx(&self.keys, &mut tx, &p).await?;
        tx.commit()
            .await
            .map_err(|e| map_err("suppression apply", e))?;
        Ok(out)
    }

    pub(crate) async fn suppression_list_impl(
        &self,
        p: SuppressionList,
    ) -> Result<Vec<Suppression>> {
        let rows = sqlx::query(
            "SELECT address, address_hash, reason, source_event_id, created_at FROM suppressions
             WHERE (?1 IS NULL OR address > ?1) ORDER BY address LIMIT ?2",
        )
        .bind(&p.after)
        .bind(p.limit.unwrap_or(100).clamp(1, 10_000))
        .fetch_all(&self.read)
        .await
        .map_err(|e| map_err("suppression list", e))?;
        rows.iter().map(suppression_from_row).collect()
    }

    pub(crate) async fn suppression_remove_impl(&self, p: SuppressionRemove) -> Result<bool> {
        let address = normalize_address(&p.address);
        let mut tx = self.begin_write("suppression remove").await?;
        // The address, or its keyed hash if it was erased; the log records what was stored
        // (the hash for an erased address, which must not come back through the log).
        let hash = crate::erasure::hash_of(&self.keys, &mut tx, &address).await?;
        let removed: Option<String> = sqlx::query_scalar(
            "DELETE FROM suppressions WHERE address = ?1 OR (?2 IS NOT NULL AND address_hash = ?2)
             RETURNING address",
        )
        .bind(&address)
        .bind(&hash)
        .fetch_optional(&mut *tx)
        .await
        .map_err(|e| map_err("suppression remove", e))?;
        if let Some(stored) = &removed {
            sqlx::query(
                "INSERT INTO suppression_log (address, action, reason, created_at)
                 VALUES (?1, 'removed', ?2, ?3)",
            )
            .bind(stored)
            .bind(&p.reason)
            .bind(to_millis(p.now))
            .execute(&mut *tx)
            .await
            .map_err(|e| map_err("suppression log", e))?;
        }
        tx.commit()
            .await
            .map_err(|e| map_err("suppression remove", e))?;
        Ok(removed.is_some())
    }

    pub(crate) async fn subscription_disable_impl(&self, p: SubscriptionDisable) -> Result<bool> {
        let n = sqlx::query(
            "UPDATE subscriptions SET enabled = 0, updated_at = ?3
             WHERE recipient_id = ?1 AND topic = ?2 AND enabled = 1",
        )
        .bind(&p.recipient_id)
        .bind(&p.topic)
        .bind(to_millis(p.now))
        .execute(&self.write)
        .await
        .map_err(|e| map_err("subscription disable", e))?
        .rows_affected();
        Ok(n > 0)
    }

    pub(crate) async fn setting_get_impl(&self, name: &str) -> Result<Option<Setting>> {
        let row = sqlx::query("SELECT name, value, updated_at FROM settings WHERE name = ?1")
            .bind(name)
            .fetch_optional(&self.read)
            .await
            .map_err(|e| map_err("setting get", e))?;
        row.map(|r| {
            Ok(Setting {
                name: get(&r, "name")?,
                value: get(&r, "value")?,
                updated_at: from_millis(get(&r, "updated_at")?),
            })
        })
        .transpose()
    }

    pub(crate) async fn setting_put_impl(&self, p: SettingPut) -> Result<()> {
        let q = match &p.value {
            Some(v) => sqlx::query(
                "INSERT INTO settings (name, value, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
            )
            .bind(&p.name)
            .bind(v)
            .bind(to_millis(p.now)),
            None => sqlx::query("DELETE FROM settings WHERE name = ?1").bind(&p.name),
        };
        q.execute(&self.write)
            .await
            .map_err(|e| map_err("setting put", e))?;
        Ok(())
    }
}

impl SqliteStore {
    pub(crate) async fn inbound_event_prune_impl(&self, p: InboundEventPrune) -> Result<u64> {
        let done = sqlx::query(
            "DELETE FROM inbound_events WHERE rowid IN (
                 SELECT rowid FROM inbound_events WHERE received_at < ?1
                 ORDER BY received_at LIMIT ?2)",
        )
        .bind(to_millis(p.before))
        .bind(p.limit.max(0))
        .execute(&self.write)
        .await
        .map_err(|e| map_err("inbound event prune", e))?;
        Ok(done.rows_affected())
    }
}
