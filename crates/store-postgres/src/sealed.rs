//! Secrets at rest on PostgreSQL: the store's sealer, and the start-up pass that seals endpoint
//! secrets stored in plaintext before sealing existed.

use crate::rows::Pg;
use crate::{PostgresStore, map_err};
use kairos_store::sealing::Sealer;
use kairos_store::sql::RowRead;
use kairos_store::sql::secrets::{self, EndpointSealed, HttpTargetSealed, http_fingerprint_sealed};
use kairos_store::{Result, SettingPut};
use std::sync::Arc;

/// Rows sealed per statement batch of the start-up pass.
const BATCH: i64 = 500;

impl PostgresStore {
    /// Seal stored secrets (webhook endpoint secrets) under `sealer` from now on, and open
    /// them with it.
    pub fn with_sealer(mut self, sealer: Arc<Sealer>) -> Self {
        self.sealer = Some(sealer);
        self
    }

    pub(crate) fn sealer(&self) -> Option<&Sealer> {
        self.sealer.as_deref()
    }

    /// Seal every endpoint secret still stored in plaintext (`secret_hash` NULL) and store
    /// its lookup hash: batches of 500 until none is left; running it again changes nothing.
    /// Returns how many were sealed. Without a sealer it does nothing.
    pub async fn seal_existing_secrets(&self) -> Result<u64> {
        let Some(sealer) = self.sealer.clone() else {
            return Ok(0);
        };
        let mut sealed = self.seal_existing_http_targets(&sealer).await?;
        loop {
            let rows = sqlx::query(secrets::ENDPOINTS_UNSEALED)
                .bind(BATCH)
                .fetch_all(&self.pool)
                .await
                .map_err(|e| map_err("reading plaintext endpoint secrets", e))?;
            if rows.is_empty() {
                return Ok(sealed);
            }
            let mut tx = self
                .pool
                .begin()
                .await
                .map_err(|e| map_err("sealing endpoint secrets", e))?;
            for row in &rows {
                let e = EndpointSealed::from_row(&Pg(row), Some(&sealer), &sealer)?;
                sqlx::query(secrets::ENDPOINT_SEAL)
                    .bind(&e.id)
                    .bind(e.secret)
                    .bind(e.secret_hash)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| map_err("sealing an endpoint secret", e))?;
                sealed += 1;
            }
            tx.commit()
                .await
                .map_err(|e| map_err("sealing endpoint secrets", e))?;
        }
    }

    /// Key rotation: in one transaction, re-seal every endpoint secret under `new` (opening
    /// it with the current sealer; a plaintext one is sealed too), recompute its lookup hash,
    /// and write `setting` (the new key's check value). Returns how many were re-sealed.
    pub async fn reseal_secrets(&self, new: &Sealer, setting: SettingPut) -> Result<u64> {
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(|e| map_err("re-sealing secrets", e))?;
        let rows = sqlx::query(secrets::ENDPOINTS_ALL_SECRETS)
            .fetch_all(&mut *tx)
            .await
            .map_err(|e| map_err("reading endpoint secrets", e))?;
        for row in &rows {
            let e = EndpointSealed::from_row(&Pg(row), self.sealer(), new)?;
            sqlx::query(secrets::ENDPOINT_RESEAL)
                .bind(&e.id)
                .bind(e.secret)
                .bind(e.secret_hash)
                .execute(&mut *tx)
                .await
                .map_err(|e| map_err("re-sealing an endpoint secret", e))?;
        }
        let targets = sqlx::query(secrets::HTTP_TARGETS_ALL_SECRETS)
            .fetch_all(&mut *tx)
            .await
            .map_err(|e| map_err("reading http targets", e))?;
        for row in &targets {
            let t = HttpTargetSealed::from_row(&Pg(row), self.sealer(), new)?;
            // The keyed fingerprint cannot be recomputed under the new key: the row gets a
            // unique one, so a new identical definition is stored as a new row.
            sqlx::query(secrets::HTTP_TARGET_SEAL)
                .bind(&t.id)
                .bind(t.headers)
                .bind(t.secret)
                .bind(format!("rotated:{}", t.id))
                .execute(&mut *tx)
                .await
                .map_err(|e| map_err("re-sealing an http target", e))?;
        }
        sqlx::query(secrets::SETTING_UPSERT)
            .bind(&setting.name)
            .bind(setting.value.unwrap_or_default())
            .bind(setting.now)
            .execute(&mut *tx)
            .await
            .map_err(|e| map_err("storing the new key's check value", e))?;
        tx.commit()
            .await
            .map_err(|e| map_err("re-sealing secrets", e))?;
        Ok((rows.len() + targets.len()) as u64)
    }

    /// The http-target part of [`Self::seal_existing_secrets`]: headers and secret sealed,
    /// fingerprint replaced by its keyed hash, for every row whose headers are not sealed yet.
    async fn seal_existing_http_targets(&self, sealer: &Sealer) -> Result<u64> {
        let mut sealed = 0u64;
        loop {
            let rows = sqlx::query(
                "SELECT id, fingerprint, headers, secret FROM http_targets WHERE jsonb_typeof(headers) <> 'string' LIMIT $1",
            )
            .bind(BATCH)
            .fetch_all(&self.pool)
            .await
            .map_err(|e| map_err("reading plaintext http targets", e))?;
            if rows.is_empty() {
                return Ok(sealed);
            }
            let mut tx = self
                .pool
                .begin()
                .await
                .map_err(|e| map_err("sealing http targets", e))?;
            for row in &rows {
                let t = HttpTargetSealed::from_row(&Pg(row), Some(sealer), sealer)?;
                let fingerprint = http_fingerprint_sealed(sealer, Pg(row).text("fingerprint")?);
                sqlx::query(secrets::HTTP_TARGET_SEAL)
                    .bind(&t.id)
                    .bind(t.headers)
                    .bind(t.secret)
                    .bind(fingerprint)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| map_err("sealing an http target", e))?;
                sealed += 1;
            }
            tx.commit()
                .await
                .map_err(|e| map_err("sealing http targets", e))?;
        }
    }
}
