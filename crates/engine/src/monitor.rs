//! The monitor: SLO checks over the store, each a *warning* and never a failure.
//!
//! - `failure_rate` per job kind (channel) over a window: failed / (succeeded + failed);
//!   skipped and pending jobs are not in the denominator; below a minimum sample a
//!   kind has "insufficient data", not a warning.
//! - `stuck_due`: jobs due for longer than a threshold and not claimed.
//! - `lease_expired`: jobs running past their lease by more than a grace, on its own
//!   axis.
//! - `missed_firings`: one warning per recorded gap of firings that did not run (dropped by
//!   the misfire policy or older than the window), finished one-shots included, until the
//!   schedule's next on-time firing; and per active schedule, a warning while its next firing
//!   is overdue (no scheduler is firing it).
//! - `missing_artifacts`: for each active digest schedule, the periods without an artifact
//!   after their last catch-up.
//! - `dead_runs`: for each schedule, the jobs of its occurrences that ended `dead` in the
//!   window: a daily job that dies is one warning, not "insufficient data".
//! - `skip_rate`: for each schedule (or topic of `email` jobs without one), more than half of
//!   its decided jobs in the window skipped for one reason (a wrong entitlement URL skips
//!   everyone as `not_entitled`, and skips are outside the failure rate).
//! - `expansions_stuck`: audience expansions not done that have not advanced for longer than
//!   a threshold (one that fails on every tick never advances).
//! - `endpoint_disabled`: one warning per webhook endpoint disabled after a sustained failure
//!   streak, until it is enabled again.
//! - `db_horizon`: a transaction that has held the database's cleanup back (PostgreSQL:
//!   a session's snapshot; SQLite: a reader keeping checkpoints behind) for longer than a
//!   threshold, before the queue slows down for it.
//! - `monitor_stale`: the background monitor has not completed a pass in three intervals.
//!   Evaluated only when the report is read ([`Monitor::report`]): a monitor that stopped
//!   cannot warn about itself.
//! - `bounce_rate`, `complaint_rate` and `inbound_unknown`: mail that bounces, is marked as
//!   spam, or provider events kairos does not understand (see `monitor/deliverability.rs`).
//! - Further checks plug in through [`ExtraCheck`].
//!
//! Each check is evaluated on its own: one whose store read fails is a result with status
//! `error` naming the check and the error, and the others still answer (its stored alerts are
//! kept as they are). A warning about something that can be fixed (`dead_runs`,
//! `missing_artifacts`) stays until it is fixed or acknowledged ([`ack`]), not until it leaves
//! the window; rate checks recover when their rate falls.
//!
//! A leader-only [`Service`]: [`MonitorConfig`] with defaults and `validate()`,
//! [`Monitor::run_once`]; the [`Runner`](crate::service::Runner) runs it only while this node
//! leads, and logs a failed run without stopping (a monitor must never take the engine down).
//! A run evaluates the checks, records warning and
//! recovery transitions in the store, logs them, counts them, and sends each once to the
//! optional alert webhook ([`AlertSink`]). [`Monitor::report`] is the read-only evaluation the
//! CLI (`kairos slo`) and the API (`GET /v1/slo`) show.

mod alerts;
mod artifacts;
mod checks;
mod deliverability;
mod endpoints;
mod horizon;
mod last_pass;
pub mod quarters;
mod runs;
mod stale;

pub use alerts::{AckError, AlertChanges, AlertSink, ack};
pub use checks::MAX_EXPECTED_FIRINGS;
pub use stale::is_stale;

use crate::service::{Service, ServiceConfig};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use kairos_store::Store;
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

/// The built-in check names (the `check` label of `kairos_slo_warning`).
pub mod names {
    /// Failure rate per kind.
    pub const FAILURE_RATE: &str = "failure_rate";
    /// Due and not claimed for too long.
    pub const STUCK_DUE: &str = "stuck_due";
    /// Running past the lease.
    pub const LEASE_EXPIRED: &str = "lease_expired";
    /// Firings expected and not materialized.
    pub const MISSED_FIRINGS: &str = "missed_firings";
    /// Digest periods without their artifact after their last catch-up.
    pub const MISSING_ARTIFACTS: &str = "missing_artifacts";
    /// Schedules whose occurrences ended with a dead job.
    pub const DEAD_RUNS: &str = "dead_runs";
    /// Schedules or topics whose jobs were mostly skipped for one reason.
    pub const SKIP_RATE: &str = "skip_rate";
    /// Audience expansions that stopped advancing.
    pub const EXPANSIONS_STUCK: &str = "expansions_stuck";
    /// Webhook endpoints disabled after a failure streak.
    pub const ENDPOINT_DISABLED: &str = "endpoint_disabled";
    /// A transaction holding the database's cleanup back.
    pub const DB_HORIZON: &str = "db_horizon";
    /// The background monitor has not completed a pass in three intervals (read side only).
    pub const MONITOR_STALE: &str = "monitor_stale";
    /// The checks whose warnings an operator can acknowledge: what they warn about can be
    /// fixed, and stays until it is fixed or acknowledged. The others recover on their own
    /// when their measure falls.
    pub const ACKABLE: &[&str] = &[MISSING_ARTIFACTS, DEAD_RUNS];
    /// Topics whose sent mails bounce too often.
    pub const BOUNCE_RATE: &str = "bounce_rate";
    /// Topics whose sent mails are marked as spam too often.
    pub const COMPLAINT_RATE: &str = "complaint_rate";
    /// Provider events stored without action (unknown or untyped).
    pub const INBOUND_UNKNOWN: &str = "inbound_unknown";
    /// All of them.
    pub const ALL: &[&str] = &[
        FAILURE_RATE,
        STUCK_DUE,
        LEASE_EXPIRED,
        MISSED_FIRINGS,
        MISSING_ARTIFACTS,
        DEAD_RUNS,
        SKIP_RATE,
        EXPANSIONS_STUCK,
        ENDPOINT_DISABLED,
        DB_HORIZON,
        MONITOR_STALE,
        BOUNCE_RATE,
        COMPLAINT_RATE,
        INBOUND_UNKNOWN,
    ];
}

/// The longest window or threshold of time a check takes (366 days, as the environment's
/// windows).
pub const MAX_WINDOW: Duration = Duration::from_secs(366 * 24 * 3600);

/// Monitor settings. Every threshold has an environment variable in `kairos serve`
/// (`KAIROS_SLO_…`, see docs/operations.md).
#[derive(Debug, Clone)]
pub struct MonitorConfig {
    /// How often the checks run. Default 60 s.
    pub interval: Duration,
    /// The failure-rate window. Default 1 h.
    pub window: Duration,
    /// A kind's failure rate above this is a warning. Default 0.1 (10 %).
    pub failure_rate: f64,
    /// Fewest decided jobs (succeeded + failed) in the window for a rate to count. Default 20.
    pub min_sample: u64,
    /// A job due longer than this and not claimed is stuck. Default 1 h.
    pub stuck_after: Duration,
    /// A running job this long past its lease end is stuck. Default 60 s.
    pub lease_grace: Duration,
    /// The missed-firings window. Default 24 h.
    pub missed_window: Duration,
    /// Firings more recent than this are not expected yet (the scheduler's lag). Default 5 min.
    pub missed_grace: Duration,
    /// Most schedules examined per run (newest first). Default 1000.
    pub max_schedules: usize,
    /// The dead-runs window: a schedule's job that died this recently raises a warning, which
    /// then stays until the job is replayed and succeeds or the alert is acknowledged.
    /// Default 24 h.
    pub dead_runs_window: Duration,
    /// The skip-rate window. Default 24 h.
    pub skip_window: Duration,
    /// Fewest skips for one reason before the skip rate can warn. Default 5.
    pub skip_min: u64,
    /// Skip reasons the skip rate does not count as a problem (e.g. `unsubscribed`, for
    /// topics most of whose subscribers left). Default none.
    pub skip_ignore: Vec<String>,
    /// An audience expansion not done and not advanced for this long is stuck. Default
    /// 15 min.
    pub expansion_stuck_after: Duration,
    /// A transaction holding the database's cleanup back longer than this warns. Default
    /// 300 s.
    pub db_horizon: Duration,
    /// A topic's bounced mails above this share of its sent mails is a warning. Default
    /// 0.05 (5 %).
    pub bounce_rate: f64,
    /// A topic's mails marked as spam above this share of its sent mails is a warning.
    /// Default 0.003 (0.3 %).
    pub complaint_rate: f64,
    /// The bounce and complaint rates' window. Default 7 days.
    pub deliverability_window: Duration,
    /// Fewest mails sent by a topic in the window for its rates to count. Default 200.
    pub deliverability_min_sent: u64,
    /// The `inbound_unknown` window. Default 24 h.
    pub inbound_unknown_window: Duration,
    /// Checks turned off, by name.
    pub disabled: Vec<String>,
}

impl Default for MonitorConfig {
    fn default() -> Self {
        MonitorConfig {
            interval: Duration::from_secs(60),
            window: Duration::from_secs(3600),
            failure_rate: 0.1,
            min_sample: 20,
            stuck_after: Duration::from_secs(3600),
            lease_grace: Duration::from_secs(60),
            missed_window: Duration::from_secs(24 * 3600),
            missed_grace: Duration::from_secs(300),
            max_schedules: 1000,
            dead_runs_window: Duration::from_secs(24 * 3600),
            skip_window: Duration::from_secs(24 * 3600),
            skip_min: 5,
            skip_ignore: Vec::new(),
            expansion_stuck_after: Duration::from_secs(15 * 60),
            db_horizon: Duration::from_secs(300),
            bounce_rate: 0.05,
            complaint_rate: 0.003,
            deliverability_window: Duration::from_secs(7 * 24 * 3600),
            deliverability_min_sent: 200,
            inbound_unknown_window: Duration::from_secs(24 * 3600),
            disabled: Vec::new(),
        }
    }
}

impl ServiceConfig for MonitorConfig {
    fn validate(&self) -> Result<(), kairos_core::Error> {
        MonitorConfig::validate(self)
    }
}

impl MonitorConfig {
    /// Check the settings; the error names the field.
    pub fn validate(&self) -> Result<(), kairos_core::Error> {
        use kairos_core::Error;
        for (field, d) in [
            ("monitor.interval", self.interval),
            ("monitor.window", self.window),
            ("monitor.stuck_after", self.stuck_after),
            ("monitor.missed_window", self.missed_window),
            ("monitor.dead_runs_window", self.dead_runs_window),
            ("monitor.skip_window", self.skip_window),
            ("monitor.expansion_stuck_after", self.expansion_stuck_after),
            ("monitor.db_horizon", self.db_horizon),
            ("monitor.deliverability_window", self.deliverability_window),
            (
                "monitor.inbound_unknown_window",
                self.inbound_unknown_window,
            ),
        ] {
            if d.is_zero() {
                return Err(Error::invalid(field, "must be more than 0"));
            }
            // A window reaches back from now: one longer than any calendar holds would
            // overflow the instant it starts at.
            if d > MAX_WINDOW {
                return Err(Error::invalid(field, "must be at most 366 days"));
            }
        }
        for (field, d) in [
            ("monitor.lease_grace", self.lease_grace),
            ("monitor.missed_grace", self.missed_grace),
        ] {
            if d > MAX_WINDOW {
                return Err(Error::invalid(field, "must be at most 366 days"));
            }
        }
        for (field, rate) in [
            ("monitor.failure_rate", self.failure_rate),
            ("monitor.bounce_rate", self.bounce_rate),
            ("monitor.complaint_rate", self.complaint_rate),
        ] {
            if !(0.0..=1.0).contains(&rate) {
                return Err(Error::invalid(field, "must be between 0 and 1"));
            }
        }
        if self.deliverability_min_sent == 0 {
            return Err(Error::invalid(
                "monitor.deliverability_min_sent",
                "must be at least 1",
            ));
        }
        if self.skip_min == 0 {
            return Err(Error::invalid("monitor.skip_min", "must be at least 1"));
        }
        if self.max_schedules == 0 {
            return Err(Error::invalid(
                "monitor.max_schedules",
                "must be at least 1",
            ));
        }
        if let Some(bad) = self
            .disabled
            .iter()
            .find(|d| !names::ALL.contains(&d.as_str()))
        {
            return Err(Error::invalid(
                "monitor.disabled",
                format!("{bad:?} is not a check: use {}", names::ALL.join(", ")),
            ));
        }
        Ok(())
    }

    /// Whether the check `name` runs.
    pub fn enabled(&self, name: &str) -> bool {
        !self.disabled.iter().any(|d| d == name)
    }
}

/// The status of one check on one subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    /// Within the objective.
    Ok,
    /// Outside it: a warning (never a failure).
    Warning,
    /// Too few samples to judge.
    InsufficientData,
    /// The check could not be evaluated for this subject (its stored alert is kept as is).
    Error,
}

/// One check's result on one subject (a kind, a schedule) or on the whole engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    /// The check (`failure_rate`, `stuck_due`, …).
    pub check: String,
    /// What it is about: a job kind, a schedule id, or nothing for engine-wide checks.
    pub subject: Option<String>,
    /// Ok, warning, insufficient data, error.
    pub status: CheckStatus,
    /// The measured value (a rate, a count).
    pub value: Option<f64>,
    /// The threshold the value was compared with.
    pub threshold: Option<f64>,
    /// How many samples the value is over (decided jobs, expected firings).
    pub sample: Option<i64>,
    /// A sentence for people.
    pub message: String,
    /// While warning: since when (from the stored alert state).
    pub since: Option<DateTime<Utc>>,
}

impl CheckResult {
    /// A result without value, threshold or sample.
    pub fn new(
        check: &str,
        subject: Option<String>,
        status: CheckStatus,
        message: impl Into<String>,
    ) -> Self {
        CheckResult {
            check: check.to_string(),
            subject,
            status,
            value: None,
            threshold: None,
            sample: None,
            message: message.into(),
            since: None,
        }
    }

    /// `check` or `check:subject`: the key of its alert state.
    pub fn key(&self) -> String {
        match &self.subject {
            Some(s) => format!("{}:{s}", self.check),
            None => self.check.clone(),
        }
    }
}

/// What the checks found at one instant.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SloReport {
    /// When evaluated.
    pub at: DateTime<Utc>,
    /// When the background monitor last completed a pass (from the store); `None` before its
    /// first, and in a run's own evaluation.
    pub monitor_last_pass_at: Option<DateTime<Utc>>,
    /// How many results are warnings.
    pub warnings: usize,
    /// Every result, by check then subject.
    pub checks: Vec<CheckResult>,
}

/// What one run did.
#[derive(Debug, Clone, PartialEq)]
pub struct MonitorReport {
    /// The evaluation.
    pub slo: SloReport,
    /// Transitions recorded and delivered.
    pub alerts: AlertChanges,
}

/// A check added by another part of kairos or by an embedding application — the hook for
/// checks that need their own domain (e.g. artifact periods missing after their last
/// catch-up). Its results are alerted and shown like the built-in ones; its check
/// names should be stable (they are metric labels and alert keys).
#[async_trait]
pub trait ExtraCheck: Send + Sync + 'static {
    /// The check's name, used for its `error` result when [`evaluate`](Self::evaluate)
    /// fails.
    fn name(&self) -> &str {
        "extra"
    }

    /// Evaluate at `now`; read only.
    async fn evaluate(
        &self,
        store: &dyn Store,
        now: DateTime<Utc>,
    ) -> Result<Vec<CheckResult>, kairos_store::Error>;
}

impl SloReport {
    /// A report of `checks` at `at`, its warnings counted.
    fn new(at: DateTime<Utc>, checks: Vec<CheckResult>) -> Self {
        let warnings = checks
            .iter()
            .filter(|c| c.status == CheckStatus::Warning)
            .count();
        SloReport {
            at,
            monitor_last_pass_at: None,
            warnings,
            checks,
        }
    }

    /// Count the warnings again (after a result was added).
    fn recount(&mut self) {
        self.warnings = self
            .checks
            .iter()
            .filter(|c| c.status == CheckStatus::Warning)
            .count();
    }
}

/// Add one check's results to `out`; a check that failed becomes one `error` result naming it
/// and the error, so that the others still answer.
fn run(
    out: &mut Vec<CheckResult>,
    check: &str,
    results: Result<Vec<CheckResult>, kairos_store::Error>,
) {
    match results {
        Ok(r) => out.extend(r),
        Err(e) => out.push(check_error(check, &e)),
    }
}

/// The `error` result of a check whose read failed (logged: the store's error text names the
/// statement, never a row's data).
fn check_error(check: &str, e: &kairos_store::Error) -> CheckResult {
    tracing::warn!(target: "kairos::slo", check, error = %e, "SLO check could not be evaluated");
    CheckResult::new(
        check,
        None,
        CheckStatus::Error,
        format!("{check} could not be evaluated: {e}"),
    )
}

/// The monitor.
#[derive(Clone)]
pub struct Monitor {
    cfg: MonitorConfig,
    store: Arc<dyn Store>,
    /// The node's kinds: which make artifacts, send mail, deliver to topics.
    kinds: Arc<crate::kinds::Kinds>,
    sink: Option<AlertSink>,
    extra: Vec<Arc<dyn ExtraCheck>>,
}

impl std::fmt::Debug for Monitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Monitor")
            .field("cfg", &self.cfg)
            .field("alerts", &self.sink.is_some())
            .field("extra_checks", &self.extra.len())
            .finish_non_exhaustive()
    }
}

impl Monitor {
    /// A monitor over `store`, without an alert webhook. Fails if the config is not valid.
    pub fn new(cfg: MonitorConfig, store: Arc<dyn Store>) -> Result<Self, kairos_core::Error> {
        cfg.validate()?;
        Ok(Monitor {
            cfg,
            store,
            kinds: Arc::default(),
            sink: None,
            extra: Vec::new(),
        })
    }

    /// Check the schedules and jobs of `kinds` (the built-in kinds without this call).
    pub fn with_kinds(mut self, kinds: Arc<crate::kinds::Kinds>) -> Self {
        self.kinds = kinds;
        self
    }

    /// Send warnings and recoveries to `sink`.
    pub fn with_alerts(mut self, sink: AlertSink) -> Self {
        self.sink = Some(sink);
        self
    }

    /// Add a check.
    pub fn with_check(mut self, check: Arc<dyn ExtraCheck>) -> Self {
        self.extra.push(check);
        self
    }

    /// The settings.
    pub fn config(&self) -> &MonitorConfig {
        &self.cfg
    }

    /// Evaluate every enabled check at `now`, each on its own: a check whose read fails is an
    /// `error` result and the others still run. Reads only.
    ///
    /// Boxed here: the checks' reads, inlined into one future, are about 90 kB of machine code,
    /// and an `async fn` is compiled again in every crate that awaits it (the engine, the
    /// server and the CLI); a box made in this crate is compiled once.
    #[inline(never)]
    pub fn evaluate(
        &self,
        now: DateTime<Utc>,
    ) -> futures::future::BoxFuture<'_, Result<SloReport, kairos_store::Error>> {
        Box::pin(self.evaluate_checks(now))
    }

    /// [`evaluate`](Self::evaluate), unboxed.
    async fn evaluate_checks(&self, now: DateTime<Utc>) -> Result<SloReport, kairos_store::Error> {
        let cfg = &self.cfg;
        let store = self.store.as_ref();
        let kinds = self.kinds.as_ref();
        let mut out = Vec::new();
        let on = |name| cfg.enabled(name);
        if on(names::FAILURE_RATE) {
            run(
                &mut out,
                names::FAILURE_RATE,
                checks::failure_rate(cfg, store, now).await,
            );
        }
        if on(names::STUCK_DUE) || on(names::LEASE_EXPIRED) {
            // One read answers both: its failure is an error of each.
            match checks::stuck(cfg, store, now).await {
                Ok(r) => out.extend(r),
                Err(e) => {
                    out.push(check_error(names::STUCK_DUE, &e));
                    out.push(check_error(names::LEASE_EXPIRED, &e));
                }
            }
        }
        if on(names::MISSED_FIRINGS) {
            run(
                &mut out,
                names::MISSED_FIRINGS,
                checks::missed_firings(cfg, store, now).await,
            );
        }
        if on(names::MISSING_ARTIFACTS) {
            let r = artifacts::missing_artifacts(cfg, store, kinds, now).await;
            run(&mut out, names::MISSING_ARTIFACTS, r);
        }
        if on(names::DEAD_RUNS) {
            run(
                &mut out,
                names::DEAD_RUNS,
                runs::dead_runs(cfg, store, now).await,
            );
        }
        if on(names::SKIP_RATE) {
            run(
                &mut out,
                names::SKIP_RATE,
                runs::skip_rate(cfg, store, kinds, now).await,
            );
        }
        if on(names::EXPANSIONS_STUCK) {
            let r = runs::expansions_stuck(cfg, store, now).await;
            run(&mut out, names::EXPANSIONS_STUCK, r);
        }
        if on(names::ENDPOINT_DISABLED) {
            let r = endpoints::endpoint_disabled(store, now).await;
            run(&mut out, names::ENDPOINT_DISABLED, r);
        }
        if on(names::DB_HORIZON) {
            let r = horizon::db_horizon(cfg, store, now).await;
            run(&mut out, names::DB_HORIZON, r);
        }
        if on(names::BOUNCE_RATE) || on(names::COMPLAINT_RATE) {
            // One read answers both: its failure is an error of each.
            match deliverability::rates(cfg, store, kinds, now).await {
                Ok(r) => out.extend(r),
                Err(e) => {
                    out.push(check_error(names::BOUNCE_RATE, &e));
                    out.push(check_error(names::COMPLAINT_RATE, &e));
                }
            }
        }
        if on(names::INBOUND_UNKNOWN) {
            let r = deliverability::inbound_unknown(cfg, store, now).await;
            run(&mut out, names::INBOUND_UNKNOWN, r);
        }
        for extra in &self.extra {
            run(&mut out, extra.name(), extra.evaluate(store, now).await);
        }
        Ok(SloReport::new(now, out))
    }

    /// [`evaluate`](Self::evaluate), with each warning's `since` from the stored alert state:
    /// what `kairos slo` and `GET /v1/slo` show. Reads only.
    /// The report also carries the last completed pass and the `monitor_stale` check.
    pub async fn report(&self, now: DateTime<Utc>) -> Result<SloReport, kairos_store::Error> {
        let mut report = self.evaluate(now).await?;
        self.since(&mut report).await?;
        stale::add(&self.cfg, self.store.as_ref(), now, &mut report).await;
        Ok(report)
    }

    /// Each warning's `since`, from the stored alert state.
    async fn since(&self, report: &mut SloReport) -> Result<(), kairos_store::Error> {
        let stored = self.store.slo_alert_list().await?;
        for c in &mut report.checks {
            let key = c.key();
            c.since = stored
                .iter()
                .find(|a| a.key == key && a.active && c.status == CheckStatus::Warning)
                .map(|a| a.since);
        }
        Ok(())
    }

    /// One run at `now`: evaluate, record transitions, alert, and record the completed pass
    /// (a pass some of whose checks were errors is complete: each of them said so).
    pub async fn run_once(&self, now: DateTime<Utc>) -> Result<MonitorReport, kairos_store::Error> {
        let slo = self.evaluate(now).await?;
        let alerts =
            alerts::reconcile(self.store.as_ref(), self.sink.as_ref(), &slo.checks, now).await?;
        // What the pass found goes with it: the admin's overview shows it (`report_last`)
        // instead of evaluating every check at each page load.
        self.store
            .monitor_pass_record(kairos_store::MonitorPassRecord {
                at: now,
                report: serde_json::to_string(&slo.checks).ok(),
            })
            .await?;
        Ok(MonitorReport { slo, alerts })
    }
}

#[async_trait]
impl Service for Monitor {
    type Report = MonitorReport;
    type Config = MonitorConfig;
    fn name(&self) -> &'static str {
        "monitor"
    }
    fn config(&self) -> &MonitorConfig {
        &self.cfg
    }
    fn leader_only(&self) -> bool {
        true
    }
    fn interval(&self) -> Duration {
        self.cfg.interval
    }
    async fn run_once(&self, now: DateTime<Utc>) -> Result<MonitorReport, kairos_store::Error> {
        Monitor::run_once(self, now).await
    }
}
