//! `kairos suppression list|add|remove|export`: the suppression list, on the
//! database directly. Addresses are personal data: they go to stdout for the operator who
//! asked, never to logs.

use crate::common::*;
use kairos_engine::ops::{NewSuppression, RemoveSuppression};
use kairos_server::routes::suppressions::SuppressionView;
use std::io::Write;

/// Rows per page while exporting.
const EXPORT_PAGE: i64 = 1000;

/// `kairos suppression …`.
#[derive(Debug, clap::Subcommand)]
pub enum SuppressionCmd {
    /// List suppressed addresses, by address.
    List {
        /// Only addresses after this one.
        #[arg(long)]
        after: Option<String>,
        /// Page size, 1 to 1000.
        #[arg(long, default_value_t = 100)]
        limit: i64,
    },
    /// Suppress an address; its subscriptions are disabled.
    Add {
        /// The address.
        email: String,
        /// Why.
        #[arg(long, default_value = "manual")]
        reason: String,
    },
    /// Take an address off the list (its subscriptions stay disabled).
    Remove {
        /// The address.
        email: String,
        /// Why (recorded in the suppression log).
        #[arg(long)]
        reason: String,
    },
    /// Write the whole list to stdout.
    Export {
        /// `csv` (email,reason,event_id,created_at) or `jsonl` (one JSON object a line).
        #[arg(long, default_value = "csv", value_parser = ["csv", "jsonl"])]
        format: String,
    },
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Run a `suppression` command.
pub async fn run(global: &GlobalArgs, cmd: SuppressionCmd) -> CliResult {
    let cfg = global.load_config(None)?;
    let read_only = matches!(
        cmd,
        SuppressionCmd::List { .. } | SuppressionCmd::Export { .. }
    );
    let k = open_kairos_read(&cfg, read_only).await?;
    match cmd {
        SuppressionCmd::List { after, limit } => {
            let rows: Vec<SuppressionView> = k
                .suppression_list(after, Some(limit))
                .await?
                .into_iter()
                .map(Into::into)
                .collect();
            if global.json {
                return print_json(&rows);
            }
            let table: Vec<Vec<String>> = rows
                .into_iter()
                .map(|r| {
                    vec![
                        r.email.unwrap_or_else(|| "(erased)".into()),
                        r.reason,
                        r.event_id.unwrap_or_else(|| "-".into()),
                        r.created_at,
                    ]
                })
                .collect();
            print_table(&["EMAIL", "REASON", "EVENT", "CREATED"], &table);
            Ok(())
        }
        SuppressionCmd::Add { email, reason } => {
            let (s, applied) = k
                .suppression_add(NewSuppression {
                    email,
                    reason: Some(reason),
                })
                .await?;
            if global.json {
                return print_json(&SuppressionView::from(s));
            }
            if applied.created {
                println!(
                    "suppressed; {} subscription(s) disabled",
                    applied.subscriptions_disabled
                );
            } else {
                println!(
                    "suppressed already ({}); {} subscription(s) disabled",
                    crate::common::printable(&s.reason),
                    applied.subscriptions_disabled
                );
            }
            Ok(())
        }
        SuppressionCmd::Remove { email, reason } => {
            k.suppression_remove(
                &email,
                RemoveSuppression {
                    reason: Some(reason),
                },
            )
            .await?;
            println!("removed");
            Ok(())
        }
        SuppressionCmd::Export { format } => {
            let mut out = std::io::stdout().lock();
            let io = |e: std::io::Error| CliError::runtime("could not write the export", &e);
            if format == "csv" {
                writeln!(out, "email,reason,event_id,created_at").map_err(io)?;
            }
            let mut after = None;
            loop {
                let page = k.suppression_list(after.clone(), Some(EXPORT_PAGE)).await?;
                let full = page.len() as i64 == EXPORT_PAGE;
                after = page.last().map(|s| s.address.clone());
                for s in page {
                    let v = SuppressionView::from(s);
                    if format == "csv" {
                        writeln!(
                            out,
                            "{},{},{},{}",
                            csv_field(v.email.as_deref().unwrap_or("(erased)")),
                            csv_field(&v.reason),
                            csv_field(v.event_id.as_deref().unwrap_or_default()),
                            v.created_at
                        )
                        .map_err(io)?;
                    } else {
                        let line = serde_json::to_string(&v)
                            .map_err(|e| CliError::runtime("could not write JSON", &e))?;
                        writeln!(out, "{line}").map_err(io)?;
                    }
                }
                // Pages are keyset by address, so this ends after at most N / page + 1 reads.
                if !full {
                    break;
                }
            }
            Ok(())
        }
    }
}
