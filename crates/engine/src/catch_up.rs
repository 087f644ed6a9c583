//! Catch-up firings: a schedule can name times of day (`"catch_up": ["13:00"]`, in its
//! zone) at which the period's job runs again — only if the period's product is missing: its
//! artifact for a `digest` schedule, a succeeded job for any other kind.
//!
//! At a catch-up instant the scheduler looks at the period of the schedule's latest regular
//! firing at or before it (a firing before the schedule existed has no period to catch up).
//!
//! - product present → nothing is created (recorded in the scheduler's report);
//! - a job of the period still waiting or running (a retry in flight) → look again in a
//!   minute, so a catch-up never runs beside the regular job;
//! - otherwise one new job is created, with its own dedupe key
//!   `{schedule}:{period}:catchup:{HH:MM}`: each catch-up time runs at most once per period,
//!   however many nodes or ticks see it. The `digest` kind's skip rule makes even
//!   that job safe if the artifact appears meanwhile.
//!
//! A node that was down at the catch-up time handles it when it is back (the latest missed
//! instant only). Times of day follow the zone's DST rules exactly like a fixed-time cron
//! expression (a time in a spring-forward gap runs at the end of the gap; one in a repeated
//! hour runs once).

use crate::expand::jobs_for_firing;
use crate::kinds::Kinds;
use chrono::{DateTime, Utc};
use chrono_tz::Tz;
use kairos_core::JobState;
use kairos_core::schedule::ScheduleSpec;
use kairos_store::{ArtifactKey, JobInsert, JobSearch, Schedule, Store};

/// Most catch-up times one schedule may have.
pub const MAX_CATCH_UPS: usize = 24;

/// How long a catch-up waits before looking again while the period's job is still in flight.
pub const IN_FLIGHT_RECHECK: chrono::Duration = chrono::Duration::minutes(1);

/// Parse and check catch-up times: each `HH:MM` (24 h), distinct, at most
/// [`MAX_CATCH_UPS`]. Returns them normalized and sorted. The error names `catch_up[i]`.
pub fn parse_times(times: &[String]) -> Result<Vec<String>, kairos_core::Error> {
    use kairos_core::Error;
    if times.len() > MAX_CATCH_UPS {
        return Err(Error::invalid(
            "catch_up",
            format!("at most {MAX_CATCH_UPS} times"),
        ));
    }
    let mut out: Vec<String> = Vec::with_capacity(times.len());
    for (i, t) in times.iter().enumerate() {
        let field = format!("catch_up[{i}]");
        let bad = || {
            Error::invalid(
                &field,
                format!("{t:?} is not a time of day like \"13:00\" (HH:MM, 24-hour)"),
            )
        };
        let (h, m) = t.trim().split_once(':').ok_or_else(bad)?;
        if h.len() != 2 || m.len() != 2 {
            return Err(bad());
        }
        let (h, m): (u32, u32) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
        if h > 23 || m > 59 {
            return Err(bad());
        }
        let norm = format!("{h:02}:{m:02}");
        if out.contains(&norm) {
            return Err(Error::invalid(&field, format!("{norm} is listed twice")));
        }
        out.push(norm);
    }
    out.sort();
    Ok(out)
}

/// The daily clock of a catch-up time (`"13:00"` → cron `0 13 * * *`).
pub fn clock(hhmm: &str) -> ScheduleSpec {
    let (h, m) = hhmm.split_once(':').unwrap_or(("0", "0"));
    ScheduleSpec::Cron {
        expr: format!(
            "{} {} * * *",
            m.trim_start_matches('0').parse::<u32>().unwrap_or(0),
            h.trim_start_matches('0').parse::<u32>().unwrap_or(0)
        ),
    }
}

/// The first instant of `hhmm` in `tz` strictly after `after`.
pub fn next_after(tz: Tz, hhmm: &str, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
    clock(hhmm).next_after(tz, after)
}

/// The dedupe key of a catch-up job.
pub fn dedupe_key(schedule_id: &str, period_key: &str, hhmm: &str) -> String {
    format!("{schedule_id}:{period_key}:catchup:{hhmm}")
}

/// The period a catch-up at `at` covers: the schedule's latest regular firing at or before
/// it, if that firing is not before the schedule was created.
pub fn covered_firing(s: &Schedule, tz: Tz, at: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let fire_at = s.spec.prev_at_or_before(tz, at)?;
    (fire_at >= s.created_at).then_some(fire_at)
}

/// The job a catch-up creates: the period's job with its own dedupe key, due now.
pub fn catch_up_job(
    kinds: &Kinds,
    s: &Schedule,
    tz: Tz,
    fire_at: DateTime<Utc>,
    hhmm: &str,
    now: DateTime<Utc>,
) -> Vec<JobInsert> {
    let mut jobs = jobs_for_firing(kinds, s, tz, fire_at, now);
    for j in &mut jobs {
        let period = j.period_key.clone().unwrap_or_default();
        j.dedupe_key = Some(dedupe_key(&s.id, &period, hhmm));
        j.run_at = now;
    }
    jobs
}

/// What a catch-up found for its period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Need {
    /// The product exists (artifact, or a succeeded job): nothing to do.
    Present,
    /// A job of the period is waiting or running: look again later.
    InFlight,
    /// Missing: run the period again.
    Missing,
}

/// Whether the period of `s` with key `period` needs a catch-up run.
pub async fn need(
    store: &dyn Store,
    kinds: &Kinds,
    s: &Schedule,
    period: &str,
) -> Result<Need, kairos_store::Error> {
    // The product of a period: its kind's artifact, or else a succeeded job.
    let artifact = kinds.artifact_of(s);
    if let Some(name) = &artifact {
        let a = store
            .artifact_get(ArtifactKey {
                name: name.clone(),
                period_key: period.to_string(),
            })
            .await?;
        if a.is_some() {
            return Ok(Need::Present);
        }
    }
    let jobs = store
        .job_search(JobSearch {
            schedule_id: Some(s.id.clone()),
            period_key: Some(period.to_string()),
            limit: 1000,
            ..Default::default()
        })
        .await?;
    if artifact.is_none() && jobs.iter().any(|j| j.state == JobState::Succeeded) {
        return Ok(Need::Present);
    }
    if jobs
        .iter()
        .any(|j| matches!(j.state, JobState::Available | JobState::Running))
    {
        return Ok(Need::InFlight);
    }
    Ok(Need::Missing)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catch_up_times_are_hh_mm_valid_and_distinct() {
        let ok = parse_times(&["13:00".into(), "07:30".into()]).unwrap();
        assert_eq!(ok, ["07:30", "13:00"]);
        for (bad, field) in [
            (vec!["25:00"], "catch_up[0]"),
            (vec!["13:00", "1:00"], "catch_up[1]"),
            (vec!["13:60"], "catch_up[0]"),
            (vec!["noon"], "catch_up[0]"),
            (vec!["13:00", "13:00"], "catch_up[1]"),
        ] {
            let v: Vec<String> = bad.iter().map(|s| s.to_string()).collect();
            assert_eq!(parse_times(&v).unwrap_err().field(), field, "{bad:?}");
        }
    }

    #[test]
    fn catch_up_clock_is_the_time_of_day_in_the_zone() {
        let tz: Tz = "Asia/Tokyo".parse().unwrap();
        let after = DateTime::parse_from_rfc3339("2026-10-19T22:00:00Z")
            .unwrap()
            .to_utc();
        // 13:00 JST on Oct 20 is 04:00Z.
        assert_eq!(
            next_after(tz, "13:00", after).unwrap().to_rfc3339(),
            "2026-10-20T04:00:00+00:00"
        );
        assert_eq!(
            clock("07:05"),
            ScheduleSpec::Cron {
                expr: "5 7 * * *".into()
            }
        );
    }
}
