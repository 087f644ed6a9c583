//! The schema's migrations, one list for both databases, applied by sqlx's [`Migrator`]:
//! each file once, in order, in a transaction, recorded with its checksum in
//! `_sqlx_migrations` (a file changed after it was applied stops the node at start instead of
//! leaving two databases with different schemas), under sqlx's lock (PostgreSQL: an advisory
//! lock, so nodes that start together do not race; SQLite: the one writer).
//!
//! The files are `crates/store/migrations/{sqlite,postgres}/NNNN_name.sql`: one version, two
//! dialects. A database migrated by the runner kairos had before (`kairos_migrations`) is
//! adopted once: its recorded versions are marked applied in `_sqlx_migrations` with the
//! files' checksums, without running them again.

use super::{Dialect, SqlRun};
use crate::{Error, ErrorKind, MigrationStatus, Result};
use sqlx::SqlSafeStr;
use sqlx::migrate::{AppliedMigration, Migrate, MigrateError, Migration, MigrationType, Migrator};
use std::collections::HashMap;

/// One migration: its version and name, and its SQL in each dialect.
#[derive(Debug, Clone, Copy)]
pub struct MigrationFile {
    /// The version (the file name's number).
    pub version: i64,
    /// The name (the rest of the file name).
    pub name: &'static str,
    sqlite: &'static str,
    postgres: &'static str,
}

macro_rules! migrations {
    ($($v:literal $name:literal),* $(,)?) => {
        &[$(MigrationFile {
            version: $v,
            name: $name,
            sqlite: include_str!(concat!("../../migrations/sqlite/", stringify!($v), "_", $name, ".sql")),
            postgres: include_str!(concat!("../../migrations/postgres/", stringify!($v), "_", $name, ".sql")),
        }),*]
    };
}

/// Every migration, in order.
// The versions are written as their file names spell them (`0001_init.sql`).
#[allow(clippy::zero_prefixed_literal)]
pub const MIGRATIONS: &[MigrationFile] = migrations![
    0001 "init",
    0002 "http_targets",
    0003 "artifacts",
    0004 "audiences",
    0005 "slo_alerts",
    0006 "inbound",
    0011 "channels",
    0012 "slo_dead_runs",
    0013 "endpoint_failures",
    0014 "erasure",
    0016 "admin_sessions",
    0017 "sealed_secrets",
    0018 "dedupe_tombstones",
    0019 "endpoint_health",
    0020 "implicit_attempts",
    0021 "dedupe_index",
    0022 "misfire_gaps",
    0023 "slo_monitor",
    0024 "audience_targets",
    0025 "inbound_outcomes",
    0026 "job_audience",
    0027 "flow_control",
    0028 "schedule_overlap",
    0029 "api_tokens",
    0030 "queue_samples",
    0031 "nodes",
    0032 "host_limits",
    0033 "keyed_due",
    0034 "jobs_fillfactor",
    0035 "inline_checks",
    0036 "sample_finished",
    0037 "pass_report",
    0038 "quarter_counts",
    0039 "kind_counts",
    0040 "quarter_retries",
];

/// The table sqlx records applied migrations in.
const TABLE: &str = "_sqlx_migrations";

/// The migrator of `dialect`'s files.
pub fn migrator(dialect: Dialect) -> Migrator {
    Migrator::with_migrations(
        MIGRATIONS
            .iter()
            .map(|f| {
                let sql = match dialect {
                    Dialect::Sqlite => f.sqlite,
                    Dialect::Postgres => f.postgres,
                };
                Migration::new(
                    f.version,
                    f.name.into(),
                    MigrationType::Simple,
                    sql.into_sql_str(),
                    false,
                )
            })
            .collect(),
    )
}

/// The migrator of `dialect`'s files before `version`: a database as the release before that
/// migration left it (for tests of what a migration does to existing rows).
pub fn migrator_before(dialect: Dialect, version: i64) -> Migrator {
    let mut m = migrator(dialect);
    m.migrations = m
        .migrations
        .iter()
        .filter(|x| x.version < version)
        .cloned()
        .collect::<Vec<_>>()
        .into();
    m
}

fn migrate_err(e: MigrateError) -> Error {
    let kind = match &e {
        // A file changed or removed after it was applied: the database is not what this build
        // expects.
        MigrateError::VersionMismatch(_) | MigrateError::VersionMissing(_) => ErrorKind::Corrupt,
        _ => ErrorKind::Database,
    };
    Error::new(kind, format!("migrations: {e}")).with_source(e)
}

/// Whether `table` exists in the store's schema.
async fn table_exists(run: &mut impl SqlRun, table: &str) -> Result<bool> {
    let sql = match run.dialect() {
        Dialect::Sqlite => {
            "SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = $1"
        }
        Dialect::Postgres => {
            "SELECT COUNT(*) AS n FROM pg_tables WHERE schemaname = current_schema() AND tablename = $1"
        }
    };
    let n = run
        .fetch_one("reading migrations", sql, crate::binds![table], &|r| {
            r.int("n")
        })
        .await?;
    Ok(n > 0)
}

/// The versions the runner kairos had before sqlx's recorded (`kairos_migrations`), if
/// that table exists: read on the connection [`apply`] then runs on.
pub async fn legacy_versions(run: &mut impl SqlRun) -> Result<Vec<i64>> {
    if !table_exists(run, "kairos_migrations").await? {
        return Ok(vec![]);
    }
    run.fetch(
        "reading migrations",
        "SELECT version FROM kairos_migrations",
        vec![],
        &|r| r.int("version"),
    )
    .await
}

/// Apply the pending migrations of `dialect` on `conn`, first adopting `legacy` (from
/// [`legacy_versions`]) when nothing is recorded yet. Returns the migrations this call ran, in
/// order (none when the database was current), so that `kairos migrate` and the node's log
/// can say what changed.
///
/// The connection is taken as a trait object: the run (and sqlx's `Migrator::run_direct`
/// inside it) is compiled once, not once per database and per crate that calls it — four
/// copies in the release binary, which has a size limit (`scripts/release.sh`).
pub async fn apply(
    conn: &mut (dyn Migrate + Send),
    dialect: Dialect,
    legacy: Vec<i64>,
) -> Result<Vec<MigrationFile>> {
    let mut conn = Erased(conn);
    let mut migrator = migrator(dialect);
    // One lock around the adoption, the run and the reads of what was recorded before and
    // after it, so that what this call reports as run is what it ran: two nodes starting
    // together each read the table while the other cannot be writing it.
    migrator.set_locking(false);
    conn.lock().await.map_err(migrate_err)?;
    let ran = apply_locked(&mut conn, &migrator, &legacy).await;
    let unlocked = conn.unlock().await.map_err(migrate_err);
    let ran = ran?;
    unlocked?;
    Ok(ran)
}

/// What [`Migrate`]'s methods return (`futures_core`'s `BoxFuture`, spelled out).
type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// A connection behind `dyn Migrate`, as a sized [`Migrate`] (sqlx's generic functions take
/// `C: Migrate`, which a trait object itself is not: it is unsized).
struct Erased<'c>(&'c mut (dyn Migrate + Send));

impl Migrate for Erased<'_> {
    fn create_schema_if_not_exists<'e>(
        &'e mut self,
        schema_name: &'e str,
    ) -> BoxFuture<'e, std::result::Result<(), MigrateError>> {
        self.0.create_schema_if_not_exists(schema_name)
    }

    fn ensure_migrations_table<'e>(
        &'e mut self,
        table_name: &'e str,
    ) -> BoxFuture<'e, std::result::Result<(), MigrateError>> {
        self.0.ensure_migrations_table(table_name)
    }

    fn dirty_version<'e>(
        &'e mut self,
        table_name: &'e str,
    ) -> BoxFuture<'e, std::result::Result<Option<i64>, MigrateError>> {
        self.0.dirty_version(table_name)
    }

    fn list_applied_migrations<'e>(
        &'e mut self,
        table_name: &'e str,
    ) -> BoxFuture<'e, std::result::Result<Vec<AppliedMigration>, MigrateError>> {
        self.0.list_applied_migrations(table_name)
    }

    fn lock(&mut self) -> BoxFuture<'_, std::result::Result<(), MigrateError>> {
        self.0.lock()
    }

    fn unlock(&mut self) -> BoxFuture<'_, std::result::Result<(), MigrateError>> {
        self.0.unlock()
    }

    fn apply<'e>(
        &'e mut self,
        table_name: &'e str,
        migration: &'e Migration,
    ) -> BoxFuture<'e, std::result::Result<std::time::Duration, MigrateError>> {
        self.0.apply(table_name, migration)
    }

    fn revert<'e>(
        &'e mut self,
        table_name: &'e str,
        migration: &'e Migration,
    ) -> BoxFuture<'e, std::result::Result<std::time::Duration, MigrateError>> {
        self.0.revert(table_name, migration)
    }

    fn skip<'e>(
        &'e mut self,
        table_name: &'e str,
        migration: &'e Migration,
    ) -> BoxFuture<'e, std::result::Result<(), MigrateError>> {
        self.0.skip(table_name, migration)
    }
}

/// [`apply`] under the migration lock.
async fn apply_locked(
    conn: &mut Erased<'_>,
    migrator: &Migrator,
    legacy: &[i64],
) -> Result<Vec<MigrationFile>> {
    if !legacy.is_empty() {
        adopt(conn, migrator, legacy).await?;
    }
    conn.ensure_migrations_table(TABLE)
        .await
        .map_err(migrate_err)?;
    let before = applied_versions(conn).await?;
    let started = std::time::Instant::now();
    // `run_direct` is `Migrator::run` on a connection the caller holds (`run` wants an
    // `Acquire`, which a generic connection is not).
    migrator
        .run_direct(None, conn, false)
        .await
        .map_err(migrate_err)?;
    let after = applied_versions(conn).await?;
    let ran = ran_between(&before, &after);
    log_ran(&ran, started.elapsed());
    Ok(ran)
}

/// The migrations recorded in `after` but not in `before`, in order.
fn ran_between(before: &[i64], after: &[i64]) -> Vec<MigrationFile> {
    MIGRATIONS
        .iter()
        .filter(|f| after.contains(&f.version) && !before.contains(&f.version))
        .copied()
        .collect()
}

/// Log the migrations one run applied, if any.
fn log_ran(ran: &[MigrationFile], elapsed: std::time::Duration) {
    if let (Some(first), Some(last)) = (ran.first(), ran.last()) {
        tracing::info!(
            migrations = ran.len(),
            from = first.version,
            to = last.version,
            elapsed_ms = elapsed.as_millis() as u64,
            "applied migrations"
        );
    }
}

/// The versions recorded in [`TABLE`].
async fn applied_versions(conn: &mut Erased<'_>) -> Result<Vec<i64>> {
    Ok(conn
        .list_applied_migrations(TABLE)
        .await
        .map_err(migrate_err)?
        .into_iter()
        .map(|m| m.version)
        .collect())
}

/// Mark `legacy` applied, once: under the lock (the caller's), and only while nothing is
/// recorded, so that nodes starting together adopt once.
async fn adopt(conn: &mut Erased<'_>, migrator: &Migrator, legacy: &[i64]) -> Result<()> {
    conn.ensure_migrations_table(TABLE)
        .await
        .map_err(migrate_err)?;
    let applied = conn
        .list_applied_migrations(TABLE)
        .await
        .map_err(migrate_err)?;
    if !applied.is_empty() {
        return Ok(());
    }
    for m in migrator.iter().filter(|m| legacy.contains(&m.version)) {
        conn.skip(TABLE, m).await.map_err(migrate_err)?;
    }
    tracing::info!(
        versions = legacy.len(),
        "recorded the migrations the former runner applied"
    );
    Ok(())
}

/// Every migration with whether (and when) it is applied.
pub async fn list(run: &mut impl SqlRun) -> Result<Vec<MigrationStatus>> {
    let applied: HashMap<i64, String> = if table_exists(run, TABLE).await? {
        run.fetch(
            "reading migrations",
            "SELECT version, CAST(installed_on AS TEXT) AS installed_on FROM _sqlx_migrations WHERE success",
            vec![],
            &|r| Ok((r.int("version")?, r.text("installed_on")?)),
        )
        .await?
        .into_iter()
        .collect()
    } else {
        HashMap::new()
    };
    Ok(MIGRATIONS
        .iter()
        .map(|f| MigrationStatus {
            version: f.version,
            name: f.name.to_string(),
            applied_at: applied.get(&f.version).cloned(),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_in_order_and_in_both_dialects() {
        assert!(MIGRATIONS.windows(2).all(|w| w[0].version < w[1].version));
        for f in MIGRATIONS {
            assert!(!f.sqlite.trim().is_empty(), "{} sqlite", f.name);
            assert!(!f.postgres.trim().is_empty(), "{} postgres", f.name);
        }
        assert_eq!(migrator(Dialect::Sqlite).iter().count(), MIGRATIONS.len());
    }
}
