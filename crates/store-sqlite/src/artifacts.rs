//! Artifacts and schedule catch-up times on SQLite (migration 0003).

use crate::jobs::{INSERT_MANY, insert_json};
use crate::rows::ms_opt;
use crate::{SqliteStore, map_err};
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

fn catch_up_from_row(row: &SqliteRow) -> Result<CatchUp> {
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

impl SqliteStore {
    pub(crate) async fn artifact_put_impl(&self, p: ArtifactPut) -> Result<ArtifactPutResult> {
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

    pub(crate) async fn artifact_get_impl(&self, p: ArtifactKey) -> Result<Option<Artifact>> {
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

    pub(crate) async fn artifact_list_impl(&self, p: ArtifactList) -> Result<Vec<Artifact>> {
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

    pub(crate) async fn artifact_prune_impl(&self, p: ArtifactPrune) -> Result<u64> {
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

    pub(crate) async fn catch_up_set_impl(&self, p: CatchUpSet) -> Result<()> {
        let mut tx = self.begin_write("catch-up set").await?;
        sqlx::query("DELETE FROM schedule_catch_ups WHERE schedule_id = ?1")
            .bind(&p.schedule_id)
            .execute(&mut *tx)
            .await
            .map_err(|e| map_err("catch-up set", e))?;
        for c in &p.entries {
            sqlx::query(
                "INSERT INTO schedule_catch_ups (schedule_id, at, next_at) VALUES (?1, ?2, ?3)",
            )
            .bind(&p.schedule_id)
            .bind(&c.at)
            .bind(ms_opt(c.next_at))
            .execute(&mut *tx)
            .await
            .map_err(|e| map_err("catch-up set", e))?;
        }
        tx.commit().await.map_err(|e| map_err("catch-up set", e))?;
        Ok(())
    }

    pub(crate) async fn catch_up_list_impl(&self, schedule_id: &str) -> Result<Vec<CatchUp>> {
        let rows = sqlx::query(
            "SELECT schedule_id, at, next_at FROM schedule_catch_ups WHERE schedule_id = ?1 ORDER BY at",
        )
        .bind(schedule_id)
        .fetch_all(&self.read)
        .await
        .map_err(|e| map_err("catch-up list", e))?;
        rows.iter().map(catch_up_from_row).collect()
    }

    pub(crate) async fn catch_up_due_impl(&self, p: CatchUpDue) -> Result<Vec<CatchUp>> {
        let rows = sqlx::query(
            "SELECT c.schedule_id, c.at, c.next_at FROM schedule_catch_ups c
             JOIN schedules s ON s.id = c.schedule_id
             WHERE c.next_at IS NOT NULL AND c.next_at <= ?1 AND s.state = 'active'
             ORDER BY c.next_at, c.schedule_id, c.at LIMIT ?2",
        )
        .bind(to_millis(p.now))
        .bind(p.limit.max(0))
        .fetch_all(&self.read)
        .await
        .map_err(|e| map_err("catch-up due", e))?;
        rows.iter().map(catch_up_from_row).collect()
    }

    pub(crate) async fn catch_up_next_at_impl(
        &self,
    ) -> Result<Option<chrono::DateTime<chrono::Utc>>> {
        let ms: Option<i64> = sqlx::query_scalar(
            "SELECT MIN(c.next_at) FROM schedule_catch_ups c
             JOIN schedules s ON s.id = c.schedule_id WHERE s.state = 'active'",
        )
        .fetch_one(&self.read)
        .await
        .map_err(|e| map_err("catch-up next", e))?;
        Ok(ms.map(from_millis))
    }

    pub(crate) async fn catch_up_fire_impl(&self, p: CatchUpFire) -> Result<ScheduleFired> {
        let mut tx = self.begin_write("catch-up fire").await?;
        // `IS` is SQLite's null-safe equality (PostgreSQL: IS NOT DISTINCT FROM).
        let advanced = sqlx::query(
            "UPDATE schedule_catch_ups SET next_at = ?4
             WHERE schedule_id = ?1 AND at = ?2 AND next_at IS ?3",
        )
        .bind(&p.schedule_id)
        .bind(&p.at)
        .bind(ms_opt(p.expected_next_at))
        .bind(ms_opt(p.next_at))
        .execute(&mut *tx)
        .await
        .map_err(|e| map_err("catch-up fire", e))?
        .rows_affected()
            > 0;
        if !advanced {
            return Ok(ScheduleFired::default());
        }
        let created: Vec<String> = if p.jobs.is_empty() {
            vec![]
        } else {
            sqlx::query_scalar(INSERT_MANY)
                .bind(insert_json(&p.jobs).to_string())
                .fetch_all(&mut *tx)
                .await
                .map_err(|e| map_err("catch-up fire (jobs)", e))?
        };
        tx.commit().await.map_err(|e| map_err("catch-up fire", e))?;
        Ok(ScheduleFired {
            advanced: true,
            created,
        })
    }
}
