//! Hard timeouts and time budgets.
//!
//! Every external call has a timeout, so a silent hang becomes a retryable failure. A job may
//! have a *deadline* (its kind declares one, or the request gives one): the longest it may take
//! from its first attempt to its last, waits included. A retry policy whose worst case —
//! attempts × timeout + the sum of the waits — exceeds the deadline is rejected when the job or
//! schedule is saved, with the arithmetic in the error, instead of being discovered at 06:15 on
//! a bad day. Which kind has which deadline is the engine's kind layer's business.

use crate::error::Error;
use crate::retry::{RetryPolicy, format_duration};
use std::time::Duration;

/// The default timeout of one external call (an HTTP call, a model call): 2 minutes.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// The longest timeout a job may ask for one call: 10 minutes.
pub const MAX_CALL_TIMEOUT: Duration = Duration::from_secs(600);

/// Reject `policy` if its worst case with `timeout` per attempt exceeds `deadline` (no
/// deadline: nothing to check). The error names the field `retry` and shows the arithmetic,
/// e.g. `worst case 23m 15s exceeds the deadline of 15m (transient: 4 attempts × 5m timeout +
/// waits 15s + 45s + 2m 15s = 23m 15s)`.
pub fn check_budget(
    policy: &RetryPolicy,
    timeout: Duration,
    deadline: Option<Duration>,
) -> Result<(), Error> {
    let Some(deadline) = deadline else {
        return Ok(());
    };
    let (worst, why) = policy.worst_case(timeout);
    if worst > deadline {
        return Err(Error::invalid(
            "retry",
            format!(
                "worst case {} exceeds the deadline of {} ({why}); use fewer attempts, \
                 shorter delays or a shorter timeout",
                format_duration(worst),
                format_duration(deadline),
            ),
        ));
    }
    Ok(())
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
            check_budget(&p, DEFAULT_CALL_TIMEOUT, Some(FIFTEEN_MINUTES)),
            Ok(())
        );
        assert_eq!(p.worst_case(DEFAULT_CALL_TIMEOUT).0, s(675));
    }

    /// Budget rejection: a 5-minute timeout makes the worst case 23 min 15 s, which exceeds 15
    /// minutes; the error names `retry` and shows every term of the sum.
    #[test]
    fn budget_rejection_shows_the_arithmetic_s4_7() {
        let p = RetryPolicy::http_call();
        let e = check_budget(&p, s(300), Some(FIFTEEN_MINUTES)).unwrap_err();
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
        assert_eq!(check_budget(&p, s(600), None), Ok(()));
    }

    /// The permanent class can be the longest path too: it is checked the same way.
    #[test]
    fn budget_checks_the_longest_class() {
        let spec: RetrySpec = serde_json::from_str(
            r#"{"permanent": {"delays": ["10m"], "max_attempts": 2}, "transient": {"delays": ["1s"], "max_attempts": 2}}"#,
        )
        .unwrap();
        let p = spec.to_policy(&RetryPolicy::http_call()).unwrap();
        let e = check_budget(&p, s(60), Some(s(600))).unwrap_err();
        assert!(e.reason().contains("permanent: 2 attempts"), "{e}");
        // Exactly at the deadline is allowed.
        assert_eq!(check_budget(&p, s(60), Some(s(720))), Ok(()));
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
