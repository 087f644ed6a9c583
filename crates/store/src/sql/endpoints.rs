//! Webhook endpoints and HTTP call targets: the statements both stores run as they are,
//! written once over [`SqlRun`]. Secrets are sealed on the way in and opened on the way out
//! with the store's sealer.

use super::{ENDPOINT_COLS, SqlRun, TARGET_COLS, rows};
use crate::binds;
use crate::sealing::{self, Sealer};
use crate::{
    Endpoint, EndpointDisable, EndpointEnable, EndpointFailureRecord, EndpointList, HttpTarget,
    HttpTargetUpsert, Result,
};

/// `e` with its URL and secrets opened (plaintext ones are kept as they are).
pub(crate) fn opened(sealer: Option<&Sealer>, mut e: Endpoint) -> Result<Endpoint> {
    e.url = sealing::url_from_store(sealer, e.url, sealing::ENDPOINT_URL_AAD)?;
    e.secret = sealing::endpoint_secret_from_store(sealer, e.secret)?;
    e.previous_secret = e
        .previous_secret
        .map(|s| sealing::endpoint_secret_from_store(sealer, s))
        .transpose()?;
    Ok(e)
}

/// `endpoint_upsert`.
pub async fn endpoint_upsert(
    run: &mut impl SqlRun,
    sealer: Option<&Sealer>,
    p: crate::EndpointUpsert,
) -> Result<Endpoint> {
    let (secret, hash) = sealing::endpoint_secret_to_store(sealer, &p.url, &p.secret);
    // The no-op `DO UPDATE` (rather than DO NOTHING) makes RETURNING yield the existing
    // row. Sealed: found by the lookup hash (the sealed value differs every time).
    let url = sealing::url_to_store(sealer, &p.url, sealing::ENDPOINT_URL_AAD);
    let mut b = binds![p.id, url, secret, p.now];
    let sql = if let Some(h) = hash {
        b.push(h.into());
        format!(
            "INSERT INTO endpoints (id, url, secret, secret_hash, created_at)
             VALUES ($1, $2, $3, $5, $4)
             ON CONFLICT (secret_hash) WHERE secret_hash IS NOT NULL
             DO UPDATE SET url = excluded.url
             RETURNING {ENDPOINT_COLS}"
        )
    } else {
        format!(
            "INSERT INTO endpoints (id, url, secret, created_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (url, secret) DO UPDATE SET url = excluded.url
             RETURNING {ENDPOINT_COLS}"
        )
    };
    let e = run
        .fetch_one("endpoint upsert", &sql, b, &|r| rows::endpoint(r))
        .await?;
    opened(sealer, e)
}

/// `endpoint_get`.
pub async fn endpoint_get(
    run: &mut impl SqlRun,
    sealer: Option<&Sealer>,
    id: &str,
) -> Result<Option<Endpoint>> {
    run.fetch_optional(
        "endpoint get",
        &format!("SELECT {ENDPOINT_COLS} FROM endpoints WHERE id = $1"),
        binds![id],
        &|r| rows::endpoint(r),
    )
    .await?
    .map(|e| opened(sealer, e))
    .transpose()
}

/// `endpoint_list`.
pub async fn endpoint_list(
    run: &mut impl SqlRun,
    sealer: Option<&Sealer>,
    p: EndpointList,
) -> Result<Vec<Endpoint>> {
    // The casts give the optional filters a type on PostgreSQL.
    run.fetch(
        "endpoint list",
        &format!(
            "SELECT {ENDPOINT_COLS} FROM endpoints
             WHERE (CAST($1 AS TEXT) IS NULL OR id > $1)
               AND (CAST($2 AS BOOLEAN) IS NULL OR (disabled_at IS NOT NULL) = $2)
             ORDER BY id LIMIT $3"
        ),
        binds![p.after, p.disabled, p.limit.unwrap_or(100).max(0)],
        &|r| rows::endpoint(r),
    )
    .await?
    .into_iter()
    .map(|e| opened(sealer, e))
    .collect()
}

/// `endpoint_disable`.
pub async fn endpoint_disable(run: &mut impl SqlRun, p: EndpointDisable) -> Result<()> {
    run.execute(
        "endpoint disable",
        "UPDATE endpoints SET disabled_at = $2, disabled_reason = $3 WHERE id = $1 AND disabled_at IS NULL",
        binds![p.id, p.now, p.reason],
    )
    .await?;
    Ok(())
}

/// `endpoint_enable`.
pub async fn endpoint_enable(
    run: &mut impl SqlRun,
    sealer: Option<&Sealer>,
    p: EndpointEnable,
) -> Result<Option<Endpoint>> {
    run.fetch_optional(
        "endpoint enable",
        &format!(
            "UPDATE endpoints SET disabled_at = NULL, disabled_reason = NULL,
                 consecutive_failures = CASE WHEN disabled_at IS NULL THEN consecutive_failures ELSE 0 END,
                 failing_since = CASE WHEN disabled_at IS NULL THEN failing_since ELSE NULL END
             WHERE id = $1
             RETURNING {ENDPOINT_COLS}"
        ),
        binds![p.id],
        &|r| rows::endpoint(r),
    )
    .await?
    .map(|e| opened(sealer, e))
    .transpose()
}

/// `endpoint_failure_record`.
pub async fn endpoint_failure_record(
    run: &mut impl SqlRun,
    p: EndpointFailureRecord,
) -> Result<()> {
    run.execute(
        "endpoint failure record",
        "UPDATE endpoints SET last_failure_at = $2, last_failure = $3 WHERE id = $1",
        binds![p.id, p.now, p.error],
    )
    .await?;
    Ok(())
}

/// `http_target_upsert`.
pub async fn http_target_upsert(
    run: &mut impl SqlRun,
    sealer: Option<&Sealer>,
    p: HttpTargetUpsert,
) -> Result<HttpTarget> {
    // The no-op update makes RETURNING answer with the existing row on a conflict.
    run.fetch_one(
        "http target upsert",
        &format!(
            "INSERT INTO http_targets ({TARGET_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
             ON CONFLICT (fingerprint) DO UPDATE SET fingerprint = excluded.fingerprint
             RETURNING {TARGET_COLS}"
        ),
        binds![
            p.id,
            sealing::http_fingerprint_to_store(sealer, &p.fingerprint),
            sealing::url_to_store(sealer, &p.url, sealing::HTTP_URL_AAD),
            p.method,
            sealing::http_headers_to_store(sealer, &p.headers),
            p.body,
            p.timeout_ms,
            p.auth.as_str(),
            sealing::http_secret_to_store(sealer, p.secret.as_deref()),
            p.now,
        ],
        &|r| rows::http_target(r, sealer),
    )
    .await
}

/// `http_target_get`.
pub async fn http_target_get(
    run: &mut impl SqlRun,
    sealer: Option<&Sealer>,
    id: &str,
) -> Result<Option<HttpTarget>> {
    run.fetch_optional(
        "http target get",
        &format!("SELECT {TARGET_COLS} FROM http_targets WHERE id = $1"),
        binds![id],
        &|r| rows::http_target(r, sealer),
    )
    .await
}

#[async_trait::async_trait]
impl<D: super::SqlDb> crate::EndpointStore for D {
    async fn endpoint_upsert(&self, p: crate::EndpointUpsert) -> Result<Endpoint> {
        endpoint_upsert(&mut self.writer(), self.sealer(), p).await
    }

    async fn endpoint_get(&self, id: &str) -> Result<Option<Endpoint>> {
        endpoint_get(&mut self.reader(), self.sealer(), id).await
    }

    async fn endpoint_list(&self, p: EndpointList) -> Result<Vec<Endpoint>> {
        endpoint_list(&mut self.reader(), self.sealer(), p).await
    }

    async fn endpoint_disable(&self, p: EndpointDisable) -> Result<()> {
        endpoint_disable(&mut self.writer(), p).await
    }

    async fn endpoint_enable(&self, p: EndpointEnable) -> Result<Option<Endpoint>> {
        endpoint_enable(&mut self.writer(), self.sealer(), p).await
    }

    async fn endpoint_failure_record(&self, p: EndpointFailureRecord) -> Result<()> {
        endpoint_failure_record(&mut self.writer(), p).await
    }

    async fn endpoint_health_flush(
        &self,
        p: crate::EndpointHealthFlush,
    ) -> Result<crate::EndpointHealthFlushed> {
        super::endpoint_health::flush(self, p).await
    }

    async fn endpoint_health_counts(
        &self,
        p: crate::EndpointHealthCounts,
    ) -> Result<Vec<crate::EndpointHealthCount>> {
        super::endpoint_health::counts(&mut self.reader(), p).await
    }

    async fn endpoint_streak_disable(
        &self,
        p: crate::EndpointStreakDisable,
    ) -> Result<Vec<String>> {
        super::endpoint_health::streak_disable(&mut self.writer(), p).await
    }

    async fn endpoint_secret_rotate(
        &self,
        p: crate::EndpointSecretRotate,
    ) -> Result<Option<Endpoint>> {
        let e = super::endpoint_health::secret_rotate(self, p).await?;
        e.map(|e| opened(self.sealer(), e)).transpose()
    }

    async fn endpoint_limits_set(
        &self,
        p: crate::flow::EndpointLimitsSet,
    ) -> Result<Option<crate::flow::EndpointLimits>> {
        super::limits::set(&mut self.writer(), p).await
    }

    async fn endpoint_limits_list(
        &self,
        ids: Vec<String>,
    ) -> Result<Vec<crate::flow::EndpointLimits>> {
        super::limits::list(&mut self.reader(), ids).await
    }

    async fn host_limits_set(
        &self,
        p: crate::flow::HostLimitsSet,
    ) -> Result<crate::flow::HostLimits> {
        super::limits::host_set(&mut self.writer(), p).await
    }

    async fn host_limits_list(&self, origins: Vec<String>) -> Result<Vec<crate::flow::HostLimits>> {
        super::limits::host_list(&mut self.reader(), origins).await
    }

    async fn http_target_upsert(&self, p: HttpTargetUpsert) -> Result<HttpTarget> {
        http_target_upsert(&mut self.writer(), self.sealer(), p).await
    }

    async fn http_target_get(&self, id: &str) -> Result<Option<HttpTarget>> {
        http_target_get(&mut self.reader(), self.sealer(), id).await
    }
}
