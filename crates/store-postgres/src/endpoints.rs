//! Where jobs are sent, on PostgreSQL: webhook endpoints and HTTP call targets, their secrets
//! sealed at rest when the store has a sealer.

use crate::rows::Pg;
use crate::rows::{ENDPOINT_COLS, endpoint_from_row};
use crate::{PostgresStore, map_err};
use async_trait::async_trait;
use kairos_store::sealing::Sealer;
use kairos_store::sql::{TARGET_COLS, rows};
use kairos_store::*;
use sqlx::postgres::PgRow;

fn sql(template: &str) -> sqlx::AssertSqlSafe<String> {
    sqlx::AssertSqlSafe(template.replace("{endpoint_cols}", ENDPOINT_COLS))
}

fn target_from_row(row: &PgRow, sealer: Option<&Sealer>) -> Result<HttpTarget> {
    rows::http_target(&Pg(row), sealer)
}

impl PostgresStore {
    /// `e` with its secret opened (a plaintext one is kept as it is).
    fn open_endpoint(&self, mut e: Endpoint) -> Result<Endpoint> {
        e.secret = kairos_store::sealing::endpoint_secret_from_store(self.sealer(), e.secret)?;
        Ok(e)
    }
}
#[async_trait]
impl EndpointStore for PostgresStore {
    async fn endpoint_upsert(&self, p: EndpointUpsert) -> Result<Endpoint> {
        let (secret, hash) =
            kairos_store::sealing::endpoint_secret_to_store(self.sealer(), &p.url, &p.secret);
        // The no-op `DO UPDATE` (rather than DO NOTHING) makes RETURNING yield the existing
        // row. Sealed: found by the lookup hash (the sealed value differs every time).
        let q = if hash.is_some() {
            sqlx::query(sql(
                "INSERT INTO endpoints (id, url, secret, secret_hash, created_at)
                 VALUES ($1, $2, $3, $5, $4)
                 ON CONFLICT (secret_hash) WHERE secret_hash IS NOT NULL
                 DO UPDATE SET url = excluded.url
                 RETURNING {endpoint_cols}",
            ))
        } else {
            sqlx::query(sql(
                "INSERT INTO endpoints (id, url, secret, created_at) VALUES ($1, $2, $3, $4)
                 ON CONFLICT (url, secret) DO UPDATE SET url = excluded.url
                 RETURNING {endpoint_cols}",
            ))
        };
        let mut q = q.bind(&p.id).bind(&p.url).bind(&secret).bind(p.now);
        if let Some(h) = &hash {
            q = q.bind(h);
        }
        let row = q
            .fetch_one(&self.pool)
            .await
            .map_err(|e| map_err("endpoint upsert", e))?;
        self.open_endpoint(endpoint_from_row(&row)?)
    }

    async fn endpoint_get(&self, id: &str) -> Result<Option<Endpoint>> {
        let row = sqlx::query(sql("SELECT {endpoint_cols} FROM endpoints WHERE id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| map_err("endpoint get", e))?;
        row.as_ref()
            .map(|r| self.open_endpoint(endpoint_from_row(r)?))
            .transpose()
    }

    async fn endpoint_list(&self, p: EndpointList) -> Result<Vec<Endpoint>> {
        let rows = sqlx::query(sql("SELECT {endpoint_cols} FROM endpoints
             WHERE ($1::text IS NULL OR id > $1)
               AND ($2::boolean IS NULL OR (disabled_at IS NOT NULL) = $2)
             ORDER BY id LIMIT $3"))
        .bind(&p.after)
        .bind(p.disabled)
        .bind(p.limit.unwrap_or(100).max(0))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| map_err("endpoint list", e))?;
        rows.iter()
            .map(|r| self.open_endpoint(endpoint_from_row(r)?))
            .collect()
    }

    async fn endpoint_disable(&self, p: EndpointDisable) -> Result<()> {
        sqlx::query(
            "UPDATE endpoints SET disabled_at = $2, disabled_reason = $3 WHERE id = $1 AND disabled_at IS NULL",
        )
        .bind(&p.id)
        .bind(p.now)
        .bind(&p.reason)
        .execute(&self.pool)
        .await
        .map_err(|e| map_err("endpoint disable", e))?;
        Ok(())
    }

    async fn endpoint_enable(&self, p: EndpointEnable) -> Result<Option<Endpoint>> {
        let row = sqlx::query(sql(
            "UPDATE endpoints SET disabled_at = NULL, disabled_reason = NULL WHERE id = $1
             RETURNING {endpoint_cols}",
        ))
        .bind(&p.id)
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| map_err("endpoint enable", e))?;
        row.as_ref()
            .map(|r| self.open_endpoint(endpoint_from_row(r)?))
            .transpose()
    }

    async fn endpoint_failure_record(&self, p: EndpointFailureRecord) -> Result<()> {
        sqlx::query("UPDATE endpoints SET last_failure_at = $2, last_failure = $3 WHERE id = $1")
            .bind(&p.id)
            .bind(p.now)
            .bind(&p.error)
            .execute(&self.pool)
            .await
            .map_err(|e| map_err("endpoint failure record", e))?;
        Ok(())
    }

    async fn http_target_upsert(&self, p: HttpTargetUpsert) -> Result<HttpTarget> {
        let headers = kairos_store::sealing::http_headers_to_store(self.sealer(), &p.headers);
        let secret =
            kairos_store::sealing::http_secret_to_store(self.sealer(), p.secret.as_deref());
        // The no-op update makes RETURNING answer with the existing row on a conflict.
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO http_targets ({TARGET_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
             ON CONFLICT (fingerprint) DO UPDATE SET fingerprint = excluded.fingerprint
             RETURNING {TARGET_COLS}"
        )))
        .bind(&p.id)
        .bind(kairos_store::sealing::http_fingerprint_to_store(
            self.sealer(),
            &p.fingerprint,
        ))
        .bind(&p.url)
        .bind(&p.method)
        .bind(headers)
        .bind(&p.body)
        .bind(p.timeout_ms)
        .bind(p.auth.as_str())
        .bind(&secret)
        .bind(p.now)
        .fetch_one(&self.pool)
        .await
        .map_err(|e| map_err("http target upsert", e))?;
        target_from_row(&row, self.sealer())
    }

    async fn http_target_get(&self, id: &str) -> Result<Option<HttpTarget>> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {TARGET_COLS} FROM http_targets WHERE id = $1"
        )))
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| map_err("http target get", e))?;
        row.as_ref()
            .map(|r| target_from_row(r, self.sealer()))
            .transpose()
    }
}
