//! `kairos maintenance on|off|status`: a setting stored in the database, so running
//! nodes follow it within their poll interval — the engine stops claiming and `/v1/*`
//! answers 503, while `/hooks/*`, `/unsubscribe` and `/healthz` keep working.

use crate::common::*;
use kairos_engine::ops::MaintenanceStatus;

/// `kairos maintenance …`.
#[derive(Debug, clap::Subcommand)]
pub enum MaintenanceCmd {
    /// Pause the engine and the API on every node.
    On,
    /// End maintenance (unless KAIROS_MAINTENANCE forces it).
    Off,
    /// Show whether maintenance mode is on.
    Status,
}

fn print(global: &GlobalArgs, s: &MaintenanceStatus) -> CliResult {
    if global.json {
        return print_json(s);
    }
    let state = if s.on { "on" } else { "off" };
    let mut why = Vec::new();
    if s.stored {
        match s.since {
            Some(t) => why.push(format!("stored since {}", t.to_rfc3339())),
            None => why.push("stored".to_string()),
        }
    }
    if s.forced {
        why.push("forced by KAIROS_MAINTENANCE".to_string());
    }
    if why.is_empty() {
        println!("maintenance: {state}");
    } else {
        println!("maintenance: {state} ({})", why.join(", "));
    }
    Ok(())
}

/// Run a `maintenance` command.
pub async fn run(global: &GlobalArgs, cmd: MaintenanceCmd) -> CliResult {
    let cfg = global.load_config(None)?;
    let k = open_kairos_read(&cfg, matches!(cmd, MaintenanceCmd::Status))
        .await?
        .with_maintenance(kairos_engine::maintenance::Maintenance::new(
            cfg.maintenance,
        ));
    let s = match cmd {
        MaintenanceCmd::On => k.maintenance_set(true).await?,
        MaintenanceCmd::Off => k.maintenance_set(false).await?,
        MaintenanceCmd::Status => k.maintenance_status().await?,
    };
    print(global, &s)
}
