//! The operations facade: input validation and store calls shared by the HTTP API and the
//! CLI, so both enforce the same rules and produce the same errors.

use crate::error::OpsError;
use crate::expand::jobs_for_firing;
use chrono::{DateTime, Datelike, SubsecRound, Utc};
use kairos_channels::signing::WebhookSecret;
use kairos_core::id::{IdPrefix, new_id};
use kairos_core::retry::RetrySpec;
use kairos_core::schedule::{Misfire, PeriodUnit, ScheduleSpec, parse_timezone};
use kairos_core::{Clock, JobKind, RetryPolicy};
use kairos_store::*;
use serde::Deserialize;
use std::sync::Arc;
use tokio::sync::Notify;

mod audience;
mod bulk;
mod channels;
mod digest;
mod endpoints;
mod erasure;
mod http;
mod inbound;
mod jobs;

pub use audience::{MAX_BULK, NewRecipient, NewSubscription, NewTopic, NewVariant};
pub use bulk::{JobBulkRequest, MAX_BULK_IDS};
pub use channels::{MAX_CHANNELS, NewChannel, valid_channel_name};
pub use erasure::{ERASED_REASON, Erasure};
pub use http::{HTTP_TARGET_KEY, HttpSpec};
pub use inbound::{InboundReceipt, MaintenanceStatus, NewSuppression, RemoveSuppression};
pub use jobs::{DEAD_REPLAY_BATCH, DeadReplay};

/// A webhook target: where to POST and the `whsec_…` secret to sign with.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = WebhookBody))]
#[serde(deny_unknown_fields)]
pub struct WebhookTarget {
    /// `http://` or `https://` URL.
    pub url: String,
    /// `whsec_…` signing secret (base64 after the prefix). Never returned by the API.
    pub secret: String,
}

/// A schedule definition (`POST /v1/schedules`, `PUT /v1/schedules/{id}`). Exactly one of
/// `cron`, `at`, `every`.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ScheduleBody))]
#[serde(deny_unknown_fields)]
pub struct NewSchedule {
    /// Unique name, 1 to 200 bytes.
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 200))]
    pub name: String,
    /// A cron expression (5 fields, 6 with seconds, or `@daily`-style). One of cron/at/every.
    #[serde(default)]
    pub cron: Option<String>,
    /// A single instant (RFC 3339).
    #[serde(default)]
    pub at: Option<String>,
    /// A fixed interval (`"30s"`, `"1h"`), anchored at creation or `start_at`.
    #[serde(default)]
    pub every: Option<String>,
    /// Anchor of `every` (RFC 3339, default: now).
    #[serde(default)]
    pub start_at: Option<String>,
    /// IANA time zone (default `UTC`).
    #[serde(default)]
    pub timezone: Option<String>,
    /// Job kind (default `webhook`): a schedule with one channel, named after its kind.
    /// Not together with `channels`.
    #[serde(default)]
    pub kind: Option<String>,
    /// The channels each firing creates a job for (1 to 8), each retried on its own:
    /// `[{"name", "kind", "<kind>": {…}, "payload"?, "retry"?}]`. Instead of `kind`.
    #[serde(default)]
    pub channels: Option<Vec<NewChannel>>,
    /// Target of a webhook schedule.
    #[serde(default)]
    pub webhook: Option<WebhookTarget>,
    /// Payload of each job.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub payload: Option<serde_json::Value>,
    /// Retry policy of the jobs.
    #[serde(default)]
    pub retry: Option<RetrySpec>,
    /// `skip` (default), `once`, `all`, `all:N`.
    #[serde(default)]
    pub misfire: Option<String>,
    /// Period key granularity: `occurrence` (default), `minute`, `hour`, `day`, `week`,
    /// `month`, `year`.
    #[serde(default)]
    pub period: Option<String>,
    /// Create paused.
    #[serde(default)]
    pub paused: Option<bool>,
    /// For kind `email`: the topic whose subscribers each firing mails (an audience
    /// schedule, seed 003). Use `"period": "iso_week"` for a weekly summary.
    #[serde(default)]
    pub topic: Option<String>,
    /// The digest to build, for kind `digest` (S4-1): `{"name", "feeds": [url…],
    /// "summarizer"}`. It is the jobs' payload (feed URLs and a summarizer name: no secrets).
    #[serde(default)]
    pub digest: Option<crate::handlers::digest::DigestSpec>,
    /// Catch-up times of day in the schedule's zone (`["13:00"]`, S4-4): at each, the period
    /// runs again only if its artifact (for other kinds: a succeeded job) is missing.
    #[serde(default)]
    pub catch_up: Option<Vec<String>>,
    /// What each firing calls, for kind `http` (S4-2): `{"url", "method", "headers", "body",
    /// "timeout", "deadline", "bearer_token" | "signing_secret"}`.
    #[serde(default)]
    pub http: Option<HttpSpec>,
}

/// A job to enqueue (`POST /v1/jobs`).
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = JobBody))]
#[serde(deny_unknown_fields)]
pub struct NewJob {
    /// Job kind (default `webhook`).
    #[serde(default)]
    pub kind: Option<String>,
    /// Target of a webhook job.
    #[serde(default)]
    pub webhook: Option<WebhookTarget>,
    /// Payload.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub payload: Option<serde_json::Value>,
    /// When to run (RFC 3339, default now).
    #[serde(default)]
    pub run_at: Option<String>,
    /// Idempotency key: the same key again returns the same job.
    #[serde(default)]
    pub idempotency_key: Option<String>,
    /// Retry policy.
    #[serde(default)]
    pub retry: Option<RetrySpec>,
    /// What the job calls, for kind `http` (S4-2): `{"url", "method", "headers", "body",
    /// "timeout", "deadline", "bearer_token" | "signing_secret"}`.
    #[serde(default)]
    pub http: Option<HttpSpec>,
}

/// What `schedule_fire_now` did.
#[derive(Debug, Clone, PartialEq)]
pub struct FiredNow {
    /// Jobs created (0 when the period's jobs exist already).
    pub created: Vec<String>,
    /// The occurrence's nominal time.
    pub fire_at: DateTime<Utc>,
    /// Its period key.
    pub period_key: String,
}

/// Limits on user input.
const MAX_NAME: usize = 200;
const MAX_KEY: usize = 255;
const MAX_PAYLOAD_BYTES: usize = 256 * 1024;

/// One `digest` attempt's bound with the default settings: feeds 30 s + model 120 s + 5 s.
pub const DEFAULT_DIGEST_ATTEMPT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(155);

/// The facade. Cheap to clone.
#[derive(Clone)]
pub struct Kairos {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    wake: Arc<Notify>,
    kinds: Vec<String>,
    allow_private_targets: bool,
    /// Maintenance mode of this node (S3-13).
    maintenance: crate::maintenance::Maintenance,
    /// The `file` email transport's directory, scrubbed by erasure (`ops/erasure.rs`).
    outbox: Option<std::path::PathBuf>,
    /// The longest one `digest` attempt can take (feed timeout + model timeout + 5 s): what
    /// the save-time budget check counts per attempt.
    digest_attempt_timeout: std::time::Duration,
}

impl std::fmt::Debug for Kairos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kairos")
            .field("kinds", &self.kinds)
            .finish_non_exhaustive()
    }
}

/// An RFC 3339 instant from the API. In UTC it must fall in the years 0000 to 9999, the
/// range RFC 3339 can write: `9999-12-31T23:30:00-01:00` is year 10000 in UTC, and would be
/// shown back as an invalid RFC 3339 string.
fn parse_instant(field: &str, s: &str) -> Result<DateTime<Utc>, OpsError> {
    let t = DateTime::parse_from_rfc3339(s.trim())
        .map(|t| t.to_utc())
        .map_err(|e| {
            OpsError::invalid(
                field,
                format!("{s:?} is not an RFC 3339 instant like \"2026-11-29T09:00:00Z\": {e}"),
            )
        })?;
    if !(0..=9999).contains(&t.year()) {
        return Err(OpsError::invalid(
            field,
            format!("{s:?} is outside the years 0000 to 9999 (in UTC)"),
        ));
    }
    Ok(t)
}

impl Kairos {
    /// A facade over `store` that accepts jobs of `kinds`. `wake` is notified on every local
    /// enqueue so the engine starts the work at once.
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        wake: Arc<Notify>,
        kinds: Vec<String>,
    ) -> Self {
        Kairos {
            store,
            clock,
            wake,
            kinds,
            allow_private_targets: false,
            maintenance: Default::default(),
            outbox: None,
            digest_attempt_timeout: DEFAULT_DIGEST_ATTEMPT_TIMEOUT,
        }
    }

    /// The longest one `digest` attempt can take on this node: the feed timeout plus the model
    /// timeout plus 5 s, as the digest handler bounds it. A digest's retry policy must fit its
    /// deadline with this per attempt. Default [`DEFAULT_DIGEST_ATTEMPT_TIMEOUT`].
    pub fn with_digest_attempt_timeout(mut self, d: std::time::Duration) -> Self {
        self.digest_attempt_timeout = d;
        self
    }

    /// Share `m` (the engine's maintenance flag) so that the API and the engine agree.
    pub fn with_maintenance(mut self, m: crate::maintenance::Maintenance) -> Self {
        self.maintenance = m;
        self
    }

    /// This node's maintenance flag.
    pub fn maintenance(&self) -> &crate::maintenance::Maintenance {
        &self.maintenance
    }

    /// Accept webhook, `http` and entitlement targets on private and loopback addresses
    /// (`KAIROS_ALLOW_PRIVATE_TARGETS`).
    pub fn allow_private_targets(mut self, allow: bool) -> Self {
        self.allow_private_targets = allow;
        self
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The clock.
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    fn check_kind(&self, kind: Option<&str>) -> Result<JobKind, OpsError> {
        let kind = kind.unwrap_or("webhook");
        if !self.kinds.iter().any(|k| k == kind) {
            return Err(OpsError::invalid(
                "kind",
                format!(
                    "unknown job kind {kind:?}; known kinds: {}",
                    self.kinds.join(", ")
                ),
            ));
        }
        Ok(JobKind(kind.to_string()))
    }

    async fn endpoint_for(
        &self,
        kind: &JobKind,
        target: Option<&WebhookTarget>,
    ) -> Result<Option<String>, OpsError> {
        // A digest's webhook is where its `digest.created` events go (S4-9); optional.
        if kind.as_str() == "digest" && target.is_none() {
            return Ok(None);
        }
        if kind.as_str() != "webhook" && kind.as_str() != "digest" {
            if target.is_some() {
                return Err(OpsError::invalid(
                    "webhook",
                    format!(
                        "only for kinds \"webhook\" and \"digest\", not {:?}",
                        kind.as_str()
                    ),
                ));
            }
            return Ok(None);
        }
        let t = target.ok_or_else(|| {
            OpsError::invalid(
                "webhook",
                "required for kind \"webhook\": {\"url\", \"secret\"}",
            )
        })?;
        self.check_webhook_target(t)?;
        let now = self.clock.now();
        let ep = self
            .store
            .endpoint_upsert(EndpointUpsert {
                id: new_id(IdPrefix::Endpoint, now),
                url: t.url.clone(),
                secret: t.secret.clone(),
                now,
            })
            .await?;
        Ok(Some(ep.id))
    }

    /// Check a webhook target without storing it: an http(s) URL, not plainly private unless
    /// allowed, and a valid `whsec_` secret.
    pub(crate) fn check_webhook_target(&self, t: &WebhookTarget) -> Result<(), OpsError> {
        let url = url::Url::parse(&t.url)
            .map_err(|e| OpsError::invalid("webhook.url", format!("not a valid URL: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(OpsError::invalid(
                "webhook.url",
                "must be an http:// or https:// URL",
            ));
        }
        if !self.allow_private_targets {
            // The send-time check resolves names and is authoritative; this catches the
            // obvious cases early so the user hears about them now.
            if is_obviously_private(&url) {
                return Err(OpsError::invalid(
                    "webhook.url",
                    "targets a private or loopback address; set KAIROS_ALLOW_PRIVATE_TARGETS=1 to allow",
                ));
            }
        }
        WebhookSecret::parse(&t.secret)
            .map_err(|e| OpsError::invalid("webhook.secret", e.reason()))?;
        Ok(())
    }

    fn check_payload(p: Option<serde_json::Value>) -> Result<serde_json::Value, OpsError> {
        let p = p.unwrap_or_else(|| serde_json::json!({}));
        if p.to_string().len() > MAX_PAYLOAD_BYTES {
            return Err(OpsError::invalid(
                "payload",
                format!("larger than {MAX_PAYLOAD_BYTES} bytes"),
            ));
        }
        Ok(p)
    }

    async fn schedule_def(
        &self,
        id: String,
        req: NewSchedule,
    ) -> Result<(ScheduleCreate, Vec<String>), OpsError> {
        let now = self.clock.now();
        let name = req.name.trim().to_string();
        if name.is_empty() || name.len() > MAX_NAME {
            return Err(OpsError::invalid(
                "name",
                format!("must be 1 to {MAX_NAME} characters"),
            ));
        }
        let tz_name = req.timezone.clone().unwrap_or_else(|| "UTC".into());
        let tz = parse_timezone(&tz_name)?;
        let spec = match (&req.cron, &req.at, &req.every) {
            (Some(expr), None, None) => ScheduleSpec::Cron {
                expr: expr.trim().to_string(),
            },
            (None, Some(at), None) => ScheduleSpec::At {
                at: parse_instant("at", at)?.trunc_subsecs(3),
            },
            (None, None, Some(every)) => {
                let d = kairos_core::retry::parse_duration("every", every)?;
                // Millisecond precision, as instants are stored: an anchor with nanoseconds
                // would sit just after the stored `next_fire_at` and fire a second time.
                let anchor = match &req.start_at {
                    Some(s) => parse_instant("start_at", s)?,
                    None => now,
                }
                .trunc_subsecs(3);
                ScheduleSpec::Every {
                    every_ms: d.as_millis().min(i64::MAX as u128) as i64,
                    anchor,
                }
            }
            (None, None, None) => {
                return Err(OpsError::invalid(
                    "cron",
                    "one of \"cron\", \"at\" or \"every\" is required",
                ));
            }
            _ => {
                return Err(OpsError::invalid(
                    "cron",
                    "give only one of \"cron\", \"at\" or \"every\"",
                ));
            }
        };
        spec.validate()?;
        let misfire = Misfire::parse(req.misfire.as_deref().unwrap_or("skip"))?;
        let period = PeriodUnit::parse(req.period.as_deref().unwrap_or("occurrence"))?;
        if let Some(chs) = &req.channels {
            let base = ScheduleCreate {
                id,
                name,
                kind: JobKind::webhook(),
                spec,
                timezone: tz_name,
                period,
                misfire,
                payload: serde_json::json!({}),
                endpoint_id: None,
                retry: None,
                channels: Vec::new(),
                paused: req.paused.unwrap_or(false),
                next_fire_at: None,
                now,
            };
            return self.schedule_def_channels(base, &req, chs, tz).await;
        }
        let kind = self.check_kind(req.kind.as_deref())?;
        let retry = req
            .retry
            .as_ref()
            .map(|r| r.to_policy(&RetryPolicy::default_for_kind(kind.as_str())))
            .transpose()?;
        let payload = self.kind_payload(&kind, req.digest.as_ref(), req.payload, retry.as_ref())?;
        self.check_digest_feeds(&kind, &payload, "digest")?;
        let payload = Self::audience_payload(&kind, req.topic.as_deref(), payload)?;
        let catch_up = crate::catch_up::parse_times(req.catch_up.as_deref().unwrap_or(&[]))?;
        if !catch_up.is_empty() && kind.as_str() == "email" {
            // A catch-up job is one job for the period; an audience firing is one job per
            // subscriber. Re-sending a week's mails is what the dedupe key exists to prevent.
            return Err(OpsError::invalid(
                "catch_up",
                "is not available for email (audience) schedules: each subscriber's mail is created once per period",
            ));
        }
        let next_fire_at = spec.next_at_or_after(tz, now);
        if next_fire_at.is_none() {
            return Err(OpsError::invalid(
                "at",
                "is in the past: the schedule would never fire",
            ));
        }
        let endpoint_id = self.endpoint_for(&kind, req.webhook.as_ref()).await?;
        let payload = self
            .http_payload(&kind, req.http.as_ref(), payload, retry.as_ref())
            .await?;
        let def = ScheduleCreate {
            id,
            name,
            kind,
            spec,
            timezone: tz_name,
            period,
            misfire,
            payload,
            endpoint_id,
            retry,
            channels: Vec::new(),
            paused: req.paused.unwrap_or(false),
            next_fire_at,
            now,
        };
        Ok((def, catch_up))
    }

    /// Create a schedule. Its first firing is the first at or after now.
    pub async fn schedule_create(&self, req: NewSchedule) -> Result<Schedule, OpsError> {
        let id = new_id(IdPrefix::Schedule, self.clock.now());
        let (def, catch_up) = self.schedule_def(id, req).await?;
        let s = self
            .store
            .schedule_create(def)
            .await
            .map_err(|e| match e.kind() {
                ErrorKind::Conflict => OpsError::conflict("a schedule with this name exists"),
                _ => e.into(),
            })?;
        if !catch_up.is_empty()
            && let Err(e) = self.catch_up_set(&s, &catch_up).await
        {
            // Not half-created: a schedule without the catch-ups it was asked for would
            // silently lack its safety net.
            let _ = self.store.schedule_delete(&s.id).await;
            return Err(e);
        }
        self.wake.notify_one();
        Ok(s)
    }

    /// Replace a schedule's definition; its next firing is recomputed from now.
    pub async fn schedule_update(&self, id: &str, req: NewSchedule) -> Result<Schedule, OpsError> {
        let (def, catch_up) = self.schedule_def(id.to_string(), req).await?;
        let s = self
            .store
            .schedule_update(ScheduleUpdate {
                id: id.to_string(),
                def,
            })
            .await?
            .ok_or_else(|| OpsError::not_found("schedule", id))?;
        self.catch_up_set(&s, &catch_up).await?;
        self.wake.notify_one();
        Ok(s)
    }

    /// A schedule.
    pub async fn schedule_get(&self, id: &str) -> Result<Schedule, OpsError> {
        self.store
            .schedule_get(id)
            .await?
            .ok_or_else(|| OpsError::not_found("schedule", id))
    }

    /// Schedules, newest first.
    pub async fn schedule_list(
        &self,
        state: Option<String>,
        limit: Option<i64>,
    ) -> Result<Vec<Schedule>, OpsError> {
        if let Some(s) = &state
            && !["active", "paused", "finished"].contains(&s.as_str())
        {
            return Err(OpsError::invalid(
                "state",
                "must be one of active, paused, finished",
            ));
        }
        Ok(self
            .store
            .schedule_list(ScheduleList { state, limit })
            .await?)
    }

    /// Pause or resume. Resuming does not fire what was missed while paused: the next firing
    /// is the first from now.
    pub async fn schedule_pause(&self, id: &str, paused: bool) -> Result<Schedule, OpsError> {
        let s = self.schedule_get(id).await?;
        let now = self.clock.now();
        let next = if paused {
            None
        } else {
            s.spec.next_at_or_after(tz_of(&s)?, now)
        };
        let s = self
            .store
            .schedule_pause(SchedulePause {
                id: id.to_string(),
                paused,
                next_fire_at: next,
                now,
            })
            .await?
            .ok_or_else(|| OpsError::not_found("schedule", id))?;
        if !paused {
            // Catch-ups count from the resumption too (S4-4).
            let times: Vec<String> = self
                .store
                .catch_up_list(id)
                .await?
                .into_iter()
                .map(|c| c.at)
                .collect();
            if !times.is_empty() {
                self.catch_up_set(&s, &times).await?;
            }
        }
        self.wake.notify_one();
        Ok(s)
    }

    /// Delete a schedule; its jobs stay.
    pub async fn schedule_delete(&self, id: &str) -> Result<(), OpsError> {
        if self.store.schedule_delete(id).await? {
            Ok(())
        } else {
            Err(OpsError::not_found("schedule", id))
        }
    }

    /// The next `n` firings of a schedule from now.
    pub fn schedule_upcoming(&self, s: &Schedule, n: usize) -> Vec<DateTime<Utc>> {
        let Ok(tz) = tz_of(s) else { return vec![] };
        let mut out = Vec::new();
        let mut t = s.next_fire_at;
        while let Some(at) = t {
            if out.len() >= n {
                break;
            }
            out.push(at);
            t = s.spec.next_after(tz, at);
        }
        out
    }

    /// Fire a schedule now for its current period: a manual re-run. The dedupe key makes a
    /// repeat harmless: the period's jobs are created once.
    pub async fn schedule_fire_now(&self, id: &str) -> Result<FiredNow, OpsError> {
        let s = self.schedule_get(id).await?;
        let tz = tz_of(&s)?;
        let now = self.clock.now();
        // The current occurrence: the latest nominal firing at or before now, so that a re-run
        // lands on the same key as the regular firing. A one-shot that has not fired yet has
        // one occurrence only: firing it early uses that occurrence's key, so the regular
        // firing later creates nothing. A recurring schedule before its first firing gets an
        // occurrence at now.
        let fire_at = match s.spec.prev_at_or_before(tz, now) {
            Some(t) => t,
            None if !s.spec.is_recurring() => s.next_fire_at.unwrap_or(now),
            None => now,
        };
        if crate::audience::topic_of(&s).is_some() {
            return self.audience_fire_now(&s, fire_at).await;
        }
        let mut jobs = jobs_for_firing(&s, tz, fire_at, now);
        for j in &mut jobs {
            // A manual run runs now, even when its occurrence is in the future.
            j.run_at = j.run_at.min(now);
        }
        let period_key = jobs
            .first()
            .and_then(|j| j.period_key.clone())
            .unwrap_or_default();
        let created = self.store.job_insert_many(jobs).await?;
        self.wake.notify_one();
        Ok(FiredNow {
            created,
            fire_at,
            period_key,
        })
    }
}

/// The zone of a stored schedule.
pub fn tz_of(s: &Schedule) -> Result<chrono_tz::Tz, OpsError> {
    Ok(parse_timezone(&s.timezone)?)
}

/// Whether `url` plainly targets a private or loopback address (an IP literal, `localhost`,
/// no host). The send-time check resolves names and is authoritative; this catches the
/// obvious cases when a target is saved, so the user hears about them at once.
pub(crate) fn is_obviously_private(url: &url::Url) -> bool {
    kairos_channels::ssrf::is_obviously_private(url)
}
