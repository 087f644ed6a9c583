//! Row ↔ record mapping. Stored strings that this version does not know are kept (job
//! states) or read safely (schedule states), never a panic (S3-14).

use kairos_core::clock::{from_millis, to_millis};
use kairos_core::schedule::{Misfire, PeriodUnit, ScheduleSpec};
use kairos_core::{Job, JobKind, JobState, RetryPolicy};
use kairos_store::{Attempt, Endpoint, Error, ErrorKind, Schedule, ScheduleChannel, ScheduleState};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

/// The job columns, in the order `job_from_row` reads them.
pub(crate) const JOB_COLS: &str = "id, kind, state, payload, endpoint_id, schedule_id, fire_at, period_key, dedupe_key, attempt, retry, run_at, created_at, finished_at, locked_by, lease_token, lease_expires_at, last_error, reason, channel";

pub(crate) const SCHEDULE_COLS: &str = "id, name, kind, spec, timezone, period, misfire, payload, endpoint_id, retry, state, next_fire_at, last_fire_at, created_at, updated_at, channels";

fn corrupt(what: &str, e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::new(ErrorKind::Corrupt, format!("stored {what} cannot be read")).with_source(e)
}

pub(crate) fn get<'r, T: sqlx::Decode<'r, sqlx::Sqlite> + sqlx::Type<sqlx::Sqlite>>(
    row: &'r SqliteRow,
    col: &str,
) -> Result<T, Error> {
    row.try_get(col).map_err(|e| crate::map_err(col, e))
}

fn ts(row: &SqliteRow, col: &str) -> Result<chrono::DateTime<chrono::Utc>, Error> {
    Ok(from_millis(get::<i64>(row, col)?))
}

fn ts_opt(row: &SqliteRow, col: &str) -> Result<Option<chrono::DateTime<chrono::Utc>>, Error> {
    Ok(get::<Option<i64>>(row, col)?.map(from_millis))
}

pub(crate) fn ms_opt(t: Option<chrono::DateTime<chrono::Utc>>) -> Option<i64> {
    t.map(to_millis)
}

pub(crate) fn job_from_row(row: &SqliteRow) -> Result<Job, Error> {
    let payload: String = get(row, "payload")?;
    let retry: Option<String> = get(row, "retry")?;
    let kind: String = get(row, "kind")?;
    Ok(Job {
        id: get(row, "id")?,
        state: JobState::parse(&get::<String>(row, "state")?),
        payload: serde_json::from_str(&payload).map_err(|e| corrupt("job payload", e))?,
        endpoint_id: get(row, "endpoint_id")?,
        schedule_id: get(row, "schedule_id")?,
        fire_at: ts_opt(row, "fire_at")?,
        period_key: get(row, "period_key")?,
        channel: get(row, "channel")?,
        dedupe_key: get(row, "dedupe_key")?,
        attempt: get::<i64>(row, "attempt")? as i32,
        retry: kairos_store::batch::stored_retry_or_default(
            &kind,
            retry
                .map(|r| serde_json::from_str::<RetryPolicy>(&r))
                .transpose()
                .map_err(|e| corrupt("job retry policy", e))?,
        ),
        kind: JobKind(kind),
        run_at: ts(row, "run_at")?,
        created_at: ts(row, "created_at")?,
        finished_at: ts_opt(row, "finished_at")?,
        locked_by: get(row, "locked_by")?,
        lease_token: get(row, "lease_token")?,
        lease_expires_at: ts_opt(row, "lease_expires_at")?,
        last_error: get(row, "last_error")?,
        reason: get(row, "reason")?,
    })
}

pub(crate) fn schedule_from_row(row: &SqliteRow) -> Result<Schedule, Error> {
    let spec: String = get(row, "spec")?;
    let payload: String = get(row, "payload")?;
    let retry: Option<String> = get(row, "retry")?;
    let period: String = get(row, "period")?;
    let misfire: String = get(row, "misfire")?;
    Ok(Schedule {
        id: get(row, "id")?,
        name: get(row, "name")?,
        kind: JobKind(get(row, "kind")?),
        spec: serde_json::from_str::<ScheduleSpec>(&spec)
            .map_err(|e| corrupt("schedule spec", e))?,
        timezone: get(row, "timezone")?,
        period: PeriodUnit::parse(&period).map_err(|e| corrupt("schedule period", e))?,
        misfire: Misfire::parse(&misfire).map_err(|e| corrupt("schedule misfire", e))?,
        payload: serde_json::from_str(&payload).map_err(|e| corrupt("schedule payload", e))?,
        endpoint_id: get(row, "endpoint_id")?,
        retry: retry
            .map(|r| serde_json::from_str::<RetryPolicy>(&r))
            .transpose()
            .map_err(|e| corrupt("schedule retry policy", e))?,
        channels: ScheduleChannel::decode_all(
            get::<Option<String>>(row, "channels")?
                .map(|c| serde_json::from_str(&c))
                .transpose()
                .map_err(|e| corrupt("schedule channels", e))?,
        )
        .map_err(|e| corrupt("schedule channels", e))?,
        state: ScheduleState::parse(&get::<String>(row, "state")?),
        next_fire_at: ts_opt(row, "next_fire_at")?,
        last_fire_at: ts_opt(row, "last_fire_at")?,
        created_at: ts(row, "created_at")?,
        updated_at: ts(row, "updated_at")?,
    })
}

pub(crate) fn endpoint_from_row(row: &SqliteRow) -> Result<Endpoint, Error> {
    Ok(Endpoint {
        id: get(row, "id")?,
        url: get(row, "url")?,
        secret: get(row, "secret")?,
        disabled_at: ts_opt(row, "disabled_at")?,
        disabled_reason: get(row, "disabled_reason")?,
        last_failure_at: ts_opt(row, "last_failure_at")?,
        last_failure: get(row, "last_failure")?,
        created_at: ts(row, "created_at")?,
    })
}

pub(crate) fn attempt_from_row(row: &SqliteRow) -> Result<Attempt, Error> {
    Ok(Attempt {
        job_id: get(row, "job_id")?,
        attempt: get::<i64>(row, "attempt")? as i32,
        started_at: ts(row, "started_at")?,
        finished_at: ts(row, "finished_at")?,
        outcome: get(row, "outcome")?,
        error_class: get(row, "error_class")?,
        status_code: get::<Option<i64>>(row, "status_code")?.map(|s| s as i32),
        error: get(row, "error")?,
        response: get(row, "response")?,
        provider_id: get(row, "provider_id")?,
        node: get(row, "node")?,
    })
}
