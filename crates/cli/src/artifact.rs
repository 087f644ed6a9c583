//! `kairos artifact list|show`: the products of periodic jobs (a day's digest), as
//! `GET /v1/artifacts` and `GET /v1/artifacts/{name}/{period}` show them, on the database or
//! through `--server`.

use crate::common::*;
use crate::remote::{Backend, seg};
use kairos_server::routes::artifacts::{ArtifactList, ArtifactSummary, ArtifactView};

/// `kairos artifact …`.
#[derive(Debug, clap::Subcommand)]
pub enum ArtifactCmd {
    /// List artifacts, newest period first (without their content).
    List {
        /// Only artifacts of this name.
        #[arg(long)]
        name: Option<String>,
        /// Only periods before this key (the previous page's last period).
        #[arg(long)]
        before: Option<String>,
        /// Page size, 1 to 1000.
        #[arg(long, default_value_t = 100)]
        limit: i64,
    },
    /// Show one artifact with its content.
    Show {
        /// The artifact's name.
        name: String,
        /// Its period key (`2026-10-20`).
        period: String,
    },
}

/// Run an `artifact` command (both only read).
pub async fn run(global: &GlobalArgs, cmd: ArtifactCmd) -> CliResult {
    let b = Backend::open(global, true).await?;
    match cmd {
        ArtifactCmd::List {
            name,
            before,
            limit,
        } => {
            let list: ArtifactList = match &b {
                Backend::Local(k) => ArtifactList {
                    data: k
                        .artifact_list(name.as_deref(), before.as_deref(), Some(limit))
                        .await?
                        .iter()
                        .map(ArtifactSummary::from)
                        .collect(),
                },
                Backend::Remote(r) => {
                    r.get(
                        "/v1/artifacts",
                        &[
                            ("name", name),
                            ("before", before),
                            ("limit", Some(limit.to_string())),
                        ],
                    )
                    .await?
                }
            };
            if global.json {
                return print_json(&list);
            }
            let rows: Vec<Vec<String>> = list
                .data
                .iter()
                .map(|a| {
                    vec![
                        a.name.clone(),
                        a.period.clone(),
                        a.created_at.clone(),
                        cell(&a.job_id),
                        cell(&a.schedule_id),
                    ]
                })
                .collect();
            print_table(&["NAME", "PERIOD", "CREATED", "JOB", "SCHEDULE"], &rows);
            Ok(())
        }
        ArtifactCmd::Show { name, period } => {
            let a: ArtifactView = match &b {
                Backend::Local(k) => ArtifactView::from(&k.artifact_get(&name, &period).await?),
                Backend::Remote(r) => {
                    r.get(
                        &format!("/v1/artifacts/{}/{}", seg(&name), seg(&period)),
                        &[],
                    )
                    .await?
                }
            };
            if global.json {
                return print_json(&a);
            }
            print_fields(&[
                ("name", a.name.clone()),
                ("period", a.period.clone()),
                ("created_at", a.created_at.clone()),
                ("job_id", cell(&a.job_id)),
                ("schedule_id", cell(&a.schedule_id)),
            ]);
            println!();
            println!("{}", printable(&a.content));
            Ok(())
        }
    }
}
