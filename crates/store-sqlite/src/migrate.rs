//! Embedded migrations. A tiny runner instead of `sqlx::migrate!` (which needs sqlx's
//! `macros` feature, doubling build time): each file runs once, in order, in a transaction,
//! recorded in `kairos_migrations`.

use crate::map_err;
use kairos_store::Error;
use sqlx::SqlitePool;

/// (version, name, SQL), in order.
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "init", include_str!("../migrations/0001_init.sql")),
    (
        2,
        "http_targets",
        include_str!("../migrations/0002_http_targets.sql"),
    ),
    (
        3,
        "artifacts",
        include_str!("../migrations/0003_artifacts.sql"),
    ),
    (
        4,
        "audiences",
        include_str!("../migrations/0004_audiences.sql"),
    ),
    (
        5,
        "slo_alerts",
        include_str!("../migrations/0005_slo_alerts.sql"),
    ),
    (6, "inbound", include_str!("../migrations/0006_inbound.sql")),
    (
        11,
        "channels",
        include_str!("../migrations/0011_channels.sql"),
    ),
    (
        12,
        "slo_dead_runs",
        include_str!("../migrations/0012_slo_dead_runs.sql"),
    ),
    (
        13,
        "endpoint_failures",
        include_str!("../migrations/0013_endpoint_failures.sql"),
    ),
    (
        14,
        "erasure",
        include_str!("../migrations/0014_erasure.sql"),
    ),
    (
        16,
        "admin_sessions",
        include_str!("../migrations/0016_admin_sessions.sql"),
    ),
    (
        17,
        "sealed_secrets",
        include_str!("../migrations/0017_sealed_secrets.sql"),
    ),
    (
        18,
        "dedupe_tombstones",
        include_str!("../migrations/0018_dedupe_tombstones.sql"),
    ),
];

pub(crate) async fn run(pool: &SqlitePool) -> Result<(), Error> {
    sqlx::query(
        "CREATE TABLE IF NOT EXISTS kairos_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)",
    )
    .execute(pool)
    .await
    .map_err(|e| map_err("creating the migrations table", e))?;
    for (version, name, sql) in MIGRATIONS {
        let mut tx = pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(|e| map_err("starting a migration", e))?;
        let done: Option<i64> =
            sqlx::query_scalar("SELECT version FROM kairos_migrations WHERE version = ?1")
                .bind(version)
                .fetch_optional(&mut *tx)
                .await
                .map_err(|e| map_err("reading migrations", e))?;
        if done.is_some() {
            continue;
        }
        sqlx::raw_sql(sqlx::AssertSqlSafe(*sql))
            .execute(&mut *tx)
            .await
            .map_err(|e| map_err(&format!("applying migration {version} ({name})"), e))?;
        sqlx::query("INSERT INTO kairos_migrations (version, name) VALUES (?1, ?2)")
            .bind(version)
            .bind(*name)
            .execute(&mut *tx)
            .await
            .map_err(|e| map_err("recording a migration", e))?;
        tx.commit()
            .await
            .map_err(|e| map_err("committing a migration", e))?;
        tracing::info!(version, name, "applied migration");
    }
    Ok(())
}

/// Versions of [`MIGRATIONS`] not recorded in `kairos_migrations` (all of them when the table
/// does not exist yet): readiness checks that the schema is current.
pub(crate) async fn pending(pool: &SqlitePool) -> Result<Vec<i64>, Error> {
    let exists: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'kairos_migrations'",
    )
    .fetch_one(pool)
    .await
    .map_err(|e| map_err("reading migrations", e))?;
    let applied: Vec<i64> = if exists == 0 {
        Vec::new()
    } else {
        sqlx::query_scalar("SELECT version FROM kairos_migrations")
            .fetch_all(pool)
            .await
            .map_err(|e| map_err("reading migrations", e))?
    };
    Ok(MIGRATIONS
        .iter()
        .map(|(v, _, _)| *v)
        .filter(|v| !applied.contains(v))
        .collect())
}
