//! The engine: the services of one node running together — the executor with its worker
//! pool, and the scheduler, rescuer, pruner, monitor, endpoint health, queue sampler and
//! heartbeat, each run by a
//! [`Runner`](crate::service::Runner) (the leader-only ones behind the node's [`Leader`]).

use crate::endpoint_health::{EndpointHealthConfig, EndpointHealthService};
use crate::executor::{Executor, ExecutorConfig};
use crate::heartbeat::{Heartbeat, HeartbeatConfig};
use crate::kinds::Kinds;
use crate::monitor::{AlertSink, Monitor, MonitorConfig};
use crate::pruner::{Pruner, PrunerConfig};
use crate::rescuer::{Rescuer, RescuerConfig};
use crate::sampler::{Sampler, SamplerConfig};
use crate::scheduler::{Scheduler, SchedulerConfig};
use crate::service::Runner;
use kairos_core::Clock;
use kairos_store::{Leader, Store};
use std::sync::Arc;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// How long after the node starts its housekeeping services (the pruner, endpoint health, the
/// queue sampler, the SLO monitor) first run, unless [`EngineConfig::housekeeping_delay`]
/// says otherwise.
pub const HOUSEKEEPING_DELAY: std::time::Duration = std::time::Duration::from_secs(1);
/// The longest [`EngineConfig::housekeeping_delay`] allowed.
pub const MAX_HOUSEKEEPING_DELAY: std::time::Duration = std::time::Duration::from_secs(600);

/// Settings of all services.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// The scheduler.
    pub scheduler: SchedulerConfig,
    /// The executor.
    pub executor: ExecutorConfig,
    /// The rescuer.
    pub rescuer: RescuerConfig,
    /// The pruner (retention).
    pub pruner: PrunerConfig,
    /// The SLO monitor.
    pub monitor: MonitorConfig,
    /// Endpoint health and auto-disable.
    pub endpoint_health: EndpointHealthConfig,
    /// The queue sampler (the admin's charts of queue depth and lateness).
    pub sampler: SamplerConfig,
    /// The node's heartbeat (the admin's nodes page).
    pub heartbeat: HeartbeatConfig,
    /// How long after the node starts the housekeeping services first run (default
    /// [`HOUSEKEEPING_DELAY`], at most [`MAX_HOUSEKEEPING_DELAY`]). The scheduler, the
    /// executor, the rescuer and the heartbeat start at once; the pruner's first sweep, the
    /// monitor's first pass, the sampler's backfill of uncounted quarters and endpoint
    /// health's first look (120 ms of queries together on PostgreSQL here) wait, so that a
    /// node started with a backlog gives the database to its queue first.
    pub housekeeping_delay: std::time::Duration,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            scheduler: SchedulerConfig::default(),
            executor: ExecutorConfig::default(),
            rescuer: RescuerConfig::default(),
            pruner: PrunerConfig::default(),
            monitor: MonitorConfig::default(),
            endpoint_health: EndpointHealthConfig::default(),
            sampler: SamplerConfig::default(),
            heartbeat: HeartbeatConfig::default(),
            housekeeping_delay: HOUSEKEEPING_DELAY,
        }
    }
}

impl EngineConfig {
    /// Set the node name of every service.
    pub fn with_node(mut self, node: &str) -> Self {
        self.scheduler.node = node.to_string();
        self.executor.node = node.to_string();
        self.heartbeat.node = node.to_string();
        self
    }
    /// Check every service's settings.
    pub fn validate(&self) -> Result<(), kairos_core::Error> {
        self.scheduler.validate()?;
        self.executor.validate()?;
        self.rescuer.validate()?;
        self.pruner.validate()?;
        self.endpoint_health.validate()?;
        self.sampler.validate()?;
        self.heartbeat.validate()?;
        self.monitor.validate()?;
        if self.housekeeping_delay > MAX_HOUSEKEEPING_DELAY {
            return Err(kairos_core::Error::invalid(
                "housekeeping_delay",
                format!(
                    "at most {} s, not {} s",
                    MAX_HOUSEKEEPING_DELAY.as_secs(),
                    self.housekeeping_delay.as_secs_f64()
                ),
            ));
        }
        Ok(())
    }
}

/// The services of one node.
#[derive(Clone)]
pub struct Engine {
    scheduler: Scheduler,
    executor: Executor,
    rescuer: Rescuer,
    pruner: Pruner,
    monitor: Monitor,
    endpoint_health: EndpointHealthService,
    sampler: Sampler,
    heartbeat: Heartbeat,
    wake: Arc<Notify>,
    leader: Leader,
    clock: Arc<dyn Clock>,
    kinds: Arc<Kinds>,
    housekeeping_delay: std::time::Duration,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("scheduler", &self.scheduler)
            .field("executor", &self.executor)
            .field("rescuer", &self.rescuer)
            .field("pruner", &self.pruner)
            .field("monitor", &self.monitor)
            .field("endpoint_health", &self.endpoint_health)
            .field("sampler", &self.sampler)
            .field("heartbeat", &self.heartbeat)
            .field("leader", &self.leader.is_leader())
            .finish_non_exhaustive()
    }
}

impl Engine {
    /// Build the services running the jobs of `kinds` (the node's kinds, with the handlers
    /// of those it runs); fails with the field that is wrong if the config is not valid.
    pub fn new(
        cfg: EngineConfig,
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        kinds: impl Into<Arc<Kinds>>,
    ) -> Result<Self, kairos_core::Error> {
        cfg.validate()?;
        let kinds = kinds.into();
        Ok(Engine {
            housekeeping_delay: cfg.housekeeping_delay,
            scheduler: Scheduler::new(cfg.scheduler, store.clone(), clock.clone())?
                .with_kinds(kinds.clone()),
            executor: Executor::new(cfg.executor, store.clone(), clock.clone(), kinds.clone())?,
            rescuer: Rescuer::new(cfg.rescuer, store.clone(), clock.clone())?,
            pruner: Pruner::new(cfg.pruner, store.clone())?,
            endpoint_health: EndpointHealthService::new(cfg.endpoint_health, store.clone())?
                .with_kinds(&kinds),
            sampler: Sampler::new(cfg.sampler, store.clone())?.keep_counts_for(
                cfg.monitor
                    .deliverability_window
                    .max(cfg.monitor.skip_window)
                    .max(cfg.monitor.window),
            ),
            heartbeat: Heartbeat::new(cfg.heartbeat, store.clone())?,
            monitor: Monitor::new(cfg.monitor, store)?.with_kinds(kinds.clone()),
            wake: Arc::new(Notify::new()),
            leader: Leader::always(),
            clock,
            kinds,
        })
    }

    /// The node's kinds (give them to [`Kairos::new`](crate::Kairos::new)).
    pub fn kinds(&self) -> Arc<Kinds> {
        self.kinds.clone()
    }

    /// Run the leader-only services (the rescuer, the pruner, the monitor, endpoint health,
    /// the queue sampler) only while `leader` leads, and say so in the heartbeat. Without this
    /// the node always leads (one node on SQLite).
    pub fn with_leader(mut self, leader: Leader) -> Self {
        self.heartbeat = self.heartbeat.with_leader(leader.clone());
        self.leader = leader;
        self
    }

    /// Pause claiming and firing while `m` is on (maintenance mode). Refreshing `m`
    /// from the database is [`Maintenance::watch`](crate::maintenance::Maintenance::watch).
    pub fn with_maintenance(mut self, m: crate::maintenance::Maintenance) -> Self {
        self.scheduler = self.scheduler.with_pause(m.clone());
        self.executor = self.executor.with_pause(m);
        self
    }

    /// Send the monitor's warnings and recoveries to `sink` (the alert webhook).
    pub fn with_alerts(mut self, sink: AlertSink) -> Self {
        self.monitor = self.monitor.with_alerts(sink);
        self
    }

    /// The leadership flag the leader-only services follow.
    pub fn leader(&self) -> &Leader {
        &self.leader
    }

    /// Notify this on a local enqueue or schedule change, or on a PostgreSQL notification
    /// from another node: the engine looks at once instead of at the next poll. (Give it to
    /// [`Kairos::new`](crate::Kairos::new).)
    pub fn wake(&self) -> Arc<Notify> {
        self.wake.clone()
    }

    /// The scheduler (for `run_once` in tests).
    pub fn scheduler(&self) -> &Scheduler {
        &self.scheduler
    }
    /// The executor (for `run_once` in tests).
    pub fn executor(&self) -> &Executor {
        &self.executor
    }
    /// The rescuer (for `run_once` in tests).
    pub fn rescuer(&self) -> &Rescuer {
        &self.rescuer
    }
    /// The pruner (for `run_once` in tests).
    pub fn pruner(&self) -> &Pruner {
        &self.pruner
    }
    /// The monitor (for `run_once` in tests).
    pub fn monitor(&self) -> &Monitor {
        &self.monitor
    }
    /// The endpoint health service (for `run_once` in tests).
    pub fn endpoint_health(&self) -> &EndpointHealthService {
        &self.endpoint_health
    }
    /// The queue sampler (for `run_once` in tests).
    pub fn sampler(&self) -> &Sampler {
        &self.sampler
    }
    /// The heartbeat (for `run_once` in tests).
    pub fn heartbeat(&self) -> &Heartbeat {
        &self.heartbeat
    }

    /// Run all services until `cancel`; then stop claiming, drain running jobs within the
    /// grace period and return. First, before anything is claimed, the jobs this node's
    /// previous process left running are taken back (when the node's id is stable, see
    /// [`RescuerConfig::restarted_node`]).
    pub async fn run(&self, cancel: CancellationToken) {
        if let Err(e) = self.rescuer.reclaim_own(self.rescuer.now()).await {
            tracing::error!(error = %e, "taking back this node's jobs from its previous process failed");
        }
        let exec_wake = Arc::new(Notify::new());
        let sched_wake = Arc::new(Notify::new());
        // One outside wake-up reaches both loops (a Notify permit wakes only one waiter).
        let fan = {
            let (wake, e, s, cancel) = (
                self.wake.clone(),
                exec_wake.clone(),
                sched_wake.clone(),
                cancel.clone(),
            );
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        _ = cancel.cancelled() => return,
                        _ = wake.notified() => { e.notify_one(); s.notify_one(); }
                    }
                }
            })
        };
        let runner = Runner::new(self.clock.clone()).with_leader(self.leader.clone());
        let sched = {
            let r = runner
                .clone()
                .with_wake(sched_wake)
                .with_on_jobs(exec_wake.clone());
            let (s, c) = (self.scheduler.clone(), cancel.clone());
            tokio::spawn(async move { r.run(&s, c).await })
        };
        let resc = {
            let r = runner.clone().with_on_jobs(exec_wake.clone());
            let (s, c) = (self.rescuer.clone(), cancel.clone());
            tokio::spawn(async move { r.run(&s, c).await })
        };
        // Housekeeping waits its turn: the queue first (`EngineConfig::housekeeping_delay`).
        let later = runner
            .clone()
            .with_first_turn_after(self.housekeeping_delay);
        let prun = {
            let (r, s, c) = (later.clone(), self.pruner.clone(), cancel.clone());
            tokio::spawn(async move { r.run(&s, c).await })
        };
        let health = {
            let (r, s, c) = (later.clone(), self.endpoint_health.clone(), cancel.clone());
            tokio::spawn(async move { r.run(&s, c).await })
        };
        let sampler = {
            let (r, s, c) = (later.clone(), self.sampler.clone(), cancel.clone());
            tokio::spawn(async move { r.run(&s, c).await })
        };
        let beat = {
            let (r, s, c) = (runner, self.heartbeat.clone(), cancel.clone());
            tokio::spawn(async move { r.run(&s, c).await })
        };
        let moni = {
            let (r, s, c) = (later, self.monitor.clone(), cancel.clone());
            tokio::spawn(async move { r.run(&s, c).await })
        };
        self.executor.run(exec_wake, cancel).await;
        let _ = sched.await;
        let _ = resc.await;
        let _ = prun.await;
        let _ = moni.await;
        let _ = health.await;
        let _ = sampler.await;
        let _ = beat.await;
        let _ = fan.await;
    }
}
