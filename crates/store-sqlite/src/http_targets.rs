//! HTTP call targets and retention on SQLite (issue 6: S4-2, S4-8).

use crate::{SqliteStore, map_err};
use kairos_core::clock::{from_millis, to_millis};
use kairos_store::sealing::Sealer;
use kairos_store::*;
use sqlx::Row;
use sqlx::sqlite::SqliteRow;
use std::collections::BTreeMap;

const TARGET_COLS: &str =
    "id, fingerprint, url, method, headers, body, timeout_ms, auth, secret, created_at";

fn target_from_row(row: &SqliteRow, sealer: Option<&Sealer>) -> Result<HttpTarget> {
    let e = |c: &str, e| map_err(&format!("http target {c}"), e);
    let headers: String = row.try_get("headers").map_err(|x| e("headers", x))?;
    let headers: serde_json::Value = serde_json::from_str(&headers).map_err(|x| {
        Error::new(
            ErrorKind::Corrupt,
            "stored http target headers cannot be read",
        )
        .with_source(x)
    })?;
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
        created_at: from_millis(row.try_get("created_at").map_err(|x| e("created_at", x))?),
    })
}

impl SqliteStore {
    pub(crate) async fn http_target_upsert_impl(&self, p: HttpTargetUpsert) -> Result<HttpTarget> {
        let headers =
            kairos_store::sealing::http_headers_to_store(self.sealer(), &p.headers).to_string();
        let secret =
            kairos_store::sealing::http_secret_to_store(self.sealer(), p.secret.as_deref());
        // The no-op update makes RETURNING answer with the existing row on a conflict.
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "INSERT INTO http_targets ({TARGET_COLS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
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
        .bind(to_millis(p.now))
        .fetch_one(&self.write)
        .await
        .map_err(|e| map_err("http target upsert", e))?;
        target_from_row(&row, self.sealer())
    }

    pub(crate) async fn http_target_get_impl(&self, id: &str) -> Result<Option<HttpTarget>> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {TARGET_COLS} FROM http_targets WHERE id = ?1"
        )))
        .bind(id)
        .fetch_optional(&self.read)
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
        let states = serde_json::to_string(&states).unwrap_or_else(|_| "[]".into());
        // Reads before it writes: take the write lock first (see `SqliteStore::begin_write`).
        let mut tx = self.begin_write("job prune").await?;
        // The batch: oldest finished first, through the partial index on finished_at.
        let ids: Vec<String> = sqlx::query_scalar(
            "SELECT id FROM jobs INDEXED BY jobs_finished
             WHERE finished_at IS NOT NULL AND finished_at < ?1
               AND state IN (SELECT value FROM json_each(?2))
             ORDER BY finished_at LIMIT ?3",
        )
        .bind(to_millis(p.older_than))
        .bind(&states)
        .bind(p.limit)
        .fetch_all(&mut *tx)
        .await
        .map_err(|e| map_err("job prune", e))?;
        if ids.is_empty() {
            return Ok(JobPruned::default());
        }
        let ids = serde_json::to_string(&ids).unwrap_or_else(|_| "[]".into());
        let attempts = sqlx::query(
            "DELETE FROM job_attempts WHERE job_id IN (SELECT value FROM json_each(?1))",
        )
        .bind(&ids)
        .execute(&mut *tx)
        .await
        .map_err(|e| map_err("job prune", e))?
        .rows_affected();
        let jobs = sqlx::query("DELETE FROM jobs WHERE id IN (SELECT value FROM json_each(?1))")
            .bind(&ids)
            .execute(&mut *tx)
            .await
            .map_err(|e| map_err("job prune", e))?
            .rows_affected();
        tx.commit().await.map_err(|e| map_err("job prune", e))?;
        Ok(JobPruned { jobs, attempts })
    }
}
