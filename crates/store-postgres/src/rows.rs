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
        // `bigint`, `integer` or `smallint`, whichever the column is: asked of the column's
        // type, not found by trying each width (a failed decode builds an error, and every
        // claimed job has an `integer` column).
        use sqlx::{TypeInfo, ValueRef};
        let raw = self
            .0
            .try_get_raw(col)
            .map_err(|e| crate::map_err(col, e))?;
        match raw.type_info().name() {
            "INT4" => get::<Option<i32>>(self.0, col).map(|v| v.map(i64::from)),
            "INT2" => get::<Option<i16>>(self.0, col).map(|v| v.map(i64::from)),
            _ => get::<Option<i64>>(self.0, col),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `smallint`, `integer` and `bigint` columns, NULL or not, read as `i64` by the column's
    /// declared type; a column of another type or a missing one is an error naming it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn integers_of_every_width_and_null_read_as_i64() {
        let Some(guard) =
            kairos_testkit::pg::fresh_schema("kairos_rows", "Reading integer columns").await
        else {
            return;
        };
        let pool = sqlx::PgPool::connect(&guard.url).await.expect("connect");
        let row = sqlx::query(
            "SELECT 7::int2 AS a, -2::int4 AS b, 3000000000::int8 AS c, NULL::int4 AS d,
                    NULL::int2 AS e, NULL::int8 AS f, 'x'::text AS t",
        )
        .fetch_one(&pool)
        .await
        .expect("select");
        let r = Pg(&row);
        assert_eq!(r.opt_int("a").unwrap(), Some(7));
        assert_eq!(r.opt_int("b").unwrap(), Some(-2));
        assert_eq!(r.opt_int("c").unwrap(), Some(3_000_000_000));
        assert_eq!(r.opt_int("d").unwrap(), None);
        assert_eq!(r.opt_int("e").unwrap(), None);
        assert_eq!(r.opt_int("f").unwrap(), None);
        let wrong = r.opt_int("t").unwrap_err().to_string();
        assert!(
            wrong.starts_with("t: ") && wrong.contains("TEXT"),
            "names the column and its type: {wrong}"
        );
        assert!(r.opt_int("missing").is_err());
        pool.close().await;
    }
}
