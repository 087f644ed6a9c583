//! Hard timeouts and time budgets.
//!
//! Every external call has a timeout, so a silent hang becomes a retryable failure. A job may
//! have a *deadline* (its kind declares one, or the request gives one): the longest it may take
//! from its first attempt to its last, waits included. A retry policy whose worst case —
//! attempts × timeout + the sum of the waits, each wait as long as the other side's honoured
//! `Retry-After` (up to the policy's `retry_after_cap`) and the jitter can make it — exceeds the
//! deadline is rejected when the job or schedule is saved, with the arithmetic in the error,
//! instead of being discovered at 06:15 on a bad day. The engine also enforces the deadline
//! at run time (a retry that would start past it ends the job dead), so the check is a promise
//! made early, not the only guard. Which kind has which deadline is the engine's kind layer's
//! business.

use crate::error::Error;
use crate::retry::{RetryPolicy, format_duration};
use std::time::Duration;

/// The default timeout of one external call (an HTTP call, a model call): 2 minutes.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// The longest timeout a job may ask for one call: 10 minutes.
pub const MAX_CALL_TIMEOUT: Duration = Duration::from_secs(600);

/// Reject `policy` if its worst case with `timeout` per attempt exceeds `deadline` (no
/// deadline: nothing to check), counting every wait as the longest the policy can make it: the
/// larger of its delay and the honoured `Retry-After` (up to `retry_after_cap`), plus the most
/// jitter. The error names the field `retry` and shows the arithmetic, e.g. `worst case 54m
/// 30s exceeds the deadline of 15m (transient: 4 attempts × 2m timeout + waits 15m 30s + 15m
/// 30s + 15m 30s (each the larger of the delay and a Retry-After of up to 15m, plus up to 10%
/// jitter, at most 30s) = 54m 30s)`.
pub fn check_budget(
    policy: &RetryPolicy,
    timeout: Duration,
    deadline: Option<Duration>,
) -> Result<(), Error> {
    let Some(deadline) = deadline else {
        return Ok(());
    };
    refuse_over(policy.worst_case_with_retry_after(timeout), deadline, true)
}

/// [`check_budget`] on the policy's delays alone (no `Retry-After`, no jitter): for a kind
/// whose fixed deadline no honoured `Retry-After` could ever fit (the digest's 15 minutes
/// against a 15-minute cap) and which the engine enforces at run time instead.
pub fn check_budget_without_retry_after(
    policy: &RetryPolicy,
    timeout: Duration,
    deadline: Option<Duration>,
) -> Result<(), Error> {
    let Some(deadline) = deadline else {
        return Ok(());
    };
    refuse_over(policy.worst_case(timeout), deadline, false)
}

fn refuse_over(
    (worst, why): (Duration, String),
    deadline: Duration,
    retry_after: bool,
) -> Result<(), Error> {
    if worst <= deadline {
        return Ok(());
    }
    let cap = if retry_after {
        ", a lower retry.retry_after_cap"
    } else {
        ""
    };
    Err(Error::invalid(
        "retry",
        format!(
            "worst case {} exceeds the deadline of {} ({why}); use fewer attempts, \
             shorter delays{cap} or a shorter timeout",
            format_duration(worst),
            format_duration(deadline),
        ),
    ))
}

/// Parse and check a call timeout given by a user (`"2m"`, `"30s"`): more than 0 and at most
/// [`MAX_CALL_TIMEOUT`]. The error names `field`.
pub fn parse_call_timeout(field: &str, s: &str) -> Result<Duration, Error> {
    let d = crate::retry::parse_duration(field, s)?;
    if d.is_zero() || d > MAX_CALL_TIMEOUT {
        return Err(Error::invalid(
            field,
            format!(
                "must be more than 0 and at most {}",
                format_duration(MAX_CALL_TIMEOUT)
            ),
        ));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retry::RetrySpec;

    fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    /// The seed's run limit of a daily digest.
    const FIFTEEN_MINUTES: Duration = Duration::from_secs(15 * 60);

    /// The seed's own numbers fit: 4 × 2 min + 15 s + 45 s + 135 s = 11 min 15 s ≤ 15 min.
    #[test]
    fn default_http_policy_fits_the_digest_deadline_s4_7() {
        let p = RetryPolicy::http_call();
        assert_eq!(
            check_budget_without_retry_after(&p, DEFAULT_CALL_TIMEOUT, Some(FIFTEEN_MINUTES)),
            Ok(())
        );
        assert_eq!(p.worst_case(DEFAULT_CALL_TIMEOUT).0, s(675));
    }

    /// Budget rejection: a 5-minute timeout makes the worst case 23 min 15 s, which exceeds 15
    /// minutes; the error names `retry` and shows every term of the sum.
    #[test]
    fn budget_rejection_shows_the_arithmetic_s4_7() {
        let p = RetryPolicy::http_call();
        let e = check_budget_without_retry_after(&p, s(300), Some(FIFTEEN_MINUTES)).unwrap_err();
        assert_eq!(e.field(), "retry");
        let why = e.reason();
        for part in [
            "worst case 23m 15s",
            "deadline of 15m",
            "4 attempts × 5m timeout",
            "15s + 45s + 2m 15s",
        ] {
            assert!(why.contains(part), "{part:?} missing from {why:?}");
        }
        // No deadline: anything goes.
        assert_eq!(check_budget_without_retry_after(&p, s(600), None), Ok(()));
    }

    /// The permanent class can be the longest path too: it is checked the same way.
    #[test]
    fn budget_checks_the_longest_class() {
        let spec: RetrySpec = serde_json::from_str(
            r#"{"permanent": {"delays": ["10m"], "max_attempts": 2}, "transient": {"delays": ["1s"], "max_attempts": 2}}"#,
        )
        .unwrap();
        let p = spec.to_policy(&RetryPolicy::http_call()).unwrap();
        let e = check_budget_without_retry_after(&p, s(60), Some(s(600))).unwrap_err();
        assert!(e.reason().contains("permanent: 2 attempts"), "{e}");
        // Exactly at the deadline is allowed.
        assert_eq!(
            check_budget_without_retry_after(&p, s(60), Some(s(720))),
            Ok(())
        );
    }

    /// The honest arithmetic: the seed's default HTTP policy with a 15-minute deadline is
    /// refused once each wait may be a 15-minute `Retry-After` plus jitter; the error names
    /// `retry`, the Retry-After and the jitter. A policy with a lower cap fits.
    #[test]
    fn budget_counts_the_honoured_retry_after_and_the_jitter() {
        let p = RetryPolicy::http_call();
        let e = check_budget(&p, DEFAULT_CALL_TIMEOUT, Some(FIFTEEN_MINUTES)).unwrap_err();
        assert_eq!(e.field(), "retry");
        let why = e.reason();
        for part in [
            "worst case 54m 30s",
            "deadline of 15m",
            "waits 15m 30s + 15m 30s + 15m 30s",
            "Retry-After of up to 15m",
            "jitter",
            "retry.retry_after_cap",
        ] {
            assert!(why.contains(part), "{part:?} missing from {why:?}");
        }
        // Cap the honoured Retry-After at 1 minute: 4 × 1m + waits (1m 6s + 1m 6s + 2m 28.5s)
        // = 8m 40.5s fits 15 minutes; the delays alone would have passed 54m 30s.
        let mut capped = p.clone();
        capped.retry_after_cap = s(60);
        assert_eq!(check_budget(&capped, s(60), Some(FIFTEEN_MINUTES)), Ok(()));
        assert_eq!(
            check_budget_without_retry_after(&p, DEFAULT_CALL_TIMEOUT, Some(FIFTEEN_MINUTES)),
            Ok(())
        );
        assert_eq!(check_budget(&p, s(600), None), Ok(()));
    }

    #[test]
    fn call_timeouts_are_bounded() {
        assert_eq!(parse_call_timeout("http.timeout", "2m"), Ok(s(120)));
        assert_eq!(
            parse_call_timeout("http.timeout", "0s")
                .unwrap_err()
                .field(),
            "http.timeout"
        );
        assert!(parse_call_timeout("http.timeout", "11m").is_err());
        assert!(parse_call_timeout("http.timeout", "soon").is_err());
    }
}
