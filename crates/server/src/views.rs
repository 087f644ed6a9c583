//! The JSON shapes of the API: request bodies (converted to the facade's inputs) and
//! response views of the stored records. Instants are RFC 3339 UTC with milliseconds. No view
//! carries a webhook secret.
//!
//! The CLI prints these same views with `--json`, so the API and the CLI agree.

use chrono::{DateTime, SecondsFormat, Utc};
use kairos_core::Job;
use kairos_core::schedule::ScheduleSpec;
use kairos_engine::ops::FiredNow;
use kairos_store::{Attempt, Endpoint, HttpTarget, Schedule};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// An instant as the API writes it: RFC 3339, UTC, milliseconds (`2026-11-29T09:00:00.000Z`).
pub fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// [`ts`] of an optional instant.
pub fn ts_opt(t: Option<DateTime<Utc>>) -> Option<String> {
    t.map(ts)
}

// The request bodies are the facade's own types (with OpenAPI schemas under the names the API
// documents), so the API and the CLI accept exactly the same input. A kind's request part
// (`HttpBody`, `DigestBody`) is its own type, documented from the node's kinds
// (`openapi::KindParts`).
pub use kairos_core::retry::{ClassSpec as RetryClassBody, RetrySpec as RetryBody};
pub use kairos_engine::ops::{
    NewChannel as ChannelBody, NewJob as JobBody, NewSchedule as ScheduleBody,
    WebhookTarget as WebhookBody,
};

/// The body of `POST /v1/jobs/{id}/cancel` (optional).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelBody {
    /// Why (default "cancelled by operator").
    #[serde(default)]
    pub reason: Option<String>,
}

/// The body of `POST /v1/dlq/replay`: `ids`, or `all` (optionally of one `kind`).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayBody {
    /// Dead jobs to replay.
    #[serde(default)]
    pub ids: Option<Vec<String>>,
    /// Replay every dead job.
    #[serde(default)]
    pub all: Option<bool>,
    /// With `all`: only jobs of this kind (any kind in the database, not only the server's).
    #[serde(default)]
    pub kind: Option<String>,
}

/// A webhook target as shown: the URL, never the secret.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WebhookView {
    /// The endpoint id (`ep_…`).
    pub endpoint_id: String,
    /// The URL posted to, a password in it and its query values masked
    /// (`https://user:***@host/path?token=***`).
    pub url: String,
    /// When the endpoint was disabled (after HTTP 410), if it was. A disabled endpoint is
    /// reused, still disabled, when the same URL and secret are given again: jobs to it are
    /// skipped (`endpoint_disabled`) until `POST /v1/endpoints/{id}/enable`.
    #[schema(format = DateTime)]
    pub disabled_at: Option<String>,
    /// Why it was disabled (`HTTP 410 Gone`).
    pub disabled_reason: Option<String>,
}

impl WebhookView {
    /// The view of an endpoint.
    pub fn new(e: &Endpoint) -> Self {
        WebhookView {
            endpoint_id: e.id.clone(),
            url: kairos_core::text::mask_url(&e.url),
            disabled_at: ts_opt(e.disabled_at),
            disabled_reason: e.disabled_reason.clone(),
        }
    }
}

/// What an `http` job calls, as shown: the URL with the password of its user info and every
/// query value masked (`https://user:***@host/path?token=***`), the method, the names of the
/// headers; never a header value, the bearer token or the signing secret.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct HttpTargetView {
    /// The stored target (`ht_…`).
    pub target_id: String,
    /// The URL called, masked.
    pub url: String,
    /// The method (`GET`, `POST`, …).
    pub method: String,
    /// The names of the request headers (lowercase), without their values.
    pub headers: Vec<String>,
    /// The timeout of one call (`"2m"`).
    pub timeout: String,
    /// How the call authenticates: `none`, `bearer` or `signature`.
    #[schema(value_type = kairos_engine::ops::api_enums::HttpAuthSchema)]
    pub auth: String,
    /// The origin called (scheme, host and port: `https://api.example.com:443`), whose
    /// limits every `http` job calling it shares.
    pub origin: Option<String>,
    /// The origin's rate limit now (set by the job or schedule saved last that names one);
    /// null: none.
    pub rate_limit: Option<crate::routes::endpoints::RateLimitView>,
    /// The origin's limit of calls in flight at once now; null: none.
    pub max_in_flight: Option<u32>,
}

impl HttpTargetView {
    /// The view of a stored target (its origin's limits not read: see [`http_target_of`]).
    pub fn new(t: &HttpTarget) -> Self {
        HttpTargetView {
            origin: url::Url::parse(&t.url)
                .ok()
                .as_ref()
                .and_then(kairos_engine::ops::origin_of_url),
            rate_limit: None,
            max_in_flight: None,
            target_id: t.id.clone(),
            url: kairos_core::text::mask_url(&t.url),
            method: t.method.clone(),
            headers: t.headers.keys().cloned().collect(),
            timeout: compact_duration(std::time::Duration::from_millis(
                u64::try_from(t.timeout_ms).unwrap_or(0),
            )),
            auth: t.auth.as_str().to_string(),
        }
    }
}

/// The id of the stored target an `http` job's (or schedule's, or channel's) payload names.
pub fn http_target_id(payload: &serde_json::Value) -> Option<&str> {
    payload
        .get(kairos_engine::ops::HTTP_TARGET_KEY)
        .and_then(serde_json::Value::as_str)
}

/// The stored target `payload` names, if any (`None` too when it was deleted), with its
/// origin's limits.
pub async fn http_target_of(
    store: &dyn kairos_store::Store,
    payload: &serde_json::Value,
) -> Result<Option<HttpTargetView>, kairos_store::Error> {
    let Some(id) = http_target_id(payload) else {
        return Ok(None);
    };
    let Some(mut view) = store
        .http_target_get(id)
        .await?
        .as_ref()
        .map(HttpTargetView::new)
    else {
        return Ok(None);
    };
    if let Some(origin) = &view.origin
        && let Some(l) = store.host_limits_list(vec![origin.clone()]).await?.pop()
    {
        view.rate_limit = l
            .rate_limit
            .map(|r| crate::routes::endpoints::RateLimitView {
                per_second: r.per_second,
                burst: r.burst,
            });
        view.max_in_flight = l.max_in_flight;
    }
    Ok(Some(view))
}

/// A schedule.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ScheduleView {
    /// `sch_…`.
    pub id: String,
    /// Unique name.
    pub name: String,
    /// Kind of the jobs it creates (a `JobKind` for what this server makes; a string, so a
    /// client reading a database shared with an embedding application's kinds never fails).
    pub kind: String,
    /// The cron expression, for cron schedules.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    /// The instant, for one-shot schedules.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub at: Option<String>,
    /// The interval, for interval schedules (`"30s"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub every: Option<String>,
    /// The anchor of an interval schedule.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = DateTime)]
    pub start_at: Option<String>,
    /// IANA time zone.
    pub timezone: String,
    /// Period key granularity (`iso_week` is shown as `week`).
    #[schema(value_type = kairos_engine::ops::api_enums::PeriodSchema)]
    pub period: String,
    /// Misfire policy: what a firing later than `misfire_threshold` does.
    #[schema(value_type = kairos_engine::ops::api_enums::MisfireSchema)]
    pub misfire: String,
    /// The schedule's misfire threshold (`"5m"`); null: the node's default
    /// (`KAIROS_MISFIRE_THRESHOLD`, 60 s).
    pub misfire_threshold: Option<String>,
    /// The misfire window (`"7d"` by default): a firing later than this is not run.
    pub misfire_window: String,
    /// What a firing does while the previous occurrence still has open jobs.
    pub overlap: kairos_core::schedule::Overlap,
    /// The firing a `buffer_one` schedule holds until the previous occurrence's jobs end
    /// (null: none).
    #[schema(format = DateTime)]
    pub buffered_fire_at: Option<String>,
    /// `active`, `paused`, `finished`.
    #[schema(value_type = kairos_engine::ops::api_enums::ScheduleStateSchema)]
    pub state: String,
    /// Whether it is paused.
    pub paused: bool,
    /// Payload of each job.
    #[schema(value_type = Object)]
    pub payload: serde_json::Value,
    /// Webhook target (no secret).
    pub webhook: Option<WebhookView>,
    /// What its `http` jobs call (on single-schedule responses of `http` schedules).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpTargetView>,
    /// Retry policy of its jobs (null: the kind's default).
    #[schema(value_type = Option<Object>)]
    pub retry: Option<serde_json::Value>,
    /// The channels each firing creates a job for (one, named after `kind`, for a schedule
    /// made with a single kind).
    pub channels: Vec<ScheduleChannelView>,
    /// Its jobs' concurrency limit (`{"key", "max"}`, the key a template), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<kairos_core::concurrency::ConcurrencySpec>,
    /// The next nominal firing.
    #[schema(format = DateTime)]
    pub next_fire_at: Option<String>,
    /// The last firing materialized.
    #[schema(format = DateTime)]
    pub last_fire_at: Option<String>,
    /// The next firings (up to 5), on single-schedule responses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upcoming: Option<Vec<String>>,
    /// The same firings in the schedule's zone (`2026-03-08T03:00:00-04:00`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upcoming_local: Option<Vec<String>>,
    /// Catch-up times of day (`HH:MM` in the zone), on single-schedule responses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub catch_up: Option<Vec<String>>,
    /// Created.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Last changed.
    #[schema(format = DateTime)]
    pub updated_at: String,
}

/// One channel of a schedule.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ScheduleChannelView {
    /// Its name, unique in the schedule.
    pub name: String,
    /// The kind of job it creates (a `JobKind` for what this server makes; a string, as a
    /// schedule's `kind`).
    pub kind: String,
    /// Its webhook endpoint (`ep_…`), for webhook channels.
    pub endpoint_id: Option<String>,
    /// Its own payload (null: the schedule's).
    #[schema(value_type = Option<Object>)]
    pub payload: Option<serde_json::Value>,
    /// Its own retry policy (null: the schedule's, else the kind's default).
    #[schema(value_type = Option<Object>)]
    pub retry: Option<serde_json::Value>,
    /// What its jobs call, for `http` channels (on single-schedule responses).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpTargetView>,
    /// Its own concurrency limit (absent: the schedule's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<kairos_core::concurrency::ConcurrencySpec>,
}

impl ScheduleView {
    /// The view of a schedule, with its endpoint if known.
    pub fn new(s: &Schedule, endpoint: Option<&Endpoint>) -> Self {
        let (cron, at, every, start_at) = match &s.spec {
            ScheduleSpec::Cron { expr } => (Some(expr.clone()), None, None, None),
            ScheduleSpec::At { at } => (None, Some(ts(*at)), None, None),
            ScheduleSpec::Every { every_ms, anchor } => {
                let d = std::time::Duration::from_millis(u64::try_from(*every_ms).unwrap_or(0));
                (
                    None,
                    None,
                    Some(kairos_core::retry::format_duration(d)),
                    Some(ts(*anchor)),
                )
            }
        };
        ScheduleView {
            id: s.id.clone(),
            name: s.name.clone(),
            kind: s.kind.to_string(),
            cron,
            at,
            every,
            start_at,
            timezone: s.timezone.clone(),
            period: s.period.as_str().to_string(),
            misfire: s.misfire.to_string_repr(),
            misfire_threshold: s.misfire_threshold.map(compact_duration),
            misfire_window: compact_duration(
                s.misfire_window
                    .unwrap_or(kairos_core::schedule::DEFAULT_MISFIRE_WINDOW),
            ),
            overlap: s.overlap,
            buffered_fire_at: ts_opt(s.buffered_fire_at),
            state: s.state.as_str().to_string(),
            paused: s.state == kairos_store::ScheduleState::Paused,
            payload: s.payload.clone(),
            webhook: endpoint.map(WebhookView::new),
            http: None,
            retry: s.retry.as_ref().and_then(|r| serde_json::to_value(r).ok()),
            channels: s
                .channel_list()
                .into_iter()
                .map(|c| ScheduleChannelView {
                    name: c.name,
                    kind: c.kind.to_string(),
                    endpoint_id: c.endpoint_id,
                    payload: c.payload,
                    retry: c.retry.as_ref().and_then(|r| serde_json::to_value(r).ok()),
                    http: None,
                    concurrency: c.concurrency,
                })
                .collect(),
            concurrency: s.concurrency.clone(),
            next_fire_at: ts_opt(s.next_fire_at),
            last_fire_at: ts_opt(s.last_fire_at),
            upcoming: None,
            upcoming_local: None,
            catch_up: None,
            created_at: ts(s.created_at),
            updated_at: ts(s.updated_at),
        }
    }

    /// With what its `http` jobs call: the schedule's target, and each `http` channel's.
    pub async fn with_http(
        mut self,
        s: &Schedule,
        store: &dyn kairos_store::Store,
    ) -> Result<Self, kairos_store::Error> {
        self.http = http_target_of(store, &s.payload).await?;
        for (view, c) in self.channels.iter_mut().zip(s.channel_list()) {
            if let Some(p) = &c.payload {
                view.http = http_target_of(store, p).await?;
            }
        }
        if self.http.is_none() {
            self.http = self.channels.iter().find_map(|c| c.http.clone());
        }
        Ok(self)
    }

    /// With its catch-up times (`HH:MM`).
    pub fn with_catch_up(mut self, times: Vec<String>) -> Self {
        self.catch_up = (!times.is_empty()).then_some(times);
        self
    }

    /// With the next firings.
    pub fn with_upcoming(mut self, upcoming: &[DateTime<Utc>]) -> Self {
        self.upcoming = Some(upcoming.iter().copied().map(ts).collect());
        self.upcoming_local = kairos_core::schedule::parse_timezone(&self.timezone)
            .ok()
            .map(|tz| {
                upcoming
                    .iter()
                    .map(|t| kairos_core::schedule::format_local(tz, *t))
                    .collect()
            });
        self
    }
}

/// A list of schedules.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ScheduleList {
    /// Newest first.
    pub data: Vec<ScheduleView>,
}

/// One attempt of a job.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AttemptView {
    /// 1-based attempt number.
    pub attempt: i32,
    /// When it started.
    #[schema(format = DateTime)]
    pub started_at: String,
    /// When it ended.
    #[schema(format = DateTime)]
    pub finished_at: String,
    /// `succeeded`, `skipped`, `failed`, `lost`, `cancelled`.
    #[schema(value_type = kairos_engine::ops::api_enums::AttemptOutcomeSchema)]
    pub outcome: String,
    /// The HTTP status, when there was a response.
    pub status_code: Option<i32>,
    /// The error message, when it failed.
    pub error: Option<String>,
    /// `transient`, `permanent`, `rate_limited`, when it failed.
    #[schema(value_type = Option<kairos_engine::ops::api_enums::ErrorClassSchema>)]
    pub error_class: Option<String>,
    /// An excerpt of the response.
    pub response: Option<String>,
    /// The provider's message id.
    pub provider_id: Option<String>,
    /// The node that ran it.
    pub node: Option<String>,
}

impl AttemptView {
    /// The view of an attempt.
    pub fn new(a: &Attempt) -> Self {
        AttemptView {
            attempt: a.attempt,
            started_at: ts(a.started_at),
            finished_at: ts(a.finished_at),
            outcome: a.outcome.to_string(),
            status_code: a.status_code,
            error: a.error.clone(),
            error_class: a.error_class.map(|c| c.to_string()),
            response: a.response.clone(),
            provider_id: a.provider_id.clone(),
            node: a.node.clone(),
        }
    }
}

/// A job.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct JobView {
    /// `job_…`; also the `webhook-id` of its deliveries.
    pub id: String,
    /// Which handler runs it: a `JobKind` for the jobs this server makes; a string, so a
    /// client listing a database shared with an embedding application's kinds never fails.
    pub kind: String,
    /// `available`, `running`, `succeeded`, `skipped`, `cancelled`, `dead`.
    #[schema(value_type = kairos_engine::ops::api_enums::JobStateSchema)]
    pub state: String,
    /// Attempts started so far.
    pub attempt: i32,
    /// Most attempts the retry policy allows.
    pub max_attempts: u32,
    /// When it is (next) due.
    #[schema(format = DateTime)]
    pub run_at: String,
    /// Created.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// When it reached a final state.
    #[schema(format = DateTime)]
    pub finished_at: Option<String>,
    /// The schedule that created it.
    pub schedule_id: Option<String>,
    /// The nominal firing time of its occurrence.
    #[schema(format = DateTime)]
    pub fire_at: Option<String>,
    /// The occurrence's period key.
    pub period_key: Option<String>,
    /// The channel it delivers on: the schedule's channel name, or the audience channel
    /// (`email`, `webhook`); null for a job enqueued directly.
    pub channel: Option<String>,
    /// The idempotency key it was enqueued with.
    pub idempotency_key: Option<String>,
    /// The webhook endpoint (`ep_…`).
    pub endpoint_id: Option<String>,
    /// The webhook endpoint's URL and state (on single-job responses of webhook jobs): a
    /// `disabled_at` says the job will be skipped until the endpoint is enabled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook: Option<WebhookView>,
    /// What an `http` job calls (on single-job responses), credentials masked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpTargetView>,
    /// The last error, if the last attempt failed.
    pub last_error: Option<String>,
    /// Why it was skipped or cancelled.
    pub reason: Option<String>,
    /// Handler input.
    #[schema(value_type = Object)]
    pub payload: serde_json::Value,
    /// Retry policy.
    #[schema(value_type = Object)]
    pub retry: serde_json::Value,
    /// Its attempts, oldest first (on single-job responses).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempts: Option<Vec<AttemptView>>,
    /// Its concurrency key, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<JobConcurrencyView>,
    /// Why this due job is not running, while it waits on a limit: `concurrency_key` (its
    /// key's `max` jobs are running), `rate_limit` or `in_flight` (its endpoint's limits);
    /// absent when it is not waiting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_reason: Option<String>,
}

/// A job's concurrency key as rendered when it was made.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct JobConcurrencyView {
    /// The rendered key (null when it could not be made: see `problem`).
    pub key: Option<String>,
    /// At most this many jobs with the key run at once.
    pub max: u32,
    /// Why the key cannot be enforced (the job then fails permanently), if it cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

impl JobConcurrencyView {
    fn new(c: &kairos_core::Concurrency) -> Self {
        let problem = c.problem();
        JobConcurrencyView {
            key: problem.is_none().then(|| c.key.clone()),
            max: c.max,
            problem,
        }
    }
}

impl JobView {
    /// The view of a job (without attempts); `kinds` (the node's) give the retry policy of
    /// a job stored with its kind's default.
    pub fn new(kinds: &kairos_engine::Kinds, j: &Job) -> Self {
        let retry = kinds.retry_of(j);
        JobView {
            id: j.id.clone(),
            kind: j.kind.to_string(),
            state: j.state.to_string(),
            attempt: j.attempt,
            max_attempts: retry.max_attempts(),
            run_at: ts(j.run_at),
            created_at: ts(j.created_at),
            finished_at: ts_opt(j.finished_at),
            schedule_id: j.schedule_id.clone(),
            fire_at: ts_opt(j.fire_at),
            period_key: j.period_key.clone(),
            channel: j.channel.clone(),
            idempotency_key: j
                .dedupe_key
                .as_deref()
                .and_then(|k| k.strip_prefix("idem:"))
                .map(str::to_string),
            endpoint_id: j.endpoint_id.clone(),
            webhook: None,
            http: None,
            last_error: j.last_error.clone(),
            reason: j.reason.clone(),
            payload: j.payload.clone(),
            retry: serde_json::to_value(&retry).unwrap_or(serde_json::Value::Null),
            attempts: None,
            concurrency: j.concurrency.as_ref().map(JobConcurrencyView::new),
            wait_reason: (j.state == kairos_core::JobState::Available)
                .then(|| j.wait_reason.clone())
                .flatten(),
        }
    }

    /// With its endpoint's view.
    pub fn with_webhook(mut self, endpoint: Option<&Endpoint>) -> Self {
        self.webhook = endpoint.map(WebhookView::new);
        self
    }

    /// With what it calls, if it is an `http` job.
    pub async fn with_http(
        mut self,
        j: &Job,
        store: &dyn kairos_store::Store,
    ) -> Result<Self, kairos_store::Error> {
        self.http = http_target_of(store, &j.payload).await?;
        Ok(self)
    }

    /// With its attempts.
    pub fn with_attempts(mut self, attempts: &[Attempt]) -> Self {
        self.attempts = Some(attempts.iter().map(AttemptView::new).collect());
        self
    }
}

/// A page of jobs.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct JobPage {
    /// Newest first.
    pub data: Vec<JobView>,
    /// Pass as `before` for the next page; null on the last page.
    pub next_before: Option<String>,
}

/// What `POST /v1/schedules/{id}/fire` did.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct FiredView {
    /// Jobs created (0 when the period's jobs exist already).
    pub created: usize,
    /// Their ids.
    pub job_ids: Vec<String>,
    /// The occurrence's nominal time.
    #[schema(format = DateTime)]
    pub fire_at: String,
    /// Its period key.
    pub period_key: String,
}

impl From<FiredNow> for FiredView {
    fn from(f: FiredNow) -> Self {
        FiredView {
            created: f.created.len(),
            job_ids: f.created,
            fire_at: ts(f.fire_at),
            period_key: f.period_key,
        }
    }
}

/// The body of `POST /v1/schedules/{id}/backfill`: a past range, both ends included.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BackfillBody {
    /// The first instant of the range (RFC 3339).
    pub from: String,
    /// The last instant of the range (RFC 3339), not in the future; the range holds at most
    /// 1,000 firings.
    pub to: String,
}

/// What `POST /v1/schedules/{id}/backfill` did.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct BackfillView {
    /// Firings created.
    pub fired: u64,
    /// Firings whose period had already run: nothing created.
    pub skipped: u64,
}

/// One call of a backfill: a range of at most 1,000 firings, from its first firing to its last.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct BackfillCallView {
    /// The range's first firing (RFC 3339).
    #[schema(format = DateTime)]
    pub from: String,
    /// The range's last firing (RFC 3339).
    #[schema(format = DateTime)]
    pub to: String,
}

/// What `GET /v1/schedules/{id}/backfill` plans: the calls of `POST …/backfill` that cover a
/// range, oldest first (none: the range holds no firing).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct BackfillPlanView {
    /// The calls, each of at most 1,000 firings.
    pub calls: Vec<BackfillCallView>,
}

impl From<kairos_engine::ops::Backfilled> for BackfillView {
    fn from(b: kairos_engine::ops::Backfilled) -> Self {
        BackfillView {
            fired: b.fired,
            skipped: b.skipped,
        }
    }
}

/// A replay that failed for one job.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct ReplayFailure {
    /// The job.
    pub id: String,
    /// Why (not found, not dead, …).
    pub error: String,
}

/// What `POST /v1/dlq/replay` did.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
pub struct ReplayView {
    /// How many jobs were replayed.
    pub replayed: usize,
    /// Their ids.
    pub job_ids: Vec<String>,
    /// Jobs that could not be replayed.
    pub failed: Vec<ReplayFailure>,
    /// With `"all": true`: whether dead jobs remain that this request did not reach (it
    /// replays at most `limit`); send the same request again to go on. Always false with `ids`.
    pub more: bool,
    /// With `"all": true`: the most dead jobs one request replays (absent with `ids`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

/// `{"status": "ok"}`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct Status {
    /// `ok`, or `unavailable`.
    pub status: String,
}

/// A duration in its largest whole unit (`7d`, `90m`, `1500ms`), as the API reads it back.
pub fn compact_duration(d: std::time::Duration) -> String {
    let ms = d.as_millis();
    for (unit, size) in [
        ("d", 86_400_000u128),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1_000),
    ] {
        if ms > 0 && ms.is_multiple_of(size) {
            return format!("{}{unit}", ms / size);
        }
    }
    format!("{ms}ms")
}
