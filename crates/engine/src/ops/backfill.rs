//! Backfill: create the firings of a past range of a schedule, each deduplicated like a
//! regular firing (its channels' dedupe keys come from the period key), so a period that ran
//! is not run again and running the same backfill twice creates nothing the second time.
//!
//! One call takes at most [`MAX_BACKFILL_FIRINGS`] firings; [`Kairos::schedule_backfill_ranges`]
//! splits a longer range into such calls (the CLI's `kairos schedule backfill`). Backfilled
//! firings ignore the misfire and overlap policies: they are what the operator asked for.

use super::{Kairos, parse_instant, tz_of};
use crate::error::OpsError;
use crate::expand::jobs_for_firing;
use chrono::{DateTime, Utc};
use kairos_store::Schedule;
use std::collections::HashSet;

/// The most firings one backfill call creates (or finds already run).
pub const MAX_BACKFILL_FIRINGS: usize = 1_000;

/// The most firings [`Kairos::schedule_backfill_ranges`] splits (a thousand calls).
pub const MAX_BACKFILL_TOTAL: usize = 1_000_000;

/// What a backfill did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Backfilled {
    /// Firings created (at least one of their jobs is new).
    pub fired: u64,
    /// Firings whose period had already run (every job's dedupe key existed).
    pub skipped: u64,
}

impl Kairos {
    /// The checked range `from`..=`to` of schedule `id`, and the schedule. Errors name the
    /// field: `from`/`to` not RFC 3339, `from` after `to`, `to` in the future; a schedule
    /// that does not exist is not found; an audience schedule (`kind`) cannot backfill (its
    /// firings expand over subscribers in pages: fire them one by one).
    async fn backfill_range(
        &self,
        id: &str,
        from: &str,
        to: &str,
    ) -> Result<(Schedule, DateTime<Utc>, DateTime<Utc>), OpsError> {
        let from_t = parse_instant("from", from)?;
        let to_t = parse_instant("to", to)?;
        if from_t > to_t {
            return Err(OpsError::invalid("from", "is after \"to\""));
        }
        if to_t > self.clock.now() {
            return Err(OpsError::invalid(
                "to",
                "is in the future: a backfill covers past firings only",
            ));
        }
        let s = self.schedule_get(id).await?;
        if crate::audience::topic_of(&self.kinds, &s).is_some() {
            return Err(OpsError::invalid(
                "kind",
                "an audience schedule cannot be backfilled: fire its periods one by one",
            ));
        }
        Ok((s, from_t, to_t))
    }

    /// Create the firings of schedule `id` from `from` to `to` (RFC 3339, both included, `to`
    /// not in the future), at most [`MAX_BACKFILL_FIRINGS`] of them (more: invalid, field
    /// `to`). Each firing's jobs are due at once; a period that ran already creates nothing
    /// and counts as skipped.
    pub async fn schedule_backfill(
        &self,
        id: &str,
        from: &str,
        to: &str,
    ) -> Result<Backfilled, OpsError> {
        let (s, from, to) = self.backfill_range(id, from, to).await?;
        let tz = tz_of(&s)?;
        let firings = firings_between(&s, tz, from, to, MAX_BACKFILL_FIRINGS + 1);
        if firings.len() > MAX_BACKFILL_FIRINGS {
            return Err(OpsError::invalid(
                "to",
                format!(
                    "the range holds more than {MAX_BACKFILL_FIRINGS} firings: split it \
                     (`kairos schedule backfill` does)"
                ),
            ));
        }
        let now = self.clock.now();
        let mut jobs = Vec::new();
        let mut firing_of = Vec::new();
        for (i, f) in firings.iter().enumerate() {
            for j in jobs_for_firing(&self.kinds, &s, tz, *f, now) {
                firing_of.push((j.id.clone(), i));
                jobs.push(j);
            }
        }
        let created: HashSet<String> = self
            .store
            .job_insert_many(jobs)
            .await?
            .into_iter()
            .collect();
        let mut fired = vec![false; firings.len()];
        for (job, i) in firing_of {
            if created.contains(&job) {
                fired[i] = true;
            }
        }
        let n = fired.iter().filter(|f| **f).count() as u64;
        if n > 0 {
            self.wake.notify_one();
        }
        tracing::info!(schedule_id = %s.id, from = %from.to_rfc3339(), to = %to.to_rfc3339(),
            fired = n, skipped = firings.len() as u64 - n, "backfill");
        Ok(Backfilled {
            fired: n,
            skipped: firings.len() as u64 - n,
        })
    }

    /// Split the range `from`..=`to` of schedule `id` into ranges of at most `per_call`
    /// firings each (1..=[`MAX_BACKFILL_FIRINGS`]), each from its first firing to its last,
    /// oldest first: the calls of a backfill longer than one call takes. Checked like
    /// [`Kairos::schedule_backfill`]; more than [`MAX_BACKFILL_TOTAL`] firings is invalid
    /// (field `to`). Empty: the range holds no firing.
    pub async fn schedule_backfill_ranges(
        &self,
        id: &str,
        from: &str,
        to: &str,
        per_call: usize,
    ) -> Result<Vec<(DateTime<Utc>, DateTime<Utc>)>, OpsError> {
        let (s, from, to) = self.backfill_range(id, from, to).await?;
        let tz = tz_of(&s)?;
        let per_call = per_call.clamp(1, MAX_BACKFILL_FIRINGS);
        let firings = firings_between(&s, tz, from, to, MAX_BACKFILL_TOTAL + 1);
        if firings.len() > MAX_BACKFILL_TOTAL {
            return Err(OpsError::invalid(
                "to",
                format!("the range holds more than {MAX_BACKFILL_TOTAL} firings"),
            ));
        }
        Ok(firings
            .chunks(per_call)
            .filter_map(|c| Some((*c.first()?, *c.last()?)))
            .collect())
    }
}

/// The nominal firings of `s` from `from` to `to` (both included), oldest first, at most
/// `limit`.
fn firings_between(
    s: &Schedule,
    tz: chrono_tz::Tz,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    limit: usize,
) -> Vec<DateTime<Utc>> {
    s.spec.firings_between(tz, from, to, limit)
}
