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
    period_key: Option<String>,
    attempt: i32,
    max_attempts: u32,
    run_at: String,
    created_at: String,
    finished_at: Option<String>,
    last_error: Option<String>,
    reason: Option<String>,
    replayable: bool,
    cancellable: bool,
}

impl JobRow {
    /// The row of `j`; `kinds` (the node's) give the retry policy of a job stored with its
    /// kind's default.
    pub fn new(kinds: &kairos_engine::Kinds, j: &Job) -> Self {
        let state = state_label(j.state.as_str());
        JobRow {
            id: j.id.clone(),
            kind: j.kind.as_str().to_string(),
            channel: j.channel.clone(),
            state,
            schedule_id: j.schedule_id.clone(),
            period_key: j.period_key.clone(),
            attempt: j.attempt,
            max_attempts: kinds.retry_of(j).max_attempts(),
            run_at: fmt_t(j.run_at),
            created_at: fmt_t(j.created_at),
            finished_at: j.finished_at.map(fmt_t),
            last_error: j.last_error.clone(),
            reason: j.reason.clone(),
            replayable: matches!(state, "dead" | "cancelled" | "skipped" | "available"),
            cancellable: matches!(state, "available" | "running"),
        }
    }
}

/// An attempt as the job page shows it.
#[derive(Debug, Serialize)]
pub struct AttemptRow {
    attempt: i32,
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
