//! Artifacts on SQLite: one per (name, period key), written once.

use crate::jobs::{INSERT_MANY, insert_json};
use crate::rows::Sq;
use crate::{SqliteStore, map_err};
use async_trait::async_trait;
use kairos_core::clock::to_millis;
use kairos_store::sql::{ARTIFACT_COLS, rows};
use kairos_store::*;
use sqlx::sqlite::SqliteRow;

fn artifact_from_row(row: &SqliteRow) -> Result<Artifact> {
    rows::artifact(&Sq(row))
}

fn sql(template: &str) -> sqlx::AssertSqlSafe<String> {
    sqlx::AssertSqlSafe(template.replace("{cols}", ARTIFACT_COLS))
}

#[async_trait]
impl ArtifactStore for SqliteStore {
    async fn artifact_put(&self, p: ArtifactPut) -> Result<ArtifactPutResult> {
        let a = &p.artifact;
        let mut tx = self.begin_write("artifact put").await?;
        let created = sqlx::query(
            "INSERT INTO artifacts (name, period_key, content, data, job_id, schedule_id, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (name, period_key) DO NOTHING",
        )
        .bind(&a.name)
        .bind(&a.period_key)
        .bind(&a.content)
        .bind(a.data.to_string())
        .bind(&a.job_id)
        .bind(&a.schedule_id)
        .bind(to_millis(a.created_at))
        .execute(&mut *tx)
        .await
        .map_err(|e| map_err("artifact put", e))?
        .rows_affected()
            > 0;
        let jobs: Vec<String> = if created && !p.then.is_empty() {
            sqlx::query_scalar(INSERT_MANY)
                .bind(insert_json(&p.then).to_string())
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
            "SELECT {cols} FROM artifacts WHERE name = ?1 AND period_key = ?2",
        ))
        .bind(&p.name)
        .bind(&p.period_key)
        .fetch_optional(&self.read)
        .await
        .map_err(|e| map_err("artifact get", e))?;
        row.as_ref().map(artifact_from_row).transpose()
    }

    async fn artifact_list(&self, p: ArtifactList) -> Result<Vec<Artifact>> {
        let rows = sqlx::query(sql("SELECT {cols} FROM artifacts
             WHERE (?1 IS NULL OR name = ?1) AND (?2 IS NULL OR period_key < ?2)
             ORDER BY period_key DESC, name LIMIT ?3"))
        .bind(&p.name)
        .bind(&p.before_period)
        .bind(p.limit.unwrap_or(100).clamp(1, 1000))
        .fetch_all(&self.read)
        .await
        .map_err(|e| map_err("artifact list", e))?;
        rows.iter().map(artifact_from_row).collect()
    }

    async fn artifact_prune(&self, p: ArtifactPrune) -> Result<u64> {
        let done = sqlx::query(
            "DELETE FROM artifacts WHERE rowid IN (
                 SELECT rowid FROM artifacts WHERE created_at < ?1 ORDER BY created_at LIMIT ?2)",
        )
        .bind(to_millis(p.before))
        .bind(p.limit.max(0))
        .execute(&self.write)
        .await
        .map_err(|e| map_err("artifact prune", e))?;
        Ok(done.rows_affected())
    }
}
