//! The SQLite side of the shared row layer (`kairos_store::sql`): instants are integer
//! milliseconds, JSON is TEXT, booleans are integers. The mappers themselves are shared.

use kairos_core::Job;
use kairos_core::clock::{from_millis, to_millis};
use kairos_store::sql::{RowRead, parse_json, rows};
use kairos_store::{Attempt, Endpoint, Error, Result, Schedule};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

pub(crate) use kairos_store::sql::{JOB_COLS, SCHEDULE_COLS};

/// A sqlx SQLite row read through [`RowRead`].
pub(crate) struct Sq<'r>(pub &'r SqliteRow);

pub(crate) fn get<'r, T: sqlx::Decode<'r, sqlx::Sqlite> + sqlx::Type<sqlx::Sqlite>>(
    row: &'r SqliteRow,
    col: &str,
) -> Result<T, Error> {
    row.try_get(col).map_err(|e| crate::map_err(col, e))
}

impl RowRead for Sq<'_> {
    fn opt_text(&self, col: &str) -> Result<Option<String>> {
        get(self.0, col)
    }
    fn opt_int(&self, col: &str) -> Result<Option<i64>> {
        get(self.0, col)
    }
    fn opt_bool(&self, col: &str) -> Result<Option<bool>> {
        Ok(get::<Option<i64>>(self.0, col)?.map(|v| v != 0))
    }
    fn opt_ts(&self, col: &str) -> Result<Option<chrono::DateTime<chrono::Utc>>> {
        Ok(get::<Option<i64>>(self.0, col)?.map(from_millis))
    }
    fn opt_json(&self, col: &str) -> Result<Option<serde_json::Value>> {
        get::<Option<String>>(self.0, col)?
            .map(|s| parse_json(col, &s))
            .transpose()
    }
}

pub(crate) fn ms_opt(t: Option<chrono::DateTime<chrono::Utc>>) -> Option<i64> {
    t.map(to_millis)
}

pub(crate) fn job_from_row(row: &SqliteRow) -> Result<Job> {
    rows::job(&Sq(row))
}

pub(crate) fn schedule_from_row(row: &SqliteRow) -> Result<Schedule> {
    rows::schedule(&Sq(row))
}

pub(crate) fn endpoint_from_row(row: &SqliteRow) -> Result<Endpoint> {
    rows::endpoint(&Sq(row))
}

pub(crate) fn attempt_from_row(row: &SqliteRow) -> Result<Attempt> {
    rows::attempt(&Sq(row))
}
