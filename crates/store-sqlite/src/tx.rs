//! Transactional enqueue on SQLite: an application that keeps its own tables in the kairos
//! file inserts a job in its own transaction, and the job exists iff that transaction commits.
//!
//! The application opens its own sqlx pool on the file with [`connect_options`] (WAL, the
//! busy timeout, foreign keys: the settings the store's connections use), so its writes wait
//! for the store's writers instead of failing. The node's executor finds the job at its next
//! poll (or at once when the application wakes it after the commit).

use crate::rows::SqRun;
use kairos_store::{JobInsert, JobInserted, Result};
use sqlx::SqliteConnection;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqliteSynchronous};
use std::path::Path;
use std::time::Duration;

/// How long a connection waits for SQLite's write lock before it gives up with `SQLITE_BUSY`.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The connection settings of the store's own connections, for an application's pool on the
/// same file: WAL, `synchronous = NORMAL`, a busy timeout of [`BUSY_TIMEOUT`], foreign keys
/// on, the WAL cut back to 64 MiB when a writer restarts it. The file is not created: open the store (which creates and migrates it) first.
///
/// Start a transaction that reads before it writes with `BEGIN IMMEDIATE`
/// (`pool.begin_with("BEGIN IMMEDIATE")`): a deferred one that must upgrade its lock while a
/// kairos writer holds it fails at once with `SQLITE_BUSY` instead of waiting.
pub fn connect_options(path: &Path) -> SqliteConnectOptions {
    SqliteConnectOptions::new()
        .filename(path)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(BUSY_TIMEOUT)
        .foreign_keys(true)
        .pragma(
            "journal_size_limit",
            crate::writer::JOURNAL_SIZE_LIMIT.to_string(),
        )
}

/// Insert `job` on `conn` (the application's transaction, on the store's file) with the
/// statement every insert path shares: it exists iff the transaction commits. An existing
/// `dedupe_key` answers with the job that holds it and `created = false`. Validate the job
/// first (the engine's facade: `Kairos::job_prepare`); this only inserts.
pub async fn job_insert_in_tx(conn: &mut SqliteConnection, job: JobInsert) -> Result<JobInserted> {
    kairos_store::sql::job_insert_one(&mut SqRun::Conn(conn), job).await
}
