//! `db_health_read` on PostgreSQL: the sessions whose snapshot holds VACUUM back
//! (`pg_stat_activity.backend_xmin`) and the dead row versions of kairos's tables.

use crate::{PostgresStore, map_err};
use chrono::{DateTime, Utc};
use kairos_store::{DB_HEALTH_MAX_HELD, DbHealth, DbHealthRead, Error, HeldSnapshot};

/// Other sessions of this database (and WAL senders, whose `hot_standby_feedback` holds the
/// horizon of every database) with a snapshot, oldest first. The age is the server's own
/// measure (its clock against the transaction's start), not the engine's clock: what matters
/// is how long the server has been unable to clean up.
const HELD: &str = "SELECT pid::bigint, \
       EXTRACT(EPOCH FROM (clock_timestamp() - COALESCE(xact_start, state_change, backend_start)))::float8 AS age_secs, \
       NULLIF(application_name, '') AS application, client_addr::text AS client, xact_start, state \
     FROM pg_stat_activity \
     WHERE backend_xmin IS NOT NULL AND pid <> pg_backend_pid() \
       AND (datname = current_database() OR datname IS NULL) \
     ORDER BY age_secs DESC NULLS LAST LIMIT $1";

/// Dead row versions of the tables in kairos's schema (the first of the search path).
const DEAD: &str = "SELECT relname::text, n_dead_tup FROM pg_stat_user_tables \
     WHERE schemaname = current_schema() ORDER BY relname";

type HeldRow = (
    i64,
    Option<f64>,
    Option<String>,
    Option<String>,
    Option<DateTime<Utc>>,
    Option<String>,
);

pub(crate) async fn health_read(
    store: &PostgresStore,
    _p: DbHealthRead,
) -> Result<DbHealth, Error> {
    let rows: Vec<HeldRow> = sqlx::query_as(HELD)
        .bind(DB_HEALTH_MAX_HELD as i64)
        .fetch_all(&store.pool)
        .await
        .map_err(|e| map_err("reading the oldest snapshots", e))?;
    let held = rows
        .into_iter()
        .map(
            |(pid, age, application, client, xact_start, state)| HeldSnapshot {
                pid: Some(pid),
                age_secs: age.unwrap_or(0.0).max(0.0),
                application,
                client,
                xact_start,
                state,
            },
        )
        .collect();
    let dead_tuples: Vec<(String, i64)> = sqlx::query_as(DEAD)
        .fetch_all(&store.pool)
        .await
        .map_err(|e| map_err("reading dead row versions", e))?;
    Ok(DbHealth {
        held,
        dead_tuples,
        wal_bytes: None,
    })
}

/// The tables whose rows the pruner deletes in bulk, which `db_vacuum` vacuums, and how.
const VACUUMED: [(&str, &str); 2] = [
    ("jobs", "VACUUM (ANALYZE) jobs"),
    ("job_attempts", "VACUUM (ANALYZE) job_attempts"),
];

/// `db_vacuum` on PostgreSQL: `VACUUM (ANALYZE)` of the job tables when autovacuum is off
/// (or `force`). With autovacuum off (some managed and CI set-ups turn it off) nothing
/// reclaims what the pruner deletes: the job tables grow without end and every claim reads
/// more dead index entries; the statistics go stale too, hence `ANALYZE`. VACUUM takes no
/// lock that blocks claims or inserts (`SHARE UPDATE EXCLUSIVE`), and cannot run in a
/// transaction: each table is its own statement on a pooled connection.
pub(crate) async fn vacuum(
    store: &PostgresStore,
    p: kairos_store::DbVacuum,
) -> Result<kairos_store::DbVacuumed, Error> {
    let on: bool = sqlx::query_scalar("SELECT current_setting('autovacuum') = 'on'")
        .fetch_one(&store.pool)
        .await
        .map_err(|e| map_err("reading the autovacuum setting", e))?;
    let mut tables = Vec::new();
    if !on || p.force {
        for (t, statement) in VACUUMED {
            sqlx::raw_sql(statement)
                .execute(&store.pool)
                .await
                .map_err(|e| map_err("vacuuming the job tables", e))?;
            tables.push(t.to_string());
        }
    }
    Ok(kairos_store::DbVacuumed {
        tables,
        autovacuum: Some(on),
    })
}
