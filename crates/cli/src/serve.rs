//! `kairos serve` (API + engine), `kairos worker` (engine only) and `kairos migrate`.

use crate::common::{CliError, CliResult, GlobalArgs, open_store};
use kairos_app::config::{Config, LogFormat, TOKEN_FILE, TokenSource};
use kairos_app::node::cluster_token;
use kairos_server::otel::Tracing;
use kairos_server::{ApiToken, AppState, app};
use std::io::IsTerminal;
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
/// `log_format = json`. With `KAIROS_OTLP_ENDPOINT` set, also tracing: the returned
/// [`Tracing`] is shut down once the node has stopped, so the last spans are exported.
pub fn init_logging(cfg: &Config) -> Result<Option<Tracing>, CliError> {
    use tracing_subscriber::Layer;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let otel = Tracing::from_config(cfg)?;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx::postgres::notice=warn"));
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let fmt = match cfg.log_format {
        LogFormat::Json => fmt.json().boxed(),
        LogFormat::Text => fmt.with_ansi(std::io::stderr().is_terminal()).boxed(),
    };
    let _ = tracing_subscriber::registry()
        .with(fmt.with_filter(Tracing::hide_from_logs(filter)))
        .with(otel.as_ref().map(|t| t.layer()))
        .try_init();
    Ok(otel)
}

/// Export the last spans, if tracing is on.
async fn shutdown_tracing(otel: Option<Tracing>) {
    if let Some(t) = otel {
        t.shutdown().await;
    }
}

/// Warn when the existing data directory is open to other users (kairos creates it 0700).
fn warn_open_data_dir(cfg: &Config) {
    if let Some(w) = kairos_app::config::open_dir_warning(&cfg.data_dir) {
        tracing::warn!("{w}");
    }
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
    let otel = init_logging(&cfg)?;
    warn_open_data_dir(&cfg);
    // The port first: a node that cannot listen fails before it writes anything (token,
    // key, database).
    let listener = tokio::net::TcpListener::bind(&cfg.listen)
        .await
        .map_err(|e| CliError::runtime(&format!("could not listen on {}", cfg.listen), &e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| CliError::runtime("could not read the bound address", &e))?;
    let node = crate::common::node_builder(&cfg)?.build().await?;
    let (token, source) = match cluster_token(&cfg, node.db(), node.kairos().clock().as_ref()).await
    {
        Ok(t) => t,
        Err(e) => {
            node.close().await;
            return Err(e.into());
        }
    };
    let path = cfg.data_dir.join(TOKEN_FILE);
    // The path, never the token: stderr ends up in journals and CI logs.
    match source {
        TokenSource::Generated => eprintln!(
            "kairos: generated an API token and saved it in {} (mode 0600); \
             send it as `Authorization: Bearer <token>`.",
            path.display()
        ),
        TokenSource::Cluster => eprintln!(
            "kairos: using the cluster's API token (stored in the database by the first \
             node) and saved it in {} (mode 0600).",
            path.display()
        ),
        TokenSource::Config | TokenSource::File => {}
    }
    let state = AppState::for_node(&node, ApiToken::new(token))?;
    let cancel = CancellationToken::new();
    let running = node.start(&cancel);
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
    running.join().await;
    node.close().await;
    shutdown_tracing(otel).await;
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
    let otel = init_logging(&cfg)?;
    warn_open_data_dir(&cfg);
    let node = crate::common::node_builder(&cfg)?.build().await?;
    let cancel = CancellationToken::new();
    let running = node.start(&cancel);
    tracing::info!(node = %cfg.node_name(), db = %cfg.database()?.describe(), "worker started");
    signal.wait().await;
    tracing::info!("shutting down: draining running jobs");
    cancel.cancel();
    running.join().await;
    node.close().await;
    shutdown_tracing(otel).await;
    tracing::info!("stopped");
    Ok(())
}

/// Apply the database migrations.
/// `kairos migrate` options.
#[derive(Debug, clap::Args)]
pub struct MigrateArgs {
    /// After applying, list every migration: version, name and when it was applied.
    #[arg(long)]
    pub list: bool,
}

/// `kairos migrate [--list]`: apply pending migrations (sqlx's migrator: checksums checked,
/// under its lock), say which ran (or that none had to), then list them all if asked.
pub async fn migrate(global: &GlobalArgs, args: &MigrateArgs) -> CliResult {
    let cfg = global.load_config(None)?;
    let db = open_store(&cfg).await?;
    let ran: Vec<_> = db.migrated().to_vec();
    let list = if args.list {
        let l = kairos_store::NodeStore::migration_list(&*db.store()).await;
        Some(l.map_err(|e| CliError::runtime("listing migrations", &e)))
    } else {
        None
    };
    db.close().await;
    let database = cfg.database()?.describe();
    let version = kairos_store::sql::migrate::MIGRATIONS
        .last()
        .map_or(0, |m| m.version);
    if global.json {
        let migrations = match list {
            Some(l) => Some(
                l?.into_iter()
                    .map(|m| {
                        serde_json::json!({
                            "version": m.version, "name": m.name, "applied_at": m.applied_at,
                        })
                    })
                    .collect::<Vec<_>>(),
            ),
            None => None,
        };
        let applied: Vec<_> = ran
            .iter()
            .map(|m| serde_json::json!({"version": m.version, "name": m.name}))
            .collect();
        let mut out = serde_json::json!({
            "database": database, "up_to_date": true, "version": version,
            "applied": applied, "migrations": migrations,
        });
        crate::common::strip_nulls(&mut out);
        return crate::common::print_json(&out);
    }
    if ran.is_empty() {
        println!("database {database} is up to date (schema version {version}; nothing to apply)");
    } else {
        let names: Vec<String> = ran
            .iter()
            .map(|m| format!("{:04} {}", m.version, m.name))
            .collect();
        println!(
            "applied {} migration{}: {}",
            ran.len(),
            if ran.len() == 1 { "" } else { "s" },
            names.join(", ")
        );
        println!("database {database} is up to date (schema version {version})");
    }
    if let Some(list) = list {
        let rows: Vec<Vec<String>> = list?
            .into_iter()
            .map(|m| {
                vec![
                    format!("{:04}", m.version),
                    m.name,
                    m.applied_at.unwrap_or_else(|| "pending".into()),
                ]
            })
            .collect();
        crate::common::print_table(&["VERSION", "NAME", "APPLIED"], &rows);
    }
    Ok(())
}
