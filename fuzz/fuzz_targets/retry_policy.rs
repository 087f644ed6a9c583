//! Retry policies as the API reads them (`retry` in a job or schedule: JSON, durations as
//! text). Input: the JSON document; also tried as a single duration.
//!
//! Beyond "no panic": an accepted policy validates, survives a JSON round trip (the form it is
//! stored in) unchanged, and decides as documented for every attempt: dead exactly from the
//! class's `max_attempts` on, otherwise a delay no shorter than the policy's and no longer than
//! the larger of it and the capped `Retry-After` plus 10 % (at most 30 s) of jitter. A duration
//! of at most 30 days (the longest delay) formats and parses back to itself.
#![no_main]

use kairos_core::ErrorClass;
use kairos_core::retry::{RetryDecision, RetryPolicy, RetrySpec, format_duration, parse_duration};
use kairos_fuzz::pick;
use libfuzzer_sys::fuzz_target;
use std::time::Duration;

const THIRTY_DAYS: Duration = Duration::from_secs(30 * 24 * 3600);

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if text.len() <= 256
        && let Ok(d) = parse_duration("retry.delays[0]", &text)
        && d <= THIRTY_DAYS
    {
        let shown = format_duration(d);
        assert_eq!(
            parse_duration("x", &shown).ok(),
            Some(d),
            "{text:?} shown as {shown:?}"
        );
    }

    // The same JSON, read as a spec on top of each kind's default, must agree with itself.
    if let Ok(spec) = serde_json::from_slice::<RetrySpec>(data) {
        for base in [RetryPolicy::notification(), RetryPolicy::http_call()] {
            if let Ok(p) = spec.to_policy(&base) {
                check(&p, data);
            }
        }
    }
    let Ok(p) = serde_json::from_slice::<RetryPolicy>(data) else {
        return;
    };
    check(&p, data);
});

fn check(p: &RetryPolicy, data: &[u8]) {
    assert!(
        p.validate().is_ok(),
        "an accepted policy does not validate: {p:?}"
    );
    let json = serde_json::to_string(p).expect("a policy serializes");
    let back: RetryPolicy = serde_json::from_str(&json)
        .unwrap_or_else(|e| panic!("stored form {json} does not read back: {e}"));
    assert_eq!(&back, p, "stored form {json} reads back differently");

    let h = pick(data);
    let jitter = (h % 1000) as f64 / 1000.0;
    let retry_after = (h & 1 == 1).then(|| Duration::from_secs(h % 100_000));
    for (class, c) in [
        (ErrorClass::Transient, &p.transient),
        (ErrorClass::Permanent, &p.permanent),
    ] {
        for attempt in 0..=c.max_attempts + 1 {
            match p.decide(attempt, class, retry_after, jitter) {
                RetryDecision::Dead => assert!(attempt >= c.max_attempts, "dead at {attempt}"),
                RetryDecision::RetryIn(d) => {
                    assert!(
                        attempt < c.max_attempts,
                        "retry after the last attempt {attempt}"
                    );
                    let base = c
                        .delays
                        .get((attempt.max(1) - 1) as usize)
                        .or(c.delays.last())
                        .copied()
                        .unwrap_or_default();
                    let asked = retry_after.unwrap_or_default().min(p.retry_after_cap);
                    let delay = base.max(asked);
                    assert!(d >= delay, "{d:?} is shorter than the delay {delay:?}");
                    let spread = Duration::from_secs_f64((delay.as_secs_f64() * 0.1).min(30.0));
                    assert!(
                        d <= delay + spread,
                        "{d:?} is more than {delay:?} + {spread:?}"
                    );
                }
            }
        }
    }
    let _ = p.worst_case(Duration::from_secs(h % 3600));
}
