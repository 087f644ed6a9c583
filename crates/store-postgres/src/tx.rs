//! Transactional enqueue: a job inserted in the application's own transaction exists if and
//! only if that transaction commits (the transactional outbox, without an outbox).

use crate::jobs::{INSERT_MANY, insert_json};
use crate::rows::{JOB_COLS, job_from_row};
use crate::{map_err, validate_schema};
use kairos_store::{JobInsert, JobInserted, Result};
use sqlx::{AssertSqlSafe, Postgres, Transaction};

/// Insert `job` into the kairos tables in `schema` inside the caller's transaction `tx` on the
/// same database. The job exists iff `tx` commits; the nodes are notified (`kairos_jobs`) on
/// commit only, so none sees it earlier. An existing `dedupe_key` returns the existing job
/// with `created = false`, as [`Store::job_insert`](kairos_store::Store::job_insert) does.
///
/// The statements name `schema` explicitly, so the caller's `search_path` is neither needed nor
/// changed. The schema must have been migrated (by a node, `kairos migrate` or
/// [`PostgresStore::connect`](crate::PostgresStore::connect)).
///
/// Differs from `job_insert`: the same statement with the table qualified by the schema, and
/// the notification's payload bound as a parameter instead of `current_schema()`.
pub async fn enqueue_in_tx(
    tx: &mut Transaction<'_, Postgres>,
    schema: &str,
    job: JobInsert,
) -> Result<JobInserted> {
    validate_schema(schema)?;
    // The schema name is validated above and quoted.
    let insert = INSERT_MANY
        .replace(
            "INSERT INTO jobs",
            &format!("INSERT INTO \"{schema}\".jobs"),
        )
        .replace("current_schema()", "$2");
    let created: Vec<String> = sqlx::query_scalar(AssertSqlSafe(insert))
        .bind(insert_json(std::slice::from_ref(&job)))
        .bind(schema)
        .fetch_all(&mut **tx)
        .await
        .map_err(|e| map_err("job insert in a transaction", e))?;
    let (filter, key) = if created.is_empty() {
        ("dedupe_key", job.dedupe_key.clone())
    } else {
        ("id", Some(job.id.clone()))
    };
    let row = sqlx::query(AssertSqlSafe(format!(
        "SELECT {JOB_COLS} FROM \"{schema}\".jobs WHERE {filter} = $1"
    )))
    .bind(key)
    .fetch_one(&mut **tx)
    .await
    .map_err(|e| map_err("job insert in a transaction", e))?;
    Ok(JobInserted {
        job: job_from_row(&row)?,
        created: !created.is_empty(),
    })
}
