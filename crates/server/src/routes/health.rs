//! `GET /healthz` (the process answers) and `GET /readyz` (the database answers). No token.

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
#[utoipa::path(get, path = "/healthz", tag = "health",
    responses((status = 200, description = "The process is up", body = Status)))]
pub async fn healthz() -> Json<Status> {
    Json(Status {
        status: "ok".into(),
    })
}

/// Readiness: the database answers a query.
#[utoipa::path(get, path = "/readyz", tag = "health",
    responses(
        (status = 200, description = "The database answers", body = Status),
        (status = 503, description = "The database does not answer", body = Problem,
            content_type = "application/problem+json"),
    ))]
pub async fn readyz(State(state): State<AppState>) -> Response {
    let probe = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        state.kairos.store().job_next_run_at(),
    )
    .await;
    match probe {
        Ok(Ok(_)) => (
            StatusCode::OK,
            Json(Status {
                status: "ok".into(),
            }),
        )
            .into_response(),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readiness probe failed");
            unavailable()
        }
        Err(_) => {
            tracing::warn!("readiness probe timed out");
            unavailable()
        }
    }
}

fn unavailable() -> Response {
    Problem::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "unavailable",
        "Service unavailable",
        "the database does not answer",
    )
    .into_response()
}
