//! `kairos serve` (API + engine), `kairos worker` (engine only) and `kairos migrate`.

use crate::common::{CliError, CliResult, Db, GlobalArgs, open_store, registry, webhook_config};
use kairos_core::{Clock, SystemClock};
use kairos_engine::{Engine, EngineConfig, Kairos};
use kairos_server::config::{Config, LogFormat, TOKEN_FILE, TokenSource, api_token};
use kairos_server::{ApiToken, AppState, app};
use kairos_store::{Leader, Store};
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// `kairos serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on, e.g. 127.0.0.1:8080; port 0 picks a free one [env: KAIROS_LISTEN]
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<String>,
}

/// Set up logs on stderr: `RUST_LOG` filters (default `info`, without PostgreSQL's notices
/// such as "relation already exists, skipping" from idempotent migrations); JSON lines with
/// `log_format = json`.
pub fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx::postgres::notice=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
    };
}

/// Warn when the existing data directory is open to other users (kairos creates it 0700).
fn warn_open_data_dir(cfg: &Config) {
    if let Some(w) = kairos_server::config::open_dir_warning(&cfg.data_dir) {
        tracing::warn!("{w}");
    }
}

fn engine_config(cfg: &Config) -> EngineConfig {
    let node = cfg.node_name();
    let mut ec = EngineConfig::default().with_node(&node);
    // A node's id is kept across restarts (or configured), so its previous process's jobs
    // are its own to take back at start; a `<hostname>-<pid>` id matches none.
    ec.rescuer.restarted_node = Some(node);
    let lease = Duration::from_secs(cfg.lease_secs);
    let poll = Duration::from_millis(cfg.poll_interval_ms);
    ec.executor.concurrency = cfg.concurrency;
    ec.executor.lease = lease;
    ec.executor.renew_every = lease / 3;
    ec.executor.poll_interval = poll;
    ec.executor.shutdown_grace = Duration::from_secs(cfg.shutdown_grace_secs);
    ec.scheduler.poll_interval = poll;
    // Retention (S4-8). `Config::load` validated the ages, so this always matches.
    if let Ok((succeeded, dead)) = cfg.retention() {
        ec.pruner.succeeded = succeeded;
        ec.pruner.dead = dead;
    }
    if let Ok(artifacts) = cfg.retention_artifacts() {
        ec.pruner.artifacts = artifacts;
    }
    if let Ok(events) = cfg.retention_events() {
        ec.pruner.events = events;
    }
    ec
}

/// The engine config with the monitor's settings (`KAIROS_SLO_…`).
fn engine_config_with_monitor(cfg: &Config) -> CliResult<EngineConfig> {
    let mut ec = engine_config(cfg);
    ec.monitor = kairos_server::monitoring::monitor_config(cfg)?;
    Ok(ec)
}

/// How often a node that is not the leader tries to take the leader lock (and the leader
/// checks its connection): a dead leader is replaced within about this long.
const LEADER_RETRY: Duration = Duration::from_secs(3);

/// The engine and the facade over one store.
async fn build(cfg: &Config) -> CliResult<(Db, Engine, Kairos)> {
    let db = open_store(cfg).await?;
    let store: Arc<dyn Store> = db.store();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let registry = registry(cfg, store.clone(), clock.clone())?;
    let kinds = registry.kinds();
    let leader = match &db {
        Db::Sqlite(_) => Leader::always(),
        Db::Postgres(..) => Leader::follower(),
    };
    // Installed before the engine runs, so its first attempts are counted on /metrics.
    let _ = kairos_server::monitoring::metrics_recorder();
    let mut engine = Engine::new(
        engine_config_with_monitor(cfg)?,
        store.clone(),
        clock.clone(),
        registry,
    )?
    .with_leader(leader);
    if let Some(sink) = kairos_server::monitoring::alert_sink(cfg, webhook_config(cfg))? {
        engine = engine.with_alerts(sink);
    }
    // Maintenance mode (S3-13): one flag shared by the engine and the API, forced by
    // KAIROS_MAINTENANCE or read from the database (`kairos maintenance on`).
    let maintenance = kairos_engine::maintenance::Maintenance::new(cfg.maintenance);
    if let Err(e) = maintenance.refresh(store.as_ref()).await {
        tracing::warn!(error = %e, "reading the maintenance setting failed");
    }
    engine = engine.with_maintenance(maintenance.clone());
    let kairos = Kairos::new(store, clock, engine.wake(), kinds)
        .allow_private_targets(cfg.allow_private_targets)
        .with_digest_attempt_timeout(std::time::Duration::from_secs(
            cfg.feed_timeout_secs + cfg.model_timeout_secs + 5,
        ))
        .with_outbox(cfg.data_dir.join("outbox"))
        .with_maintenance(maintenance);
    Ok((db, engine, kairos))
}

/// Start what only PostgreSQL needs next to the engine: wake-ups from other nodes' inserts
/// (`LISTEN kairos_jobs`) and leader election for the leader-only services. Both stop on
/// `cancel`; on SQLite there is nothing to start.
fn start_multi_node(
    db: &Db,
    engine: &Engine,
    cancel: &CancellationToken,
) -> Vec<tokio::task::JoinHandle<()>> {
    let Db::Postgres(store, url) = db else {
        return Vec::new();
    };
    let schema = store.schema().to_string();
    vec![
        tokio::spawn(kairos_store_postgres::listen_wakeups(
            url.clone(),
            schema.clone(),
            engine.wake(),
            cancel.clone(),
        )),
        tokio::spawn(kairos_store_postgres::run_leader_election(
            url.clone(),
            schema,
            engine.leader().clone(),
            LEADER_RETRY,
            cancel.clone(),
        )),
    ]
}

/// Follow the stored maintenance setting (S3-13) every poll interval until `cancel`.
fn watch_maintenance(
    cfg: &Config,
    kairos: &Kairos,
    cancel: &CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(kairos.maintenance().clone().watch(
        kairos.store().clone(),
        Duration::from_millis(cfg.poll_interval_ms),
        cancel.clone(),
    ))
}

/// SIGTERM / Ctrl-C, listened for from creation on: created before the "listening" line, so
/// a signal sent as soon as that line appears is handled, not fatal.
struct ShutdownSignal {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
}

impl ShutdownSignal {
    fn install() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let term = match signal(SignalKind::terminate()) {
                Ok(t) => Some(t),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot listen for SIGTERM; Ctrl-C only");
                    None
                }
            };
            ShutdownSignal { term }
        }
        #[cfg(not(unix))]
        {
            ShutdownSignal {}
        }
    }

    async fn wait(self) {
        #[cfg(unix)]
        if let Some(mut term) = self.term {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return;
        }
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Run the API and the engine until SIGTERM / Ctrl-C; then stop accepting, let the engine
/// drain, and return.
pub async fn serve(global: &GlobalArgs, args: ServeArgs) -> CliResult {
    let signal = ShutdownSignal::install();
    let cfg = global.load_config(args.listen)?;
    init_logging(cfg.log_format);
    warn_open_data_dir(&cfg);
    let (token, source) = api_token(&cfg)?;
    if source == TokenSource::Generated {
        // The path, never the token: stderr ends up in journals and CI logs.
        eprintln!(
            "kairos: generated an API token and saved it in {} (mode 0600); \
             send it as `Authorization: Bearer <token>`.",
            cfg.data_dir.join(TOKEN_FILE).display()
        );
    }
    let (db, engine, kairos) = build(&cfg).await?;
    let listener = tokio::net::TcpListener::bind(&cfg.listen)
        .await
        .map_err(|e| CliError::runtime(&format!("could not listen on {}", cfg.listen), &e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| CliError::runtime("could not read the bound address", &e))?;
    let inbound = kairos_server::routes::hooks::InboundConfig::from_config(&cfg)?;
    let state = AppState::new(kairos.clone(), ApiToken::new(token))
        .with_monitor(kairos_server::monitoring::monitor_config(&cfg)?)
        .with_inbound(inbound)
        .with_secure_cookies(cfg.public_url_is_https());
    let cancel = CancellationToken::new();
    let mut side_tasks = start_multi_node(&db, &engine, &cancel);
    side_tasks.push(watch_maintenance(&cfg, &kairos, &cancel));
    let engine_task = {
        let cancel = cancel.clone();
        tokio::spawn(async move { engine.run(cancel).await })
    };
    let limits = cfg.http_limits();
    let mut server = {
        let stop = cancel.clone();
        tokio::spawn(async move {
            kairos_server::http::serve(listener, app(state), limits, stop.cancelled_owned()).await
        })
    };
    tracing::info!(node = %cfg.node_name(), db = %cfg.database()?.describe(), "listening on http://{addr}");
    let early = tokio::select! {
        _ = signal.wait() => None,
        r = &mut server => Some(r),
    };
    tracing::info!("shutting down: no new requests; draining running jobs");
    cancel.cancel();
    let served = match early {
        Some(r) => r,
        None => match tokio::time::timeout(Duration::from_secs(10), &mut server).await {
            Ok(r) => r,
            Err(_) => {
                tracing::warn!("open requests did not finish within 10s; closing them");
                server.abort();
                Ok(Ok(()))
            }
        },
    };
    let _ = engine_task.await;
    for t in side_tasks {
        let _ = t.await;
    }
    db.close().await;
    match served {
        Ok(Ok(())) => {
            tracing::info!("stopped");
            Ok(())
        }
        Ok(Err(e)) => Err(CliError::runtime("the HTTP server failed", &e)),
        Err(e) => Err(CliError::runtime("the HTTP server task failed", &e)),
    }
}

/// Run the engine without the API until SIGTERM / Ctrl-C.
pub async fn worker(global: &GlobalArgs) -> CliResult {
    let signal = ShutdownSignal::install();
    let cfg = global.load_config(None)?;
    init_logging(cfg.log_format);
    warn_open_data_dir(&cfg);
    let (db, engine, kairos) = build(&cfg).await?;
    let cancel = CancellationToken::new();
    let mut side_tasks = start_multi_node(&db, &engine, &cancel);
    side_tasks.push(watch_maintenance(&cfg, &kairos, &cancel));
    let task = {
        let cancel = cancel.clone();
        tokio::spawn(async move { engine.run(cancel).await })
    };
    tracing::info!(node = %cfg.node_name(), db = %cfg.database()?.describe(), "worker started");
    signal.wait().await;
    tracing::info!("shutting down: draining running jobs");
    cancel.cancel();
    let _ = task.await;
    for t in side_tasks {
        let _ = t.await;
    }
    db.close().await;
    tracing::info!("stopped");
    Ok(())
}

/// Apply the database migrations.
pub async fn migrate(global: &GlobalArgs) -> CliResult {
    let cfg = global.load_config(None)?;
    let db = open_store(&cfg).await?;
    db.close().await;
    println!("database {} is up to date", cfg.database()?.describe());
    Ok(())
}
