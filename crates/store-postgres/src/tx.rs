//! Transactional enqueue: a job inserted in the application's own transaction exists if and
//! only if that transaction commits (the transactional outbox, without an outbox).

use crate::rows::PgRun;
use crate::{map_err, validate_schema};
use kairos_store::{JobInsert, JobInserted, Result};
use sqlx::{PgConnection, Postgres, Transaction};

/// Insert `job` into the kairos tables in `schema` on `conn`, the caller's transaction on the
/// same database, with the statement every insert path shares: the job exists iff the
/// transaction commits, and the nodes are notified (`kairos_jobs`) on commit only, so none
/// sees it earlier. An existing `dedupe_key` answers with the job that holds it and
/// `created = false`, as [`JobStore::job_insert`](kairos_store::JobStore::job_insert) does.
/// Validate the job first (the engine's facade: `Kairos::job_prepare`); this only inserts.
///
/// The schema must have been migrated (by a node, `kairos migrate` or
/// [`PostgresStore::connect`](crate::PostgresStore::connect)). The caller's `search_path` is
/// not needed: it is pointed at `schema` for these statements only (`set_config(…, true)`,
/// local to the transaction) and set back after them.
pub async fn job_insert_in_tx(
    conn: &mut PgConnection,
    schema: &str,
    job: JobInsert,
) -> Result<JobInserted> {
    validate_schema(schema)?;
    let what = "job insert in a transaction";
    let before: String = sqlx::query_scalar("SELECT current_setting('search_path')")
        .fetch_one(&mut *conn)
        .await
        .map_err(|e| map_err(what, e))?;
    set_search_path(conn, &format!("\"{schema}\"")).await?;
    let inserted = kairos_store::sql::job_insert_one(&mut PgRun::Conn(conn), job).await;
    // Set back whatever happened: an error that is not the database's (a key held by a pruned
    // job's tombstone, a row that does not decode) leaves the caller's transaction usable, and
    // its next statements must not resolve in kairos's schema. After a database error the
    // transaction is aborted (this fails too) and rolls back with its local setting; the
    // insert's error is the one returned.
    let restored = set_search_path(conn, &before).await;
    let inserted = inserted?;
    restored?;
    Ok(inserted)
}

async fn set_search_path(conn: &mut PgConnection, path: &str) -> Result<()> {
    sqlx::query("SELECT set_config('search_path', $1, true)")
        .bind(path)
        .execute(&mut *conn)
        .await
        .map_err(|e| map_err("setting the search_path for a job insert", e))?;
    Ok(())
}

/// The former name of [`job_insert_in_tx`], on a transaction.
#[deprecated(note = "use job_insert_in_tx (or kairos-embed's Node::enqueue_tx, which validates)")]
pub async fn enqueue_in_tx(
    tx: &mut Transaction<'_, Postgres>,
    schema: &str,
    job: JobInsert,
) -> Result<JobInserted> {
    job_insert_in_tx(tx, schema, job).await
}
