//! The rescuer: returns jobs whose lease expired — their node crashed or lost contact — to
//! `available`, or to `dead` when their attempts are spent.
//!
//! A leader-only [`Service`]: the [`Runner`](crate::service::Runner) runs it only while this
//! node is the [`Leader`](kairos_store::Leader) (always on SQLite; on PostgreSQL the holder of
//! the schema's advisory lock). That only avoids several nodes scanning for the same expired
//! leases: rescuing is a `SKIP LOCKED` conditional update, so two rescuers at once would still
//! return each job once.

use crate::service::{Service, ServiceConfig};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use kairos_core::Clock;
use kairos_store::{JobRescue, ScheduleRelease, Store};
use std::sync::Arc;
use std::time::Duration;

/// Rescuer settings.
#[derive(Debug, Clone)]
pub struct RescuerConfig {
    /// How often to look for expired leases. Default 5 s.
    pub interval: Duration,
    /// Most jobs rescued per run. Default 1000.
    pub batch: usize,
    /// This node's id when it is stable across restarts (configured, or kept in the data
    /// directory): on start, the jobs still `running` under it were held by this node's
    /// previous process and are taken back at once, not after their lease. `None` (the
    /// default) for a node whose id is new on every start.
    pub restarted_node: Option<String>,
}

impl Default for RescuerConfig {
    fn default() -> Self {
        RescuerConfig {
            interval: Duration::from_secs(5),
            batch: 1000,
            restarted_node: None,
        }
    }
}

impl ServiceConfig for RescuerConfig {
    fn validate(&self) -> Result<(), kairos_core::Error> {
        RescuerConfig::validate(self)
    }
}

impl RescuerConfig {
    /// Check the settings; the error names the field.
    pub fn validate(&self) -> Result<(), kairos_core::Error> {
        if self.interval.is_zero() {
            return Err(kairos_core::Error::invalid(
                "rescuer.interval",
                "must be more than 0",
            ));
        }
        if self.batch == 0 {
            return Err(kairos_core::Error::invalid(
                "rescuer.batch",
                "must be at least 1",
            ));
        }
        Ok(())
    }
}

/// What one run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RescuerReport {
    /// Jobs returned.
    pub rescued: usize,
    /// Schedule claims released (only when a restarted node takes back its own).
    pub schedules_released: u64,
}

/// The rescuer.
#[derive(Clone)]
pub struct Rescuer {
    cfg: RescuerConfig,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for Rescuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rescuer")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl Rescuer {
    /// A rescuer over `store`. Fails if the config is not valid.
    pub fn new(
        cfg: RescuerConfig,
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, kairos_core::Error> {
        cfg.validate()?;
        Ok(Rescuer { cfg, store, clock })
    }

    /// One run at `now`.
    pub async fn run_once(&self, now: DateTime<Utc>) -> Result<RescuerReport, kairos_store::Error> {
        let ids = self
            .store
            .job_rescue(JobRescue {
                now,
                limit: self.cfg.batch as i64,
                restarted_node: None,
            })
            .await?;
        if !ids.is_empty() {
            tracing::warn!(count = ids.len(), "returned jobs whose lease expired");
        }
        Ok(RescuerReport {
            rescued: ids.len(),
            ..Default::default()
        })
    }

    /// Now, by this service's clock.
    pub(crate) fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// Take back the jobs this node's previous process left `running` (see
    /// [`RescuerConfig::restarted_node`]), whatever their lease; a no-op without it. Runs on
    /// every node, leader or not: the jobs are its own. It must run before this process
    /// claims anything ([`crate::Engine::run`] does so), or it would take back the new
    /// process's own fresh claims.
    pub async fn reclaim_own(
        &self,
        now: DateTime<Utc>,
    ) -> Result<RescuerReport, kairos_store::Error> {
        let Some(node) = &self.cfg.restarted_node else {
            return Ok(RescuerReport::default());
        };
        let mut rescued = 0;
        // Bounded: each pass takes at least one job or ends the loop, and a node holds at most
        // its concurrency in running jobs.
        for _ in 0..1000 {
            let ids = self
                .store
                .job_rescue(JobRescue {
                    now,
                    limit: self.cfg.batch as i64,
                    restarted_node: Some(node.clone()),
                })
                .await?;
            rescued += ids.len();
            if ids.len() < self.cfg.batch {
                break;
            }
        }
        if rescued > 0 {
            tracing::warn!(count = rescued, node = %node, "took back this node's jobs from its previous process");
        }
        // The previous process may also have died between claiming a schedule and firing it:
        // without this its firing would wait for the claim to expire (a minute by default).
        let schedules_released = self
            .store
            .schedule_release(ScheduleRelease {
                node: node.clone(),
                now,
            })
            .await?;
        if schedules_released > 0 {
            tracing::warn!(count = schedules_released, node = %node, "released the schedules this node's previous process had claimed");
        }
        Ok(RescuerReport {
            rescued,
            schedules_released,
        })
    }
}

#[async_trait]
impl Service for Rescuer {
    type Report = RescuerReport;
    type Config = RescuerConfig;
    fn name(&self) -> &'static str {
        "rescuer"
    }
    fn config(&self) -> &RescuerConfig {
        &self.cfg
    }
    fn leader_only(&self) -> bool {
        true
    }
    fn interval(&self) -> Duration {
        self.cfg.interval
    }
    async fn run_once(&self, now: DateTime<Utc>) -> Result<RescuerReport, kairos_store::Error> {
        Rescuer::run_once(self, now).await
    }
    /// Returned jobs are due: the executor looks at once.
    fn made_jobs(&self, report: &RescuerReport) -> bool {
        report.rescued > 0
    }
}
