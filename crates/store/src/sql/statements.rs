//! Column lists and statement text that both databases run as written (`$n` placeholders;
//! see [`super::sqlite_placeholders`]).

/// The job columns `rows::job` reads.
pub const JOB_COLS: &str = "id, kind, state, payload, endpoint_id, schedule_id, fire_at, period_key, dedupe_key, attempt, retry, run_at, created_at, finished_at, locked_by, lease_token, lease_expires_at, last_error, reason, channel, concurrency_key, concurrency_max, wait_reason";
/// The schedule columns `rows::schedule` reads.
pub const SCHEDULE_COLS: &str = "id, name, kind, spec, timezone, period, misfire, payload, endpoint_id, retry, state, next_fire_at, last_fire_at, created_at, updated_at, channels, misfire_threshold_ms, misfire_window_ms, concurrency, overlap, buffered_fire_at";
/// The gap columns `rows::schedule_gap` reads.
pub const GAP_COLS: &str =
    "schedule_id, reason, first_fire_at, last_fire_at, count, recorded_at, recovered_at";
/// The endpoint columns `rows::endpoint` reads.
pub const ENDPOINT_COLS: &str =
    "id, url, secret, disabled_at, disabled_reason, last_failure_at, last_failure, created_at,
     last_success_at, consecutive_failures, failing_since, previous_secret, previous_secret_expires_at";
/// The attempt columns `rows::attempt` reads.
pub const ATTEMPT_COLS: &str = "job_id, attempt, started_at, finished_at, outcome, error_class, status_code, error, response, provider_id, node";
/// The HTTP call target columns `rows::http_target` reads.
pub const TARGET_COLS: &str =
    "id, fingerprint, url, method, headers, body, timeout_ms, auth, secret, created_at";
/// The artifact columns `rows::artifact` reads.
pub const ARTIFACT_COLS: &str = "name, period_key, content, data, job_id, schedule_id, created_at";
/// Recipients with the columns `rows::recipient` reads.
pub const RECIPIENT_SELECT: &str = "SELECT id, email, timezone, locale, attributes, state, created_at, updated_at, endpoint_id FROM recipients";
/// Topics with the columns `rows::topic` reads.
pub const TOPIC_SELECT: &str = "SELECT name, subject, html, text, variants, entitlement_url, entitlement_timeout_ms, created_at, updated_at FROM topics";
/// Subscriptions (as `s`) with the columns `rows::subscription` reads.
pub const SUBSCRIPTION_SELECT: &str = "SELECT s.recipient_id, s.topic, s.target, s.targets, s.channels, s.enabled, s.created_at, s.updated_at FROM subscriptions s";
