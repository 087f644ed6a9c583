//! The job queue's hot-path statements on the native connection of the writer thread
//! (`writer.rs`). Each runs inside the writer's transaction; statements come from the
//! connection's statement cache, so after the first call a job costs a bind and a step, not a
//! parse. Values are bound one job at a time (no JSON batch to build and re-parse): with the
//! statement prepared, a row is a few microseconds of native SQLite.
//!
//! What is stored is exactly what the JSON-batch statements store (`kairos_store::batch`):
//! instants as integer milliseconds, payload and a non-default retry policy as JSON text,
//! the default policy as NULL.

use crate::rows::JOB_COLS;
use crate::writer::map_native;
use chrono::{DateTime, Utc};
use kairos_core::clock::{from_millis, to_millis};
use kairos_core::{Job, JobKind, JobState, RetryPolicy};
use kairos_store::{
    CompleteReport, Error, ErrorKind, JobClaim, JobComplete, JobInsert, JobLeaseRenew, JobRescue,
    Result, Transition,
};
use rusqlite::{Connection, OptionalExtension, Row, params};

/// Insert one job; a taken dedupe key inserts nothing (0 rows changed).
const INSERT: &str = "INSERT INTO jobs (id, kind, state, payload, endpoint_id, schedule_id, fire_at, period_key, dedupe_key, attempt, max_attempts, retry, run_at, created_at, channel, topic, recipient_id, variant, concurrency_key, concurrency_max, http_origin)
VALUES (?1, ?2, 'available', ?3, ?4, ?5, ?6, ?7, ?8, 0, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)
ON CONFLICT (dedupe_key) WHERE dedupe_key IS NOT NULL DO NOTHING";

/// A job to insert, encoded as stored (see the module docs). Built by the caller, so that
/// serializing the payload does not take time on the writer thread.
pub(crate) struct NewJob {
    id: String,
    kind: String,
    payload: String,
    endpoint_id: Option<String>,
    schedule_id: Option<String>,
    fire_at: Option<i64>,
    period_key: Option<String>,
    channel: Option<String>,
    dedupe_key: Option<String>,
    max_attempts: i64,
    retry: Option<String>,
    run_at: i64,
    created_at: i64,
    audience: kairos_core::JobAudience,
    concurrency_key: Option<String>,
    concurrency_max: Option<i64>,
    http_origin: Option<String>,
}

impl NewJob {
    /// Encode `j` as the JSON batch of `kairos_store::batch` would.
    pub(crate) fn encode(j: JobInsert) -> Result<NewJob> {
        let retry = match kairos_store::batch::stored_retry(&j) {
            // As the JSON batch encodes it: through a `Value`, so the text is the same.
            Some(r) => Some(
                serde_json::to_value(r)
                    .map_err(|e| Error::new(ErrorKind::Invalid, "job retry policy").with_source(e))?
                    .to_string(),
            ),
            None => None,
        };
        Ok(NewJob {
            concurrency_key: j.concurrency.as_ref().map(|c| c.key.clone()),
            concurrency_max: j.concurrency.as_ref().map(|c| i64::from(c.max)),
            payload: j.payload.to_string(),
            max_attempts: i64::from(j.retry.max_attempts()),
            retry,
            fire_at: j.fire_at.map(to_millis),
            run_at: to_millis(j.run_at),
            created_at: to_millis(j.now),
            id: j.id,
            kind: j.kind.0,
            endpoint_id: j.endpoint_id,
            schedule_id: j.schedule_id,
            period_key: j.period_key,
            channel: j.channel,
            dedupe_key: j.dedupe_key,
            audience: j.audience,
            http_origin: j.http_origin,
        })
    }
}

/// Insert each job; the ids of those created (not those whose dedupe key existed).
pub(crate) fn insert_many(conn: &Connection, jobs: &[NewJob]) -> Result<Vec<String>> {
    let mut stmt = conn
        .prepare_cached(INSERT)
        .map_err(|e| map_native("job insert", e))?;
    let mut created = Vec::with_capacity(jobs.len());
    for j in jobs {
        let n = stmt
            .execute(params![
                j.id,
                j.kind,
                j.payload,
                j.endpoint_id,
                j.schedule_id,
                j.fire_at,
                j.period_key,
                j.dedupe_key,
                j.max_attempts,
                j.retry,
                j.run_at,
                j.created_at,
                j.channel,
                j.audience.topic,
                j.audience.recipient_id,
                j.audience.variant,
                j.concurrency_key,
                j.concurrency_max,
                j.http_origin,
            ])
            .map_err(|e| map_native("job insert", e))?;
        if n > 0 {
            created.push(j.id.clone());
        }
    }
    Ok(created)
}

/// Insert one job with an optional dedupe key; an existing key answers with its job. The job
/// and whether it was created.
pub(crate) fn insert_one(conn: &Connection, p: &NewJob) -> Result<(StoredJob, bool)> {
    let created = !insert_many(conn, std::slice::from_ref(p))?.is_empty();
    let (sql, key) = if created {
        (by_id_sql(), p.id.as_str())
    } else {
        (by_dedupe_sql(), p.dedupe_key.as_deref().unwrap_or_default())
    };
    let job = conn
        .prepare_cached(sql)
        .and_then(|mut s| s.query_row([key], StoredJob::read).optional())
        .map_err(|e| map_native("job insert", e))?
        .ok_or_else(|| {
            // Nothing holds the key: it is a pruned job's tombstone.
            let msg = if p.dedupe_key.is_some() {
                kairos_store::PRUNED_KEY
            } else {
                "job insert: the job id is taken"
            };
            Error::new(ErrorKind::Conflict, msg)
        })?;
    Ok((job, created))
}

/// Insert each job as [`insert_one`] does, in this transaction: a later job with the key of
/// an earlier one answers with the earlier one's job. The first error (a key held by a
/// tombstone) fails them all: the writer then undoes this command alone.
pub(crate) fn insert_batch(conn: &Connection, jobs: &[NewJob]) -> Result<Vec<(StoredJob, bool)>> {
    jobs.iter()
        .enumerate()
        .map(|(i, j)| insert_one(conn, j).map_err(|e| e.with_entry(i)))
        .collect()
}

fn by_id_sql() -> &'static str {
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SQL.get_or_init(|| format!("SELECT {JOB_COLS} FROM jobs WHERE id = ?1"))
}

fn by_dedupe_sql() -> &'static str {
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SQL.get_or_init(|| format!("SELECT {JOB_COLS} FROM jobs WHERE dedupe_key = ?1"))
}

/// The due jobs a claim may take, oldest first: each with its key and limit. A job whose
/// key has `max` jobs running under an unexpired lease is left out (`jobs_keyed_running`).
/// `INDEXED BY jobs_due` pins the plan to the partial index: without statistics the planner
/// otherwise picks another index and sorts every available row, which makes the claim slow
/// down as the backlog grows. The index holds the key and limit, so a job without a key is
/// read from the index alone.
const CLAIM_CANDIDATES: &str = "SELECT id, concurrency_key, concurrency_max
     FROM jobs INDEXED BY jobs_due
     WHERE state = 'available' AND run_at <= ?1
       AND (concurrency_key IS NULL
            OR (SELECT count(*) FROM jobs h INDEXED BY jobs_keyed_running
                WHERE h.concurrency_key = jobs.concurrency_key AND h.state = 'running'
                  AND h.lease_expires_at > ?1) < concurrency_max)
     ORDER BY run_at, id LIMIT ?2";

fn claim_sql() -> &'static str {
    // SQLite has no SKIP LOCKED; with one writer the conditional UPDATE cannot race with
    // another claimer in this process, and across processes SQLite's write lock serializes
    // it (the state check leaves a job another process claimed in between). The unary `+`
    // keeps the outer filter off any index (the id lookup is the right plan).
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SQL.get_or_init(|| {
        format!(
            "UPDATE jobs SET state = 'running', attempt = attempt + 1, locked_by = ?1,
                    lease_token = ?2, lease_expires_at = ?3, attempted_at = ?4,
                    wait_reason = NULL
             WHERE id IN (SELECT value FROM json_each(?5))
               AND +state = 'available'
             RETURNING {JOB_COLS}, EXISTS (SELECT 1 FROM endpoint_limits l
                                           WHERE l.endpoint_id = jobs.endpoint_id),
                       (SELECT h.origin FROM host_limits h WHERE h.origin = jobs.http_origin)"
        )
    })
}

/// The candidates a claim takes: all but the jobs of a key beyond its `max` in this batch
/// (a failed key takes no slot, so its jobs are all taken: the executor fails them).
fn claim_pick(candidates: Vec<(String, Option<String>, Option<i64>)>) -> Vec<String> {
    let mut per_key: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
    candidates
        .into_iter()
        .filter_map(|(id, key, max)| match key {
            Some(k) if !k.starts_with('\u{1}') => {
                let n = per_key.entry(k).or_insert(0);
                *n += 1;
                (*n <= max.unwrap_or(1)).then_some(id)
            }
            _ => Some(id),
        })
        .collect()
}

/// Claim up to `limit` due jobs under a lease, each with whether its endpoint has limits and
/// the origin it calls when that has limits (`slots.rs`). The caller decodes them ([`StoredJob::decode`]) and sorts them oldest first:
/// neither needs the writer thread.
pub(crate) fn claim(conn: &Connection, p: &JobClaim) -> Result<Vec<ClaimedRow>> {
    let mut pick = conn
        .prepare_cached(CLAIM_CANDIDATES)
        .map_err(|e| map_native("job claim", e))?;
    let candidates = pick
        .query_map(params![to_millis(p.now), p.limit.max(0)], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .map_err(|e| map_native("job claim", e))?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(|e| map_native("job claim", e))?;
    if candidates.is_empty() {
        return Ok(Vec::new());
    }
    let ids = serde_json::Value::from(claim_pick(candidates)).to_string();
    let mut stmt = conn
        .prepare_cached(claim_sql())
        .map_err(|e| map_native("job claim", e))?;
    let rows = stmt
        .query_map(
            params![
                p.node,
                p.lease_token,
                to_millis(p.lease_until),
                to_millis(p.now),
                ids
            ],
            |r| {
                Ok((
                    StoredJob::read(r)?,
                    r.get::<_, bool>(23)?,
                    r.get::<_, Option<String>>(24)?,
                ))
            },
        )
        .map_err(|e| map_native("job claim", e))?;
    rows.collect::<rusqlite::Result<Vec<_>>>()
        .map_err(|e| map_native("job claim", e))
}

/// A claimed row: the job, whether its endpoint has limits, and its origin if that has limits.
pub(crate) type ClaimedRow = (StoredJob, bool, Option<String>);

/// Dead-letter a claimed job whose stored row cannot be decoded, under its lease (fencing), so
/// that it dies alone instead of failing the claim of its batch-mates.
pub(crate) fn dead_undecodable(
    conn: &Connection,
    bad: &[(String, String, String)],
    now: DateTime<Utc>,
) -> Result<()> {
    let mut stmt = conn
        .prepare_cached(
            "UPDATE jobs SET state = 'dead', finished_at = ?3, reason = 'corrupt', last_error = ?4,
                    locked_by = NULL, lease_token = NULL, lease_expires_at = NULL
             WHERE id = ?1 AND lease_token = ?2 AND state = 'running'",
        )
        .map_err(|e| map_native("job dead corrupt", e))?;
    for (id, token, error) in bad {
        stmt.execute(params![id, token, to_millis(now), error])
            .map_err(|e| map_native("job dead corrupt", e))?;
    }
    Ok(())
}

/// The job as its live lease holds it: its attempt number (for the attempt row).
/// A separate lookup instead of `UPDATE … RETURNING`: RETURNING builds a temporary b-tree on
/// every execution, which cost more than this primary-key read of a page already in cache.
const HELD: &str =
    "SELECT attempt FROM jobs WHERE id = ?1 AND lease_token = ?2 AND +state = 'running'";

/// The state change, under the same condition (fencing).
const COMPLETE: &str = "UPDATE jobs SET state = ?3,
        run_at = COALESCE(?4, run_at),
        attempt = attempt - ?5,
        finished_at = CASE WHEN ?3 = 'available' THEN NULL ELSE ?6 END,
        locked_by = NULL, lease_token = NULL, lease_expires_at = NULL,
        last_error = ?7, reason = ?8
 WHERE id = ?1 AND lease_token = ?2 AND +state = 'running'";

/// A plain success ([`JobComplete::attempt_is_implicit`]): the state change holds the attempt
/// too (its start and node), so there is no attempt row and no lookup of the attempt number;
/// whether the lease was still live is the update's row count.
const COMPLETE_IMPLICIT: &str = "UPDATE jobs SET state = 'succeeded',
        finished_at = ?3, attempted_at = ?4, attempted_by = ?5,
        locked_by = NULL, lease_token = NULL, lease_expires_at = NULL,
        last_error = NULL, reason = NULL
 WHERE id = ?1 AND lease_token = ?2 AND +state = 'running'";

const ATTEMPT: &str = "INSERT INTO job_attempts (job_id, attempt, started_at, finished_at, outcome, error_class, status_code, error, response, provider_id, node)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";

/// Record outcomes: for each completion whose lease is still live, the job's new state and
/// its attempt row; the others are reported stale and change nothing.
pub(crate) fn complete_many(conn: &Connection, p: &[JobComplete]) -> Result<CompleteReport> {
    let mut held = conn
        .prepare_cached(HELD)
        .map_err(|e| map_native("job complete", e))?;
    let mut update = conn
        .prepare_cached(COMPLETE)
        .map_err(|e| map_native("job complete", e))?;
    let mut attempt = conn
        .prepare_cached(ATTEMPT)
        .map_err(|e| map_native("job complete (attempts)", e))?;
    let mut implicit = conn
        .prepare_cached(COMPLETE_IMPLICIT)
        .map_err(|e| map_native("job complete", e))?;
    let mut report = CompleteReport::default();
    // Succeeded jobs whose success is an A/B exposure.
    let mut exposed: Vec<&str> = Vec::new();
    for c in p {
        if c.attempt_is_implicit() {
            let a = &c.attempt;
            let changed = implicit
                .execute(params![
                    c.id,
                    c.lease_token,
                    to_millis(a.finished_at),
                    to_millis(a.started_at),
                    a.node,
                ])
                .map_err(|e| map_native("job complete", e))?;
            if changed == 0 {
                report.stale.push(c.id.clone());
                continue;
            }
            report.applied += 1;
            if c.record_exposure {
                exposed.push(&c.id);
            }
            continue;
        }
        let (state, run_at, refund, reason) = match &c.transition {
            Transition::Succeeded => ("succeeded", None, 0_i64, None),
            Transition::Skipped(r) => ("skipped", None, 0, Some(r.as_str())),
            Transition::Retry {
                run_at,
                refund_attempt,
            } => (
                "available",
                Some(to_millis(*run_at)),
                i64::from(*refund_attempt),
                None,
            ),
            Transition::Dead => ("dead", None, 0, None),
        };
        let a = &c.attempt;
        let done: Option<i64> = held
            .query_row(params![c.id, c.lease_token], |r| r.get(0))
            .optional()
            .map_err(|e| map_native("job complete", e))?;
        let Some(before) = done else {
            // Another node holds the job now (or it was finished or cancelled meanwhile).
            report.stale.push(c.id.clone());
            continue;
        };
        update
            .execute(params![
                c.id,
                c.lease_token,
                state,
                run_at,
                refund,
                to_millis(a.finished_at),
                a.error,
                reason
            ])
            .map_err(|e| map_native("job complete", e))?;
        attempt
            .execute(params![
                c.id,
                before,
                to_millis(a.started_at),
                to_millis(a.finished_at),
                a.outcome.as_str(),
                a.error_class.map(|c| c.as_str()),
                a.status_code,
                a.error,
                a.response,
                a.provider_id,
                a.node,
            ])
            .map_err(|e| map_native("job complete (attempts)", e))?;
        report.applied += 1;
        if c.record_exposure && state == "succeeded" {
            exposed.push(&c.id);
        }
    }
    if !exposed.is_empty() {
        conn.prepare_cached(EXPOSE_SUCCEEDED)
            .and_then(|mut s| s.execute([serde_json::json!(exposed).to_string()]))
            .map_err(|e| map_native("job complete (exposures)", e))?;
    }
    Ok(report)
}

/// Extend the leases of jobs still held under the given tokens; how many were extended.
pub(crate) fn lease_renew(conn: &Connection, p: &JobLeaseRenew) -> Result<u64> {
    let mut stmt = conn
        .prepare_cached(
            "UPDATE jobs SET lease_expires_at = ?3
             WHERE id = ?1 AND lease_token = ?2 AND +state = 'running'",
        )
        .map_err(|e| map_native("job lease renew", e))?;
    let until = to_millis(p.lease_until);
    let mut n = 0;
    for (id, token) in &p.jobs {
        n += stmt
            .execute(params![id, token, until])
            .map_err(|e| map_native("job lease renew", e))? as u64;
    }
    Ok(n)
}

/// Return running jobs whose lease expired: a `lost` attempt each, then available again (or
/// dead when it was the last attempt).
pub(crate) fn rescue(conn: &Connection, p: &JobRescue) -> Result<Vec<String>> {
    let now = to_millis(p.now);
    let err = |e| map_native("job rescue", e);
    let mut ids: Vec<String> = conn
        .prepare_cached(
            "SELECT id FROM jobs INDEXED BY jobs_lease
             WHERE state = 'running' AND lease_expires_at < ?1
             ORDER BY lease_expires_at LIMIT ?2",
        )
        .map_err(err)?
        .query_map(params![now, p.limit.max(0)], |r| r.get(0))
        .map_err(err)?
        .collect::<rusqlite::Result<_>>()
        .map_err(err)?;
    if let Some(node) = &p.restarted_node {
        // The restarted node's own jobs, whatever their lease: a scan of the running jobs only
        // (the partial index), which are few.
        let room = (p.limit.max(0) as usize).saturating_sub(ids.len());
        let own: Vec<String> = conn
            .prepare_cached(
                "SELECT id FROM jobs INDEXED BY jobs_lease
                 WHERE state = 'running' AND lease_expires_at >= ?1 AND locked_by = ?2
                 ORDER BY lease_expires_at LIMIT ?3",
            )
            .map_err(err)?
            .query_map(params![now, node, room as i64], |r| r.get(0))
            .map_err(err)?
            .collect::<rusqlite::Result<_>>()
            .map_err(err)?;
        ids.extend(own);
    }
    let mut lost = conn
        .prepare_cached(
            "INSERT INTO job_attempts (job_id, attempt, started_at, finished_at, outcome, error_class, error, node)
             SELECT id, attempt, COALESCE(attempted_at, ?2), ?2, 'lost', 'transient',
                    CASE WHEN lease_expires_at >= ?2 THEN 'the node restarted while the job ran'
                         ELSE 'lease expired: the worker stopped or lost contact' END, locked_by
             FROM jobs WHERE id = ?1",
        )
        .map_err(err)?;
    let mut back = conn
        .prepare_cached(
            "UPDATE jobs SET state = CASE WHEN attempt >= max_attempts THEN 'dead' ELSE 'available' END,
                    finished_at = CASE WHEN attempt >= max_attempts THEN ?2 ELSE NULL END,
                    run_at = ?2,
                    last_error = CASE WHEN lease_expires_at >= ?2 THEN 'node restarted'
                                      ELSE 'lease expired' END,
                    locked_by = NULL, lease_token = NULL, lease_expires_at = NULL
             WHERE id = ?1",
        )
        .map_err(err)?;
    for id in &ids {
        lost.execute(params![id, now]).map_err(err)?;
        back.execute(params![id, now]).map_err(err)?;
    }
    Ok(ids)
}

fn corrupt(what: &str, e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::new(ErrorKind::Corrupt, format!("stored {what} cannot be read")).with_source(e)
}

/// A job row of [`JOB_COLS`] as stored: read on the writer thread (copying the values out of
/// SQLite), decoded later by the caller (parsing JSON is not the writer's work).
pub(crate) struct StoredJob {
    id: String,
    kind: String,
    state: String,
    payload: String,
    endpoint_id: Option<String>,
    schedule_id: Option<String>,
    fire_at: Option<i64>,
    period_key: Option<String>,
    dedupe_key: Option<String>,
    attempt: i64,
    retry: Option<String>,
    run_at: i64,
    created_at: i64,
    finished_at: Option<i64>,
    locked_by: Option<String>,
    lease_token: Option<String>,
    lease_expires_at: Option<i64>,
    last_error: Option<String>,
    reason: Option<String>,
    channel: Option<String>,
    concurrency_key: Option<String>,
    concurrency_max: Option<i64>,
    wait_reason: Option<String>,
}

impl StoredJob {
    /// Read a row by position (the order `JOB_COLS` lists).
    fn read(r: &Row<'_>) -> rusqlite::Result<StoredJob> {
        Ok(StoredJob {
            id: r.get(0)?,
            kind: r.get(1)?,
            state: r.get(2)?,
            payload: r.get(3)?,
            endpoint_id: r.get(4)?,
            schedule_id: r.get(5)?,
            fire_at: r.get(6)?,
            period_key: r.get(7)?,
            dedupe_key: r.get(8)?,
            attempt: r.get(9)?,
            retry: r.get(10)?,
            run_at: r.get(11)?,
            created_at: r.get(12)?,
            finished_at: r.get(13)?,
            locked_by: r.get(14)?,
            lease_token: r.get(15)?,
            lease_expires_at: r.get(16)?,
            last_error: r.get(17)?,
            reason: r.get(18)?,
            channel: r.get(19)?,
            concurrency_key: r.get(20)?,
            concurrency_max: r.get(21)?,
            wait_reason: r.get(22)?,
        })
    }

    /// The job's id and lease token, readable before decoding.
    pub(crate) fn id_and_lease(&self) -> (String, String) {
        (
            self.id.clone(),
            self.lease_token.clone().unwrap_or_default(),
        )
    }

    /// The job; a stored payload or retry policy that is not valid JSON is `Corrupt`.
    pub(crate) fn decode(self) -> Result<Job> {
        let retry = self
            .retry
            .map(|r| serde_json::from_str::<RetryPolicy>(&r))
            .transpose()
            .map_err(|e| corrupt("job retry policy", e))?;
        Ok(Job {
            payload: serde_json::from_str(&self.payload).map_err(|e| corrupt("job payload", e))?,
            retry,
            state: JobState::parse(&self.state),
            kind: JobKind(self.kind),
            id: self.id,
            endpoint_id: self.endpoint_id,
            schedule_id: self.schedule_id,
            fire_at: self.fire_at.map(from_millis),
            period_key: self.period_key,
            channel: self.channel,
            dedupe_key: self.dedupe_key,
            attempt: self.attempt as i32,
            run_at: from_millis(self.run_at),
            created_at: from_millis(self.created_at),
            finished_at: self.finished_at.map(from_millis),
            locked_by: self.locked_by,
            lease_token: self.lease_token,
            lease_expires_at: self.lease_expires_at.map(from_millis),
            last_error: self.last_error,
            reason: self.reason,
            concurrency: self.concurrency_key.map(|key| kairos_core::Concurrency {
                key,
                max: self
                    .concurrency_max
                    .and_then(|m| u32::try_from(m).ok())
                    .unwrap_or(0),
            }),
            wait_reason: self.wait_reason,
        })
    }
}

/// Record A/B exposures for the jobs of `applied` (a JSON array of ids of succeeded jobs whose
/// completion asked for it): run inside the completion's transaction.
const EXPOSE_SUCCEEDED: &str =
    "INSERT INTO exposures (job_id, topic, variant, recipient_id, period_key, created_at)
     SELECT j.id, j.topic, j.variant, j.recipient_id, j.period_key, j.finished_at
     FROM json_each(?1) AS a CROSS JOIN jobs j
     WHERE j.id = a.value AND j.state = 'succeeded'
       AND j.variant IS NOT NULL AND j.topic IS NOT NULL
     ON CONFLICT (job_id) DO NOTHING";
