//! One attempt: running the handler (under its timeout, a panic caught) and turning its
//! outcome into the completion to record. Pure apart from the handler call, so the retry
//! decisions are tested without a store.

use crate::handler::JobContext;
use crate::kinds::{Kind, Kinds};
use chrono::{DateTime, Utc};
use futures::FutureExt;
use kairos_core::retry::RetryDecision;
use kairos_core::{AttemptOutcome, ErrorClass, Failure, Job, Outcome};
use kairos_store::{Attempt, JobComplete, Transition};
use std::panic::AssertUnwindSafe;
use std::time::Duration;
use tracing::Instrument;

use super::ExecutorReport;

/// Run one attempt: the handler under its timeout, a panic caught and turned into a failure;
/// within the attempt's span (with tracing on), which records the outcome.
pub(super) async fn execute(kinds: &Kinds, job: &Job, ctx: &JobContext) -> Outcome {
    let span = crate::telemetry::spans::attempt(job);
    let outcome = run_handler(kinds, job, ctx).instrument(span.clone()).await;
    crate::telemetry::spans::attempt_outcome(&span, &outcome);
    outcome
}

async fn run_handler(kinds: &Kinds, job: &Job, ctx: &JobContext) -> Outcome {
    // A job past its deadline (claimed late, replayed) is not attempted: nothing is sent, and
    // the completion ends it dead.
    if let Some((end, deadline)) = deadline_end(kinds.get(job.kind.as_str()), job)
        && ctx.now >= end
    {
        return Outcome::Failed(Failure::permanent(format!(
            "deadline exceeded: the {} deadline ended at {}; not attempted",
            kairos_core::retry::format_duration(deadline),
            end.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        )));
    }
    // A concurrency key that could not be made (empty, too long, control characters, a
    // template that failed) cannot be enforced: the job fails permanently, saying why
    // (`completion_for` ends it dead), and nothing is sent.
    if let Some(why) = key_problem(job) {
        return Outcome::Failed(Failure::permanent(format!(
            "concurrency key: {why}; not attempted"
        )));
    }
    let Some(handler) = kinds.handler_for(job) else {
        return Outcome::Failed(Failure::permanent(format!(
            "no handler is registered for kind {:?} on this node",
            job.kind.as_str()
        )));
    };
    let timeout = handler.timeout();
    let run = AssertUnwindSafe(handler.handle(job, ctx)).catch_unwind();
    match tokio::time::timeout(timeout, run).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(panic)) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            Outcome::Failed(Failure::transient(format!("handler panicked: {msg}")))
        }
        Err(_) => Outcome::Failed(Failure::transient(format!(
            "timed out after {}",
            kairos_core::retry::format_duration(timeout)
        ))),
    }
}

/// Turn an attempt's outcome into the completion to record. Pure: the retry policy decides
///; a rate limit waits without spending an attempt.
pub fn completion_for(
    kind: &dyn Kind,
    job: &Job,
    outcome: Outcome,
    started: DateTime<Utc>,
    finished: DateTime<Utc>,
    node: &str,
    jitter: f64,
) -> JobComplete {
    let mut attempt = Attempt {
        job_id: job.id.clone(),
        attempt: job.attempt,
        started_at: started,
        finished_at: finished,
        outcome: AttemptOutcome::of(&outcome),
        error_class: None,
        status_code: None,
        error: None,
        response: None,
        provider_id: None,
        node: Some(node.to_string()),
    };
    let policy = job.retry.clone().unwrap_or_else(|| kind.default_retry());
    let transition = match outcome {
        Outcome::Delivered {
            provider_id,
            status_code,
            response,
        } => {
            attempt.provider_id = provider_id;
            attempt.status_code = status_code.map(i32::from);
            attempt.response = response;
            Transition::Succeeded
        }
        Outcome::Skipped(reason) => {
            attempt.error = Some(reason.clone());
            Transition::Skipped(reason)
        }
        Outcome::Failed(f) => {
            attempt.error_class = Some(f.class);
            attempt.status_code = f.status_code.map(i32::from);
            attempt.error = Some(f.message.clone());
            attempt.response = f.response.clone();
            if f.disable_endpoint {
                // 410 Gone: the receiver asked never to be called again; retrying is pointless.
                Transition::Dead
            } else if f.class == ErrorClass::RateLimited
                && finished - job.created_at < RATE_LIMIT_PATIENCE
            {
                let wait = f
                    .retry_after
                    .unwrap_or(Duration::from_secs(1))
                    .min(policy.retry_after_cap);
                Transition::Retry {
                    run_at: after(finished, wait),
                    refund_attempt: true,
                }
            } else {
                let n = u32::try_from(job.attempt.max(1)).unwrap_or(1);
                match policy.decide(n, f.class, f.retry_after, jitter) {
                    RetryDecision::RetryIn(d) => Transition::Retry {
                        run_at: after(finished, d),
                        refund_attempt: false,
                    },
                    RetryDecision::Dead => Transition::Dead,
                }
            }
        }
    };
    let transition = if key_problem(job).is_some() {
        Transition::Dead
    } else {
        within_deadline(kind, job, transition, &mut attempt)
    };
    JobComplete {
        id: job.id.clone(),
        lease_token: job.lease_token.clone().unwrap_or_default(),
        attempt,
        transition,
        record_exposure: kind.records_exposure(),
    }
}

/// Why a job's concurrency key cannot be enforced, if it has one that cannot.
fn key_problem(job: &Job) -> Option<String> {
    job.concurrency.as_ref().and_then(|c| c.problem())
}

/// When a job's deadline ends, and the deadline: the kind's (`digest`, 15 minutes) or the
/// job's own (`http.deadline`), counted from the job's firing (or its creation, if later: a
/// catch-up, or a job enqueued directly).
pub fn deadline_end(kind: &dyn Kind, job: &Job) -> Option<(DateTime<Utc>, Duration)> {
    let deadline = kind.job_deadline(job)?;
    let start = job.fire_at.unwrap_or(job.created_at).max(job.created_at);
    Some((after(start, deadline), deadline))
}

/// A job with a deadline never starts an attempt past it: a retry that would start later — a
/// long `Retry-After`, a policy saved before the node's timeouts grew — is not scheduled; the
/// job ends `dead` instead, and the attempt says why. The save-time budget check keeps this
/// rare; this makes it hold.
fn within_deadline(kind: &dyn Kind, job: &Job, t: Transition, attempt: &mut Attempt) -> Transition {
    let Transition::Retry { run_at, .. } = &t else {
        return t;
    };
    let Some((end, deadline)) = deadline_end(kind, job) else {
        return t;
    };
    if *run_at <= end {
        return t;
    }
    let note = format!(
        "deadline exceeded: the retry at {} would start after the {} deadline ({})",
        run_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        kairos_core::retry::format_duration(deadline),
        end.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
    );
    attempt.error = Some(match attempt.error.take() {
        Some(e) => format!("{e}; {note}"),
        None => note,
    });
    Transition::Dead
}

/// How long a job may keep waiting out rate limits without spending attempts. Past it, a
/// rate-limited attempt counts like a transient failure, so a job that is always rate-limited
/// ends `dead` instead of retrying forever.
const RATE_LIMIT_PATIENCE: chrono::Duration = chrono::Duration::hours(24);

/// `t + d`, saturating instead of panicking on overflow (a delay comes partly from the other
/// side's `Retry-After`).
fn after(t: DateTime<Utc>, d: Duration) -> DateTime<Utc> {
    t.checked_add_signed(to_chrono(d))
        .unwrap_or(DateTime::<Utc>::MAX_UTC)
}

pub(super) fn to_chrono(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

pub(super) fn log_completion(job: &Job, c: &JobComplete) {
    // One log line and the metrics per attempt: ids, classes, timings; never the
    // payload or the target.
    crate::telemetry::attempt_done(job, c);
}

pub(super) fn tally(report: &mut ExecutorReport, c: &JobComplete) {
    match c.transition {
        Transition::Succeeded => report.succeeded += 1,
        Transition::Skipped(_) => report.skipped += 1,
        Transition::Retry { .. } => report.retried += 1,
        Transition::Dead => report.dead += 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kairos_core::{JobKind, JobState, RetryPolicy};

    fn kinds() -> Kinds {
        Kinds::builtin()
    }

    fn job(retry: RetryPolicy) -> Job {
        let t0 = DateTime::parse_from_rfc3339("2026-11-29T09:00:00Z")
            .map(|t| t.to_utc())
            .unwrap();
        Job {
            id: "job_1".into(),
            kind: JobKind::new("webhook"),
            state: JobState::Running,
            payload: serde_json::json!({}),
            endpoint_id: None,
            schedule_id: None,
            fire_at: None,
            period_key: None,
            channel: None,
            dedupe_key: None,
            attempt: 1,
            retry: Some(retry),
            run_at: t0,
            created_at: t0,
            finished_at: None,
            locked_by: Some("n".into()),
            lease_token: Some("lease_1".into()),
            lease_expires_at: None,
            last_error: None,
            reason: None,
            concurrency: None,
            wait_reason: None,
        }
    }

    /// A job whose concurrency key could not be made is not attempted: it fails permanently,
    /// dead at once, and the attempt says why.
    #[tokio::test]
    async fn a_failed_concurrency_key_ends_the_job_dead_saying_why() {
        let mut j = job(RetryPolicy::notification());
        j.concurrency = Some(kairos_core::Concurrency::rendered(String::new(), 1));
        let ctx = JobContext {
            now: j.run_at,
            node: "n".into(),
        };
        let outcome = run_handler(&kinds(), &j, &ctx).await;
        let Outcome::Failed(f) = &outcome else {
            panic!("{outcome:?}")
        };
        assert_eq!(f.class, ErrorClass::Permanent);
        assert!(f.message.contains("rendered empty"), "{}", f.message);
        let c = completion_for(
            kinds().get(j.kind.as_str()),
            &j,
            outcome,
            j.run_at,
            j.run_at,
            "n",
            0.5,
        );
        assert_eq!(c.transition, Transition::Dead);
    }

    /// A huge `Retry-After` (from the other side) with an uncapped policy built in code must
    /// not overflow the clock and panic the completion.
    #[test]
    fn huge_retry_after_saturates_instead_of_panicking() {
        let mut policy = RetryPolicy::notification();
        policy.retry_after_cap = Duration::MAX;
        let j = job(policy);
        let mut f = Failure::transient("HTTP 503");
        f.retry_after = Some(Duration::MAX);
        let c = completion_for(
            kinds().get(j.kind.as_str()),
            &j,
            Outcome::Failed(f),
            j.run_at,
            j.run_at,
            "n",
            0.5,
        );
        match c.transition {
            Transition::Retry {
                run_at,
                refund_attempt: false,
            } => assert!(run_at > j.run_at),
            other => panic!("expected a retry, got {other:?}"),
        }
    }

    /// A rate limit waits without spending an attempt, but not forever: after a day of rate
    /// limits the attempts count, so the job can end dead.
    #[test]
    fn rate_limits_refund_attempts_only_for_a_day() {
        let mut j = job(RetryPolicy::notification());
        j.attempt = 4;
        let limited = || Outcome::Failed(Failure::new(ErrorClass::RateLimited, "HTTP 429"));
        let soon = j.created_at + chrono::Duration::hours(1);
        let c = completion_for(
            kinds().get(j.kind.as_str()),
            &j,
            limited(),
            soon,
            soon,
            "n",
            0.0,
        );
        assert!(
            matches!(
                c.transition,
                Transition::Retry {
                    refund_attempt: true,
                    ..
                }
            ),
            "{c:?}"
        );
        let late = j.created_at + chrono::Duration::hours(25);
        let c = completion_for(
            kinds().get(j.kind.as_str()),
            &j,
            limited(),
            late,
            late,
            "n",
            0.0,
        );
        assert_eq!(
            c.transition,
            Transition::Dead,
            "attempts spent after a day of rate limits"
        );
    }

    /// A 410 Gone is final at once: the receiver asked never to be called again.
    #[test]
    fn gone_is_dead_without_retry() {
        let j = job(RetryPolicy::notification());
        let mut f = Failure::permanent("HTTP 410");
        f.disable_endpoint = true;
        let c = completion_for(
            kinds().get(j.kind.as_str()),
            &j,
            Outcome::Failed(f),
            j.run_at,
            j.run_at,
            "n",
            0.0,
        );
        assert_eq!(c.transition, Transition::Dead);
    }

    /// The deadline at run time: a digest's retry that would start after its 15-minute deadline (here
    /// a 14-minute `Retry-After` after a failure at minute 2) ends the job dead, saying why;
    /// one that starts within it is a retry; kinds without a deadline are not affected.
    #[test]
    fn digest_retry_past_its_deadline_is_dead_s4_7() {
        let mut j = job(RetryPolicy::http_call());
        j.kind = JobKind("digest".into());
        j.fire_at = Some(j.created_at);
        let at = j.created_at + chrono::Duration::minutes(2);
        let mut f = Failure::transient("HTTP 503");
        f.retry_after = Some(Duration::from_secs(14 * 60));
        let c = completion_for(
            kinds().get(j.kind.as_str()),
            &j,
            Outcome::Failed(f.clone()),
            at,
            at,
            "n",
            0.0,
        );
        assert_eq!(c.transition, Transition::Dead);
        let error = c.attempt.error.unwrap_or_default();
        assert!(error.starts_with("HTTP 503; deadline exceeded"), "{error}");
        assert!(error.contains("15m deadline"), "{error}");
        // Within the deadline: a retry.
        f.retry_after = Some(Duration::from_secs(60));
        let c = completion_for(
            kinds().get(j.kind.as_str()),
            &j,
            Outcome::Failed(f.clone()),
            at,
            at,
            "n",
            0.0,
        );
        assert!(matches!(c.transition, Transition::Retry { .. }), "{c:?}");
        // Another kind with the same wait: a retry, no deadline.
        j.kind = JobKind::new("webhook");
        f.retry_after = Some(Duration::from_secs(14 * 60));
        let c = completion_for(
            kinds().get(j.kind.as_str()),
            &j,
            Outcome::Failed(f),
            at,
            at,
            "n",
            0.0,
        );
        assert!(matches!(c.transition, Transition::Retry { .. }), "{c:?}");
    }
}
