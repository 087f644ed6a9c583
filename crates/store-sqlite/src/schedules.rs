//! Schedules and their catch-up times on SQLite.

use crate::artifacts::catch_up_from_row;
use crate::jobs::{INSERT_MANY, insert_json};
use crate::rows::{SCHEDULE_COLS, ms_opt, schedule_from_row};
use crate::{SqliteStore, map_err};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use kairos_core::clock::{from_millis, to_millis};
use kairos_store::*;
use sqlx::AssertSqlSafe;

fn sql(template: &str) -> AssertSqlSafe<String> {
    AssertSqlSafe(template.replace("{cols}", SCHEDULE_COLS))
}

fn def_binds(d: &ScheduleCreate) -> (String, String, Option<String>) {
    (
        serde_json::to_string(&d.spec).unwrap_or_default(),
        d.payload.to_string(),
        d.retry
            .as_ref()
            .map(|r| serde_json::to_string(r).unwrap_or_default()),
    )
}

#[async_trait]
impl ScheduleStore for SqliteStore {
    async fn schedule_create(&self, p: ScheduleCreate) -> Result<Schedule> {
        let (spec, payload, retry) = def_binds(&p);
        let state = if p.paused { "paused" } else { "active" };
        let row = sqlx::query(sql(
            "INSERT INTO schedules (id, name, kind, spec, timezone, period, misfire, payload, endpoint_id, retry, state, next_fire_at, created_at, updated_at, channels)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?13, ?14)
             RETURNING {cols}",
        ))
        .bind(&p.id)
        .bind(&p.name)
        .bind(p.kind.as_str())
        .bind(spec)
        .bind(&p.timezone)
        .bind(p.period.as_str())
        .bind(p.misfire.to_string_repr())
        .bind(payload)
        .bind(&p.endpoint_id)
        .bind(retry)
        .bind(state)
        .bind(ms_opt(p.next_fire_at))
        .bind(to_millis(p.now))
        .bind(ScheduleChannel::encode_all(&p.channels).map(|v| v.to_string()))
        .fetch_one(&self.write)
        .await
        .map_err(|e| map_err("schedule create", e))?;
        schedule_from_row(&row)
    }

    async fn schedule_get(&self, id: &str) -> Result<Option<Schedule>> {
        let row = sqlx::query(sql("SELECT {cols} FROM schedules WHERE id = ?1"))
            .bind(id)
            .fetch_optional(&self.read)
            .await
            .map_err(|e| map_err("schedule get", e))?;
        row.as_ref().map(schedule_from_row).transpose()
    }

    async fn schedule_list(&self, p: ScheduleList) -> Result<Vec<Schedule>> {
        let rows = sqlx::query(sql(
            "SELECT {cols} FROM schedules WHERE (?1 IS NULL OR state = ?1) ORDER BY id DESC LIMIT ?2",
        ))
        .bind(p.state)
        .bind(p.limit.unwrap_or(100).clamp(1, 10_000))
        .fetch_all(&self.read)
        .await
        .map_err(|e| map_err("schedule list", e))?;
        rows.iter().map(schedule_from_row).collect()
    }

    async fn schedule_update(&self, p: ScheduleUpdate) -> Result<Option<Schedule>> {
        let d = &p.def;
        let (spec, payload, retry) = def_binds(d);
        let row = sqlx::query(sql(
            "UPDATE schedules SET name = ?2, kind = ?3, spec = ?4, timezone = ?5, period = ?6, misfire = ?7,
                    payload = ?8, endpoint_id = ?9, retry = ?10, channels = ?14,
                    state = CASE WHEN ?11 THEN 'paused' ELSE 'active' END,
                    next_fire_at = ?12, locked_until = NULL, updated_at = ?13
             WHERE id = ?1 RETURNING {cols}",
        ))
        .bind(&p.id)
        .bind(&d.name)
        .bind(d.kind.as_str())
        .bind(spec)
        .bind(&d.timezone)
        .bind(d.period.as_str())
        .bind(d.misfire.to_string_repr())
        .bind(payload)
        .bind(&d.endpoint_id)
        .bind(retry)
        .bind(d.paused)
        .bind(ms_opt(d.next_fire_at))
        .bind(to_millis(d.now))
        .bind(ScheduleChannel::encode_all(&d.channels).map(|v| v.to_string()))
        .fetch_optional(&self.write)
        .await
        .map_err(|e| map_err("schedule update", e))?;
        row.as_ref().map(schedule_from_row).transpose()
    }

    async fn schedule_pause(&self, p: SchedulePause) -> Result<Option<Schedule>> {
        let row = sqlx::query(sql(
            "UPDATE schedules SET
                    state = CASE WHEN state = 'finished' THEN state WHEN ?2 THEN 'paused' ELSE 'active' END,
                    next_fire_at = CASE WHEN ?2 OR state = 'finished' THEN next_fire_at ELSE ?3 END,
                    locked_until = NULL, updated_at = ?4
             WHERE id = ?1 RETURNING {cols}",
        ))
        .bind(&p.id)
        .bind(p.paused)
        .bind(ms_opt(p.next_fire_at))
        .bind(to_millis(p.now))
        .fetch_optional(&self.write)
        .await
        .map_err(|e| map_err("schedule pause", e))?;
        row.as_ref().map(schedule_from_row).transpose()
    }

    async fn schedule_delete(&self, id: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM schedules WHERE id = ?1")
            .bind(id)
            .execute(&self.write)
            .await
            .map_err(|e| map_err("schedule delete", e))?;
        Ok(done.rows_affected() > 0)
    }

    async fn schedule_release(&self, p: ScheduleRelease) -> Result<u64> {
        let done = sqlx::query(
            "UPDATE schedules SET locked_until = NULL, locked_by = NULL
             WHERE locked_by = ?1 AND locked_until > ?2",
        )
        .bind(&p.node)
        .bind(to_millis(p.now))
        .execute(&self.write)
        .await
        .map_err(|e| map_err("schedule release", e))?;
        Ok(done.rows_affected())
    }

    async fn schedule_due(&self, p: ScheduleDue) -> Result<Vec<Schedule>> {
        let now = to_millis(p.now);
        let rows = sqlx::query(sql("UPDATE schedules SET locked_until = ?2, locked_by = ?3
             WHERE id IN (SELECT id FROM schedules
                          WHERE state = 'active' AND next_fire_at <= ?1
                            AND (locked_until IS NULL OR locked_until <= ?1)
                          ORDER BY next_fire_at, id LIMIT ?4)
             RETURNING {cols}"))
        .bind(now)
        .bind(to_millis(p.lock_until))
        .bind(&p.node)
        .bind(p.limit.max(0))
        .fetch_all(&self.write)
        .await
        .map_err(|e| map_err("schedule due", e))?;
        let mut out = rows
            .iter()
            .map(schedule_from_row)
            .collect::<Result<Vec<_>>>()?;
        out.sort_by(|a, b| (a.next_fire_at, &a.id).cmp(&(b.next_fire_at, &b.id)));
        Ok(out)
    }

    async fn schedule_fire(&self, p: ScheduleFire) -> Result<ScheduleFired> {
        let mut tx = self.begin_write("schedule fire").await?;
        // `IS` is SQLite's null-safe equality (PostgreSQL: IS NOT DISTINCT FROM).
        let advanced = sqlx::query(
            "UPDATE schedules SET next_fire_at = ?3,
                    last_fire_at = COALESCE(?4, last_fire_at),
                    state = CASE WHEN ?3 IS NULL AND state = 'active' THEN 'finished' ELSE state END,
                    locked_until = NULL, locked_by = NULL, updated_at = ?5
             WHERE id = ?1 AND next_fire_at IS ?2",
        )
        .bind(&p.schedule_id)
        .bind(ms_opt(p.expected_next_fire_at))
        .bind(ms_opt(p.next_fire_at))
        .bind(ms_opt(p.last_fire_at))
        .bind(to_millis(p.now))
        .execute(&mut *tx)
        .await
        .map_err(|e| map_err("schedule fire", e))?
        .rows_affected()
            > 0;
        if !advanced {
            // Another node (or an earlier tick) already materialized these firings.
            return Ok(ScheduleFired {
                advanced: false,
                created: vec![],
            });
        }
        let created: Vec<String> = if p.jobs.is_empty() {
            vec![]
        } else {
            sqlx::query_scalar(INSERT_MANY)
                .bind(insert_json(&p.jobs).to_string())
                .fetch_all(&mut *tx)
                .await
                .map_err(|e| map_err("schedule fire (jobs)", e))?
        };
        tx.commit().await.map_err(|e| map_err("schedule fire", e))?;
        Ok(ScheduleFired {
            advanced: true,
            created,
        })
    }

    async fn schedule_next_fire_at(&self) -> Result<Option<DateTime<Utc>>> {
        let ms: Option<i64> =
            sqlx::query_scalar("SELECT MIN(next_fire_at) FROM schedules WHERE state = 'active'")
                .fetch_one(&self.read)
                .await
                .map_err(|e| map_err("schedule next fire", e))?;
        Ok(ms.map(from_millis))
    }

    async fn catch_up_set(&self, p: CatchUpSet) -> Result<()> {
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

    async fn catch_up_list(&self, schedule_id: &str) -> Result<Vec<CatchUp>> {
        let rows = sqlx::query(
            "SELECT schedule_id, at, next_at FROM schedule_catch_ups WHERE schedule_id = ?1 ORDER BY at",
        )
        .bind(schedule_id)
        .fetch_all(&self.read)
        .await
        .map_err(|e| map_err("catch-up list", e))?;
        rows.iter().map(catch_up_from_row).collect()
    }

    async fn catch_up_due(&self, p: CatchUpDue) -> Result<Vec<CatchUp>> {
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

    async fn catch_up_next_at(&self) -> Result<Option<chrono::DateTime<chrono::Utc>>> {
        let ms: Option<i64> = sqlx::query_scalar(
            "SELECT MIN(c.next_at) FROM schedule_catch_ups c
             JOIN schedules s ON s.id = c.schedule_id WHERE s.state = 'active'",
        )
        .fetch_one(&self.read)
        .await
        .map_err(|e| map_err("catch-up next", e))?;
        Ok(ms.map(from_millis))
    }

    async fn catch_up_fire(&self, p: CatchUpFire) -> Result<ScheduleFired> {
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
