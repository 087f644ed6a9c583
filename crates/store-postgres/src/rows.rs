//! The PostgreSQL side of the shared row layer (`kairos_store::sql`): instants are
//! `timestamptz`, JSON is `jsonb`, integers come in several widths. The mappers themselves are
//! shared.

use chrono::{DateTime, Utc};
use kairos_core::Job;
use kairos_store::sql::{RowRead, rows};
use kairos_store::{Attempt, Endpoint, Error, Result, Schedule};
use serde_json::Value;
use sqlx::Row;
use sqlx::postgres::PgRow;

pub(crate) use kairos_store::sql::{ATTEMPT_COLS, ENDPOINT_COLS, JOB_COLS, SCHEDULE_COLS};

/// A sqlx PostgreSQL row read through [`RowRead`].
pub(crate) struct Pg<'r>(pub &'r PgRow);

pub(crate) fn get<'r, T: sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>>(
    row: &'r PgRow,
    col: &str,
) -> Result<T, Error> {
    row.try_get(col).map_err(|e| crate::map_err(col, e))
}

impl RowRead for Pg<'_> {
    fn opt_text(&self, col: &str) -> Result<Option<String>> {
        get(self.0, col)
    }
    fn opt_int(&self, col: &str) -> Result<Option<i64>> {
        // `bigint`, `integer` or `smallint`, whichever the column is.
        get::<Option<i64>>(self.0, col)
            .or_else(|_| get::<Option<i32>>(self.0, col).map(|v| v.map(i64::from)))
            .or_else(|_| get::<Option<i16>>(self.0, col).map(|v| v.map(i64::from)))
    }
    fn opt_bool(&self, col: &str) -> Result<Option<bool>> {
        get(self.0, col)
    }
    fn opt_ts(&self, col: &str) -> Result<Option<DateTime<Utc>>> {
        get(self.0, col)
    }
    fn opt_json(&self, col: &str) -> Result<Option<Value>> {
        get(self.0, col)
    }
}

pub(crate) fn job_from_row(row: &PgRow) -> Result<Job> {
    rows::job(&Pg(row))
}

pub(crate) fn schedule_from_row(row: &PgRow) -> Result<Schedule> {
    rows::schedule(&Pg(row))
}

pub(crate) fn endpoint_from_row(row: &PgRow) -> Result<Endpoint> {
    rows::endpoint(&Pg(row))
}

pub(crate) fn attempt_from_row(row: &PgRow) -> Result<Attempt> {
    rows::attempt(&Pg(row))
}

/// An instant as JSON text for `jsonb_to_recordset`, which reads it into a `timestamptz`
/// column: RFC 3339 in UTC with microseconds, PostgreSQL's own precision.
pub(crate) fn ts_json(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}
