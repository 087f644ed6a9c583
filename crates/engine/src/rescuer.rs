//! The rescuer: returns jobs whose lease expired — their node crashed or lost contact — to
//! `available`, or to `dead` when their attempts are spent (S0-12).
//!
//! A leader-only service: its loop runs `run_once` only while this node is the
//! [`Leader`] (always on SQLite; on PostgreSQL the holder of the schema's advisory lock). That
//! only avoids several nodes scanning for the same expired leases: rescuing is a `SKIP LOCKED`
//! conditional update, so two rescuers at once would still return each job once.

use chrono::{DateTime, Utc};
use kairos_core::Clock;
use kairos_store::{JobRescue, Leader, Store};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

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
}

/// The rescuer.
#[derive(Clone)]
pub struct Rescuer {
    cfg: RescuerConfig,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    leader: Leader,
}

impl std::fmt::Debug for Rescuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rescuer")
            .field("cfg", &self.cfg)
            .field("leader", &self.leader.is_leader())
            .finish_non_exhaustive()
    }
}

impl Rescuer {
    /// A rescuer over `store`, always leading until [`Rescuer::with_leader`] says otherwise.
    pub fn new(
        cfg: RescuerConfig,
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, kairos_core::Error> {
        cfg.validate()?;
        Ok(Rescuer {
            cfg,
            store,
            clock,
            leader: Leader::always(),
        })
    }

    /// Run (in [`Rescuer::run`]) only while `leader` leads.
    pub fn with_leader(mut self, leader: Leader) -> Self {
        self.leader = leader;
        self
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
        Ok(RescuerReport { rescued: ids.len() })
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
        Ok(RescuerReport { rescued })
    }

    /// Run until `cancel`: every interval, a run if this node is the leader. `on_jobs` is
    /// notified when jobs were returned.
    pub async fn run(&self, on_jobs: Arc<Notify>, cancel: CancellationToken) {
        loop {
            if self.leader.is_leader() {
                match self.run_once(self.clock.now()).await {
                    Ok(r) if r.rescued > 0 => on_jobs.notify_one(),
                    Ok(_) => {}
                    Err(e) => tracing::error!(error = %e, "rescuer run failed"),
                }
            }
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(self.cfg.interval) => {}
            }
        }
    }
}
