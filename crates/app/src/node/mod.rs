//! One node, built in one place: [`NodeBuilder`] opens the configured store (SQLite or
//! PostgreSQL, migrated), checks and applies the secret key, and builds the handlers, the
//! engine with its services (node id, settings, leader flag, alert webhook, maintenance flag)
//! and the [`Kairos`] facade. `kairos serve` and `kairos worker` start the services
//! ([`Node::start`]) and `serve` adds the HTTP API (`kairos_server::AppState::for_node`); every other command
//! uses the same builder for the facade alone ([`NodeBuilder::open_kairos`]), without
//! starting anything.

mod db;
mod error;
mod handlers;
mod identity;

pub use db::{Db, checked_secret_key, open_db};
pub use error::NodeError;
pub use handlers::{
    RENDER_WORKER_COMMAND, builtin_kinds, digest_config, email_setup, template_renderer,
    webhook_config,
};
pub use identity::{API_TOKEN_SETTING, cluster_token};

use crate::config::Config;
use kairos_channels::email::template::Renderer;
use kairos_core::{Clock, SystemClock};
use kairos_engine::maintenance::Maintenance;
use kairos_engine::{Engine, EngineConfig, Kairos, Kind, Kinds};
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
    let cooldown = match cfg.claim_cooldown_ms {
        Some(ms) => ms,
        None => cfg.database()?.default_claim_cooldown_ms(),
    };
    ec.executor.claim_cooldown = Duration::from_millis(cooldown);
    ec.executor.shutdown_grace = Duration::from_secs(cfg.shutdown_grace_secs);
    ec.scheduler.poll_interval = poll;
    // A schedule's claim is held only between claiming and firing it (a few statements), and
    // what keeps a dead node's jobs from others keeps its schedules too: with the engine's
    // default of a minute, a node killed holding an every-second schedule stopped it for a
    // minute, and the firings late beyond the misfire threshold were lost.
    ec.scheduler.lock = lease;
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

/// A change to the engine's settings made after they are read from the configuration.
type EngineTweak = Arc<dyn Fn(&mut EngineConfig) + Send + Sync>;

/// Builds a node: the one place where settings, the database, the kinds and the engine are
/// put together, for `kairos serve`, every CLI command and `kairos-embed`.
#[derive(Clone)]
pub struct NodeBuilder {
    cfg: Config,
    clock: Arc<dyn Clock>,
    renderer: Renderer,
    /// The application's kinds, added to the built-in ones.
    kinds: Vec<Arc<dyn Kind>>,
    /// Engine settings set in code (an embedding application's), applied over the config's.
    tweaks: Vec<EngineTweak>,
    /// An application's in-process node ([`NodeBuilder::embedded`]).
    embedded: bool,
    /// The first setting refused while building (returned by the build, so that the builder
    /// stays chainable).
    error: Option<NodeError>,
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
            kinds: Vec::new(),
            tweaks: Vec::new(),
            embedded: false,
            error: None,
        }
    }

    /// A builder for an application's in-process node on the SQLite file at `path`
    /// ([`NodeBuilder::embedded`]).
    pub fn sqlite(path: impl AsRef<std::path::Path>) -> Self {
        let path = path.as_ref();
        let cfg = Config {
            database_url: Some(path.display().to_string()),
            data_dir: path
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .map(|d| d.to_path_buf())
                .unwrap_or_else(|| ".".into()),
            ..Config::default()
        };
        NodeBuilder::new(cfg).embedded()
    }

    /// A builder for an application's in-process node on the PostgreSQL database at `url`,
    /// its tables in schema `kairos` unless [`NodeBuilder::schema`] says otherwise
    /// ([`NodeBuilder::embedded`]).
    pub fn postgres(url: impl Into<String>) -> Self {
        let url = url.into();
        let is_pg = ["postgres://", "postgresql://"]
            .iter()
            .any(|p| url.to_ascii_lowercase().starts_with(p));
        let cfg = Config {
            database_url: Some(url),
            ..Config::default()
        };
        let mut b = NodeBuilder::new(cfg).embedded();
        if !is_pg {
            b.error = Some(NodeError::usage(
                "database_url",
                "not a PostgreSQL URL: postgres://USER@HOST:PORT/DATABASE",
            ));
        }
        b
    }

    /// An application's in-process node: it installs no process-wide metrics recorder (the
    /// application may have its own), writes no key or node-id file beside the application's
    /// database, seals stored secrets only under a configured key
    /// ([`Config::secret_key`]), and is named `embed-<pid>` unless [`NodeBuilder::node_name`]
    /// says otherwise.
    pub fn embedded(mut self) -> Self {
        self.embedded = true;
        if self.cfg.node_id.is_none() && self.cfg.node.is_none() {
            self.cfg.node_id = Some(format!("embed-{}", std::process::id()));
        }
        self
    }

    /// The PostgreSQL schema holding kairos's tables (created and migrated at start).
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.cfg.database_schema = schema.into();
        self
    }

    /// Jobs running at once (default 100).
    pub fn concurrency(self, n: usize) -> Self {
        self.configure(move |c| c.executor.concurrency = n)
    }

    /// The longest wait before looking for due jobs again when nothing woke the node
    /// (default 1 s).
    pub fn poll_interval(self, d: Duration) -> Self {
        self.configure(move |c| {
            c.executor.poll_interval = d;
            c.scheduler.poll_interval = d;
        })
    }

    /// How long running jobs may take to finish after the node is told to stop (default
    /// 30 s); what does not finish runs again after its lease expires.
    pub fn shutdown_grace(self, d: Duration) -> Self {
        self.configure(move |c| c.executor.shutdown_grace = d)
    }

    /// This node's name, recorded on claims and attempts.
    pub fn node_name(mut self, name: &str) -> Self {
        self.cfg.node_id = Some(name.to_string());
        self
    }

    /// Any other engine setting (leases, batches, retention, the monitor), applied over the
    /// configuration's; checked when the node is built.
    pub fn configure(mut self, f: impl Fn(&mut EngineConfig) + Send + Sync + 'static) -> Self {
        self.tweaks.push(Arc::new(f));
        self
    }

    /// Add an application's kind (its name, handler, retry default, deadline and request
    /// check) to the built-in ones. A name that is not a kind name, is a built-in kind's or
    /// is added twice makes the build fail naming `kind`.
    pub fn kind(mut self, kind: impl Kind) -> Self {
        self.kinds.push(Arc::new(kind));
        self
    }

    /// Check the application's kinds (valid names, none built in, none twice) and the
    /// settings refused while building.
    fn check_kinds(&self) -> Result<(), NodeError> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        let builtin = Kinds::builtin().names();
        let mut seen = std::collections::HashSet::new();
        for k in &self.kinds {
            let name = k.name();
            let reason = if !kairos_core::JobKind::is_valid_name(name) {
                format!("{name:?} is not a kind name: 1 to 64 of [a-z0-9_.-]")
            } else if builtin.contains(&name) {
                format!("{name:?} is a built-in kind; give the job its own name")
            } else if !seen.insert(name) {
                format!("{name:?} has a handler already")
            } else {
                continue;
            };
            return Err(NodeError::usage("kind", reason));
        }
        Ok(())
    }

    /// The engine's settings: the configuration's, then the ones set in code; checked.
    pub fn engine_config(&self) -> Result<EngineConfig, NodeError> {
        let mut ec = engine_config(&self.cfg)?;
        for t in &self.tweaks {
            t(&mut ec);
        }
        ec.validate()?;
        Ok(ec)
    }

    /// The node's kinds: the built-in ones (with their handlers when `running`) and the
    /// application's.
    fn node_kinds(&self, running: Option<(&Db, &Config)>) -> Result<Kinds, NodeError> {
        let base = match running {
            Some((db, cfg)) => builtin_kinds(cfg, db.store(), self.clock.clone(), &self.renderer)?,
            None => Kinds::builtin(),
        };
        Ok(self
            .kinds
            .iter()
            .fold(base, |k, extra| k.with_shared(extra.clone())))
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

    /// Open the database (creating and migrating it) with the secret key checked and applied
    /// (an embedded node: applied when one is configured).
    pub async fn open_db(&self) -> Result<Db, NodeError> {
        if self.embedded && self.cfg.secret_key.is_none() {
            return db::open_unsealed(&self.cfg).await;
        }
        open_db(&self.cfg, self.clock.as_ref()).await
    }

    /// The facade's settings shared by every use: private targets, the digest attempt's
    /// timeout, the outbox.
    fn facade(&self, db: &Db, wake: Arc<Notify>, kinds: Arc<Kinds>) -> Kairos {
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
        self.check_kinds()?;
        let db = self.open_db().await?;
        // Described, without handlers: nothing runs in this process.
        let kinds = Arc::new(self.node_kinds(None)?);
        let kairos = self.facade(&db, Arc::new(Notify::new()), kinds);
        Ok((db, kairos))
    }

    /// The whole node — database, handlers, engine and facade — with nothing started. On
    /// PostgreSQL the engine's hot-path connections are opened here
    /// ([`PostgresStore::warm_hot_path`](kairos_store_postgres::PostgresStore::warm_hot_path)),
    /// so that the first claim does not wait for them.
    pub async fn build(&self) -> Result<Node, NodeError> {
        let cfg = &self.cfg;
        // Settings and kinds first: a bad one opens nothing.
        self.check_kinds()?;
        let ec = self.engine_config()?;
        let db = self.open_db().await?;
        let store = db.store();
        let kinds = match self.node_kinds(Some((&db, cfg))) {
            Ok(k) => Arc::new(k),
            Err(e) => {
                db.close().await;
                return Err(e);
            }
        };
        if let Db::Postgres(pg, _) = &db {
            // The engine's first claims and completions find their connections open.
            if let Err(e) = pg.warm_hot_path().await {
                db.close().await;
                return Err(NodeError::runtime(
                    "could not open the engine's database connections",
                    &e,
                ));
            }
        }
        if !self.embedded {
            // Installed before the engine runs, so its first attempts are counted on /metrics.
            let _ = crate::monitoring::metrics_recorder();
        }
        let mut engine = Engine::new(ec, store.clone(), self.clock.clone(), kinds.clone())?
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
