//! Suppressions, audience expansions and exposures on SQLite.

use crate::inbound::apply_in_tx;
use crate::jobs::{INSERT_MANY, insert_json};
use crate::rows::SqRun;
use crate::{SqliteStore, map_err};
use async_trait::async_trait;
use kairos_core::clock::to_millis;
use kairos_store::sql::delivery;
use kairos_store::*;

#[async_trait]
impl DeliveryStore for SqliteStore {
    async fn suppression_add(&self, p: SuppressionAdd) -> Result<bool> {
        let mut conn = self
            .write
            .acquire()
            .await
            .map_err(|e| map_err("suppression add", e))?;
        delivery::suppression_add(&self.keys, &mut SqRun::Conn(&mut conn), p).await
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
        delivery::suppression_get(&self.keys, &mut SqRun::Conn(&mut conn), address).await
    }

    async fn suppression_list(&self, p: SuppressionList) -> Result<Vec<Suppression>> {
        delivery::suppression_list(&mut SqRun::Pool(&self.read), p).await
    }

    async fn suppression_remove(&self, p: SuppressionRemove) -> Result<bool> {
        let mut tx = self.begin_write("suppression remove").await?;
        let removed =
            delivery::suppression_remove(&self.keys, &mut SqRun::Conn(&mut tx), p).await?;
        tx.commit()
            .await
            .map_err(|e| map_err("suppression remove", e))?;
        Ok(removed)
    }

    async fn expansion_begin(&self, p: ExpansionBegin) -> Result<bool> {
        delivery::expansion_begin(&mut SqRun::Pool(&self.write), p).await
    }

    async fn expansion_pending(&self, limit: i64) -> Result<Vec<Expansion>> {
        delivery::expansion_pending(&mut SqRun::Pool(&self.read), limit).await
    }

    async fn expansion_get(
        &self,
        schedule_id: &str,
        period_key: &str,
    ) -> Result<Option<Expansion>> {
        delivery::expansion_get(&mut SqRun::Pool(&self.write), schedule_id, period_key).await
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
        delivery::exposure_counts(&mut SqRun::Pool(&self.read), topic).await
    }
}
