//! Suppressions, audience expansions and exposures on PostgreSQL.

use crate::inbound::apply_in_tx;
use crate::jobs::{INSERT_MANY, insert_json};
use crate::rows::PgRun;
use crate::{PostgresStore, map_err};
use async_trait::async_trait;
use kairos_store::sql::delivery;
use kairos_store::*;

#[async_trait]
impl DeliveryStore for PostgresStore {
    async fn suppression_add(&self, p: SuppressionAdd) -> Result<bool> {
        let mut conn = self
            .pool
            .acquire()
            .await
            .map_err(|e| map_err("suppression add", e))?;
        delivery::suppression_add(&self.keys, &mut PgRun::Conn(&mut conn), p).await
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
        delivery::suppression_get(&self.keys, &mut PgRun::Conn(&mut conn), address).await
    }

    async fn suppression_list(&self, p: SuppressionList) -> Result<Vec<Suppression>> {
        delivery::suppression_list(&mut PgRun::Pool(&self.pool), p).await
    }

    async fn suppression_remove(&self, p: SuppressionRemove) -> Result<bool> {
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(|e| map_err("suppression remove", e))?;
        let removed =
            delivery::suppression_remove(&self.keys, &mut PgRun::Conn(&mut tx), p).await?;
        tx.commit()
            .await
            .map_err(|e| map_err("suppression remove", e))?;
        Ok(removed)
    }

    async fn expansion_begin(&self, p: ExpansionBegin) -> Result<bool> {
        delivery::expansion_begin(&mut PgRun::Pool(&self.pool), p).await
    }

    async fn expansion_pending(&self, limit: i64) -> Result<Vec<Expansion>> {
        delivery::expansion_pending(&mut PgRun::Pool(&self.pool), limit).await
    }

    async fn expansion_get(
        &self,
        schedule_id: &str,
        period_key: &str,
    ) -> Result<Option<Expansion>> {
        delivery::expansion_get(&mut PgRun::Pool(&self.pool), schedule_id, period_key).await
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
        delivery::exposure_counts(&mut PgRun::Pool(&self.pool), topic).await
    }
}
