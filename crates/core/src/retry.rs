//! Retry policies are data: delays per error class and a maximum of attempts.
//!
//! Hand-written rather than a retry crate (`backoff`, `backon`): those run a loop in one
//! process, while here the policy is stored with each job and schedule, and the next attempt
//! is a row's `run_at` that survives restarts and moves between nodes.
//!
//! A failure of class `c` on attempt `n` (1-based) is retried after `delays_c[n-1]` (the last
//! delay repeats) unless `n` has reached the class's `max_attempts`, in which case the job is
//! dead. `Retry-After` from the other side is honoured when it is longer than the policy's
//! delay, up to a cap. Jitter is added *after* the delay, never before it, so a retry never
//! arrives earlier than asked and retries of many jobs do not arrive in lockstep.

use crate::error::Error;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// The policy of one error class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassPolicy {
    /// Delay before attempt `n+1` after attempt `n` failed; the last one repeats.
    pub delays: Vec<Duration>,
    /// Attempts in all (the first one included) after which a failure of this class is final.
    pub max_attempts: u32,
}

/// A retry policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Failures that waiting may fix.
    pub transient: ClassPolicy,
    /// Failures that waiting will not fix.
    pub permanent: ClassPolicy,
    /// The longest `Retry-After` honoured.
    pub retry_after_cap: Duration,
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryDecision {
    /// Try again after this delay.
    RetryIn(Duration),
    /// Attempts are spent: dead-letter the job.
    Dead,
}

const MAX_ATTEMPTS_LIMIT: u32 = 100;
/// The most delays one class may list (more could never be used: attempts are capped at 100).
pub const MAX_DELAYS: usize = 100;
const MAX_DELAY: Duration = Duration::from_secs(30 * 24 * 3600);

fn mins(n: u64) -> Duration {
    Duration::from_secs(60 * n)
}

impl RetryPolicy {
    /// Notifications (webhook, email), as the source requirements count them: three attempts, a failure
    /// waiting 1 min, then 5 min, and the third failure is final. The seed's 30 min step is
    /// kept as the third delay (its third failure dead-letters first, so it is only reached
    /// by a policy that allows more attempts). A permanent failure (a 400, an invalid or
    /// private target) is final at once: waiting will not fix it, and re-sending a request the
    /// receiver refused is noise.
    pub fn notification() -> Self {
        RetryPolicy {
            transient: ClassPolicy {
                delays: vec![mins(1), mins(5), mins(30)],
                max_attempts: 3,
            },
            permanent: ClassPolicy {
                delays: Vec::new(),
                max_attempts: 1,
            },
            retry_after_cap: mins(60),
        }
    }

    /// HTTP calls and digests: transient 15 s, 45 s, 135 s (4 attempts); permanent 1 s,
    /// 2 s (3 attempts).
    pub fn http_call() -> Self {
        RetryPolicy {
            transient: ClassPolicy {
                delays: vec![
                    Duration::from_secs(15),
                    Duration::from_secs(45),
                    Duration::from_secs(135),
                ],
                max_attempts: 4,
            },
            permanent: ClassPolicy {
                delays: vec![Duration::from_secs(1), Duration::from_secs(2)],
                max_attempts: 3,
            },
            retry_after_cap: mins(15),
        }
    }

    /// A policy with the same delays and maximum for both classes.
    pub fn uniform(delays: Vec<Duration>, max_attempts: u32) -> Self {
        let class = ClassPolicy {
            delays,
            max_attempts,
        };
        RetryPolicy {
            transient: class.clone(),
            permanent: class,
            retry_after_cap: mins(60),
        }
    }

    /// Check the policy's bounds; the error names the field.
    pub fn validate(&self) -> Result<(), Error> {
        if self.retry_after_cap > MAX_DELAY {
            return Err(Error::invalid(
                "retry.retry_after_cap",
                "must be at most 30 days",
            ));
        }
        for (name, c) in [
            ("transient", &self.transient),
            ("permanent", &self.permanent),
        ] {
            if c.max_attempts == 0 || c.max_attempts > MAX_ATTEMPTS_LIMIT {
                return Err(Error::invalid(
                    format!("retry.{name}.max_attempts"),
                    format!("must be between 1 and {MAX_ATTEMPTS_LIMIT}"),
                ));
            }
            check_delay_count(&format!("retry.{name}.delays"), c.delays.len())?;
            if c.max_attempts > 1 && c.delays.is_empty() {
                return Err(Error::invalid(
                    format!("retry.{name}.delays"),
                    "must list at least one delay when max_attempts is more than 1",
                ));
            }
            for (i, d) in c.delays.iter().enumerate() {
                if *d > MAX_DELAY {
                    return Err(Error::invalid(
                        format!("retry.{name}.delays[{i}]"),
                        "must be at most 30 days",
                    ));
                }
            }
        }
        Ok(())
    }

    /// The largest number of attempts any class allows.
    pub fn max_attempts(&self) -> u32 {
        self.transient.max_attempts.max(self.permanent.max_attempts)
    }

    /// What to do after attempt `attempt` (1-based) failed with `class`.
    ///
    /// `retry_after` is what the other side asked for; `jitter` in `[0, 1)` spreads retries by
    /// up to 10 % of the delay (at most 30 s), added after the delay.
    pub fn decide(
        &self,
        attempt: u32,
        class: ErrorClass,
        retry_after: Option<Duration>,
        jitter: f64,
    ) -> RetryDecision {
        let c = match class {
            ErrorClass::Permanent => &self.permanent,
            // A rate limit does not spend an attempt; the engine handles it before calling
            // this, and if it does call, it is treated as transient.
            ErrorClass::Transient | ErrorClass::RateLimited => &self.transient,
        };
        if attempt >= c.max_attempts {
            return RetryDecision::Dead;
        }
        let idx = (attempt.max(1) - 1) as usize;
        let base = c
            .delays
            .get(idx)
            .or(c.delays.last())
            .copied()
            .unwrap_or_default();
        let asked = retry_after
            .map(|d| d.min(self.retry_after_cap))
            .unwrap_or_default();
        let delay = base.max(asked);
        // A NaN draw would make `from_secs_f64` panic: treat anything not finite as no jitter.
        let jitter = if jitter.is_finite() {
            jitter.clamp(0.0, 0.999_999)
        } else {
            0.0
        };
        let spread = (delay.as_secs_f64() * 0.1).min(30.0) * jitter;
        RetryDecision::RetryIn(delay.saturating_add(Duration::from_secs_f64(spread)))
    }

    /// The worst case of a job under this policy: every attempt runs into `timeout` and every
    /// wait is taken. Transient is the class with the longest path.
    pub fn worst_case(&self, timeout: Duration) -> (Duration, String) {
        self.worst_case_of(timeout, false)
    }

    /// The worst case when the other side also answers every failure with the longest
    /// `Retry-After` this policy honours (`retry_after_cap`) and every wait draws the most
    /// jitter: each wait is what [`RetryPolicy::decide`] can return at most, the larger of
    /// the delay and the cap, plus 10 % of it (at most 30 s).
    pub fn worst_case_with_retry_after(&self, timeout: Duration) -> (Duration, String) {
        self.worst_case_of(timeout, true)
    }

    fn worst_case_of(&self, timeout: Duration, retry_after: bool) -> (Duration, String) {
        let mut worst = (Duration::ZERO, String::new());
        for (name, c) in [
            ("transient", &self.transient),
            ("permanent", &self.permanent),
        ] {
            let waits: Vec<Duration> = (0..c.max_attempts.saturating_sub(1) as usize)
                .map(|i| {
                    c.delays
                        .get(i)
                        .or(c.delays.last())
                        .copied()
                        .unwrap_or_default()
                })
                .map(|d| {
                    if retry_after {
                        let d = d.max(self.retry_after_cap);
                        d.saturating_add(Duration::from_secs_f64((d.as_secs_f64() * 0.1).min(30.0)))
                    } else {
                        d
                    }
                })
                .collect();
            // Saturating: the inputs are bounded by `validate`, but this must never panic.
            let total = timeout.saturating_mul(c.max_attempts).saturating_add(
                waits
                    .iter()
                    .fold(Duration::ZERO, |a, w| a.saturating_add(*w)),
            );
            let how = if retry_after {
                format!(
                    " (each the larger of the delay and a Retry-After of up to {}, plus up to \
                     10% jitter, at most 30s)",
                    humantime::format_duration(self.retry_after_cap)
                )
            } else {
                String::new()
            };
            let explain = format!(
                "{name}: {} attempts × {} timeout + waits {}{how} = {}",
                c.max_attempts,
                humantime::format_duration(timeout),
                waits
                    .iter()
                    .map(|d| humantime::format_duration(*d).to_string())
                    .collect::<Vec<_>>()
                    .join(" + "),
                humantime::format_duration(total)
            );
            if total > worst.0 {
                worst = (total, explain);
            }
        }
        worst
    }
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy::notification()
    }
}

/// The JSON form of a policy. Accepts the short form `{"delays": ["1s","2s"], "max_attempts": 3}`
/// (both classes alike) and the full form `{"transient": {...}, "permanent": {...}}`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = RetryBody))]
#[serde(deny_unknown_fields)]
pub struct RetrySpec {
    /// Delays for both classes, as durations (`"30s"`, `"5m"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delays: Option<Vec<String>>,
    /// Maximum attempts for both classes (default: number of delays + 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
    /// The transient class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transient: Option<ClassSpec>,
    /// The permanent class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permanent: Option<ClassSpec>,
    /// Longest `Retry-After` honoured (`"1h"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_cap: Option<String>,
}

/// The JSON form of one class.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = RetryClassBody))]
#[serde(deny_unknown_fields)]
pub struct ClassSpec {
    /// Delays, as durations.
    #[serde(default)]
    pub delays: Vec<String>,
    /// Maximum attempts (default: number of delays + 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
}

/// Parse a duration like `"1s"`, `"5m"`, `"1h 30m"`, `"250ms"`; the error names `field`.
pub fn parse_duration(field: &str, s: &str) -> Result<Duration, Error> {
    humantime::parse_duration(s.trim()).map_err(|e| {
        Error::invalid(
            field,
            format!("{s:?} is not a duration like \"30s\" or \"5m\": {e}"),
        )
    })
}

fn parse_delays(field: &str, delays: &[String]) -> Result<Vec<Duration>, Error> {
    // Before parsing: a list of 100 000 delays is refused without reading it.
    check_delay_count(field, delays.len())?;
    delays
        .iter()
        .enumerate()
        .map(|(i, d)| parse_duration(&format!("{field}[{i}]"), d))
        .collect()
}

fn check_delay_count(field: &str, n: usize) -> Result<(), Error> {
    if n > MAX_DELAYS {
        return Err(Error::invalid(
            field,
            format!("lists {n} delays; at most {MAX_DELAYS} are allowed"),
        ));
    }
    Ok(())
}

fn format_delays(delays: &[Duration]) -> Vec<String> {
    delays
        .iter()
        .map(|d| humantime::format_duration(*d).to_string())
        .collect()
}

impl RetrySpec {
    /// Build a policy, starting from `base` (the kind's default) for what is not given.
    pub fn to_policy(&self, base: &RetryPolicy) -> Result<RetryPolicy, Error> {
        let mut p = base.clone();
        if let Some(delays) = &self.delays {
            let d = parse_delays("retry.delays", delays)?;
            let max = self.max_attempts.unwrap_or(d.len() as u32 + 1);
            p.transient = ClassPolicy {
                delays: d.clone(),
                max_attempts: max,
            };
            p.permanent = ClassPolicy {
                delays: d,
                max_attempts: max,
            };
        } else if let Some(max) = self.max_attempts {
            p.transient.max_attempts = max;
            p.permanent.max_attempts = max;
        }
        for (name, spec, target) in [
            ("transient", &self.transient, &mut p.transient),
            ("permanent", &self.permanent, &mut p.permanent),
        ] {
            if let Some(c) = spec {
                let d = parse_delays(&format!("retry.{name}.delays"), &c.delays)?;
                let max = c.max_attempts.unwrap_or(d.len() as u32 + 1);
                *target = ClassPolicy {
                    delays: d,
                    max_attempts: max,
                };
            }
        }
        if let Some(cap) = &self.retry_after_cap {
            p.retry_after_cap = parse_duration("retry.retry_after_cap", cap)?;
        }
        p.validate()?;
        Ok(p)
    }

    /// The full form of a policy.
    pub fn from_policy(p: &RetryPolicy) -> Self {
        RetrySpec {
            delays: None,
            max_attempts: None,
            transient: Some(ClassSpec {
                delays: format_delays(&p.transient.delays),
                max_attempts: Some(p.transient.max_attempts),
            }),
            permanent: Some(ClassSpec {
                delays: format_delays(&p.permanent.delays),
                max_attempts: Some(p.permanent.max_attempts),
            }),
            retry_after_cap: Some(humantime::format_duration(p.retry_after_cap).to_string()),
        }
    }
}

impl Serialize for RetryPolicy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        RetrySpec::from_policy(self).serialize(s)
    }
}

impl<'de> Deserialize<'de> for RetryPolicy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let spec = RetrySpec::deserialize(d)?;
        spec.to_policy(&RetryPolicy::default())
            .map_err(serde::de::Error::custom)
    }
}

/// Format a duration for people (`"1m 30s"`).
pub fn format_duration(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// How a failure should be treated by the retry policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// Waiting may fix it: 408, 429, 5xx, connection refused/reset, timeouts.
    Transient,
    /// Waiting will not fix it: 400, 401, 403, 404, 410, 422, invalid address.
    Permanent,
    /// The provider asked us to slow down; does not spend an attempt.
    RateLimited,
}

impl ErrorClass {
    /// Every class, in documentation order.
    pub const ALL: [ErrorClass; 3] = [
        ErrorClass::Transient,
        ErrorClass::Permanent,
        ErrorClass::RateLimited,
    ];

    /// The stored string.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Transient => "transient",
            ErrorClass::Permanent => "permanent",
            ErrorClass::RateLimited => "rate_limited",
        }
    }

    /// Classify an HTTP status that is not 2xx (DESIGN.md "Outcomes and retries").
    pub fn from_http_status(status: u16) -> ErrorClass {
        match status {
            408 | 425 | 429 => ErrorClass::Transient,
            500..=599 => ErrorClass::Transient,
            _ => ErrorClass::Permanent,
        }
    }
}

impl std::str::FromStr for ErrorClass {
    type Err = String;
    /// The stored string back (`transient`, `permanent`, `rate_limited`).
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "transient" => Ok(ErrorClass::Transient),
            "permanent" => Ok(ErrorClass::Permanent),
            "rate_limited" => Ok(ErrorClass::RateLimited),
            other => Err(format!("unknown error class {other:?}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn notification_default_is_three_attempts_1_then_5_minutes_then_dead_s0_4() {
        let p = RetryPolicy::notification();
        let t = ErrorClass::Transient;
        assert_eq!(p.decide(1, t, None, 0.0), RetryDecision::RetryIn(s(60)));
        assert_eq!(p.decide(2, t, None, 0.0), RetryDecision::RetryIn(s(300)));
        assert_eq!(p.decide(3, t, None, 0.0), RetryDecision::Dead);
        assert_eq!(p.max_attempts(), 3);
    }

    #[test]
    fn permanent_notification_failure_is_never_retried() {
        let p = RetryPolicy::notification();
        assert_eq!(
            p.decide(1, ErrorClass::Permanent, None, 0.0),
            RetryDecision::Dead
        );
        assert!(p.validate().is_ok());
    }

    /// Issue 12, finding 6: 100 000 delays were stored (1 MB per job); at most 100 now, and
    /// the error names the list.
    #[test]
    fn delay_lists_are_capped_at_100() {
        let base = RetryPolicy::notification();
        let delays = |n: usize| Some(vec!["1s".to_string(); n]);
        let ok = RetrySpec {
            delays: delays(100),
            max_attempts: Some(100),
            ..Default::default()
        };
        assert_eq!(ok.to_policy(&base).unwrap().transient.delays.len(), 100);
        let long = RetrySpec {
            delays: delays(101),
            ..Default::default()
        };
        let e = long.to_policy(&base).unwrap_err();
        assert_eq!(e.field(), "retry.delays");
        assert!(e.to_string().contains("at most 100"), "{e}");
        let long_class = RetrySpec {
            permanent: Some(ClassSpec {
                delays: vec!["1s".to_string(); 100_000],
                max_attempts: Some(3),
            }),
            ..Default::default()
        };
        let e = long_class.to_policy(&base).unwrap_err();
        assert_eq!(e.field(), "retry.permanent.delays");
        // A policy built in code is held to the same bound.
        let built = RetryPolicy::uniform(vec![s(1); 101], 3);
        assert_eq!(
            built.validate().unwrap_err().field(),
            "retry.transient.delays"
        );
    }

    #[test]
    fn http_default_retries_by_class_s4_3() {
        let p = RetryPolicy::http_call();
        let t = ErrorClass::Transient;
        let perm = ErrorClass::Permanent;
        assert_eq!(p.decide(1, t, None, 0.0), RetryDecision::RetryIn(s(15)));
        assert_eq!(p.decide(2, t, None, 0.0), RetryDecision::RetryIn(s(45)));
        assert_eq!(p.decide(3, t, None, 0.0), RetryDecision::RetryIn(s(135)));
        assert_eq!(p.decide(4, t, None, 0.0), RetryDecision::Dead);
        assert_eq!(p.decide(1, perm, None, 0.0), RetryDecision::RetryIn(s(1)));
        assert_eq!(p.decide(2, perm, None, 0.0), RetryDecision::RetryIn(s(2)));
        assert_eq!(p.decide(3, perm, None, 0.0), RetryDecision::Dead);
    }

    #[test]
    fn retry_after_is_honoured_up_to_the_cap_and_jitter_only_adds() {
        let p = RetryPolicy::notification();
        let t = ErrorClass::Transient;
        assert_eq!(
            p.decide(1, t, Some(s(120)), 0.0),
            RetryDecision::RetryIn(s(120))
        );
        assert_eq!(
            p.decide(1, t, Some(s(10)), 0.0),
            RetryDecision::RetryIn(s(60))
        );
        assert_eq!(
            p.decide(1, t, Some(s(999_999)), 0.0),
            RetryDecision::RetryIn(s(3600))
        );
        let RetryDecision::RetryIn(j) = p.decide(1, t, None, 0.9) else {
            panic!()
        };
        assert!(j > s(60) && j <= s(66), "{j:?}");
    }

    #[test]
    fn short_form_applies_to_both_classes() {
        let spec: RetrySpec =
            serde_json::from_str(r#"{"delays": ["1s","2s"], "max_attempts": 3}"#).unwrap();
        let p = spec.to_policy(&RetryPolicy::default()).unwrap();
        assert_eq!(p.transient.delays, vec![s(1), s(2)]);
        assert_eq!(p.permanent.max_attempts, 3);
        // Round trip through the full form.
        let back: RetryPolicy = serde_json::from_value(serde_json::to_value(&p).unwrap()).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn bad_policies_name_the_field() {
        let spec: RetrySpec = serde_json::from_str(r#"{"delays": ["1s","soon"]}"#).unwrap();
        let e = spec.to_policy(&RetryPolicy::default()).unwrap_err();
        assert_eq!(e.field(), "retry.delays[1]");
        let spec: RetrySpec = serde_json::from_str(r#"{"retry_after_cap": "100years"}"#).unwrap();
        let e = spec.to_policy(&RetryPolicy::default()).unwrap_err();
        assert_eq!(e.field(), "retry.retry_after_cap");
        let spec: RetrySpec = serde_json::from_str(r#"{"max_attempts": 0}"#).unwrap();
        let e = spec.to_policy(&RetryPolicy::default()).unwrap_err();
        assert_eq!(e.field(), "retry.transient.max_attempts");
        assert!(serde_json::from_str::<RetrySpec>(r#"{"delay": []}"#).is_err());
    }

    /// Jitter bounds: whatever the random draw (even out-of-range ones), a retry never
    /// comes before the delay asked for (policy or `Retry-After`), and at most 10 % (capped at
    /// 30 s) after it.
    #[test]
    fn jitter_is_added_after_the_delay_within_bounds_s4_3() {
        let p = RetryPolicy::http_call();
        let draws = [-1.0, 0.0, 0.1, 0.5, 0.9, 0.999_999, 1.0, 7.0, f64::NAN];
        for (attempt, class, asked, base) in [
            (1, ErrorClass::Transient, None, s(15)),
            (2, ErrorClass::Transient, None, s(45)),
            (3, ErrorClass::Transient, None, s(135)),
            (1, ErrorClass::Permanent, None, s(1)),
            (2, ErrorClass::Permanent, None, s(2)),
            // Retry-After longer than the policy: jitter comes after it, never before.
            (1, ErrorClass::Transient, Some(s(600)), s(600)),
        ] {
            let max = base + Duration::from_secs_f64((base.as_secs_f64() * 0.1).min(30.0));
            for j in draws {
                let RetryDecision::RetryIn(d) = p.decide(attempt, class, asked, j) else {
                    panic!("attempt {attempt} {class:?} should retry");
                };
                assert!(d >= base, "{d:?} before {base:?} (jitter {j})");
                assert!(d <= max, "{d:?} after {max:?} (jitter {j})");
            }
        }
        // A long delay's spread is capped at 30 s.
        let RetryDecision::RetryIn(d) = p.decide(1, ErrorClass::Transient, Some(s(900)), 0.999_999)
        else {
            panic!()
        };
        assert!(d <= s(930) && d > s(929), "{d:?}");
    }

    /// a 503 or a dropped connection (transient) and a 400 (permanent) walk their own
    /// ladders; a rate limit that reaches the policy counts as transient.
    #[test]
    fn rate_limited_reaching_the_policy_counts_as_transient() {
        let p = RetryPolicy::http_call();
        assert_eq!(
            p.decide(3, ErrorClass::RateLimited, None, 0.0),
            RetryDecision::RetryIn(s(135))
        );
        assert_eq!(
            p.decide(4, ErrorClass::RateLimited, None, 0.0),
            RetryDecision::Dead
        );
    }

    #[test]
    fn worst_case_shows_the_arithmetic_s4_7() {
        let (total, why) = RetryPolicy::http_call().worst_case(s(120));
        assert_eq!(total, s(4 * 120 + 15 + 45 + 135));
        assert!(why.contains("4 attempts"), "{why}");
    }
}
