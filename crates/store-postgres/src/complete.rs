//! The completion statements: a batch of completions as one typed array per column, for
//! `UNNEST`. PostgreSQL receives arrays in binary; the JSON batch this replaced was parsed
//! into `jsonb` on every completion — sorting each object's keys included — which was about a
//! sixth of the server's CPU on the hot path.
//!
//! Two statements. A plain success — the job row holds its attempt
//! ([`JobComplete::attempt_is_implicit`]) and no exposure is asked for — needs none of the
//! attempt's other fields, no attempt row and no exposure: a batch of nothing else goes
//! through [`plain`], which reads five arrays and updates the rows. Any other batch goes
//! through [`full`], which writes the attempt log and the exposures in the same statement
//! (and records its plain successes as well). Most batches are all plain; for 400 jobs the
//! short statement takes about a fifth less server time (`docs/benchmarks.md`).

use crate::map_err;
use chrono::{DateTime, Utc};
use kairos_store::{JobComplete, Result, Transition};

/// The columns, in the order of the full statement's `UNNEST` (see [`full`]).
#[derive(Default)]
pub(crate) struct Columns {
    pub id: Vec<String>,
    pub token: Vec<String>,
    pub state: Vec<&'static str>,
    pub run_at: Vec<Option<DateTime<Utc>>>,
    pub refund: Vec<i32>,
    pub reason: Vec<Option<String>>,
    pub started_at: Vec<DateTime<Utc>>,
    pub finished_at: Vec<DateTime<Utc>>,
    pub outcome: Vec<&'static str>,
    pub error_class: Vec<Option<&'static str>>,
    pub status_code: Vec<Option<i32>>,
    pub error: Vec<Option<String>>,
    pub response: Vec<Option<String>>,
    pub provider_id: Vec<Option<String>>,
    pub node: Vec<Option<String>>,
    pub expose: Vec<bool>,
    pub implicit: Vec<bool>,
}

impl Columns {
    pub(crate) fn of(completions: &[&JobComplete]) -> Columns {
        let mut c = Columns::default();
        for x in completions {
            let (state, run_at, refund, reason) = match &x.transition {
                Transition::Succeeded => ("succeeded", None, 0, None),
                Transition::Skipped(r) => ("skipped", None, 0, Some(r.clone())),
                Transition::Retry {
                    run_at,
                    refund_attempt,
                } => ("available", Some(*run_at), i32::from(*refund_attempt), None),
                Transition::Dead => ("dead", None, 0, None),
            };
            let a = &x.attempt;
            c.id.push(x.id.clone());
            c.token.push(x.lease_token.clone());
            c.state.push(state);
            c.run_at.push(run_at);
            c.refund.push(refund);
            c.reason.push(reason);
            c.started_at.push(a.started_at);
            c.finished_at.push(a.finished_at);
            c.outcome.push(a.outcome.as_str());
            c.error_class.push(a.error_class.map(|e| e.as_str()));
            c.status_code.push(a.status_code);
            c.error.push(a.error.clone());
            c.response.push(a.response.clone());
            c.provider_id.push(a.provider_id.clone());
            c.node.push(a.node.clone());
            c.expose.push(x.record_exposure);
            c.implicit.push(x.attempt_is_implicit());
        }
        c
    }
}

/// The statement of [`plain`] (parameters: ids, tokens, started and finished times, nodes).
pub(crate) const PLAIN: &str = "WITH c AS (
         SELECT * FROM UNNEST($1::text[], $2::text[], $3::timestamptz[], $4::timestamptz[],
             $5::text[]) AS c(id, token, started_at, finished_at, node)
     )
     UPDATE jobs SET state = 'succeeded', finished_at = c.finished_at,
            locked_by = NULL, lease_token = NULL, lease_expires_at = NULL,
            last_error = NULL, reason = NULL,
            attempted_at = c.started_at, attempted_by = c.node
     FROM c
     WHERE jobs.id = c.id AND jobs.id = ANY(ARRAY(SELECT id FROM c))
       AND jobs.lease_token = c.token AND jobs.state || '' = 'running'
     RETURNING jobs.id";

/// The statement of [`full`] (parameters: the seventeen columns of [`Columns`]).
pub(crate) const FULL: &str = "WITH c AS (
         SELECT * FROM UNNEST($1::text[], $2::text[], $3::text[], $4::timestamptz[],
             $5::integer[], $6::text[], $7::timestamptz[], $8::timestamptz[], $9::text[],
             $10::text[], $11::integer[], $12::text[], $13::text[], $14::text[],
             $15::text[], $16::boolean[], $17::boolean[])
         AS c(id, token, state, run_at, refund, reason, started_at, finished_at, outcome,
              error_class, status_code, error, response, provider_id, node, expose,
              implicit)
     ),
     done AS (
         UPDATE jobs SET state = c.state,
                run_at = COALESCE(c.run_at, jobs.run_at),
                attempt = jobs.attempt - c.refund,
                finished_at = CASE WHEN c.state = 'available' THEN NULL ELSE c.finished_at END,
                locked_by = NULL, lease_token = NULL, lease_expires_at = NULL,
                last_error = c.error, reason = c.reason,
                attempted_at = CASE WHEN c.implicit THEN c.started_at ELSE jobs.attempted_at END,
                attempted_by = CASE WHEN c.implicit THEN c.node ELSE jobs.attempted_by END
         FROM c
         WHERE jobs.id = c.id AND jobs.id = ANY(ARRAY(SELECT id FROM c))
           AND jobs.lease_token = c.token AND jobs.state || '' = 'running'
         RETURNING jobs.id AS job_id, jobs.attempt + c.refund AS attempt, c.started_at,
                   c.finished_at, c.outcome, c.error_class, c.status_code, c.error,
                   c.response, c.provider_id, c.node,
                   c.state AS new_state, c.expose, c.implicit,
                   jobs.topic, jobs.variant, jobs.recipient_id,
                   CASE WHEN c.expose THEN jobs.period_key END AS period_key
     ),
     -- A plain success is held by the job row (attempted_at, attempted_by): no row.
     logged AS (
         INSERT INTO job_attempts (job_id, attempt, started_at, finished_at, outcome, error_class, status_code, error, response, provider_id, node)
         SELECT job_id, attempt, started_at, finished_at, outcome, error_class, status_code, error, response, provider_id, node
         FROM done WHERE NOT implicit
     ),
     -- A/B exposures of succeeded jobs whose completion asks for them, in the
     -- completion's statement, from the job's audience columns.
     exposed AS (
         INSERT INTO exposures (job_id, topic, variant, recipient_id, period_key, created_at)
         SELECT job_id, topic, variant, recipient_id, period_key, finished_at
         FROM done
         WHERE new_state = 'succeeded' AND expose
           AND variant IS NOT NULL AND topic IS NOT NULL
         ON CONFLICT (job_id) DO NOTHING
     )
     SELECT job_id FROM done";

/// Whether `c` can take the short statement: a plain success without an exposure.
pub(crate) fn is_plain(c: &JobComplete) -> bool {
    c.attempt_is_implicit() && !c.record_exposure
}

/// Record plain successes ([`is_plain`]); returns the ids it applied to (the others' leases
/// are gone). The same fencing as [`full`]: the lease token and `running` state.
pub(crate) async fn plain<'e>(
    ex: impl sqlx::PgExecutor<'e>,
    completions: &[&JobComplete],
) -> Result<Vec<String>> {
    let n = completions.len();
    let (mut id, mut token, mut node) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let (mut started_at, mut finished_at) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for c in completions {
        id.push(c.id.as_str());
        token.push(c.lease_token.as_str());
        started_at.push(c.attempt.started_at);
        finished_at.push(c.attempt.finished_at);
        node.push(c.attempt.node.as_deref());
    }
    // What the full statement sets for an implicit success, no more: the attempt is held by
    // the row (`attempted_at`, `attempted_by`, `finished_at`); there is no error or reason.
    // The rows are found by primary key through an init plan, as in [`full`].
    sqlx::query_scalar(PLAIN)
        .bind(&id)
        .bind(&token)
        .bind(&started_at)
        .bind(&finished_at)
        .bind(&node)
        .fetch_all(ex)
        .await
        .map_err(|e| map_err("job complete", e))
}

/// Record any completions; returns the ids it applied to.
pub(crate) async fn full<'e>(
    ex: impl sqlx::PgExecutor<'e>,
    completions: &[&JobComplete],
) -> Result<Vec<String>> {
    let c = Columns::of(completions);
    // Differs from SQLite (two statements: attempts joined on the live lease, then the
    // state change): one statement. The fenced UPDATE locks each job it applies to and
    // hands the attempt fields through RETURNING to the INSERT, so the attempt log holds
    // exactly the completions that applied, even with a rescuer running concurrently on
    // another connection. The attempt number is the one before a refund. The jobs are
    // found by primary key, not by a scan of the running ones: `= ANY(ARRAY(SELECT …))` is an
    // init plan the planner cannot see into, so it estimates a few rows and probes the key;
    // `= ANY($1)` with the bound array let it scan `jobs_lease` instead.
    sqlx::query_scalar(FULL)
        .bind(&c.id)
        .bind(&c.token)
        .bind(&c.state)
        .bind(&c.run_at)
        .bind(&c.refund)
        .bind(&c.reason)
        .bind(&c.started_at)
        .bind(&c.finished_at)
        .bind(&c.outcome)
        .bind(&c.error_class)
        .bind(&c.status_code)
        .bind(&c.error)
        .bind(&c.response)
        .bind(&c.provider_id)
        .bind(&c.node)
        .bind(&c.expose)
        .bind(&c.implicit)
        .fetch_all(ex)
        .await
        .map_err(|e| map_err("job complete", e))
}
