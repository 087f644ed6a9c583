//! What holds the database's cleanup back: the oldest open snapshots, dead row versions, the
//! size of SQLite's WAL — read by the monitor's `db_horizon` check and by `/metrics`.
//!
//! A job queue rots when something outside it keeps a snapshot open: on PostgreSQL no row
//! version younger than the oldest `backend_xmin` can be vacuumed, so every claim walks more
//! dead index entries; on SQLite a reader's snapshot keeps checkpoints from catching up and the
//! WAL grows without bound. Neither is visible from the queue's own statements.

use chrono::{DateTime, Utc};

/// `db_health_read`.
#[derive(Debug, Clone, Copy)]
pub struct DbHealthRead {
    /// Now, by the engine's clock: the SQLite store measures how long checkpoints have been
    /// behind from the first read that saw them behind.
    pub now: DateTime<Utc>,
}

/// The most holders [`DbHealth::held`] lists.
pub const DB_HEALTH_MAX_HELD: usize = 10;

/// One session (PostgreSQL) or unknown reader (SQLite) holding back cleanup.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldSnapshot {
    /// The backend's process id (PostgreSQL); `None` on SQLite, where a reader in another
    /// process cannot be named.
    pub pid: Option<i64>,
    /// How long it has held cleanup back, in seconds. PostgreSQL measures it itself (its
    /// clock against the transaction's start); SQLite from the first read that saw
    /// checkpoints behind.
    pub age_secs: f64,
    /// The session's `application_name`, if it set one.
    pub application: Option<String>,
    /// The client's address, if it connected over the network.
    pub client: Option<String>,
    /// When its transaction started (PostgreSQL).
    pub xact_start: Option<DateTime<Utc>>,
    /// Its state (`idle in transaction`, `active`), or on SQLite what is known.
    pub state: Option<String>,
}

/// What [`NodeStore::db_health_read`](crate::NodeStore::db_health_read) found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DbHealth {
    /// Sessions whose snapshot holds cleanup back, oldest first, at most
    /// [`DB_HEALTH_MAX_HELD`]. PostgreSQL: other sessions of this database with a
    /// `backend_xmin`. SQLite: one entry while checkpoints have not caught up with the WAL.
    pub held: Vec<HeldSnapshot>,
    /// Dead row versions per table of kairos's schema (PostgreSQL; empty on SQLite).
    pub dead_tuples: Vec<(String, i64)>,
    /// The `-wal` file's size in bytes (SQLite; `None` on PostgreSQL).
    pub wal_bytes: Option<u64>,
}

impl DbHealth {
    /// The age of the oldest held snapshot, 0 when none.
    pub fn oldest_age_secs(&self) -> f64 {
        self.held.iter().map(|h| h.age_secs).fold(0.0, f64::max)
    }
}

/// `db_vacuum`: reclaim the space of the job tables' dead row versions.
#[derive(Debug, Clone, Copy, Default)]
pub struct DbVacuum {
    /// Vacuum even when the database's autovacuum is on (which then does it by itself).
    pub force: bool,
}

/// What [`NodeStore::db_vacuum`](crate::NodeStore::db_vacuum) did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DbVacuumed {
    /// The tables vacuumed (and analyzed), empty when none was: SQLite reuses the pages of
    /// deleted rows by itself, and on PostgreSQL autovacuum was on and `force` not set.
    pub tables: Vec<String>,
    /// Whether the database's autovacuum is on (`None` on SQLite, which has none).
    pub autovacuum: Option<bool>,
}
