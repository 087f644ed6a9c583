//! Suppressions, audience expansions and exposures on SQLite.

use crate::audience::expansion_from_row;
use crate::inbound::{apply_in_tx, suppression_from_row};
use crate::jobs::{INSERT_MANY, insert_json};
use crate::rows::Sq;
use crate::{SqliteStore, map_err};
use async_trait::async_trait;
use kairos_core::clock::to_millis;
use kairos_store::sql::rows;
use kairos_store::*;

#[async_trait]
impl DeliveryStore for SqliteStore {
    async fn suppression_add(&self, p: SuppressionAdd) -> Result<bool> {
        let mut conn = self
            .write
            .acquire()
            .await
            .map_err(|e| map_err("suppression add", e))?;
        let address = normalize_address(&p.address);
        // An erased address is suppressed already, as its keyed hash.
        let hash = crate::erasure::hash_of(&self.keys, &mut conn, &address).await?;
        let n = sqlx::query(
            "INSERT INTO suppressions (address, reason, source_event_id, created_at)
             SELECT ?1, ?2, ?3, ?4
             WHERE ?5 IS NULL OR NOT EXISTS (SELECT 1 FROM suppressions WHERE address_hash = ?5)
             ON CONFLICT (address) DO NOTHING",
        )
        .bind(&address)
        .bind(&p.reason)
        .bind(&p.source_event_id)
        .bind(to_millis(p.now))
        .bind(&hash)
        .execute(&mut *conn)
        .await
        .map_err(|e| map_err("suppression add", e))?
        .rows_affected();
        Ok(n > 0)
    }

    async fn suppression_apply(&self, p: SuppressionApply) -> Result<SuppressionApplied> {
        let mut tx = self.begin_write("suppression apply").await?;
        let out = apply_in_tx(&self.keys, &mut tx, &p).await?;
        tx.commit()
            .await
            .map_err(|e| map_err("suppression apply", e))?;
        Ok(out)
    }

    /// The suppression of an address: stored as it is, or — erased — as its keyed hash.
    async fn suppression_get(&self, address: &str) -> Result<Option<Suppression>> {
        let mut conn = self
            .read
            .acquire()
            .await
            .map_err(|e| map_err("suppression get", e))?;
        let address = normalize_address(address);
        let hash = crate::erasure::hash_of(&self.keys, &mut conn, &address).await?;
        let row = sqlx::query(
            "SELECT address, address_hash, reason, source_event_id, created_at FROM suppressions
             WHERE address = ?1 OR (?2 IS NOT NULL AND address_hash = ?2)
             ORDER BY address_hash IS NULL DESC LIMIT 1",
        )
        .bind(&address)
        .bind(&hash)
        .fetch_optional(&mut *conn)
        .await
        .map_err(|e| map_err("suppression get", e))?;
        row.map(|r| rows::suppression(&Sq(&r))).transpose()
    }

    async fn suppression_list(&self, p: SuppressionList) -> Result<Vec<Suppression>> {
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

    async fn suppression_remove(&self, p: SuppressionRemove) -> Result<bool> {
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

    async fn expansion_begin(&self, p: ExpansionBegin) -> Result<bool> {
        let n = sqlx::query(
            "INSERT INTO expansions (schedule_id, period_key, fire_at, updated_at)
             VALUES (?1, ?2, ?3, ?4) ON CONFLICT (schedule_id, period_key) DO NOTHING",
        )
        .bind(&p.schedule_id)
        .bind(&p.period_key)
        .bind(to_millis(p.fire_at))
        .bind(to_millis(p.now))
        .execute(&self.write)
        .await
        .map_err(|e| map_err("expansion begin", e))?
        .rows_affected();
        Ok(n > 0)
    }

    async fn expansion_pending(&self, limit: i64) -> Result<Vec<Expansion>> {
        let rows = sqlx::query(
            "SELECT schedule_id, period_key, fire_at, cursor, done, created, updated_at
             FROM expansions WHERE done = 0 ORDER BY updated_at, schedule_id LIMIT ?1",
        )
        .bind(limit)
        .fetch_all(&self.read)
        .await
        .map_err(|e| map_err("expansion pending", e))?;
        rows.iter().map(expansion_from_row).collect()
    }

    async fn expansion_get(
        &self,
        schedule_id: &str,
        period_key: &str,
    ) -> Result<Option<Expansion>> {
        let row = sqlx::query(
            "SELECT schedule_id, period_key, fire_at, cursor, done, created, updated_at
             FROM expansions WHERE schedule_id = ?1 AND period_key = ?2",
        )
        .bind(schedule_id)
        .bind(period_key)
        .fetch_optional(&self.write)
        .await
        .map_err(|e| map_err("expansion get", e))?;
        row.as_ref().map(expansion_from_row).transpose()
    }

    async fn expansion_advance(&self, p: ExpansionAdvance) -> Result<Option<Vec<String>>> {
        let mut tx = self.begin_write("expansion advance").await?;
        let created: Vec<String> = if p.jobs.is_empty() {
            vec![]
        } else {
            sqlx::query_scalar(INSERT_MANY)
                .bind(insert_json(&p.jobs).to_string())
                .fetch_all(&mut *tx)
                .await
                .map_err(|e| map_err("expansion advance (jobs)", e))?
        };
        // `IS` is SQLite's null-safe equality (PostgreSQL: IS NOT DISTINCT FROM).
        let moved = sqlx::query(
            "UPDATE expansions SET cursor = ?4, done = ?5, created = created + ?6, updated_at = ?7
             WHERE schedule_id = ?1 AND period_key = ?2 AND cursor IS ?3 AND done = 0",
        )
        .bind(&p.schedule_id)
        .bind(&p.period_key)
        .bind(&p.expected_cursor)
        .bind(&p.cursor)
        .bind(i64::from(p.done))
        .bind(created.len() as i64)
        .bind(to_millis(p.now))
        .execute(&mut *tx)
        .await
        .map_err(|e| map_err("expansion advance", e))?
        .rows_affected();
        if moved == 0 {
            // Another node took this page: roll back (our inserts would be duplicates anyway).
            return Ok(None);
        }
        tx.commit()
            .await
            .map_err(|e| map_err("expansion advance", e))?;
        Ok(Some(created))
    }

    async fn exposure_counts(&self, topic: &str) -> Result<Vec<ExposureCount>> {
        let rows = sqlx::query(
            "SELECT variant, COUNT(*) AS n FROM exposures WHERE topic = ?1 GROUP BY variant ORDER BY variant",
        )
        .bind(topic)
        .fetch_all(&self.read)
        .await
        .map_err(|e| map_err("exposure counts", e))?;
        rows.iter().map(|r| rows::exposure_count(&Sq(r))).collect()
    }
}
