//! A database whose roles are written once: [`SqlDb`] is what a store gives the shared role
//! impls (the `impl<D: SqlDb> … for D` in each `kairos_store::sql` module) — runners on its read and write pools, write
//! transactions, its sealer and its erasure key — and [`sql_db!`](crate::sql_db) writes that
//! impl from the store's field names, so neither store repeats it.
//!
//! Every role but the job queue's hot path ([`crate::JobStore`], which each store keeps for
//! its own batching: SQLite's writer thread, PostgreSQL's `jsonb_to_recordset`) is implemented
//! for every `SqlDb` by a blanket impl; the statements differ only where [`SqlRun::dialect`]
//! says so.

use super::SqlRun;
use crate::sealing::Sealer;
use crate::{KeyCache, Result};
use async_trait::async_trait;

/// What the shared role impls need from a store.
#[async_trait]
pub trait SqlDb: Send + Sync + 'static {
    /// A runner on a pool or on one transaction's connection.
    type Run<'a>: SqlRun + Send
    where
        Self: 'a;
    /// An open write transaction; dropped without [`SqlDb::commit`], it rolls back.
    type Tx: Send;

    /// A runner on the pool for reads.
    fn reader(&self) -> Self::Run<'_>;
    /// A runner on the pool for single-statement writes.
    fn writer(&self) -> Self::Run<'_>;
    /// A runner inside `tx`.
    fn in_tx(tx: &mut Self::Tx) -> Self::Run<'_>;
    /// Begin a write transaction. On SQLite it takes the write lock at once (`BEGIN
    /// IMMEDIATE`): a transaction that reads before it writes would otherwise fail with
    /// `SQLITE_BUSY` instead of waiting when the writer thread holds the lock.
    async fn begin(&self, what: &str) -> Result<Self::Tx>;
    /// Commit `tx`; `what` names it in errors.
    async fn commit(&self, tx: Self::Tx, what: &str) -> Result<()>;
    /// Seals stored secrets; `None`: they are stored as plaintext.
    fn sealer(&self) -> Option<&Sealer>;
    /// The erasure key, read once.
    fn keys(&self) -> &KeyCache;
    /// Apply the embedded migrations.
    async fn migrations_apply(&self) -> Result<()>;
    /// The embedded migrations, each with whether it is applied.
    async fn migrations_list(&self) -> Result<Vec<crate::MigrationStatus>>;
    /// What holds cleanup back ([`crate::NodeStore::db_health_read`]): each database's own.
    async fn health_read(&self, p: crate::DbHealthRead) -> Result<crate::DbHealth>;
    /// Reclaim dead row versions ([`crate::NodeStore::db_vacuum`]): each database's own.
    async fn vacuum(&self, p: crate::DbVacuum) -> Result<crate::DbVacuumed>;
}

/// Implement [`SqlDb`] for `$store`, whose fields `$read` and `$write` are its pools (the
/// same field on PostgreSQL), `sealer` is `Option<Arc<Sealer>>` and `keys` is
/// `Arc<KeyCache>`; `$run` is its [`sql_run!`](crate::sql_run) runner, `$begin` the statement
/// that opens a write transaction, `$map_err` its error mapper, `$apply`/`$list` its
/// migration functions (`async fn(&$store) -> Result<…>`) and `$health` its
/// `async fn(&$store, DbHealthRead) -> Result<DbHealth>`, `$vacuum` its
/// `async fn(&$store, DbVacuum) -> Result<DbVacuumed>`; `$committed` (`fn(&$store, what)`) runs
/// after each write transaction commits (PostgreSQL's claim cursor learns that jobs may have
/// become available).
#[macro_export]
macro_rules! sql_db {
    ($store:ty, $run:ident, $db:ty, read: $read:ident, write: $write:ident, begin: $begin:expr,
     map_err: $map_err:path, apply: $apply:path, list: $list:path, health: $health:path,
     vacuum: $vacuum:path, committed: $committed:path) => {
        #[async_trait::async_trait]
        impl $crate::sql::SqlDb for $store {
            type Run<'a> = $run<'a>;
            type Tx = sqlx::Transaction<'static, $db>;

            fn reader(&self) -> $run<'_> {
                $run::Pool(&self.$read)
            }
            fn writer(&self) -> $run<'_> {
                $run::Pool(&self.$write)
            }
            fn in_tx(tx: &mut Self::Tx) -> $run<'_> {
                $run::Conn(&mut *tx)
            }
            async fn begin(&self, what: &str) -> $crate::Result<Self::Tx> {
                self.$write
                    .begin_with($begin)
                    .await
                    .map_err(|e| $map_err(what, e))
            }
            async fn commit(&self, tx: Self::Tx, what: &str) -> $crate::Result<()> {
                tx.commit().await.map_err(|e| $map_err(what, e))?;
                $committed(self, what);
                Ok(())
            }
            fn sealer(&self) -> Option<&$crate::sealing::Sealer> {
                self.sealer.as_deref()
            }
            fn keys(&self) -> &$crate::KeyCache {
                &self.keys
            }
            async fn migrations_apply(&self) -> $crate::Result<()> {
                $apply(self).await
            }
            async fn migrations_list(&self) -> $crate::Result<Vec<$crate::MigrationStatus>> {
                $list(self).await
            }
            async fn health_read(
                &self,
                p: $crate::DbHealthRead,
            ) -> $crate::Result<$crate::DbHealth> {
                $health(self, p).await
            }
            async fn vacuum(&self, p: $crate::DbVacuum) -> $crate::Result<$crate::DbVacuumed> {
                $vacuum(self, p).await
            }
        }
    };
}
