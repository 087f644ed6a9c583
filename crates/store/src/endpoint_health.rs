//! Endpoint health and secret rotation: the parameters and answers of the
//! [`EndpointStore`](crate::EndpointStore) methods that keep them.
//!
//! Health is derived from the attempt log, off the delivery path: the executor records each
//! attempt with the job's completion as it always has, and
//! [`endpoint_health_flush`](crate::EndpointStore::endpoint_health_flush), run by a service,
//! folds the attempts written since its cursor into per-endpoint streaks and hourly counters.
//! Nothing is written between a send and the job's committed outcome.

use chrono::{DateTime, Utc};
use std::time::Duration;

/// `endpoint_health_flush`: fold the attempts of webhook jobs recorded since the last flush
/// into their endpoints' health. A job without an endpoint of its own that names a recipient
/// (`payload.recipient_id`, a notification to the recipient's webhook) counts for its
/// recipient's endpoint.
#[derive(Debug, Clone)]
pub struct EndpointHealthFlush {
    /// Attempts that finished at or after this instant are left for a later flush, and so is
    /// everything after them: on PostgreSQL an attempt id can become visible after a larger
    /// one (concurrent completions commit in any order), and waiting this long lets every
    /// completion batch of that age commit before the cursor passes it.
    pub settled_before: DateTime<Utc>,
    /// At most this many attempts per call (a bounded transaction).
    pub limit: i64,
    /// The job kinds that post to their endpoint (the engine's, e.g. `webhook`): only their
    /// attempts count. A digest carries an endpoint for its follow-up events but never posts
    /// to it, so a failed feed fetch must not count as a failed send.
    pub kinds: Vec<String>,
}

/// What one `endpoint_health_flush` folded in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EndpointHealthFlushed {
    /// Attempts read past the cursor (including those of jobs without an endpoint and
    /// outcomes that are not sends, which count for nothing).
    pub attempts: u64,
    /// Endpoints whose health changed.
    pub endpoints: u64,
}

/// `endpoint_health_counts`: attempts and failures per endpoint from the hourly counters.
#[derive(Debug, Clone)]
pub struct EndpointHealthCounts {
    /// The endpoints.
    pub ids: Vec<String>,
    /// Count the hours starting at or after this instant (rounded down to its hour).
    pub since: DateTime<Utc>,
}

/// One endpoint's counts over a window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointHealthCount {
    /// The endpoint.
    pub endpoint_id: String,
    /// Sends (succeeded or failed attempts).
    pub attempts: i64,
    /// Failed sends.
    pub failures: i64,
}

/// `endpoint_streak_disable`: disable the enabled endpoints whose failure streak is long
/// enough in both count and time, with reason [`FAILURE_STREAK`].
#[derive(Debug, Clone)]
pub struct EndpointStreakDisable {
    /// At least this many consecutive failures (at least 1).
    pub min_failures: i64,
    /// The streak began at or before this instant.
    pub failing_before: DateTime<Utc>,
    /// Now: the disabling instant.
    pub now: DateTime<Utc>,
}

/// The `disabled_reason` of an endpoint disabled after a sustained failure streak.
pub const FAILURE_STREAK: &str = "failure_streak";

/// `endpoint_secret_rotate`: sign with `secret` from now on and keep the current secret
/// signing too until `previous_expires_at`.
#[derive(Debug, Clone)]
pub struct EndpointSecretRotate {
    /// The endpoint.
    pub id: String,
    /// The new `whsec_…` secret.
    pub secret: String,
    /// When the current (then previous) secret stops signing.
    pub previous_expires_at: DateTime<Utc>,
}

/// The hour `t` falls in (its start), the key of the hourly counters.
pub fn hour_of(t: DateTime<Utc>) -> DateTime<Utc> {
    let ms = t.timestamp_millis();
    let h = ms - ms.rem_euclid(3_600_000);
    DateTime::<Utc>::from_timestamp_millis(h).unwrap_or(t)
}

/// The longest rotation window accepted (30 days).
pub const MAX_ROTATION_WINDOW: Duration = Duration::from_secs(30 * 24 * 3600);
