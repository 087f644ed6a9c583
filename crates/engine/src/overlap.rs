//! Overlap policies (see [`Overlap`]): which of a due schedule's firings run while the
//! previous occurrence still has open jobs, which one is held (`buffer_one`), which are
//! recorded as missed (reason `overlap`), and which jobs are cancelled first
//! (`cancel_previous`).
//!
//! The *previous occurrence* is the schedule's last materialized firing (`last_fire_at`, seen
//! through its period key): a skipped or held firing does not move it, so the next firing
//! looks at the same occurrence again. Its jobs are *open* while `available` (waiting, due,
//! or waiting for a retry) or `running`. Jobs created by hand (`fire`, backfill) of that
//! period count too: they are the same occurrence.

use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use kairos_core::schedule::{Overlap, period_key};
use kairos_store::{JobBulkCancel, JobSelect, OccurrenceOpen, Schedule, ScheduleGapNew, Store};

/// How many open job ids one look at an occurrence reads (and one cancel call takes).
const OPEN_PAGE: i64 = 1_000;
/// The most pages `cancel_previous` cancels in one firing (an audience occurrence can hold
/// many jobs); what is left is cancelled at the next firing.
const MAX_CANCEL_PAGES: usize = 100;

/// The reason a gap of firings skipped by an overlap policy is recorded with.
pub const GAP_REASON: &str = "overlap";

/// What the overlap policy makes of a due schedule's planned firings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Decision {
    /// Firings to materialize now, oldest first.
    pub run: Vec<DateTime<Utc>>,
    /// A firing to hold until the previous occurrence's jobs end (`buffer_one`).
    pub buffer: Option<DateTime<Utc>>,
    /// Firings not run: recorded as `missed` with reason `overlap`.
    pub skipped: Vec<DateTime<Utc>>,
    /// Cancel the previous occurrence's open jobs before materializing (`cancel_previous`).
    pub cancel_previous: bool,
}

impl Decision {
    /// The gap records of the skipped firings, one per firing.
    pub fn gaps(&self) -> Vec<ScheduleGapNew> {
        self.skipped
            .iter()
            .map(|f| ScheduleGapNew {
                reason: GAP_REASON.to_string(),
                first_fire_at: *f,
                last_fire_at: *f,
                count: 1,
            })
            .collect()
    }
}

/// The period key of the schedule's previous occurrence, if it has one.
pub fn previous_period(s: &Schedule, tz: Tz) -> Option<String> {
    s.last_fire_at.map(|t| period_key(s.period, tz, t))
}

/// Whether the previous occurrence of `s` has open jobs.
pub async fn previous_open(
    store: &dyn Store,
    s: &Schedule,
    tz: Tz,
) -> Result<bool, kairos_store::Error> {
    let Some(period) = previous_period(s, tz) else {
        return Ok(false);
    };
    let open = store
        .occurrence_open(OccurrenceOpen {
            schedule_id: s.id.clone(),
            period_key: period,
            limit: 1,
        })
        .await?;
    Ok(!open.is_empty())
}

/// Apply `s.overlap` to the planned firings `fires` (oldest first), given whether the
/// previous occurrence has open jobs. Pure. Within one batch (a misfire policy of `all:N`),
/// a firing made now is the next one's previous occurrence.
pub fn decide(s: &Schedule, fires: &[DateTime<Utc>], previous_open: bool) -> Decision {
    let mut d = Decision::default();
    if s.overlap == Overlap::Allow {
        d.run = fires.to_vec();
        return d;
    }
    // A held firing is the next to run: until it has, the schedule is busy.
    let mut busy = previous_open || s.buffered_fire_at.is_some();
    let mut held = s.buffered_fire_at.is_some();
    for &f in fires {
        if !busy {
            d.run.push(f);
            busy = true;
            continue;
        }
        match s.overlap {
            Overlap::Allow => d.run.push(f),
            Overlap::Skip => d.skipped.push(f),
            Overlap::BufferOne if !held => {
                d.buffer = Some(f);
                held = true;
            }
            Overlap::BufferOne => d.skipped.push(f),
            Overlap::CancelPrevious => {
                // A previous firing of this same batch is not created at all (it would be
                // cancelled at once); an earlier occurrence's jobs are cancelled.
                match d.run.pop() {
                    Some(earlier) => d.skipped.push(earlier),
                    None => d.cancel_previous = true,
                }
                d.run.push(f);
            }
        }
    }
    d.skipped.sort();
    d
}

/// Cancel the open jobs of the previous occurrence of `s`, saying why. Returns how many.
pub async fn cancel_previous(
    store: &dyn Store,
    s: &Schedule,
    tz: Tz,
    fire_at: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<u64, kairos_store::Error> {
    let Some(period) = previous_period(s, tz) else {
        return Ok(0);
    };
    let reason = format!(
        "cancelled by the overlap policy cancel_previous: the firing at {} started",
        fire_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    );
    let mut cancelled = 0;
    for _ in 0..MAX_CANCEL_PAGES {
        let ids = store
            .occurrence_open(OccurrenceOpen {
                schedule_id: s.id.clone(),
                period_key: period.clone(),
                limit: OPEN_PAGE,
            })
            .await?;
        if ids.is_empty() {
            break;
        }
        let n = ids.len();
        let done = store
            .job_bulk_cancel(JobBulkCancel {
                select: JobSelect {
                    ids: Some(ids),
                    limit: OPEN_PAGE,
                    ..Default::default()
                },
                reason: reason.clone(),
                now,
            })
            .await?;
        cancelled += done.count;
        if (n as i64) < OPEN_PAGE {
            break;
        }
    }
    Ok(cancelled)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap()
    }

    fn schedule(overlap: Overlap, held: Option<DateTime<Utc>>) -> Schedule {
        Schedule {
            id: "sch_1".into(),
            name: "n".into(),
            kind: kairos_core::JobKind::new("webhook"),
            spec: kairos_core::schedule::ScheduleSpec::Cron {
                expr: "* * * * *".into(),
            },
            timezone: "UTC".into(),
            period: kairos_core::schedule::PeriodUnit::Occurrence,
            misfire: Default::default(),
            misfire_threshold: None,
            misfire_window: None,
            overlap,
            buffered_fire_at: held,
            concurrency: None,
            payload: serde_json::json!({}),
            endpoint_id: None,
            retry: None,
            channels: vec![],
            state: kairos_store::ScheduleState::Active,
            next_fire_at: None,
            last_fire_at: Some(t(0)),
            created_at: t(0),
            updated_at: t(0),
        }
    }

    #[test]
    fn allow_runs_every_firing_whatever_is_open() {
        let d = decide(&schedule(Overlap::Allow, None), &[t(60), t(120)], true);
        assert_eq!(d.run, [t(60), t(120)]);
        assert!(d.skipped.is_empty() && d.buffer.is_none() && !d.cancel_previous);
    }

    #[test]
    fn every_policy_runs_a_firing_whose_previous_occurrence_has_ended() {
        for o in Overlap::ALL {
            let d = decide(&schedule(o, None), &[t(60)], false);
            assert_eq!(d.run, [t(60)], "{o:?}");
            assert!(d.skipped.is_empty() && d.buffer.is_none() && !d.cancel_previous);
        }
    }

    #[test]
    fn skip_records_firings_while_the_previous_is_open() {
        let d = decide(&schedule(Overlap::Skip, None), &[t(60)], true);
        assert!(d.run.is_empty());
        assert_eq!(d.skipped, [t(60)]);
        assert_eq!(d.gaps()[0].reason, "overlap");
        // In one batch: the first runs, the next overlaps it.
        let d = decide(&schedule(Overlap::Skip, None), &[t(60), t(120)], false);
        assert_eq!((d.run, d.skipped), (vec![t(60)], vec![t(120)]));
    }

    #[test]
    fn buffer_one_holds_one_firing_and_skips_the_next() {
        let d = decide(&schedule(Overlap::BufferOne, None), &[t(60), t(120)], true);
        assert!(d.run.is_empty());
        assert_eq!(d.buffer, Some(t(60)));
        assert_eq!(d.skipped, [t(120)]);
        // One already held: a new firing is skipped even if the previous has just ended.
        let d = decide(&schedule(Overlap::BufferOne, Some(t(60))), &[t(120)], false);
        assert!(d.run.is_empty() && d.buffer.is_none());
        assert_eq!(d.skipped, [t(120)]);
    }

    #[test]
    fn cancel_previous_cancels_then_runs() {
        let d = decide(&schedule(Overlap::CancelPrevious, None), &[t(60)], true);
        assert_eq!(d.run, [t(60)]);
        assert!(d.cancel_previous);
        // In one batch only the last runs; the earlier is missed, never created.
        let d = decide(
            &schedule(Overlap::CancelPrevious, None),
            &[t(60), t(120)],
            false,
        );
        assert_eq!((d.run, d.skipped), (vec![t(120)], vec![t(60)]));
        assert!(!d.cancel_previous);
    }
}
