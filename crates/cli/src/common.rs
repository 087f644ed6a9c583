//! What every command shares: the error type and exit codes, configuration, opening the
//! store and the facade, and output (tables or JSON).

use kairos_core::{Clock, SystemClock};
use kairos_engine::{Kairos, OpsError, OpsErrorKind};
use kairos_server::config::{Config, ConfigError, Database, Overrides};
use kairos_store::Store;
use kairos_store_postgres::PostgresStore;
use kairos_store_sqlite::SqliteStore;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::Notify;

/// A command's failure: a usage error (exit 2) names the field; a runtime error (exit 1) says
/// what failed.
#[derive(Debug)]
pub enum CliError {
    /// Bad input or configuration.
    Usage {
        /// The field or flag.
        field: String,
        /// Why.
        reason: String,
    },
    /// Something failed while running.
    Runtime(String),
}

impl CliError {
    /// A usage error.
    pub fn usage(field: impl Into<String>, reason: impl Into<String>) -> Self {
        CliError::Usage {
            field: field.into(),
            reason: reason.into(),
        }
    }
    /// A runtime error with the `source()` chain of `e`.
    pub fn runtime(what: &str, e: &dyn std::error::Error) -> Self {
        CliError::Runtime(format!("{what}: {}", chain(e)))
    }
    /// The process exit code.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage { .. } => 2,
            CliError::Runtime(_) => 1,
        }
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliError::Usage { field, reason } => write!(f, "{field}: {reason}"),
            CliError::Runtime(m) => f.write_str(m),
        }
    }
}

/// An error and its causes on one line.
pub use kairos_core::error_chain as chain;

impl From<ConfigError> for CliError {
    fn from(e: ConfigError) -> Self {
        CliError::usage(e.field, e.reason)
    }
}

impl From<kairos_core::Error> for CliError {
    fn from(e: kairos_core::Error) -> Self {
        CliError::usage(e.field(), e.reason())
    }
}

impl From<OpsError> for CliError {
    fn from(e: OpsError) -> Self {
        match e.kind() {
            OpsErrorKind::Invalid { field, reason } => CliError::usage(field, reason),
            _ => CliError::Runtime(chain(&e)),
        }
    }
}

/// The result of a command.
pub type CliResult<T = ()> = Result<T, CliError>;

/// Flags every command accepts.
#[derive(Debug, Clone, clap::Args)]
pub struct GlobalArgs {
    /// Data directory: kairos.db, api-token, kairos.toml [env: KAIROS_DATA_DIR] [default: .]
    #[arg(long, global = true, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Read this TOML file instead of <data-dir>/kairos.toml.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Print JSON instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
    /// Log lines as `text` or `json` (one JSON object per line) [env: KAIROS_LOG_FORMAT]
    #[arg(long, global = true, value_name = "FORMAT", value_parser = ["text", "json"])]
    pub log_format: Option<String>,
}

impl GlobalArgs {
    /// The configuration, with `listen` from a command's flag.
    pub fn load_config(&self, listen: Option<String>) -> CliResult<Config> {
        Ok(Config::load(&Overrides {
            data_dir: self.data_dir.clone(),
            listen,
            config_file: self.config.clone(),
            log_format: match self.log_format.as_deref() {
                Some("json") => Some(kairos_server::config::LogFormat::Json),
                Some(_) => Some(kairos_server::config::LogFormat::Text),
                None => None,
            },
        })?)
    }
}

/// An open database: the store the engine and the commands use, and what only one kind of
/// database offers (PostgreSQL: wake-ups across nodes and leader election).
#[derive(Clone)]
pub enum Db {
    /// An SQLite file.
    Sqlite(SqliteStore),
    /// A PostgreSQL schema, and the URL to open its dedicated connections (LISTEN, leader lock).
    Postgres(PostgresStore, String),
}

impl Db {
    /// The store, for the engine and the facade.
    pub fn store(&self) -> Arc<dyn Store> {
        match self {
            Db::Sqlite(s) => Arc::new(s.clone()),
            Db::Postgres(s, _) => Arc::new(s.clone()),
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
/// checked against the database (`key::checked_secret_key`: refused without one on
/// PostgreSQL, or with another one), stored secrets are sealed under it from now on, and
/// endpoint secrets still stored in plaintext are sealed now (a one-time pass).
pub async fn open_store(cfg: &Config) -> CliResult<Db> {
    let db = open_plain_store(cfg).await?;
    let key = match crate::key::checked_secret_key(cfg, &db, &SystemClock).await {
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
            let n = s.seal_existing_secrets().await;
            (Db::Sqlite(s), n)
        }
        Db::Postgres(s, url) => {
            let s = s.with_sealer(sealer);
            let n = s.seal_existing_secrets().await;
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
            return Err(CliError::runtime("sealing stored secrets", &e));
        }
    }
    Ok(db)
}

/// Open (creating and migrating) the configured database: the one place where the kind of
/// store is chosen, by the scheme of `database_url` (see [`Config::database`]).
async fn open_plain_store(cfg: &Config) -> CliResult<Db> {
    let db = cfg.database()?;
    match &db {
        Database::Sqlite(path) => {
            if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                kairos_server::config::create_private_dir(dir).map_err(|e| {
                    CliError::runtime(
                        &format!("could not create the directory {}", dir.display()),
                        &e,
                    )
                })?;
            }
            let store = SqliteStore::open(path).await.map_err(|e| {
                CliError::runtime(
                    &format!("could not open the database {}", path.display()),
                    &e,
                )
            })?;
            Ok(Db::Sqlite(store))
        }
        Database::Postgres { url, schema } => {
            let store = PostgresStore::connect(url, schema).await.map_err(|e| {
                CliError::runtime(
                    &format!("could not open the database {}", db.describe()),
                    &e,
                )
            })?;
            Ok(Db::Postgres(store, url.clone()))
        }
    }
}

/// The webhook settings of `cfg`.
pub fn webhook_config(cfg: &Config) -> kairos_channels::WebhookConfig {
    kairos_channels::WebhookConfig {
        timeout: std::time::Duration::from_secs(cfg.webhook_timeout_secs),
        allow_private_targets: cfg.allow_private_targets,
        ..Default::default()
    }
}

/// The digest settings of `cfg`: model API URLs, keys and timeouts (S4-1, S4-7).
pub fn digest_config(cfg: &Config) -> kairos_channels::digest::DigestConfig {
    let mut d = kairos_channels::digest::DigestConfig {
        feed_timeout: std::time::Duration::from_secs(cfg.feed_timeout_secs),
        model_timeout: std::time::Duration::from_secs(cfg.model_timeout_secs),
        allow_private_targets: cfg.allow_private_targets,
        ..Default::default()
    };
    let set = |api: &mut kairos_channels::digest::ModelApi,
               url: &Option<String>,
               key: &Option<String>,
               model: &Option<String>| {
        if let Some(u) = url {
            api.url = u.clone();
        }
        api.api_key = key.clone().filter(|k| !k.trim().is_empty());
        if let Some(m) = model {
            api.model = m.clone();
        }
    };
    set(
        &mut d.gemini,
        &cfg.gemini_api_url,
        &cfg.gemini_api_key,
        &cfg.gemini_model,
    );
    set(
        &mut d.openai,
        &cfg.openai_api_url,
        &cfg.openai_api_key,
        &cfg.openai_model,
    );
    d
}

/// The built-in handlers for `store`.
pub fn registry(
    cfg: &Config,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
) -> CliResult<kairos_engine::HandlerRegistry> {
    let mut r = kairos_engine::handlers::default_registry(
        store.clone(),
        clock.clone(),
        webhook_config(cfg),
    )
    .map_err(|e| CliError::runtime("could not set up the handlers", &e))?;
    kairos_engine::handlers::register_digest(
        &mut r,
        store.clone(),
        clock.clone(),
        digest_config(cfg),
    )
    .map_err(|e| CliError::runtime("could not set up the digest handler", &e))?;
    let (transport, email) = crate::template::email_setup(cfg)?;
    kairos_engine::handlers::register_email(&mut r, store, clock, transport, email)
        .map_err(|e| CliError::runtime("could not set up the email handler", &e))?;
    Ok(r)
}

/// The facade over the configured database, for commands that work on it directly (with or
/// without a server running: SQLite WAL and a busy timeout, or PostgreSQL, make that safe).
pub async fn open_kairos(cfg: &Config) -> CliResult<Kairos> {
    let store: Arc<dyn Store> = open_store(cfg).await?.store();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let kinds = registry(cfg, store.clone(), clock.clone())?.kinds();
    // No engine in this process: a running node picks the work up at its next poll (on
    // PostgreSQL at once: inserting a job notifies the nodes).
    Ok(Kairos::new(store, clock, Arc::new(Notify::new()), kinds)
        .allow_private_targets(cfg.allow_private_targets)
        .with_digest_attempt_timeout(std::time::Duration::from_secs(
            cfg.feed_timeout_secs + cfg.model_timeout_secs + 5,
        ))
        .with_outbox(cfg.data_dir.join("outbox")))
}

/// Print `v` as pretty JSON on stdout.
pub fn print_json<T: Serialize>(v: &T) -> CliResult {
    let s = serde_json::to_string_pretty(v)
        .map_err(|e| CliError::runtime("could not write JSON", &e))?;
    println!("{s}");
    Ok(())
}

/// Print a table with a header row, columns padded to their widest cell.
pub fn print_table(headers: &[&str], rows: &[Vec<String>]) {
    print!("{}", format_table(headers, rows));
}

/// The table [`print_table`] prints. Columns are as wide as their widest cell in terminal
/// columns (`unicode-width`: a CJK character or an emoji takes two, a combining mark none), so
/// they line up whatever the script.
pub fn format_table(headers: &[&str], rows: &[Vec<String>]) -> String {
    use unicode_width::UnicodeWidthStr;
    let mut widths: Vec<usize> = headers.iter().map(|h| h.width()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.width());
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            s.push_str(cell);
            if i + 1 < cells.len() {
                s.push_str(&" ".repeat(w.saturating_sub(cell.width()) + 2));
            }
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(headers.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
    out
}

/// Print `key: value` lines, keys aligned.
pub fn print_fields(fields: &[(&str, String)]) {
    let w = fields.iter().map(|(k, _)| k.len()).max().unwrap_or(0) + 1;
    for (k, v) in fields {
        println!("{:<w$} {v}", format!("{k}:"));
    }
}

/// An optional value for a table cell.
pub fn cell(v: &Option<String>) -> String {
    v.clone().unwrap_or_else(|| "-".into())
}

/// Parse a `--payload` JSON argument.
pub fn parse_payload(s: Option<&str>) -> CliResult<Option<serde_json::Value>> {
    s.map(|s| {
        serde_json::from_str(s)
            .map_err(|e| CliError::usage("payload", format!("not valid JSON: {e}")))
    })
    .transpose()
}

/// The `http` object of an `http` job or schedule from `--http JSON`.
pub fn parse_http(s: Option<&str>) -> CliResult<Option<kairos_engine::ops::HttpSpec>> {
    s.map(|s| {
        serde_json::from_str(s)
            .map_err(|e| CliError::usage("http", format!("not a valid http object: {e}")))
    })
    .transpose()
}

/// A retry spec from `--retry-delays 1s,2s` and `--max-attempts N`.
pub fn retry_spec(
    delays: Option<&str>,
    max_attempts: Option<u32>,
) -> Option<kairos_core::retry::RetrySpec> {
    if delays.is_none() && max_attempts.is_none() {
        return None;
    }
    Some(kairos_core::retry::RetrySpec {
        delays: delays.map(|d| {
            d.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        }),
        max_attempts,
        ..Default::default()
    })
}

/// A webhook target from `--url` and `--secret` (both or neither).
pub fn webhook_target(
    url: Option<String>,
    secret: Option<String>,
) -> CliResult<Option<kairos_engine::ops::WebhookTarget>> {
    match (url, secret) {
        (Some(url), Some(secret)) => Ok(Some(kairos_engine::ops::WebhookTarget { url, secret })),
        (None, None) => Ok(None),
        (Some(_), None) => Err(CliError::usage(
            "webhook.secret",
            "--secret is required with --url",
        )),
        (None, Some(_)) => Err(CliError::usage(
            "webhook.url",
            "--url is required with --secret",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::format_table;

    /// Wide characters count as two columns: the next column starts at the same place on
    /// every line (`print_table` counted chars, so CJK rows were misaligned).
    #[test]
    fn table_columns_line_up_with_wide_characters() {
        let rows = vec![
            vec!["週報".to_string(), "ok".to_string()],
            vec!["weekly".to_string(), "ok".to_string()],
            vec!["🚀x".to_string(), "ok".to_string()],
        ];
        let t = format_table(&["name", "state"], &rows);
        let starts: Vec<usize> = t
            .lines()
            .map(|l| {
                let i = l.rfind("  ").expect("a gap") + 2;
                unicode_width::UnicodeWidthStr::width(&l[..i])
            })
            .collect();
        assert_eq!(starts, vec![8, 8, 8, 8], "{t}");
    }
}
