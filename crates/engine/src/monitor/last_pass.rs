//! The last completed pass's findings, read back: what the admin's overview shows instead of
//! evaluating every check at each page load. Some checks read a day or a week of finished jobs
//! (`skip_rate`, `bounce_rate`, `complaint_rate`); evaluated at every load of a page that
//! refreshes itself every few seconds, in every operator's tab, they kept the database busy.
//! The leader's monitor evaluates them once a minute anyway, and records what it found with
//! the pass.

use super::{CheckResult, Monitor, SloReport, stale};
use chrono::{DateTime, Utc};

impl Monitor {
    /// The last completed pass's report as [`Monitor::report`] shows one (each warning's
    /// `since`, the last pass, `monitor_stale`), its `at` the pass's instant. `None` — the
    /// caller evaluates — before the first pass, for a pass recorded without its findings
    /// (before migration 0037) or with findings this version cannot read, and when the monitor
    /// is stale: a stopped monitor's last findings are not the state now.
    pub async fn report_last(
        &self,
        now: DateTime<Utc>,
    ) -> Result<Option<SloReport>, kairos_store::Error> {
        let Some(pass) = self.store.monitor_pass_get().await? else {
            return Ok(None);
        };
        if stale::is_stale(&self.cfg, Some(pass.at), now) {
            return Ok(None);
        }
        let Some(checks) = pass
            .report
            .as_deref()
            .and_then(|r| serde_json::from_str::<Vec<CheckResult>>(r).ok())
        else {
            return Ok(None);
        };
        let mut report = SloReport::new(pass.at, checks);
        self.since(&mut report).await?;
        stale::add_last(&self.cfg, Some(pass.at), now, &mut report);
        Ok(Some(report))
    }
}
