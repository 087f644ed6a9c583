//! The node: built by the one node builder of kairos ([`NodeBuilder`], from `kairos-app`),
//! with this crate's typed kinds ([`NodeBuilderExt::handler`]), and the started [`Node`] that
//! enqueues jobs and runs the engine in-process until [`Node::shutdown`].

use crate::handler::{JobArgs, JobError, Typed};
use crate::{Context, Error};
use kairos_app::node::{Db, Running};
use kairos_core::Job;
use kairos_engine::{AppKind, Kairos};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub use kairos_app::node::{LEADER_RETRY, NodeBuilder};

/// The PostgreSQL schema of a node whose builder names none.
pub const DEFAULT_SCHEMA: &str = "kairos";

/// What this crate adds to the [`NodeBuilder`]: typed kinds, and starting the node in this
/// process.
pub trait NodeBuilderExt: Sized {
    /// Run jobs of kind `A::KIND` with `f`, in one call that also brings the kind's retry
    /// default ([`JobArgs::retry`]) and request check: a payload enqueued for the kind (through
    /// this crate, the API or the CLI) must deserialize into `A` and pass
    /// [`JobArgs::validate`], else it is refused naming `payload` and nothing is stored. Each
    /// attempt deserializes the payload into `A` and calls `f(args, ctx)`. `Ok(())` is a
    /// success; a [`JobError`] is retried or not by its class. A panic is caught and is a
    /// failure. An invalid or built-in kind name, or one registered twice, makes
    /// [`NodeBuilderExt::start`] fail with field `kind`.
    fn handler<A, F, Fut>(self, f: F) -> Self
    where
        A: JobArgs,
        F: Fn(A, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), JobError>> + Send + 'static;

    /// Open the database (creating and migrating it), build the engine and start it on the
    /// current Tokio runtime. Fails with the field that is wrong for a bad setting or kind
    /// name, or when the database cannot be opened.
    fn start(self) -> impl Future<Output = Result<Node, Error>> + Send;
}

/// The kind of `A`, run by `f`: its name, handler, retry default and payload check.
pub fn typed_kind<A, F, Fut>(f: F) -> AppKind
where
    A: JobArgs,
    F: Fn(A, Context) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), JobError>> + Send + 'static,
{
    let kind = AppKind::new(A::KIND, Arc::new(Typed::<A, F>::new(f))).validate(|payload| {
        let args =
            A::deserialize(payload).map_err(|e| crate::handler::payload_mismatch::<A>(&e))?;
        args.validate()
    });
    match A::retry() {
        Some(policy) => kind.retry(policy),
        None => kind,
    }
}

impl NodeBuilderExt for NodeBuilder {
    fn handler<A, F, Fut>(self, f: F) -> Self
    where
        A: JobArgs,
        F: Fn(A, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), JobError>> + Send + 'static,
    {
        self.kind(typed_kind::<A, F, Fut>(f))
    }

    async fn start(self) -> Result<Node, Error> {
        let built = self.build().await.map_err(Error::from_node)?;
        // The file exists now: its canonical name identifies it in `enqueue_tx`.
        let file = match built.db() {
            Db::Sqlite(_) => {
                let path = match built.config().database() {
                    Ok(kairos_app::config::Database::Sqlite(p)) => p,
                    _ => PathBuf::new(),
                };
                match std::fs::canonicalize(&path) {
                    Ok(f) => Some(f),
                    Err(e) => {
                        built.close().await;
                        return Err(Error::internal(
                            format!("resolving the path {}", path.display()),
                            e,
                        ));
                    }
                }
            }
            Db::Postgres(..) => None,
        };
        let cancel = CancellationToken::new();
        let running = built.start(&cancel);
        Ok(Node {
            inner: Arc::new(Inner {
                node: built,
                file,
                cancel,
                running: Mutex::new(Some(running)),
            }),
        })
    }
}

struct Inner {
    node: kairos_app::node::Node,
    /// The SQLite file's canonical path; `None` on PostgreSQL.
    file: Option<PathBuf>,
    cancel: CancellationToken,
    running: Mutex<Option<Running>>,
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
            .field("engine", self.inner.node.engine())
            .finish_non_exhaustive()
    }
}

impl Node {
    /// A node on the SQLite file at `path` (created and migrated at start).
    pub fn sqlite(path: impl AsRef<Path>) -> NodeBuilder {
        NodeBuilder::sqlite(path)
    }

    /// A node on the PostgreSQL database at `url` (`postgres://user@host:5432/db`), its tables
    /// in [`NodeBuilder::schema`]. Several nodes (processes) may share one schema.
    pub fn postgres(url: impl Into<String>) -> NodeBuilder {
        NodeBuilder::postgres(url).schema(DEFAULT_SCHEMA)
    }

    /// The job `id`, if it exists.
    pub async fn job(&self, id: &str) -> Result<Option<Job>, Error> {
        Ok(self.inner.node.kairos().store().job_get(id).await?)
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
        self.inner.node.engine().wake().notify_one();
    }

    /// The operations facade (the API's operations: list, retry, cancel, schedules).
    pub fn kairos(&self) -> &Kairos {
        self.inner.node.kairos()
    }

    /// The connection settings for an application's own sqlx pool on this node's SQLite file
    /// (WAL, busy timeout, foreign keys), for [`Node::enqueue_tx`]; `None` on PostgreSQL.
    pub fn sqlite_connect_options(&self) -> Option<sqlx::sqlite::SqliteConnectOptions> {
        self.inner
            .file
            .as_deref()
            .map(kairos_store_sqlite::connect_options)
    }

    /// The PostgreSQL schema holding kairos's tables; `None` on SQLite.
    pub fn postgres_schema(&self) -> Option<&str> {
        match self.inner.node.db() {
            Db::Postgres(store, _) => Some(store.schema()),
            Db::Sqlite(_) => None,
        }
    }

    pub(crate) fn db(&self) -> &Db {
        self.inner.node.db()
    }

    /// The SQLite file's canonical path; `None` on PostgreSQL.
    pub(crate) fn sqlite_file(&self) -> Option<&Path> {
        self.inner.file.as_deref()
    }

    /// Stop gracefully: stop claiming, let running handlers finish within the shutdown
    /// grace, record their outcomes, then close the database. Every clone is stopped; a
    /// second call returns at once.
    pub async fn shutdown(&self) {
        self.inner.cancel.cancel();
        let running = self
            .inner
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        let Some(running) = running else {
            return;
        };
        running.join().await;
        self.inner.node.close().await;
    }
}
