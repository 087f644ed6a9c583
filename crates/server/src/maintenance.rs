//! Maintenance mode in the API: every `/v1/*` request is answered 503 with
//! `Retry-After` (problem+json) while the node's flag is on. `/hooks/*`, `/unsubscribe`,
//! `/healthz` are not behind this layer: provider events keep being stored.

use crate::AppState;
use crate::problem::Problem;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// Seconds a client is told to wait during maintenance.
pub const MAINTENANCE_RETRY_AFTER_SECS: u64 = 60;

/// The layer's function (`axum::middleware::from_fn_with_state`).
pub async fn guard(State(state): State<AppState>, req: Request, next: Next) -> Response {
    if !state.kairos.maintenance().is_on() {
        return next.run(req).await;
    }
    let mut res = Problem::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "maintenance",
        "Maintenance",
        "kairos is in maintenance mode; the API is back when it ends (inbound webhooks are still received)",
    )
    .into_response();
    res.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(MAINTENANCE_RETRY_AFTER_SECS),
    );
    res
}
