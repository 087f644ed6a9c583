//! The PostgreSQL side of the shared row layer (`kairos_store::sql`): instants are
//! `timestamptz`, JSON is `jsonb`, integers come in several widths. The mappers themselves are
//! shared.

use chrono::{DateTime, Utc};
use kairos_core::Job;
use kairos_store::sql::{RowRead, rows};
use kairos_store::{Error, Result};
use serde_json::Value;
use sqlx::Row;
use sqlx::postgres::PgRow;

pub(crate) use kairos_store::sql::JOB_COLS;

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
            Bind::Bytes(v) => q.bind(v),
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
