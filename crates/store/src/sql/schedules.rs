//! The schedule and catch-up statements both stores run as they are, written once over
//! [`SqlRun`]. Claiming due schedules and firing (null-safe compare, job insert) differ and
//! stay with each store.

use super::{SCHEDULE_COLS, SqlRun, rows};
use crate::binds;
use crate::{
    CatchUp, CatchUpDue, CatchUpSet, Result, Schedule, ScheduleChannel, ScheduleCreate,
    ScheduleList, SchedulePause, ScheduleRelease, ScheduleUpdate,
};
use chrono::{DateTime, Utc};

fn cols(template: &str) -> String {
    template.replace("{cols}", SCHEDULE_COLS)
}

/// The definition's binds `$2`..`$10` (name, kind, spec, timezone, period, misfire,
/// payload, endpoint, retry).
fn def_binds(d: &ScheduleCreate) -> Vec<super::Bind> {
    binds![
        &d.name,
        d.kind.as_str(),
        serde_json::to_value(&d.spec).unwrap_or_default(),
        &d.timezone,
        d.period.as_str(),
        d.misfire.to_string_repr(),
        d.payload.clone(),
        d.endpoint_id.clone(),
        d.retry
            .as_ref()
            .map(|r| serde_json::to_value(r).unwrap_or_default()),
    ]
}

/// `schedule_create`.
pub async fn create(run: &mut impl SqlRun, p: ScheduleCreate) -> Result<Schedule> {
    let mut b = binds![&p.id];
    b.extend(def_binds(&p));
    b.extend(binds![
        if p.paused { "paused" } else { "active" },
        p.next_fire_at,
        p.now,
        ScheduleChannel::encode_all(&p.channels),
    ]);
    run.fetch_one(
        "schedule create",
        &cols("INSERT INTO schedules (id, name, kind, spec, timezone, period, misfire, payload, endpoint_id, retry, state, next_fire_at, created_at, updated_at, channels)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13, $14)
         RETURNING {cols}"),
        b,
        &|r| rows::schedule(r),
    )
    .await
}

/// `schedule_get`.
pub async fn get(run: &mut impl SqlRun, id: &str) -> Result<Option<Schedule>> {
    run.fetch_optional(
        "schedule get",
        &cols("SELECT {cols} FROM schedules WHERE id = $1"),
        binds![id],
        &|r| rows::schedule(r),
    )
    .await
}

/// `schedule_list`.
pub async fn list(run: &mut impl SqlRun, p: ScheduleList) -> Result<Vec<Schedule>> {
    // The cast gives the optional filter a type on PostgreSQL.
    run.fetch(
        "schedule list",
        &cols("SELECT {cols} FROM schedules WHERE (CAST($1 AS TEXT) IS NULL OR state = $1) ORDER BY id DESC LIMIT $2"),
        binds![p.state, p.limit.unwrap_or(100).clamp(1, 10_000)],
        &|r| rows::schedule(r),
    )
    .await
}

/// `schedule_update`.
pub async fn update(run: &mut impl SqlRun, p: ScheduleUpdate) -> Result<Option<Schedule>> {
    let d = &p.def;
    let mut b = binds![&p.id];
    b.extend(def_binds(d));
    b.extend(binds![
        d.paused,
        d.next_fire_at,
        d.now,
        ScheduleChannel::encode_all(&d.channels),
    ]);
    run.fetch_optional(
        "schedule update",
        &cols("UPDATE schedules SET name = $2, kind = $3, spec = $4, timezone = $5, period = $6, misfire = $7,
                payload = $8, endpoint_id = $9, retry = $10, channels = $14,
                state = CASE WHEN $11 THEN 'paused' ELSE 'active' END,
                next_fire_at = $12, locked_until = NULL, updated_at = $13
         WHERE id = $1 RETURNING {cols}"),
        b,
        &|r| rows::schedule(r),
    )
    .await
}

/// `schedule_pause`.
pub async fn pause(run: &mut impl SqlRun, p: SchedulePause) -> Result<Option<Schedule>> {
    run.fetch_optional(
        "schedule pause",
        &cols("UPDATE schedules SET
                state = CASE WHEN state = 'finished' THEN state WHEN $2 THEN 'paused' ELSE 'active' END,
                next_fire_at = CASE WHEN $2 OR state = 'finished' THEN next_fire_at ELSE $3 END,
                locked_until = NULL, updated_at = $4
         WHERE id = $1 RETURNING {cols}"),
        binds![p.id, p.paused, p.next_fire_at, p.now],
        &|r| rows::schedule(r),
    )
    .await
}

/// `schedule_delete`.
pub async fn delete(run: &mut impl SqlRun, id: &str) -> Result<bool> {
    let n = run
        .execute(
            "schedule delete",
            "DELETE FROM schedules WHERE id = $1",
            binds![id],
        )
        .await?;
    Ok(n > 0)
}

/// `schedule_release`.
pub async fn release(run: &mut impl SqlRun, p: ScheduleRelease) -> Result<u64> {
    run.execute(
        "schedule release",
        "UPDATE schedules SET locked_until = NULL, locked_by = NULL
         WHERE locked_by = $1 AND locked_until > $2",
        binds![p.node, p.now],
    )
    .await
}

/// `schedule_next_fire_at`.
pub async fn next_fire_at(run: &mut impl SqlRun) -> Result<Option<DateTime<Utc>>> {
    run.fetch_one(
        "schedule next fire",
        "SELECT MIN(next_fire_at) AS m FROM schedules WHERE state = 'active'",
        vec![],
        &|r| r.opt_ts("m"),
    )
    .await
}

/// `catch_up_set`, on a transaction's connection.
pub async fn catch_up_set(run: &mut impl SqlRun, p: CatchUpSet) -> Result<()> {
    run.execute(
        "catch-up set",
        "DELETE FROM schedule_catch_ups WHERE schedule_id = $1",
        binds![&p.schedule_id],
    )
    .await?;
    for c in p.entries {
        run.execute(
            "catch-up set",
            "INSERT INTO schedule_catch_ups (schedule_id, at, next_at) VALUES ($1, $2, $3)",
            binds![&p.schedule_id, c.at, c.next_at],
        )
        .await?;
    }
    Ok(())
}

/// `catch_up_list`.
pub async fn catch_up_list(run: &mut impl SqlRun, schedule_id: &str) -> Result<Vec<CatchUp>> {
    run.fetch(
        "catch-up list",
        "SELECT schedule_id, at, next_at FROM schedule_catch_ups WHERE schedule_id = $1 ORDER BY at",
        binds![schedule_id],
        &|r| rows::catch_up(r),
    )
    .await
}

/// `catch_up_due`.
pub async fn catch_up_due(run: &mut impl SqlRun, p: CatchUpDue) -> Result<Vec<CatchUp>> {
    run.fetch(
        "catch-up due",
        "SELECT c.schedule_id, c.at, c.next_at FROM schedule_catch_ups c
         JOIN schedules s ON s.id = c.schedule_id
         WHERE c.next_at IS NOT NULL AND c.next_at <= $1 AND s.state = 'active'
         ORDER BY c.next_at, c.schedule_id, c.at LIMIT $2",
        binds![p.now, p.limit.max(0)],
        &|r| rows::catch_up(r),
    )
    .await
}

/// `catch_up_next_at`.
pub async fn catch_up_next_at(run: &mut impl SqlRun) -> Result<Option<DateTime<Utc>>> {
    run.fetch_one(
        "catch-up next",
        "SELECT MIN(c.next_at) AS m FROM schedule_catch_ups c
         JOIN schedules s ON s.id = c.schedule_id WHERE s.state = 'active'",
        vec![],
        &|r| r.opt_ts("m"),
    )
    .await
}
