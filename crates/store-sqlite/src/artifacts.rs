//! Artifacts on SQLite: one per (name, period key), written once.

use crate::jobs::{INSERT_MANY, insert_json};
use crate::rows::SqRun;
use crate::{SqliteStore, map_err};
use async_trait::async_trait;
use kairos_core::clock::to_millis;
use kairos_store::sql::artifacts;
use kairos_store::*;

#[async_trait]
impl ArtifactStore for SqliteStore {
    async fn artifact_put(&self, p: ArtifactPut) -> Result<ArtifactPutResult> {
        let a = &p.artifact;
        let mut tx = self.begin_write("artifact put").await?;
        let created = artifacts::artifact_insert(&mut SqRun::Conn(&mut tx), a).await?;
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
        artifacts::artifact_get(&mut SqRun::Pool(&self.read), p).await
    }

    async fn artifact_list(&self, p: ArtifactList) -> Result<Vec<Artifact>> {
        artifacts::artifact_list(&mut SqRun::Pool(&self.read), p).await
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
