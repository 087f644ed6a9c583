//! Operator work on jobs ([`crate::JobAdminStore`]): lists, search, cancel and retry (one or
//! in bulk), the attempt log and occurrences, written once over [`SqlRun`].
//!
//! Every filter is `($n IS NULL OR …)` so that one prepared statement serves every
//! combination; on PostgreSQL the NULL checks carry a cast that gives the parameter a type.
//! Ordering by the primary key keeps each page an index range; the payload filters (topic,
//! recipient) have no index and are checked row by row while walking that range, which is
//! fine for an operator's page.
//!
//! Bulk actions run one transaction per batch: pick the candidates in ascending id order after
//! the cursor (PostgreSQL locks them `FOR UPDATE`, waiting for a completion that holds a row
//! rather than skipping it: a skipped row would be passed by the cursor and never acted on;
//! SQLite's transaction holds the write lock), then update those still in a state the action
//! applies to.

use super::{ATTEMPT_COLS, Dialect, JOB_COLS, SqlDb, SqlRun, rows};
use crate::binds;
use crate::{
    Attempt, JOB_BULK_BATCH, JobBulkCancel, JobBulkDone, JobBulkRetry, JobCancel, JobList,
    JobRetry, JobSearch, JobSelect, OccurrenceCount, OccurrenceList, Result,
};
use kairos_core::Job;

/// The dialect's text: `(text cast, instant cast, row lock)` and a membership test of a
/// bound text list.
struct Casts {
    t: &'static str,
    ts: &'static str,
    lock: &'static str,
}

fn casts(d: Dialect) -> Casts {
    match d {
        Dialect::Sqlite => Casts {
            t: "",
            ts: "",
            lock: "",
        },
        Dialect::Postgres => Casts {
            t: "::text",
            ts: "::timestamptz",
            lock: " FOR UPDATE",
        },
    }
}

/// `column` is one of the bound text list `param` ([`crate::sql::Bind::TextList`]).
pub(crate) fn in_list(d: Dialect, column: &str, param: &str) -> String {
    match d {
        Dialect::Sqlite => format!("{column} IN (SELECT value FROM json_each({param}))"),
        Dialect::Postgres => format!("{column} = ANY({param}::text[])"),
    }
}

/// `job_list`.
pub async fn job_list(run: &mut impl SqlRun, p: JobList) -> Result<Vec<Job>> {
    let Casts { t, .. } = casts(run.dialect());
    let sql = format!(
        "SELECT {JOB_COLS} FROM jobs
         WHERE ($1{t} IS NULL OR state = $1) AND ($2{t} IS NULL OR kind = $2)
           AND ($3{t} IS NULL OR schedule_id = $3) AND ($4{t} IS NULL OR id < $4)
           AND ($6{t} IS NULL OR channel = $6)
         ORDER BY id DESC LIMIT $5"
    );
    let state = p.state.map(|s| s.as_str().to_string());
    let b = binds![
        state,
        p.kind,
        p.schedule_id,
        p.before_id,
        p.limit.unwrap_or(100).clamp(1, 10_000),
        p.channel
    ];
    run.fetch("job list", &sql, b, &|r| rows::job(r)).await
}

/// `job_search`.
pub async fn job_search(run: &mut impl SqlRun, p: JobSearch) -> Result<Vec<Job>> {
    let Casts { t, ts, .. } = casts(run.dialect());
    let sql = format!(
        "SELECT {JOB_COLS} FROM jobs
         WHERE ($1{t} IS NULL OR state = $1) AND ($2{t} IS NULL OR kind = $2)
           AND ($3{t} IS NULL OR schedule_id = $3) AND ($4{t} IS NULL OR period_key = $4)
           AND ($5{ts} IS NULL OR created_at >= $5) AND ($6{ts} IS NULL OR created_at < $6)
           AND ($7{t} IS NULL OR id < $7)
           AND ($9{t} IS NULL OR topic = $9)
           AND ($10{t} IS NULL OR recipient_id = $10)
           AND ($11{t} IS NULL OR channel = $11)
           AND ($12{t} IS NULL OR endpoint_id = $12
                OR (endpoint_id IS NULL AND recipient_id IS NOT NULL AND {kinds}
                    AND recipient_id IN (SELECT id FROM recipients WHERE endpoint_id = $12)))
           AND ($13{t} IS NULL OR LOWER({payload}) LIKE $13 ESCAPE '!')
         ORDER BY id DESC LIMIT $8",
        payload = match run.dialect() {
            Dialect::Sqlite => "payload",
            Dialect::Postgres => "payload::text",
        },
        kinds = in_list(run.dialect(), "kind", "$14"),
    );
    // The needle as a LIKE pattern matching itself anywhere: its wildcards escaped.
    let needle = p.payload_text.map(|n| {
        let mut pat = String::from("%");
        for c in n.to_ascii_lowercase().chars() {
            if matches!(c, '%' | '_' | '!') {
                pat.push('!');
            }
            pat.push(c);
        }
        pat.push('%');
        pat
    });
    let b = binds![
        p.state,
        p.kind,
        p.schedule_id,
        p.period_key,
        p.created_from,
        p.created_to,
        p.before_id,
        p.limit.clamp(1, 1000),
        p.topic,
        p.recipient_id,
        p.channel,
        p.endpoint_id,
        needle,
    ];
    let mut b = b;
    b.push(super::Bind::TextList(p.recipient_endpoint_kinds));
    run.fetch("job search", &sql, b, &|r| rows::job(r)).await
}

/// A job by id with why it waits when it does ([`super::insight::job_key_wait`]): both
/// stores' `JobStore::job_get`.
pub async fn job_read(run: &mut impl SqlRun, id: &str) -> Result<Option<Job>> {
    let Some(mut job) = job_get(run, "job get", id).await? else {
        return Ok(None);
    };
    super::insight::job_key_wait(run, &mut job).await?;
    Ok(Some(job))
}

async fn job_get(run: &mut impl SqlRun, what: &str, id: &str) -> Result<Option<Job>> {
    let sql = format!("SELECT {JOB_COLS} FROM jobs WHERE id = $1");
    run.fetch_optional(what, &sql, binds![id], &|r| rows::job(r))
        .await
}

/// The candidates of `s` in one of `states`, in id order after its cursor.
async fn pick(run: &mut impl SqlRun, s: &JobSelect, states: &[&str]) -> Result<Vec<String>> {
    let d = run.dialect();
    let Casts { t, ts, lock } = casts(d);
    let states = crate::sql::Bind::TextList(states.iter().map(|s| s.to_string()).collect());
    let limit = s.limit.clamp(1, JOB_BULK_BATCH);
    let (sql, b) = match &s.ids {
        Some(ids) => (
            format!(
                "SELECT id FROM jobs WHERE {} AND {} AND ($3{t} IS NULL OR id > $3)
                 ORDER BY id LIMIT $4{lock}",
                in_list(d, "id", "$1"),
                in_list(d, "state", "$2"),
            ),
            vec![
                crate::sql::Bind::TextList(ids.clone()),
                states,
                s.after_id.clone().into(),
                limit.into(),
            ],
        ),
        None => {
            let f = &s.filter;
            let sql = format!(
                "SELECT id FROM jobs WHERE {} AND ($2{t} IS NULL OR id > $2)
                   AND ($3{t} IS NULL OR state = $3) AND ($4{t} IS NULL OR kind = $4)
                   AND ($5{t} IS NULL OR schedule_id = $5) AND ($6{t} IS NULL OR channel = $6)
                   AND ($7{ts} IS NULL OR created_at < $7) AND ($8{ts} IS NULL OR created_at >= $8)
                   AND ($9{t} IS NULL OR recipient_id = $9)
                 ORDER BY id LIMIT $10{lock}",
                in_list(d, "state", "$1")
            );
            let mut b = vec![states];
            b.extend(binds![
                s.after_id.clone(),
                f.state.clone(),
                f.kind.clone(),
                f.schedule_id.clone(),
                f.channel.clone(),
                f.created_before,
                f.created_after,
                f.recipient_id.clone(),
                limit,
            ]);
            (sql, b)
        }
    };
    run.fetch("job bulk pick", &sql, b, &|r| r.text("id")).await
}

/// Cancel what `states` allows of `ids`; the rows changed.
const CANCEL: &str = "UPDATE jobs SET state = 'cancelled', finished_at = $2, reason = $3,
        locked_by = NULL, lease_token = NULL, lease_expires_at = NULL
     WHERE {ids} AND state IN ('available', 'running')";

/// A finished-but-not-succeeded job gets a fresh set of attempts; a waiting job is moved to
/// now. Succeeded and running jobs are left alone: re-running them would send twice. (Both
/// databases evaluate every SET expression on the old row.)
const RETRY: &str = "UPDATE jobs SET
        attempt = CASE WHEN state = 'available' THEN attempt ELSE 0 END,
        state = 'available', run_at = $2, finished_at = NULL, reason = NULL
     WHERE {ids} AND state IN ({states})";

/// The derived status of a period's jobs (grouped by period), the rule of
/// [`crate::OccurrenceList::status`]: an open job makes it `pending`; then a success is
/// `success` or, with a dead job, `partial`; a dead job `failure`; a skip `skipped`; else
/// `cancelled`.
const OCCURRENCE_STATUS: &str = "CASE
        WHEN SUM(CASE WHEN state NOT IN ('succeeded', 'skipped', 'dead', 'cancelled') THEN 1 ELSE 0 END) > 0 THEN 'pending'
        WHEN SUM(CASE WHEN state = 'succeeded' THEN 1 ELSE 0 END) > 0 THEN
            CASE WHEN SUM(CASE WHEN state = 'dead' THEN 1 ELSE 0 END) > 0 THEN 'partial' ELSE 'success' END
        WHEN SUM(CASE WHEN state = 'dead' THEN 1 ELSE 0 END) > 0 THEN 'failure'
        WHEN SUM(CASE WHEN state = 'skipped' THEN 1 ELSE 0 END) > 0 THEN 'skipped'
        ELSE 'cancelled' END";

/// The attempt a job row holds instead of an attempt row (a plain success, see
/// `JobComplete::attempt_is_implicit`), in [`ATTEMPT_COLS`] after `held` and `seq`; it comes
/// after the job's attempt rows. One statement with them, so both are read in one snapshot.
const IMPLICIT_ATTEMPT: &str = "SELECT 1, 0, id, attempt, attempted_at, finished_at, 'succeeded',
        NULL, NULL, NULL, NULL, NULL, attempted_by
 FROM jobs WHERE id = $1 AND state = 'succeeded' AND attempted_by IS NOT NULL
   AND attempted_at IS NOT NULL AND finished_at IS NOT NULL";

#[async_trait::async_trait]
impl<D: SqlDb> crate::JobAdminStore for D {
    async fn job_list(&self, p: JobList) -> Result<Vec<Job>> {
        job_list(&mut self.reader(), p).await
    }

    async fn job_search(&self, p: JobSearch) -> Result<Vec<Job>> {
        job_search(&mut self.reader(), p).await
    }

    async fn job_cancel(&self, p: JobCancel) -> Result<Option<Job>> {
        let mut tx = self.begin("job cancel").await?;
        let mut r = D::in_tx(&mut tx);
        let run = &mut r;
        let sql = CANCEL.replace("{ids}", "id = $1");
        run.execute("job cancel", &sql, binds![&p.id, p.now, p.reason])
            .await?;
        let job = job_get(run, "job cancel", &p.id).await?;
        drop(r);
        self.commit(tx, "job cancel").await?;
        Ok(job)
    }

    async fn job_retry(&self, p: JobRetry) -> Result<Option<Job>> {
        let mut tx = self.begin("job retry").await?;
        let mut r = D::in_tx(&mut tx);
        let run = &mut r;
        super::quarter_counts::quarter_counts_forget(run, "id = $1", p.id.as_str().into()).await?;
        let sql = RETRY
            .replace("{ids}", "id = $1")
            .replace("{states}", "'available', 'dead', 'cancelled', 'skipped'");
        run.execute("job retry", &sql, binds![&p.id, p.now]).await?;
        let job = job_get(run, "job retry", &p.id).await?;
        drop(r);
        self.commit(tx, "job retry").await?;
        Ok(job)
    }

    async fn job_bulk_cancel(&self, p: JobBulkCancel) -> Result<JobBulkDone> {
        let mut tx = self.begin("job bulk cancel").await?;
        let mut r = D::in_tx(&mut tx);
        let run = &mut r;
        let ids = pick(run, &p.select, &["available", "running"]).await?;
        let count = if ids.is_empty() {
            0
        } else {
            let sql = CANCEL.replace("{ids}", &in_list(run.dialect(), "id", "$1"));
            let b = vec![
                crate::sql::Bind::TextList(ids.clone()),
                p.now.into(),
                p.reason.into(),
            ];
            run.execute("job bulk cancel", &sql, b).await?
        };
        drop(r);
        self.commit(tx, "job bulk cancel").await?;
        Ok(JobBulkDone {
            count,
            last_id: ids.last().cloned(),
        })
    }

    async fn job_bulk_retry(&self, p: JobBulkRetry) -> Result<JobBulkDone> {
        let mut tx = self.begin("job bulk retry").await?;
        let mut r = D::in_tx(&mut tx);
        let run = &mut r;
        let ids = pick(run, &p.select, &["dead", "cancelled"]).await?;
        let count = if ids.is_empty() {
            0
        } else {
            let list = in_list(run.dialect(), "id", "$1");
            let b = crate::sql::Bind::TextList(ids.clone());
            super::quarter_counts::quarter_counts_forget(run, &list, b).await?;
            let sql = RETRY
                .replace("{ids}", &list)
                .replace("{states}", "'dead', 'cancelled'");
            let b = vec![crate::sql::Bind::TextList(ids.clone()), p.now.into()];
            run.execute("job bulk retry", &sql, b).await?
        };
        drop(r);
        self.commit(tx, "job bulk retry").await?;
        Ok(JobBulkDone {
            count,
            last_id: ids.last().cloned(),
        })
    }

    async fn attempt_list(&self, job_id: &str) -> Result<Vec<Attempt>> {
        let sql = format!(
            "SELECT {ATTEMPT_COLS} FROM (
                 SELECT 0 AS held, id AS seq, {ATTEMPT_COLS} FROM job_attempts WHERE job_id = $1
                 UNION ALL
                 {IMPLICIT_ATTEMPT}
             ) a ORDER BY held, seq"
        );
        self.reader()
            .fetch("attempt list", &sql, binds![job_id], &|r| rows::attempt(r))
            .await
    }

    async fn occurrence_list(&self, p: OccurrenceList) -> Result<Vec<OccurrenceCount>> {
        let Casts { t, .. } = casts(self.reader().dialect());
        let sql = format!(
            "WITH periods AS (
                 SELECT period_key, MIN(fire_at) AS fire_at FROM jobs
                 WHERE schedule_id = $1 AND period_key IS NOT NULL AND ($2{t} IS NULL OR period_key = $2)
                 GROUP BY period_key
                 HAVING $4{t} IS NULL OR {OCCURRENCE_STATUS} = $4
                 ORDER BY MIN(fire_at) DESC, period_key DESC LIMIT $3)
             SELECT j.period_key, p.fire_at, COALESCE(j.channel, j.kind) AS channel, j.state, COUNT(*) AS n
             FROM jobs j JOIN periods p ON p.period_key = j.period_key
             WHERE j.schedule_id = $1
             GROUP BY j.period_key, p.fire_at, COALESCE(j.channel, j.kind), j.state
             ORDER BY p.fire_at DESC, j.period_key DESC, channel, j.state"
        );
        let b = binds![p.schedule_id, p.period_key, p.limit.unwrap_or(20), p.status];
        self.reader()
            .fetch("occurrence list", &sql, b, &|r| rows::occurrence_count(r))
            .await
    }

    async fn delivery_list(&self, p: crate::DeliveryList) -> Result<Vec<crate::Delivery>> {
        super::deliveries::delivery_list(&mut self.reader(), p).await
    }
}
