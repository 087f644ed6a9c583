//! # kairos-embed
//!
//! Run kairos inside your Rust application, without the server: a [`Node`] on your own SQLite
//! file or PostgreSQL database runs typed job handlers in-process, and your code enqueues
//! jobs — also inside its own database transactions, so that a job exists if and only if the
//! transaction that asked for it commits.
//!
//! - **Typed jobs.** A job's arguments are a `serde` struct implementing [`JobArgs`] (its
//!   kind name, its attempt timeout). The handler is an async function of those arguments
//!   and a [`Context`]; it returns `Ok(())`, or a [`JobError`] that is retried
//!   ([`JobError::retry`]) or not ([`JobError::permanent`]) under the job's retry policy. A
//!   stored payload that does not deserialize into the handler's type fails the job
//!   permanently, saying why; a panic is caught and is a failure.
//! - **Enqueue.** [`Node::enqueue`] and [`Node::enqueue_with`] ([`EnqueueOptions`]: when,
//!   an idempotency key, retries) go through the same validation as the HTTP API: bad input
//!   fails with an [`Error`] naming the field, and nothing is stored.
//! - **Transactional enqueue.** [`Node::enqueue_tx`] inserts the validated job on your
//!   `sqlx::Transaction` (SQLite or PostgreSQL, on the node's database): roll back and the
//!   job never existed; commit and it runs.
//! - **One node builder.** [`Node::sqlite`] and [`Node::postgres`] give the [`NodeBuilder`]
//!   that `kairos serve` uses too (from `kairos-app`); [`NodeBuilderExt`] adds typed kinds
//!   to it. A kind brings its retry default and payload check with its handler
//!   ([`JobArgs::retry`], [`JobArgs::validate`]).
//! - **In-process engine.** [`NodeBuilderExt::start`] opens and migrates the database and runs
//!   the executor (claims in batches, leases, retries with back-off) and the other services
//!   on your Tokio runtime. [`Node::shutdown`] stops claiming and lets running handlers finish
//!   within the grace period. On PostgreSQL, any number of processes can run nodes on one
//!   schema: claims never overlap, and an enqueue wakes every node.
//!
//! ## Example
//!
//! ```
//! use kairos_embed::{Context, JobArgs, JobError, Node, NodeBuilderExt};
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Serialize, Deserialize)]
//! struct SendWelcome {
//!     user_id: u64,
//! }
//!
//! impl JobArgs for SendWelcome {
//!     const KIND: &'static str = "send_welcome";
//! }
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let file = dir.path().join("app.db");
//! let (done, mut sent) = tokio::sync::mpsc::unbounded_channel();
//!
//! let node = Node::sqlite(&file)
//!     .handler(move |job: SendWelcome, _ctx: Context| {
//!         let done = done.clone();
//!         async move {
//!             // Send the mail here; a JobError::retry(e) tries again later.
//!             done.send(job.user_id).map_err(JobError::permanent)?;
//!             Ok(())
//!         }
//!     })
//!     .start()
//!     .await?;
//!
//! // Outside any transaction.
//! node.enqueue(SendWelcome { user_id: 1 }).await?;
//!
//! // Inside the application's own transaction on the same file: the job exists iff it commits.
//! let pool = sqlx::SqlitePool::connect_with(node.sqlite_connect_options().unwrap()).await?;
//! let mut tx = pool.begin().await?;
//! sqlx::query("CREATE TABLE users (id INTEGER PRIMARY KEY)").execute(&mut *tx).await?;
//! sqlx::query("INSERT INTO users (id) VALUES (2)").execute(&mut *tx).await?;
//! node.enqueue_tx(&mut tx, SendWelcome { user_id: 2 }).await?;
//! tx.commit().await?;
//! node.wake(); // run it now rather than at the next poll
//!
//! let mut ids = vec![sent.recv().await.unwrap(), sent.recv().await.unwrap()];
//! ids.sort();
//! assert_eq!(ids, [1, 2]);
//! pool.close().await;
//! node.shutdown().await;
//! # Ok(())
//! # }
//! ```
//!
//! On PostgreSQL, build the node with [`Node::postgres`] (a URL, and a schema for kairos's
//! tables with [`NodeBuilder::schema`]) and enqueue on a `sqlx::Transaction<Postgres>` of
//! your own pool: the statements name the node's schema, your `search_path` is left as it is.
//! The runnable programs `examples/embed_sqlite.rs` and `examples/embed_postgres.rs`
//! (`cargo run --example embed_sqlite`) and `docs/embedding.md` show both end to end.
#![deny(missing_docs)]

mod enqueue;
mod error;
mod handler;
mod node;

pub use enqueue::{AppTx, EnqueueOptions, Enqueued};
pub use error::{Error, ErrorKind};
pub use handler::{Context, JobArgs, JobError};
pub use node::{DEFAULT_SCHEMA, LEADER_RETRY, Node, NodeBuilder, NodeBuilderExt, typed_kind};

/// A resolved retry policy, a kind's default ([`JobArgs::retry`]).
pub use kairos_core::RetryPolicy;
/// A retry policy in the API's form, for [`EnqueueOptions::retry`].
pub use kairos_core::retry::RetrySpec;
/// The job as stored, and its state.
pub use kairos_core::{Job, JobState};
/// The engine's settings, for [`NodeBuilder::configure`].
pub use kairos_engine::EngineConfig;
/// The operations facade ([`Node::kairos`]): list, retry and cancel jobs, schedules.
pub use kairos_engine::Kairos;
/// A kind an application brings, for [`NodeBuilder::kind`].
pub use kairos_engine::{AppKind, Kind};
/// The sqlx this crate is built with: transactions for [`Node::enqueue_tx`] must be of it.
pub use sqlx;

/// `docs/embedding.md`, whose code blocks are compiled as this item's doc tests
/// (`cargo test -p kairos-embed --doc`), so a guide that drifts from the API fails the tests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/embedding.md")]
pub struct EmbeddingGuide;
