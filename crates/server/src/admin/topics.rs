//! Admin page for one topic: its A/B variants with their mails sent and what became of them
//! (delivered, opened, clicked, bounced, complained, with rates) — the table of
//! `GET /v1/topics/{name}/variant-stats`, built from the same rows.

use crate::AppState;
use crate::admin::session::Operator;
use crate::routes::topics::VariantStatsRow;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use kairos_engine::OpsErrorKind;
use minijinja::context;

/// A rate as a percentage with two decimals (bounce and complaint thresholds are fractions
/// of a percent), `—` when nothing was sent.
fn percent(r: Option<f64>) -> String {
    r.map(|r| format!("{:.2}%", r * 100.0))
        .unwrap_or_else(|| "—".into())
}

/// `GET /admin/topics/{name}`.
pub async fn show(
    op: Operator,
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> Response {
    let rows = match state.kairos.topic_variant_stats(&name).await {
        Ok(rows) => rows,
        Err(e) if matches!(e.kind(), OpsErrorKind::NotFound) => {
            let page = op
                .page(&state, "topic.html", context! { missing => name })
                .await;
            return (StatusCode::NOT_FOUND, page).into_response();
        }
        Err(e) => {
            tracing::error!(error = %e, "admin topic: store error");
            return op
                .page(
                    &state,
                    "topic.html",
                    context! { name, error => "The store could not be read; the server log has the reason." },
                )
                .await;
        }
    };
    let rows: Vec<_> = rows
        .into_iter()
        .map(|c| {
            let v = VariantStatsRow::from(c);
            context! {
                variant => v.variant, sent => v.sent,
                delivered => v.delivered, delivery_rate => percent(v.delivery_rate),
                opened => v.opened, open_rate => percent(v.open_rate),
                clicked => v.clicked, click_rate => percent(v.click_rate),
                bounced => v.bounced, bounce_rate => percent(v.bounce_rate),
                complained => v.complained, complaint_rate => percent(v.complaint_rate),
            }
        })
        .collect();
    op.page(&state, "topic.html", context! { name, rows }).await
}
