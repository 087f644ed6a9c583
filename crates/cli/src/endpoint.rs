//! `kairos endpoint list|enable`: the webhook endpoints jobs post to, with their disabled
//! state and last failure, and enabling one again after an HTTP 410 disabled it — the CLI
//! side of `GET /v1/endpoints` and `POST /v1/endpoints/{id}/enable`, on the database directly.

use crate::common::*;
use kairos_server::routes::endpoints::EndpointView;

/// `kairos endpoint …`.
#[derive(Debug, clap::Subcommand)]
pub enum EndpointCmd {
    /// List endpoints by id, with `disabled_at` and the last failure.
    List {
        /// Only disabled endpoints.
        #[arg(long)]
        disabled: bool,
        /// Only ids after this one.
        #[arg(long)]
        after: Option<String>,
        /// Page size, 1 to 1000.
        #[arg(long, default_value_t = 100)]
        limit: i64,
    },
    /// Enable an endpoint again; jobs skipped meanwhile stay skipped (`kairos job retry`).
    Enable {
        /// The endpoint (`ep_…`).
        id: String,
    },
}

/// Run an `endpoint` command.
pub async fn run(global: &GlobalArgs, cmd: EndpointCmd) -> CliResult {
    let cfg = global.load_config(None)?;
    let k = open_kairos(&cfg).await?;
    match cmd {
        EndpointCmd::List {
            disabled,
            after,
            limit,
        } => {
            let rows: Vec<EndpointView> = k
                .endpoint_list(after, disabled.then_some(true), Some(limit))
                .await?
                .into_iter()
                .map(Into::into)
                .collect();
            if global.json {
                return print_json(&rows);
            }
            let dash = |v: Option<String>| v.unwrap_or_else(|| "-".into());
            let table: Vec<Vec<String>> = rows
                .into_iter()
                .map(|r| {
                    vec![
                        r.id,
                        r.url,
                        dash(r.disabled_at),
                        dash(r.last_failure_at),
                        dash(r.last_failure),
                    ]
                })
                .collect();
            print_table(
                &["ID", "URL", "DISABLED", "LAST FAILURE AT", "LAST FAILURE"],
                &table,
            );
            Ok(())
        }
        EndpointCmd::Enable { id } => {
            let ep = EndpointView::from(k.endpoint_enable(&id).await?);
            if global.json {
                return print_json(&ep);
            }
            println!("enabled {}", ep.id);
            Ok(())
        }
    }
}
