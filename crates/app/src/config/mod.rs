//! Configuration, layered with figment: defaults → a TOML file (`--config FILE`, else
//! `<data_dir>/kairos.toml` if it exists) → environment `KAIROS_*` → command-line flags.
//!
//! Every error names the field and, where figment knows it, the source that set it
//! (`listen: … (from environment variable KAIROS_LISTEN)`). Nothing here panics on bad input.

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

mod database;
mod debug;
mod dirs;
mod error;
mod http;
pub mod inbound;
mod node;
mod parse;
mod secret;
mod token;
mod validate;

pub use database::{
    CLAIM_COOLDOWN_MS_POSTGRES, CLAIM_COOLDOWN_MS_SQLITE, Database, default_claim_cooldown_ms,
};
pub use dirs::{create_private_dir, open_dir_warning};
pub use error::ConfigError;
use error::from_figment;
pub use http::HttpLimits;
use parse::{flex_bool, flex_duration};
pub use parse::{parse_retention, parse_window};
pub use secret::{
    SECRET_KEY_BYTES, SECRET_KEY_CHECK_SETTING, SECRET_KEY_FILE, SecretKey, SecretKeySource,
    secret_key,
};
pub use token::{MIN_TOKEN_CHARS, TokenSource, api_token, generate_token, save_token, saved_token};

/// The environment variables read (`KAIROS_` + the upper-cased field name).
pub const ENV_FIELDS: &[&str] = &[
    "data_dir",
    "listen",
    "database_url",
    "database_schema",
    "api_token",
    "secret_key",
    "allow_private_targets",
    "node",
    "node_id",
    "concurrency",
    "max_unrecorded",
    "lease_secs",
    "webhook_timeout_secs",
    "shutdown_grace_secs",
    "poll_interval_ms",
    "claim_cooldown_ms",
    "log_format",
    "otlp_endpoint",
    "retention_succeeded",
    "retention_dead",
    "retention_artifacts",
    "retention_events",
    "retention_dedupe",
    "misfire_threshold",
    "gemini_api_key",
    "gemini_api_url",
    "gemini_model",
    "openai_api_key",
    "openai_api_url",
    "openai_model",
    "model_timeout_secs",
    "feed_timeout_secs",
    "slo_interval_secs",
    "slo_window_secs",
    "slo_failure_rate",
    "slo_min_sample",
    "slo_stuck_secs",
    "slo_lease_grace_secs",
    "slo_missed_window_secs",
    "slo_missed_grace_secs",
    "slo_disabled",
    "slo_dead_runs_window",
    "slo_skip_rate_window",
    "slo_skip_rate_min",
    "slo_skip_rate_ignore",
    "slo_expansions_stuck_after",
    "slo_db_horizon_secs",
    "slo_bounce_rate",
    "slo_complaint_rate",
    "slo_deliverability_window",
    "slo_deliverability_min_sent",
    "slo_inbound_unknown_window",
    "alert_webhook_url",
    "alert_webhook_secret",
    "email_transport",
    "email_timeout_secs",
    "smtp_url",
    "resend_api_url",
    "resend_api_key",
    "email_from",
    "public_url",
    "unsubscribe_secret",
    "settings_url",
    "resend_webhook_secret",
    "inbound_secrets",
    "unsubscribe_old_secrets",
    "maintenance",
    "http_header_timeout_secs",
    "http_body_timeout_secs",
    "http_request_timeout_secs",
    "http_max_connections",
    "http_max_connections_per_source",
    "http_max_connection_secs",
    "http_max_requests",
    "template_workers",
    "template_timeout_secs",
    "template_memory_mb",
    "endpoint_disable_after_failures",
    "endpoint_disable_after_secs",
];

/// The name of the config file looked for in the data directory.
pub const CONFIG_FILE: &str = "kairos.toml";
/// The name of the generated token file in the data directory.
pub const TOKEN_FILE: &str = "api-token";
/// The name of the SQLite database file in the data directory.
pub const DB_FILE: &str = "kairos.db";

/// Log output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// The settings of a kairos node.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Directory of `kairos.db`, `api-token` and `kairos.toml` (`KAIROS_DATA_DIR`, default `.`).
    pub data_dir: PathBuf,
    /// Address the API listens on (`KAIROS_LISTEN`, default `127.0.0.1:8080`; port 0 picks one).
    pub listen: String,
    /// Database URL (`KAIROS_DATABASE_URL`); default `sqlite://<data_dir>/kairos.db`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub database_url: Option<String>,
    /// PostgreSQL only: the schema holding kairos's tables (`KAIROS_DATABASE_SCHEMA`, default
    /// `kairos`), so that kairos can share a database with the application.
    pub database_schema: String,
    /// The API bearer token (`KAIROS_API_TOKEN`, at least 32 characters); default: generated
    /// into `<data_dir>/api-token`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_token: Option<String>,
    /// The key stored secrets are kept under (`KAIROS_SECRET_KEY`, 32 random bytes in base64;
    /// `kairos key generate` prints one). SQLite default: generated into
    /// `<data_dir>/secret-key`. PostgreSQL: required, the same on every node. A secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret_key: Option<String>,
    /// Allow webhook targets on private and loopback addresses
    /// (`KAIROS_ALLOW_PRIVATE_TARGETS=1`).
    #[serde(deserialize_with = "flex_bool")]
    pub allow_private_targets: bool,
    /// This node's name in leases and attempts (`KAIROS_NODE`); see `node_id`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// This node's id in leases and attempts (`KAIROS_NODE_ID`, or `KAIROS_NODE`); default:
    /// kept in `<data_dir>/node-id`, so a restarted node takes back its own jobs at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
    /// Jobs running at once (`KAIROS_CONCURRENCY`, default 100).
    pub concurrency: usize,
    /// Most finished attempts whose outcome is not yet committed while their handler slot
    /// runs the next job (`KAIROS_MAX_UNRECORDED`, default 500, 0 to 100000; 0: a slot waits
    /// for its outcome's commit). A crash can repeat at most `concurrency` + this many sends.
    pub max_unrecorded: usize,
    /// Job lease in seconds (`KAIROS_LEASE_SECS`, default 30); renewed every third of it. Also
    /// how long a schedule claimed by a node stays with it: a node that dies between claiming
    /// and firing a schedule delays its firing by at most this.
    pub lease_secs: u64,
    /// Timeout of one webhook request in seconds (`KAIROS_WEBHOOK_TIMEOUT_SECS`, default 10).
    pub webhook_timeout_secs: u64,
    /// On shutdown, how long running jobs may finish (`KAIROS_SHUTDOWN_GRACE_SECS`, default 30).
    pub shutdown_grace_secs: u64,
    /// Longest idle wait between looks for due work (`KAIROS_POLL_INTERVAL_MS`, default 1000).
    pub poll_interval_ms: u64,
    /// After a claim that came back short, the least time before the node claims again
    /// (`KAIROS_CLAIM_COOLDOWN_MS`, at most 1000; 0: at once): jobs that arrive meanwhile
    /// share one claim instead of each making its own. Unset: by database, 1 ms on SQLite and
    /// 5 ms on PostgreSQL ([`Database::default_claim_cooldown_ms`]).
    pub claim_cooldown_ms: Option<u64>,
    /// `text` or `json` (`KAIROS_LOG_FORMAT`, default `text`).
    pub log_format: LogFormat,
    /// The OpenTelemetry collector's base URL (`KAIROS_OTLP_ENDPOINT`, e.g.
    /// `http://127.0.0.1:4318`): set, spans are posted to `<endpoint>/v1/traces` (OTLP over
    /// HTTP, protobuf) and outgoing calls carry a W3C `traceparent`; unset (the default),
    /// tracing is off. The standard `OTEL_*` variables (`OTEL_SERVICE_NAME`,
    /// `OTEL_BSP_SCHEDULE_DELAY`, `OTEL_EXPORTER_OTLP_HEADERS`, …) apply.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub otlp_endpoint: Option<String>,
    /// Retention of succeeded, skipped and cancelled jobs and their attempts, counted from
    /// when they finished (`KAIROS_RETENTION_SUCCEEDED`, default `7d`; `off` keeps them; a
    /// bare number is seconds).
    #[serde(deserialize_with = "flex_duration")]
    pub retention_succeeded: String,
    /// Retention of dead jobs, the dead-letter queue (`KAIROS_RETENTION_DEAD`, default `30d`;
    /// `off` keeps them).
    #[serde(deserialize_with = "flex_duration")]
    pub retention_dead: String,
    /// Retention of artifacts (a day's digest), counted from when they were stored
    /// (`KAIROS_RETENTION_ARTIFACTS`, default `365d`; `off` keeps them).
    #[serde(deserialize_with = "flex_duration")]
    pub retention_artifacts: String,
    /// Retention of inbound provider events, counted from their receipt
    /// (`KAIROS_RETENTION_EVENTS`, default `30d`; `off` keeps them). The suppressions
    /// they caused stay.
    #[serde(deserialize_with = "flex_duration")]
    pub retention_events: String,
    /// Retention of the dedupe keys of pruned jobs, counted from when the job finished
    /// (`KAIROS_RETENTION_DEDUPE`, default `400d`; `off` keeps them). Until then re-firing an
    /// old period, or retrying with an old idempotency key, creates nothing.
    #[serde(deserialize_with = "flex_duration")]
    pub retention_dedupe: String,
    /// A schedule's firing later than this follows its misfire policy, for schedules that
    /// set no `misfire_threshold` of their own (`KAIROS_MISFIRE_THRESHOLD`, default `60s`; a
    /// bare number is seconds).
    #[serde(deserialize_with = "flex_duration")]
    pub misfire_threshold: String,
    /// The Gemini API key of the `gemini` digest summarizer (`KAIROS_GEMINI_API_KEY`). A
    /// secret: never in payloads or logs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gemini_api_key: Option<String>,
    /// The Gemini API base URL (`KAIROS_GEMINI_API_URL`, default
    /// `https://generativelanguage.googleapis.com`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gemini_api_url: Option<String>,
    /// The Gemini model (`KAIROS_GEMINI_MODEL`, default `gemini-2.5-flash`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gemini_model: Option<String>,
    /// The OpenAI API key of the `openai` digest summarizer (`KAIROS_OPENAI_API_KEY`). A
    /// secret: never in payloads or logs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub openai_api_key: Option<String>,
    /// The OpenAI API base URL (`KAIROS_OPENAI_API_URL`, default `https://api.openai.com`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub openai_api_url: Option<String>,
    /// The OpenAI model (`KAIROS_OPENAI_MODEL`, default `gpt-4o-mini`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub openai_model: Option<String>,
    /// Timeout of one model call in seconds (`KAIROS_MODEL_TIMEOUT_SECS`, default 120).
    pub model_timeout_secs: u64,
    /// Timeout of one feed request in seconds (`KAIROS_FEED_TIMEOUT_SECS`, default 30).
    pub feed_timeout_secs: u64,
    /// How often the SLO monitor runs (`KAIROS_SLO_INTERVAL_SECS`, default 60).
    pub slo_interval_secs: u64,
    /// The failure-rate window (`KAIROS_SLO_WINDOW_SECS`, default 3600).
    pub slo_window_secs: u64,
    /// A kind's failure rate above this warns (`KAIROS_SLO_FAILURE_RATE`, default 0.1).
    pub slo_failure_rate: f64,
    /// Fewest decided jobs for a rate to count (`KAIROS_SLO_MIN_SAMPLE`, default 20).
    pub slo_min_sample: u64,
    /// Due this long and not claimed is stuck (`KAIROS_SLO_STUCK_SECS`, default 3600).
    pub slo_stuck_secs: u64,
    /// Running this long past the lease is stuck (`KAIROS_SLO_LEASE_GRACE_SECS`, default 60).
    pub slo_lease_grace_secs: u64,
    /// The missed-firings window (`KAIROS_SLO_MISSED_WINDOW_SECS`, default 86400).
    pub slo_missed_window_secs: u64,
    /// Firings younger than this are not expected yet (`KAIROS_SLO_MISSED_GRACE_SECS`,
    /// default 300).
    pub slo_missed_grace_secs: u64,
    /// Checks turned off, comma-separated (`KAIROS_SLO_DISABLED`, e.g. `missed_firings`).
    pub slo_disabled: String,
    /// A schedule's job that died this recently is a `dead_runs` warning
    /// (`KAIROS_SLO_DEAD_RUNS_WINDOW`, default `24h`; a bare number is seconds).
    #[serde(deserialize_with = "flex_duration")]
    pub slo_dead_runs_window: String,
    /// The skip-rate window (`KAIROS_SLO_SKIP_RATE_WINDOW`, default `24h`).
    #[serde(deserialize_with = "flex_duration")]
    pub slo_skip_rate_window: String,
    /// Fewest skips for one reason before `skip_rate` warns (`KAIROS_SLO_SKIP_RATE_MIN`,
    /// default 5).
    pub slo_skip_rate_min: u64,
    /// Skip reasons `skip_rate` ignores, comma-separated (`KAIROS_SLO_SKIP_RATE_IGNORE`, e.g.
    /// `unsubscribed`; default none).
    pub slo_skip_rate_ignore: String,
    /// An audience expansion not advanced for this long is an `expansions_stuck` warning
    /// (`KAIROS_SLO_EXPANSIONS_STUCK_AFTER`, default `15m`).
    #[serde(deserialize_with = "flex_duration")]
    pub slo_expansions_stuck_after: String,
    /// A transaction holding the database's cleanup back this long is a `db_horizon`
    /// warning (`KAIROS_SLO_DB_HORIZON_SECS`, default 300).
    pub slo_db_horizon_secs: u64,
    /// A topic's bounced share of its sent mails above this warns (`KAIROS_SLO_BOUNCE_RATE`,
    /// default 0.05).
    pub slo_bounce_rate: f64,
    /// A topic's share of sent mails marked as spam above this warns
    /// (`KAIROS_SLO_COMPLAINT_RATE`, default 0.003).
    pub slo_complaint_rate: f64,
    /// The bounce and complaint rates' window (`KAIROS_SLO_DELIVERABILITY_WINDOW`, default
    /// `7d`).
    #[serde(deserialize_with = "flex_duration")]
    pub slo_deliverability_window: String,
    /// Fewest mails a topic sent in the window for its rates to count
    /// (`KAIROS_SLO_DELIVERABILITY_MIN_SENT`, default 200).
    pub slo_deliverability_min_sent: u64,
    /// Provider events stored without action this recently warn `inbound_unknown`
    /// (`KAIROS_SLO_INBOUND_UNKNOWN_WINDOW`, default `24h`).
    #[serde(deserialize_with = "flex_duration")]
    pub slo_inbound_unknown_window: String,
    /// Where SLO warnings and recoveries are posted (`KAIROS_ALERT_WEBHOOK_URL`; none: off).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alert_webhook_url: Option<String>,
    /// The `whsec_…` secret alerts are signed with (`KAIROS_ALERT_WEBHOOK_SECRET`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub alert_webhook_secret: Option<String>,
    /// How mail is sent (`KAIROS_EMAIL_TRANSPORT`): `file` (default: `.eml` files in
    /// `<data_dir>/outbox`), `smtp` or `resend`.
    pub email_transport: String,
    /// Timeout of one send through SMTP or Resend, in seconds (`KAIROS_EMAIL_TIMEOUT_SECS`,
    /// default 10, as the source requirements give every channel send; 1 to 300). A send that runs into it
    /// is a transient failure, retried by the job's policy.
    pub email_timeout_secs: u64,
    /// The SMTP server (`KAIROS_SMTP_URL`, `smtp://host:port`, `?tls=required` for STARTTLS,
    /// `smtps://` for TLS). Required for `smtp`. May hold credentials: never logged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub smtp_url: Option<String>,
    /// Resend's API (`KAIROS_RESEND_API_URL`, default `https://api.resend.com`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resend_api_url: Option<String>,
    /// The Resend API key (`KAIROS_RESEND_API_KEY`). Required for `resend`. A secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resend_api_key: Option<String>,
    /// `From` of every mail (`KAIROS_EMAIL_FROM`, default `kairos <kairos@localhost>`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email_from: Option<String>,
    /// Base of links in mails (`KAIROS_PUBLIC_URL`, default `http://<listen>`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_url: Option<String>,
    /// The one-click unsubscribe signing secret (`KAIROS_UNSUBSCRIBE_SECRET`). Unset:
    /// mails link to `settings_url` instead. A secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsubscribe_secret: Option<String>,
    /// Where recipients manage subscriptions (`KAIROS_SETTINGS_URL`, default
    /// `<public_url>/settings`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settings_url: Option<String>,
    /// The `whsec_…` secret(s) Resend signs webhooks with (`KAIROS_RESEND_WEBHOOK_SECRET`,
    /// comma-separated during rotation); set, it enables `POST /hooks/resend`. A secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resend_webhook_secret: Option<String>,
    /// Standard Webhooks senders of `POST /hooks/standard/{source}`
    /// (`KAIROS_INBOUND_SECRETS=source=whsec_…,other=whsec_…`). Secrets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inbound_secrets: Option<String>,
    /// Earlier unsubscribe secrets whose links still work (`KAIROS_UNSUBSCRIBE_OLD_SECRETS`,
    /// comma-separated). Secrets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsubscribe_old_secrets: Option<String>,
    /// Maintenance mode forced on (`KAIROS_MAINTENANCE=1`): the engine claims nothing
    /// and `/v1/*` answers 503, while `/hooks/*`, `/unsubscribe` and `/healthz` work.
    #[serde(deserialize_with = "flex_bool")]
    pub maintenance: bool,
    /// Longest wait for a whole request head, in seconds (`KAIROS_HTTP_HEADER_TIMEOUT_SECS`,
    /// default 10): slower clients and idle keep-alive connections are closed.
    pub http_header_timeout_secs: u64,
    /// Longest wait for a whole request body after its head, in seconds
    /// (`KAIROS_HTTP_BODY_TIMEOUT_SECS`, default 15): then 408.
    pub http_body_timeout_secs: u64,
    /// Longest time for a whole request, in seconds (`KAIROS_HTTP_REQUEST_TIMEOUT_SECS`,
    /// default 30): then 408.
    pub http_request_timeout_secs: u64,
    /// Most connections open at once (`KAIROS_HTTP_MAX_CONNECTIONS`, default 1024).
    pub http_max_connections: usize,
    /// Most connections open at once from one source address, an IPv6 /64 counting as one
    /// (`KAIROS_HTTP_MAX_CONNECTIONS_PER_SOURCE`; default a quarter of
    /// `http_max_connections`). Behind a reverse proxy every connection comes from the proxy:
    /// set it to `http_max_connections` there and cap per client in the proxy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_max_connections_per_source: Option<usize>,
    /// Longest a connection is kept open, in seconds (`KAIROS_HTTP_MAX_CONNECTION_SECS`,
    /// default 60): then it is closed after its current request, and the client reconnects.
    pub http_max_connection_secs: u64,
    /// Most requests in progress at once (`KAIROS_HTTP_MAX_REQUESTS`, default 512): then 503.
    pub http_max_requests: usize,
    /// Template worker processes (`KAIROS_TEMPLATE_WORKERS`, default 2, at most 64): mail
    /// templates are checked and rendered in them under OS limits. `0` renders in the node's
    /// own process (fuel and output are bounded there, memory is not).
    pub template_workers: usize,
    /// The longest one template check or render may take in a worker, in seconds
    /// (`KAIROS_TEMPLATE_TIMEOUT_SECS`, default 10, 1 to 300): then the worker is killed and
    /// the template refused.
    pub template_timeout_secs: u64,
    /// A template worker's address-space limit in MiB (`KAIROS_TEMPLATE_MEMORY_MB`, default
    /// 512, 64 to 65536): a render that needs more kills its worker and is refused.
    pub template_memory_mb: u64,
    /// Disable a webhook endpoint after this many consecutive failed sends
    /// (`KAIROS_ENDPOINT_DISABLE_AFTER_FAILURES`, 0 to 1000000; default 0: never).
    pub endpoint_disable_after_failures: u64,
    /// … when its failure streak has also lasted this many seconds
    /// (`KAIROS_ENDPOINT_DISABLE_AFTER_SECS`, 0 to 2592000; default 3600).
    pub endpoint_disable_after_secs: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            data_dir: PathBuf::from("."),
            listen: "127.0.0.1:8080".into(),
            database_url: None,
            database_schema: "kairos".into(),
            api_token: None,
            secret_key: None,
            allow_private_targets: false,
            node: None,
            node_id: None,
            concurrency: 100,
            max_unrecorded: 500,
            lease_secs: 30,
            webhook_timeout_secs: 10,
            shutdown_grace_secs: 30,
            poll_interval_ms: 1000,
            claim_cooldown_ms: None,
            log_format: LogFormat::Text,
            otlp_endpoint: None,
            retention_succeeded: "7d".into(),
            retention_dead: "30d".into(),
            retention_artifacts: "365d".into(),
            retention_events: "30d".into(),
            retention_dedupe: "400d".into(),
            misfire_threshold: "60s".into(),
            gemini_api_key: None,
            gemini_api_url: None,
            gemini_model: None,
            openai_api_key: None,
            openai_api_url: None,
            openai_model: None,
            model_timeout_secs: 120,
            feed_timeout_secs: 30,
            slo_interval_secs: 60,
            slo_window_secs: 3600,
            slo_failure_rate: 0.1,
            slo_min_sample: 20,
            slo_stuck_secs: 3600,
            slo_lease_grace_secs: 60,
            slo_missed_window_secs: 86_400,
            slo_missed_grace_secs: 300,
            slo_disabled: String::new(),
            slo_dead_runs_window: "24h".into(),
            slo_skip_rate_window: "24h".into(),
            slo_skip_rate_min: 5,
            slo_skip_rate_ignore: String::new(),
            slo_expansions_stuck_after: "15m".into(),
            slo_db_horizon_secs: 300,
            slo_bounce_rate: 0.05,
            slo_complaint_rate: 0.003,
            slo_deliverability_window: "7d".into(),
            slo_deliverability_min_sent: 200,
            slo_inbound_unknown_window: "24h".into(),
            alert_webhook_url: None,
            alert_webhook_secret: None,
            email_transport: "file".into(),
            email_timeout_secs: 10,
            smtp_url: None,
            resend_api_url: None,
            resend_api_key: None,
            email_from: None,
            public_url: None,
            unsubscribe_secret: None,
            settings_url: None,
            resend_webhook_secret: None,
            inbound_secrets: None,
            unsubscribe_old_secrets: None,
            maintenance: false,
            http_header_timeout_secs: 10,
            http_body_timeout_secs: 15,
            http_request_timeout_secs: 30,
            http_max_connections: 1024,
            http_max_connections_per_source: None,
            http_max_connection_secs: 60,
            http_max_requests: 512,
            template_workers: 2,
            template_timeout_secs: 10,
            template_memory_mb: 512,
            endpoint_disable_after_failures: 0,
            endpoint_disable_after_secs: 3600,
        }
    }
}

/// Values given on the command line; `None` leaves the lower layers' value.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Overrides {
    /// `--data-dir`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_dir: Option<PathBuf>,
    /// `--listen`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen: Option<String>,
    /// `--log-format`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_format: Option<LogFormat>,
    /// `--config`: the TOML file to read instead of `<data_dir>/kairos.toml`.
    #[serde(skip)]
    pub config_file: Option<PathBuf>,
}

impl Config {
    /// The pruner's ages: succeeded/skipped/cancelled, and dead; `None` keeps.
    pub fn retention(
        &self,
    ) -> Result<(Option<std::time::Duration>, Option<std::time::Duration>), ConfigError> {
        Ok((
            parse_retention("retention_succeeded", &self.retention_succeeded)?,
            parse_retention("retention_dead", &self.retention_dead)?,
        ))
    }

    /// The scheduler's default misfire threshold (more than 0, at most 366 days).
    pub fn misfire_threshold(&self) -> Result<std::time::Duration, ConfigError> {
        parse_window("misfire_threshold", &self.misfire_threshold)
    }

    /// The pruner's age of pruned jobs' dedupe keys; `None` keeps them.
    pub fn retention_dedupe(&self) -> Result<Option<std::time::Duration>, ConfigError> {
        parse_retention("retention_dedupe", &self.retention_dedupe)
    }

    /// The pruner's age of inbound events; `None` keeps them.
    pub fn retention_events(&self) -> Result<Option<std::time::Duration>, ConfigError> {
        parse_retention("retention_events", &self.retention_events)
    }

    /// The pruner's age of artifacts; `None` keeps them.
    pub fn retention_artifacts(&self) -> Result<Option<std::time::Duration>, ConfigError> {
        parse_retention("retention_artifacts", &self.retention_artifacts)
    }

    /// Load from the process environment and `overrides`.
    pub fn load(overrides: &Overrides) -> Result<Config, ConfigError> {
        Self::load_from(overrides, Env::prefixed("KAIROS_").only(ENV_FIELDS))
    }

    fn load_from(overrides: &Overrides, env: Env) -> Result<Config, ConfigError> {
        // Where to look for kairos.toml: the data dir as the flag, then the environment, say.
        let data_dir = match &overrides.data_dir {
            Some(d) => d.clone(),
            None => Figment::from(Serialized::defaults(Config::default()))
                .merge(env.clone())
                .extract_inner::<PathBuf>("data_dir")
                .map_err(from_figment)?,
        };
        let mut fig = Figment::from(Serialized::defaults(Config::default()));
        match &overrides.config_file {
            Some(file) => {
                if !file.is_file() {
                    return Err(ConfigError::new(
                        "config",
                        format!("{} does not exist or is not a file", file.display()),
                    ));
                }
                fig = fig.merge(Toml::file_exact(file));
            }
            None => {
                let file = data_dir.join(CONFIG_FILE);
                if file.is_file() {
                    fig = fig.merge(Toml::file_exact(file));
                }
            }
        }
        let cfg: Config = fig
            .merge(env)
            .merge(Serialized::defaults(overrides))
            .extract()
            .map_err(from_figment)?;
        cfg.validate()?;
        Ok(cfg)
    }

    /// The HTTP server's timeouts and caps (`KAIROS_HTTP_…`).
    pub fn http_limits(&self) -> HttpLimits {
        use std::time::Duration;
        HttpLimits {
            header_timeout: Duration::from_secs(self.http_header_timeout_secs),
            body_timeout: Duration::from_secs(self.http_body_timeout_secs),
            request_timeout: Duration::from_secs(self.http_request_timeout_secs),
            max_connections: self.http_max_connections,
            max_connections_per_source: self.http_max_connections_per_source,
            max_connection_age: Duration::from_secs(self.http_max_connection_secs),
            max_requests: self.http_max_requests,
        }
    }

    /// Whether browsers reach this node over https (`public_url` starts with `https://`): the
    /// admin session cookie is then `Secure`.
    pub fn public_url_is_https(&self) -> bool {
        self.public_url
            .as_deref()
            .is_some_and(|u| u.trim().to_ascii_lowercase().starts_with("https://"))
    }

    /// This node's id: `node_id`, else `node`, else the one kept in `<data_dir>/node-id`,
    /// else (that file is held by another process or cannot be written) `<hostname>-<pid>`.
    pub fn node_name(&self) -> String {
        if let Some(n) = self.node_id.as_ref().or(self.node.as_ref()) {
            return n.trim().to_string();
        }
        node::persisted_node_id(&self.data_dir)
            .unwrap_or_else(|| format!("{}-{}", node::hostname(), std::process::id()))
    }
}

#[cfg(test)]
#[allow(clippy::result_large_err)] // figment's Jail closures return figment::Error
mod tests;
