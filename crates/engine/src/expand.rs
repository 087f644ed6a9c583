//! Expansion: what jobs one firing of a schedule creates. Pure.
//!
//! A firing creates one job per channel of the schedule (a schedule made with a single `kind`
//! has one channel, named after its kind). Each job's `dedupe_key` is derived from the
//! schedule, the occurrence's period key and the channel, so a double-fired clock, two nodes
//! or a manual re-run create each channel's job once, and a channel that fails retries
//! on its own: a sibling that succeeded is never sent again.

use crate::kinds::Kinds;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use kairos_core::id::{IdPrefix, new_id};
use kairos_core::schedule::period_key;
use kairos_store::{JobInsert, Schedule, ScheduleChannel};

/// The unique key of the job a schedule creates for a period on one channel.
///
/// The first channel keeps the key a single-kind schedule has always had
/// (`{schedule}:{period}`) when it is named after its kind, so that a period fired before an
/// upgrade, or before a schedule gained a second channel, is not created again. Other channels
/// add their name; names are `[a-z0-9_-]`, so the `:` cannot be ambiguous.
pub fn dedupe_key(
    schedule_id: &str,
    period_key: &str,
    index: usize,
    ch: &ScheduleChannel,
) -> String {
    if index == 0 && ch.name == ch.kind.as_str() {
        format!("{schedule_id}:{period_key}")
    } else {
        format!("{schedule_id}:{period_key}:{}", ch.name)
    }
}

/// The jobs of one firing of `s` at nominal time `fire_at`: one per channel.
pub fn jobs_for_firing(
    kinds: &Kinds,
    s: &Schedule,
    tz: Tz,
    fire_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Vec<JobInsert> {
    let key = period_key(s.period, tz, fire_at);
    s.channel_list()
        .iter()
        .enumerate()
        .map(|(i, ch)| {
            let payload = ch.payload.clone().unwrap_or_else(|| s.payload.clone());
            let concurrency = ch
                .concurrency
                .as_ref()
                .or(s.concurrency.as_ref())
                .map(|c| crate::concurrency::render(c, &payload, None));
            let http_origin = crate::kinds::http::origin_of_payload(ch.kind.as_str(), &payload);
            JobInsert {
                id: new_id(IdPrefix::Job, now),
                kind: ch.kind.clone(),
                audience: kairos_core::JobAudience::of_payload(&payload),
                payload,
                endpoint_id: ch.endpoint_id.clone(),
                schedule_id: Some(s.id.clone()),
                fire_at: Some(fire_at),
                dedupe_key: Some(dedupe_key(&s.id, &key, i, ch)),
                period_key: Some(key.clone()),
                channel: Some(ch.name.clone()),
                retry: ch
                    .retry
                    .clone()
                    .or_else(|| s.retry.clone())
                    .unwrap_or_else(|| kinds.default_retry(ch.kind.as_str())),
                retry_is_kind_default: ch.retry.is_none() && s.retry.is_none(),
                // Never before its nominal time; a catch-up firing is due at once and sorts with
                // the oldest work first.
                run_at: fire_at,
                now,
                concurrency,
                http_origin,
            }
        })
        .collect()
}
