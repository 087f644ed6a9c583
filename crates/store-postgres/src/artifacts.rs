//! Artifacts and schedule catch-up times on PostgreSQL (migration 0003).
//!
//! Differs from SQLite: `$n` placeholders, `timestamptz` and `jsonb` bound directly,
//! null-safe equality written `IS NOT DISTINCT FROM`, and the pruning batch picked by
//! `ctid` with `FOR UPDATE SKIP LOCKED` (two pruners never wait on each other).

use crate::jobs::{INSERT_MANY, insert_json};
use crate::{PostgresStore, map_err};
use chrono::{DateTime, Utc};
use kairos_store::*;
use sqlx::Row;
use sqlx::postgres::PgRow;

const ARTIFACT_COLS: &str = "name, period_key, content, data, job_id, schedule_id, created_at";

fn get<'r, T: sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>>(
    row: &'r PgRow,
    col: &str,
) -> Result<T> {
    row.try_get(col).map_err(|e| map_err(col, e))
}

fn artifact_from_row(row: &PgRow) -> Result<Artifact> {
    Ok(Artifact {
        name: get(row, "name")?,
        period_key: get(row, "period_key")?,
        content: get(row, "content")?,
        data: get(row, "data")?,
        job_id: get(row, "job_id")?,
        schedule_id: get(row, "schedule_id")?,
        created_at: get(row, "created_at")?,
    })
}

fn catch_up_from_row(row: &PgRow) -> Result<CatchUp> {
    Ok(CatchUp {
        schedule_id: get(row, "schedule_id")?,
        at: get(row, "at")?,
        next_at: get(row, "next_at")?,
    })
}

fn sql(template: &str) -> sqlx::AssertSqlSafe<String> {
    sqlx::AssertSqlSafe(template.replace("{cols}", ARTIFACT_COLS))
}

impl PostgresStore {
    pub(crate) async fn artifact_put_impl(&self, p: ArtifactPut) -> Result<ArtifactPutResult> {
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

    pub(crate) async fn artifact_get_impl(&self, p: ArtifactKey) -> Result<Option<Artifact>> {
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

    pub(crate) async fn artifact_list_impl(&self, p: ArtifactList) -> Result<Vec<Artifact>> {
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

    pub(crate) async fn artifact_prune_impl(&self, p: ArtifactPrune) -> Result<u64> {
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

    pub(crate) async fn catch_up_set_impl(&self, p: CatchUpSet) -> Result<()> {
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(|e| map_err("catch-up set", e))?;
        sqlx::query("DELETE FROM schedule_catch_ups WHERE schedule_id = $1")
            .bind(&p.schedule_id)
            .execute(&mut *tx)
            .await
            .map_err(|e| map_err("catch-up set", e))?;
        for c in &p.entries {
            sqlx::query(
                "INSERT INTO schedule_catch_ups (schedule_id, at, next_at) VALUES ($1, $2, $3)",
            )
            .bind(&p.schedule_id)
            .bind(&c.at)
            .bind(c.next_at)
            .execute(&mut *tx)
            .await
            .map_err(|e| map_err("catch-up set", e))?;
        }
        tx.commit().await.map_err(|e| map_err("catch-up set", e))?;
        Ok(())
    }

    pub(crate) async fn catch_up_list_impl(&self, schedule_id: &str) -> Result<Vec<CatchUp>> {
        let rows = sqlx::query(
            "SELECT schedule_id, at, next_at FROM schedule_catch_ups WHERE schedule_id = $1 ORDER BY at",
        )
        .bind(schedule_id)
        .fetch_all(&self.pool)
        .await
        .map_err(|e| map_err("catch-up list", e))?;
        rows.iter().map(catch_up_from_row).collect()
    }

    pub(crate) async fn catch_up_due_impl(&self, p: CatchUpDue) -> Result<Vec<CatchUp>> {
        let rows = sqlx::query(
            "SELECT c.schedule_id, c.at, c.next_at FROM schedule_catch_ups c
             JOIN schedules s ON s.id = c.schedule_id
             WHERE c.next_at IS NOT NULL AND c.next_at <= $1 AND s.state = 'active'
             ORDER BY c.next_at, c.schedule_id, c.at LIMIT $2",
        )
        .bind(p.now)
        .bind(p.limit.max(0))
        .fetch_all(&self.pool)
        .await
        .map_err(|e| map_err("catch-up due", e))?;
        rows.iter().map(catch_up_from_row).collect()
    }

    pub(crate) async fn catch_up_next_at_impl(&self) -> Result<Option<DateTime<Utc>>> {
        sqlx::query_scalar(
            "SELECT MIN(c.next_at) FROM schedule_catch_ups c
             JOIN schedules s ON s.id = c.schedule_id WHERE s.state = 'active'",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(|e| map_err("catch-up next", e))
    }

    pub(crate) async fn catch_up_fire_impl(&self, p: CatchUpFire) -> Result<ScheduleFired> {
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(|e| map_err("catch-up fire", e))?;
        let advanced = sqlx::query(
            "UPDATE schedule_catch_ups SET next_at = $4
             WHERE schedule_id = $1 AND at = $2 AND next_at IS NOT DISTINCT FROM $3",
        )
        .bind(&p.schedule_id)
        .bind(&p.at)
        .bind(p.expected_next_at)
        .bind(p.next_at)
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
                .bind(insert_json(&p.jobs))
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
