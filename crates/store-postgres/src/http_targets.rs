//! HTTP call targets and retention on PostgreSQL (issue 6: S4-2, S4-8). Mirrors the SQLite
//! file; the differences are said where they are.

use crate::{PostgresStore, map_err};
use kairos_store::sealing::Sealer;
use kairos_store::*;
use sqlx::Row;
use sqlx::postgres::PgRow;
use std::collections::BTreeMap;

const TARGET_COLS: &str =
    "id, fingerprint, url, method, headers, body, timeout_ms, auth, secret, created_at";

fn target_from_row(row: &PgRow, sealer: Option<&Sealer>) -> Result<HttpTarget> {
    let e = |c: &str, e| map_err(&format!("http target {c}"), e);
    // Differs from SQLite: headers are jsonb, read as a value.
    let headers: serde_json::Value = row.try_get("headers").map_err(|x| e("headers", x))?;
    let headers: BTreeMap<String, String> =
        kairos_store::sealing::http_headers_from_store(sealer, headers)?;
    Ok(HttpTarget {
        id: row.try_get("id").map_err(|x| e("id", x))?,
        fingerprint: row
            .try_get("fingerprint")
            .map_err(|x| e("fingerprint", x))?,
        url: row.try_get("url").map_err(|x| e("url", x))?,
        method: row.try_get("method").map_err(|x| e("method", x))?,
        headers,
        body: row.try_get("body").map_err(|x| e("body", x))?,
        timeout_ms: row.try_get("timeout_ms").map_err(|x| e("timeout_ms", x))?,
        auth: HttpAuth::parse(&row.try_get::<String, _>("auth").map_err(|x| e("auth", x))?),
        secret: kairos_store::sealing::http_secret_from_store(
            sealer,
            row.try_get("secret").map_err(|x| e("secret", x))?,
        )?,
        created_at: row.try_get("created_at").map_err(|x| e("created_at", x))?,
    })
}

impl PostgresStore {
    pub(crate) async fn http_target_upsert_impl(&self, p: HttpTargetUpsert) -> Result<HttpTarget> {
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

    pub(crate) async fn http_target_get_impl(&self, id: &str) -> Result<Option<HttpTarget>> {
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

    pub(crate) async fn job_prune_impl(&self, p: JobPrune) -> Result<JobPruned> {
        let states = p.final_state_names();
        if states.is_empty() || p.limit <= 0 {
            return Ok(JobPruned::default());
        }
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(|e| map_err("job prune", e))?;
        // Differs from SQLite: the batch is locked with SKIP LOCKED, so two pruners (or a
        // replay of a dead job at the same moment) never wait on each other; states are a
        // text array. The attempts go in the same statement through a data-modifying CTE.
        let row = sqlx::query(
            "WITH batch AS (
                 SELECT id FROM jobs
                 WHERE finished_at IS NOT NULL AND finished_at < $1 AND state = ANY($2)
                 ORDER BY finished_at LIMIT $3
                 FOR UPDATE SKIP LOCKED
             ), gone_attempts AS (
                 DELETE FROM job_attempts WHERE job_id IN (SELECT id FROM batch) RETURNING 1
             ), gone_jobs AS (
                 DELETE FROM jobs WHERE id IN (SELECT id FROM batch) RETURNING 1
             )
             SELECT (SELECT COUNT(*) FROM gone_jobs) AS jobs,
                    (SELECT COUNT(*) FROM gone_attempts) AS attempts",
        )
        .bind(p.older_than)
        .bind(&states)
        .bind(p.limit)
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| map_err("job prune", e))?;
        tx.commit().await.map_err(|e| map_err("job prune", e))?;
        let jobs: i64 = row.try_get("jobs").map_err(|e| map_err("job prune", e))?;
        let attempts: i64 = row
            .try_get("attempts")
            .map_err(|e| map_err("job prune", e))?;
        Ok(JobPruned {
            jobs: jobs.max(0) as u64,
            attempts: attempts.max(0) as u64,
        })
    }
}
