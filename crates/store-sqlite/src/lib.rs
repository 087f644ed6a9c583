//! # kairos-store-sqlite
//!
//! The [`Store`](kairos_store::Store) on one embedded SQLite file — kairos's default.
//!
//! SQLite allows one writer at a time. Two connections write, each waiting for the file's
//! write lock (`busy_timeout`) rather than failing:
//!
//! - **The writer thread** (`writer.rs`, statements in `native.rs`): one OS thread owning a
//!   native `rusqlite` connection runs the job queue's hot path — insert, claim, complete,
//!   lease renewal, rescue — with cached prepared statements. Callers send a closure over a
//!   channel and await a oneshot reply. Whatever is queued when the thread picks up work runs
//!   in one `BEGIN IMMEDIATE` transaction (group commit), and every reply is sent only after
//!   `COMMIT`; a command that fails makes its group run again one command per transaction, so
//!   it undoes only its own changes. WAL checkpoints run on a second native connection on a
//!   thread of their own (passive, every 32 commits), not inside the writer's commits. Through
//!   sqlx each statement hops to a worker thread and copies every value; with this thread the
//!   bench's throughput went from about 20,000–25,000 to 37,000–41,000 jobs/s
//!   (docs/benchmarks-history.md).
//! - **The sqlx write pool** (exactly one connection) for everything else: schedules, cancel
//!   and retry, and the other domains' modules. Rule for code on this pool: a transaction
//!   that reads before it writes must start with `BEGIN IMMEDIATE`
//!   (`SqliteStore::begin_write`). A deferred transaction that reads first
//!   cannot wait for the lock when it upgrades: SQLite answers `SQLITE_BUSY` at once if the
//!   writer thread holds or has just used it. Transactions whose first statement writes wait
//!   normally.
//!
//! Reads use a separate pool in parallel (WAL lets them see the last commit without blocking
//! either writer). Throughput comes from batching, not from connections: a claim takes many
//! due jobs in one `UPDATE … RETURNING`, and a group commit records hundreds of outcomes.
//!
//! Transactional enqueue: an application's own pool on the file ([`connect_options`])
//! inserts jobs in its transactions with [`job_insert_in_tx`].
//!
//! Durability: WAL with `synchronous = NORMAL`. A committed transaction survives a crash of
//! kairos; a power loss can lose the last transactions, never corrupt the file. A job whose
//! completion was lost that way runs again (at-least-once), which receivers deduplicate by
//! `webhook-id`.
#![deny(missing_docs)]

mod files;
mod health;
mod jobs;
mod native;
mod rows;
mod slots;
mod tx;
mod writer;

pub use tx::{BUSY_TIMEOUT, connect_options, job_insert_in_tx};

use kairos_store::sql::migrate::MigrationFile;
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
    /// The native writer thread for the job queue's hot path (`writer.rs`).
    hot: writer::Writer,
    /// The erasure key, once read (`erasure.rs`).
    keys: std::sync::Arc<kairos_store::KeyCache>,
    /// Seals stored secrets under the secret key (`with_sealer`); `None`: plaintext.
    sealer: Option<std::sync::Arc<kairos_store::sealing::Sealer>>,
    /// Since when checkpoints have been seen behind (`health.rs`).
    behind_since: std::sync::Arc<std::sync::Mutex<Option<health::Behind>>>,
    /// The migrations this open applied ([`SqliteStore::migrated`]).
    migrated: std::sync::Arc<[MigrationFile]>,
}

impl SqliteStore {
    /// Open (creating if needed) the database file at `path` and apply migrations. The file and
    /// its `-wal`/`-shm` companions are mode 0600 (see `files.rs`).
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
            .busy_timeout(BUSY_TIMEOUT)
            .foreign_keys(true)
            .pragma("temp_store", "memory")
            // Overwrite deleted content inside a page (no extra I/O): a value replaced by its
            // sealed form leaves no plaintext behind in the page's free space.
            .pragma("secure_delete", "fast")
            .pragma("cache_size", "-262144")
            // The WAL is cut back to this size whenever a writer restarts it (`writer.rs`).
            .pragma("journal_size_limit", writer::JOURNAL_SIZE_LIMIT.to_string())
            // Map the file: page reads without a syscall each (a hot queue fits in memory).
            .pragma("mmap_size", "1073741824")
            // Claims return hundreds of rows; the default channel of 50 rows makes the
            // worker thread and the reader hand over every 50 rows.
            .row_buffer_size(4096);
        // Owner-only file modes (`files.rs`), before SQLite creates anything.
        let file = opts.get_filename();
        if !file.as_os_str().is_empty() && file.as_os_str() != ":memory:" {
            files::restrict(file)?;
        }
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
            .max_connections(read_connections(
                std::thread::available_parallelism().map_or(1, |n| n.get()),
            ))
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(opts.clone().read_only(true))
            .await
            .map_err(|e| map_err("opening the database for reading", e))?;
        let migrated = migrate(&write).await?;
        // After the migrations: the writer's statements are prepared against the final schema.
        let file = opts.get_filename();
        if file.as_os_str().is_empty() || file.as_os_str() == ":memory:" {
            return Err(Error::new(
                ErrorKind::Invalid,
                format!(
                    "database url {url:?}: must name a file (an in-memory database is not shared between connections)"
                ),
            ));
        }
        let hot = writer::Writer::start(file)?;
        Ok(SqliteStore {
            write,
            read,
            hot,
            keys: Default::default(),
            sealer: None,
            behind_since: Default::default(),
            migrated: migrated.into(),
        })
    }

    /// This store as the engine's `Arc<dyn kairos_store::Store>`, sharing its pools. Made
    /// here, so that the store's methods are compiled once, in this crate: the store's
    /// methods are generic (written once over `SqlDb`), and a crate that turns the store into
    /// a trait object compiles its own copy of every one (half a megabyte of the release
    /// binary per database, for each crate beyond the first).
    #[inline(never)]
    pub fn shared(&self) -> std::sync::Arc<dyn kairos_store::Store> {
        std::sync::Arc::new(self.clone())
    }

    /// The migrations that opening this store applied, in order: none when the database was
    /// already current (`kairos migrate` says which ran).
    pub fn migrated(&self) -> &[MigrationFile] {
        &self.migrated
    }

    /// Seal stored secrets (webhook endpoint secrets, http target headers) under `sealer`
    /// from now on, and open them with it.
    pub fn with_sealer(mut self, sealer: std::sync::Arc<kairos_store::sealing::Sealer>) -> Self {
        self.sealer = Some(sealer);
        self
    }

    /// Copy the whole WAL back into the database file and truncate it
    /// (`PRAGMA wal_checkpoint(TRUNCATE)`), waiting for readers and writers to let it. The
    /// writer thread's passive checkpoints do this piecemeal as the queue runs; this is for a
    /// moment chosen by the caller: `kairos bench` calls it after writing a standing backlog,
    /// so that phase 1 measures the queue, not the copying of a million fresh rows.
    pub async fn checkpoint(&self) -> Result<(), Error> {
        let (busy, _, _): (i64, i64, i64) = sqlx::query_as("PRAGMA wal_checkpoint(TRUNCATE)")
            .fetch_one(&self.write)
            .await
            .map_err(|e| map_err("checkpointing the WAL", e))?;
        if busy != 0 {
            return Err(Error::new(
                ErrorKind::Unavailable,
                "checkpointing the WAL: a reader or writer kept it from finishing",
            ));
        }
        Ok(())
    }

    /// Close the writer thread and both pools, waiting for their connections.
    pub async fn close(&self) {
        self.hot.close().await;
        self.write.close().await;
        self.read.close().await;
    }
}

// Every role but the job queue is written once in `kairos_store::sql` over this impl. Write
// transactions take SQLite's write lock at once (`BEGIN IMMEDIATE`), waiting for it up to the
// busy timeout: a deferred one that reads before it writes would fail with `SQLITE_BUSY`
// instead of waiting when the writer thread holds or has just released the lock.
kairos_store::sql_db!(
    SqliteStore,
    SqRun,
    sqlx::Sqlite,
    read: read,
    write: write,
    begin: "BEGIN IMMEDIATE",
    map_err: map_err,
    apply: migrations_apply,
    list: migrations_list,
    health: health::health_read,
    vacuum: health::vacuum,
    committed: nothing_to_learn
);

/// SQLite's claims need no cursor (its index entries go with the row version they point to).
fn nothing_to_learn(_: &SqliteStore, _what: &str) {}

use rows::SqRun;

/// Connections in the read pool on a machine with `cores` CPUs: one per core, between 2 and 4.
/// A read on a memory-mapped file is CPU work, so connections beyond the cores only queue
/// for them, and each one costs an OS thread and its own SQLite heap (schema, statements,
/// page cache) for the life of the process: on two cores, 2 instead of 4 made an idle
/// `kairos serve` about 1 MB smaller (`docs/benchmarks-history.md`).
fn read_connections(cores: usize) -> u32 {
    cores.clamp(2, 4) as u32
}

/// Apply the migrations on the one write connection; returns those that ran.
async fn migrate(write: &SqlitePool) -> Result<Vec<MigrationFile>, Error> {
    let mut conn = write.acquire().await.map_err(|e| map_err("migrating", e))?;
    let legacy = kairos_store::sql::migrate::legacy_versions(&mut SqRun::Conn(&mut conn)).await?;
    let d = kairos_store::sql::Dialect::Sqlite;
    kairos_store::sql::migrate::apply(&mut *conn, d, legacy).await
}

async fn migrations_apply(s: &SqliteStore) -> Result<(), Error> {
    migrate(&s.write).await.map(drop)
}

async fn migrations_list(s: &SqliteStore) -> Result<Vec<kairos_store::MigrationStatus>, Error> {
    kairos_store::sql::migrate::list(&mut SqRun::Pool(&s.read)).await
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

#[cfg(test)]
mod tests {
    use super::read_connections;

    /// One read connection per core, at least 2 (a long read never blocks every other one)
    /// and at most 4.
    #[test]
    fn read_pool_has_one_connection_per_core_between_two_and_four() {
        assert_eq!(read_connections(1), 2);
        assert_eq!(read_connections(2), 2);
        assert_eq!(read_connections(3), 3);
        assert_eq!(read_connections(64), 4);
    }

    /// An opened store's read pool is sized by that rule for this machine.
    #[tokio::test]
    async fn an_opened_store_reads_on_one_connection_per_core() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = super::SqliteStore::open(&dir.path().join("k.db"))
            .await
            .expect("open");
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert_eq!(
            store.read.options().get_max_connections(),
            read_connections(cores)
        );
        store.close().await;
    }
}
