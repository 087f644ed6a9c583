//! `kairos endpoint list|show|enable|rotate`: the webhook endpoints jobs post to, with their
//! disabled state, last failure and health, enabling one again after it was disabled (an HTTP
//! 410 or a failure streak), and rotating its secret — the CLI side of `GET /v1/endpoints`,
//! `GET /v1/endpoints/{id}`, `POST /v1/endpoints/{id}/enable` and
//! `POST /v1/endpoints/{id}/rotate`, on the database directly.

use crate::common::*;
use crate::remote::{Backend, seg};
use kairos_engine::ops::SecretRotation;
use kairos_server::routes::endpoints::{EndpointPage, EndpointView, RotatedView};

/// `kairos endpoint …`.
#[derive(Debug, clap::Subcommand)]
pub enum EndpointCmd {
    /// List endpoints by id, with `disabled_at`, the last failure and the failure streak.
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
    /// Show one endpoint with its health (never its secret).
    Show {
        /// The endpoint (`ep_…`).
        id: String,
    },
    /// Enable an endpoint again (its streak is reset); jobs skipped meanwhile stay skipped
    /// (`kairos job retry`).
    Enable {
        /// The endpoint (`ep_…`).
        id: String,
    },
    /// Rotate an endpoint's secret: a new one is generated and printed once; the current one
    /// keeps signing beside it for the window.
    Rotate {
        /// The endpoint (`ep_…`).
        id: String,
        /// How long the current secret keeps signing, in seconds (0 to 2592000; default
        /// 86400).
        #[arg(long)]
        window_secs: Option<i64>,
    },
}

/// Run an `endpoint` command.
pub async fn run(global: &GlobalArgs, cmd: EndpointCmd) -> CliResult {
    let read_only = matches!(cmd, EndpointCmd::List { .. } | EndpointCmd::Show { .. });
    let b = Backend::open(global, read_only).await?;
    let dash = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    match cmd {
        EndpointCmd::List {
            disabled,
            after,
            limit,
        } => {
            let rows: Vec<EndpointView> = match &b {
                Backend::Local(k) => {
                    let eps = k
                        .endpoint_list(after, disabled.then_some(true), Some(limit))
                        .await?;
                    let now = k.clock().now();
                    k.endpoint_statuses(eps, now)
                        .await?
                        .into_iter()
                        .map(|s| EndpointView::new(s, now))
                        .collect()
                }
                Backend::Remote(r) => {
                    let page: EndpointPage = r
                        .get(
                            "/v1/endpoints",
                            &[
                                ("disabled", disabled.then(|| "true".to_string())),
                                ("after", after),
                                ("limit", Some(limit.to_string())),
                            ],
                        )
                        .await?;
                    page.data
                }
            };
            if global.json {
                return print_json(&rows);
            }
            let table: Vec<Vec<String>> = rows
                .into_iter()
                .map(|r| {
                    vec![
                        r.id,
                        r.url,
                        dash(r.disabled_at),
                        r.health.consecutive_failures.to_string(),
                        dash(r.last_failure_at),
                        dash(r.last_failure),
                    ]
                })
                .collect();
            print_table(
                &[
                    "ID",
                    "URL",
                    "DISABLED",
                    "STREAK",
                    "LAST FAILURE AT",
                    "LAST FAILURE",
                ],
                &table,
            );
            Ok(())
        }
        EndpointCmd::Show { id } => {
            let ep: EndpointView = match &b {
                Backend::Local(k) => {
                    EndpointView::new(k.endpoint_status(&id).await?, k.clock().now())
                }
                Backend::Remote(r) => r.get(&format!("/v1/endpoints/{}", seg(&id)), &[]).await?,
            };
            if global.json {
                return print_json(&ep);
            }
            let h = &ep.health;
            let rate = h
                .failure_rate_24h
                .map(|r| format!("{:.1}%", r * 100.0))
                .unwrap_or_else(|| "-".into());
            for (k, v) in [
                ("id", ep.id.clone()),
                ("url", ep.url.clone()),
                ("created_at", ep.created_at.clone()),
                ("disabled_at", dash(ep.disabled_at.clone())),
                ("disabled_reason", dash(ep.disabled_reason.clone())),
                ("last_success_at", dash(h.last_success_at.clone())),
                ("last_failure_at", dash(h.last_failure_at.clone())),
                ("last_failure", dash(ep.last_failure.clone())),
                ("consecutive_failures", h.consecutive_failures.to_string()),
                ("failing_since", dash(h.failing_since.clone())),
                ("attempts_24h", h.attempts_24h.to_string()),
                ("failures_24h", h.failures_24h.to_string()),
                ("failure_rate_24h", rate),
                (
                    "previous_secret_expires_at",
                    dash(ep.previous_secret_expires_at.clone()),
                ),
            ] {
                println!("{k:<27} {}", crate::common::printable(&v));
            }
            Ok(())
        }
        EndpointCmd::Enable { id } => {
            let ep: EndpointView = match &b {
                Backend::Local(k) => {
                    k.endpoint_enable(&id).await?;
                    EndpointView::new(k.endpoint_status(&id).await?, k.clock().now())
                }
                Backend::Remote(r) => {
                    r.post(&format!("/v1/endpoints/{}/enable", seg(&id)), None::<&()>)
                        .await?
                }
            };
            if global.json {
                return print_json(&ep);
            }
            println!("enabled {}", ep.id);
            Ok(())
        }
        EndpointCmd::Rotate { id, window_secs } => {
            let view: RotatedView = match &b {
                Backend::Local(k) => {
                    let r = k
                        .endpoint_rotate(
                            &id,
                            SecretRotation {
                                secret: None,
                                window_secs,
                            },
                        )
                        .await?;
                    let now = k.clock().now();
                    let status = k.endpoint_statuses(vec![r.endpoint], now).await?;
                    let Some(s) = status.into_iter().next() else {
                        return Err(kairos_engine::OpsError::not_found("endpoint", &id).into());
                    };
                    RotatedView {
                        endpoint: EndpointView::new(s, now),
                        secret: r.generated_secret,
                    }
                }
                Backend::Remote(r) => {
                    let mut body = serde_json::json!({ "window_secs": window_secs });
                    strip_nulls(&mut body);
                    r.post(&format!("/v1/endpoints/{}/rotate", seg(&id)), Some(&body))
                        .await?
                }
            };
            if global.json {
                return print_json(&view);
            }
            println!("rotated {}", view.endpoint.id);
            println!(
                "new secret (shown once): {}",
                view.secret.unwrap_or_default()
            );
            println!(
                "the previous secret signs too until {}",
                dash(view.endpoint.previous_secret_expires_at)
            );
            Ok(())
        }
    }
}
