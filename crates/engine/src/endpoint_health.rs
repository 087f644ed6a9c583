//! Endpoint health: folds the attempt log into each webhook endpoint's failure streak and
//! hourly counters, and disables an endpoint after a sustained failure streak when that is
//! configured.
//!
//! Off the delivery path on purpose: the executor records each attempt with the job's
//! completion (one group-committed transaction) as it always has, and nothing is written
//! between a send and that commit. This leader-only [`Service`] reads the attempts since its
//! cursor, `settle` after they finished, so health lags the sends by up to `settle +
//! interval` (15 s by default), longer while a backlog of more than `batch × max_batches`
//! attempts per run is worked off.
//!
//! Auto-disable (`disable_after_failures > 0`) disables an enabled endpoint whose streak has
//! at least that many failures and began at least `disable_after` ago, with reason
//! `failure_streak`; later jobs to it are skipped (`endpoint_disabled`) as after a 410, and
//! the monitor's `endpoint_disabled` check warns until it is enabled again.

use crate::service::{Next, Service, ServiceConfig};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use kairos_store::{EndpointHealthFlush, EndpointStreakDisable, Store};
use std::sync::Arc;
use std::time::Duration;

/// Endpoint health settings.
#[derive(Debug, Clone)]
pub struct EndpointHealthConfig {
    /// How often the attempt log is folded in. Default 10 s.
    pub interval: Duration,
    /// Attempts are folded in this long after they finished, so that every completion batch
    /// of that age has committed (on PostgreSQL concurrent completions commit in any order).
    /// Default 5 s; at most 10 min.
    pub settle: Duration,
    /// Most attempts per flush (one transaction). Default 2000.
    pub batch: usize,
    /// Most flushes per run. Default 10.
    pub max_batches: usize,
    /// Disable an endpoint after this many consecutive failed sends
    /// (`KAIROS_ENDPOINT_DISABLE_AFTER_FAILURES`). Default 0: never.
    pub disable_after_failures: u64,
    /// … when its streak has also lasted this long (`KAIROS_ENDPOINT_DISABLE_AFTER_SECS`).
    /// Default 1 h.
    pub disable_after: Duration,
}

impl Default for EndpointHealthConfig {
    fn default() -> Self {
        EndpointHealthConfig {
            interval: Duration::from_secs(10),
            settle: Duration::from_secs(5),
            batch: 2000,
            max_batches: 10,
            disable_after_failures: 0,
            disable_after: Duration::from_secs(3600),
        }
    }
}

impl ServiceConfig for EndpointHealthConfig {
    fn validate(&self) -> Result<(), kairos_core::Error> {
        EndpointHealthConfig::validate(self)
    }
}

impl EndpointHealthConfig {
    /// The largest accepted `disable_after_failures`.
    pub const MAX_FAILURES: u64 = 1_000_000;
    /// The longest accepted `disable_after` (30 days).
    pub const MAX_DISABLE_AFTER: Duration = Duration::from_secs(30 * 24 * 3600);

    /// Check the settings; the error names the field.
    pub fn validate(&self) -> Result<(), kairos_core::Error> {
        use kairos_core::Error;
        if self.interval.is_zero() {
            return Err(Error::invalid(
                "endpoint_health.interval",
                "must be more than 0",
            ));
        }
        if self.settle > Duration::from_secs(600) {
            return Err(Error::invalid(
                "endpoint_health.settle",
                "must be at most 10 minutes",
            ));
        }
        if self.batch == 0 || self.batch > 100_000 {
            return Err(Error::invalid(
                "endpoint_health.batch",
                "must be between 1 and 100000",
            ));
        }
        if self.max_batches == 0 {
            return Err(Error::invalid(
                "endpoint_health.max_batches",
                "must be at least 1",
            ));
        }
        if self.disable_after_failures > Self::MAX_FAILURES {
            return Err(Error::invalid(
                "endpoint_health.disable_after_failures",
                format!("must be at most {} (0: off)", Self::MAX_FAILURES),
            ));
        }
        if self.disable_after > Self::MAX_DISABLE_AFTER {
            return Err(Error::invalid(
                "endpoint_health.disable_after",
                "must be at most 30 days",
            ));
        }
        Ok(())
    }
}

/// What one run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointHealthReport {
    /// Attempts folded in.
    pub attempts: u64,
    /// Whether attempts are left past the last batch (the next run starts at once).
    pub more: bool,
    /// Endpoints disabled after their failure streak.
    pub disabled: Vec<String>,
}

/// The endpoint health service.
#[derive(Clone)]
pub struct EndpointHealthService {
    cfg: EndpointHealthConfig,
    store: Arc<dyn Store>,
    /// The kinds whose attempts are sends to an endpoint (`Kinds::posting_to_endpoints`).
    kinds: Vec<String>,
}

impl std::fmt::Debug for EndpointHealthService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EndpointHealthService")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl EndpointHealthService {
    /// The service over `store`; fails if the config is not valid.
    pub fn new(
        cfg: EndpointHealthConfig,
        store: Arc<dyn Store>,
    ) -> Result<Self, kairos_core::Error> {
        cfg.validate()?;
        let kinds = crate::kinds::Kinds::builtin().posting_to_endpoints();
        Ok(EndpointHealthService { cfg, store, kinds })
    }

    /// Count the sends of the kinds of `kinds` that post to their endpoint (the built-in
    /// kinds without this call).
    pub fn with_kinds(mut self, kinds: &crate::kinds::Kinds) -> Self {
        self.kinds = kinds.posting_to_endpoints();
        self
    }

    /// The settings.
    pub fn config(&self) -> &EndpointHealthConfig {
        &self.cfg
    }

    /// One run at `now`: fold in the settled attempts (bounded), then disable the endpoints
    /// whose streak is long enough, when configured.
    pub async fn run_once(
        &self,
        now: DateTime<Utc>,
    ) -> Result<EndpointHealthReport, kairos_store::Error> {
        let settle = chrono::Duration::from_std(self.cfg.settle).unwrap_or_default();
        let mut report = EndpointHealthReport::default();
        for _ in 0..self.cfg.max_batches {
            let done = self
                .store
                .endpoint_health_flush(EndpointHealthFlush {
                    settled_before: now - settle,
                    limit: self.cfg.batch as i64,
                    kinds: self.kinds.clone(),
                })
                .await?;
            report.attempts += done.attempts;
            report.more = done.attempts == self.cfg.batch as u64;
            if !report.more {
                break;
            }
        }
        if self.cfg.disable_after_failures > 0 {
            let lasted = chrono::Duration::from_std(self.cfg.disable_after).unwrap_or_default();
            report.disabled = self
                .store
                .endpoint_streak_disable(EndpointStreakDisable {
                    min_failures: self.cfg.disable_after_failures as i64,
                    failing_before: now - lasted,
                    now,
                })
                .await?;
            for id in &report.disabled {
                tracing::warn!(endpoint_id = %id, failures_at_least = self.cfg.disable_after_failures,
                    "endpoint disabled after a sustained failure streak");
            }
        }
        Ok(report)
    }
}

#[async_trait]
impl Service for EndpointHealthService {
    type Report = EndpointHealthReport;
    type Config = EndpointHealthConfig;
    fn name(&self) -> &'static str {
        "endpoint_health"
    }
    fn config(&self) -> &EndpointHealthConfig {
        &self.cfg
    }
    fn leader_only(&self) -> bool {
        true
    }
    fn interval(&self) -> Duration {
        self.cfg.interval
    }
    async fn run_once(
        &self,
        now: DateTime<Utc>,
    ) -> Result<EndpointHealthReport, kairos_store::Error> {
        EndpointHealthService::run_once(self, now).await
    }
    async fn next_run(&self, report: &EndpointHealthReport, _now: DateTime<Utc>) -> Next {
        if report.more {
            Next::Now
        } else {
            Next::In(self.cfg.interval)
        }
    }
}
