//! The database a node runs on, chosen by the scheme of `database_url`.

use super::parse::valid_schema;
use super::{Config, ConfigError, DB_FILE};
use std::path::PathBuf;

/// The database a node runs on, chosen by the scheme of `database_url`.
#[derive(Clone, PartialEq, Eq)]
pub enum Database {
    /// An SQLite file: `sqlite://PATH`, a plain path, or `<data_dir>/kairos.db` by default.
    Sqlite(PathBuf),
    /// A PostgreSQL server (`postgres://…` or `postgresql://…`), with kairos's tables in
    /// `schema`.
    Postgres {
        /// The connection URL (may hold a password: do not log it, see [`Database::describe`]).
        url: String,
        /// The schema holding kairos's tables.
        schema: String,
    },
}

/// After a claim that came back short, how long a node on SQLite waits before it claims
/// again unless `KAIROS_CLAIM_COOLDOWN_MS` says otherwise: 1 ms. A claim there is a call on the
/// node's own writer thread (tens of microseconds) and SQLite keeps no dead index entries for
/// a claim to walk, so the pause only bounds claims under a trickle (about a thousand a second)
/// and keeps jobs' lateness low (p99 about 3 ms after a burst, against 7 ms with 5 ms).
pub const CLAIM_COOLDOWN_MS_SQLITE: u64 = 1;

/// The same on PostgreSQL: 5 ms. A claim there is a round trip and a plan, and under a
/// snapshot another session holds, a walk of the index entries of the jobs claimed just
/// before: jobs that arrive within the pause share one claim (`docs/architecture.md`).
pub const CLAIM_COOLDOWN_MS_POSTGRES: u64 = 5;

/// The claim cooldown a node uses unless one is configured, by the kind of database: the one
/// rule, for a node's configuration ([`Database::default_claim_cooldown_ms`]) and for `kairos
/// bench`, which knows only whether it runs on PostgreSQL.
pub fn default_claim_cooldown_ms(postgres: bool) -> u64 {
    if postgres {
        CLAIM_COOLDOWN_MS_POSTGRES
    } else {
        CLAIM_COOLDOWN_MS_SQLITE
    }
}

impl Database {
    /// The claim cooldown a node on this database uses unless one is configured
    /// ([`CLAIM_COOLDOWN_MS_SQLITE`], [`CLAIM_COOLDOWN_MS_POSTGRES`]).
    pub fn default_claim_cooldown_ms(&self) -> u64 {
        default_claim_cooldown_ms(matches!(self, Database::Postgres { .. }))
    }

    /// A description for logs without credentials: the SQLite path, or
    /// `postgres://host:port/db (schema s)`.
    pub fn describe(&self) -> String {
        match self {
            Database::Sqlite(p) => p.display().to_string(),
            Database::Postgres { url, schema } => {
                // Drop `user:password@` and the query (which may carry a password too).
                let rest = url.split_once("://").map(|(_, r)| r).unwrap_or(url);
                let rest = rest.rsplit_once('@').map(|(_, r)| r).unwrap_or(rest);
                let rest = rest.split('?').next().unwrap_or_default();
                format!("postgres://{rest} (schema {schema})")
            }
        }
    }
}

impl Config {
    /// The database, chosen by the scheme of `database_url` — the one place that decides:
    /// unset → `<data_dir>/kairos.db`; `sqlite://PATH`, `sqlite:PATH` or a plain path →
    /// SQLite; `postgres://…` or `postgresql://…` → PostgreSQL in `database_schema`.
    pub fn database(&self) -> Result<Database, ConfigError> {
        let Some(url) = &self.database_url else {
            return Ok(Database::Sqlite(self.data_dir.join(DB_FILE)));
        };
        let url = url.trim();
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            if !valid_schema(&self.database_schema) {
                return Err(ConfigError::new(
                    "database_schema",
                    format!(
                        "{:?} is not a valid schema name: expected [a-z_][a-z0-9_]{{0,62}}, not starting with pg_",
                        self.database_schema
                    ),
                ));
            }
            return Ok(Database::Postgres {
                url: url.to_string(),
                schema: self.database_schema.clone(),
            });
        }
        let path = match url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
        {
            Some(p) => p,
            None if url.contains("://") => {
                // Only the scheme is shown: the rest may hold a user and password.
                let scheme = url.split("://").next().unwrap_or_default();
                return Err(ConfigError::new(
                    "database_url",
                    format!(
                        "the scheme {scheme:?} is not supported: use sqlite://PATH, a file path, or postgres://USER@HOST/DB"
                    ),
                ));
            }
            None => url,
        };
        let path = path.split('?').next().unwrap_or_default();
        if path.is_empty() || path == ":memory:" {
            return Err(ConfigError::new(
                "database_url",
                "needs a file path: sqlite://PATH",
            ));
        }
        Ok(Database::Sqlite(PathBuf::from(path)))
    }
}
