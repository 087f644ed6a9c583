//! # kairos-store-postgres
//!
//! The [`Store`](kairos_store::Store) on PostgreSQL, for deployments of several nodes sharing
//! one database. It runs the same conformance suite as the SQLite store and mirrors its schema
//! and statements; every statement that differs from SQLite says so in a comment.
//!
//! **Pool and schema.** [`PostgresStore::connect`] opens a [`PgPool`] of up to ten
//! connections. Everything kairos owns lives in one schema (validated as
//! `[a-z_][a-z0-9_]{0,62}`): each connection runs `SET search_path TO <schema>` when it opens,
//! so the SQL is unqualified, and several deployments (or test runs) can share a database. The
//! schema is created if missing and the embedded migrations are applied under a
//! transaction-scoped advisory lock, so nodes that start together do not race.
//!
//! **Claims.** Due jobs are claimed with `SELECT … ORDER BY run_at, id LIMIT n FOR UPDATE
//! SKIP LOCKED` feeding an `UPDATE … RETURNING`: concurrent claimers on any number of
//! nodes take disjoint rows without waiting for each other, and the scan reads only the
//! partial index of available jobs. Due schedules are claimed the same way, plus a time lock
//! (`locked_until`) that keeps a schedule with one node while it expands the firing. The
//! rescuer takes expired leases with `SKIP LOCKED` too. A claim starts reading at the claim
//! cursor, past the entries of the jobs it already claimed, so that a snapshot held open by
//! another session (which keeps those entries from being vacuumed) does not make every claim
//! walk them (`cursor.rs`); the rescuer likewise starts at the rescue floor, past the leases
//! it already read (`rescue_floor.rs`).
//!
//! **Batching.** Throughput comes from round trips, not connections: one statement handles a
//! whole batch. A batch of inserts is bound as one `jsonb` array and unpacked by
//! `jsonb_to_recordset` (the statement both stores share, `crates/store/src/sql/jobs.rs`);
//! completions and lease renewals bind one typed array per column, unpacked by `UNNEST` (the
//! completion statements are described in `complete.rs`). A completion is an `UPDATE` fenced
//! by `lease_token` and `state = 'running'`, so an outcome is recorded only by the holder of
//! the current lease; the attempt row and the A/B exposure, when one is needed, are written by
//! the same statement. Inserted jobs are announced on the `kairos_jobs` channel, for nodes that
//! `LISTEN` to wake up; the payload is the schema name, since channels are shared by every
//! schema of a database. The store's own inserts send it after their commit, coalesced
//! (`wake.rs`: notifying commits wait for each other's flush); inserts in an application's or
//! a shared role's transaction notify in their statement (delivered on commit).
//!
//! **Several nodes.** [`listen_wakeups`] turns those notifications into engine wake-ups on
//! every node; [`run_leader_election`] elects one leader per schema with a session advisory
//! lock for the maintenance services (rescuer). Correctness never depends on leadership.
//!
//! **Transactional enqueue.** An application holding a transaction on the same database
//! inserts jobs with [`job_insert_in_tx`] (the statement every insert path shares): the job
//! exists iff that transaction commits. `kairos-embed` validates them first.
//!
//! **Durability.** Every method that changes state is one transaction, committed with the
//! server's settings (`synchronous_commit = on` by default: a committed outcome survives a
//! crash of the server). A completion lost with an uncommitted transaction is retried after
//! the lease expires (at-least-once), which receivers deduplicate by `webhook-id`.
#![deny(missing_docs)]

mod complete;
mod cursor;
mod health;
mod jobs;
mod leader;
mod listen;
mod rescue_floor;
mod rows;
mod slots;
mod tx;
mod wake;

pub use jobs::{by_id_statements, claim_statement, rescue_statement};
pub use leader::{LEADER_KEY_SQL, run_leader_election};
pub use listen::{JOBS_CHANNEL, listen_wakeups};
#[allow(deprecated)]
pub use tx::enqueue_in_tx;
pub use tx::job_insert_in_tx;

use kairos_store::{Error, ErrorKind};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{AssertSqlSafe, Executor, PgPool};
use std::str::FromStr;
use std::time::Duration;

/// Connections of the executor's hot path: the lease renewer and the rescuer each hold at most
/// one at a time, the completer two (`ExecutorConfig::complete_parallel`); claims have their
/// own ([`CLAIM_CONNECTIONS`]).
const HOT_CONNECTIONS: u32 = 5;

/// Settings of the hot path's connections. A queue's partial indexes (`jobs_due`,
/// `jobs_lease`) fill with entries of row versions that are no longer available or running,
/// until vacuum removes them. A plain index scan marks each such entry dead the first time it
/// passes it, so the next scan skips it; a bitmap scan never does, and re-reads all of them —
/// and their heap pages — on every claim and completion. With statistics that lag behind the
/// queue, the planner chose bitmap scans there, and the cost of a claim grew with every job
/// processed since the last vacuum (100,000 jobs: 1.6 to 1.8 times slower end to end,
/// `docs/benchmarks.md`). Without bitmap scans these statements use the ordered index scan
/// (claim) and primary-key lookups (completion) whatever the statistics say.
///
/// Completions, lease renewals and rescues join the rows they change to a batch of hundreds.
/// They are planned once per connection (`plan_cache_mode = force_generic_plan`) and join by
/// hash, never by nested loop (`enable_nestloop = off`). A plan made for each batch's
/// parameters cost about 0.5 ms of planning per completion (half its server time at a batch
/// of 40, `docs/benchmarks.md`), and chose a nested loop over the batch for each job at the
/// sizes it estimated small — quadratic in the batch. A generic plan knows no batch size and
/// would guess ten: without nested loops it hashes the batch whatever it guesses. Their rows
/// are found by primary key through an init plan (`= ANY(ARRAY(SELECT …))`), so no parameter
/// value changes the best plan. The plan is made once, on the connection's first use, often
/// while the table is small: then the planner would rather read all of `jobs_lease`, or the
/// whole table, than probe the key, and the connection keeps that plan as the table grows.
/// `jobs_lease` is small only while nothing holds a snapshot and vacuum keeps up; under a
/// held snapshot it has an entry for every job run since, and completions took 350 ms each:
/// the queue fell behind at 5,000 jobs a second (`docs/benchmarks.md`). So these statements
/// write their state check `state || '' = 'running'`, which does not imply `jobs_lease`'s
/// predicate, and the connections plan no sequential scan (`enable_seqscan = off`, a penalty
/// cost, not a ban: a statement with no index to use still runs).
///
/// And no JIT compilation (`jit = off`, here and on the claim connections): a plan that needs
/// a node type switched off carries its penalty cost, far above `jit_above_cost`, and
/// compiling it took a second for a statement that runs in two milliseconds.
const HOT_SETTINGS: [(&str, &str); 5] = [
    ("enable_bitmapscan", "off"),
    ("enable_seqscan", "off"),
    ("enable_nestloop", "off"),
    ("plan_cache_mode", "force_generic_plan"),
    ("jit", "off"),
];

/// Hot-path connections opened before the engine starts ([`PostgresStore::warm_hot_path`]):
/// the executor's two completion writers (`complete_parallel`).
const WARM_HOT_CONNECTIONS: u32 = 2;

/// Connections for claims: one claim runs at a time per executor.
const CLAIM_CONNECTIONS: u32 = 2;

/// Settings of the claim connections. No bitmap scans, as on the hot path; a plan made for
/// each claim's parameters (`force_custom_plan`): the claim's best plan depends on the data
/// and on how many jobs it asks for (the ordered scan of `jobs_due` under a LIMIT), where a
/// generic plan could pick a scan of the whole table; its planning costs a fifth of a
/// millisecond. And a commit that does not wait for its WAL flush (`synchronous_commit = off`). A claim lost in a database crash is a claim
/// that expired at once: the job is `available` again with its attempt count unchanged, and
/// the lost lease token fences off the old claimant's completion, which is rejected as stale.
/// That is what a node crash already does to a claim (the job may have run; it runs again),
/// so nothing a receiver sees changes, and no outcome is ever acknowledged before it is
/// durable: completions commit synchronously, and their flush carries every claim before
/// them (WAL is flushed in order). With the flush, a claim's commit was a third of the
/// claimer's time at ten workers (`docs/benchmarks.md`).
const CLAIM_SETTINGS: [(&str, &str); 4] = [
    ("enable_bitmapscan", "off"),
    ("plan_cache_mode", "force_custom_plan"),
    ("synchronous_commit", "off"),
    ("jit", "off"),
];

/// The PostgreSQL store. Cheap to clone.
#[derive(Clone, Debug)]
pub struct PostgresStore {
    pool: PgPool,
    /// The executor's hot path (claim, completion, lease renewal, rescue): a few connections
    /// that never plan a bitmap scan (see [`HOT_SETTINGS`]).
    hot: PgPool,
    /// Claims: the hot path's settings, committed without waiting for the flush (see
    /// [`CLAIM_SETTINGS`]).
    claim: PgPool,
    schema: String,
    /// The erasure key, once read (`erasure.rs`).
    keys: std::sync::Arc<kairos_store::KeyCache>,
    /// Seals stored secrets under the secret key (`with_sealer`); `None`: plaintext.
    sealer: Option<std::sync::Arc<kairos_store::sealing::Sealer>>,
    /// Where claims start reading the queue (`cursor.rs`), shared by the store's clones.
    cursor: std::sync::Arc<cursor::ClaimCursor>,
    /// Where rescues start reading the leases (`rescue_floor.rs`), shared by the clones.
    rescue_floor: std::sync::Arc<rescue_floor::RescueFloor>,
    /// Taken by a claim statement while keyed jobs are about, so that this node's claims
    /// (the executor's two claimers) do not run at once and each sees the jobs the other
    /// claimed: two claims in one snapshot would take jobs of the same keys, and the key
    /// check after them (`slots.rs`) would put one of each pair back. Claims of other nodes
    /// still race; the check settles those.
    keyed_turn: std::sync::Arc<tokio::sync::Mutex<()>>,
    /// Announces the store's own inserts to the other nodes after they commit (`wake.rs`).
    waker: std::sync::Arc<wake::Waker>,
    /// The migrations this connect applied ([`PostgresStore::migrated`]).
    migrated: std::sync::Arc<[kairos_store::sql::migrate::MigrationFile]>,
}

impl PostgresStore {
    /// Connect to the database at `url` (`postgres://user@host:5432/db`), keep all of
    /// kairos's tables in `schema` (created if missing), and apply migrations.
    pub async fn connect(url: &str, schema: &str) -> Result<Self, Error> {
        validate_schema(schema)?;
        let opts = PgConnectOptions::from_str(url).map_err(|e| {
            Error::new(ErrorKind::Invalid, "database url is not a PostgreSQL url").with_source(e)
        })?;
        // The name is validated above, and quoted anyway (a valid name may be a keyword).
        let set_path = format!("SET search_path TO \"{schema}\"");
        let pool_options = |max: u32| {
            let set_path = set_path.clone();
            PgPoolOptions::new()
                .max_connections(max)
                .acquire_timeout(Duration::from_secs(30))
                .after_connect(move |conn, _meta| {
                    let sql = AssertSqlSafe(set_path.clone());
                    Box::pin(async move {
                        conn.execute(sql).await?;
                        Ok(())
                    })
                })
        };
        let pool = pool_options(10)
            .connect_with(opts.clone())
            .await
            .map_err(|e| map_err("connecting to PostgreSQL", e))?;
        let hot = pool_options(HOT_CONNECTIONS)
            .min_connections(0)
            .connect_lazy_with(opts.clone().options(HOT_SETTINGS));
        let claim = pool_options(CLAIM_CONNECTIONS)
            .min_connections(0)
            .connect_lazy_with(opts.options(CLAIM_SETTINGS));
        let mut store = PostgresStore {
            pool,
            hot,
            claim,
            schema: schema.to_string(),
            keys: Default::default(),
            sealer: None,
            cursor: Default::default(),
            rescue_floor: Default::default(),
            keyed_turn: Default::default(),
            waker: Default::default(),
            migrated: std::sync::Arc::new([]),
        };
        store.migrated = migrate(&store).await?.into();
        Ok(store)
    }

    /// This store as the engine's `Arc<dyn kairos_store::Store>`, sharing its pools. Made
    /// here, so that the store's methods are compiled once, in this crate: the store's
    /// methods are generic (written once over `SqlDb`), and a crate that turns the store into
    /// a trait object compiles its own copy of every one (half a megabyte of the release
    /// binary per database, for each crate beyond the first).
    #[inline(never)]
    pub fn shared(&self) -> std::sync::Arc<dyn kairos_store::Store> {
        std::sync::Arc::new(self.clone())
    }

    /// The migrations that connecting this store applied, in order: none when the schema was
    /// already current (`kairos migrate` says which ran).
    pub fn migrated(&self) -> &[kairos_store::sql::migrate::MigrationFile] {
        &self.migrated
    }

    /// Seal stored secrets (webhook endpoint secrets, http target headers) under `sealer`
    /// from now on, and open them with it.
    pub fn with_sealer(mut self, sealer: std::sync::Arc<kairos_store::sealing::Sealer>) -> Self {
        self.sealer = Some(sealer);
        self
    }

    /// The connection pool (for the engine's `LISTEN` and advisory locks).
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The executor's hot-path pool (completions, lease renewals, rescues): at most five
    /// connections, opened on first use (or by [`PostgresStore::warm_hot_path`]), that plan
    /// each statement once and never plan a bitmap scan, a nested loop or (but for want of an
    /// index) a sequential scan.
    pub fn hot_pool(&self) -> &PgPool {
        &self.hot
    }

    /// The claims' pool: the hot path's settings, and commits that do not wait for their
    /// flush (a claim lost in a crash is a lease that expired at once).
    pub fn claim_pool(&self) -> &PgPool {
        &self.claim
    }

    /// Open the connections a running engine's hot path uses first — both claimers' and the
    /// two completion writers' — before the engine starts. The hot and claim pools open their
    /// connections on first use, so that a store that runs no engine (`kairos migrate`, the
    /// CLI's reads) never opens them; a node that runs one would otherwise open them under
    /// its first jobs: a backend started per connection, one after the other behind the
    /// restart rescue, 10–15 ms before the first claim (about a thirtieth of a 20,000-job burst,
    /// `docs/benchmarks.md`). Fails as connecting fails (the server refusing more
    /// connections, say), so a node finds out before it takes work.
    pub async fn warm_hot_path(&self) -> Result<(), Error> {
        let open = |pool: &PgPool, n: u32| {
            let pool = pool.clone();
            async move {
                let held = futures::future::try_join_all((0..n).map(|_| pool.acquire())).await?;
                drop(held);
                Ok::<(), sqlx::Error>(())
            }
        };
        let (claim, hot) = tokio::join!(
            open(&self.claim, CLAIM_CONNECTIONS),
            open(&self.hot, WARM_HOT_CONNECTIONS)
        );
        claim
            .and(hot)
            .map_err(|e| map_err("opening the hot path's connections", e))
    }

    /// The schema holding kairos's tables.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// Close the pool, waiting for its connections.
    pub async fn close(&self) {
        self.claim.close().await;
        self.hot.close().await;
        self.pool.close().await;
    }
}

// Every role but the job queue is written once in `kairos_store::sql` over this impl. Every
// method that changes state is one transaction, committed with the server's settings.
kairos_store::sql_db!(
    PostgresStore,
    PgRun,
    sqlx::Postgres,
    read: pool,
    write: pool,
    begin: "BEGIN",
    map_err: map_err,
    apply: migrations_apply,
    list: migrations_list,
    health: health::health_read,
    vacuum: health::vacuum,
    committed: jobs_may_be_available
);

/// After a write transaction of the shared roles commits: unless it is one that never makes a
/// job available, it may have (a schedule's firing, an expansion, an artifact's follow-ups, an
/// admin retry) at keys the claim cursor does not know, so the next claim sweeps from the start.
/// A transaction missing from the list costs a sweep, never a job.
fn jobs_may_be_available(store: &PostgresStore, what: &str) {
    if !NO_JOB_MADE_AVAILABLE.contains(&what) {
        store.cursor.forget();
    }
}

/// The shared roles' write transactions (by the name they commit with) that make no job
/// available: frequent ones (inbound events, endpoint health) would otherwise make every claim
/// after them walk the dead entries a held snapshot keeps.
const NO_JOB_MADE_AVAILABLE: &[&str] = &[
    "admin session create",
    "catch-up set",
    "endpoint health flush",
    "endpoint secret rotate",
    "inbound event record",
    "job bulk cancel",
    "job cancel",
    "recipient erase",
    "recipient upsert",
    "re-sealing secrets",
    "sealing endpoint secrets",
    "sealing http targets",
    "suppression apply",
    "suppression remove",
    "topic delete",
];

use rows::PgRun;

/// Create the schema if missing, then apply the migrations (sqlx's migrator, under its
/// advisory lock) on one connection; returns those that ran.
async fn migrate(
    store: &PostgresStore,
) -> Result<Vec<kairos_store::sql::migrate::MigrationFile>, Error> {
    let schema = &store.schema;
    let mut tx = store
        .pool
        .begin()
        .await
        .map_err(|e| map_err("creating the schema", e))?;
    // Serialize schema creation across nodes starting together (CREATE SCHEMA IF NOT EXISTS
    // can still fail on a concurrent creation). The key is a 64-bit hash of a namespaced
    // string, so it does not collide with other lock users. Checked before creating so that a
    // role without CREATE on the database can use a schema made for it.
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
        .bind(format!("kairos.migrate.{schema}"))
        .execute(&mut *tx)
        .await
        .map_err(|e| map_err("locking for migration", e))?;
    let exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)")
            .bind(schema)
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| map_err("reading schemas", e))?;
    if !exists {
        // The name is validated (`validate_schema`) and quoted.
        sqlx::query(AssertSqlSafe(format!("CREATE SCHEMA \"{schema}\"")))
            .execute(&mut *tx)
            .await
            .map_err(|e| map_err(&format!("creating schema {schema}"), e))?;
    }
    tx.commit()
        .await
        .map_err(|e| map_err("creating the schema", e))?;
    let mut conn = store
        .pool
        .acquire()
        .await
        .map_err(|e| map_err("migrating", e))?;
    let legacy = kairos_store::sql::migrate::legacy_versions(&mut PgRun::Conn(&mut conn)).await?;
    let d = kairos_store::sql::Dialect::Postgres;
    kairos_store::sql::migrate::apply(&mut *conn, d, legacy).await
}

async fn migrations_apply(s: &PostgresStore) -> Result<(), Error> {
    migrate(s).await.map(drop)
}

async fn migrations_list(s: &PostgresStore) -> Result<Vec<kairos_store::MigrationStatus>, Error> {
    kairos_store::sql::migrate::list(&mut PgRun::Pool(&s.pool)).await
}

/// A schema name: `[a-z_][a-z0-9_]{0,62}`, and not `pg_…` (reserved by PostgreSQL).
pub fn validate_schema(schema: &str) -> Result<(), Error> {
    let b = schema.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= 63
        && (b[0].is_ascii_lowercase() || b[0] == b'_')
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_')
        && !schema.starts_with("pg_");
    if ok {
        Ok(())
    } else {
        Err(Error::new(
            ErrorKind::Invalid,
            format!(
                "schema {schema:?} is not a valid schema name: expected [a-z_][a-z0-9_]{{0,62}}, not starting with pg_"
            ),
        ))
    }
}

/// Map a driver error to a store error with a kind. Differs from SQLite's in the SQLSTATE
/// classes PostgreSQL reports for a server that is going away or overloaded, and for
/// serialization failures and deadlocks: those are `Unavailable` (trying again may work).
pub(crate) fn map_err(what: &str, e: sqlx::Error) -> Error {
    let kind = match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() => ErrorKind::Conflict,
        sqlx::Error::Database(d) if d.is_foreign_key_violation() => ErrorKind::Conflict,
        sqlx::Error::Database(d) if d.is_check_violation() => ErrorKind::Invalid,
        sqlx::Error::Database(d) => match d.code().as_deref() {
            // 08: connection exception; 53: insufficient resources (too many connections,
            // disk full); 57P0x: the server is shutting down or starting; 40001/40P01:
            // serialization failure, deadlock.
            Some(c)
                if c.starts_with("08")
                    || c.starts_with("53")
                    || c.starts_with("57P0")
                    || c == "40001"
                    || c == "40P01" =>
            {
                ErrorKind::Unavailable
            }
            // 23: other integrity violations (not null, exclusion); 22: data exception (a
            // value that does not fit its column).
            Some(c) if c.starts_with("23") || c.starts_with("22") => ErrorKind::Invalid,
            _ => ErrorKind::Database,
        },
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::WorkerCrashed => ErrorKind::Unavailable,
        sqlx::Error::ColumnDecode { .. } | sqlx::Error::Decode(_) => ErrorKind::Corrupt,
        _ => ErrorKind::Database,
    };
    Error::new(kind, what.to_string()).with_source(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_are_validated() {
        for ok in ["kairos", "_k", "kairos_test_0a9f", &"a".repeat(63)] {
            assert!(validate_schema(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "Kairos",
            "9k",
            "k-airos",
            "k\"; DROP",
            "pg_temp",
            &"a".repeat(64),
        ] {
            let e = validate_schema(bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Invalid);
            assert!(e.to_string().contains("schema"), "{e}");
        }
    }
}
