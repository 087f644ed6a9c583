//! What the engine tells its operator about each attempt and each scheduler firing: one log
//! line (a JSON object with `--log-format json`) and the process's metrics.
//!
//! Metrics go through the [`metrics`] facade: without an installed recorder (a library user,
//! a test) they cost a no-op call; `kairos serve` installs the Prometheus recorder that
//! `/metrics` renders. The names are listed in [`names`] and documented in
//! `docs/operations.md`.
//!
//! Logs carry ids, kinds, classes, status codes and timings only — never a payload, an address,
//! a URL or a provider's error text, which may quote personal data (the attempt log in the
//! database keeps the error for those allowed to read it).

use chrono::{DateTime, Utc};
use kairos_core::Job;
use kairos_store::{JobComplete, Schedule, Transition};

/// Metric names (one definition for the engine, the exporter's bucket set-up and the docs).
pub mod names {
    /// Counter `{outcome, class, kind}`: attempts recorded by the executor.
    pub const ATTEMPTS: &str = "kairos_attempts_total";
    /// Histogram `{kind}`, seconds: an attempt's start minus its job's `run_at`.
    pub const LATENESS: &str = "kairos_job_lateness_seconds";
    /// Histogram `{kind, outcome}`, seconds: how long an attempt ran.
    pub const ATTEMPT_DURATION: &str = "kairos_attempt_duration_seconds";
    /// Counter `{kind}`: firings materialized by the scheduler.
    pub const FIRINGS: &str = "kairos_scheduler_firings_total";
    /// Counter `{kind}`: missed firings dropped by a misfire policy.
    pub const MISFIRES: &str = "kairos_scheduler_misfires_total";
    /// Counter `{check, state}`: SLO alert transitions (`warning`, `ok`).
    pub const SLO_TRANSITIONS: &str = "kairos_slo_transitions_total";
}

/// Histogram buckets, seconds, for lateness and attempt duration: from 5 ms to an hour, so
/// that both a fast queue and a stuck one are visible.
pub const SECONDS_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0,
];

fn seconds(from: DateTime<Utc>, to: DateTime<Utc>) -> f64 {
    (to - from).num_microseconds().unwrap_or(i64::MAX) as f64 / 1e6
}

/// The state a completion moves its job to, as logged.
fn next_state(t: &Transition) -> &'static str {
    match t {
        Transition::Succeeded => "succeeded",
        Transition::Skipped(_) => "skipped",
        Transition::Retry { .. } => "retrying",
        Transition::Dead => "dead",
    }
}

/// An attempt's outcome is known: one log line and its metrics. Called by the executor once
/// per attempt, before the outcome is written.
pub fn attempt_done(job: &Job, c: &JobComplete) {
    let a = &c.attempt;
    let kind = job.kind.as_str().to_string();
    let class = a.error_class.map_or("none", |c| c.as_str());
    let outcome = a.outcome.as_str();
    let lateness = seconds(job.run_at, a.started_at).max(0.0);
    let duration = seconds(a.started_at, a.finished_at).max(0.0);
    metrics::counter!(names::ATTEMPTS, "outcome" => outcome, "class" => class, "kind" => kind.clone())
        .increment(1);
    metrics::histogram!(names::LATENESS, "kind" => kind.clone()).record(lateness);
    metrics::histogram!(names::ATTEMPT_DURATION, "kind" => kind, "outcome" => outcome)
        .record(duration);
    let state = next_state(&c.transition);
    let (duration_ms, lateness_ms) = ((duration * 1e3) as i64, (lateness * 1e3) as i64);
    if a.outcome == kairos_core::AttemptOutcome::Failed {
        tracing::warn!(target: "kairos::attempt", job_id = %job.id, kind = %job.kind,
            schedule_id = job.schedule_id.as_deref(), attempt = job.attempt,
            outcome = %a.outcome, class = %class, status = a.status_code, state,
            duration_ms, lateness_ms, "attempt failed");
    } else {
        tracing::info!(target: "kairos::attempt", job_id = %job.id, kind = %job.kind,
            schedule_id = job.schedule_id.as_deref(), attempt = job.attempt,
            outcome = %a.outcome, status = a.status_code, state, duration_ms, lateness_ms,
            "attempt done");
    }
}

/// The scheduler materialized `fires` of `s` (creating `jobs_created` jobs in all) and
/// dropped `misfires` missed firings: one log line per firing, and the counters.
pub fn schedule_fired(
    s: &Schedule,
    fires: &[DateTime<Utc>],
    jobs_created: usize,
    misfires: u64,
    now: DateTime<Utc>,
) {
    let kind = s.kind.as_str().to_string();
    metrics::counter!(names::FIRINGS, "kind" => kind.clone()).increment(fires.len() as u64);
    if misfires > 0 {
        metrics::counter!(names::MISFIRES, "kind" => kind).increment(misfires);
    }
    for fire_at in fires {
        tracing::info!(target: "kairos::firing", schedule_id = %s.id, kind = %s.kind,
            fire_at = %fire_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            late_ms = (seconds(*fire_at, now) * 1e3) as i64,
            jobs_created, "schedule fired");
    }
}
