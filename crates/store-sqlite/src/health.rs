//! `db_health_read` on SQLite: the WAL's size, and whether a reader keeps checkpoints from
//! catching up.
//!
//! A reader in another process (a backup, a `sqlite3` shell left in a transaction) cannot be
//! named, but its effect can be seen: the checkpoint thread (`writer.rs`) cannot copy the WAL
//! frames its snapshot still needs, so every checkpoint ends behind and the WAL only grows. The
//! first read that finds checkpoints behind starts the clock (the engine's, as `now`); a
//! checkpoint that catches up in between stops it.

use crate::SqliteStore;
use chrono::{DateTime, Utc};
use kairos_store::{DbHealth, DbHealthRead, Error, HeldSnapshot};

/// Checkpoints seen behind since `since`, with `caught_up` complete checkpoints at that time.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Behind {
    since: DateTime<Utc>,
    caught_up: u32,
}

pub(crate) async fn health_read(store: &SqliteStore, p: DbHealthRead) -> Result<DbHealth, Error> {
    let cp = store.hot.checkpoint_state();
    let since = {
        let mut seen = store
            .behind_since
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *seen = match *seen {
            _ if !cp.behind => None,
            Some(b) if b.caught_up == cp.caught_up => Some(b),
            _ => Some(Behind {
                since: p.now,
                caught_up: cp.caught_up,
            }),
        };
        seen.map(|b| b.since)
    };
    let held = since
        .map(|t| HeldSnapshot {
            pid: None,
            age_secs: ((p.now - t).num_milliseconds().max(0) as f64) / 1e3,
            application: None,
            client: None,
            xact_start: None,
            state: Some("checkpoints behind the WAL".into()),
        })
        .into_iter()
        .collect();
    Ok(DbHealth {
        held,
        dead_tuples: Vec::new(),
        wal_bytes: Some(store.hot.wal_bytes()),
    })
}

/// `db_vacuum` on SQLite: nothing to do. A deleted row's page goes on the free list and the
/// next insert reuses it, so the file stops growing once the pruner keeps pace; only
/// `VACUUM` would return the pages to the file system, and it rewrites the whole database
/// under the write lock.
pub(crate) async fn vacuum(
    _store: &SqliteStore,
    _p: kairos_store::DbVacuum,
) -> Result<kairos_store::DbVacuumed, Error> {
    Ok(kairos_store::DbVacuumed::default())
}
