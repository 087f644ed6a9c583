//! `monitor_stale`: the monitor watched from the outside. The background monitor records the
//! end of each completed pass in the store; whoever reads the report (`GET /v1/slo`,
//! `kairos slo`) compares it with three intervals. A monitor that stopped — no leader, a
//! leader whose passes fail — cannot warn about itself, so this check is evaluated only on
//! the read side and never raises a stored alert.

use super::checks::{dur, human};
use super::{CheckResult, CheckStatus, MonitorConfig, SloReport, check_error, names};
use chrono::{DateTime, SecondsFormat, Utc};
use kairos_store::Store;

/// How many intervals without a completed pass make the monitor stale.
const STALE_INTERVALS: u32 = 3;

/// Read the last completed pass into `report` and add the `monitor_stale` result (unless the
/// check is off). A failed read is that check's `error`, not the report's.
pub(super) async fn add(
    cfg: &MonitorConfig,
    store: &dyn Store,
    now: DateTime<Utc>,
    report: &mut SloReport,
) {
    let last = match store.monitor_pass_last().await {
        Ok(last) => last,
        Err(e) => {
            if cfg.enabled(names::MONITOR_STALE) {
                report.checks.push(check_error(names::MONITOR_STALE, &e));
            }
            return;
        }
    };
    add_last(cfg, last, now, report);
}

/// [`add`], with the last completed pass already read (`last`).
pub(super) fn add_last(
    cfg: &MonitorConfig,
    last: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
    report: &mut SloReport,
) {
    report.monitor_last_pass_at = last;
    if cfg.enabled(names::MONITOR_STALE) {
        report.checks.push(result(cfg, last, now));
        report.recount();
    }
}

/// Whether a monitor whose last completed pass was at `last` is stale at `now` (never before
/// its first pass): the one rule the report and the `kairos_slo_warning` gauge share.
pub fn is_stale(cfg: &MonitorConfig, last: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
    last.is_some_and(|t| now - t > dur(cfg.interval * STALE_INTERVALS))
}

/// The check's result for a last pass at `last`.
fn result(cfg: &MonitorConfig, last: Option<DateTime<Utc>>, now: DateTime<Utc>) -> CheckResult {
    let Some(last) = last else {
        // A new database, or a node that has only just started: nothing to compare with yet.
        return CheckResult::new(
            names::MONITOR_STALE,
            None,
            CheckStatus::InsufficientData,
            format!(
                "the background monitor has not completed a pass yet (it runs on the leader every {})",
                human(cfg.interval)
            ),
        );
    };
    let (age, limit) = (now - last, cfg.interval * STALE_INTERVALS);
    let stale = is_stale(cfg, Some(last), now);
    let mut r = CheckResult::new(
        names::MONITOR_STALE,
        None,
        if stale {
            CheckStatus::Warning
        } else {
            CheckStatus::Ok
        },
        if stale {
            format!(
                "the background monitor has not completed a pass since {} (more than {STALE_INTERVALS} intervals of {}): its warnings are not being raised — is a leader running, and do its passes fail (see its log)?",
                last.to_rfc3339_opts(SecondsFormat::Millis, true),
                human(cfg.interval)
            )
        } else {
            format!(
                "the background monitor completed a pass at {}",
                last.to_rfc3339_opts(SecondsFormat::Millis, true)
            )
        },
    );
    r.value = Some(age.num_milliseconds().max(0) as f64 / 1e3);
    r.threshold = Some(limit.as_secs_f64());
    r.since = stale.then_some(last);
    r
}
