//! The heartbeat: every few seconds a node writes its row in `nodes` — its id, when its
//! process started, now, and whether it leads — so that the admin's nodes page shows which
//! nodes live, which leads, and what each runs (issue 36). A node silent for longer than
//! `gone_after` is shown as gone; one silent for longer than `prune_after` is deleted by any
//! node's heartbeat (deleting is idempotent, so it needs no leader).
//!
//! A [`Service`] of every node: [`HeartbeatConfig`] with defaults and `validate()`,
//! [`Heartbeat::run_once`] for tests on a manual clock.

use crate::service::{Service, ServiceConfig};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use kairos_store::{Leader, NodeHeartbeat, NodePrune, Store};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Heartbeat settings.
#[derive(Debug, Clone)]
pub struct HeartbeatConfig {
    /// This node's id (the one its leases name). Default `node`.
    pub node: String,
    /// How often the node writes its heartbeat. Default 5 s; between 1 s and 5 min.
    pub interval: Duration,
    /// A node silent for longer than this is shown as gone. Default 30 s; at least three
    /// intervals.
    pub gone_after: Duration,
    /// A node silent for longer than this is forgotten (its row deleted). Default 1 day; at
    /// least `gone_after`, at most 400 days.
    pub prune_after: Duration,
}

impl Default for HeartbeatConfig {
    fn default() -> Self {
        HeartbeatConfig {
            node: "node".to_string(),
            interval: Duration::from_secs(5),
            gone_after: Duration::from_secs(30),
            prune_after: Duration::from_secs(24 * 3600),
        }
    }
}

impl ServiceConfig for HeartbeatConfig {
    fn validate(&self) -> Result<(), kairos_core::Error> {
        HeartbeatConfig::validate(self)
    }
}

impl HeartbeatConfig {
    /// Check the settings; the error names the field.
    pub fn validate(&self) -> Result<(), kairos_core::Error> {
        use kairos_core::Error;
        if self.node.trim().is_empty() {
            return Err(Error::invalid("heartbeat.node", "must not be empty"));
        }
        if self.interval < Duration::from_secs(1) || self.interval > Duration::from_secs(300) {
            return Err(Error::invalid(
                "heartbeat.interval",
                "must be between 1 second and 5 minutes",
            ));
        }
        if self.gone_after < self.interval * 3 {
            return Err(Error::invalid(
                "heartbeat.gone_after",
                "must be at least three heartbeat intervals",
            ));
        }
        if self.prune_after < self.gone_after
            || self.prune_after > Duration::from_secs(400 * 24 * 3600)
        {
            return Err(Error::invalid(
                "heartbeat.prune_after",
                "must be between gone_after and 400 days",
            ));
        }
        Ok(())
    }
}

/// What one run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeartbeatReport {
    /// Whether the heartbeat said this node leads.
    pub leader: bool,
    /// Silent nodes forgotten.
    pub pruned: u64,
}

/// The heartbeat of one node.
#[derive(Clone)]
pub struct Heartbeat {
    cfg: HeartbeatConfig,
    store: Arc<dyn Store>,
    leader: Leader,
    /// The first run's instant: when this process started beating.
    started_at: Arc<OnceLock<DateTime<Utc>>>,
}

impl std::fmt::Debug for Heartbeat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Heartbeat")
            .field("cfg", &self.cfg)
            .field("leader", &self.leader.is_leader())
            .finish_non_exhaustive()
    }
}

impl Heartbeat {
    /// A heartbeat over `store`; the node always leads until [`Heartbeat::with_leader`].
    /// Fails if the config is not valid.
    pub fn new(cfg: HeartbeatConfig, store: Arc<dyn Store>) -> Result<Self, kairos_core::Error> {
        cfg.validate()?;
        Ok(Heartbeat {
            cfg,
            store,
            leader: Leader::always(),
            started_at: Arc::new(OnceLock::new()),
        })
    }

    /// Say what `leader` says about this node's leadership.
    pub fn with_leader(mut self, leader: Leader) -> Self {
        self.leader = leader;
        self
    }

    /// The settings.
    pub fn config(&self) -> &HeartbeatConfig {
        &self.cfg
    }

    /// One run at `now`: write the heartbeat, forget long-silent nodes.
    pub async fn run_once(
        &self,
        now: DateTime<Utc>,
    ) -> Result<HeartbeatReport, kairos_store::Error> {
        let started_at = *self.started_at.get_or_init(|| now);
        let leader = self.leader.is_leader();
        self.store
            .node_heartbeat(NodeHeartbeat {
                id: self.cfg.node.clone(),
                started_at,
                at: now,
                leader,
            })
            .await?;
        let age = chrono::Duration::from_std(self.cfg.prune_after)
            .unwrap_or_else(|_| chrono::Duration::days(1));
        let pruned = match now.checked_sub_signed(age) {
            Some(silent_before) => self.store.node_prune(NodePrune { silent_before }).await?,
            None => 0,
        };
        Ok(HeartbeatReport { leader, pruned })
    }
}

#[async_trait]
impl Service for Heartbeat {
    type Report = HeartbeatReport;
    type Config = HeartbeatConfig;
    fn name(&self) -> &'static str {
        "heartbeat"
    }
    fn config(&self) -> &HeartbeatConfig {
        &self.cfg
    }
    fn interval(&self) -> Duration {
        self.cfg.interval
    }
    async fn run_once(&self, now: DateTime<Utc>) -> Result<HeartbeatReport, kairos_store::Error> {
        Heartbeat::run_once(self, now).await
    }
}
