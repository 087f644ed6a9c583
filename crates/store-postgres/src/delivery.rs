//! Suppressions, audience expansions and exposures on PostgreSQL.

use crate::audience::expansion_from_row;
use crate::inbound::{apply_in_tx, suppression_from_row};
use crate::jobs::{INSERT_MANY, insert_json};
use crate::rows::Pg;
use crate::{PostgresStore, map_err};
use async_trait::async_trait;
use kairos_store::sql::rows;
use kairos_store::*;

#[async_trait]
impl DeliveryStore for PostgresStore {
    async fn suppression_add(&self, p: SuppressionAdd) -> Result<bool> {
        let mut conn = self
            .pool
            .acquire()
            .await
            .map_err(|e| map_err("suppression add", e))?;
        let address = normalize_address(&p.address);
        // An erased address is suppressed already, as its keyed hash.
        let hash = crate::erasure::hash_of(&self.keys, &mut conn, &address).await?;
        let n = sqlx::query(
            "INSERT INTO suppressions (address, reason, source_event_id, created_at)
             SELECT $1, $2, $3, $4
             WHERE $5::text IS NULL
                OR NOT EXISTS (SELECT 1 FROM suppressions WHERE address_hash = $5)
             ON CONFLICT (address) DO NOTHING",
        )
        .bind(&address)
        .bind(&p.reason)
        .bind(&p.source_event_id)
        .bind(p.now)
        .bind(&hash)
        .execute(&mut *conn)
        .await
        .map_err(|e| map_err("suppression add", e))?
        .rows_affected();
        Ok(n > 0)
    }

    async fn suppression_apply(&self, p: SuppressionApply) -> Result<SuppressionApplied> {
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(|e| map_err("suppression apply", e))?;
        let out = apply_in_tx(&self.keys, &mut tx, &p).await?;
        tx.commit()
            .await
            .map_err(|e| map_err("suppression apply", e))?;
        Ok(out)
    }

    /// The suppression of an address: stored as it is, or — erased — as its keyed hash.
    async fn suppression_get(&self, address: &str) -> Result<Option<Suppression>> {
        let mut conn = self
            .pool
            .acquire()
            .await
            .map_err(|e| map_err("suppression get", e))?;
        let address = normalize_address(address);
        let hash = crate::erasure::hash_of(&self.keys, &mut conn, &address).await?;
        let row = sqlx::query(
            "SELECT address, address_hash, reason, source_event_id, created_at FROM suppressions
             WHERE address = $1 OR ($2::text IS NOT NULL AND address_hash = $2)
             ORDER BY address_hash IS NULL DESC LIMIT 1",
        )
        .bind(&address)
        .bind(&hash)
        .fetch_optional(&mut *conn)
        .await
        .map_err(|e| map_err("suppression get", e))?;
        row.map(|r| rows::suppression(&Pg(&r))).transpose()
    }

    async fn suppression_list(&self, p: SuppressionList) -> Result<Vec<Suppression>> {
        let rows = sqlx::query(
            "SELECT address, address_hash, reason, source_event_id, created_at FROM suppressions
             WHERE ($1::text IS NULL OR address > $1) ORDER BY address LIMIT $2",
        )
        .bind(&p.after)
        .bind(p.limit.unwrap_or(100).clamp(1, 10_000))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| map_err("suppression list", e))?;
        rows.iter().map(suppression_from_row).collect()
    }

    async fn suppression_remove(&self, p: SuppressionRemove) -> Result<bool> {
        let address = normalize_address(&p.address);
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(|e| map_err("suppression remove", e))?;
        // The address, or its keyed hash if it was erased; the log records what was stored.
        let hash = crate::erasure::hash_of(&self.keys, &mut tx, &address).await?;
        let removed: Option<String> = sqlx::query_scalar(
            "DELETE FROM suppressions
             WHERE address = $1 OR ($2::text IS NOT NULL AND address_hash = $2)
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
                 VALUES ($1, 'removed', $2, $3)",
            )
            .bind(stored)
            .bind(&p.reason)
            .bind(p.now)
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
             VALUES ($1, $2, $3, $4) ON CONFLICT (schedule_id, period_key) DO NOTHING",
        )
        .bind(&p.schedule_id)
        .bind(&p.period_key)
        .bind(p.fire_at)
        .bind(p.now)
        .execute(&self.pool)
        .await
        .map_err(|e| map_err("expansion begin", e))?
        .rows_affected();
        Ok(n > 0)
    }

    async fn expansion_pending(&self, limit: i64) -> Result<Vec<Expansion>> {
        let rows = sqlx::query(
            "SELECT schedule_id, period_key, fire_at, cursor, done, created, updated_at
             FROM expansions WHERE NOT done ORDER BY updated_at, schedule_id LIMIT $1",
        )
        .bind(limit)
        .fetch_all(&self.pool)
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
             FROM expansions WHERE schedule_id = $1 AND period_key = $2",
        )
        .bind(schedule_id)
        .bind(period_key)
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| map_err("expansion get", e))?;
        row.as_ref().map(expansion_from_row).transpose()
    }

    async fn expansion_advance(&self, p: ExpansionAdvance) -> Result<Option<Vec<String>>> {
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(|e| map_err("expansion advance", e))?;
        // Differs from SQLite: the cursor row is moved first, which locks it, so a second
        // node expanding the same page waits and then finds the cursor moved (`IS NOT
        // DISTINCT FROM` is PostgreSQL's null-safe equality).
        let moved = sqlx::query(
            "UPDATE expansions SET cursor = $4, done = $5, updated_at = $6
             WHERE schedule_id = $1 AND period_key = $2 AND cursor IS NOT DISTINCT FROM $3 AND NOT done",
        )
        .bind(&p.schedule_id)
        .bind(&p.period_key)
        .bind(&p.expected_cursor)
        .bind(&p.cursor)
        .bind(p.done)
        .bind(p.now)
        .execute(&mut *tx)
        .await
        .map_err(|e| map_err("expansion advance", e))?
        .rows_affected();
        if moved == 0 {
            return Ok(None);
        }
        let created: Vec<String> = if p.jobs.is_empty() {
            vec![]
        } else {
            sqlx::query_scalar(INSERT_MANY)
                .bind(insert_json(&p.jobs))
                .fetch_all(&mut *tx)
                .await
                .map_err(|e| map_err("expansion advance (jobs)", e))?
        };
        sqlx::query(
            "UPDATE expansions SET created = created + $3 WHERE schedule_id = $1 AND period_key = $2",
        )
        .bind(&p.schedule_id)
        .bind(&p.period_key)
        .bind(created.len() as i64)
        .execute(&mut *tx)
        .await
        .map_err(|e| map_err("expansion advance", e))?;
        tx.commit()
            .await
            .map_err(|e| map_err("expansion advance", e))?;
        Ok(Some(created))
    }

    async fn exposure_counts(&self, topic: &str) -> Result<Vec<ExposureCount>> {
        let rows = sqlx::query(
            "SELECT variant, COUNT(*) AS n FROM exposures WHERE topic = $1 GROUP BY variant ORDER BY variant",
        )
        .bind(topic)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| map_err("exposure counts", e))?;
        rows.iter().map(|r| rows::exposure_count(&Pg(r))).collect()
    }
}
