//! Artifacts ([`crate::ArtifactStore`]), written once over [`SqlRun`]: one per (name, period
//! key), written once, with the jobs it starts in the same transaction.

use super::{ARTIFACT_COLS, SqlRun, rows};
use crate::binds;
use crate::{Artifact, ArtifactKey, ArtifactList, Result};

/// Store an artifact unless one exists for its (name, period key); whether it was created.
/// Run on the transaction that also inserts the jobs it starts.
pub async fn artifact_insert(run: &mut impl SqlRun, a: &Artifact) -> Result<bool> {
    let n = run
        .execute(
            "artifact put",
            "INSERT INTO artifacts (name, period_key, content, data, job_id, schedule_id, created_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (name, period_key) DO NOTHING",
            binds![
                &a.name,
                &a.period_key,
                &a.content,
                a.data.clone(),
                a.job_id.clone(),
                a.schedule_id.clone(),
                a.created_at,
            ],
        )
        .await?;
    Ok(n > 0)
}

/// `artifact_get`.
pub async fn artifact_get(run: &mut impl SqlRun, p: ArtifactKey) -> Result<Option<Artifact>> {
    run.fetch_optional(
        "artifact get",
        &format!("SELECT {ARTIFACT_COLS} FROM artifacts WHERE name = $1 AND period_key = $2"),
        binds![p.name, p.period_key],
        &|r| rows::artifact(r),
    )
    .await
}

/// `artifact_list`.
pub async fn artifact_list(run: &mut impl SqlRun, p: ArtifactList) -> Result<Vec<Artifact>> {
    // The casts give the optional filters a type on PostgreSQL.
    run.fetch(
        "artifact list",
        &format!(
            "SELECT {ARTIFACT_COLS} FROM artifacts
             WHERE (CAST($1 AS TEXT) IS NULL OR name = $1)
               AND (CAST($2 AS TEXT) IS NULL OR period_key < $2)
             ORDER BY period_key DESC, name LIMIT $3"
        ),
        binds![
            p.name,
            p.before_period,
            p.limit.unwrap_or(100).clamp(1, 1000)
        ],
        &|r| rows::artifact(r),
    )
    .await
}

#[async_trait::async_trait]
impl<D: super::SqlDb> crate::ArtifactStore for D {
    async fn artifact_put(&self, p: crate::ArtifactPut) -> Result<crate::ArtifactPutResult> {
        let mut tx = self.begin("artifact put").await?;
        let mut r = D::in_tx(&mut tx);
        let run = &mut r;
        let created = artifact_insert(run, &p.artifact).await?;
        let jobs = if created {
            super::jobs_insert(run, "artifact put (jobs)", &p.then).await?
        } else {
            vec![]
        };
        drop(r);
        self.commit(tx, "artifact put").await?;
        Ok(crate::ArtifactPutResult { created, jobs })
    }

    async fn artifact_get(&self, p: ArtifactKey) -> Result<Option<Artifact>> {
        artifact_get(&mut self.reader(), p).await
    }

    async fn artifact_list(&self, p: ArtifactList) -> Result<Vec<Artifact>> {
        artifact_list(&mut self.reader(), p).await
    }

    async fn artifact_prune(&self, p: crate::ArtifactPrune) -> Result<u64> {
        let mut run = self.writer();
        let sql = super::prune_sql(
            run.dialect(),
            "artifacts",
            None,
            "created_at < $1",
            "created_at",
        );
        run.execute("artifact prune", &sql, binds![p.before, p.limit.max(0)])
            .await
    }
}
