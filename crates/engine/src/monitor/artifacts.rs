//! The `missing_artifacts` check: for each active digest schedule, the periods whose
//! artifact should exist by now — after the period's regular firing, its last catch-up time,
//! the kind's deadline for the run and the monitor's grace — and does not. This is the check
//! that would have caught the "8 days out of 20 missing while every run said success".
//!
//! A period is looked for within the missed-firings window; once a schedule warns, its
//! periods are looked for from the window before the warning began, so the warning stays
//! until the artifact exists (or the alert is acknowledged: periods due by then are left out),
//! not until the period leaves the window.

use super::alerts::{lookback, stored_of};
use super::checks::{MAX_EXPECTED_FIRINGS, dur};
use super::{CheckResult, CheckStatus, MonitorConfig, names};
use crate::catch_up;
use crate::kinds::Kinds;
use chrono::{DateTime, Utc};
use kairos_core::schedule::period_key;
use kairos_store::{ArtifactKey, Schedule, ScheduleList, Store};

/// The instant by which the artifact of the period fired at `fire_at` must exist: the last
/// catch-up of the same period (if any is later than the firing) plus the run's deadline and
/// the grace.
fn due_by(
    kinds: &Kinds,
    s: &Schedule,
    tz: chrono_tz::Tz,
    catch_ups: &[String],
    fire_at: DateTime<Utc>,
    cfg: &MonitorConfig,
) -> DateTime<Utc> {
    let period = period_key(s.period, tz, fire_at);
    let last_try = catch_ups
        .iter()
        .filter_map(|hhmm| catch_up::next_after(tz, hhmm, fire_at))
        .filter(|t| period_key(s.period, tz, *t) == period)
        .max()
        .unwrap_or(fire_at);
    let run = kinds.get(s.kind.as_str()).deadline().unwrap_or_default();
    last_try + dur(run) + dur(cfg.missed_grace)
}

/// Periods of digest schedules without their artifact after their last chance.
pub(super) async fn missing_artifacts(
    cfg: &MonitorConfig,
    store: &dyn Store,
    kinds: &Kinds,
    now: DateTime<Utc>,
) -> Result<Vec<CheckResult>, kairos_store::Error> {
    let schedules = store
        .schedule_list(ScheduleList {
            state: Some("active".into()),
            limit: Some(cfg.max_schedules as i64),
        })
        .await?;
    let alerts = stored_of(store, names::MISSING_ARTIFACTS).await?;
    let mut out = Vec::new();
    for s in schedules {
        // Only schedules whose kind's product is an artifact.
        let Some(name) = kinds.artifact_of(&s) else {
            continue;
        };
        let name = name.as_str();
        let subject = Some(s.id.clone());
        let tz = match crate::zone::tz_of(&s) {
            Ok(tz) => tz,
            Err(e) => {
                out.push(CheckResult::new(
                    names::MISSING_ARTIFACTS,
                    subject,
                    CheckStatus::Error,
                    format!("schedule {:?}: {}", s.name, e.reason()),
                ));
                continue;
            }
        };
        let catch_ups: Vec<String> = store
            .catch_up_list(&s.id)
            .await?
            .into_iter()
            .map(|c| c.at)
            .collect();
        let alert = alerts.get(&s.id);
        let acked = alert.and_then(|a| a.acked_at);
        let since = lookback(alert, now, dur(cfg.missed_window)).max(s.created_at);
        if now <= since {
            continue;
        }
        let mut checked = 0usize;
        let mut missing = Vec::new();
        for fire_at in s.spec.firings_between(tz, since, now, MAX_EXPECTED_FIRINGS) {
            let due = due_by(kinds, &s, tz, &catch_ups, fire_at, cfg);
            if due > now {
                continue; // its last chance has not passed yet
            }
            if acked.is_some_and(|acked| due <= acked) {
                continue; // missing when the operator acknowledged it
            }
            checked += 1;
            let period = period_key(s.period, tz, fire_at);
            let key = ArtifactKey {
                name: name.to_string(),
                period_key: period.clone(),
            };
            if store.artifact_get(key).await?.is_none() {
                missing.push(period);
            }
        }
        if checked == 0 {
            continue;
        }
        let (status, text) = if missing.is_empty() {
            (
                CheckStatus::Ok,
                format!(
                    "digest {name:?}: all {checked} periods checked since {} have their artifact",
                    since.to_rfc3339()
                ),
            )
        } else {
            (
                CheckStatus::Warning,
                format!(
                    "digest {name:?}: {} of {checked} periods have no artifact after their last catch-up: {}",
                    missing.len(),
                    missing.join(", ")
                ),
            )
        };
        let mut r = CheckResult::new(names::MISSING_ARTIFACTS, subject, status, text);
        r.value = Some(missing.len() as f64);
        r.sample = Some(checked as i64);
        out.push(r);
    }
    Ok(out)
}
