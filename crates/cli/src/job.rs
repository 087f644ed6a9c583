//! `kairos job enqueue|list|show|retry|cancel`, on the database directly.

use crate::common::*;
use crate::remote::{Backend, Remote};
use kairos_engine::ops::NewJob;
use kairos_server::views::{JobPage, JobView};

/// Default page size of `job list`.
const DEFAULT_LIMIT: i64 = 50;

/// `kairos job …`.
#[derive(Debug, clap::Subcommand)]
pub enum JobCmd {
    /// Enqueue a job.
    Enqueue(EnqueueArgs),
    /// List jobs, newest first.
    List(ListArgs),
    /// Show a job and its attempts.
    Show {
        /// Job id (`job_…`).
        id: String,
    },
    /// Run a job again now (dead, cancelled, skipped, or waiting for a retry).
    Retry {
        /// Job id.
        id: String,
    },
    /// Cancel a job that has not finished.
    Cancel {
        /// Job id.
        id: String,
        /// Why.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Cancel every job of the filter that has not finished (in batches of 1,000).
    CancelMatching {
        /// The jobs.
        #[command(flatten)]
        filter: BulkFilter,
        /// Why (stored on each job; default "cancelled in bulk").
        #[arg(long)]
        reason: Option<String>,
    },
    /// Queue every dead or cancelled job of the filter again, now (in batches of 1,000).
    RetryMatching {
        /// The jobs.
        #[command(flatten)]
        filter: BulkFilter,
    },
}

/// The filter of `job cancel-matching` and `job retry-matching` (the API's bulk filter; none
/// given: refused unless `--all`).
#[derive(Debug, Clone, clap::Args)]
pub struct BulkFilter {
    /// available, running, succeeded, skipped, cancelled, dead.
    #[arg(long)]
    pub state: Option<String>,
    /// Job kind.
    #[arg(long)]
    pub kind: Option<String>,
    /// Jobs of this schedule.
    #[arg(long)]
    pub schedule: Option<String>,
    /// Jobs on this channel.
    #[arg(long)]
    pub channel: Option<String>,
    /// Jobs created at or after this instant (RFC 3339).
    #[arg(long)]
    pub created_after: Option<String>,
    /// Jobs created before this instant (RFC 3339).
    #[arg(long)]
    pub created_before: Option<String>,
    /// Every job the action applies to (required when no filter is given).
    #[arg(long)]
    pub all: bool,
}

impl BulkFilter {
    fn request(self, reason: Option<String>) -> kairos_engine::ops::JobBulkRequest {
        kairos_engine::ops::JobBulkRequest {
            ids: None,
            state: self.state,
            kind: self.kind,
            schedule_id: self.schedule,
            channel: self.channel,
            created_before: self.created_before,
            created_after: self.created_after,
            reason,
            all: self.all.then_some(true),
        }
    }
}

/// `kairos job enqueue`.
#[derive(Debug, clap::Args)]
pub struct EnqueueArgs {
    /// Job kind (default webhook).
    #[arg(long)]
    pub kind: Option<String>,
    /// Webhook URL.
    #[arg(long)]
    pub url: Option<String>,
    /// Webhook signing secret (whsec_…).
    #[arg(long)]
    pub secret: Option<String>,
    /// Payload (JSON).
    #[arg(long)]
    pub payload: Option<String>,
    /// When to run (RFC 3339, default now).
    #[arg(long)]
    pub run_at: Option<String>,
    /// The same key again returns the same job.
    #[arg(long)]
    pub idempotency_key: Option<String>,
    /// For kind http: what to call, as the API's `http` object (JSON:
    /// `{"url", "method", "headers", "body", "timeout", "deadline", "bearer_token"}`).
    #[arg(long)]
    pub http: Option<String>,
    /// Retry delays, comma-separated ("1s,2s").
    #[arg(long)]
    pub retry_delays: Option<String>,
    /// Maximum attempts.
    #[arg(long)]
    pub max_attempts: Option<u32>,
    /// At most --concurrency-max jobs with this key run at once, across every node: a
    /// template over the payload ("account:{{ payload.account_id }}").
    #[arg(long)]
    pub concurrency_key: Option<String>,
    /// How many jobs of --concurrency-key may run at once (default 1).
    #[arg(long)]
    pub concurrency_max: Option<i64>,
}

/// The filters of `job list` and `dlq list`: the API's vocabulary (`--schedule-id` is an
/// alias of `--schedule`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct FilterArgs {
    /// Job kind.
    #[arg(long)]
    pub kind: Option<String>,
    /// Jobs of this schedule.
    #[arg(long, alias = "schedule-id")]
    pub schedule: Option<String>,
    /// Audience jobs of this topic.
    #[arg(long)]
    pub topic: Option<String>,
    /// Audience jobs of this recipient id.
    #[arg(long)]
    pub recipient: Option<String>,
    /// Jobs of this period key (`2026-W49`).
    #[arg(long)]
    pub period: Option<String>,
    /// Jobs on this channel.
    #[arg(long)]
    pub channel: Option<String>,
    /// Jobs created at or after this instant (RFC 3339).
    #[arg(long)]
    pub created_after: Option<String>,
    /// Jobs created before this instant (RFC 3339).
    #[arg(long)]
    pub created_before: Option<String>,
}

impl FilterArgs {
    /// The facade's filter.
    pub fn filter(
        self,
        state: Option<String>,
        before: Option<String>,
        limit: i64,
    ) -> kairos_engine::ops::JobFilter {
        kairos_engine::ops::JobFilter {
            state,
            kind: self.kind,
            schedule: self.schedule,
            topic: self.topic,
            recipient: self.recipient,
            period: self.period,
            channel: self.channel,
            created_after: self.created_after,
            created_before: self.created_before,
            before,
            limit: Some(limit),
        }
    }
}

/// Filters of `job list`.
#[derive(Debug, Clone, clap::Args)]
pub struct ListArgs {
    /// available, running, succeeded, skipped, cancelled, dead.
    #[arg(long)]
    pub state: Option<String>,
    /// The other filters.
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Jobs older than this id (the previous page's last id).
    #[arg(long)]
    pub before: Option<String>,
    /// Page size, 1 to 1000.
    #[arg(long, default_value_t = DEFAULT_LIMIT)]
    pub limit: i64,
}

fn print_job(v: &JobView, json: bool) -> CliResult {
    if json {
        return print_json(v);
    }
    let mut fields = vec![
        ("id", v.id.clone()),
        ("kind", v.kind.clone()),
        ("state", v.state.clone()),
        ("attempt", format!("{} of {}", v.attempt, v.max_attempts)),
        ("run_at", v.run_at.clone()),
        ("created_at", v.created_at.clone()),
        ("finished_at", cell(&v.finished_at)),
        ("schedule_id", cell(&v.schedule_id)),
        ("period_key", cell(&v.period_key)),
        ("idempotency_key", cell(&v.idempotency_key)),
        ("last_error", cell(&v.last_error)),
        ("reason", cell(&v.reason)),
        ("payload", v.payload.to_string()),
    ];
    if let Some(h) = &v.http {
        fields.insert(3, ("http", crate::schedule::http_text(h)));
    }
    if let Some(w) = &v.webhook {
        fields.insert(3, ("webhook", w.url.clone()));
    }
    if let Some(c) = &v.channel {
        fields.insert(3, ("channel", c.clone()));
    }
    print_fields(&fields);
    if let Some(attempts) = &v.attempts
        && !attempts.is_empty()
    {
        println!();
        let rows: Vec<Vec<String>> = attempts
            .iter()
            .map(|a| {
                vec![
                    a.attempt.to_string(),
                    a.started_at.clone(),
                    a.outcome.clone(),
                    a.status_code.map(|c| c.to_string()).unwrap_or("-".into()),
                    cell(&a.error_class),
                    cell(&a.error),
                ]
            })
            .collect();
        print_table(
            &["ATTEMPT", "STARTED", "OUTCOME", "STATUS", "CLASS", "ERROR"],
            &rows,
        );
    }
    Ok(())
}

/// Print a list of jobs as a table or `{"data", "next_before"}`.
pub fn print_jobs(views: &[JobView], limit: i64, json: bool) -> CliResult {
    let next_before = (views.len() as i64 == limit)
        .then(|| views.last().map(|v| v.id.clone()))
        .flatten();
    if json {
        return print_json(&JobPage {
            data: views.to_vec(),
            next_before,
        });
    }
    let rows: Vec<Vec<String>> = views
        .iter()
        .map(|v| {
            vec![
                v.id.clone(),
                v.kind.clone(),
                v.state.clone(),
                format!("{}/{}", v.attempt, v.max_attempts),
                v.run_at.clone(),
                cell(&v.schedule_id),
                cell(&v.last_error),
            ]
        })
        .collect();
    print_table(
        &[
            "ID",
            "KIND",
            "STATE",
            "ATTEMPT",
            "RUN AT",
            "SCHEDULE",
            "LAST ERROR",
        ],
        &rows,
    );
    if let Some(b) = next_before {
        eprintln!("more: --before {b}");
    }
    Ok(())
}

/// The query of `GET /v1/jobs` (and `/v1/dlq`) for a filter.
pub fn filter_query(f: &kairos_engine::ops::JobFilter) -> Vec<(&'static str, Option<String>)> {
    vec![
        ("state", f.state.clone()),
        ("kind", f.kind.clone()),
        ("schedule", f.schedule.clone()),
        ("topic", f.topic.clone()),
        ("recipient", f.recipient.clone()),
        ("period", f.period.clone()),
        ("channel", f.channel.clone()),
        ("created_after", f.created_after.clone()),
        ("created_before", f.created_before.clone()),
        ("before", f.before.clone()),
        ("limit", f.limit.map(|l| l.to_string())),
    ]
}

/// Jobs of a filter, from the database or the API (`path`: `/v1/jobs` or `/v1/dlq`).
pub async fn find(
    b: &Backend,
    path: &str,
    f: kairos_engine::ops::JobFilter,
) -> CliResult<Vec<JobView>> {
    match b {
        Backend::Local(k) => {
            let jobs = k.job_find(f).await?;
            Ok(jobs.iter().map(|j| JobView::new(k.kinds(), j)).collect())
        }
        Backend::Remote(r) => {
            let mut q = filter_query(&f);
            if path == "/v1/dlq" {
                // The dead-letter queue is the dead jobs: it takes no `state`.
                q.retain(|(k, _)| *k != "state");
            }
            let page: JobPage = r.get(path, &q).await?;
            Ok(page.data)
        }
    }
}

/// The body of `POST /v1/jobs/cancel` and `/v1/jobs/retry`.
fn bulk_body(r: &kairos_engine::ops::JobBulkRequest) -> serde_json::Value {
    let mut v = serde_json::json!({
        "state": r.state, "kind": r.kind, "schedule_id": r.schedule_id, "channel": r.channel,
        "created_before": r.created_before, "created_after": r.created_after,
        "reason": r.reason, "all": r.all,
    });
    strip_nulls(&mut v);
    v
}

/// The body of `POST /v1/jobs` for `kairos job enqueue` (the API's `JobBody`).
fn enqueue_body(a: EnqueueArgs) -> CliResult<serde_json::Value> {
    let http = crate::common::http_object(a.http.as_deref())?;
    let webhook = webhook_target(a.url, a.secret)?
        .map(|w| serde_json::json!({ "url": w.url, "secret": w.secret }));
    let retry = retry_spec(a.retry_delays.as_deref(), a.max_attempts)
        .map(|r| serde_json::to_value(r).unwrap_or_default());
    let concurrency = concurrency_spec(a.concurrency_key, a.concurrency_max)?
        .map(|c| serde_json::to_value(c).unwrap_or_default());
    let mut v = serde_json::json!({
        "kind": a.kind, "webhook": webhook, "payload": parse_payload(a.payload.as_deref())?,
        "run_at": a.run_at, "idempotency_key": a.idempotency_key, "retry": retry,
        "http": http, "concurrency": concurrency,
    });
    strip_nulls(&mut v);
    Ok(v)
}

/// Run a `job` command.
pub async fn run(global: &GlobalArgs, cmd: JobCmd) -> CliResult {
    let read_only = matches!(cmd, JobCmd::List(_) | JobCmd::Show { .. });
    let b = Backend::open(global, read_only).await?;
    let json = global.json;
    let k = match &b {
        Backend::Local(k) => k,
        Backend::Remote(r) => return run_remote(r, cmd, json).await,
    };
    match cmd {
        JobCmd::Enqueue(a) => {
            let req = NewJob {
                kind: a.kind,
                webhook: webhook_target(a.url, a.secret)?,
                payload: parse_payload(a.payload.as_deref())?,
                run_at: a.run_at,
                idempotency_key: a.idempotency_key,
                retry: retry_spec(a.retry_delays.as_deref(), a.max_attempts),
                concurrency: concurrency_spec(a.concurrency_key, a.concurrency_max)?,
                parts: crate::common::http_parts(a.http.as_deref())?,
            };
            let (job, created) = k.job_enqueue(req).await?;
            if !created && !json {
                eprintln!("a job with this idempotency key exists: {}", job.id);
            }
            print_job(&JobView::new(k.kinds(), &job), json)
        }
        JobCmd::List(l) => {
            let views = find(&b, "/v1/jobs", l.filter.filter(l.state, l.before, l.limit)).await?;
            print_jobs(&views, l.limit, json)
        }
        JobCmd::Show { id } => {
            let (job, attempts) = k.job_get(&id).await?;
            let endpoint = match &job.endpoint_id {
                Some(id) => k
                    .store()
                    .endpoint_get(id)
                    .await
                    .map_err(|e| CliError::runtime("could not read the endpoint", &e))?,
                None => None,
            };
            let view = JobView::new(k.kinds(), &job)
                .with_webhook(endpoint.as_ref())
                .with_attempts(&attempts)
                .with_http(&job, k.store().as_ref())
                .await
                .map_err(|e| CliError::runtime("could not read the http target", &e))?;
            print_job(&view, json)
        }
        JobCmd::Retry { id } => {
            let job = k.job_retry(&id).await?;
            print_retried(&JobView::new(k.kinds(), &job), json)
        }
        JobCmd::Cancel { id, reason } => {
            let job = k.job_cancel(&id, reason).await?;
            print_cancelled(&JobView::new(k.kinds(), &job), json)
        }
        JobCmd::CancelMatching { filter, reason } => {
            let n = k.job_bulk_cancel(filter.request(reason)).await?;
            print_matched(n, "cancelled", json)
        }
        JobCmd::RetryMatching { filter } => {
            let n = k.job_bulk_retry(filter.request(None)).await?;
            print_matched(n, "queued", json)
        }
    }
}

/// A job command through the API.
async fn run_remote(r: &Remote, cmd: JobCmd, json: bool) -> CliResult {
    use crate::remote::seg;
    match cmd {
        JobCmd::Enqueue(a) => {
            let v: JobView = r.post("/v1/jobs", Some(&enqueue_body(a)?)).await?;
            print_job(&v, json)
        }
        JobCmd::List(l) => {
            let f = l.filter.filter(l.state, l.before, l.limit);
            let page: JobPage = r.get("/v1/jobs", &filter_query(&f)).await?;
            print_jobs(&page.data, l.limit, json)
        }
        JobCmd::Show { id } => {
            let v: JobView = r.get(&format!("/v1/jobs/{}", seg(&id)), &[]).await?;
            print_job(&v, json)
        }
        JobCmd::Retry { id } => {
            let v: JobView = r
                .post(&format!("/v1/jobs/{}/retry", seg(&id)), None::<&()>)
                .await?;
            print_retried(&v, json)
        }
        JobCmd::Cancel { id, reason } => {
            let body = serde_json::json!({ "reason": reason });
            let v: JobView = r
                .post(&format!("/v1/jobs/{}/cancel", seg(&id)), Some(&body))
                .await?;
            print_cancelled(&v, json)
        }
        JobCmd::CancelMatching { filter, reason } => {
            let v: kairos_server::routes::jobs::BulkView = r
                .post("/v1/jobs/cancel", Some(&bulk_body(&filter.request(reason))))
                .await?;
            print_matched(v.matched, "cancelled", json)
        }
        JobCmd::RetryMatching { filter } => {
            let v: kairos_server::routes::jobs::BulkView = r
                .post("/v1/jobs/retry", Some(&bulk_body(&filter.request(None))))
                .await?;
            print_matched(v.matched, "queued", json)
        }
    }
}

fn print_retried(v: &JobView, json: bool) -> CliResult {
    if json {
        return print_json(v);
    }
    println!("{} is available again at {}", v.id, v.run_at);
    Ok(())
}

fn print_cancelled(v: &JobView, json: bool) -> CliResult {
    if json {
        return print_json(v);
    }
    println!("cancelled {}", v.id);
    Ok(())
}

fn print_matched(n: u64, done: &str, json: bool) -> CliResult {
    if json {
        return print_json(&serde_json::json!({ "matched": n }));
    }
    if done == "queued" {
        println!("queued {n} job(s) again");
    } else {
        println!("cancelled {n} job(s)");
    }
    Ok(())
}
