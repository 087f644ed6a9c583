//! Checks on how runs ended, for the failures the rate-based checks cannot see: a daily job
//! that dies is one job, always "insufficient data" for the failure rate, and counted as
//! materialized by the missed-firings check.
//!
//! - `dead_runs`: one warning per schedule with a job that ended `dead` in the window. Only
//!   warnings are listed: a schedule without a dead job has no entry. Once raised, the warning
//!   stays while the job is dead — however long ago it died — and clears when it is replayed
//!   and succeeds, or when the alert is acknowledged (a job that dies later warns again).
//! - `skip_rate`: one warning per schedule (or topic, for `email` jobs enqueued without a
//!   schedule) when more than half of its decided jobs in the window — succeeded, skipped,
//!   dead — were skipped for the same reason, and at least `skip_min` of them. Skips are deliberate
//!   outcomes and stay out of the failure rate, so a topic whose entitlement URL is
//!   wrong (every recipient `not_entitled`) would otherwise look healthy.
//! - `expansions_stuck`: one warning per schedule with an audience expansion that is not done
//!   and has not advanced (written a page) for longer than `expansion_stuck_after`: the
//!   expander fails on it at every tick, or does not run. Its recipients get nothing.

use super::alerts::{lookback, stored_of};
use super::checks::{dur, human};
use super::{CheckResult, CheckStatus, MonitorConfig, names};
use chrono::{DateTime, Utc};
use kairos_store::{JobDeadScheduled, Store};
use std::collections::BTreeMap;

/// Longest last error quoted in a message.
const MAX_ERROR_CHARS: usize = 300;

fn excerpt(s: &str) -> String {
    let s = s.trim();
    if s.chars().count() <= MAX_ERROR_CHARS {
        return s.to_string();
    }
    let mut out: String = s.chars().take(MAX_ERROR_CHARS).collect();
    out.push('…');
    out
}

/// Schedules whose occurrences ended with a dead job in the window — or since before their
/// warning began, while it is active — and not acknowledged: one warning each, naming the
/// latest dead job's channel, kind, period and last error.
pub(super) async fn dead_runs(
    cfg: &MonitorConfig,
    store: &dyn Store,
    now: DateTime<Utc>,
) -> Result<Vec<CheckResult>, kairos_store::Error> {
    let window = dur(cfg.dead_runs_window);
    let alerts = stored_of(store, names::DEAD_RUNS).await?;
    // One read from the earliest start any schedule needs; each is cut to its own below.
    let since = alerts
        .values()
        .map(|a| lookback(Some(a), now, window))
        .fold(now - window, DateTime::min);
    let rows = store
        .job_dead_scheduled(JobDeadScheduled {
            since,
            until: now + chrono::Duration::milliseconds(1),
            limit: cfg.max_schedules as i64,
        })
        .await?;
    Ok(rows
        .into_iter()
        .filter(|r| {
            // The row's job is its schedule's latest death: older than the schedule's own
            // start, or acknowledged, means every one of them is.
            let alert = alerts.get(&r.schedule_id);
            r.finished_at >= lookback(alert, now, window)
                && alert
                    .and_then(|a| a.acked_at)
                    .is_none_or(|acked| r.finished_at > acked)
        })
        .map(|r| {
            let schedule = match &r.schedule_name {
                Some(name) => format!("schedule {name:?}"),
                None => format!("schedule {} (deleted)", r.schedule_id),
            };
            let channel = r.channel.as_deref().unwrap_or(r.kind.as_str());
            let period = r
                .period_key
                .as_deref()
                .map(|p| format!(" for period {p}"))
                .unwrap_or_default();
            let error = r
                .last_error
                .as_deref()
                .map(excerpt)
                .unwrap_or_else(|| "no error recorded".to_string());
            let text = format!(
                "{schedule}: {} job(s) ended dead and were not replayed (warned from the last {}; it stays until they are replayed and succeed, or it is acknowledged); latest: channel {channel:?} (kind {}){period}, job {}, last error: {error}",
                r.dead,
                human(cfg.dead_runs_window),
                r.kind,
                r.job_id,
            );
            let mut c = CheckResult::new(
                names::DEAD_RUNS,
                Some(r.schedule_id),
                CheckStatus::Warning,
                text,
            );
            c.value = Some(r.dead as f64);
            c
        })
        .collect())
}

/// Decided jobs of one schedule or topic: the total, and the skips per reason.
#[derive(Default)]
struct Decided {
    total: i64,
    skipped: BTreeMap<String, i64>,
}

/// Schedules (and topics of jobs without a schedule) most of whose decided jobs in the window
/// were skipped for one reason.
pub(super) async fn skip_rate(
    cfg: &MonitorConfig,
    store: &dyn Store,
    kinds: &crate::kinds::Kinds,
    now: DateTime<Utc>,
) -> Result<Vec<CheckResult>, kairos_store::Error> {
    let rows = super::quarters::decided(
        store,
        &kinds.topic_kinds(),
        now - dur(cfg.skip_window),
        now + chrono::Duration::milliseconds(1),
    )
    .await?;
    // (is a schedule, subject) -> counts
    let mut by_subject: BTreeMap<(bool, String), Decided> = BTreeMap::new();
    for r in rows {
        let key = match (r.schedule_id, r.topic) {
            (Some(s), _) => (true, s),
            (None, Some(t)) => (false, t),
            (None, None) => continue,
        };
        let d = by_subject.entry(key).or_default();
        d.total += r.count;
        if r.state == "skipped" {
            let reason = r.reason.unwrap_or_else(|| "(no reason)".to_string());
            *d.skipped.entry(reason).or_default() += r.count;
        }
    }
    let mut out = Vec::new();
    for ((is_schedule, subject), d) in by_subject {
        let Some((reason, skipped)) = d
            .skipped
            .iter()
            .filter(|(reason, _)| !cfg.skip_ignore.iter().any(|i| i == *reason))
            .max_by_key(|(_, n)| **n)
            .map(|(r, n)| (r.clone(), *n))
        else {
            continue;
        };
        if (skipped as u64) < cfg.skip_min || skipped * 2 <= d.total {
            continue;
        }
        let what = if is_schedule {
            match store.schedule_get(&subject).await? {
                Some(s) => format!("schedule {:?}", s.name),
                None => format!("schedule {subject} (deleted)"),
            }
        } else {
            format!("topic {subject:?}")
        };
        let rate = skipped as f64 / d.total as f64;
        // The reason first: it is what the operator has to fix.
        let text = format!(
            "{reason}: {skipped} of {} decided jobs of {what} in the last {} were skipped for this reason ({:.0}%)",
            d.total,
            human(cfg.skip_window),
            rate * 100.0
        );
        let mut c = CheckResult::new(names::SKIP_RATE, Some(subject), CheckStatus::Warning, text);
        c.value = Some(rate);
        c.threshold = Some(0.5);
        c.sample = Some(d.total);
        out.push(c);
    }
    Ok(out)
}

/// Audience expansions not done that have not advanced for longer than the threshold, one
/// warning per schedule (its oldest such expansion named).
pub(super) async fn expansions_stuck(
    cfg: &MonitorConfig,
    store: &dyn Store,
    now: DateTime<Utc>,
) -> Result<Vec<CheckResult>, kairos_store::Error> {
    let before = now - dur(cfg.expansion_stuck_after);
    // Least recently advanced first: the stuck ones lead the list.
    let pending = store.expansion_pending(cfg.max_schedules as i64).await?;
    let mut by_schedule: BTreeMap<String, Vec<kairos_store::Expansion>> = BTreeMap::new();
    for e in pending.into_iter().filter(|e| e.updated_at <= before) {
        by_schedule
            .entry(e.schedule_id.clone())
            .or_default()
            .push(e);
    }
    let mut out = Vec::new();
    for (schedule_id, stuck) in by_schedule {
        let Some(oldest) = stuck.iter().min_by_key(|e| e.updated_at) else {
            continue;
        };
        let what = match store.schedule_get(&schedule_id).await? {
            Some(s) => format!("schedule {:?}", s.name),
            None => format!("schedule {schedule_id} (deleted)"),
        };
        let text = format!(
            "{what}: {} audience expansion(s) not advanced for more than {}; the oldest, period {} (fired {}), last advanced {} with {} job(s) created",
            stuck.len(),
            human(cfg.expansion_stuck_after),
            oldest.period_key,
            oldest.fire_at.to_rfc3339(),
            oldest.updated_at.to_rfc3339(),
            oldest.created,
        );
        let mut c = CheckResult::new(
            names::EXPANSIONS_STUCK,
            Some(schedule_id),
            CheckStatus::Warning,
            text,
        );
        c.value = Some(stuck.len() as f64);
        c.threshold = Some(cfg.expansion_stuck_after.as_secs_f64());
        out.push(c);
    }
    Ok(out)
}
