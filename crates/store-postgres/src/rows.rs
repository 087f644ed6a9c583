//! The PostgreSQL side of the shared row layer (`kairos_store::sql`): instants are
//! `timestamptz`, JSON is `jsonb`, integers come in several widths. The mappers themselves are
//! shared.

use chrono::{DateTime, Utc};
use kairos_core::Job;
use kairos_store::sql::{RowRead, rows};
use kairos_store::{Attempt, Error, Result, Schedule};
use serde_json::Value;
use sqlx::Row;
use sqlx::postgres::PgRow;

pub(crate) use kairos_store::sql::{ATTEMPT_COLS, JOB_COLS, SCHEDULE_COLS};

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
    fn opt_bytes(&self, col: &str) -> Result<Option<Vec<u8>>> {
        get(self.0, col)
    }
}

pub(crate) fn job_from_row(row: &PgRow) -> Result<Job> {
    rows::job(&Pg(row))
}

pub(crate) fn schedule_from_row(row: &PgRow) -> Result<Schedule> {
    rows::schedule(&Pg(row))
}

pub(crate) fn attempt_from_row(row: &PgRow) -> Result<Attempt> {
    rows::attempt(&Pg(row))
}

/// An instant as JSON text for `jsonb_to_recordset`, which reads it into a `timestamptz`
/// column: RFC 3339 in UTC with microseconds, PostgreSQL's own precision.
pub(crate) fn ts_json(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

fn bind_all(
    sql: &str,
    binds: Vec<kairos_store::sql::Bind>,
) -> sqlx::query::Query<'static, sqlx::Postgres, sqlx::postgres::PgArguments> {
    use kairos_store::sql::Bind;
    let mut q = sqlx::query(sqlx::AssertSqlSafe(sql.to_string()));
    for b in binds {
        q = match b {
            Bind::Text(v) => q.bind(v),
            Bind::Int(v) => q.bind(v),
            Bind::Bool(v) => q.bind(v),
            Bind::Ts(v) => q.bind(v),
            Bind::Json(v) => q.bind(v),
            Bind::TextList(v) => q.bind(v),
        };
    }
    q
}

kairos_store::sql_run!(
    PgRun,
    sqlx::PgPool,
    sqlx::PgConnection,
    kairos_store::sql::Dialect::Postgres,
    bind_all,
    Pg,
    crate::map_err
);
