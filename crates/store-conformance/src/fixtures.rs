//! Builders for the suite.

use chrono::{DateTime, Duration, Utc};
use kairos_core::id::{IdPrefix, new_id};
use kairos_core::schedule::{Misfire, PeriodUnit, ScheduleSpec};
use kairos_core::{JobKind, RetryPolicy};
use kairos_store::{JobClaim, JobInsert, ScheduleCreate};

/// The suite's epoch: 2026-11-29T09:00:00Z.
pub fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-29T09:00:00Z")
        .map(|t| t.to_utc())
        .unwrap_or_default()
}

/// A webhook job due at `run_at`.
pub fn job(run_at: DateTime<Utc>) -> JobInsert {
    JobInsert {
        id: new_id(IdPrefix::Job, run_at),
        kind: JobKind::new("webhook"),
        payload: serde_json::json!({"hello": "world", "n": 1}),
        endpoint_id: None,
        schedule_id: None,
        fire_at: None,
        period_key: None,
        channel: None,
        dedupe_key: None,
        retry: RetryPolicy::notification(),
        audience: Default::default(),
        retry_is_kind_default: false,
        run_at,
        now: t0(),
        concurrency: None,
        http_origin: None,
    }
}

/// [`job`] due `ms` milliseconds after [`t0`], with concurrency key `key` of limit `max`.
pub fn keyed(key: &str, max: u32, ms: i64) -> JobInsert {
    JobInsert {
        concurrency: Some(kairos_core::Concurrency {
            key: key.into(),
            max,
        }),
        ..job(t0() + Duration::milliseconds(ms))
    }
}

/// A claim at `now` of at most `limit` jobs with a 30 s lease.
pub fn claim(now: DateTime<Utc>, limit: i64, node: &str) -> JobClaim {
    JobClaim {
        now,
        limit,
        node: node.to_string(),
        lease_token: new_id(IdPrefix::Lease, now),
        lease_until: now + Duration::seconds(30),
    }
}

/// A daily cron schedule at 09:00 UTC, first firing at `next`.
pub fn schedule(name: &str, next: DateTime<Utc>) -> ScheduleCreate {
    ScheduleCreate {
        id: new_id(IdPrefix::Schedule, t0()),
        name: name.to_string(),
        kind: JobKind::new("webhook"),
        spec: ScheduleSpec::Cron {
            expr: "0 9 * * *".into(),
        },
        timezone: "UTC".into(),
        period: PeriodUnit::Day,
        misfire: Misfire::Skip,
        misfire_threshold: None,
        misfire_window: None,
        overlap: Default::default(),
        payload: serde_json::json!({"report": "daily"}),
        endpoint_id: None,
        retry: None,
        channels: Vec::new(),
        paused: false,
        next_fire_at: Some(next),
        now: t0(),
        concurrency: None,
    }
}

/// The attempt outcome a completion by `t` records: `succeeded`, `skipped`, else `failed`.
pub fn outcome_of(t: &kairos_store::Transition) -> &'static str {
    match t {
        kairos_store::Transition::Succeeded => "succeeded",
        kairos_store::Transition::Skipped(_) => "skipped",
        _ => "failed",
    }
}
