//! `GET /healthz` (the process answers) and `GET /readyz` (not in maintenance, the database
//! answers and its schema is current). No token.

use crate::AppState;
use crate::problem::Problem;
use crate::views::Status;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Json, Router, routing::get};

/// The routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
}

/// Liveness: the process answers.
#[utoipa::path(operation_id = "health_healthz", get, path = "/healthz", tag = "health",
    responses((status = 200, description = "The process is up", body = Status)))]
pub async fn healthz() -> Json<Status> {
    Json(Status {
        status: "ok".into(),
    })
}

/// Readiness: not in maintenance mode, the database answers, and its schema is
/// current (no embedded migration is pending — a node of a newer version waits until
/// `kairos migrate` ran).
#[utoipa::path(operation_id = "health_readyz", get, path = "/readyz", tag = "health",
    responses(
        (status = 200, description = "Ready: the database answers and is migrated", body = Status),
        (status = 503, description = "In maintenance mode, the database does not answer, or migrations are pending",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn readyz(State(state): State<AppState>) -> Response {
    if state.kairos.maintenance().is_on() {
        return unavailable("in maintenance mode: `kairos maintenance off` ends it");
    }
    let store = state.kairos.store();
    let probe =
        tokio::time::timeout(std::time::Duration::from_secs(5), store.migration_pending()).await;
    match probe {
        Ok(Ok(pending)) if pending.is_empty() => (
            StatusCode::OK,
            Json(Status {
                status: "ok".into(),
            }),
        )
            .into_response(),
        Ok(Ok(pending)) => {
            let versions: Vec<String> = pending.iter().map(i64::to_string).collect();
            tracing::warn!(pending = %versions.join(","), "not ready: migrations pending");
            unavailable(&format!(
                "database migrations pending: {}; run `kairos migrate`",
                versions.join(", ")
            ))
        }
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readiness probe failed");
            unavailable("the database does not answer")
        }
        Err(_) => {
            tracing::warn!("readiness probe timed out");
            unavailable("the database does not answer")
        }
    }
}

fn unavailable(detail: &str) -> Response {
    Problem::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "unavailable",
        "Service unavailable",
        detail,
    )
    .into_response()
}
