//! Jobs: their states, the stored record, and what a handler returns.
//!
//! ```text
//! available ──claim──> running ──ok──────────> succeeded
//!     ^                   │  ├─skip(reason)──> skipped
//!     └── retry (run_at) ─┤  ├─cancel────────> cancelled
//!                         │  └─attempts spent─> dead ──replay──> available
//!        lease expired ───┘ (rescuer returns it to available)
//! ```
//!
//! `available` with `run_at` in the future is shown as `scheduled`; it is one stored state.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

/// The state of a job. Stored as a CHECK-constrained string; a value this version does not
/// know is kept as [`JobState::Unknown`] so that a reader never crashes on it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum JobState {
    /// Waiting for `run_at` (or due now).
    Available,
    /// Claimed by a worker under a lease.
    Running,
    /// Finished successfully.
    Succeeded,
    /// Finished without doing the work, for a reason (suppressed, endpoint disabled, …).
    Skipped,
    /// Cancelled by an operator before it finished.
    Cancelled,
    /// Attempts spent: parked for inspection and replay.
    Dead,
    /// A stored value this version does not know.
    Unknown(String),
}

impl JobState {
    /// Every known state, in lifecycle order.
    pub const ALL: [JobState; 6] = [
        JobState::Available,
        JobState::Running,
        JobState::Succeeded,
        JobState::Skipped,
        JobState::Cancelled,
        JobState::Dead,
    ];

    /// The stored string.
    pub fn as_str(&self) -> &str {
        match self {
            JobState::Available => "available",
            JobState::Running => "running",
            JobState::Succeeded => "succeeded",
            JobState::Skipped => "skipped",
            JobState::Cancelled => "cancelled",
            JobState::Dead => "dead",
            JobState::Unknown(s) => s,
        }
    }

    /// Parse a stored string; unknown values are kept, never an error.
    pub fn parse(s: &str) -> JobState {
        match s {
            "available" => JobState::Available,
            "running" => JobState::Running,
            "succeeded" => JobState::Succeeded,
            "skipped" => JobState::Skipped,
            "cancelled" => JobState::Cancelled,
            "dead" => JobState::Dead,
            other => JobState::Unknown(other.to_string()),
        }
    }

    /// Parse a state named by a user (API filter), rejecting unknown names.
    pub fn parse_known(s: &str) -> Option<JobState> {
        match JobState::parse(s) {
            JobState::Unknown(_) => None,
            st => Some(st),
        }
    }

    /// Whether no further transition happens without an operator (replay).
    pub fn is_final(&self) -> bool {
        matches!(
            self,
            JobState::Succeeded | JobState::Skipped | JobState::Cancelled | JobState::Dead
        )
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for JobState {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for JobState {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(JobState::parse(&s))
    }
}

/// The kind of a job: which handler runs it. The engine's kind layer defines the built-in
/// kinds; an embedding application registers its own names.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct JobKind(pub String);

impl JobKind {
    /// The kind named `name`.
    pub fn new(name: impl Into<String>) -> Self {
        JobKind(name.into())
    }
    /// The kind's name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
    /// Whether `name` is a valid kind name: 1–64 of `[a-z0-9_.-]`.
    pub fn is_valid_name(name: &str) -> bool {
        !name.is_empty()
            && name.len() <= 64
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_.-".contains(&b))
    }
}

impl fmt::Display for JobKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A job as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    /// `job_…`; also the `webhook-id` and the provider idempotency key.
    pub id: String,
    /// Which handler runs it.
    pub kind: JobKind,
    /// Current state.
    pub state: JobState,
    /// Handler input. Ids and parameters only: no secrets, no personal data.
    pub payload: serde_json::Value,
    /// The webhook endpoint (`ep_…`) this job posts to, for `webhook` jobs.
    pub endpoint_id: Option<String>,
    /// The schedule that created it, if any.
    pub schedule_id: Option<String>,
    /// The nominal firing time of the occurrence that created it.
    pub fire_at: Option<DateTime<Utc>>,
    /// The occurrence's period key (`2026-W48`, `2026-11-29`, or the firing instant).
    pub period_key: Option<String>,
    /// The channel it delivers on: a schedule's channel name or an audience channel
    /// (`email`, `webhook`); `None` for a job enqueued directly.
    pub channel: Option<String>,
    /// Unique key: expansion and idempotent enqueue are `ON CONFLICT (dedupe_key) DO NOTHING`.
    pub dedupe_key: Option<String>,
    /// Attempts started so far.
    pub attempt: i32,
    /// Retry policy (delays per class, maximum attempts); `None`: its kind's default, which
    /// the engine's kind layer resolves (the store does not know kinds).
    pub retry: Option<crate::RetryPolicy>,
    /// When the job is next due.
    pub run_at: DateTime<Utc>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it reached a final state.
    pub finished_at: Option<DateTime<Utc>>,
    /// The worker node holding the lease, while running.
    pub locked_by: Option<String>,
    /// The lease's fencing token, while running.
    pub lease_token: Option<String>,
    /// When the lease ends unless renewed.
    pub lease_expires_at: Option<DateTime<Utc>>,
    /// The last error message, if the last attempt failed.
    pub last_error: Option<String>,
    /// Why the job was skipped or cancelled.
    pub reason: Option<String>,
    /// Its concurrency key and limit, if any (`crate::concurrency`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<crate::Concurrency>,
    /// Why this due job was last put back without running, while it waits
    /// (`concurrency_key`, `rate_limit`, `in_flight`: issue 34); cleared when it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_reason: Option<String>,
}

pub use crate::retry::ErrorClass;

impl std::fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for ErrorClass {
    /// Compares with its stored string.
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// What an attempt ended as (the attempt log's `outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptOutcome {
    /// The handler delivered.
    Succeeded,
    /// The handler decided not to send (a reason is recorded).
    Skipped,
    /// The handler failed (an error class is recorded).
    Failed,
    /// The node running it stopped answering; the rescuer took the job back.
    Lost,
    /// Cancelled while it ran.
    Cancelled,
}

impl AttemptOutcome {
    /// Every outcome, in documentation order.
    pub const ALL: [AttemptOutcome; 5] = [
        AttemptOutcome::Succeeded,
        AttemptOutcome::Skipped,
        AttemptOutcome::Failed,
        AttemptOutcome::Lost,
        AttemptOutcome::Cancelled,
    ];

    /// The stored string.
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptOutcome::Succeeded => "succeeded",
            AttemptOutcome::Skipped => "skipped",
            AttemptOutcome::Failed => "failed",
            AttemptOutcome::Lost => "lost",
            AttemptOutcome::Cancelled => "cancelled",
        }
    }

    /// The recorded outcome of a handler's outcome.
    pub fn of(outcome: &Outcome) -> Self {
        match outcome {
            Outcome::Delivered { .. } => AttemptOutcome::Succeeded,
            Outcome::Skipped(_) => AttemptOutcome::Skipped,
            Outcome::Failed(_) => AttemptOutcome::Failed,
        }
    }
}

impl std::str::FromStr for AttemptOutcome {
    type Err = String;
    /// The stored string back.
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "succeeded" => Ok(AttemptOutcome::Succeeded),
            "skipped" => Ok(AttemptOutcome::Skipped),
            "failed" => Ok(AttemptOutcome::Failed),
            "lost" => Ok(AttemptOutcome::Lost),
            "cancelled" => Ok(AttemptOutcome::Cancelled),
            other => Err(format!("unknown attempt outcome {other:?}")),
        }
    }
}

impl std::fmt::Display for AttemptOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for AttemptOutcome {
    /// Compares with its stored string (as `http::Method` compares with `"GET"`).
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A failed attempt, as a handler reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// How the retry policy treats it.
    pub class: ErrorClass,
    /// What happened, for the attempt log. Never contains secrets or addresses.
    pub message: String,
    /// A delay the other side asked for (`Retry-After`), honoured up to a cap.
    pub retry_after: Option<Duration>,
    /// The HTTP status, when there was a response.
    pub status_code: Option<u16>,
    /// A short excerpt of the response body.
    pub response: Option<String>,
    /// The endpoint must not be called again (HTTP 410 Gone).
    pub disable_endpoint: bool,
}

impl Failure {
    /// A failure of `class` with a message.
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        Failure {
            class,
            message: message.into(),
            retry_after: None,
            status_code: None,
            response: None,
            disable_endpoint: false,
        }
    }
    /// A transient failure.
    pub fn transient(message: impl Into<String>) -> Self {
        Failure::new(ErrorClass::Transient, message)
    }
    /// A permanent failure.
    pub fn permanent(message: impl Into<String>) -> Self {
        Failure::new(ErrorClass::Permanent, message)
    }
}

/// What one attempt of a job produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The work was done.
    Delivered {
        /// The provider's id for what was sent (message id), if any.
        provider_id: Option<String>,
        /// The HTTP status, when there was a response.
        status_code: Option<u16>,
        /// A short excerpt of the response (JSON when it was JSON).
        response: Option<String>,
    },
    /// The work was deliberately not done, with the reason (`suppressed`, `endpoint_disabled`).
    Skipped(String),
    /// The attempt failed.
    Failed(Failure),
}

impl Outcome {
    /// A plain success with nothing to record.
    pub fn ok() -> Self {
        Outcome::Delivered {
            provider_id: None,
            status_code: None,
            response: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_state_is_kept_not_an_error() {
        assert_eq!(
            JobState::parse("exploded"),
            JobState::Unknown("exploded".into())
        );
        assert_eq!(JobState::parse("exploded").as_str(), "exploded");
        assert_eq!(JobState::parse_known("exploded"), None);
        for s in JobState::ALL {
            assert_eq!(JobState::parse(s.as_str()), s);
        }
    }

    #[test]
    fn http_statuses_classify_as_designed() {
        // The classification table: 503, 429, 408 and every other 5xx wait; 400 and the other 4xx and
        // anything unexpected (3xx, 1xx) do not.
        for s in [408, 425, 429, 500, 501, 502, 503, 504, 507, 599] {
            assert_eq!(
                ErrorClass::from_http_status(s),
                ErrorClass::Transient,
                "{s}"
            );
        }
        for s in [
            100, 300, 304, 400, 401, 403, 404, 405, 409, 410, 413, 422, 499, 600,
        ] {
            assert_eq!(
                ErrorClass::from_http_status(s),
                ErrorClass::Permanent,
                "{s}"
            );
        }
    }

    #[test]
    fn attempt_outcomes_and_error_classes_read_back_from_their_stored_names() {
        use AttemptOutcome as O;
        for o in [O::Succeeded, O::Skipped, O::Failed, O::Lost, O::Cancelled] {
            assert_eq!(o.as_str().parse::<O>(), Ok(o));
            assert_eq!(serde_json::to_value(o).unwrap(), o.as_str());
            assert!(o == o.as_str());
        }
        assert!("done".parse::<O>().unwrap_err().contains("\"done\""));
        for c in [
            ErrorClass::Transient,
            ErrorClass::Permanent,
            ErrorClass::RateLimited,
        ] {
            assert_eq!(c.as_str().parse::<ErrorClass>(), Ok(c));
        }
        assert!("flaky".parse::<ErrorClass>().is_err());
    }
}
