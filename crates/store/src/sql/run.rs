//! Running a shared statement on either store: [`SqlRun`] is what each store implements (bind
//! the values its way, number the placeholders its way, read its rows through [`RowRead`]), so
//! that the method bodies that are the same on both databases are written once, over it.

use super::RowRead;
use crate::Result;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::Value;

/// Which database a statement runs on, for the few statements whose text differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite: instants as integer milliseconds, JSON as TEXT, booleans as integers.
    Sqlite,
    /// PostgreSQL: `timestamptz`, `jsonb`, `boolean`, arrays.
    Postgres,
}

impl Dialect {
    /// How this database wants the values of a JSON batch encoded.
    pub fn batch_encoding(self) -> crate::batch::BatchEncoding {
        match self {
            Dialect::Sqlite => crate::batch::BatchEncoding::SQLITE,
            Dialect::Postgres => crate::batch::BatchEncoding::POSTGRES,
        }
    }
}

/// A value bound to a statement parameter; the store encodes it the way its columns hold it.
#[derive(Debug, Clone)]
pub enum Bind {
    /// Text, or `NULL`.
    Text(Option<String>),
    /// An integer, or `NULL`.
    Int(Option<i64>),
    /// A boolean, or `NULL`.
    Bool(Option<bool>),
    /// An instant, or `NULL`.
    Ts(Option<DateTime<Utc>>),
    /// A JSON value, or `NULL`.
    Json(Option<Value>),
    /// Bytes (BLOB on SQLite, `bytea` on PostgreSQL), or `NULL`.
    Bytes(Option<Vec<u8>>),
    /// A list of text: a JSON array on SQLite (read with `json_each`), an array on PostgreSQL.
    TextList(Vec<String>),
}

impl From<Value> for Bind {
    fn from(v: Value) -> Self {
        Bind::Json(Some(v))
    }
}
impl From<Option<Value>> for Bind {
    fn from(v: Option<Value>) -> Self {
        Bind::Json(v)
    }
}
impl From<Vec<u8>> for Bind {
    fn from(v: Vec<u8>) -> Self {
        Bind::Bytes(Some(v))
    }
}
impl From<&str> for Bind {
    fn from(v: &str) -> Self {
        Bind::Text(Some(v.to_string()))
    }
}
impl From<String> for Bind {
    fn from(v: String) -> Self {
        Bind::Text(Some(v))
    }
}
impl From<&String> for Bind {
    fn from(v: &String) -> Self {
        Bind::Text(Some(v.clone()))
    }
}
impl From<Option<String>> for Bind {
    fn from(v: Option<String>) -> Self {
        Bind::Text(v)
    }
}
impl From<i64> for Bind {
    fn from(v: i64) -> Self {
        Bind::Int(Some(v))
    }
}
impl From<Option<i64>> for Bind {
    fn from(v: Option<i64>) -> Self {
        Bind::Int(v)
    }
}
impl From<bool> for Bind {
    fn from(v: bool) -> Self {
        Bind::Bool(Some(v))
    }
}
impl From<Option<bool>> for Bind {
    fn from(v: Option<bool>) -> Self {
        Bind::Bool(v)
    }
}
impl From<DateTime<Utc>> for Bind {
    fn from(v: DateTime<Utc>) -> Self {
        Bind::Ts(Some(v))
    }
}
impl From<Option<DateTime<Utc>>> for Bind {
    fn from(v: Option<DateTime<Utc>>) -> Self {
        Bind::Ts(v)
    }
}

/// Build a `Vec<Bind>` from values that convert into [`Bind`].
#[macro_export]
macro_rules! binds {
    ($($v:expr),* $(,)?) => { vec![$($crate::sql::Bind::from($v)),*] };
}

/// A row mapper handed to [`SqlRun::fetch`].
pub type MapRow<'f, T> = &'f (dyn Fn(&dyn RowRead) -> Result<T> + Send + Sync);

/// What [`SqlRun::fetch_each`] hands each row to (an alias, so that `async_trait` leaves the
/// row's lifetime to each call).
pub type EachRow<'f> = &'f mut (dyn FnMut(&dyn RowRead) -> Result<()> + Send);

/// Run statements written with `$n` placeholders on one store's connection or pool.
#[async_trait]
pub trait SqlRun: Send + Sync {
    /// The database the statements run on.
    fn dialect(&self) -> Dialect;

    /// Run a query and hand every row it returns to `each`, in order, stopping at the first
    /// error; `what` names it in errors. What a store implements for reading: it is not
    /// generic, so a statement's run (binding, the driver's future, the error mapping) is
    /// compiled once per database, not once per type a row becomes — about a hundred types,
    /// which made it a fifth of a megabyte of the release binary per database.
    async fn fetch_each(
        &mut self,
        what: &str,
        sql: &str,
        binds: Vec<Bind>,
        each: EachRow<'_>,
    ) -> Result<()>;

    /// Run a query and map every row it returns; `what` names it in errors.
    async fn fetch<T: Send>(
        &mut self,
        what: &str,
        sql: &str,
        binds: Vec<Bind>,
        map: MapRow<'_, T>,
    ) -> Result<Vec<T>> {
        let mut out = Vec::new();
        self.fetch_each(what, sql, binds, &mut |r| {
            out.push(map(r)?);
            Ok(())
        })
        .await?;
        Ok(out)
    }

    /// Run a statement; returns the rows it changed. `what` names it in errors.
    async fn execute(&mut self, what: &str, sql: &str, binds: Vec<Bind>) -> Result<u64>;

    /// Run a query that returns at most one row, and map it (the first, should it return more).
    async fn fetch_optional<T: Send>(
        &mut self,
        what: &str,
        sql: &str,
        binds: Vec<Bind>,
        map: MapRow<'_, T>,
    ) -> Result<Option<T>> {
        let mut first = None;
        self.fetch_each(what, sql, binds, &mut |r| {
            if first.is_none() {
                first = Some(map(r)?);
            }
            Ok(())
        })
        .await?;
        Ok(first)
    }

    /// Run a query that returns exactly one row, and map it.
    async fn fetch_one<T: Send>(
        &mut self,
        what: &str,
        sql: &str,
        binds: Vec<Bind>,
        map: MapRow<'_, T>,
    ) -> Result<T> {
        self.fetch_optional(what, sql, binds, map)
            .await?
            .ok_or_else(|| crate::Error::new(crate::ErrorKind::Database, format!("{what}: no row")))
    }
}

/// Define a store's [`SqlRun`]: an enum `$run` over a pool (`$pool`) or one connection
/// (`$conn`), binding with `$bind` (`fn(&str, Vec<Bind>) -> sqlx Query`), reading rows with
/// the [`RowRead`] wrapper `$wrap`, naming errors with `$map_err`. The two stores differ only
/// in these names, so the body is written here once.
#[macro_export]
macro_rules! sql_run {
    ($run:ident, $pool:ty, $conn:ty, $dialect:expr, $bind:path, $wrap:path, $map_err:path) => {
        /// Shared statements (`kairos_store::sql::SqlRun`) run on a pool or on one
        /// connection (a transaction's). Public only as the store's `SqlDb::Run`.
        #[doc(hidden)]
        pub enum $run<'a> {
            /// A pool.
            Pool(&'a $pool),
            /// One connection.
            Conn(&'a mut $conn),
        }

        #[async_trait::async_trait]
        impl $crate::sql::SqlRun for $run<'_> {
            fn dialect(&self) -> $crate::sql::Dialect {
                $dialect
            }

            async fn fetch_each(
                &mut self,
                what: &str,
                sql: &str,
                binds: Vec<$crate::sql::Bind>,
                each: $crate::sql::EachRow<'_>,
            ) -> $crate::Result<()> {
                let q = $bind(sql, binds);
                let rows = match self {
                    $run::Pool(p) => q.fetch_all(*p).await,
                    $run::Conn(c) => q.fetch_all(&mut **c).await,
                }
                .map_err(|e| $map_err(what, e))?;
                for r in &rows {
                    each(&$wrap(r))?;
                }
                Ok(())
            }

            async fn execute(
                &mut self,
                what: &str,
                sql: &str,
                binds: Vec<$crate::sql::Bind>,
            ) -> $crate::Result<u64> {
                let q = $bind(sql, binds);
                let done = match self {
                    $run::Pool(p) => q.execute(*p).await,
                    $run::Conn(c) => q.execute(&mut **c).await,
                }
                .map_err(|e| $map_err(what, e))?;
                Ok(done.rows_affected())
            }
        }
    };
}
