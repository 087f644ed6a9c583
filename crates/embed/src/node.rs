//! The node: a builder ([`NodeBuilder`]) that opens the database and registers typed
//! handlers, and the started [`Node`] that enqueues jobs and runs the engine in-process until
//! [`Node::shutdown`].

use crate::enqueue::EnqueueOptions;
use crate::handler::{JobArgs, JobError, Typed};
use crate::{Context, Error};
use kairos_core::{Clock, Job, JobKind, SystemClock};
use kairos_engine::kinds::Kinds;
use kairos_engine::{Engine, EngineConfig, HandlerRegistry, Kairos};
use kairos_store::{Leader, Store};
use kairos_store_postgres::PostgresStore;
use kairos_store_sqlite::SqliteStore;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The PostgreSQL schema of a node whose builder names none.
pub const DEFAULT_SCHEMA: &str = "kairos";

/// How often a PostgreSQL node that is not the leader tries to take the leader lock (the
/// server's value): a dead leader is replaced within about this long.
pub const LEADER_RETRY: Duration = Duration::from_secs(3);

/// Which database a node is built on.
#[derive(Clone)]
enum Target {
    Sqlite(PathBuf),
    Postgres { url: String, schema: String },
}

/// Builds a [`Node`]: the database, the typed handlers, the engine's settings. Start it with
/// [`NodeBuilder::start`].
pub struct NodeBuilder {
    target: Target,
    registry: HandlerRegistry,
    config: EngineConfig,
    clock: Arc<dyn Clock>,
    /// The first registration error, returned by `start` (the builder stays chainable).
    error: Option<Error>,
}

impl std::fmt::Debug for NodeBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the target: a PostgreSQL URL may hold a password.
        f.debug_struct("NodeBuilder")
            .field("kinds", &self.registry.kinds())
            .finish_non_exhaustive()
    }
}

impl NodeBuilder {
    fn new(target: Target) -> Self {
        NodeBuilder {
            target,
            registry: HandlerRegistry::new(),
            config: EngineConfig::default().with_node(&format!("embed-{}", std::process::id())),
            clock: Arc::new(SystemClock),
            error: None,
        }
    }

    fn fail(&mut self, e: Error) {
        self.error.get_or_insert(e);
    }

    /// Run jobs of kind `A::KIND` with `f`: each attempt deserializes the job's payload into
    /// `A` (a payload that does not fit fails the job permanently, saying why) and calls
    /// `f(args, ctx)`. `Ok(())` is a success; a [`JobError`] is retried or not by its class.
    /// A panic is caught and is a failure. An invalid or built-in kind name, or one
    /// registered twice, makes [`NodeBuilder::start`] fail with field `kind`.
    pub fn handler<A, F, Fut>(mut self, f: F) -> Self
    where
        A: JobArgs,
        F: Fn(A, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), JobError>> + Send + 'static,
    {
        let kind = A::KIND;
        if !JobKind::is_valid_name(kind) {
            self.fail(Error::invalid(
                "kind",
                format!("{kind:?} is not a kind name: 1 to 64 of [a-z0-9_.-]"),
            ));
        } else if Kinds::builtin().names().contains(&kind) {
            self.fail(Error::invalid(
                "kind",
                format!("{kind:?} is a built-in kind; give the job its own name"),
            ));
        } else if self.registry.get(kind).is_some() {
            self.fail(Error::invalid(
                "kind",
                format!("{kind:?} has a handler already"),
            ));
        } else {
            self.registry
                .register(kind, Arc::new(Typed::<A, F>::new(f)));
        }
        self
    }

    /// The PostgreSQL schema holding kairos's tables (default [`DEFAULT_SCHEMA`]), created and
    /// migrated at start: `[a-z_][a-z0-9_]{0,62}`. Only for [`Node::postgres`].
    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        match &mut self.target {
            Target::Postgres { schema: s, .. } => *s = schema.into(),
            Target::Sqlite(_) => self.fail(Error::invalid(
                "schema",
                "only a PostgreSQL node has a schema",
            )),
        }
        self
    }

    /// Jobs running at once (default 100).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.config.executor.concurrency = n;
        self
    }

    /// The longest wait before looking for due jobs again when nothing woke the node (default
    /// 1 s): how soon a job committed by another connection runs, unless
    /// [`Node::wake`] is called after the commit (on PostgreSQL the commit wakes every node).
    pub fn poll_interval(mut self, d: Duration) -> Self {
        self.config.executor.poll_interval = d;
        self.config.scheduler.poll_interval = d;
        self
    }

    /// How long running jobs may take to finish after [`Node::shutdown`] (default 30 s);
    /// what does not finish is run again after its lease expires.
    pub fn shutdown_grace(mut self, d: Duration) -> Self {
        self.config.executor.shutdown_grace = d;
        self
    }

    /// This node's name, recorded on claims and attempts (default `embed-<pid>`).
    pub fn node_name(mut self, name: &str) -> Self {
        self.config = self.config.with_node(name);
        self
    }

    /// Any other engine setting (leases, batches, retention, the monitor); checked at start.
    pub fn configure(mut self, f: impl FnOnce(&mut EngineConfig)) -> Self {
        f(&mut self.config);
        self
    }

    /// Use `clock` instead of the system clock (tests).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Open the database (creating and migrating it), build the engine and start it on the
    /// current Tokio runtime. Fails with the field that is wrong for a bad setting or kind
    /// name, or when the database cannot be opened.
    pub async fn start(self) -> Result<Node, Error> {
        if let Some(e) = self.error {
            return Err(e);
        }
        self.config.validate()?;
        let db = match &self.target {
            Target::Sqlite(path) => {
                let store = SqliteStore::open(path).await.map_err(|e| {
                    Error::internal(format!("opening the database {}", path.display()), e)
                })?;
                // The file exists now: its canonical name identifies it in `enqueue_tx`.
                let file = std::fs::canonicalize(path).map_err(|e| {
                    Error::internal(format!("resolving the path {}", path.display()), e)
                })?;
                Db::Sqlite { store, file }
            }
            Target::Postgres { url, schema } => {
                kairos_store_postgres::validate_schema(schema)
                    .map_err(|e| Error::invalid("schema", e.to_string()))?;
                // With the schema valid, what connect refuses as invalid is the URL.
                let store = PostgresStore::connect(url, schema).await.map_err(|e| {
                    if e.kind() == kairos_store::ErrorKind::Invalid {
                        Error::invalid("url", e.to_string())
                    } else {
                        Error::internal("connecting to PostgreSQL", e)
                    }
                })?;
                Db::Postgres {
                    store,
                    url: url.clone(),
                }
            }
        };
        let store = db.store();
        let kinds = self.registry.kinds();
        let engine = match Engine::new(
            self.config,
            store.clone(),
            self.clock.clone(),
            self.registry,
        ) {
            Ok(e) => e.with_leader(db.leader()),
            Err(e) => {
                db.close().await;
                return Err(e.into());
            }
        };
        let kairos = Kairos::new(store, self.clock, engine.wake(), kinds);
        let cancel = CancellationToken::new();
        let mut tasks = Vec::new();
        if let Db::Postgres { store, url } = &db {
            let schema = store.schema().to_string();
            tasks.push(tokio::spawn(kairos_store_postgres::listen_wakeups(
                url.clone(),
                schema.clone(),
                engine.wake(),
                cancel.clone(),
            )));
            tasks.push(tokio::spawn(kairos_store_postgres::run_leader_election(
                url.clone(),
                schema,
                engine.leader().clone(),
                LEADER_RETRY,
                cancel.clone(),
            )));
        }
        {
            let (engine, cancel) = (engine.clone(), cancel.clone());
            // First: shutdown waits for the engine's drain before anything else.
            tasks.insert(0, tokio::spawn(async move { engine.run(cancel).await }));
        }
        Ok(Node {
            inner: Arc::new(Inner {
                db,
                kairos,
                engine,
                cancel,
                tasks: Mutex::new(tasks),
            }),
        })
    }
}

/// The open database of a node.
pub(crate) enum Db {
    Sqlite {
        store: SqliteStore,
        /// The file's canonical path.
        file: PathBuf,
    },
    Postgres {
        store: PostgresStore,
        url: String,
    },
}

impl Db {
    fn store(&self) -> Arc<dyn Store> {
        match self {
            Db::Sqlite { store, .. } => Arc::new(store.clone()),
            Db::Postgres { store, .. } => Arc::new(store.clone()),
        }
    }

    /// One node on SQLite always leads; on PostgreSQL the election decides.
    fn leader(&self) -> Leader {
        match self {
            Db::Sqlite { .. } => Leader::always(),
            Db::Postgres { .. } => Leader::follower(),
        }
    }

    async fn close(&self) {
        match self {
            Db::Sqlite { store, .. } => store.close().await,
            Db::Postgres { store, .. } => store.close().await,
        }
    }
}

struct Inner {
    db: Db,
    kairos: Kairos,
    engine: Engine,
    cancel: CancellationToken,
    tasks: Mutex<Vec<JoinHandle<()>>>,
}

impl Drop for Inner {
    /// A node dropped without [`Node::shutdown`] still stops claiming.
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// A started node: the engine runs its handlers in this process. Cheap to clone (every clone
/// is the same node); stop it with [`Node::shutdown`].
#[derive(Clone)]
pub struct Node {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("engine", &self.inner.engine)
            .finish_non_exhaustive()
    }
}

impl Node {
    /// A node on the SQLite file at `path` (created and migrated at start).
    pub fn sqlite(path: impl AsRef<Path>) -> NodeBuilder {
        NodeBuilder::new(Target::Sqlite(path.as_ref().to_path_buf()))
    }

    /// A node on the PostgreSQL database at `url` (`postgres://user@host:5432/db`), its tables
    /// in [`NodeBuilder::schema`]. Several nodes (processes) may share one schema.
    pub fn postgres(url: impl Into<String>) -> NodeBuilder {
        NodeBuilder::new(Target::Postgres {
            url: url.into(),
            schema: DEFAULT_SCHEMA.to_string(),
        })
    }

    /// Enqueue a job of `args`'s kind to run now.
    pub async fn enqueue<A: JobArgs>(&self, args: A) -> Result<Enqueued, Error> {
        self.enqueue_with(args, EnqueueOptions::default()).await
    }

    /// Enqueue a job with options (when, idempotency key, retries). Validated as the API
    /// validates a job: a bad option fails naming its field, and nothing is stored. With an
    /// idempotency key already used, answers with that job and `created = false`.
    pub async fn enqueue_with<A: JobArgs>(
        &self,
        args: A,
        opts: EnqueueOptions,
    ) -> Result<Enqueued, Error> {
        let (job, created) = self.inner.kairos.job_enqueue(opts.new_job(&args)?).await?;
        Ok(Enqueued { job, created })
    }

    /// The job `id`, if it exists.
    pub async fn job(&self, id: &str) -> Result<Option<Job>, Error> {
        Ok(self.inner.kairos.store().job_get(id).await?)
    }

    /// The job `id` once it has finished — succeeded, skipped, dead or cancelled, its
    /// outcome committed — looked at every 20 ms for at most `timeout`. A job waiting for a
    /// retry is not finished. Fails with [`ErrorKind::NotFound`](crate::ErrorKind::NotFound)
    /// when there is no such job and [`ErrorKind::Timeout`](crate::ErrorKind::Timeout) when
    /// it has not finished in time.
    pub async fn wait_finished(&self, id: &str, timeout: Duration) -> Result<Job, Error> {
        let wait = async {
            loop {
                let job = self.job(id).await?.ok_or_else(|| Error::not_found(id))?;
                if job.state.is_final() {
                    return Ok(job);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        };
        tokio::time::timeout(timeout, wait)
            .await
            .unwrap_or_else(|_| Err(Error::timeout(id, timeout)))
    }

    /// Look for due jobs now: after committing a transaction that enqueued jobs on SQLite
    /// (on PostgreSQL the commit notifies every node itself).
    pub fn wake(&self) {
        self.inner.engine.wake().notify_one();
    }

    /// The operations facade (the API's operations: list, retry, cancel, schedules).
    pub fn kairos(&self) -> &Kairos {
        &self.inner.kairos
    }

    /// The connection settings for an application's own sqlx pool on this node's SQLite file
    /// (WAL, busy timeout, foreign keys), for [`Node::enqueue_tx`]; `None` on PostgreSQL.
    pub fn sqlite_connect_options(&self) -> Option<sqlx::sqlite::SqliteConnectOptions> {
        match &self.inner.db {
            Db::Sqlite { file, .. } => Some(kairos_store_sqlite::connect_options(file)),
            Db::Postgres { .. } => None,
        }
    }

    /// The PostgreSQL schema holding kairos's tables; `None` on SQLite.
    pub fn postgres_schema(&self) -> Option<&str> {
        match &self.inner.db {
            Db::Postgres { store, .. } => Some(store.schema()),
            Db::Sqlite { .. } => None,
        }
    }

    pub(crate) fn db(&self) -> &Db {
        &self.inner.db
    }

    /// Stop gracefully: stop claiming, let running handlers finish within the shutdown
    /// grace, record their outcomes, then close the database. Every clone is stopped; a
    /// second call returns at once.
    pub async fn shutdown(&self) {
        self.inner.cancel.cancel();
        let tasks =
            std::mem::take(&mut *self.inner.tasks.lock().unwrap_or_else(|p| p.into_inner()));
        if tasks.is_empty() {
            return;
        }
        for t in tasks {
            if let Err(e) = t.await {
                tracing::error!(error = %e, "a kairos task ended abnormally");
            }
        }
        self.inner.db.close().await;
    }
}

/// What an enqueue did.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Enqueued {
    /// The job: the new one, or the one holding the idempotency key.
    pub job: Job,
    /// Whether it was created now (`false`: the idempotency key was used already).
    pub created: bool,
}
