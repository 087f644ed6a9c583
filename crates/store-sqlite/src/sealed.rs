//! Secrets at rest on SQLite: the store's sealer, and the start-up pass that seals endpoint
//! secrets stored in plaintext before sealing existed.

use crate::{SqliteStore, map_err};
use kairos_core::clock::to_millis;
use kairos_store::sealing::{ENDPOINT_SECRET_AAD, Sealer};
use kairos_store::{Result, SettingPut};
use sqlx::Row;
use std::sync::Arc;

/// Rows sealed per statement batch of the start-up pass.
const BATCH: i64 = 500;

impl SqliteStore {
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
    /// Returns how many were sealed. Without a sealer it does nothing. After sealing, the WAL
    /// is checkpointed and truncated, and `secure_delete` (set on every connection) has
    /// zeroed the replaced values, so no plaintext copy stays in the files.
    pub async fn seal_existing_secrets(&self) -> Result<u64> {
        let Some(sealer) = self.sealer.clone() else {
            return Ok(0);
        };
        let mut sealed = self.seal_existing_http_targets(&sealer).await?;
        loop {
            let rows = sqlx::query(
                "SELECT id, url, secret FROM endpoints WHERE secret_hash IS NULL LIMIT ?1",
            )
            .bind(BATCH)
            .fetch_all(&self.write)
            .await
            .map_err(|e| map_err("reading plaintext endpoint secrets", e))?;
            if rows.is_empty() {
                if sealed > 0 {
                    // Copy every frame into the database file and empty the WAL, so the
                    // plaintext's old frames do not stay behind in it.
                    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
                        .execute(&self.write)
                        .await
                        .map_err(|e| map_err("checkpointing after sealing", e))?;
                }
                return Ok(sealed);
            }
            let mut tx = self.begin_write("sealing endpoint secrets").await?;
            for row in &rows {
                let get = |c: &str| {
                    row.try_get::<String, _>(c)
                        .map_err(|e| map_err("reading plaintext endpoint secrets", e))
                };
                let (id, url, secret) = (get("id")?, get("url")?, get("secret")?);
                let plain = if Sealer::is_sealed(&secret) {
                    kairos_store::sealing::endpoint_secret_from_store(Some(&sealer), secret)?
                } else {
                    secret
                };
                sqlx::query(
                    "UPDATE endpoints SET secret = ?2, secret_hash = ?3
                     WHERE id = ?1 AND secret_hash IS NULL",
                )
                .bind(&id)
                .bind(sealer.seal(&plain, ENDPOINT_SECRET_AAD))
                .bind(sealer.lookup_hash(&[&url, &plain]))
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
        let mut tx = self.begin_write("re-sealing secrets").await?;
        let rows = sqlx::query("SELECT id, url, secret FROM endpoints")
            .fetch_all(&mut *tx)
            .await
            .map_err(|e| map_err("reading endpoint secrets", e))?;
        for row in &rows {
            let get = |c: &str| {
                row.try_get::<String, _>(c)
                    .map_err(|e| map_err("reading endpoint secrets", e))
            };
            let (id, url) = (get("id")?, get("url")?);
            let plain =
                kairos_store::sealing::endpoint_secret_from_store(self.sealer(), get("secret")?)?;
            sqlx::query("UPDATE endpoints SET secret = ?2, secret_hash = ?3 WHERE id = ?1")
                .bind(&id)
                .bind(new.seal(&plain, ENDPOINT_SECRET_AAD))
                .bind(new.lookup_hash(&[&url, &plain]))
                .execute(&mut *tx)
                .await
                .map_err(|e| map_err("re-sealing an endpoint secret", e))?;
        }
        let targets = sqlx::query("SELECT id, headers, secret FROM http_targets")
            .fetch_all(&mut *tx)
            .await
            .map_err(|e| map_err("reading http targets", e))?;
        for row in &targets {
            let get = |c: &str| {
                row.try_get::<String, _>(c)
                    .map_err(|e| map_err("reading http targets", e))
            };
            let id = get("id")?;
            let headers: serde_json::Value =
                serde_json::from_str(&get("headers")?).map_err(|e| {
                    kairos_store::Error::new(
                        kairos_store::ErrorKind::Corrupt,
                        "http_targets.headers",
                    )
                    .with_source(e)
                })?;
            let headers = kairos_store::sealing::http_headers_from_store(self.sealer(), headers)?;
            let secret: Option<String> = row
                .try_get("secret")
                .map_err(|e| map_err("reading http targets", e))?;
            let secret = kairos_store::sealing::http_secret_from_store(self.sealer(), secret)?;
            // The keyed fingerprint cannot be recomputed under the new key: the row gets a
            // unique one, so a new identical definition is stored as a new row.
            sqlx::query(
                "UPDATE http_targets SET headers = ?2, secret = ?3, fingerprint = ?4 WHERE id = ?1",
            )
            .bind(&id)
            .bind(kairos_store::sealing::http_headers_to_store(Some(new), &headers).to_string())
            .bind(kairos_store::sealing::http_secret_to_store(
                Some(new),
                secret.as_deref(),
            ))
            .bind(format!("rotated:{id}"))
            .execute(&mut *tx)
            .await
            .map_err(|e| map_err("re-sealing an http target", e))?;
        }
        sqlx::query(
            "INSERT INTO settings (name, value, updated_at) VALUES (?1, ?2, ?3)
             ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        )
        .bind(&setting.name)
        .bind(setting.value.unwrap_or_default())
        .bind(to_millis(setting.now))
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
                "SELECT id, fingerprint, headers, secret FROM http_targets WHERE headers NOT LIKE '\"kairos:v1:%' LIMIT ?1",
            )
            .bind(BATCH)
            .fetch_all(&self.write)
            .await
            .map_err(|e| map_err("reading plaintext http targets", e))?;
            if rows.is_empty() {
                return Ok(sealed);
            }
            let mut tx = self.begin_write("sealing http targets").await?;
            for row in &rows {
                let get_s = |c: &str| {
                    row.try_get::<String, _>(c)
                        .map_err(|e| map_err("reading plaintext http targets", e))
                };
                let headers: serde_json::Value =
                    serde_json::from_str(&get_s("headers")?).map_err(|e| {
                        kairos_store::Error::new(
                            kairos_store::ErrorKind::Corrupt,
                            "http_targets.headers",
                        )
                        .with_source(e)
                    })?;
                let headers =
                    kairos_store::sealing::http_headers_from_store(Some(sealer), headers)?;
                let secret: Option<String> = row
                    .try_get("secret")
                    .map_err(|e| map_err("reading plaintext http targets", e))?;
                let secret = kairos_store::sealing::http_secret_from_store(Some(sealer), secret)?;
                let fingerprint = get_s("fingerprint")?;
                let fingerprint = if fingerprint.starts_with("hmac:") {
                    fingerprint
                } else {
                    kairos_store::sealing::http_fingerprint_to_store(Some(sealer), &fingerprint)
                };
                sqlx::query(
                    "UPDATE http_targets SET headers = ?2, secret = ?3, fingerprint = ?4 WHERE id = ?1",
                )
                .bind(get_s("id")?)
                .bind(kairos_store::sealing::http_headers_to_store(Some(sealer), &headers).to_string())
                .bind(kairos_store::sealing::http_secret_to_store(Some(sealer), secret.as_deref()))
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
