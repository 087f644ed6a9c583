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
    /// Counter `{source, type, outcome}`: provider webhooks received (`outcome`: `suppressed`,
    /// `recorded`, `unknown`, `duplicate`, `rejected`).
    pub const INBOUND_EVENTS: &str = "kairos_inbound_events_total";
}

/// A provider webhook was handled: `outcome` is the action of a new event (`suppressed`,
/// `recorded`, `unknown`), `duplicate` for a repeat, `rejected` for a bad signature. The
/// `type` label is [`crate::inbound::type_label`]: a fixed set, whatever the sender writes.
pub fn inbound_event(source: &str, event_type: &str, outcome: &str) {
    metrics::counter!(names::INBOUND_EVENTS, "source" => source.to_string(),
        "type" => crate::inbound::type_label(event_type), "outcome" => outcome.to_string())
    .increment(1);
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

/// Spans, exported when tracing is on (`KAIROS_OTLP_ENDPOINT`, set up by kairos-server): a
/// schedule firing, a job attempt. Their target is [`TRACE_TARGET`], which only the
/// OpenTelemetry layer listens to: with tracing off they are never built.
///
/// A job carries no trace context through the database. Instead a firing's span ids are
/// derived from what every job it creates keeps — its schedule id and nominal firing time
/// ([`firing_span_context`]) — so an attempt, on any node and after any restart, links to the
/// firing that created its job.
pub mod spans {
    use chrono::{DateTime, Utc};
    use kairos_core::{Job, Outcome};
    use kairos_store::Schedule;
    use opentelemetry::trace::{
        Span as _, SpanContext, SpanId, SpanKind, TraceFlags, TraceId, TraceState, Tracer as _,
    };
    use opentelemetry::{Context, KeyValue};
    use sha2::{Digest, Sha256};
    use std::cell::Cell;
    use tracing::field::Empty;
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    /// The target of every exported span.
    pub const TRACE_TARGET: &str = "kairos::trace";

    thread_local! {
        /// The ids the span being started on this thread must take (see [`pinned_ids`]).
        static PINNED: Cell<Option<(TraceId, SpanId)>> = const { Cell::new(None) };
    }

    /// The trace and span id that the span being started on this thread must take, if any:
    /// set only while a firing span is started. kairos-server's id generator returns these
    /// instead of random ones; without it a firing span gets random ids and attempts' links
    /// point at nothing.
    pub fn pinned_ids() -> Option<(TraceId, SpanId)> {
        PINNED.with(Cell::get)
    }

    /// The span context of the firing of schedule `schedule_id` at nominal time `fire_at`:
    /// ids derived from the two (SHA-256), sampled, remote. The same on every node.
    pub fn firing_span_context(schedule_id: &str, fire_at: DateTime<Utc>) -> SpanContext {
        let digest = Sha256::new()
            .chain_update(b"kairos firing\0")
            .chain_update(schedule_id.as_bytes())
            .chain_update(b"\0")
            .chain_update(fire_at.timestamp_micros().to_be_bytes())
            .finalize();
        let mut trace = [0u8; 16];
        trace.copy_from_slice(&digest[..16]);
        let mut span = [0u8; 8];
        span.copy_from_slice(&digest[16..24]);
        // All-zero ids are invalid; a digest that starts so is astronomically unlikely.
        if trace == [0; 16] {
            trace[15] = 1;
        }
        if span == [0; 8] {
            span[7] = 1;
        }
        SpanContext::new(
            TraceId::from_bytes(trace),
            SpanId::from_bytes(span),
            TraceFlags::SAMPLED,
            true,
            TraceState::default(),
        )
    }

    /// Whether spans are exported (an OpenTelemetry layer listens to [`TRACE_TARGET`]).
    pub fn enabled() -> bool {
        tracing::enabled!(target: TRACE_TARGET, tracing::Level::INFO)
    }

    /// One span per firing in `fires` of `s`, from `started` to `finished` (the scheduler's
    /// clock), with the ids of [`firing_span_context`]. A root span: nothing runs inside it.
    pub fn firings(
        s: &Schedule,
        fires: &[DateTime<Utc>],
        jobs_created: usize,
        started: DateTime<Utc>,
        finished: DateTime<Utc>,
    ) {
        if !enabled() {
            return;
        }
        let tracer = opentelemetry::global::tracer("kairos");
        for fire_at in fires {
            let pinned = firing_span_context(&s.id, *fire_at);
            let builder = tracer
                .span_builder(format!("fire {}", s.kind))
                .with_kind(SpanKind::Producer)
                .with_start_time(started)
                .with_attributes([
                    KeyValue::new("kairos.schedule_id", s.id.clone()),
                    KeyValue::new("kairos.kind", s.kind.as_str().to_string()),
                    KeyValue::new(
                        "kairos.fire_at",
                        fire_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                    ),
                    KeyValue::new("kairos.jobs_created", jobs_created as i64),
                ]);
            PINNED.with(|p| p.set(Some((pinned.trace_id(), pinned.span_id()))));
            let mut span = tracer.build_with_context(builder, &Context::new());
            PINNED.with(|p| p.set(None));
            span.end_with_timestamp(finished.into());
        }
    }

    /// The span of one attempt of `job`: its id, kind, channel, schedule and attempt number;
    /// the outcome is recorded by [`attempt_outcome`]. A job of a schedule links to the
    /// firing that created it. Disabled (nothing built) with tracing off.
    pub fn attempt(job: &Job) -> tracing::Span {
        let span = tracing::info_span!(
            target: TRACE_TARGET,
            "job attempt",
            otel.name = %format_args!("attempt {}", job.kind),
            otel.kind = "consumer",
            otel.status_code = Empty,
            kairos.job_id = %job.id,
            kairos.kind = %job.kind,
            kairos.channel = job.channel.as_deref(),
            kairos.schedule_id = job.schedule_id.as_deref(),
            kairos.attempt = job.attempt,
            kairos.outcome = Empty,
            kairos.error_class = Empty,
            kairos.status_code = Empty,
        );
        if span.is_disabled() {
            return span;
        }
        // A root span of its own trace (a retry hours later is not part of the firing's
        // trace), linked to the firing.
        let _ = span.set_parent(Context::new());
        if let (Some(schedule), Some(fire_at)) = (&job.schedule_id, job.fire_at) {
            span.add_link(firing_span_context(schedule, fire_at));
        }
        span
    }

    /// Record an attempt's outcome on its span.
    pub fn attempt_outcome(span: &tracing::Span, outcome: &Outcome) {
        if span.is_disabled() {
            return;
        }
        span.record(
            "kairos.outcome",
            kairos_core::AttemptOutcome::of(outcome).as_str(),
        );
        let status = match outcome {
            Outcome::Delivered { status_code, .. } => *status_code,
            Outcome::Failed(f) => {
                span.record("kairos.error_class", f.class.as_str());
                span.record("otel.status_code", "error");
                f.status_code
            }
            Outcome::Skipped(_) => None,
        };
        if let Some(code) = status {
            span.record("kairos.status_code", code);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::spans::firing_span_context;
    use chrono::TimeZone;

    /// A firing's span ids are a function of its schedule and nominal time only: the same
    /// on every call (every node), different for another schedule or time, valid and sampled.
    #[test]
    fn firing_span_ids_are_derived_from_schedule_and_fire_time() {
        let t = chrono::Utc
            .with_ymd_and_hms(2026, 11, 29, 9, 0, 0)
            .single()
            .expect("time");
        let a = firing_span_context("sch_1", t);
        assert_eq!(a, firing_span_context("sch_1", t));
        assert!(a.is_valid() && a.is_sampled() && a.is_remote());
        let other_schedule = firing_span_context("sch_2", t);
        let other_time = firing_span_context("sch_1", t + chrono::Duration::milliseconds(1));
        for b in [other_schedule, other_time] {
            assert_ne!(a.trace_id(), b.trace_id());
            assert_ne!(a.span_id(), b.span_id());
        }
    }
}
