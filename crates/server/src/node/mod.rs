//! One node, built in one place: [`NodeBuilder`] opens the configured store (SQLite or
//! PostgreSQL, migrated), checks and applies the secret key, and builds the handlers, the
//! engine with its services (node id, settings, leader flag, alert webhook, maintenance flag)
//! and the [`Kairos`] facade. `kairos serve` and `kairos worker` start the services
//! ([`Node::start`]) and `serve` adds the HTTP API ([`Node::app_state`]); every other command
//! uses the same builder for the facade alone ([`NodeBuilder::open_kairos`]), without
//! starting anything.

mod db;
mod error;
mod handlers;
mod identity;

pub use db::{Db, checked_secret_key, open_db};
pub use error::NodeError;
pub use handlers::{
    RENDER_WORKER_COMMAND, digest_config, email_setup, registry, template_renderer, webhook_config,
};
pub use identity::{API_TOKEN_SETTING, cluster_token};

use crate::config::Config;
use crate::{ApiToken, AppState};
use kairos_channels::email::template::Renderer;
use kairos_core::{Clock, SystemClock};
use kairos_engine::maintenance::Maintenance;
use kairos_engine::{Engine, EngineConfig, Kairos};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How often a node that is not the leader tries to take the leader lock (and the leader
/// checks its connection): a dead leader is replaced within about this long.
pub const LEADER_RETRY: Duration = Duration::from_secs(3);

/// The engine's settings from `cfg`: the node id, the executor's and scheduler's timings,
/// retention, and the monitor's thresholds (`KAIROS_SLO_…`).
pub fn engine_config(cfg: &Config) -> Result<EngineConfig, NodeError> {
    let node = cfg.node_name();
    let mut ec = EngineConfig::default().with_node(&node);
    // A node's id is kept across restarts (or configured), so its previous process's jobs
    // are its own to take back at start; a `<hostname>-<pid>` id matches none.
    ec.rescuer.restarted_node = Some(node);
    let lease = Duration::from_secs(cfg.lease_secs);
    let poll = Duration::from_millis(cfg.poll_interval_ms);
    ec.executor.concurrency = cfg.concurrency;
    ec.executor.max_unrecorded = cfg.max_unrecorded;
    ec.executor.lease = lease;
    ec.executor.renew_every = lease / 3;
    ec.executor.poll_interval = poll;
    ec.executor.shutdown_grace = Duration::from_secs(cfg.shutdown_grace_secs);
    ec.scheduler.poll_interval = poll;
    ec.scheduler.misfire_threshold = cfg.misfire_threshold()?;
    let (succeeded, dead) = cfg.retention()?;
    ec.pruner.succeeded = succeeded;
    ec.pruner.dead = dead;
    ec.pruner.artifacts = cfg.retention_artifacts()?;
    ec.pruner.events = cfg.retention_events()?;
    ec.pruner.dedupe = cfg.retention_dedupe()?;
    ec.monitor = crate::monitoring::monitor_config(cfg)?;
    ec.endpoint_health.disable_after_failures = cfg.endpoint_disable_after_failures;
    ec.endpoint_health.disable_after = Duration::from_secs(cfg.endpoint_disable_after_secs);
    Ok(ec)
}

/// Builds a node from its configuration.
#[derive(Clone)]
pub struct NodeBuilder {
    cfg: Config,
    clock: Arc<dyn Clock>,
    renderer: Renderer,
}

impl std::fmt::Debug for NodeBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the config: it holds secrets.
        f.debug_struct("NodeBuilder").finish_non_exhaustive()
    }
}

impl NodeBuilder {
    /// A builder for `cfg` (already loaded and validated), on the system clock.
    pub fn new(cfg: Config) -> Self {
        NodeBuilder {
            cfg,
            clock: Arc::new(SystemClock),
            renderer: Renderer::InProcess,
        }
    }

    /// Render mail templates in worker processes of `program` (the `kairos` binary, which
    /// serves them as `kairos __render-worker`), as configured (`KAIROS_TEMPLATE_*`;
    /// `KAIROS_TEMPLATE_WORKERS=0` keeps them in-process). Without this call templates render
    /// in-process: the builder is also used by tests and embedders that have no such binary.
    pub fn with_template_workers(mut self, program: std::path::PathBuf) -> Self {
        self.renderer = template_renderer(&self.cfg, program);
        self
    }

    /// Use `clock` instead of the system clock.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// Open the database (creating and migrating it) with the secret key checked and applied.
    pub async fn open_db(&self) -> Result<Db, NodeError> {
        open_db(&self.cfg, self.clock.as_ref()).await
    }

    /// The facade's settings shared by every use: private targets, the digest attempt's
    /// timeout, the outbox.
    fn facade(&self, db: &Db, wake: Arc<Notify>, kinds: Vec<String>) -> Kairos {
        let cfg = &self.cfg;
        Kairos::new(db.store(), self.clock.clone(), wake, kinds)
            .allow_private_targets(cfg.allow_private_targets)
            .with_renderer(self.renderer.clone())
            .with_digest_attempt_timeout(Duration::from_secs(
                cfg.feed_timeout_secs + cfg.model_timeout_secs + 5,
            ))
            .with_outbox(cfg.data_dir.join("outbox"))
    }

    /// The database and the facade over it, for commands that work on it directly (with or
    /// without a server running: SQLite WAL and a busy timeout, or PostgreSQL, make that
    /// safe). No engine runs in this process: a running node picks the work up at its next
    /// poll (on PostgreSQL at once: inserting a job notifies the nodes).
    pub async fn open_kairos(&self) -> Result<(Db, Kairos), NodeError> {
        let db = self.open_db().await?;
        let kinds = registry(&self.cfg, db.store(), self.clock.clone(), &self.renderer)?.kinds();
        let kairos = self.facade(&db, Arc::new(Notify::new()), kinds);
        Ok((db, kairos))
    }

    /// The whole node — database, handlers, engine and facade — with nothing started.
    pub async fn build(&self) -> Result<Node, NodeError> {
        let cfg = &self.cfg;
        let db = self.open_db().await?;
        let store = db.store();
        let registry = registry(cfg, store.clone(), self.clock.clone(), &self.renderer)?;
        let kinds = registry.kinds();
        // Installed before the engine runs, so its first attempts are counted on /metrics.
        let _ = crate::monitoring::metrics_recorder();
        let mut engine = Engine::new(
            engine_config(cfg)?,
            store.clone(),
            self.clock.clone(),
            registry,
        )?
        .with_leader(db.leader());
        if let Some(sink) = crate::monitoring::alert_sink(cfg, webhook_config(cfg))? {
            engine = engine.with_alerts(sink);
        }
        // Maintenance mode: one flag shared by the engine and the API, forced by
        // KAIROS_MAINTENANCE or read from the database (`kairos maintenance on`).
        let maintenance = Maintenance::new(cfg.maintenance);
        if let Err(e) = maintenance.refresh(store.as_ref()).await {
            tracing::warn!(error = %e, "reading the maintenance setting failed");
        }
        engine = engine.with_maintenance(maintenance.clone());
        let kairos = self
            .facade(&db, engine.wake(), kinds)
            .with_maintenance(maintenance);
        Ok(Node {
            cfg: cfg.clone(),
            db,
            engine,
            kairos,
        })
    }
}

/// A built node: its database, engine and facade.
#[derive(Clone)]
pub struct Node {
    cfg: Config,
    db: Db,
    engine: Engine,
    kairos: Kairos,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("db", &self.db)
            .field("engine", &self.engine)
            .finish_non_exhaustive()
    }
}

impl Node {
    /// The configuration it was built from.
    pub fn config(&self) -> &Config {
        &self.cfg
    }
    /// The database.
    pub fn db(&self) -> &Db {
        &self.db
    }
    /// The engine (services not started until [`Node::start`]).
    pub fn engine(&self) -> &Engine {
        &self.engine
    }
    /// The facade.
    pub fn kairos(&self) -> &Kairos {
        &self.kairos
    }

    /// The HTTP API's state over this node, guarded by `token`.
    pub fn app_state(&self, token: ApiToken) -> Result<AppState, NodeError> {
        let cfg = &self.cfg;
        let inbound = crate::routes::hooks::InboundConfig::from_config(cfg)?;
        Ok(AppState::new(self.kairos.clone(), token)
            .with_monitor(crate::monitoring::monitor_config(cfg)?)
            .with_inbound(inbound)
            .with_secure_cookies(cfg.public_url_is_https()))
    }

    /// Start the services until `cancel`: the engine, the maintenance flag's refresh, and on
    /// PostgreSQL the wake-ups from other nodes' inserts (`LISTEN`) and the leader election.
    pub fn start(&self, cancel: &CancellationToken) -> Running {
        let mut side = Vec::new();
        if let Db::Postgres(store, url) = &self.db {
            let schema = store.schema().to_string();
            side.push(tokio::spawn(kairos_store_postgres::listen_wakeups(
                url.clone(),
                schema.clone(),
                self.engine.wake(),
                cancel.clone(),
            )));
            side.push(tokio::spawn(kairos_store_postgres::run_leader_election(
                url.clone(),
                schema,
                self.engine.leader().clone(),
                LEADER_RETRY,
                cancel.clone(),
            )));
        }
        side.push(tokio::spawn(self.kairos.maintenance().clone().watch(
            self.kairos.store().clone(),
            self.kairos.clock().clone(),
            Duration::from_millis(self.cfg.poll_interval_ms),
            cancel.clone(),
        )));
        let engine = {
            let (engine, cancel) = (self.engine.clone(), cancel.clone());
            tokio::spawn(async move { engine.run(cancel).await })
        };
        Running { engine, side }
    }

    /// Close the database, waiting for its connections.
    pub async fn close(&self) {
        self.db.close().await;
    }
}

/// The started services of a node.
#[derive(Debug)]
pub struct Running {
    engine: JoinHandle<()>,
    side: Vec<JoinHandle<()>>,
}

impl Running {
    /// Wait for every service to stop (after its cancellation): the engine drains its
    /// running jobs within the shutdown grace.
    pub async fn join(self) {
        let _ = self.engine.await;
        for t in self.side {
            let _ = t.await;
        }
    }
}
