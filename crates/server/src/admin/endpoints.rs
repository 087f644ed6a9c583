//! Admin page for webhook endpoints: each with its health (last success and failure, the
//! failure streak, the 24 h failure rate) and disabled state, and a button to enable a
//! disabled one again (which resets its streak). Never the secret; the URL is shown as the
//! API shows it.

use crate::AppState;
use crate::admin::session::{Operator, csrf_refused};
use crate::routes::endpoints::EndpointView;
use axum::extract::{Form, Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use minijinja::context;
use serde::Deserialize;

/// Most endpoints on the page (by id).
const PAGE: i64 = 500;

/// A notice after an action.
#[derive(Debug, Default, Deserialize)]
pub struct Notice {
    #[serde(default)]
    notice: Option<String>,
}

/// `GET /admin/endpoints`.
pub async fn list(
    op: Operator,
    State(state): State<AppState>,
    Query(n): Query<Notice>,
) -> Response {
    let now = state.kairos.clock().now();
    let rows = match state.kairos.endpoint_list(None, None, Some(PAGE)).await {
        Ok(eps) => state.kairos.endpoint_statuses(eps, now).await,
        Err(e) => Err(e),
    };
    let rows = match rows {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(error = %e, "admin endpoints: store error");
            return op
                .page(
                    &state,
                    "endpoints.html",
                    context! { error => "The store could not be read; the server log has the reason." },
                )
                .await;
        }
    };
    let rows: Vec<_> = rows.into_iter().map(|s| endpoint_row(s, now)).collect();
    let notice = match n.notice.as_deref() {
        Some("enabled") => Some("Enabled: later jobs to it are sent again."),
        Some("refused") => Some("That action was refused; the endpoint may not exist."),
        _ => None,
    };
    op.page(&state, "endpoints.html", context! { rows, notice })
        .await
}

/// One endpoint as the pages show it: masked URL, state, health (never the secret).
pub fn endpoint_row(
    s: kairos_engine::ops::EndpointStatus,
    now: chrono::DateTime<chrono::Utc>,
) -> minijinja::Value {
    let dash = |v: Option<String>| v.unwrap_or_else(|| "—".into());
    let v = EndpointView::new(s, now);
    let h = v.health;
    context! {
        id => v.id, url => v.url,
        disabled => v.disabled_at.is_some(),
        disabled_at => dash(v.disabled_at), disabled_reason => dash(v.disabled_reason),
        last_success_at => dash(h.last_success_at), last_failure_at => dash(h.last_failure_at),
        last_failure => v.last_failure.unwrap_or_default(),
        streak => h.consecutive_failures, failing_since => dash(h.failing_since),
        attempts_24h => h.attempts_24h, failures_24h => h.failures_24h,
        rate_24h => h.failure_rate_24h.map(|r| format!("{:.1}%", r * 100.0)).unwrap_or_else(|| "—".into()),
        rotation_until => v.previous_secret_expires_at,
    }
}

/// `POST /admin/endpoints/{id}/enable`.
pub async fn enable(
    op: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
    Form(form): Form<crate::admin::endpoint_page::PageForm>,
) -> Response {
    if !op.csrf_ok(&form.csrf) {
        return csrf_refused();
    }
    let back = form.back(&id);
    let to = match state.kairos.endpoint_enable(&id).await {
        Ok(_) => format!("{back}?notice=enabled"),
        Err(_) => format!("{back}?notice=refused"),
    };
    Redirect::to(&to).into_response()
}
