//! Jobs and attempts on PostgreSQL.

use crate::rows::{JOB_COLS, job_from_row};
use crate::{PostgresStore, map_err};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use kairos_core::Job;
use kairos_store::*;
use sqlx::{AssertSqlSafe, Row};

/// Assemble SQL from a template and the column list; the list is a constant, so the
/// assembled string is safe.
pub(crate) fn sql(template: &str) -> AssertSqlSafe<String> {
    AssertSqlSafe(template.replace("{cols}", JOB_COLS))
}

/// How PostgreSQL wants batch values: RFC 3339 text (microseconds) and JSON as `jsonb` values.
pub(crate) const ENC: kairos_store::batch::BatchEncoding =
    kairos_store::batch::BatchEncoding::POSTGRES;

/// The batch of jobs as the JSON array `INSERT_MANY` reads.
pub(crate) fn insert_json(jobs: &[JobInsert]) -> serde_json::Value {
    kairos_store::batch::jobs_batch(jobs, ENC)
}

/// The store's own job insert: the shared one without its notification, which the store sends
/// after the commit (`wake.rs`).
pub(crate) use kairos_store::sql::JOBS_INSERT_POSTGRES_QUIET as INSERT_MANY;

/// Chunk size for bulk inserts: large enough to amortize the round trip, small enough to keep
/// a transaction short.
const INSERT_CHUNK: usize = 5_000;

/// The claim. Differs from SQLite: `FOR UPDATE SKIP LOCKED` lets claimers on many nodes take
/// disjoint rows without waiting for each other; under READ COMMITTED the lock re-checks
/// `state = 'available'` on the latest row version. The locking select is a CTE rather than
/// `id IN (…)` so that it runs exactly once (a LIMIT … SKIP LOCKED subquery re-scanned by a
/// join could pick other rows). The CTE's column is renamed so that `RETURNING {cols}` is
/// unambiguous. The update finds the rows by their tids (`ctid = ANY(ARRAY(…))`, an init plan
/// run once, then a TID scan): joined to the CTE instead, the planner hashed or sorted the
/// whole jobs table on every claim of a small table, and a primary-key lookup per row cost a
/// second index descent. The rows are locked by this statement, so their tids cannot move
/// under it; a row whose locked version is newer than the statement's snapshot is not seen by
/// the TID scan and stays `available` for the next claim (the state check guards it either
/// way). The state check is written so that it does not imply `jobs_due`'s predicate: as
/// `state = 'available'` the planner may scan the whole of `jobs_due` for the tids instead
/// (it did once the table had three more columns), reading every dead entry a held snapshot
/// keeps. `{from}` is empty for a sweep, or [`CLAIM_FROM`]. `flow_limited` says whether the job's
/// endpoint has limits, `flow_host` the origin an `http` job calls when that has limits
/// (`slots.rs`): probes of primary keys, in tables that are empty unless limits are set, run
/// only for a job that has an endpoint or an origin (`CASE` evaluates its branch lazily: a probe
/// per row for jobs with neither was about a tenth of the claim's server time, and most jobs
/// have neither).
/// A job with a concurrency key whose key has `concurrency_max` jobs running is skipped, not
/// claimed and put back, and so are the jobs of one key beyond its `max` in one batch (they
/// are locked by the select, not written: `kairos_store::concurrency`); for a job without a
/// key the filter is one null test. The claim clears `wait_reason`: a job that runs no longer waits.
const CLAIM: &str = "WITH cand (t, r, i, k, m) AS (
         SELECT ctid, run_at, id, concurrency_key, concurrency_max FROM jobs
         WHERE state = 'available' AND run_at <= $4 {from}
           AND (concurrency_key IS NULL
                OR (SELECT count(*) FROM jobs h
                    WHERE h.concurrency_key = jobs.concurrency_key AND h.state = 'running'
                      AND h.lease_expires_at > $4)
                   < concurrency_max)
         ORDER BY run_at, id LIMIT $5
         FOR UPDATE SKIP LOCKED),
     due (due_tid) AS (
         SELECT t FROM (SELECT t, k, m, row_number() OVER (PARTITION BY k ORDER BY r, i) AS n
                        FROM cand) c
         WHERE k IS NULL OR n <= m OR left(k, 1) = chr(1))
     UPDATE jobs SET state = 'running', attempt = attempt + 1, locked_by = $1,
            lease_token = $2, lease_expires_at = $3, attempted_at = $4, wait_reason = NULL
     WHERE jobs.ctid = ANY(ARRAY(SELECT due_tid FROM due))
       AND jobs.state || '' = 'available'
     RETURNING {cols},
               CASE WHEN jobs.endpoint_id IS NULL THEN false
                    ELSE EXISTS (SELECT 1 FROM endpoint_limits l
                                 WHERE l.endpoint_id = jobs.endpoint_id) END AS flow_limited,
               CASE WHEN jobs.http_origin IS NOT NULL
                    THEN (SELECT h.origin FROM host_limits h WHERE h.origin = jobs.http_origin)
               END AS flow_host";

/// The rescue: the jobs whose lease expired (`{who}`, see `job_rescue`) are available again,
/// or dead when their attempts are spent, each with a `lost` attempt logged.
const RESCUE: &str = "WITH lost AS (
         SELECT id AS lost_id, lease_expires_at AS expired_at, attempt AS lost_attempt,
                attempted_at AS lost_attempted_at, locked_by AS lost_by
         FROM jobs
         WHERE state = 'running' AND {who}
         ORDER BY lease_expires_at LIMIT $2
         FOR UPDATE SKIP LOCKED
     ),
     logged AS (
         INSERT INTO job_attempts (job_id, attempt, started_at, finished_at, outcome, error_class, error, node)
         SELECT lost_id, lost_attempt, COALESCE(lost_attempted_at, $1), $1, 'lost', 'transient',
                CASE WHEN expired_at >= $1 THEN 'the node restarted while the job ran'
                     ELSE 'lease expired: the worker stopped or lost contact' END, lost_by
         FROM lost
     )
     UPDATE jobs SET state = CASE WHEN attempt >= max_attempts THEN 'dead' ELSE 'available' END,
            finished_at = CASE WHEN attempt >= max_attempts THEN $1 ELSE NULL END,
            run_at = $1,
            last_error = CASE WHEN expired_at >= $1 THEN 'node restarted'
                              ELSE 'lease expired' END,
            locked_by = NULL, lease_token = NULL, lease_expires_at = NULL
     FROM lost WHERE jobs.id = lost.lost_id AND jobs.id = ANY(ARRAY(SELECT lost_id FROM lost))
     RETURNING jobs.id, lost.expired_at";

/// The rescue as it runs: of the leases expired (parameters: `now`, the limit, and no node), or
/// also of a restarted node's jobs (`restarted`: the node as `$3`); `from_floor` reads the
/// leases from `$4` up only (`rescue_floor.rs`). Exposed for checks of its plan
/// (`tests/hot_pool.rs`).
pub fn rescue_statement(restarted: bool, from_floor: bool) -> String {
    let who = match (restarted, from_floor) {
        (true, _) => "(lease_expires_at < $1 OR locked_by = $3)",
        (false, false) => "lease_expires_at < $1 AND $3::text IS NULL",
        (false, true) => "lease_expires_at >= $4 AND lease_expires_at < $1 AND $3::text IS NULL",
    };
    RESCUE.replace("{who}", who)
}

/// The lease renewal: ids and tokens as two arrays, the new lease end.
const RENEW: &str = "WITH r AS (SELECT * FROM UNNEST($1::text[], $2::text[]) AS r(id, token))
     UPDATE jobs SET lease_expires_at = $3
     FROM r
     WHERE jobs.id = r.id AND jobs.id = ANY(ARRAY(SELECT id FROM r))
       AND jobs.lease_token = r.token AND jobs.state || '' = 'running'";

/// The hot path's statements that find running jobs by id — the plain and the full
/// completion, the lease renewal — each with how many parameters it takes, for checks of
/// their plans (`tests/hot_pool.rs`). Every parameter's type is in the statement.
pub fn by_id_statements() -> [(&'static str, usize, &'static str); 3] {
    [
        ("complete plain", 5, crate::complete::PLAIN),
        ("complete full", 17, crate::complete::FULL),
        ("lease renew", 3, RENEW),
    ]
}

/// The lowest job with a concurrency key still due after a claim, which the claim may have
/// skipped because its key was at its max (`jobs_keyed_due`).
const KEYED_DUE: &str = "SELECT run_at, id FROM jobs
     WHERE state = 'available' AND concurrency_key IS NOT NULL AND run_at <= $1
     ORDER BY run_at, id LIMIT 1";

/// The claim statement as it runs: a sweep (`from_cursor` false) or a claim from the cursor
/// (parameters `$6`, `$7`), for checks of its plan (`tests/hot_pool.rs`).
pub fn claim_statement(from_cursor: bool) -> String {
    let from = if from_cursor { CLAIM_FROM } else { "" };
    CLAIM.replace("{from}", from).replace("{cols}", JOB_COLS)
}

/// Where a claim that is not a sweep starts: the cursor's key, a row comparison the B-tree
/// descends to.
const CLAIM_FROM: &str = "AND (run_at, id) >= ($6, $7)";

/// [`INSERT_MANY`] returning the whole row of the job it made (`job_insert`).
fn insert_returning() -> &'static str {
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SQL.get_or_init(|| {
        let base = INSERT_MANY
            .strip_suffix("RETURNING id")
            .unwrap_or(INSERT_MANY);
        format!("{base}RETURNING {JOB_COLS}")
    })
}

/// Why an insert created nothing and there is no job to answer with.
fn not_inserted(has_dedupe_key: bool) -> Error {
    if has_dedupe_key {
        Error::new(ErrorKind::Conflict, PRUNED_KEY)
    } else {
        Error::new(ErrorKind::Conflict, "job insert: the job id is taken")
    }
}

#[async_trait]
impl JobStore for PostgresStore {
    async fn job_insert(&self, p: JobInsert) -> Result<JobInserted> {
        // One statement, one round trip, for the usual case: the job is new, and the insert
        // returns it. An insert that did nothing (its dedupe key is taken) reads the job that
        // holds the key: under READ COMMITTED the next statement sees the latest commits, and
        // the insert waited for the key's writer.
        let inserted = sqlx::query(insert_returning())
            .bind(insert_json(std::slice::from_ref(&p)))
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| map_err("job insert", e))?;
        if let Some(row) = inserted {
            let job = job_from_row(&row)?;
            self.cursor.made_available((p.run_at, String::new()));
            self.waker.committed(&self.pool);
            return Ok(JobInserted { job, created: true });
        }
        // The dedupe key exists: answer with the job that holds it (none when the key is a
        // pruned job's tombstone).
        let row = sqlx::query(sql("SELECT {cols} FROM jobs WHERE dedupe_key = $1"))
            .bind(&p.dedupe_key)
            .fetch_optional(&self.pool)
            .await
            .map_err(|e| map_err("job insert", e))?
            .ok_or_else(|| not_inserted(p.dedupe_key.is_some()))?;
        Ok(JobInserted {
            job: job_from_row(&row)?,
            created: false,
        })
    }

    async fn job_insert_many(&self, p: Vec<JobInsert>) -> Result<Vec<String>> {
        let mut ids = Vec::new();
        for chunk in p.chunks(INSERT_CHUNK) {
            let created: Vec<String> = sqlx::query_scalar(INSERT_MANY)
                .bind(insert_json(chunk))
                .fetch_all(&self.pool)
                .await
                .map_err(|e| map_err("job insert many", e))?;
            if !created.is_empty()
                && let Some(first) = chunk.iter().map(|j| j.run_at).min()
            {
                self.cursor.made_available((first, String::new()));
                self.waker.committed(&self.pool);
            }
            ids.extend(created);
        }
        Ok(ids)
    }

    async fn job_insert_batch(&self, p: Vec<JobInsert>) -> Result<Vec<JobInserted>> {
        const WHAT: &str = "job insert batch";
        if p.is_empty() {
            return Ok(Vec::new());
        }
        // One transaction, two statements: the insert returns the jobs it made (a key taken
        // earlier in the same statement is skipped, as `DO NOTHING` sees this statement's
        // rows); the jobs holding the keys of the others are read after it, which under READ
        // COMMITTED sees the latest commits (the insert waited for each key's writer).
        let mut tx = self.pool.begin().await.map_err(|e| map_err(WHAT, e))?;
        let rows = sqlx::query(insert_returning())
            .bind(insert_json(&p))
            .fetch_all(&mut *tx)
            .await
            .map_err(|e| map_err(WHAT, e))?;
        let mut made = std::collections::HashMap::with_capacity(rows.len());
        for row in &rows {
            let job = job_from_row(row)?;
            made.insert(job.id.clone(), job);
        }
        let keys: Vec<String> = p
            .iter()
            .enumerate()
            .filter(|(_, j)| !made.contains_key(&j.id))
            .map(|(i, j)| {
                j.dedupe_key
                    .clone()
                    .ok_or_else(|| not_inserted(false).with_entry(i))
            })
            .collect::<Result<_>>()?;
        let mut held = std::collections::HashMap::with_capacity(keys.len());
        if !keys.is_empty() {
            let rows = sqlx::query(sql("SELECT {cols} FROM jobs WHERE dedupe_key = ANY($1)"))
                .bind(&keys)
                .fetch_all(&mut *tx)
                .await
                .map_err(|e| map_err(WHAT, e))?;
            for row in &rows {
                let job = job_from_row(row)?;
                if let Some(k) = job.dedupe_key.clone() {
                    held.insert(k, job);
                }
            }
        }
        let mut out = Vec::with_capacity(p.len());
        for (i, j) in p.iter().enumerate() {
            let r = match made.get(&j.id) {
                Some(job) => JobInserted {
                    job: job.clone(),
                    created: true,
                },
                None => {
                    // A key no job holds is a pruned job's tombstone: the transaction is
                    // dropped, so nothing of the batch is inserted.
                    let key = j.dedupe_key.as_deref().unwrap_or_default();
                    let job = held
                        .get(key)
                        .ok_or_else(|| not_inserted(true).with_entry(i))?;
                    JobInserted {
                        job: job.clone(),
                        created: false,
                    }
                }
            };
            out.push(r);
        }
        tx.commit().await.map_err(|e| map_err(WHAT, e))?;
        if let Some(first) = p
            .iter()
            .filter(|j| made.contains_key(&j.id))
            .map(|j| j.run_at)
            .min()
        {
            self.cursor.made_available((first, String::new()));
            self.waker.committed(&self.pool);
        }
        Ok(out)
    }

    async fn job_get(&self, id: &str) -> Result<Option<Job>> {
        kairos_store::sql::job_admin::job_read(&mut kairos_store::sql::SqlDb::reader(self), id)
            .await
    }

    async fn job_claim(&self, p: JobClaim) -> Result<Vec<Job>> {
        // The scan starts at the claim cursor (`cursor.rs`): not at the start of `jobs_due`,
        // whose first entries are, under a long-held snapshot, the dead entries of every job
        // already claimed.
        let start = self.cursor.start(p.now);
        let limit = p.limit.max(0);
        let q = match &start.from {
            None => sqlx::query(sql(&CLAIM.replace("{from}", ""))),
            Some(_) => sqlx::query(sql(&CLAIM.replace("{from}", CLAIM_FROM))),
        };
        let q = q
            .bind(&p.node)
            .bind(&p.lease_token)
            .bind(p.lease_until)
            .bind(p.now)
            .bind(limit);
        let q = match &start.from {
            Some((run_at, id)) => q.bind(*run_at).bind(id),
            None => q,
        };
        let turn = if self.cursor.keyed_recent(p.now) {
            Some(self.keyed_turn.lock().await)
        } else {
            None
        };
        let rows = match q.fetch_all(&self.claim).await {
            Ok(rows) => rows,
            Err(e) => {
                self.cursor.failed(&start);
                return Err(map_err("job claim", e));
            }
        };
        drop(turn);
        let mut last: Option<crate::cursor::Key> = None;
        for row in &rows {
            let key = (
                row.try_get::<DateTime<Utc>, _>("run_at")
                    .map_err(|e| map_err("run_at", e))?,
                row.try_get::<String, _>("id")
                    .map_err(|e| map_err("id", e))?,
            );
            if last.as_ref().is_none_or(|l| *l < key) {
                last = Some(key);
            }
        }
        self.cursor
            .claimed(&start, p.now, limit as usize, rows.len(), last);
        if !rows.is_empty() {
            self.rescue_floor.leased(p.lease_until);
        }
        if rows.iter().any(|r| {
            matches!(
                r.try_get::<Option<String>, _>("concurrency_key"),
                Ok(Some(_))
            )
        }) {
            self.cursor.keyed_seen(p.now);
        }
        if self.cursor.keyed_recent(p.now) {
            // The claim skips the jobs of a key at its max: the lowest keyed job still due
            // is where the next claim starts (a probe of `jobs_keyed_due`, empty unless
            // keyed jobs wait). This probe is also what makes a claim that came back short
            // only because of the batch's per-key limit safe: `claimed` then moves the floor
            // to `now` as if every due job were read, and the dropped jobs, all keyed and of
            // a key this claim returned (so `keyed_seen` is set), mark where to start again.
            // A key held only by another node's jobs, which this node never claims, is left
            // to the sweeps (`cursor.rs`).
            let skipped: Option<(DateTime<Utc>, String)> = sqlx::query_as(KEYED_DUE)
                .bind(p.now)
                .fetch_optional(&self.claim)
                .await
                .map_err(|e| map_err("job claim: keyed", e))?;
            if let Some(key) = skipped {
                self.cursor.made_available(key);
                self.cursor.keyed_seen(p.now);
            }
        }
        // A row that cannot be decoded dies alone: its batch-mates are returned and run, and
        // it is dead-lettered under its lease with the decoding error (it could never run).
        let mut jobs = Vec::with_capacity(rows.len());
        let mut limited = std::collections::HashMap::new();
        for row in &rows {
            match job_from_row(row) {
                Ok(job) => {
                    let host: Option<String> = row.try_get("flow_host").unwrap_or(None);
                    if let Some(target) = kairos_store::flow::flow_target(
                        &job,
                        row.try_get::<bool, _>("flow_limited").unwrap_or(false),
                        host.as_deref(),
                    ) {
                        limited.insert(job.id.clone(), target);
                    }
                    jobs.push(job)
                }
                Err(e) => {
                    let id: String = row.try_get("id").map_err(|e| map_err("id", e))?;
                    tracing::error!(job_id = %id, error = %e, "claimed job cannot be decoded; dead-lettered");
                    sqlx::query(
                        "UPDATE jobs SET state = 'dead', finished_at = $3, reason = 'corrupt',
                                last_error = $4, locked_by = NULL, lease_token = NULL,
                                lease_expires_at = NULL
                         WHERE id = $1 AND lease_token = $2 AND state = 'running'",
                    )
                    .bind(&id)
                    .bind(&p.lease_token)
                    .bind(p.now)
                    .bind(kairos_core::error_chain(&e))
                    .execute(&self.pool)
                    .await
                    .map_err(|e| map_err("job dead corrupt", e))?;
                }
            }
        }
        // RETURNING order is unspecified: restore oldest-first.
        jobs.sort_by(|a, b| (a.run_at, &a.id).cmp(&(b.run_at, &b.id)));
        // Jobs with a concurrency key run only with a slot of their key, deliveries to an
        // endpoint with limits only within them (`slots.rs`); a batch with neither returns
        // there without another statement.
        let (jobs, back) = crate::slots::take(&self.hot, &self.claim, &p, jobs, limited).await?;
        // A job put back for its key is due again soon, below where the cursor may be.
        for key in back {
            self.cursor.made_available(key);
        }
        Ok(jobs)
    }

    async fn job_lease_renew(&self, p: JobLeaseRenew) -> Result<u64> {
        let (ids, tokens): (Vec<&str>, Vec<&str>) = p
            .jobs
            .iter()
            .map(|(id, t)| (id.as_str(), t.as_str()))
            .unzip();
        // Differs from SQLite (one cached statement per job): one statement, the leases as two
        // arrays, the rows found by primary key as in `job_complete_many`.
        let done = sqlx::query(RENEW)
            .bind(&ids)
            .bind(&tokens)
            .bind(p.lease_until)
            .execute(&self.hot)
            .await
            .map_err(|e| map_err("job lease renew", e))?;
        if done.rows_affected() > 0 {
            self.rescue_floor.leased(p.lease_until);
        }
        Ok(done.rows_affected())
    }

    async fn job_complete_many(&self, p: Vec<JobComplete>) -> Result<CompleteReport> {
        if p.is_empty() {
            return Ok(CompleteReport::default());
        }
        // A batch of plain successes only (most batches) takes the short statement; any other
        // batch the full one, which records plain successes too. Splitting a mixed batch would
        // cost a transaction's two extra round trips to save the full statement's work on part
        // of it.
        let all: Vec<&JobComplete> = p.iter().collect();
        let applied = if all.iter().all(|c| crate::complete::is_plain(c)) {
            crate::complete::plain(&self.hot, &all).await?
        } else {
            crate::complete::full(&self.hot, &all).await?
        };
        let applied_set: std::collections::HashSet<&str> =
            applied.iter().map(|s| s.as_str()).collect();
        let retry_at = p
            .iter()
            .filter(|c| applied_set.contains(c.id.as_str()))
            .filter_map(|c| match &c.transition {
                Transition::Retry { run_at, .. } => Some(*run_at),
                _ => None,
            })
            .min();
        if let Some(first) = retry_at {
            self.cursor.made_available((first, String::new()));
        }
        let stale = p
            .iter()
            .filter(|c| !applied_set.contains(c.id.as_str()))
            .map(|c| c.id.clone())
            .collect();
        Ok(CompleteReport {
            applied: applied.len() as u64,
            stale,
        })
    }

    async fn job_rescue(&self, p: JobRescue) -> Result<Vec<String>> {
        // Differs from SQLite (a select, then two statements per job): one statement. The
        // expired leases are locked with SKIP LOCKED so that two rescuers (or a rescuer and a
        // late completion) never both act on a job; the attempt log reads the rows as they
        // were before the update (all parts of the statement share one snapshot). The
        // restarted node's jobs are asked for only on a node's first run: with the `OR`
        // in every run, the hot path's one plan (`force_generic_plan`) could not bound its
        // scan of `jobs_lease` by the lease, and read the whole index every five seconds:
        // under a held snapshot, an entry for every job run since.
        // The scan starts at the rescue floor (`rescue_floor.rs`): under a held snapshot the
        // first entries of `jobs_lease` are the dead entries of every job run since.
        let restarted = p.restarted_node.is_some();
        let start = self.rescue_floor.start(p.now, restarted);
        let from = start.from;
        let limit = p.limit.max(0);
        let statement = rescue_statement(restarted, from.is_some());
        let q = sqlx::query(AssertSqlSafe(statement))
            .bind(p.now)
            .bind(limit)
            .bind(&p.restarted_node);
        let q = match from {
            Some(from) => q.bind(from),
            None => q,
        };
        let rows = match q.fetch_all(&self.hot).await {
            Ok(rows) => rows,
            Err(e) => {
                self.rescue_floor.failed(&start);
                return Err(map_err("job rescue", e));
            }
        };
        let mut out = rows
            .iter()
            .map(|r| {
                Ok((
                    r.try_get::<DateTime<Utc>, _>("expired_at")
                        .map_err(|e| map_err("job rescue", e))?,
                    r.try_get::<String, _>("id")
                        .map_err(|e| map_err("job rescue", e))?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let last = out.iter().map(|(at, _)| *at).max();
        self.rescue_floor
            .rescued(&start, p.now, limit as usize, out.len(), last);
        if !out.is_empty() {
            // Rescued jobs are available again at `now`.
            self.cursor.made_available((p.now, String::new()));
        }
        // Oldest lease first, as SQLite returns them.
        out.sort();
        Ok(out.into_iter().map(|(_, id)| id).collect())
    }

    async fn job_next_run_at(&self) -> Result<Option<DateTime<Utc>>> {
        // Differs from SQLite: no `INDEXED BY`; the planner uses the partial index jobs_due,
        // from the claim cursor's key when it knows one (the entries below it are the dead
        // entries of jobs claimed; a job made available below it elsewhere is found by the
        // next sweep, within a second).
        match self.cursor.peek() {
            Some((run_at, id)) => sqlx::query_scalar(
                "SELECT MIN(run_at) FROM jobs WHERE state = 'available' AND (run_at, id) >= ($1, $2)",
            )
            .bind(run_at)
            .bind(id)
            .fetch_one(&self.pool)
            .await,
            None => sqlx::query_scalar("SELECT MIN(run_at) FROM jobs WHERE state = 'available'")
                .fetch_one(&self.pool)
                .await,
        }
        .map_err(|e| map_err("job next run_at", e))
    }

    async fn job_prune(&self, p: JobPrune) -> Result<JobPruned> {
        let states = p.final_state_names();
        if states.is_empty() || p.limit <= 0 {
            return Ok(JobPruned::default());
        }
        let mut tx = self
            .pool
            .begin()
            .await
            .map_err(|e| map_err("job prune", e))?;
        // Differs from SQLite: the batch is locked with SKIP LOCKED, so two pruners (or a
        // replay of a dead job at the same moment) never wait on each other; states are a
        // text array. The attempts and the dedupe tombstones (the keys outlive their jobs, so
        // re-firing an old period does not send again) go in the same statement through
        // data-modifying CTEs.
        let row = sqlx::query(
            "WITH batch AS (
                 SELECT id, dedupe_key, finished_at, attempted_by FROM jobs
                 WHERE finished_at IS NOT NULL AND finished_at < $1 AND state = ANY($2)
                 ORDER BY finished_at LIMIT $3
                 FOR UPDATE SKIP LOCKED
             ), tombstones AS (
                 INSERT INTO dedupe_tombstones (dedupe_key, job_id, finished_at)
                 SELECT dedupe_key, id, finished_at FROM batch WHERE dedupe_key IS NOT NULL
                 ON CONFLICT (dedupe_key) DO NOTHING
             ), gone_attempts AS (
                 DELETE FROM job_attempts WHERE job_id IN (SELECT id FROM batch) RETURNING 1
             ), gone_jobs AS (
                 DELETE FROM jobs WHERE id IN (SELECT id FROM batch) RETURNING 1
             )
             SELECT (SELECT COUNT(*) FROM gone_jobs) AS jobs,
                    (SELECT COUNT(*) FROM gone_attempts)
                      + (SELECT COUNT(*) FROM batch WHERE attempted_by IS NOT NULL) AS attempts",
        )
        .bind(p.older_than)
        .bind(&states)
        .bind(p.limit)
        .fetch_one(&mut *tx)
        .await
        .map_err(|e| map_err("job prune", e))?;
        tx.commit().await.map_err(|e| map_err("job prune", e))?;
        let jobs: i64 = row.try_get("jobs").map_err(|e| map_err("job prune", e))?;
        let attempts: i64 = row
            .try_get("attempts")
            .map_err(|e| map_err("job prune", e))?;
        Ok(JobPruned {
            jobs: jobs.max(0) as u64,
            attempts: attempts.max(0) as u64,
        })
    }

    async fn retention_prune(&self, p: RetentionPrune) -> Result<u64> {
        kairos_store::sql::retention_prune(&mut crate::rows::PgRun::Pool(&self.pool), p).await
    }
}
