//! Row ↔ record mapping. Stored strings that this version does not know are kept (job
//! states) or read safely (schedule states), never a panic (S3-14).
//!
//! Differs from SQLite: instants are `timestamptz` read as `DateTime<Utc>` directly, and JSON
//! columns are `jsonb` read as `serde_json::Value` (no string parsing).

use chrono::{DateTime, Utc};
use kairos_core::schedule::{Misfire, PeriodUnit, ScheduleSpec};
use kairos_core::{Job, JobKind, JobState, RetryPolicy};
use kairos_store::{Attempt, Endpoint, Error, ErrorKind, Schedule, ScheduleChannel, ScheduleState};
use serde_json::Value;
use sqlx::Row;
use sqlx::postgres::PgRow;

/// The job columns, in the order `job_from_row` reads them (the same list as SQLite's).
pub(crate) const JOB_COLS: &str = "id, kind, state, payload, endpoint_id, schedule_id, fire_at, period_key, dedupe_key, attempt, retry, run_at, created_at, finished_at, locked_by, lease_token, lease_expires_at, last_error, reason, channel";

pub(crate) const SCHEDULE_COLS: &str = "id, name, kind, spec, timezone, period, misfire, payload, endpoint_id, retry, state, next_fire_at, last_fire_at, created_at, updated_at, channels";

pub(crate) const ENDPOINT_COLS: &str =
    "id, url, secret, disabled_at, disabled_reason, last_failure_at, last_failure, created_at";

pub(crate) const ATTEMPT_COLS: &str = "job_id, attempt, started_at, finished_at, outcome, error_class, status_code, error, response, provider_id, node";

fn corrupt(what: &str, e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::new(ErrorKind::Corrupt, format!("stored {what} cannot be read")).with_source(e)
}

pub(crate) fn get<'r, T: sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>>(
    row: &'r PgRow,
    col: &str,
) -> Result<T, Error> {
    row.try_get(col).map_err(|e| crate::map_err(col, e))
}

pub(crate) fn job_from_row(row: &PgRow) -> Result<Job, Error> {
    let retry: Option<Value> = get(row, "retry")?;
    let kind: String = get(row, "kind")?;
    Ok(Job {
        id: get(row, "id")?,
        state: JobState::parse(&get::<String>(row, "state")?),
        payload: get(row, "payload")?,
        endpoint_id: get(row, "endpoint_id")?,
        schedule_id: get(row, "schedule_id")?,
        fire_at: get(row, "fire_at")?,
        period_key: get(row, "period_key")?,
        channel: get(row, "channel")?,
        dedupe_key: get(row, "dedupe_key")?,
        attempt: get(row, "attempt")?,
        retry: kairos_store::batch::stored_retry_or_default(
            &kind,
            retry
                .map(serde_json::from_value::<RetryPolicy>)
                .transpose()
                .map_err(|e| corrupt("job retry policy", e))?,
        ),
        kind: JobKind(kind),
        run_at: get(row, "run_at")?,
        created_at: get(row, "created_at")?,
        finished_at: get(row, "finished_at")?,
        locked_by: get(row, "locked_by")?,
        lease_token: get(row, "lease_token")?,
        lease_expires_at: get(row, "lease_expires_at")?,
        last_error: get(row, "last_error")?,
        reason: get(row, "reason")?,
    })
}

pub(crate) fn schedule_from_row(row: &PgRow) -> Result<Schedule, Error> {
    let spec: Value = get(row, "spec")?;
    let retry: Option<Value> = get(row, "retry")?;
    let period: String = get(row, "period")?;
    let misfire: String = get(row, "misfire")?;
    Ok(Schedule {
        id: get(row, "id")?,
        name: get(row, "name")?,
        kind: JobKind(get(row, "kind")?),
        spec: serde_json::from_value::<ScheduleSpec>(spec)
            .map_err(|e| corrupt("schedule spec", e))?,
        timezone: get(row, "timezone")?,
        period: PeriodUnit::parse(&period).map_err(|e| corrupt("schedule period", e))?,
        misfire: Misfire::parse(&misfire).map_err(|e| corrupt("schedule misfire", e))?,
        payload: get(row, "payload")?,
        endpoint_id: get(row, "endpoint_id")?,
        retry: retry
            .map(serde_json::from_value::<RetryPolicy>)
            .transpose()
            .map_err(|e| corrupt("schedule retry policy", e))?,
        channels: ScheduleChannel::decode_all(get(row, "channels")?)
            .map_err(|e| corrupt("schedule channels", e))?,
        state: ScheduleState::parse(&get::<String>(row, "state")?),
        next_fire_at: get(row, "next_fire_at")?,
        last_fire_at: get(row, "last_fire_at")?,
        created_at: get(row, "created_at")?,
        updated_at: get(row, "updated_at")?,
    })
}

pub(crate) fn endpoint_from_row(row: &PgRow) -> Result<Endpoint, Error> {
    Ok(Endpoint {
        id: get(row, "id")?,
        url: get(row, "url")?,
        secret: get(row, "secret")?,
        disabled_at: get(row, "disabled_at")?,
        disabled_reason: get(row, "disabled_reason")?,
        last_failure_at: get(row, "last_failure_at")?,
        last_failure: get(row, "last_failure")?,
        created_at: get(row, "created_at")?,
    })
}

pub(crate) fn attempt_from_row(row: &PgRow) -> Result<Attempt, Error> {
    Ok(Attempt {
        job_id: get(row, "job_id")?,
        attempt: get(row, "attempt")?,
        started_at: get(row, "started_at")?,
        finished_at: get(row, "finished_at")?,
        outcome: get(row, "outcome")?,
        error_class: get(row, "error_class")?,
        status_code: get(row, "status_code")?,
        error: get(row, "error")?,
        response: get(row, "response")?,
        provider_id: get(row, "provider_id")?,
        node: get(row, "node")?,
    })
}

/// An instant as JSON text for `jsonb_to_recordset`, which reads it into a `timestamptz`
/// column: RFC 3339 in UTC with microseconds, PostgreSQL's own precision.
pub(crate) fn ts_json(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}
