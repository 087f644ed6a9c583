//! What every command shares: the error type and exit codes, configuration, opening the
//! store and the facade, and output (tables or JSON).

use kairos_app::config::{Config, ConfigError, Overrides};
use kairos_app::node::{NodeBuilder, NodeError};
use kairos_engine::{Kairos, OpsError, OpsErrorKind};
use serde::Serialize;
use std::path::PathBuf;

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

impl From<NodeError> for CliError {
    fn from(e: NodeError) -> Self {
        match e {
            NodeError::Usage { field, reason } => CliError::Usage { field, reason },
            NodeError::Runtime(m) => CliError::Runtime(m),
        }
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
            OpsErrorKind::Malformed { field } => CliError::usage(field, e.message()),
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
    /// Run the command through the HTTP API of the running kairos server at URL instead of
    /// opening a database (commands without an API refuse it) [env: KAIROS_URL]
    #[arg(
        long,
        global = true,
        value_name = "URL",
        env = "KAIROS_URL",
        hide_env = true
    )]
    pub server: Option<String>,
    /// The API token for --server [env: KAIROS_API_TOKEN]
    #[arg(
        long,
        global = true,
        value_name = "TOKEN",
        env = "KAIROS_API_TOKEN",
        hide_env = true,
        hide_env_values = true
    )]
    pub token: Option<String>,
}

impl GlobalArgs {
    /// The configuration, with `listen` from a command's flag.
    pub fn load_config(&self, listen: Option<String>) -> CliResult<Config> {
        Ok(Config::load(&Overrides {
            data_dir: self.data_dir.clone(),
            listen,
            config_file: self.config.clone(),
            log_format: match self.log_format.as_deref() {
                Some("json") => Some(kairos_app::config::LogFormat::Json),
                Some(_) => Some(kairos_app::config::LogFormat::Text),
                None => None,
            },
        })?)
    }
}

/// An open database (see [`kairos_app::node::Db`]).
pub use kairos_app::node::Db;

/// Open (creating and migrating) the configured database with the secret key checked and
/// applied: the node builder's first step, shared by every command.
pub async fn open_store(cfg: &Config) -> CliResult<Db> {
    Ok(NodeBuilder::new(cfg.clone()).open_db().await?)
}

/// Refuse a command that only reads when the configured SQLite database does not exist:
/// opening it would create an empty one (and a secret key), and an empty list printed from it
/// would mislead (an operator in the wrong folder concludes the dead-letter queue is empty).
/// The error names the folder looked in. PostgreSQL is left to its connection error.
pub fn require_database(cfg: &Config) -> CliResult {
    use kairos_app::config::Database;
    let Database::Sqlite(path) = cfg.database()? else {
        return Ok(());
    };
    if path.exists() {
        return Ok(());
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."));
    let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    Err(CliError::usage(
        "data_dir",
        format!(
            "no kairos database in {} ({} does not exist); this command only reads, so it \
             created nothing. Run it in a node's data directory, or pass --data-dir DIR \
             (KAIROS_DATA_DIR) or KAIROS_DATABASE_URL",
            dir.display(),
            path.display()
        ),
    ))
}

/// [`open_kairos`] for a command that only reads: [`require_database`] first.
pub async fn open_kairos_read(cfg: &Config, read_only: bool) -> CliResult<Kairos> {
    if read_only {
        require_database(cfg)?;
    }
    open_kairos(cfg).await
}

/// The facade over the configured database, for commands that work on it directly (with or
/// without a server running), built by the same node builder as `kairos serve`, without an
/// engine.
pub async fn open_kairos(cfg: &Config) -> CliResult<Kairos> {
    let (_db, kairos) = node_builder(cfg)?.open_kairos().await?;
    Ok(kairos)
}

/// The node builder for `cfg`, with templates rendered in worker processes of this binary
/// (`kairos __render-worker`) unless `KAIROS_TEMPLATE_WORKERS=0`.
pub fn node_builder(cfg: &Config) -> CliResult<NodeBuilder> {
    let b = NodeBuilder::new(cfg.clone());
    if cfg.template_workers == 0 {
        return Ok(b);
    }
    Ok(b.with_template_workers(this_binary()?))
}

/// Where templates render for a command run outside a node (`kairos template preview`): as
/// the node renders them.
pub fn template_renderer(cfg: &Config) -> CliResult<kairos_channels::email::template::Renderer> {
    if cfg.template_workers == 0 {
        return Ok(kairos_channels::email::template::Renderer::InProcess);
    }
    Ok(kairos_app::node::template_renderer(cfg, this_binary()?))
}

/// This binary, started again as `kairos __render-worker`. On Linux `/proc/self/exe`: it is
/// the running file itself, so workers still start after an upgrade replaced or removed the
/// file on disk (the path `current_exe` gives then names a new binary, or none).
fn this_binary() -> CliResult<std::path::PathBuf> {
    let own = std::path::Path::new("/proc/self/exe");
    if cfg!(target_os = "linux") && own.exists() {
        return Ok(own.to_path_buf());
    }
    std::env::current_exe().map_err(|e| {
        CliError::runtime(
            "could not find this binary to start template workers \
             (KAIROS_TEMPLATE_WORKERS=0 renders in-process)",
            &e,
        )
    })
}

/// Write to standard output (what the crate's `println!` and `print!` do). When the reader
/// went away (a closed pipe) the process ends quietly with exit 0: there is no one left to
/// tell, and a panic message would only clutter the terminal; any other write error ends it
/// with exit 1 and the reason on stderr.
pub fn write_out(args: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: could not write to standard output: {e}");
        std::process::exit(1);
    }
}

/// Print `v` as pretty JSON on stdout.
pub fn print_json<T: Serialize>(v: &T) -> CliResult {
    let s = serde_json::to_string_pretty(v)
        .map_err(|e| CliError::runtime("could not write JSON", &e))?;
    println!("{s}");
    Ok(())
}

/// `s` with every control character (C0, DEL, C1) written as a Rust escape (`\n`,
/// `\u{1b}`): what the CLI prints of stored values never moves the cursor, retitles the
/// terminal or hides text. Every table and `key: value` printer goes through it.
pub fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Print a table with a header row, columns padded to their widest cell.
pub fn print_table(headers: &[&str], rows: &[Vec<String>]) {
    print!("{}", format_table(headers, rows));
}

/// The table [`print_table`] prints: no borders, each column as wide as its widest cell in
/// terminal columns (comfy-table measures with `unicode-width`: a CJK character or an emoji
/// takes two, a combining mark none) and two spaces before the next, no trailing spaces.
/// Never wrapped to the terminal, so lines stay whole for `grep` and `cut`.
pub fn format_table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut table = comfy_table::Table::new();
    table
        .load_style(comfy_table::presets::NOTHING)
        .set_content_arrangement(comfy_table::ContentArrangement::Disabled)
        .set_header(headers.to_vec())
        .add_rows(
            rows.iter()
                .map(|r| r.iter().map(|c| printable(c).into_owned())),
        );
    for column in table.column_iter_mut() {
        column.set_padding((0, 2));
    }
    let mut out = table.trim_fmt();
    out.push('\n');
    out
}

/// Print `key: value` lines, keys aligned.
pub fn print_fields(fields: &[(&str, String)]) {
    let w = fields.iter().map(|(k, _)| k.len()).max().unwrap_or(0) + 1;
    for (k, v) in fields {
        println!("{:<w$} {}", format!("{k}:"), printable(v));
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

/// A concurrency limit from `--concurrency-key K` and `--concurrency-max N` (default 1); a max
/// without a key is refused.
pub fn concurrency_spec(
    key: Option<String>,
    max: Option<i64>,
) -> Result<Option<kairos_core::concurrency::ConcurrencySpec>, CliError> {
    match (key, max) {
        (None, None) => Ok(None),
        (None, Some(_)) => Err(CliError::usage(
            "--concurrency-max",
            "needs --concurrency-key",
        )),
        (Some(key), max) => Ok(Some(kairos_core::concurrency::ConcurrencySpec {
            key,
            max: max.unwrap_or(1),
        })),
    }
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

/// The `--http` flag's JSON object, as the API's `http` body; a usage error naming `http`
/// when it is not JSON.
pub fn http_object(s: Option<&str>) -> CliResult<Option<serde_json::Value>> {
    s.map(|s| {
        serde_json::from_str(s)
            .map_err(|e| CliError::usage("http", format!("not a valid http object: {e}")))
    })
    .transpose()
}

/// The request parts of a job or schedule run locally from `--http JSON`: the `http` kind's
/// part (its shape is the kind's to check, as through the API).
pub fn http_parts(s: Option<&str>) -> CliResult<kairos_engine::kinds::RequestParts> {
    let http = http_object(s)?.map(|v| (kairos_engine::kinds::http::NAME.to_string(), v));
    Ok(http.into_iter().collect())
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

/// Remove the `null` members of a JSON object (a request body built from optional flags: the
/// API reads an absent member as "not given").
pub fn strip_nulls(v: &mut serde_json::Value) {
    if let Some(o) = v.as_object_mut() {
        o.retain(|_, v| !v.is_null());
    }
}

#[cfg(test)]
mod tests {
    use super::{format_table, printable};

    /// Control characters in stored values reach the terminal escaped, in tables and fields.
    #[test]
    fn control_characters_are_printed_escaped() {
        assert_eq!(printable("週報 ok"), "週報 ok");
        assert_eq!(
            printable("a\u{1b}]0;owned\u{7}\u{1b}[2K\rb\n\u{9b}"),
            "a\\u{1b}]0;owned\\u{7}\\u{1b}[2K\\rb\\n\\u{9b}"
        );
        let t = format_table(&["NAME"], &[vec!["x\u{1b}[2K\ry".to_string()]]);
        assert_eq!(t, "NAME\nx\\u{1b}[2K\\ry\n");
        assert!(!t.contains('\u{1b}'));
    }

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

    /// The layout scripts read: a header line, then a line per row, columns two spaces
    /// apart, nothing trailing; a combining mark takes no column.
    #[test]
    fn table_layout_is_plain_columns() {
        let rows = vec![
            vec!["週報".to_string(), "ok".to_string(), "-".to_string()],
            vec![
                "cafe\u{301}".to_string(),
                "dead".to_string(),
                "x".to_string(),
            ],
        ];
        assert_eq!(
            format_table(&["NAME", "STATE", "LAST ERROR"], &rows),
            "NAME  STATE  LAST ERROR\n週報  ok     -\ncafe\u{301}  dead   x\n"
        );
        assert_eq!(format_table(&["ID", "KIND"], &[]), "ID  KIND\n");
    }

    /// `--concurrency-max` needs `--concurrency-key`; a key alone allows one at a time.
    #[test]
    fn concurrency_flags_need_a_key_and_default_to_one() {
        assert!(super::concurrency_spec(None, None).unwrap().is_none());
        assert!(super::concurrency_spec(None, Some(2)).is_err());
        let one = super::concurrency_spec(Some("k".into()), None)
            .unwrap()
            .unwrap();
        assert_eq!((one.key.as_str(), one.max), ("k", 1));
        let two = super::concurrency_spec(Some("k".into()), Some(2))
            .unwrap()
            .unwrap();
        assert_eq!(two.max, 2);
    }
}
