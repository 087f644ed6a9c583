//! Checks on how runs ended, for the failures the rate-based checks cannot see: a daily job
//! that dies is one job, always "insufficient data" for the failure rate, and counted as
//! materialized by the missed-firings check.
//!
//! - `dead_runs`: one warning per schedule with a job that ended `dead` in the window. Only
//!   warnings are listed: a schedule without a dead job has no entry, and when its dead jobs
//!   leave the window (or are replayed) the warning clears.

use super::checks::{dur, human};
use super::{CheckResult, CheckStatus, MonitorConfig, names};
use chrono::{DateTime, Utc};
use kairos_store::{JobDeadScheduled, Store};

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

/// Schedules whose occurrences ended with a dead job in the window: one warning each, naming
/// the latest dead job's channel, kind, period and last error.
pub(super) async fn dead_runs(
    cfg: &MonitorConfig,
    store: &dyn Store,
    now: DateTime<Utc>,
) -> Result<Vec<CheckResult>, kairos_store::Error> {
    let rows = store
        .job_dead_scheduled(JobDeadScheduled {
            since: now - dur(cfg.dead_runs_window),
            until: now + chrono::Duration::milliseconds(1),
            limit: cfg.max_schedules as i64,
        })
        .await?;
    Ok(rows
        .into_iter()
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
                "{schedule}: {} job(s) ended dead in the last {}; latest: channel {channel:?} (kind {}){period}, job {}, last error: {error}",
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
