//! The one SQL and row layer of the two stores: row decoding written once over [`RowRead`],
//! the column lists, and statement text both databases run as it is.
//!
//! Each store implements [`RowRead`] for its rows (a newtype over sqlx's `SqliteRow` or
//! `PgRow`). The dialect lives in those impls: an instant is integer milliseconds on SQLite
//! and `timestamptz` on PostgreSQL, JSON is TEXT on SQLite and `jsonb` on PostgreSQL, a
//! boolean is an integer on SQLite. Shared statements are written with `$n` placeholders;
//! SQLite runs them through [`sqlite_placeholders`].

pub mod admin;
pub mod artifacts;
pub mod audience;
mod db;
pub mod deliverability;
pub mod deliveries;
pub mod delivery;
pub mod endpoint_health;
pub mod endpoints;
pub mod erase;
pub mod inbound;
pub mod insight;
pub mod job_admin;
mod jobs;
pub mod limits;
pub mod migrate;
pub mod nodes;
pub mod quarter_counts;
pub mod rows;
mod run;
pub mod samples;
pub mod schedules;
pub mod secrets;
mod statements;

pub use db::SqlDb;
pub use jobs::*;
pub use run::*;
pub use statements::*;

use crate::{Error, ErrorKind, Result};
use chrono::{DateTime, Utc};
use serde_json::Value;

/// Read a column of a row by name, decoded to the value kairos means by it.
///
/// Only the `opt_*` methods are the dialect's; the others follow (a `NULL` where a value is
/// required is `Corrupt`).
pub trait RowRead {
    /// A text column.
    fn opt_text(&self, col: &str) -> Result<Option<String>>;
    /// An integer column (any integer width).
    fn opt_int(&self, col: &str) -> Result<Option<i64>>;
    /// A boolean column.
    fn opt_bool(&self, col: &str) -> Result<Option<bool>>;
    /// An instant column.
    fn opt_ts(&self, col: &str) -> Result<Option<DateTime<Utc>>>;
    /// A JSON column; a stored value that is not JSON is `Corrupt`.
    fn opt_json(&self, col: &str) -> Result<Option<Value>>;
    /// A byte column (BLOB on SQLite, `bytea` on PostgreSQL).
    fn opt_bytes(&self, col: &str) -> Result<Option<Vec<u8>>>;

    /// A text column that is never `NULL`.
    fn text(&self, col: &str) -> Result<String> {
        self.opt_text(col)?.ok_or_else(|| null(col))
    }
    /// An integer column that is never `NULL`.
    fn int(&self, col: &str) -> Result<i64> {
        self.opt_int(col)?.ok_or_else(|| null(col))
    }
    /// A boolean column that is never `NULL`.
    fn boolean(&self, col: &str) -> Result<bool> {
        self.opt_bool(col)?.ok_or_else(|| null(col))
    }
    /// An instant column that is never `NULL`.
    fn ts(&self, col: &str) -> Result<DateTime<Utc>> {
        self.opt_ts(col)?.ok_or_else(|| null(col))
    }
    /// A JSON column that is never `NULL`.
    fn json(&self, col: &str) -> Result<Value> {
        self.opt_json(col)?.ok_or_else(|| null(col))
    }
}

fn null(col: &str) -> Error {
    Error::new(ErrorKind::Corrupt, format!("stored {col} is null"))
}

/// The error of a stored value that cannot be read as what it should be.
pub fn corrupt(what: &str, e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::new(ErrorKind::Corrupt, format!("stored {what} cannot be read")).with_source(e)
}

/// Parse JSON stored as text (SQLite's JSON columns).
pub fn parse_json(col: &str, text: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| corrupt(col, e))
}

/// Null-safe equality: SQLite's `IS`, PostgreSQL's `IS NOT DISTINCT FROM`.
pub fn null_eq(d: Dialect) -> &'static str {
    match d {
        Dialect::Sqlite => "IS",
        Dialect::Postgres => "IS NOT DISTINCT FROM",
    }
}

/// A shared statement with SQLite's placeholders: `$1` becomes `?1` (SQLite would read `$1` as
/// a named parameter numbered by first appearance, not by its digits).
pub fn sqlite_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(|d| d.is_ascii_digit()) {
            out.push('?');
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_placeholders_number_by_digits() {
        assert_eq!(
            sqlite_placeholders("UPDATE t SET a = $2 WHERE id = $1 AND b = '$x'"),
            "UPDATE t SET a = ?2 WHERE id = ?1 AND b = '$x'"
        );
    }
}
