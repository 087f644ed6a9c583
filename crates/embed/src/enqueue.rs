//! Enqueue options, and transactional enqueue: a job inserted in the application's own
//! transaction exists if and only if that transaction commits.

use crate::node::Node;
use crate::{Error, JobArgs};
use chrono::{DateTime, SecondsFormat, Utc};
use kairos_app::node::Db;
use kairos_core::Job;
use kairos_core::retry::RetrySpec;
use kairos_engine::ops::NewJob;
use sqlx::{Postgres, Sqlite, SqliteConnection, Transaction};

/// How to enqueue a job; every field is optional (`..Default::default()`).
#[derive(Debug, Clone, Default)]
pub struct EnqueueOptions {
    /// When to run it (default: now). Years 0000 to 9999 (UTC).
    pub run_at: Option<DateTime<Utc>>,
    /// Enqueue once per key: the same key again answers with the job that has it
    /// (`created = false`). 1 to 255 bytes without control characters.
    pub idempotency_key: Option<String>,
    /// Most attempts, both failure classes (default: the retry policy's; with the default
    /// policy 4).
    pub max_attempts: Option<u32>,
    /// The retry policy in the API's form (`delays`, `max_attempts`, per class);
    /// `max_attempts` above overrides its maximum.
    pub retry: Option<RetrySpec>,
}

impl EnqueueOptions {
    /// The API's job request for `args` with these options (validated by the facade).
    pub(crate) fn new_job<A: JobArgs>(self, args: &A) -> Result<NewJob, Error> {
        let payload = serde_json::to_value(args)
            .map_err(|e| Error::invalid("payload", format!("does not serialize to JSON: {e}")))?;
        let retry = match (self.retry, self.max_attempts) {
            (r, None) => r,
            (r, Some(max)) => Some(RetrySpec {
                max_attempts: Some(max),
                ..r.unwrap_or_default()
            }),
        };
        Ok(NewJob {
            kind: Some(A::KIND.to_string()),
            payload: Some(payload),
            // The facade parses the API's RFC 3339 form; a year past 9999 fails there, naming
            // `run_at`.
            run_at: self
                .run_at
                .map(|t| t.to_rfc3339_opts(SecondsFormat::AutoSi, true)),
            idempotency_key: self.idempotency_key,
            retry,
            ..Default::default()
        })
    }
}

mod sealed {
    /// Only the transactions of the two databases kairos runs on.
    pub trait Sealed {}

    /// The connection of an application's transaction.
    pub enum TxConn<'a> {
        Sqlite(&'a mut sqlx::SqliteConnection),
        Postgres(&'a mut sqlx::PgConnection),
    }
}
use sealed::TxConn;

/// An application's open transaction on a node's database, for [`Node::enqueue_tx`]:
/// `sqlx::Transaction<Sqlite>` or `sqlx::Transaction<Postgres>`. A bare connection is not
/// one on purpose: outside a transaction the insert would not be atomic with anything, and on
/// PostgreSQL the schema setting that is local to a transaction would not apply.
pub trait AppTx: sealed::Sealed + Send {
    /// The connection to insert on.
    #[doc(hidden)]
    fn conn(&mut self) -> TxConn<'_>;
}

impl sealed::Sealed for Transaction<'_, Sqlite> {}
impl AppTx for Transaction<'_, Sqlite> {
    fn conn(&mut self) -> TxConn<'_> {
        TxConn::Sqlite(self)
    }
}
impl sealed::Sealed for Transaction<'_, Postgres> {}
impl AppTx for Transaction<'_, Postgres> {
    fn conn(&mut self) -> TxConn<'_> {
        TxConn::Postgres(self)
    }
}

impl Node {
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
        let (job, created) = self.kairos().job_enqueue(opts.new_job(&args)?).await?;
        Ok(Enqueued { job, created })
    }

    /// Enqueue a job of `args`'s kind in the application's transaction `tx` on this node's
    /// database: the job exists if and only if `tx` commits. Validated exactly as
    /// [`Node::enqueue_with`] (a bad option fails naming its field and inserts nothing; the
    /// transaction stays usable), then inserted with the statement every enqueue shares. An
    /// idempotency key already used (also earlier in `tx`) answers with that job and
    /// `created = false`.
    ///
    /// On SQLite, open the application's pool with [`Node::sqlite_connect_options`] and
    /// begin with `BEGIN IMMEDIATE` if the transaction reads before it writes; the node runs
    /// the job at its next poll, or at once if [`Node::wake`] is called after the commit. On
    /// PostgreSQL the commit wakes every node.
    pub async fn enqueue_tx<T: AppTx>(
        &self,
        tx: &mut T,
        args: impl JobArgs,
    ) -> Result<Enqueued, Error> {
        self.enqueue_tx_with(tx, args, EnqueueOptions::default())
            .await
    }

    /// [`Node::enqueue_tx`] with options.
    pub async fn enqueue_tx_with<T: AppTx, A: JobArgs>(
        &self,
        tx: &mut T,
        args: A,
        opts: EnqueueOptions,
    ) -> Result<Enqueued, Error> {
        let job = self.kairos().job_prepare(opts.new_job(&args)?).await?;
        let inserted = match (tx.conn(), self.db()) {
            (TxConn::Sqlite(conn), Db::Sqlite(_)) => {
                let file = self.sqlite_file().unwrap_or(std::path::Path::new(""));
                let inserted = kairos_store_sqlite::job_insert_in_tx(conn, job).await?;
                // After the insert, not before: a read first would make the insert's lock
                // upgrade in a deferred transaction fail with SQLITE_BUSY instead of waiting.
                check_same_file(conn, file).await?;
                inserted
            }
            (TxConn::Postgres(conn), Db::Postgres(store, _)) => {
                kairos_store_postgres::job_insert_in_tx(conn, store.schema(), job).await?
            }
            (TxConn::Sqlite(_), Db::Postgres(..)) => {
                return Err(Error::invalid(
                    "tx",
                    "is a SQLite transaction; this node runs on PostgreSQL",
                ));
            }
            (TxConn::Postgres(_), Db::Sqlite(_)) => {
                return Err(Error::invalid(
                    "tx",
                    "is a PostgreSQL transaction; this node runs on SQLite",
                ));
            }
        };
        Ok(Enqueued {
            job: inserted.job,
            created: inserted.created,
        })
    }
}

/// Refuse a transaction on another SQLite file, where no node of this database would see the
/// job (on a file without kairos's tables the insert has failed already). The job was
/// inserted there: the error tells the caller to roll back.
async fn check_same_file(
    conn: &mut SqliteConnection,
    node_file: &std::path::Path,
) -> Result<(), Error> {
    let file: Option<String> =
        sqlx::query_scalar("SELECT file FROM pragma_database_list WHERE name = 'main'")
            .fetch_optional(&mut *conn)
            .await
            .map_err(|e| Error::internal("reading the transaction's database file", e))?;
    let same = file
        .filter(|f| !f.is_empty())
        .and_then(|f| std::fs::canonicalize(f).ok())
        .is_some_and(|f| f == node_file);
    if same {
        Ok(())
    } else {
        Err(Error::invalid(
            "tx",
            "is on another SQLite database than this node's file; roll it back",
        ))
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
