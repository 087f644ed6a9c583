//! `kairos slo`: the SLO report in the terminal — the same checks the monitor runs and
//! `GET /v1/slo` shows.
//!
//! A warning is not a failure: the exit status is 0 with or without warnings, so a CI
//! job or a cron wrapper does not go red on a breach. It is 2 when the store cannot be
//! reached (or the configuration is wrong), 1 for other errors.
//!
//! `kairos slo ack <id>` acknowledges a warning (`POST /v1/slo/alerts/{id}/ack`): the id is
//! the alert's key, `check:subject`, as the report's CHECK and SUBJECT columns show it.

use crate::common::{CliError, CliResult, GlobalArgs, chain, open_store, print_json, print_table};
use kairos_app::monitoring::monitor_config;
use kairos_core::{Clock, SystemClock};
use kairos_engine::monitor::{AckError, Monitor, ack};
use kairos_server::routes::slo::{AlertView, SloView};
use std::sync::Arc;
use std::time::Duration;

/// How long to wait for the database before saying it cannot be reached.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

fn unreachable(detail: String) -> CliError {
    CliError::usage("database", format!("cannot reach the store: {detail}"))
}

/// `kairos slo [ack <id>]`.
#[derive(Debug, clap::Args)]
pub struct SloArgs {
    /// Without one: print the report.
    #[command(subcommand)]
    cmd: Option<SloCmd>,
}

/// What `kairos slo` can do besides the report.
#[derive(Debug, clap::Subcommand)]
enum SloCmd {
    /// Acknowledge a dead-run or missing-artifact warning: it recovers, and what it warned
    /// about does not warn again.
    Ack {
        /// The alert's id: `check:subject` (e.g. `dead_runs:sch_…`).
        id: String,
    },
}

/// Print the report (a table, or JSON with `--json`), or acknowledge an alert.
pub async fn run(global: &GlobalArgs, args: SloArgs) -> CliResult {
    if let Some(r) = crate::remote::Remote::from_global(global)? {
        return match args.cmd {
            Some(SloCmd::Ack { id }) => {
                let path = format!("/v1/slo/alerts/{}/ack", crate::remote::seg(&id));
                print_ack(&r.post(&path, None::<&()>).await?, global.json)
            }
            None => print_report(&r.get("/v1/slo", &[]).await?, global.json),
        };
    }
    let cfg = global.load_config(None)?;
    let mcfg = monitor_config(&cfg)?;
    if args.cmd.is_none() {
        crate::common::require_database(&cfg)?;
    }
    let db = match tokio::time::timeout(CONNECT_TIMEOUT, open_store(&cfg)).await {
        Ok(Ok(db)) => db,
        Ok(Err(e)) => return Err(unreachable(e.to_string())),
        Err(_) => {
            return Err(unreachable(format!(
                "no answer within {}s",
                CONNECT_TIMEOUT.as_secs()
            )));
        }
    };
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    if let Some(SloCmd::Ack { id }) = args.cmd {
        let acked = ack(db.store().as_ref(), &id, clock.now()).await;
        db.close().await;
        let view = AlertView::from(acked.map_err(|e| match e {
            AckError::Store(e) => unreachable(chain(&e)),
            e => CliError::usage("id", e.to_string()),
        })?);
        return print_ack(&view, global.json);
    }
    let monitor = Monitor::new(mcfg, db.store())?;
    let report = monitor.report(clock.now()).await;
    db.close().await;
    let report = report.map_err(|e| unreachable(chain(&e)))?;
    print_report(&SloView::from(&report), global.json)
}

fn print_ack(view: &AlertView, json: bool) -> CliResult {
    if json {
        return print_json(view);
    }
    println!(
        "{} {}: {}",
        view.id,
        view.status,
        crate::common::printable(&view.message)
    );
    Ok(())
}

fn print_report(view: &SloView, json: bool) -> CliResult {
    if json {
        return print_json(view);
    }
    let rows: Vec<Vec<String>> = view
        .checks
        .iter()
        .map(|c| {
            vec![
                c.check.clone(),
                c.subject.clone().unwrap_or_else(|| "-".into()),
                c.status.clone(),
                c.since.clone().unwrap_or_else(|| "-".into()),
                c.message.clone(),
            ]
        })
        .collect();
    print_table(&["CHECK", "SUBJECT", "STATUS", "SINCE", "MESSAGE"], &rows);
    println!();
    println!(
        "last monitor pass: {}",
        view.monitor_last_pass_at.as_deref().unwrap_or("never")
    );
    if view.warnings > 0 {
        println!(
            "{} warning(s) at {} — warnings, not failures (exit status 0)",
            view.warnings, view.at
        );
    } else {
        println!("all checks ok at {}", view.at);
    }
    Ok(())
}
