//! Jobs and attempts as the admin pages show them.

use crate::admin::state_label;
use chrono::{DateTime, SecondsFormat, Utc};
use kairos_core::Job;
use kairos_store::Attempt;
use serde::Serialize;

/// An instant as shown: RFC 3339, UTC, milliseconds.
pub fn fmt_t(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// A job as the pages show it.
#[derive(Debug, Serialize)]
pub struct JobRow {
    id: String,
    kind: String,
    channel: Option<String>,
    state: &'static str,
    schedule_id: Option<String>,
    /// The schedule's name, when the page looked it up (lists show schedules by name).
    pub schedule_name: Option<String>,
    period_key: Option<String>,
    endpoint_id: Option<String>,
    http_target_id: Option<String>,
    node: Option<String>,
    /// The payload as compact JSON (ids and parameters only: no secrets in payloads).
    payload_text: String,
    attempt: i32,
    max_attempts: u32,
    run_at: String,
    created_at: String,
    finished_at: Option<String>,
    last_error: Option<String>,
    reason: Option<String>,
    replayable: bool,
    cancellable: bool,
    /// Why this due job is not running, while it waits (issue 34).
    wait: Option<Wait>,
}

/// Why a due job is not running: a flow-control limit put it back (issue 34).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Wait {
    /// The stored reason (`concurrency_key`, `rate_limit`, `in_flight`).
    pub reason: String,
    /// What holds it, in words.
    pub message: String,
    /// The concurrency key it waits on, for `concurrency_key`.
    pub key: Option<String>,
    /// The endpoint whose limit holds it, for `rate_limit` and `in_flight`.
    pub endpoint_id: Option<String>,
}

impl Wait {
    /// The wait of `j`: only a job still `available` with a recorded reason waits.
    pub fn of(j: &Job) -> Option<Wait> {
        use kairos_store::concurrency::WAIT_CONCURRENCY_KEY;
        use kairos_store::flow::{WAIT_IN_FLIGHT, WAIT_RATE_LIMIT};
        if j.state != kairos_core::JobState::Available {
            return None;
        }
        let reason = j.wait_reason.clone()?;
        let endpoint = || match &j.endpoint_id {
            Some(ep) => format!("endpoint {ep}"),
            None => "its target".to_string(),
        };
        let (message, key, endpoint_id) = match reason.as_str() {
            WAIT_CONCURRENCY_KEY => {
                let (key, max) = j
                    .concurrency
                    .as_ref()
                    .map_or((String::new(), 0), |c| (c.key.clone(), c.max));
                (
                    format!(
                        "concurrency key: at most {max} job(s) of key \"{key}\" run at once, \
                         and that many are running"
                    ),
                    Some(key),
                    None,
                )
            }
            WAIT_RATE_LIMIT => (
                format!(
                    "rate limit: {} has sent as many deliveries as its rate limit allows now",
                    endpoint()
                ),
                None,
                j.endpoint_id.clone(),
            ),
            WAIT_IN_FLIGHT => (
                format!(
                    "in flight: {} has as many deliveries in flight as its max_in_flight allows",
                    endpoint()
                ),
                None,
                j.endpoint_id.clone(),
            ),
            other => (format!("waiting ({other})"), None, None),
        };
        Some(Wait {
            reason,
            message,
            key,
            endpoint_id,
        })
    }
}

impl JobRow {
    /// The row of `j`; `kinds` (the node's) give the retry policy of a job stored with its
    /// kind's default.
    pub fn new(kinds: &kairos_engine::Kinds, j: &Job) -> Self {
        let state = state_label(j.state.as_str());
        // An available job that has already run is waiting out a retry delay: shown apart
        // from fresh work, as Sidekiq and Oban do.
        let shown = if state == "available" && j.attempt > 0 {
            "retrying"
        } else {
            state
        };
        JobRow {
            id: j.id.clone(),
            kind: j.kind.as_str().to_string(),
            channel: j.channel.clone(),
            state: shown,
            schedule_id: j.schedule_id.clone(),
            schedule_name: None,
            period_key: j.period_key.clone(),
            endpoint_id: j.endpoint_id.clone(),
            http_target_id: j
                .payload
                .get(kairos_engine::kinds::http::HTTP_TARGET_KEY)
                .and_then(|v| v.as_str())
                .map(str::to_string),
            node: j.locked_by.clone(),
            payload_text: j.payload.to_string(),
            attempt: j.attempt,
            max_attempts: kinds.retry_of(j).max_attempts(),
            run_at: fmt_t(j.run_at),
            created_at: fmt_t(j.created_at),
            finished_at: j.finished_at.map(fmt_t),
            last_error: j.last_error.clone(),
            reason: j.reason.clone(),
            replayable: matches!(state, "dead" | "cancelled" | "skipped" | "available"),
            cancellable: matches!(state, "available" | "running"),
            wait: Wait::of(j),
        }
    }
}

/// An attempt as the job page shows it.
#[derive(Debug, Serialize)]
pub struct AttemptRow {
    attempt: i32,
    /// The replay round this attempt belongs to (1: before any replay).
    round: usize,
    /// Whether this attempt starts a new round (a replay restarted the attempt count).
    new_round: bool,
    started_at: String,
    duration_ms: i64,
    outcome: String,
    error_class: Option<String>,
    status_code: Option<i32>,
    error: Option<String>,
    provider_id: Option<String>,
    response: Option<String>,
    node: Option<String>,
}

impl From<&Attempt> for AttemptRow {
    fn from(a: &Attempt) -> Self {
        AttemptRow {
            attempt: a.attempt,
            round: 1,
            new_round: false,
            started_at: fmt_t(a.started_at),
            duration_ms: (a.finished_at - a.started_at).num_milliseconds(),
            outcome: a.outcome.to_string(),
            error_class: a.error_class.map(|c| c.to_string()),
            status_code: a.status_code,
            error: a.error.clone(),
            provider_id: a.provider_id.clone(),
            response: a.response.clone(),
            node: a.node.clone(),
        }
    }
}

impl AttemptRow {
    /// Whether this attempt starts a new replay round.
    pub fn new_round(&self) -> bool {
        self.new_round
    }
}

/// The attempts in order, each with its replay round: a replay restarts the attempt count
/// (1, 2, 3, 1, 2, …), so an attempt numbered no higher than the one before it opens a round.
pub fn attempt_rounds(attempts: &[Attempt]) -> Vec<AttemptRow> {
    let mut round = 1;
    let mut prev: Option<i32> = None;
    attempts
        .iter()
        .map(|a| {
            let mut row = AttemptRow::from(a);
            if prev.is_some_and(|p| a.attempt <= p) {
                round += 1;
                row.new_round = true;
            }
            row.round = round;
            prev = Some(a.attempt);
            row
        })
        .collect()
}
