//! The SQLite side of the shared row layer (`kairos_store::sql`): instants are integer
//! milliseconds, JSON is TEXT, booleans are integers. The mappers themselves are shared.

use kairos_core::clock::{from_millis, to_millis};
use kairos_store::sql::{RowRead, parse_json};
use kairos_store::{Error, Result};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

pub(crate) use kairos_store::sql::JOB_COLS;

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
    fn opt_bytes(&self, col: &str) -> Result<Option<Vec<u8>>> {
        get(self.0, col)
    }
}

/// A shared `kairos_store::sql` statement with SQLite's placeholders, ready for
/// `sqlx::query` (the text is the crate's own constant, not input).
pub(crate) fn shared(sql: &str) -> sqlx::AssertSqlSafe<String> {
    sqlx::AssertSqlSafe(kairos_store::sql::sqlite_placeholders(sql))
}

fn bind_all(
    sql: &str,
    binds: Vec<kairos_store::sql::Bind>,
) -> sqlx::query::Query<'static, sqlx::Sqlite, sqlx::sqlite::SqliteArguments> {
    use kairos_store::sql::Bind;
    let mut q = sqlx::query(shared(sql));
    for b in binds {
        q = match b {
            Bind::Text(v) => q.bind(v),
            Bind::Int(v) => q.bind(v),
            Bind::Bool(v) => q.bind(v.map(i64::from)),
            Bind::Ts(v) => q.bind(v.map(to_millis)),
            Bind::Json(v) => q.bind(v.map(|v| v.to_string())),
            Bind::Bytes(v) => q.bind(v),
            Bind::TextList(v) => q.bind(serde_json::json!(v).to_string()),
        };
    }
    q
}

kairos_store::sql_run!(
    SqRun,
    sqlx::SqlitePool,
    sqlx::SqliteConnection,
    kairos_store::sql::Dialect::Sqlite,
    bind_all,
    Sq,
    crate::map_err
);
