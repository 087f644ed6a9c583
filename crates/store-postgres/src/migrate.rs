//! Embedded migrations, the same tiny runner as the SQLite store's: each file runs once, in
//! order, in a transaction, recorded in `kairos_migrations` (in the store's schema).
//!
//! Differs from SQLite: several nodes may start at once, so each migration transaction first
//! takes a transaction-scoped advisory lock keyed by the schema (`pg_advisory_xact_lock`), then
//! creates the schema and the migrations table if missing, then checks and applies. The second
//! node waits on the lock and finds the migration recorded. PostgreSQL's DDL is transactional:
//! a migration that fails leaves nothing behind.

use crate::map_err;
use kairos_store::Error;
use sqlx::{AssertSqlSafe, PgPool};

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

/// Apply pending migrations to `schema` (a validated name).
pub(crate) async fn run(pool: &PgPool, schema: &str) -> Result<(), Error> {
    for (version, name, sql) in MIGRATIONS {
        let mut tx = pool
            .begin()
            .await
            .map_err(|e| map_err("starting a migration", e))?;
        // PostgreSQL only: serialize migrations of this schema across nodes. The key is a
        // 64-bit hash of a namespaced string, so it does not collide with other lock users.
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(format!("kairos.migrate.{schema}"))
            .execute(&mut *tx)
            .await
            .map_err(|e| map_err("locking for migration", e))?;
        // PostgreSQL only: the schema. Checked before creating so that a role without CREATE
        // on the database can use a schema made for it.
        let exists: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)")
                .bind(schema)
                .fetch_one(&mut *tx)
                .await
                .map_err(|e| map_err("reading schemas", e))?;
        if !exists {
            sqlx::query(AssertSqlSafe(format!("CREATE SCHEMA \"{schema}\"")))
                .execute(&mut *tx)
                .await
                .map_err(|e| map_err(&format!("creating schema {schema}"), e))?;
        }
        // The connection's search_path named the schema before it existed; say it again in
        // this transaction so that unqualified names resolve to it.
        sqlx::query(AssertSqlSafe(format!(
            "SET LOCAL search_path TO \"{schema}\""
        )))
        .execute(&mut *tx)
        .await
        .map_err(|e| map_err("setting the search path", e))?;
        // Differs from SQLite: timestamptz and now().
        sqlx::query(
            "CREATE TABLE IF NOT EXISTS kairos_migrations (version bigint PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
        )
        .execute(&mut *tx)
        .await
        .map_err(|e| map_err("creating the migrations table", e))?;
        let done: Option<i64> =
            sqlx::query_scalar("SELECT version FROM kairos_migrations WHERE version = $1")
                .bind(version)
                .fetch_optional(&mut *tx)
                .await
                .map_err(|e| map_err("reading migrations", e))?;
        if done.is_some() {
            continue;
        }
        sqlx::raw_sql(AssertSqlSafe(*sql))
            .execute(&mut *tx)
            .await
            .map_err(|e| map_err(&format!("applying migration {version} ({name})"), e))?;
        sqlx::query("INSERT INTO kairos_migrations (version, name) VALUES ($1, $2)")
            .bind(version)
            .bind(*name)
            .execute(&mut *tx)
            .await
            .map_err(|e| map_err("recording a migration", e))?;
        tx.commit()
            .await
            .map_err(|e| map_err("committing a migration", e))?;
        tracing::info!(version, name, schema, "applied migration");
    }
    Ok(())
}

/// Versions of [`MIGRATIONS`] not recorded in the schema's `kairos_migrations` (all of them
/// when the table does not exist yet): readiness checks that the schema is current.
pub(crate) async fn pending(pool: &PgPool, schema: &str) -> Result<Vec<i64>, Error> {
    // PostgreSQL only: the table is looked up in the store's schema by name.
    let exists: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = 'kairos_migrations')",
    )
    .bind(schema)
    .fetch_one(pool)
    .await
    .map_err(|e| map_err("reading migrations", e))?;
    let applied: Vec<i64> = if exists {
        sqlx::query_scalar("SELECT version FROM kairos_migrations")
            .fetch_all(pool)
            .await
            .map_err(|e| map_err("reading migrations", e))?
    } else {
        Vec::new()
    };
    Ok(MIGRATIONS
        .iter()
        .map(|(v, _, _)| *v)
        .filter(|v| !applied.contains(v))
        .collect())
}
