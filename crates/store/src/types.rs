//! Records the store returns.

use chrono::{DateTime, Utc};
use kairos_core::schedule::{Misfire, Overlap, PeriodUnit, ScheduleSpec};
use kairos_core::{JobKind, RetryPolicy};
use serde::{Deserialize, Serialize};

/// A webhook endpoint: where `webhook` jobs post, and the secret they sign with. The secret
/// lives here and not in job payloads, so that listing jobs never shows it; its `Debug`
/// does not show it either.
#[derive(Clone, PartialEq)]
pub struct Endpoint {
    /// `ep_…`.
    pub id: String,
    /// The URL posted to.
    pub url: String,
    /// The `whsec_…` signing secret.
    pub secret: String,
    /// When it was disabled (after HTTP 410 Gone), if it was.
    pub disabled_at: Option<DateTime<Utc>>,
    /// Why it was disabled.
    pub disabled_reason: Option<String>,
    /// When a send to it last failed, if one did.
    pub last_failure_at: Option<DateTime<Utc>>,
    /// What that failure was (`HTTP 500`, a connection error, …).
    pub last_failure: Option<String>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// Its delivery health as last flushed from the attempt log (see
    /// [`crate::EndpointStore::endpoint_health_flush`]).
    pub health: EndpointHealth,
    /// The secret it signed with before its last rotation, still signing beside `secret` until
    /// `previous_secret_expires_at`.
    pub previous_secret: Option<String>,
    /// When the previous secret stops signing (the end of the rotation window).
    pub previous_secret_expires_at: Option<DateTime<Utc>>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may carry a credential in its user info or query, as some receivers want:
        // shown masked, as every view shows it.
        let url = kairos_core::text::mask_url(&self.url);
        f.debug_struct("Endpoint")
            .field("id", &self.id)
            .field("url", &url)
            .field("secret", &"[redacted]")
            .field("disabled_at", &self.disabled_at)
            .field("disabled_reason", &self.disabled_reason)
            .field("last_failure_at", &self.last_failure_at)
            .field("last_failure", &self.last_failure)
            .field("created_at", &self.created_at)
            .field("health", &self.health)
            .field(
                "previous_secret",
                &self.previous_secret.as_ref().map(|_| "[redacted]"),
            )
            .field(
                "previous_secret_expires_at",
                &self.previous_secret_expires_at,
            )
            .finish()
    }
}

impl Endpoint {
    /// The previous secret while its rotation window is open at `now`.
    pub fn previous_secret_at(&self, now: DateTime<Utc>) -> Option<&str> {
        match (&self.previous_secret, self.previous_secret_expires_at) {
            (Some(s), Some(until)) if now < until => Some(s),
            _ => None,
        }
    }
}

/// An endpoint's delivery health: the streak of failed sends since the last success.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointHealth {
    /// When a send to it last succeeded.
    pub last_success_at: Option<DateTime<Utc>>,
    /// Failed sends since the last success (or since it was enabled again).
    pub consecutive_failures: i64,
    /// When the current streak of failures began; `None` when there is none.
    pub failing_since: Option<DateTime<Utc>>,
}

/// A schedule's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScheduleState {
    /// Firing.
    Active,
    /// Not firing until resumed.
    Paused,
    /// A one-shot that has fired: nothing further.
    Finished,
}

impl ScheduleState {
    /// The stored string.
    pub fn as_str(&self) -> &'static str {
        match self {
            ScheduleState::Active => "active",
            ScheduleState::Paused => "paused",
            ScheduleState::Finished => "finished",
        }
    }
    /// Parse a stored string (unknown values read as paused: a reader never crashes, and a
    /// schedule in a state we do not understand must not fire).
    pub fn parse(s: &str) -> ScheduleState {
        match s {
            "active" => ScheduleState::Active,
            "finished" => ScheduleState::Finished,
            _ => ScheduleState::Paused,
        }
    }
}

/// A schedule as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Schedule {
    /// `sch_…`.
    pub id: String,
    /// A human name, unique.
    pub name: String,
    /// The kind of job each firing creates.
    pub kind: JobKind,
    /// The clock.
    pub spec: ScheduleSpec,
    /// The IANA time zone the spec is read in.
    pub timezone: String,
    /// The period key granularity of occurrences.
    pub period: PeriodUnit,
    /// What to do with firings missed while down.
    pub misfire: Misfire,
    /// A firing later than this follows `misfire` (None: the node's default threshold).
    pub misfire_threshold: Option<std::time::Duration>,
    /// A firing later than this is not run (None: the default, 7 days).
    pub misfire_window: Option<std::time::Duration>,
    /// What a firing does while the previous occurrence still has open jobs.
    pub overlap: Overlap,
    /// The firing a `buffer_one` schedule holds until the previous occurrence's jobs end.
    pub buffered_fire_at: Option<DateTime<Utc>>,
    /// The payload each job gets.
    pub payload: serde_json::Value,
    /// The webhook endpoint, for `webhook` schedules.
    pub endpoint_id: Option<String>,
    /// The retry policy of created jobs (None: the kind's default).
    pub retry: Option<RetryPolicy>,
    /// The channels each firing creates a job for, when given explicitly; empty for a
    /// schedule made with a single kind (see [`Schedule::channel_list`]).
    pub channels: Vec<ScheduleChannel>,
    /// The jobs' concurrency limit, its key a template over each job's payload (and
    /// recipient); a channel's own replaces it.
    pub concurrency: Option<kairos_core::concurrency::ConcurrencySpec>,
    /// Active, paused, finished.
    pub state: ScheduleState,
    /// The next nominal firing.
    pub next_fire_at: Option<DateTime<Utc>>,
    /// The last nominal firing materialized.
    pub last_fire_at: Option<DateTime<Utc>>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last changed.
    pub updated_at: DateTime<Utc>,
}

/// One channel of a schedule: each firing creates one job per channel, retried on its own
///.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleChannel {
    /// The channel's name, unique in its schedule (`[a-z0-9_-]{1,64}`).
    pub name: String,
    /// The kind of job it creates.
    pub kind: JobKind,
    /// Its jobs' payload; `None`: the schedule's payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<serde_json::Value>,
    /// The webhook endpoint, for kinds that post to one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint_id: Option<String>,
    /// Its jobs' retry policy; `None`: the schedule's, else the kind's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryPolicy>,
    /// Its jobs' concurrency limit; `None`: the schedule's, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<kairos_core::concurrency::ConcurrencySpec>,
}

impl ScheduleChannel {
    /// The stored form of a schedule's explicit channels: a JSON array, `None` (NULL) when
    /// there are none.
    pub fn encode_all(channels: &[ScheduleChannel]) -> Option<serde_json::Value> {
        (!channels.is_empty()).then(|| serde_json::to_value(channels).unwrap_or_default())
    }

    /// The channels of a stored JSON array (NULL: none).
    pub fn decode_all(v: Option<serde_json::Value>) -> serde_json::Result<Vec<ScheduleChannel>> {
        match v {
            None | Some(serde_json::Value::Null) => Ok(Vec::new()),
            Some(v) => serde_json::from_value(v),
        }
    }
}

impl Schedule {
    /// The schedule's misfire rule, with `default_threshold` (the node's) when the schedule
    /// sets none.
    pub fn misfire_rule(
        &self,
        default_threshold: std::time::Duration,
    ) -> kairos_core::schedule::MisfireRule {
        let d =
            |d: std::time::Duration| chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX);
        kairos_core::schedule::MisfireRule {
            policy: self.misfire,
            threshold: d(self.misfire_threshold.unwrap_or(default_threshold)),
            window: d(self
                .misfire_window
                .unwrap_or(kairos_core::schedule::DEFAULT_MISFIRE_WINDOW)),
        }
    }

    /// The channels of each firing: the explicit ones, or the single channel of a schedule
    /// made with one kind (named after its kind, with the schedule's endpoint and policy).
    pub fn channel_list(&self) -> Vec<ScheduleChannel> {
        if !self.channels.is_empty() {
            return self.channels.clone();
        }
        vec![ScheduleChannel {
            name: self.kind.as_str().to_string(),
            kind: self.kind.clone(),
            payload: None,
            endpoint_id: self.endpoint_id.clone(),
            retry: self.retry.clone(),
            concurrency: None,
        }]
    }
}

/// One recorded attempt of a job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    /// The job.
    pub job_id: String,
    /// 1-based attempt number.
    pub attempt: i32,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// When it ended.
    pub finished_at: DateTime<Utc>,
    /// `succeeded`, `skipped`, `failed`, `lost` (lease expired), `cancelled`.
    pub outcome: kairos_core::AttemptOutcome,
    /// How it failed, when it failed.
    pub error_class: Option<kairos_core::ErrorClass>,
    /// The HTTP status, when there was a response.
    pub status_code: Option<i32>,
    /// The error message, when it failed.
    pub error: Option<String>,
    /// An excerpt of the response.
    pub response: Option<String>,
    /// The provider's message id.
    pub provider_id: Option<String>,
    /// The node that ran it.
    pub node: Option<String>,
}

/// A record of due firings of a schedule that did not run: one per gap and reason.
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduleGap {
    /// The schedule.
    pub schedule_id: String,
    /// Why they did not run: `skip` (the misfire policy dropped them), `window` (later than
    /// the schedule's misfire window), `overlap` (the previous occurrence was still running,
    /// see [`Overlap`]); a value this version does not know is kept as is.
    pub reason: String,
    /// The first missed nominal firing.
    pub first_fire_at: DateTime<Utc>,
    /// The last missed nominal firing.
    pub last_fire_at: DateTime<Utc>,
    /// How many firings the gap holds.
    pub count: i64,
    /// When the scheduler recorded it.
    pub recorded_at: DateTime<Utc>,
    /// When the schedule next fired on time after it (None: not yet).
    pub recovered_at: Option<DateTime<Utc>>,
}

/// What `schedule_fire` did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ScheduleFired {
    /// Whether `next_fire_at` was advanced (false: another node did it first).
    pub advanced: bool,
    /// Ids of the jobs created (dedupe keys that existed create nothing).
    pub created: Vec<String>,
}

/// What `job_insert` did.
#[derive(Debug, Clone, PartialEq)]
pub struct JobInserted {
    /// The job, new or existing.
    pub job: kairos_core::Job,
    /// Whether it was created now.
    pub created: bool,
}

/// What `job_complete_many` did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CompleteReport {
    /// Completions recorded.
    pub applied: u64,
    /// Ids whose lease token no longer matched: another node owns them now.
    pub stale: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_of_an_endpoint_hides_its_secrets_and_url_query() {
        let ep = Endpoint {
            id: "ep_1".into(),
            url: "https://hookuser:hookpass@hooks.example/in?token=qtoken#frag".into(),
            secret: "whsec_currentcurrent".into(),
            disabled_at: None,
            disabled_reason: None,
            last_failure_at: None,
            last_failure: None,
            created_at: DateTime::<Utc>::UNIX_EPOCH,
            health: EndpointHealth::default(),
            previous_secret: Some("whsec_previousprevious".into()),
            previous_secret_expires_at: None,
        };
        let shown = format!("{ep:?}");
        for secret in [
            "whsec_currentcurrent",
            "whsec_previousprevious",
            "qtoken",
            "frag",
            "hookpass",
        ] {
            assert!(!shown.contains(secret), "{secret} shown in {shown}");
        }
        assert!(
            shown.contains("ep_1")
                && shown.contains("https://hookuser:***@hooks.example/in?token=***"),
            "{shown}"
        );
    }
}
