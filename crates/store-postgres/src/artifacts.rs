//! Artifacts on PostgreSQL: one per (name, period key), written once.
//!
//! The artifact statements are shared (`kairos_store::sql::artifacts`). Differs from SQLite:
//! the jobs an artifact starts are bound as `jsonb`, and the pruning batch is picked by `ctid`
//! with `FOR UPDATE SKIP LOCKED` (two pruners never wait on each other).

use crate::jobs::{INSERT_MANY, insert_json};
use crate::rows::PgRun;
use crate::{PostgresStore, map_err};
use async_trait::async_trait;
use kairos_store::sql::artifacts;
use kairos_store::*;

#[async_trait]
impl ArtifactStore for PostgresStore {
    async fn artifact_put(&self, p: ArtifactPut) -> Result<ArtifactPutResult> {
        let a = &p.artifact;
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(|e| map_err("artifact put", e))?;
        let created = artifacts::artifact_insert(&mut PgRun::Conn(&mut tx), a).await?;
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
        artifacts::artifact_get(&mut PgRun::Pool(&self.pool), p).await
    }

    async fn artifact_list(&self, p: ArtifactList) -> Result<Vec<Artifact>> {
        artifacts::artifact_list(&mut PgRun::Pool(&self.pool), p).await
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
