//! The operations facade: input validation and store calls shared by the HTTP API and the
//! CLI, so both enforce the same rules and produce the same errors.

use crate::error::OpsError;
use crate::kinds::{EndpointUse, Kinds, RequestEnv, RequestParts};
use chrono::{DateTime, Datelike, Utc};
use kairos_channels::signing::WebhookSecret;
use kairos_core::id::{IdPrefix, new_id};
use kairos_core::retry::RetrySpec;
use kairos_core::{Clock, JobKind};
use kairos_store::*;
use serde::Deserialize;
use std::sync::Arc;
use tokio::sync::Notify;

#[cfg(feature = "openapi")]
pub mod api_enums;
mod audience;
mod backfill;
mod bulk;
mod channels;
mod deliverability;
mod digest;
mod endpoints;
mod erasure;
mod inbound;
mod jobs;
mod schedules;

pub use crate::kinds::http::{HTTP_ORIGIN_KEY, HTTP_TARGET_KEY, HttpSpec, origin_of_url};
pub use audience::{
    MAX_BULK, NewRecipient, NewSubscription, NewTopic, NewVariant, OCCURRENCE_STATUSES,
};
pub use backfill::{Backfilled, MAX_BACKFILL_FIRINGS, MAX_BACKFILL_TOTAL};
pub use bulk::{JobBulkRequest, MAX_BULK_IDS};
pub use channels::{MAX_CHANNELS, NewChannel, valid_channel_name};
pub use endpoints::{
    DEFAULT_ROTATION_WINDOW_SECS, EndpointLimitsBody, EndpointStatus, RateLimitBody, Rotated,
    SecretRotation, check_limits,
};
pub use erasure::{ERASED_REASON, Erasure};
pub use inbound::{InboundReceipt, MaintenanceStatus, NewSuppression, RemoveSuppression};
pub use jobs::{DEAD_REPLAY_BATCH, DeadReplay, JobFilter, MAX_ENQUEUE_BATCH};
pub use schedules::ScheduleGapPeriods;

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
//
// A field it does not name is a kind's part (`parts`), or refused as unknown by the facade
// (serde's `deny_unknown_fields` cannot hold beside `flatten`).
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ScheduleBody))]
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
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::ops::api_enums::JobKindSchema>))]
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
    /// What a firing later than `misfire_threshold` does: `once` (default: the most recent
    /// missed firing runs late), `skip`, `all`, `all:N`.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::ops::api_enums::MisfireSchema>))]
    pub misfire: Option<String>,
    /// A firing later than this follows `misfire` (`"60s"`, `"5m"`; default: the node's,
    /// `KAIROS_MISFIRE_THRESHOLD`, 60 s). At least 1 s and at most `misfire_window`.
    #[serde(default)]
    pub misfire_threshold: Option<String>,
    /// A firing later than this is not run, whatever `misfire` says; it is recorded as a
    /// `window` gap (`"7d"` default, at most 366 days).
    #[serde(default)]
    pub misfire_window: Option<String>,
    /// What a firing does while the previous occurrence still has open jobs: `allow`
    /// (default: it runs beside it), `skip` (recorded as a `missed` occurrence with reason
    /// `overlap`), `buffer_one` (one firing waits and runs when the previous one's jobs end)
    /// or `cancel_previous` (the previous occurrence's open jobs are cancelled first).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<kairos_core::schedule::Overlap>))]
    pub overlap: Option<String>,
    /// Period key granularity: `occurrence` (default), `minute`, `hour`, `day`, `week`
    /// (`iso_week` is the same), `month`, `year`.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::ops::api_enums::PeriodSchema>))]
    pub period: Option<String>,
    /// Create paused.
    #[serde(default)]
    pub paused: Option<bool>,
    /// For kind `email`: the topic whose subscribers each firing mails (an audience
    /// schedule). Use `"period": "iso_week"` for a weekly summary.
    #[serde(default)]
    pub topic: Option<String>,
    /// Catch-up times of day in the schedule's zone (`["13:00"]`): at each, the period
    /// runs again only if its artifact (for other kinds: a succeeded job) is missing.
    #[serde(default)]
    pub catch_up: Option<Vec<String>>,
    /// At most `max` jobs with the same `key` run at once, across every node; the key is a
    /// template over each job's `payload` (and `recipient`, for an audience schedule):
    /// `{"key": "{{ recipient.id }}", "max": 1}`. A channel's own replaces it.
    #[serde(default)]
    pub concurrency: Option<kairos_core::concurrency::ConcurrencySpec>,
    /// The kinds' request parts (`"http": {…}`, `"digest": {…}`): every other field, read
    /// by the kind that owns it; a field no kind of the node owns is refused as unknown.
    #[serde(flatten)]
    #[cfg_attr(feature = "openapi", schema(ignore))]
    pub parts: RequestParts,
}

/// A job to enqueue (`POST /v1/jobs`).
//
// A field it does not name is a kind's part (`parts`), or refused as unknown by the facade.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = JobBody))]
pub struct NewJob {
    /// Job kind (default `webhook`).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<crate::ops::api_enums::JobKindSchema>))]
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
    /// At most `max` jobs with the same `key` run at once, across every node:
    /// `{"key": "account:{{ payload.account_id }}", "max": 1}`.
    #[serde(default)]
    pub concurrency: Option<kairos_core::concurrency::ConcurrencySpec>,
    /// The kinds' request parts (`"http": {…}`, `"digest": {…}`): every other field, read
    /// by the kind that owns it; a field no kind of the node owns is refused as unknown.
    #[serde(flatten)]
    #[cfg_attr(feature = "openapi", schema(ignore))]
    pub parts: RequestParts,
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

/// One `digest` attempt's bound with the default settings: feeds 30 s + model 120 s + 5 s.
pub const DEFAULT_DIGEST_ATTEMPT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(155);

/// The facade. Cheap to clone.
#[derive(Clone)]
pub struct Kairos {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    wake: Arc<Notify>,
    /// The node's kinds: what requests may name, how each is validated and retried.
    kinds: Arc<Kinds>,
    allow_private_targets: bool,
    /// Maintenance mode of this node.
    maintenance: crate::maintenance::Maintenance,
    /// The `file` email transport's directory, scrubbed by erasure (`ops/erasure.rs`).
    outbox: Option<std::path::PathBuf>,
    /// The longest one `digest` attempt can take (feed timeout + model timeout + 5 s): what
    /// the save-time budget check counts per attempt.
    digest_attempt_timeout: std::time::Duration,
    /// Where topic templates are checked at save time (in-process by default).
    renderer: kairos_channels::email::template::Renderer,
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
    /// A facade over `store` that accepts jobs of `kinds` (the node's: [`Engine::kinds`]
    /// on a node that runs them). `wake` is notified on every local enqueue so the engine
    /// starts the work at once.
    ///
    /// [`Engine::kinds`]: crate::Engine::kinds
    pub fn new(
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        wake: Arc<Notify>,
        kinds: impl Into<Arc<Kinds>>,
    ) -> Self {
        Kairos {
            store,
            clock,
            wake,
            kinds: kinds.into(),
            allow_private_targets: false,
            maintenance: Default::default(),
            outbox: None,
            digest_attempt_timeout: DEFAULT_DIGEST_ATTEMPT_TIMEOUT,
            renderer: Default::default(),
        }
    }

    /// The node's kinds.
    pub fn kinds(&self) -> &Arc<Kinds> {
        &self.kinds
    }

    /// Check topic templates with `r` (worker processes under OS limits, or in-process, the
    /// default): the same renderer the email handler sends with.
    pub fn with_renderer(mut self, r: kairos_channels::email::template::Renderer) -> Self {
        self.renderer = r;
        self
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

    /// What a kind's request validation may use.
    fn env(&self) -> RequestEnv<'_> {
        RequestEnv {
            store: self.store.as_ref(),
            now: self.clock.now(),
            allow_private_targets: self.allow_private_targets,
            digest_attempt_timeout: self.digest_attempt_timeout,
        }
    }

    /// The kind named `kind` (default `webhook`), if this node accepts it.
    fn check_kind(&self, kind: Option<&str>) -> Result<JobKind, OpsError> {
        let kind = kind.unwrap_or(crate::kinds::webhook::NAME);
        match self.kinds.find(kind) {
            Some(k) => Ok(JobKind(k.name().to_string())),
            None => {
                let mut known = self.kinds.names();
                known.sort_unstable();
                Err(OpsError::invalid(
                    "kind",
                    format!(
                        "unknown job kind {kind:?}; known kinds: {}",
                        known.join(", ")
                    ),
                ))
            }
        }
    }

    /// The endpoint of a job or schedule of `kind`, stored from `target` when the kind posts
    /// to one; refused for kinds that do not.
    async fn endpoint_for(
        &self,
        kind: &JobKind,
        target: Option<&WebhookTarget>,
    ) -> Result<Option<String>, OpsError> {
        let t = match (self.kinds.get(kind.as_str()).endpoint(), target) {
            (EndpointUse::Optional, None) => return Ok(None),
            (EndpointUse::None, None) => return Ok(None),
            (EndpointUse::None, Some(_)) => {
                let takers: Vec<String> = self
                    .kinds
                    .names()
                    .into_iter()
                    .filter(|k| self.kinds.get(k).endpoint() != EndpointUse::None)
                    .map(|k| format!("{k:?}"))
                    .collect();
                return Err(OpsError::invalid(
                    "webhook",
                    format!(
                        "only for kinds {}, not {:?}",
                        takers.join(" and "),
                        kind.as_str()
                    ),
                ));
            }
            (EndpointUse::Required, None) => {
                return Err(OpsError::invalid(
                    "webhook",
                    format!(
                        "required for kind {:?}: {{\"url\", \"secret\"}}",
                        kind.as_str()
                    ),
                ));
            }
            (_, Some(t)) => t,
        };
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
        crate::kinds::check_payload(p)
    }
}

pub use crate::zone::tz_of;

/// Whether `url` plainly targets a private or loopback address (an IP literal, `localhost`,
/// no host). The send-time check resolves names and is authoritative; this catches the
/// obvious cases when a target is saved, so the user hears about them at once.
pub(crate) fn is_obviously_private(url: &url::Url) -> bool {
    kairos_channels::ssrf::is_obviously_private(url)
}
