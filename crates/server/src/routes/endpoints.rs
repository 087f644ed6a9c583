//! `/v1/endpoints`: the webhook endpoints jobs post to — list them with their disabled state
//! and last failure, show one, and enable one again after an HTTP 410 disabled it.
//!
//! An endpoint is the (URL, secret) pair of a webhook target; creating a job or schedule
//! with the same pair reuses its row. A disabled endpoint stays disabled when its pair is
//! given again — the job and schedule responses show its `disabled_at` — until it is enabled
//! here. The secret is never shown.

use crate::AppState;
use crate::problem::{ApiQuery, ApiResult, Problem};
use crate::views::{ts, ts_opt};
use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Json, Router};
use kairos_store::Endpoint;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// The routes (mounted under `/v1/endpoints`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(list))
        .route("/{id}", get(show))
        .route("/{id}/enable", post(enable))
}

/// A webhook endpoint (never its secret).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EndpointView {
    /// `ep_…`.
    pub id: String,
    /// The URL posted to.
    pub url: String,
    /// Created (RFC 3339).
    pub created_at: String,
    /// When it was disabled (after HTTP 410 Gone); null while enabled. Jobs to a disabled
    /// endpoint are skipped with reason `endpoint_disabled`.
    pub disabled_at: Option<String>,
    /// Why it was disabled.
    pub disabled_reason: Option<String>,
    /// When a send to it last failed (RFC 3339), if one did.
    pub last_failure_at: Option<String>,
    /// What that failure was (`HTTP 500 …`, a connection error, …).
    pub last_failure: Option<String>,
}

impl From<Endpoint> for EndpointView {
    fn from(e: Endpoint) -> Self {
        EndpointView {
            id: e.id,
            url: e.url,
            created_at: ts(e.created_at),
            disabled_at: ts_opt(e.disabled_at),
            disabled_reason: e.disabled_reason,
            last_failure_at: ts_opt(e.last_failure_at),
            last_failure: e.last_failure,
        }
    }
}

/// A page of endpoints.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct EndpointPage {
    /// Endpoints by id.
    pub data: Vec<EndpointView>,
    /// Pass as `after` for the next page (null on the last page).
    pub next_after: Option<String>,
}

/// Filters and pagination of the list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// `true`: only disabled endpoints; `false`: only enabled ones.
    pub disabled: Option<bool>,
    /// Only ids after this one.
    pub after: Option<String>,
    /// At most this many (1–1000, default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
}

/// Webhook endpoints by id, with their disabled state and last failure.
#[utoipa::path(operation_id = "endpoints_list", get, path = "/v1/endpoints", tag = "endpoints", params(ListQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Endpoints", body = EndpointPage),
        (status = 422, description = "A filter is not valid", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> ApiResult<Json<EndpointPage>> {
    let limit = q.limit.unwrap_or(100);
    let rows = state
        .kairos
        .endpoint_list(q.after, q.disabled, Some(limit))
        .await?;
    let next_after = (rows.len() as i64 == limit)
        .then(|| rows.last().map(|r| r.id.clone()))
        .flatten();
    Ok(Json(EndpointPage {
        data: rows.into_iter().map(Into::into).collect(),
        next_after,
    }))
}

/// One endpoint.
#[utoipa::path(operation_id = "endpoints_show", get, path = "/v1/endpoints/{id}", tag = "endpoints",
    params(("id" = String, Path, description = "Endpoint id (`ep_…`)")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The endpoint", body = EndpointView),
        (status = 404, description = "No such endpoint", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn show(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<EndpointView>> {
    Ok(Json(state.kairos.endpoint_get(&id).await?.into()))
}

/// Enable an endpoint again (after an HTTP 410 disabled it): later jobs to it are sent.
/// Jobs skipped while it was disabled stay skipped (`POST /v1/jobs/{id}/retry` sends one).
/// Enabling an enabled endpoint changes nothing.
#[utoipa::path(operation_id = "endpoints_enable", post, path = "/v1/endpoints/{id}/enable", tag = "endpoints",
    params(("id" = String, Path, description = "Endpoint id (`ep_…`)")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The endpoint, enabled", body = EndpointView),
        (status = 404, description = "No such endpoint", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn enable(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<EndpointView>> {
    Ok(Json(state.kairos.endpoint_enable(&id).await?.into()))
}
