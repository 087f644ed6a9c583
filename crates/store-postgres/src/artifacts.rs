//! Artifacts on PostgreSQL: one per (name, period key), written once.
//!
//! Differs from SQLite: `$n` placeholders, `timestamptz` and `jsonb` bound directly, and the
//! pruning batch picked by `ctid` with `FOR UPDATE SKIP LOCKED` (two pruners never wait on
//! each other).

use crate::jobs::{INSERT_MANY, insert_json};
use crate::rows::Pg;
use crate::{PostgresStore, map_err};
use async_trait::async_trait;
use kairos_store::sql::{ARTIFACT_COLS, rows};
use kairos_store::*;
use sqlx::postgres::PgRow;

fn artifact_from_row(row: &PgRow) -> Result<Artifact> {
    rows::artifact(&Pg(row))
}

fn sql(template: &str) -> sqlx::AssertSqlSafe<String> {
    sqlx::AssertSqlSafe(template.replace("{cols}", ARTIFACT_COLS))
}

#[async_trait]
impl ArtifactStore for PostgresStore {
    async fn artifact_put(&self, p: ArtifactPut) -> Result<ArtifactPutResult> {
        let a = &p.artifact;
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(|e| map_err("artifact put", e))?;
        let created = sqlx::query(
            "INSERT INTO artifacts (name, period_key, content, data, job_id, schedule_id, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (name, period_key) DO NOTHING",
        )
        .bind(&a.name)
        .bind(&a.period_key)
        .bind(&a.content)
        .bind(&a.data)
        .bind(&a.job_id)
        .bind(&a.schedule_id)
        .bind(a.created_at)
        .execute(&mut *tx)
        .await
        .map_err(|e| map_err("artifact put", e))?
        .rows_affected()
            > 0;
        let jobs: Vec<String> = if created && !p.then.is_empty() {
            sqlx::query_scalar(INSERT_MANY)
                .bind(insert_json(&p.then))
                .fetch_all(&mut *tx)
                .await
                .map_err(|e| map_err("artifact put (jobs)", e))?
        } else {
            vec![]
        };
        tx.commit().await.map_err(|e| map_err("artifact put", e))?;
        Ok(ArtifactPutResult { created, jobs })
    }

    async fn artifact_get(&self, p: ArtifactKey) -> Result<Option<Artifact>> {
        let row = sqlx::query(sql(
            "SELECT {cols} FROM artifacts WHERE name = $1 AND period_key = $2",
        ))
        .bind(&p.name)
        .bind(&p.period_key)
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| map_err("artifact get", e))?;
        row.as_ref().map(artifact_from_row).transpose()
    }

    async fn artifact_list(&self, p: ArtifactList) -> Result<Vec<Artifact>> {
        let rows = sqlx::query(sql("SELECT {cols} FROM artifacts
             WHERE ($1::text IS NULL OR name = $1) AND ($2::text IS NULL OR period_key < $2)
             ORDER BY period_key DESC, name LIMIT $3"))
        .bind(&p.name)
        .bind(&p.before_period)
        .bind(p.limit.unwrap_or(100).clamp(1, 1000))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| map_err("artifact list", e))?;
        rows.iter().map(artifact_from_row).collect()
    }

    async fn artifact_prune(&self, p: ArtifactPrune) -> Result<u64> {
        let done = sqlx::query(
            "DELETE FROM artifacts WHERE ctid IN (
                 SELECT ctid FROM artifacts WHERE created_at < $1 ORDER BY created_at LIMIT $2
                 FOR UPDATE SKIP LOCKED)",
        )
        .bind(p.before)
        .bind(p.limit.max(0))
        .execute(&self.pool)
        .await
        .map_err(|e| map_err("artifact prune", e))?;
        Ok(done.rows_affected())
    }
}
