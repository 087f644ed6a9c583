//! Schedules and their catch-up times ([`crate::ScheduleStore`]), written once over
//! [`SqlRun`]; only the claim of due schedules has a statement per dialect.

use super::{GAP_COLS, SCHEDULE_COLS, SqlRun, rows};
use crate::binds;
use crate::{
    CatchUp, CatchUpDue, CatchUpSet, OccurrenceOpen, Result, Schedule, ScheduleBufferFire,
    ScheduleBuffered, ScheduleChannel, ScheduleCreate, ScheduleGap, ScheduleGapList, ScheduleList,
    SchedulePause, ScheduleRelease, ScheduleUpdate,
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

/// A duration as stored: whole milliseconds.
fn ms(d: Option<std::time::Duration>) -> Option<i64> {
    d.map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The schedule's concurrency limit as stored: JSON, or NULL.
fn concurrency(d: &ScheduleCreate) -> Option<serde_json::Value> {
    d.concurrency
        .as_ref()
        .map(|c| serde_json::to_value(c).unwrap_or_default())
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
        ms(p.misfire_threshold),
        ms(p.misfire_window),
        concurrency(&p),
        p.overlap.as_str(),
    ]);
    run.fetch_one(
        "schedule create",
        &cols("INSERT INTO schedules (id, name, kind, spec, timezone, period, misfire, payload, endpoint_id, retry, state, next_fire_at, created_at, updated_at, channels, misfire_threshold_ms, misfire_window_ms, concurrency, overlap)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $13, $14, $15, $16, $17, $18)
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
        ms(d.misfire_threshold),
        ms(d.misfire_window),
        concurrency(d),
        d.overlap.as_str(),
    ]);
    run.fetch_optional(
        "schedule update",
        &cols("UPDATE schedules SET name = $2, kind = $3, spec = $4, timezone = $5, period = $6, misfire = $7,
                payload = $8, endpoint_id = $9, retry = $10, channels = $14,
                misfire_threshold_ms = $15, misfire_window_ms = $16, concurrency = $17, overlap = $18,
                buffered_fire_at = NULL,
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

/// `schedule_due` on SQLite: the one writer serializes claimers.
const DUE_SQLITE: &str = "UPDATE schedules SET locked_until = $2, locked_by = $3
     WHERE id IN (SELECT id FROM schedules
                  WHERE state = 'active' AND next_fire_at <= $1
                    AND (locked_until IS NULL OR locked_until <= $1)
                  ORDER BY next_fire_at, id LIMIT $4)
     RETURNING {cols}";

/// `schedule_due` on PostgreSQL: the due schedules are locked with `FOR UPDATE SKIP LOCKED`
/// in a CTE (run exactly once), so schedulers on several nodes claim disjoint schedules
/// without waiting; the time lock (`locked_until`) then keeps each with its node while it
/// expands the firing.
const DUE_POSTGRES: &str = "WITH due (due_id) AS (
         SELECT id FROM schedules
         WHERE state = 'active' AND next_fire_at <= $1
           AND (locked_until IS NULL OR locked_until <= $1)
         ORDER BY next_fire_at, id LIMIT $4
         FOR UPDATE SKIP LOCKED)
     UPDATE schedules SET locked_until = $2, locked_by = $3
     FROM due WHERE schedules.id = due.due_id
     RETURNING {cols}";

/// `schedule_due`: claim due schedules for `p.node` until `p.lock_until`, soonest first.
pub async fn due(run: &mut impl SqlRun, p: crate::ScheduleDue) -> Result<Vec<Schedule>> {
    let sql = match run.dialect() {
        super::Dialect::Sqlite => DUE_SQLITE,
        super::Dialect::Postgres => DUE_POSTGRES,
    };
    let mut out = run
        .fetch(
            "schedule due",
            &cols(sql),
            binds![p.now, p.lock_until, p.node, p.limit.max(0)],
            &|r| rows::schedule(r),
        )
        .await?;
    out.sort_by(|a, b| (a.next_fire_at, &a.id).cmp(&(b.next_fire_at, &b.id)));
    Ok(out)
}

/// The UPDATE that advances a schedule for `schedule_fire` (parameters: id, the expected and
/// the new next firing, the last firing, now, a held firing). Only a firing that leaves no next
/// one (`finishing`) sets `state`: on SQLite a write of `state` evaluates its check, a list of
/// three names that SQLite codes as a temporary b-tree built and freed per statement, and a
/// recurring schedule's firing has no state to change. Exposed for checks of its program
/// (`crates/store-sqlite/tests/schedule_fire_program.rs`).
pub fn fire_statement(dialect: super::Dialect, finishing: bool) -> String {
    let state = if finishing {
        "state = CASE WHEN state = 'active' THEN 'finished' ELSE state END,"
    } else {
        ""
    };
    format!(
        "UPDATE schedules SET next_fire_at = $3,
                last_fire_at = COALESCE($4, last_fire_at),
                buffered_fire_at = COALESCE($6, buffered_fire_at),
                {state}
                locked_until = NULL, locked_by = NULL, updated_at = $5
         WHERE id = $1 AND next_fire_at {} $2",
        super::null_eq(dialect)
    )
}

/// `schedule_fire`, in a transaction: advance the schedule only if it still expects this
/// firing, then insert its jobs. The UPDATE locks the row (PostgreSQL), so a second firing of
/// the same occurrence waits, then sees the advanced value and matches nothing.
pub async fn fire(run: &mut impl SqlRun, p: crate::ScheduleFire) -> Result<crate::ScheduleFired> {
    let sql = fire_statement(run.dialect(), p.next_fire_at.is_none());
    let b = binds![
        &p.schedule_id,
        p.expected_next_fire_at,
        p.next_fire_at,
        p.last_fire_at,
        p.now,
        p.buffer
    ];
    if run.execute("schedule fire", &sql, b).await? == 0 {
        // Another node (or an earlier tick) already materialized these firings.
        return Ok(crate::ScheduleFired::default());
    }
    if p.on_time {
        // Before this firing's own gaps go in: they stay open until the next on-time firing.
        run.execute(
            "schedule fire (recover gaps)",
            "UPDATE schedule_gaps SET recovered_at = $2 WHERE schedule_id = $1 AND recovered_at IS NULL",
            binds![&p.schedule_id, p.now],
        )
        .await?;
    }
    for g in &p.gaps {
        run.execute(
            "schedule fire (gaps)",
            "INSERT INTO schedule_gaps (schedule_id, reason, first_fire_at, last_fire_at, count, recorded_at)
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (schedule_id, first_fire_at, reason) DO NOTHING",
            binds![&p.schedule_id, &g.reason, g.first_fire_at, g.last_fire_at, g.count, p.now],
        )
        .await?;
    }
    let created = super::jobs_insert(run, "schedule fire (jobs)", &p.jobs).await?;
    Ok(crate::ScheduleFired {
        advanced: true,
        created,
    })
}

/// `schedule_buffered`: active schedules holding a firing, the oldest held first.
pub async fn buffered(run: &mut impl SqlRun, p: ScheduleBuffered) -> Result<Vec<Schedule>> {
    run.fetch(
        "schedule buffered",
        &cols(
            "SELECT {cols} FROM schedules
               WHERE buffered_fire_at IS NOT NULL AND state = 'active'
               ORDER BY buffered_fire_at, id LIMIT $1",
        ),
        binds![p.limit.max(0)],
        &|r| rows::schedule(r),
    )
    .await
}

/// `schedule_buffer_fire`, in a transaction: release the held firing only if it is still the
/// expected one (it becomes `last_fire_at`), then insert its jobs.
pub async fn buffer_fire(
    run: &mut impl SqlRun,
    p: ScheduleBufferFire,
) -> Result<crate::ScheduleFired> {
    let n = run
        .execute(
            "schedule buffer fire",
            "UPDATE schedules SET buffered_fire_at = NULL, updated_at = $3,
                    last_fire_at = CASE WHEN last_fire_at IS NULL OR last_fire_at < $2
                                        THEN $2 ELSE last_fire_at END
             WHERE id = $1 AND buffered_fire_at = $2",
            binds![&p.schedule_id, p.buffered_fire_at, p.now],
        )
        .await?;
    if n == 0 {
        return Ok(crate::ScheduleFired::default());
    }
    let created = super::jobs_insert(run, "schedule buffer fire (jobs)", &p.jobs).await?;
    Ok(crate::ScheduleFired {
        advanced: true,
        created,
    })
}

/// `occurrence_open`: ids of an occurrence's jobs that have not finished, oldest first.
pub async fn occurrence_open(run: &mut impl SqlRun, p: OccurrenceOpen) -> Result<Vec<String>> {
    run.fetch(
        "occurrence open",
        "SELECT id FROM jobs
         WHERE schedule_id = $1 AND period_key = $2 AND state IN ('available', 'running')
         ORDER BY id LIMIT $3",
        binds![&p.schedule_id, &p.period_key, p.limit.clamp(1, 10_000)],
        &|r| r.text("id"),
    )
    .await
}

/// `schedule_gap_list`.
pub async fn gap_list(run: &mut impl SqlRun, p: ScheduleGapList) -> Result<Vec<ScheduleGap>> {
    // The cast gives the optional filter a type on PostgreSQL.
    run.fetch(
        "schedule gap list",
        &format!(
            "SELECT {GAP_COLS} FROM schedule_gaps
             WHERE (CAST($1 AS TEXT) IS NULL OR schedule_id = $1) AND (NOT $2 OR recovered_at IS NULL)
             ORDER BY first_fire_at DESC, schedule_id, reason LIMIT $3"
        ),
        binds![p.schedule_id, p.open, p.limit.unwrap_or(100).clamp(1, 10_000)],
        &|r| rows::schedule_gap(r),
    )
    .await
}

/// `catch_up_fire`, in a transaction: move the catch-up's next time only if it is still the
/// expected one, then insert its jobs.
pub async fn catch_up_fire(
    run: &mut impl SqlRun,
    p: crate::CatchUpFire,
) -> Result<crate::ScheduleFired> {
    let sql = format!(
        "UPDATE schedule_catch_ups SET next_at = $4
         WHERE schedule_id = $1 AND at = $2 AND next_at {} $3",
        super::null_eq(run.dialect())
    );
    let b = binds![p.schedule_id, p.at, p.expected_next_at, p.next_at];
    if run.execute("catch-up fire", &sql, b).await? == 0 {
        return Ok(crate::ScheduleFired::default());
    }
    let created = super::jobs_insert(run, "catch-up fire (jobs)", &p.jobs).await?;
    Ok(crate::ScheduleFired {
        advanced: true,
        created,
    })
}

#[async_trait::async_trait]
impl<D: super::SqlDb> crate::ScheduleStore for D {
    async fn schedule_create(&self, p: ScheduleCreate) -> Result<Schedule> {
        create(&mut self.writer(), p).await
    }

    async fn schedule_get(&self, id: &str) -> Result<Option<Schedule>> {
        get(&mut self.reader(), id).await
    }

    async fn schedule_list(&self, p: ScheduleList) -> Result<Vec<Schedule>> {
        list(&mut self.reader(), p).await
    }

    async fn schedule_update(&self, p: ScheduleUpdate) -> Result<Option<Schedule>> {
        update(&mut self.writer(), p).await
    }

    async fn schedule_pause(&self, p: SchedulePause) -> Result<Option<Schedule>> {
        pause(&mut self.writer(), p).await
    }

    async fn schedule_delete(&self, id: &str) -> Result<bool> {
        delete(&mut self.writer(), id).await
    }

    async fn schedule_due(&self, p: crate::ScheduleDue) -> Result<Vec<Schedule>> {
        due(&mut self.writer(), p).await
    }

    async fn schedule_release(&self, p: ScheduleRelease) -> Result<u64> {
        release(&mut self.writer(), p).await
    }

    async fn schedule_fire(&self, p: crate::ScheduleFire) -> Result<crate::ScheduleFired> {
        let mut tx = self.begin("schedule fire").await?;
        let out = fire(&mut D::in_tx(&mut tx), p).await?;
        if out.advanced {
            self.commit(tx, "schedule fire").await?;
        }
        Ok(out)
    }

    async fn schedule_next_fire_at(&self) -> Result<Option<DateTime<Utc>>> {
        next_fire_at(&mut self.reader()).await
    }

    async fn catch_up_set(&self, p: CatchUpSet) -> Result<()> {
        let mut tx = self.begin("catch-up set").await?;
        catch_up_set(&mut D::in_tx(&mut tx), p).await?;
        self.commit(tx, "catch-up set").await
    }

    async fn catch_up_list(&self, schedule_id: &str) -> Result<Vec<CatchUp>> {
        catch_up_list(&mut self.reader(), schedule_id).await
    }

    async fn catch_up_due(&self, p: CatchUpDue) -> Result<Vec<CatchUp>> {
        catch_up_due(&mut self.reader(), p).await
    }

    async fn catch_up_next_at(&self) -> Result<Option<DateTime<Utc>>> {
        catch_up_next_at(&mut self.reader()).await
    }

    async fn catch_up_fire(&self, p: crate::CatchUpFire) -> Result<crate::ScheduleFired> {
        let mut tx = self.begin("catch-up fire").await?;
        let out = catch_up_fire(&mut D::in_tx(&mut tx), p).await?;
        if out.advanced {
            self.commit(tx, "catch-up fire").await?;
        }
        Ok(out)
    }

    async fn schedule_gap_list(&self, p: ScheduleGapList) -> Result<Vec<ScheduleGap>> {
        gap_list(&mut self.reader(), p).await
    }

    async fn schedule_buffered(&self, p: ScheduleBuffered) -> Result<Vec<Schedule>> {
        buffered(&mut self.reader(), p).await
    }

    async fn schedule_buffer_fire(&self, p: ScheduleBufferFire) -> Result<crate::ScheduleFired> {
        let mut tx = self.begin("schedule buffer fire").await?;
        let out = buffer_fire(&mut D::in_tx(&mut tx), p).await?;
        if out.advanced {
            self.commit(tx, "schedule buffer fire").await?;
        }
        Ok(out)
    }

    async fn occurrence_open(&self, p: OccurrenceOpen) -> Result<Vec<String>> {
        occurrence_open(&mut self.reader(), p).await
    }
}
