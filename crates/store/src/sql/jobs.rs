//! The one job insert every path shares (enqueue, a schedule's firing, a catch-up, an
//! expansion, an artifact's follow-ups): many jobs from one JSON array in one statement,
//! skipping taken dedupe keys (also duplicates within the batch: `DO NOTHING` sees rows this
//! statement inserted).

use super::{Dialect, JOB_COLS, SqlRun, rows};
use crate::batch::jobs_batch;
use crate::{Error, ErrorKind, JobInsert, JobInserted, PRUNED_KEY, Result};

/// SQLite's: `WHERE true` resolves SQLite's parse ambiguity between `SELECT … ON CONFLICT`
/// and a join constraint; `jsonb_each` (not `json_each`) yields each element as JSONB, so
/// `value ->> 'key'` is a lookup instead of a re-parse of the element's text for every
/// column.
pub const JOBS_INSERT_SQLITE: &str = "INSERT INTO jobs (id, kind, state, payload, endpoint_id, schedule_id, fire_at, period_key, dedupe_key, attempt, max_attempts, retry, run_at, created_at, channel, topic, recipient_id, variant, concurrency_key, concurrency_max, http_origin)
SELECT value ->> 'id', value ->> 'kind', 'available', value ->> 'payload', value ->> 'endpoint_id', value ->> 'schedule_id', value ->> 'fire_at', value ->> 'period_key', value ->> 'dedupe_key', 0, value ->> 'max_attempts', value ->> 'retry', value ->> 'run_at', value ->> 'created_at', value ->> 'channel', value ->> 'topic', value ->> 'recipient_id', value ->> 'variant', value ->> 'concurrency_key', value ->> 'concurrency_max', value ->> 'http_origin'
FROM jsonb_each(?1) WHERE true
ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING
RETURNING id";

/// PostgreSQL's: the array is unpacked by `jsonb_to_recordset` with typed columns, and the
/// statement also notifies `kairos_jobs`, once per inserted row in the query, which
/// PostgreSQL collapses into one notification per transaction (identical channel and payload)
/// and delivers on commit; nothing inserted, no notification. Channels are per database, not
/// per schema, so the payload is the schema (`current_schema()`, the store's): a listener can
/// ignore other deployments' jobs. The second output column (`void`) is ignored.
pub const JOBS_INSERT_POSTGRES: &str = "WITH ins AS (
    INSERT INTO jobs (id, kind, state, payload, endpoint_id, schedule_id, fire_at, period_key, dedupe_key, attempt, max_attempts, retry, run_at, created_at, channel, topic, recipient_id, variant, concurrency_key, concurrency_max, http_origin)
    SELECT c.id, c.kind, 'available', c.payload, c.endpoint_id, c.schedule_id, c.fire_at, c.period_key, c.dedupe_key, 0, c.max_attempts, c.retry, c.run_at, c.created_at, c.channel, c.topic, c.recipient_id, c.variant, c.concurrency_key, c.concurrency_max, c.http_origin
    FROM jsonb_to_recordset($1::jsonb) AS c(id text, kind text, payload jsonb, endpoint_id text, schedule_id text,
         fire_at timestamptz, period_key text, dedupe_key text, max_attempts integer, retry jsonb,
         run_at timestamptz, created_at timestamptz, channel text, topic text,
         recipient_id text, variant text, concurrency_key text, concurrency_max integer, http_origin text)
    ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING
    RETURNING id
)
SELECT id, pg_notify('kairos_jobs', current_schema()) FROM ins";

/// [`JOBS_INSERT_POSTGRES`] without its notification: for a store that announces its own
/// inserts after they commit (PostgreSQL's `job_insert`, whose notifying commits would
/// otherwise wait for each other).
pub const JOBS_INSERT_POSTGRES_QUIET: &str = "INSERT INTO jobs (id, kind, state, payload, endpoint_id, schedule_id, fire_at, period_key, dedupe_key, attempt, max_attempts, retry, run_at, created_at, channel, topic, recipient_id, variant, concurrency_key, concurrency_max, http_origin)
    SELECT c.id, c.kind, 'available', c.payload, c.endpoint_id, c.schedule_id, c.fire_at, c.period_key, c.dedupe_key, 0, c.max_attempts, c.retry, c.run_at, c.created_at, c.channel, c.topic, c.recipient_id, c.variant, c.concurrency_key, c.concurrency_max, c.http_origin
    FROM jsonb_to_recordset($1::jsonb) AS c(id text, kind text, payload jsonb, endpoint_id text, schedule_id text,
         fire_at timestamptz, period_key text, dedupe_key text, max_attempts integer, retry jsonb,
         run_at timestamptz, created_at timestamptz, channel text, topic text,
         recipient_id text, variant text, concurrency_key text, concurrency_max integer, http_origin text)
    ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING
    RETURNING id";

/// Insert `jobs` in one statement on `run` (a transaction's, to insert them with what
/// created them); the ids of the jobs created.
pub async fn jobs_insert(
    run: &mut impl SqlRun,
    what: &str,
    jobs: &[JobInsert],
) -> Result<Vec<String>> {
    if jobs.is_empty() {
        return Ok(vec![]);
    }
    let d = run.dialect();
    let sql = match d {
        // Placeholders are already SQLite's.
        Dialect::Sqlite => JOBS_INSERT_SQLITE,
        Dialect::Postgres => JOBS_INSERT_POSTGRES,
    };
    let batch = jobs_batch(jobs, d.batch_encoding());
    run.fetch(what, sql, vec![batch.into()], &|r| r.text("id"))
        .await
}

/// Insert one job on `run` (an application's own transaction: transactional enqueue) and
/// answer with the job: the new one, or with an existing `dedupe_key` the job that holds it
/// (`created = false`), as [`JobStore::job_insert`](crate::JobStore::job_insert) does. A key
/// held only by a pruned job's tombstone is a `Conflict` saying [`PRUNED_KEY`]. On
/// PostgreSQL the statement also notifies `kairos_jobs` (delivered on commit only).
pub async fn job_insert_one(run: &mut impl SqlRun, job: JobInsert) -> Result<JobInserted> {
    const WHAT: &str = "job insert in a transaction";
    let created = !jobs_insert(run, WHAT, std::slice::from_ref(&job))
        .await?
        .is_empty();
    // Under PostgreSQL's READ COMMITTED each statement sees the latest commits, so the job
    // holding a dedupe key that made the insert do nothing is visible here (the insert waited
    // for its writer); on SQLite the transaction holds the write lock.
    let (filter, key) = if created {
        ("id", Some(job.id.clone()))
    } else {
        ("dedupe_key", job.dedupe_key.clone())
    };
    let sql = format!("SELECT {JOB_COLS} FROM jobs WHERE {filter} = $1");
    let found = run
        .fetch_optional(WHAT, &sql, vec![key.into()], &|r| rows::job(r))
        .await?;
    let job = found.ok_or_else(|| {
        let msg = if job.dedupe_key.is_some() {
            PRUNED_KEY
        } else {
            "job insert: the job id is taken"
        };
        Error::new(ErrorKind::Conflict, msg)
    })?;
    Ok(JobInserted { job, created })
}

/// A bounded prune: delete at most `$2` rows of `table` matching `cond` (which reads the
/// cut-off as `$1`), oldest `order` first, addressed by their `key` column, or without one by
/// the dialect's row address (SQLite's `rowid`, PostgreSQL's `ctid`). On PostgreSQL the batch
/// is locked `SKIP LOCKED`, so that pruners on several nodes take disjoint rows.
pub fn prune_sql(d: Dialect, table: &str, key: Option<&str>, cond: &str, order: &str) -> String {
    let (row, lock) = match d {
        Dialect::Sqlite => ("rowid", ""),
        Dialect::Postgres => ("ctid", " FOR UPDATE SKIP LOCKED"),
    };
    let addr = key.unwrap_or(row);
    format!(
        "DELETE FROM {table} WHERE {addr} IN (
             SELECT {addr} FROM {table} WHERE {cond} ORDER BY {order} LIMIT $2{lock})"
    )
}

/// `retention_prune`: one bounded batch of `p.table`, oldest first. What each table keeps is
/// in [`crate::RetentionTable`].
pub async fn retention_prune(run: &mut impl SqlRun, p: crate::RetentionPrune) -> Result<u64> {
    use crate::RetentionTable as T;
    if p.limit <= 0 {
        return Ok(0);
    }
    let (table, key, cond, order) = match p.table {
        T::DedupeTombstones => (
            "dedupe_tombstones",
            Some("dedupe_key"),
            "finished_at < $1",
            "finished_at",
        ),
        T::Exposures => ("exposures", Some("job_id"), "created_at < $1", "created_at"),
        // An unfinished expansion is a cursor still in use.
        T::Expansions => ("expansions", None, "done AND updated_at < $1", "updated_at"),
        // The newest entry of an address still suppressed says why it is; it stays.
        T::SuppressionLog => (
            "suppression_log",
            Some("id"),
            "created_at < $1
               AND NOT (EXISTS (SELECT 1 FROM suppressions s WHERE s.address = suppression_log.address)
                        AND suppression_log.id = (SELECT MAX(m.id) FROM suppression_log m
                                                  WHERE m.address = suppression_log.address))",
            "created_at",
        ),
        // A firing alert, or a recovery not yet notified, is live state of the monitor.
        T::SloAlerts => (
            "slo_alerts",
            Some("key"),
            "NOT active AND seq = notified_seq AND updated_at < $1",
            "updated_at",
        ),
        T::EndpointHealthHours => ("endpoint_health_hours", None, "hour < $1", "hour"),
        // A slot is held while its job runs under the lease that took it.
        T::ConcurrencySlots => (
            "concurrency_slots",
            None,
            "taken_at < $1
               AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = concurrency_slots.job_id
                               AND j.state = 'running'
                               AND j.lease_token = concurrency_slots.lease_token)",
            "taken_at",
        ),
    };
    let sql = prune_sql(run.dialect(), table, key, cond, order);
    run.execute("retention prune", &sql, crate::binds![p.before, p.limit])
        .await
}
