//! Opening the configured database — the one place where the kind of store is chosen — with
//! the secret key checked against it and applied.

use super::NodeError;
use crate::config::{
    Config, Database, SECRET_KEY_CHECK_SETTING, SECRET_KEY_FILE, SecretKey, SecretKeySource,
    create_private_dir, secret_key,
};
use kairos_core::Clock;
use kairos_store::{Leader, SettingPut, Store};
use kairos_store_postgres::PostgresStore;
use kairos_store_sqlite::SqliteStore;
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// An open database: the store the engine and the commands use, and what only one kind of
/// database offers (PostgreSQL: wake-ups across nodes and leader election).
#[derive(Clone)]
pub enum Db {
    /// An SQLite file.
    Sqlite(SqliteStore),
    /// A PostgreSQL schema, and the URL to open its dedicated connections (LISTEN, leader lock).
    Postgres(PostgresStore, String),
}

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the URL: it may hold a password.
        f.write_str(match self {
            Db::Sqlite(_) => "Db::Sqlite",
            Db::Postgres(..) => "Db::Postgres",
        })
    }
}

impl Db {
    /// The store, for the engine and the facade.
    pub fn store(&self) -> Arc<dyn Store> {
        match self {
            Db::Sqlite(s) => s.shared(),
            Db::Postgres(s, _) => s.shared(),
        }
    }

    /// The leadership flag of a node on this database: on SQLite the one node always leads;
    /// on PostgreSQL a node follows until the election makes it the leader.
    pub fn leader(&self) -> Leader {
        match self {
            Db::Sqlite(_) => Leader::always(),
            Db::Postgres(..) => Leader::follower(),
        }
    }

    /// The migrations that opening the database applied, in order (none when it was current).
    pub fn migrated(&self) -> &[kairos_store::sql::migrate::MigrationFile] {
        match self {
            Db::Sqlite(s) => s.migrated(),
            Db::Postgres(s, _) => s.migrated(),
        }
    }

    /// Close the connections, waiting for them.
    pub async fn close(&self) {
        match self {
            Db::Sqlite(s) => s.close().await,
            Db::Postgres(s, _) => s.close().await,
        }
    }
}

/// Open (creating and migrating) the configured database with the secret key: the key is
/// checked against the database ([`checked_secret_key`]: refused without one on PostgreSQL,
/// or with another one), stored secrets are sealed under it from now on, and endpoint secrets
/// still stored in plaintext are sealed now (a one-time pass).
pub async fn open_db(cfg: &Config, clock: &dyn Clock) -> Result<Db, NodeError> {
    // The key before the database: a key that is missing (PostgreSQL) or malformed opens,
    // creates and migrates nothing. Only a key file SQLite may generate waits for the open.
    if cfg.secret_key.is_some() || !matches!(cfg.database()?, Database::Sqlite(_)) {
        secret_key(cfg, false)?;
    }
    let db = open_plain(cfg).await?;
    let key = match checked_secret_key(cfg, &db, clock).await {
        Ok(k) => k,
        Err(e) => {
            db.close().await;
            return Err(e);
        }
    };
    let sealer = Arc::new(kairos_store::sealing::Sealer::new(key.bytes()));
    let (db, sealed) = match db {
        Db::Sqlite(s) => {
            let s = s.with_sealer(sealer);
            let n = kairos_store::sql::secrets::seal_existing(&s).await;
            (Db::Sqlite(s), n)
        }
        Db::Postgres(s, url) => {
            let s = s.with_sealer(sealer);
            let n = kairos_store::sql::secrets::seal_existing(&s).await;
            (Db::Postgres(s, url), n)
        }
    };
    match sealed {
        Ok(0) => {}
        Ok(n) => tracing::info!(
            rows = n,
            "sealed secrets stored in plaintext (endpoints, http targets)"
        ),
        Err(e) => {
            db.close().await;
            return Err(NodeError::runtime("sealing stored secrets", &e));
        }
    }
    Ok(db)
}

/// Open (creating and migrating) the configured database without a secret key: stored
/// secrets are kept as given. For an embedded node given no key (see
/// `NodeBuilder::embedded`).
pub async fn open_unsealed(cfg: &Config) -> Result<Db, NodeError> {
    open_plain(cfg).await
}

/// Open (creating and migrating) the configured database, chosen by the scheme of
/// `database_url` (see [`Config::database`]).
async fn open_plain(cfg: &Config) -> Result<Db, NodeError> {
    let db = cfg.database()?;
    match &db {
        Database::Sqlite(path) => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                create_private_dir(dir).map_err(|e| {
                    NodeError::runtime(
                        &format!("could not create the directory {}", dir.display()),
                        &e,
                    )
                })?;
            }
            let store = SqliteStore::open(path).await.map_err(|e| {
                NodeError::runtime(
                    &format!("could not open the database {}", path.display()),
                    &e,
                )
            })?;
            Ok(Db::Sqlite(store))
        }
        Database::Postgres { url, schema } => {
            kairos_store_postgres::validate_schema(schema)
                .map_err(|e| NodeError::usage("database_schema", e.to_string()))?;
            // With the schema valid, what connect refuses as invalid is the URL.
            let store = PostgresStore::connect(url, schema).await.map_err(|e| {
                if e.kind() == kairos_store::ErrorKind::Invalid {
                    NodeError::usage("database_url", e.to_string())
                } else {
                    NodeError::runtime(
                        &format!("could not open the database {}", db.describe()),
                        &e,
                    )
                }
            })?;
            Ok(Db::Postgres(store, url.clone()))
        }
    }
}

/// The node's secret key, checked against the database: the configured key, or on SQLite the
/// one in `<data_dir>/secret-key` (generated on first start). The first node to start stores
/// the key's check value; a node whose key gives another value (or, on PostgreSQL, a node
/// given no key) refuses to start with an error naming `KAIROS_SECRET_KEY`.
pub async fn checked_secret_key(
    cfg: &Config,
    db: &Db,
    clock: &dyn Clock,
) -> Result<SecretKey, NodeError> {
    let (key, source) = secret_key(cfg, matches!(db, Db::Sqlite(_)))?;
    if source == SecretKeySource::Generated {
        tracing::info!(
            path = %cfg.data_dir.join(SECRET_KEY_FILE).display(),
            "generated a secret key (mode 0600); back it up: stored secrets cannot be read without it"
        );
    }
    let store = db.store();
    let mine = key.check_value();
    let read = |e: kairos_store::Error| NodeError::runtime("reading the secret key check", &e);
    let stored = match store
        .setting_get(SECRET_KEY_CHECK_SETTING)
        .await
        .map_err(read)?
    {
        Some(s) => s.value,
        None => {
            store
                .setting_put(SettingPut {
                    name: SECRET_KEY_CHECK_SETTING.into(),
                    value: Some(mine.clone()),
                    now: clock.now(),
                })
                .await
                .map_err(|e| NodeError::runtime("storing the secret key check", &e))?;
            // Read back: of two first nodes started at once, the last write wins and the
            // other one sees a value that is not its own.
            store
                .setting_get(SECRET_KEY_CHECK_SETTING)
                .await
                .map_err(read)?
                .map(|s| s.value)
                .unwrap_or_default()
        }
    };
    if !bool::from(stored.as_bytes().ct_eq(mine.as_bytes())) {
        let given = match source {
            SecretKeySource::Config => "KAIROS_SECRET_KEY".to_string(),
            _ => format!(
                "{} (KAIROS_SECRET_KEY is not set)",
                cfg.data_dir.join(SECRET_KEY_FILE).display()
            ),
        };
        return Err(NodeError::usage(
            "secret_key",
            format!(
                "the key from {given} is not the key this database was first used with \
                 (its check value differs); give every node the same KAIROS_SECRET_KEY"
            ),
        ));
    }
    Ok(key)
}
