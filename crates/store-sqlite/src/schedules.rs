//! Schedules and their catch-up times on SQLite.

use crate::jobs::{INSERT_MANY, insert_json};
use crate::rows::{SCHEDULE_COLS, SqRun, ms_opt, schedule_from_row};
use crate::{SqliteStore, map_err};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use kairos_core::clock::to_millis;
use kairos_store::sql::schedules;
use kairos_store::*;
use sqlx::AssertSqlSafe;

fn sql(template: &str) -> AssertSqlSafe<String> {
    AssertSqlSafe(template.replace("{cols}", SCHEDULE_COLS))
}

#[async_trait]
impl ScheduleStore for SqliteStore {
    async fn schedule_create(&self, p: ScheduleCreate) -> Result<Schedule> {
        schedules::create(&mut SqRun::Pool(&self.write), p).await
    }

    async fn schedule_get(&self, id: &str) -> Result<Option<Schedule>> {
        schedules::get(&mut SqRun::Pool(&self.read), id).await
    }

    async fn schedule_list(&self, p: ScheduleList) -> Result<Vec<Schedule>> {
        schedules::list(&mut SqRun::Pool(&self.read), p).await
    }

    async fn schedule_update(&self, p: ScheduleUpdate) -> Result<Option<Schedule>> {
        schedules::update(&mut SqRun::Pool(&self.write), p).await
    }

    async fn schedule_pause(&self, p: SchedulePause) -> Result<Option<Schedule>> {
        schedules::pause(&mut SqRun::Pool(&self.write), p).await
    }

    async fn schedule_delete(&self, id: &str) -> Result<bool> {
        schedules::delete(&mut SqRun::Pool(&self.write), id).await
    }

    async fn schedule_release(&self, p: ScheduleRelease) -> Result<u64> {
        schedules::release(&mut SqRun::Pool(&self.write), p).await
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
        schedules::next_fire_at(&mut SqRun::Pool(&self.read)).await
    }

    async fn catch_up_set(&self, p: CatchUpSet) -> Result<()> {
        let mut tx = self.begin_write("catch-up set").await?;
        schedules::catch_up_set(&mut SqRun::Conn(&mut tx), p).await?;
        tx.commit().await.map_err(|e| map_err("catch-up set", e))
    }

    async fn catch_up_list(&self, schedule_id: &str) -> Result<Vec<CatchUp>> {
        schedules::catch_up_list(&mut SqRun::Pool(&self.read), schedule_id).await
    }

    async fn catch_up_due(&self, p: CatchUpDue) -> Result<Vec<CatchUp>> {
        schedules::catch_up_due(&mut SqRun::Pool(&self.read), p).await
    }

    async fn catch_up_next_at(&self) -> Result<Option<DateTime<Utc>>> {
        schedules::catch_up_next_at(&mut SqRun::Pool(&self.read)).await
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
