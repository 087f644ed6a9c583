//! Artifacts on SQLite: one per (name, period key), written once.

use crate::jobs::{INSERT_MANY, insert_json};
use crate::{SqliteStore, map_err};
use async_trait::async_trait;
use kairos_core::clock::{from_millis, to_millis};
use kairos_store::*;
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

const ARTIFACT_COLS: &str = "name, period_key, content, data, job_id, schedule_id, created_at";

fn artifact_from_row(row: &SqliteRow) -> Result<Artifact> {
    let get_err = |c: &str, e| map_err(c, e);
    let data: String = row.try_get("data").map_err(|e| get_err("data", e))?;
    let data = serde_json::from_str(&data).map_err(|e| {
        Error::new(ErrorKind::Corrupt, "stored artifact data cannot be read").with_source(e)
    })?;
    Ok(Artifact {
        name: row.try_get("name").map_err(|e| get_err("name", e))?,
        period_key: row
            .try_get("period_key")
            .map_err(|e| get_err("period_key", e))?,
        content: row.try_get("content").map_err(|e| get_err("content", e))?,
        data,
        job_id: row.try_get("job_id").map_err(|e| get_err("job_id", e))?,
        schedule_id: row
            .try_get("schedule_id")
            .map_err(|e| get_err("schedule_id", e))?,
        created_at: from_millis(
            row.try_get("created_at")
                .map_err(|e| get_err("created_at", e))?,
        ),
    })
}

pub(crate) fn catch_up_from_row(row: &SqliteRow) -> Result<CatchUp> {
    Ok(CatchUp {
        schedule_id: row
            .try_get("schedule_id")
            .map_err(|e| map_err("schedule_id", e))?,
        at: row.try_get("at").map_err(|e| map_err("at", e))?,
        next_at: row
            .try_get::<Option<i64>, _>("next_at")
            .map_err(|e| map_err("next_at", e))?
            .map(from_millis),
    })
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
