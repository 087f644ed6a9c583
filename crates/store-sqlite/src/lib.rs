//! # kairos-store-sqlite
//!
//! The [`Store`](kairos_store::Store) on one embedded SQLite file — kairos's default.
//!
//! SQLite allows one writer at a time, so every write goes through a pool of exactly one
//! connection (no `SQLITE_BUSY` between our own writers), while reads use a separate pool in
//! parallel (WAL lets them see the last commit without blocking the writer). Throughput comes
//! from batching, not from connections: a claim takes many due jobs in one `UPDATE …
//! RETURNING`, and completions of many jobs are one transaction of two statements that read a
//! JSON array (`json_each`), so one round trip records hundreds of outcomes.
//!
//! Durability: WAL with `synchronous = NORMAL`. A committed transaction survives a crash of
//! kairos; a power loss can lose the last transactions, never corrupt the file. A job whose
//! completion was lost that way runs again (at-least-once), which receivers deduplicate by
//! `webhook-id`.
#![deny(missing_docs)]

mod jobs;
mod migrate;
mod rows;
mod schedules;

use kairos_store::{Error, ErrorKind};
use sqlx::SqlitePool;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

/// The SQLite store. Cheap to clone.
#[derive(Clone, Debug)]
pub struct SqliteStore {
    write: SqlitePool,
    read: SqlitePool,
}

impl SqliteStore {
    /// Open (creating if needed) the database file at `path` and apply migrations.
    pub async fn open(path: &Path) -> Result<Self, Error> {
        let url = format!("sqlite://{}", path.display());
        Self::connect(&url).await
    }

    /// Open a database by URL (`sqlite://path/to/file.db`) and apply migrations.
    pub async fn connect(url: &str) -> Result<Self, Error> {
        let opts = SqliteConnectOptions::from_str(url)
            .map_err(|e| {
                Error::new(ErrorKind::Invalid, format!("database url {url:?}")).with_source(e)
            })?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true)
            .pragma("temp_store", "memory")
            .pragma("cache_size", "-262144")
            // Map the file: page reads without a syscall each (a hot queue fits in memory).
            .pragma("mmap_size", "1073741824")
            // Claims return hundreds of rows; the default channel of 50 rows makes the
            // worker thread and the reader hand over every 50 rows.
            .row_buffer_size(4096);
        // One writer: SQLite serializes writers anyway; doing it in the pool avoids BUSY errors
        // and lock-upgrade failures between our own connections.
        let write = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(opts.clone())
            .await
            .map_err(|e| map_err("opening the database", e))?;
        let read = SqlitePoolOptions::new()
            .max_connections(4)
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(opts.read_only(true))
            .await
            .map_err(|e| map_err("opening the database for reading", e))?;
        let store = SqliteStore { write, read };
        migrate::run(&store.write).await?;
        Ok(store)
    }

    /// Close both pools, waiting for their connections.
    pub async fn close(&self) {
        self.write.close().await;
        self.read.close().await;
    }
}

/// Map a driver error to a store error with a kind.
pub(crate) fn map_err(what: &str, e: sqlx::Error) -> Error {
    let kind = match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() => ErrorKind::Conflict,
        sqlx::Error::Database(d) if d.is_foreign_key_violation() => ErrorKind::Conflict,
        sqlx::Error::Database(d) if d.is_check_violation() => ErrorKind::Invalid,
        sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_) => {
            ErrorKind::Unavailable
        }
        sqlx::Error::ColumnDecode { .. } | sqlx::Error::Decode(_) => ErrorKind::Corrupt,
        _ => ErrorKind::Database,
    };
    Error::new(kind, what.to_string()).with_source(e)
}
