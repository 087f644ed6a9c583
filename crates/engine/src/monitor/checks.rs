//! The built-in SLO checks. Each reads the store at `now` and returns results; none writes.

use super::{CheckResult, CheckStatus, MonitorConfig, names};
use chrono::SecondsFormat;
use chrono::{DateTime, Utc};
use kairos_store::{JobBacklog, ScheduleGapList, ScheduleList, Store};
use std::collections::{BTreeMap, HashMap};

/// Most expected firings counted per schedule and window: an every-second schedule over a day
/// would be 86,400; past this bound the count says "at least".
pub const MAX_EXPECTED_FIRINGS: usize = 10_000;
/// Most open gaps one evaluation reads (newest first).
const MAX_GAPS: i64 = 1_000;

pub(super) fn dur(d: std::time::Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

pub(super) fn human(d: std::time::Duration) -> String {
    kairos_core::retry::format_duration(d)
}

/// Failure rate per kind over the window: failed / (succeeded + failed), counting jobs that
/// reached a final state in the window. Skipped, cancelled and pending (available, running)
/// jobs are not in the denominator. Below `min_sample` decided jobs a kind has
/// "insufficient data", never a warning.
pub(super) async fn failure_rate(
    cfg: &MonitorConfig,
    store: &dyn Store,
    now: DateTime<Utc>,
) -> Result<Vec<CheckResult>, kairos_store::Error> {
    let since = now - dur(cfg.window);
    let counts =
        super::quarters::finished(store, since, now + chrono::Duration::milliseconds(1)).await?;
    // kind -> (succeeded, failed)
    let mut by_kind: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for c in counts {
        let e = by_kind.entry(c.kind).or_default();
        match c.state.as_str() {
            "succeeded" => e.0 += c.count,
            "dead" => e.1 += c.count,
            _ => {} // skipped, cancelled: not decided deliveries
        }
    }
    by_kind.retain(|_, (ok, failed)| *ok + *failed > 0);
    if by_kind.is_empty() {
        return Ok(vec![CheckResult::new(
            names::FAILURE_RATE,
            None,
            CheckStatus::InsufficientData,
            format!(
                "no job succeeded or failed in the last {}",
                human(cfg.window)
            ),
        )]);
    }
    Ok(by_kind
        .into_iter()
        .map(|(kind, (ok, failed))| {
            let decided = ok + failed;
            let rate = failed as f64 / decided as f64;
            let text = format!(
                "{failed} of {decided} decided {kind} jobs failed in the last {} ({:.1}%; threshold {:.1}%)",
                human(cfg.window),
                rate * 100.0,
                cfg.failure_rate * 100.0
            );
            let status = if (decided as u64) < cfg.min_sample {
                CheckStatus::InsufficientData
            } else if rate > cfg.failure_rate {
                CheckStatus::Warning
            } else {
                CheckStatus::Ok
            };
            let mut r = CheckResult::new(names::FAILURE_RATE, Some(kind), status, text);
            r.value = Some(rate);
            r.threshold = Some(cfg.failure_rate);
            r.sample = Some(decided);
            r
        })
        .collect())
}

/// Stuck work on two axes: jobs due longer than `stuck_after` and not claimed, and
/// jobs still running more than `lease_grace` after their lease ended (the rescuer should
/// have returned them: it is not running, or cannot write).
pub(super) async fn stuck(
    cfg: &MonitorConfig,
    store: &dyn Store,
    now: DateTime<Utc>,
) -> Result<Vec<CheckResult>, kairos_store::Error> {
    let b = store
        .job_backlog(JobBacklog {
            now,
            stuck_before: now - dur(cfg.stuck_after),
            lease_expired_before: now - dur(cfg.lease_grace),
        })
        .await?;
    let mut out = Vec::new();
    if cfg.enabled(names::STUCK_DUE) {
        let (status, text) = if b.stuck > 0 {
            let oldest = b
                .oldest_due_at
                .map(|t| format!(", the oldest due since {}", t.to_rfc3339()))
                .unwrap_or_default();
            (
                CheckStatus::Warning,
                format!(
                    "{} jobs due for more than {} and not claimed{oldest}",
                    b.stuck,
                    human(cfg.stuck_after)
                ),
            )
        } else {
            (
                CheckStatus::Ok,
                format!(
                    "no job due for more than {} ({} due now)",
                    human(cfg.stuck_after),
                    b.due
                ),
            )
        };
        let mut r = CheckResult::new(names::STUCK_DUE, None, status, text);
        r.value = Some(b.stuck as f64);
        r.threshold = Some(cfg.stuck_after.as_secs_f64());
        out.push(r);
    }
    if cfg.enabled(names::LEASE_EXPIRED) {
        let (status, text) = if b.lease_expired > 0 {
            (
                CheckStatus::Warning,
                format!(
                    "{} jobs running more than {} past their lease (is the rescuer running?)",
                    b.lease_expired,
                    human(cfg.lease_grace)
                ),
            )
        } else {
            (CheckStatus::Ok, "no job running past its lease".to_string())
        };
        let mut r = CheckResult::new(names::LEASE_EXPIRED, None, status, text);
        r.value = Some(b.lease_expired as f64);
        out.push(r);
    }
    Ok(out)
}

/// Missed firings, from the gap records the scheduler writes (one per run of due firings that
/// did not run, and reason): one warning per gap not yet recovered, finished one-shots
/// included, with the subject `sch_…@<first missed firing>`; a gap recovers at its schedule's
/// next on-time firing. And per active schedule (subject `sch_…`): a warning while its next
/// firing is more than `missed_grace` overdue (no scheduler is firing it, so no gap can be
/// recorded yet), else ok with the count of its open gaps.
pub(super) async fn missed_firings(
    cfg: &MonitorConfig,
    store: &dyn Store,
    now: DateTime<Utc>,
) -> Result<Vec<CheckResult>, kairos_store::Error> {
    let schedules = store
        .schedule_list(ScheduleList {
            state: Some("active".into()),
            limit: Some(cfg.max_schedules as i64),
        })
        .await?;
    let gaps = store
        .schedule_gap_list(ScheduleGapList {
            schedule_id: None,
            open: true,
            limit: Some(MAX_GAPS),
        })
        .await?;
    let mut names: HashMap<String, String> = schedules
        .iter()
        .map(|s| (s.id.clone(), s.name.clone()))
        .collect();
    let mut open: HashMap<&str, usize> = HashMap::new();
    let mut out = Vec::new();
    for g in &gaps {
        *open.entry(g.schedule_id.as_str()).or_default() += 1;
        if !names.contains_key(&g.schedule_id) {
            // A finished (or paused) schedule: its gaps still warn.
            let name = store
                .schedule_get(&g.schedule_id)
                .await?
                .map_or_else(|| g.schedule_id.clone(), |s| s.name);
            names.insert(g.schedule_id.clone(), name);
        }
        let name = &names[&g.schedule_id];
        let first = g.first_fire_at.to_rfc3339_opts(SecondsFormat::Secs, true);
        let last = g.last_fire_at.to_rfc3339_opts(SecondsFormat::Secs, true);
        let span = if g.count == 1 {
            format!("the firing at {first} did not run")
        } else {
            format!("{} firings from {first} to {last} did not run", g.count)
        };
        let why = match g.reason.as_str() {
            "skip" => "dropped by its misfire policy",
            "window" => "later than its misfire window",
            other => other,
        };
        let mut r = CheckResult::new(
            names::MISSED_FIRINGS,
            Some(format!("{}@{first}", g.schedule_id)),
            CheckStatus::Warning,
            format!("schedule {name:?}: {span} ({why}); clears at its next on-time firing"),
        );
        r.value = Some(g.count as f64);
        out.push(r);
    }
    let overdue_before = now - dur(cfg.missed_grace);
    for s in schedules {
        let gaps = open.get(s.id.as_str()).copied().unwrap_or(0);
        let (status, text) = match s.next_fire_at.filter(|n| *n < overdue_before) {
            Some(n) => (
                CheckStatus::Warning,
                format!(
                    "schedule {:?}: due since {} and not fired: is a scheduler running?",
                    s.name,
                    n.to_rfc3339_opts(SecondsFormat::Secs, true)
                ),
            ),
            None => (
                CheckStatus::Ok,
                format!(
                    "schedule {:?}: fired on time ({gaps} missed gaps open)",
                    s.name
                ),
            ),
        };
        let mut r = CheckResult::new(names::MISSED_FIRINGS, Some(s.id.clone()), status, text);
        r.value = Some(gaps as f64);
        out.push(r);
    }
    Ok(out)
}
