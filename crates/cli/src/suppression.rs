//! `kairos suppression list|add|remove|export`: the suppression list, on the
//! database directly. Addresses are personal data: they go to stdout for the operator who
//! asked, never to logs.

use crate::common::*;
use crate::remote::{Backend, seg};
use kairos_engine::ops::{NewSuppression, RemoveSuppression};
use kairos_server::routes::suppressions::{SuppressionAdded, SuppressionPage, SuppressionView};
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
    let read_only = matches!(
        cmd,
        SuppressionCmd::List { .. } | SuppressionCmd::Export { .. }
    );
    let b = Backend::open(global, read_only).await?;
    match cmd {
        SuppressionCmd::List { after, limit } => {
            let (rows, _) = page(&b, after, limit).await?;
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
            let added: SuppressionAdded = match &b {
                Backend::Local(k) => {
                    let (s, applied) = k
                        .suppression_add(NewSuppression {
                            email,
                            reason: Some(reason),
                        })
                        .await?;
                    SuppressionAdded {
                        suppression: s.into(),
                        created: applied.created,
                        subscriptions_disabled: applied.subscriptions_disabled,
                    }
                }
                Backend::Remote(r) => {
                    r.post(
                        "/v1/suppressions",
                        Some(&serde_json::json!({ "email": email, "reason": reason })),
                    )
                    .await?
                }
            };
            if global.json {
                return print_json(&added.suppression);
            }
            if added.created {
                println!(
                    "suppressed; {} subscription(s) disabled",
                    added.subscriptions_disabled
                );
            } else {
                println!(
                    "suppressed already ({}); {} subscription(s) disabled",
                    crate::common::printable(&added.suppression.reason),
                    added.subscriptions_disabled
                );
            }
            Ok(())
        }
        SuppressionCmd::Remove { email, reason } => {
            match &b {
                Backend::Local(k) => {
                    k.suppression_remove(
                        &email,
                        RemoveSuppression {
                            reason: Some(reason),
                        },
                    )
                    .await?;
                }
                Backend::Remote(r) => {
                    r.delete(
                        &format!("/v1/suppressions/{}", seg(&email)),
                        &[("reason", Some(reason))],
                    )
                    .await?;
                }
            }
            if global.json {
                return print_json(&serde_json::json!({ "removed": email }));
            }
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
                let (page, next) = page(&b, after.clone(), EXPORT_PAGE).await?;
                let full = page.len() as i64 == EXPORT_PAGE && next.is_some();
                after = next;
                for v in page {
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

/// One page of suppressions by address, and the `after` of the next page.
async fn page(
    b: &Backend,
    after: Option<String>,
    limit: i64,
) -> CliResult<(Vec<SuppressionView>, Option<String>)> {
    match b {
        Backend::Local(k) => {
            let list = k.suppression_list(after, Some(limit)).await?;
            let next = list.last().map(|s| s.address.clone());
            Ok((list.into_iter().map(Into::into).collect(), next))
        }
        Backend::Remote(r) => {
            let p: SuppressionPage = r
                .get(
                    "/v1/suppressions",
                    &[("after", after), ("limit", Some(limit.to_string()))],
                )
                .await?;
            Ok((p.data, p.next_after))
        }
    }
}
