//! `kairos job enqueue|list|show|retry|cancel`, on the database directly.

use crate::common::*;
use kairos_engine::ops::NewJob;
use kairos_server::views::{JobPage, JobView, ts};

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

/// Run a `job` command.
pub async fn run(global: &GlobalArgs, cmd: JobCmd) -> CliResult {
    let cfg = global.load_config(None)?;
    let read_only = matches!(cmd, JobCmd::List(_) | JobCmd::Show { .. });
    let k = open_kairos_read(&cfg, read_only).await?;
    let json = global.json;
    match cmd {
        JobCmd::Enqueue(a) => {
            let req = NewJob {
                kind: a.kind,
                webhook: webhook_target(a.url, a.secret)?,
                payload: parse_payload(a.payload.as_deref())?,
                run_at: a.run_at,
                idempotency_key: a.idempotency_key,
                retry: retry_spec(a.retry_delays.as_deref(), a.max_attempts),
                http: parse_http(a.http.as_deref())?,
                concurrency: concurrency_spec(a.concurrency_key, a.concurrency_max)?,
            };
            let (job, created) = k.job_enqueue(req).await?;
            if !created && !json {
                eprintln!("a job with this idempotency key exists: {}", job.id);
            }
            print_job(&JobView::new(k.kinds(), &job), json)
        }
        JobCmd::List(l) => {
            let jobs = k
                .job_find(l.filter.filter(l.state, l.before, l.limit))
                .await?;
            let views: Vec<JobView> = jobs.iter().map(|j| JobView::new(k.kinds(), j)).collect();
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
            if json {
                return print_json(&JobView::new(k.kinds(), &job));
            }
            println!("{} is available again at {}", job.id, ts(job.run_at));
            Ok(())
        }
        JobCmd::Cancel { id, reason } => {
            let job = k.job_cancel(&id, reason).await?;
            if json {
                return print_json(&JobView::new(k.kinds(), &job));
            }
            println!("cancelled {}", job.id);
            Ok(())
        }
        JobCmd::CancelMatching { filter, reason } => {
            let n = k.job_bulk_cancel(filter.request(reason)).await?;
            if json {
                return print_json(&serde_json::json!({ "matched": n }));
            }
            println!("cancelled {n} job(s)");
            Ok(())
        }
        JobCmd::RetryMatching { filter } => {
            let n = k.job_bulk_retry(filter.request(None)).await?;
            if json {
                return print_json(&serde_json::json!({ "matched": n }));
            }
            println!("queued {n} job(s) again");
            Ok(())
        }
    }
}
