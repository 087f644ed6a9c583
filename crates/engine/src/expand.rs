//! Expansion: what jobs one firing of a schedule creates. Pure.
//!
//! A firing creates one job per target (for a webhook schedule: one). Its `dedupe_key` is
//! derived from the schedule and the occurrence's period key, so a double-fired clock, two
//! nodes or a manual re-run create each job once (S3-3).

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use kairos_core::RetryPolicy;
use kairos_core::id::{IdPrefix, new_id};
use kairos_core::schedule::period_key;
use kairos_store::{JobInsert, Schedule};

/// The unique key of the job a schedule creates for a period.
pub fn dedupe_key(schedule_id: &str, period_key: &str) -> String {
    format!("{schedule_id}:{period_key}")
}

/// The jobs of one firing of `s` at nominal time `fire_at`.
pub fn jobs_for_firing(
    s: &Schedule,
    tz: Tz,
    fire_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Vec<JobInsert> {
    let key = period_key(s.period, tz, fire_at);
    vec![JobInsert {
        id: new_id(IdPrefix::Job, now),
        kind: s.kind.clone(),
        payload: s.payload.clone(),
        endpoint_id: s.endpoint_id.clone(),
        schedule_id: Some(s.id.clone()),
        fire_at: Some(fire_at),
        dedupe_key: Some(dedupe_key(&s.id, &key)),
        period_key: Some(key),
        retry: s
            .retry
            .clone()
            .unwrap_or_else(|| RetryPolicy::default_for_kind(s.kind.as_str())),
        // Never before its nominal time; a catch-up firing is due at once and sorts with the
        // oldest work first.
        run_at: fire_at,
        now,
    }]
}
