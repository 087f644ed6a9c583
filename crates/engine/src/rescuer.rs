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
}

impl Default for RescuerConfig {
    fn default() -> Self {
        RescuerConfig {
            interval: Duration::from_secs(5),
            batch: 1000,
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
            })
            .await?;
        if !ids.is_empty() {
            tracing::warn!(count = ids.len(), "returned jobs whose lease expired");
        }
        Ok(RescuerReport { rescued: ids.len() })
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
