//! `/v1/endpoints`: the webhook endpoints jobs post to — list them with their disabled state,
//! last failure and health, show one, enable one again after it was disabled (an HTTP 410 or
//! a failure streak), and rotate its secret.
//!
//! An endpoint is the (URL, secret) pair of a webhook target; creating a job or schedule
//! with the same pair reuses its row. A disabled endpoint stays disabled when its pair is
//! given again — the job and schedule responses show its `disabled_at` — until it is enabled
//! here. The secret is never shown.

use crate::AppState;
use crate::problem::{ApiJson, ApiQuery, ApiResult, OptionalJson, Problem};
use crate::views::{ts, ts_opt};
use axum::extract::{Path, State};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use kairos_engine::ops::{EndpointStatus, SecretRotation};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// The routes (mounted under `/v1/endpoints`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(list))
        .route("/{id}", get(show))
        .route("/{id}/enable", post(enable))
        .route("/{id}/rotate", post(rotate))
        .route("/{id}/limits", put(limits))
}

/// A rate limit: deliveries per second, with a burst.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RateLimitView {
    /// Deliveries per second.
    pub per_second: u32,
    /// How many may go at once after a quiet spell.
    pub burst: u32,
}

/// An endpoint's limits (`PUT /v1/endpoints/{id}/limits` answers with them).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct LimitsView {
    /// Its rate limit; null: none.
    pub rate_limit: Option<RateLimitView>,
    /// Deliveries in flight at once; null: no limit.
    pub max_in_flight: Option<u32>,
}

impl LimitsView {
    fn new(l: &kairos_store::flow::EndpointLimits) -> Self {
        LimitsView {
            rate_limit: l.rate_limit.map(|r| RateLimitView {
                per_second: r.per_second,
                burst: r.burst,
            }),
            max_in_flight: l.max_in_flight,
        }
    }
}

/// Due deliveries waiting on an endpoint's limits (not attempts: they wait without one).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct WaitingView {
    /// Waiting for a token of the rate limit.
    pub rate_limit: i64,
    /// Waiting for one of the `max_in_flight` slots.
    pub in_flight: i64,
}

/// An endpoint's delivery health. Folded from the attempt log by a background service, so it
/// lags the sends by a few seconds (about 15 s by default; see docs/operations.md).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct EndpointHealthView {
    /// When a send last succeeded (RFC 3339), if one did.
    #[schema(format = DateTime)]
    pub last_success_at: Option<String>,
    /// When a send last failed (RFC 3339), if one did.
    #[schema(format = DateTime)]
    pub last_failure_at: Option<String>,
    /// Failed sends since the last success (or since it was enabled again).
    pub consecutive_failures: i64,
    /// When the current failure streak began; null when there is none.
    pub failing_since: Option<String>,
    /// Sends (succeeded or failed) in the last 24 h, by whole hours.
    pub attempts_24h: i64,
    /// Failed sends in the last 24 h.
    pub failures_24h: i64,
    /// `failures_24h / attempts_24h`; null without attempts.
    pub failure_rate_24h: Option<f64>,
}

/// A webhook endpoint (never its secret).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct EndpointView {
    /// `ep_…`.
    pub id: String,
    /// The URL posted to, a password in it and its query values masked
    /// (`https://user:***@host/path?token=***`).
    pub url: String,
    /// Created (RFC 3339).
    #[schema(format = DateTime)]
    pub created_at: String,
    /// When it was disabled (after HTTP 410 Gone); null while enabled. Jobs to a disabled
    /// endpoint are skipped with reason `endpoint_disabled`.
    #[schema(format = DateTime)]
    pub disabled_at: Option<String>,
    /// Why it was disabled.
    pub disabled_reason: Option<String>,
    /// When a send to it last failed (RFC 3339), if one did.
    #[schema(format = DateTime)]
    pub last_failure_at: Option<String>,
    /// What that failure was (`HTTP 500 …`, a connection error, …).
    pub last_failure: Option<String>,
    /// Its delivery health.
    pub health: EndpointHealthView,
    /// While a secret rotation window is open: when the previous secret stops signing
    /// (RFC 3339); null otherwise.
    #[schema(format = DateTime)]
    pub previous_secret_expires_at: Option<String>,
    /// Its rate limit (`PUT /v1/endpoints/{id}/limits`); null: none.
    pub rate_limit: Option<RateLimitView>,
    /// Its limit of deliveries in flight at once; null: none.
    pub max_in_flight: Option<u32>,
    /// Due deliveries waiting on those limits now.
    pub waiting: WaitingView,
}

impl EndpointView {
    /// The view of `s` at `now` (which decides whether a rotation window is open).
    pub fn new(s: EndpointStatus, now: DateTime<Utc>) -> Self {
        let rate = s.failure_rate_24h();
        let e = s.endpoint;
        let window_open = e.previous_secret_at(now).is_some();
        let limits = LimitsView::new(&s.limits);
        EndpointView {
            rate_limit: limits.rate_limit,
            max_in_flight: limits.max_in_flight,
            waiting: WaitingView {
                rate_limit: s.limits.waiting_rate_limit,
                in_flight: s.limits.waiting_in_flight,
            },
            health: EndpointHealthView {
                last_success_at: ts_opt(e.health.last_success_at),
                last_failure_at: ts_opt(e.last_failure_at),
                consecutive_failures: e.health.consecutive_failures,
                failing_since: ts_opt(e.health.failing_since),
                attempts_24h: s.attempts_24h,
                failures_24h: s.failures_24h,
                failure_rate_24h: rate,
            },
            previous_secret_expires_at: if window_open {
                ts_opt(e.previous_secret_expires_at)
            } else {
                None
            },
            id: e.id,
            url: kairos_core::text::mask_url(&e.url),
            created_at: ts(e.created_at),
            disabled_at: ts_opt(e.disabled_at),
            disabled_reason: e.disabled_reason,
            last_failure_at: ts_opt(e.last_failure_at),
            last_failure: e.last_failure,
        }
    }
}

/// The answer of a rotation: the endpoint, and the new secret when it was generated.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RotatedView {
    /// The endpoint after the rotation (`previous_secret_expires_at` is the window's end).
    pub endpoint: EndpointView,
    /// The generated `whsec_…` secret, shown this once; absent when the request gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// A page of endpoints.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
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

/// Webhook endpoints by id, with their disabled state, last failure and health.
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
    let now = state.kairos.clock().now();
    let data = state.kairos.endpoint_statuses(rows, now).await?;
    Ok(Json(EndpointPage {
        data: data
            .into_iter()
            .map(|s| EndpointView::new(s, now))
            .collect(),
        next_after,
    }))
}

/// One endpoint, with its health.
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
    let s = state.kairos.endpoint_status(&id).await?;
    Ok(Json(EndpointView::new(s, state.kairos.clock().now())))
}

/// Enable an endpoint again (after an HTTP 410 or a failure streak disabled it; its streak is
/// reset): later jobs to it are sent.
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
    state.kairos.endpoint_enable(&id).await?;
    let s = state.kairos.endpoint_status(&id).await?;
    Ok(Json(EndpointView::new(s, state.kairos.clock().now())))
}

/// Rotate an endpoint's secret. The new secret (given, or generated and returned once) signs
/// from now on; the previous one keeps signing beside it until `previous_secret_expires_at`
/// (`window_secs`, default one day): during the window `webhook-signature` carries both
/// (`v1,<new> v1,<old>`), after it only the new. The body is optional.
#[utoipa::path(operation_id = "endpoints_rotate", post, path = "/v1/endpoints/{id}/rotate", tag = "endpoints",
    request_body(content = Option<RotateBody>),
    params(("id" = String, Path, description = "Endpoint id (`ep_…`)")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Rotated", body = RotatedView),
        (status = 404, description = "No such endpoint", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "Another endpoint has this URL and secret", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The secret or the window is not valid; nothing changed", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn rotate(
    State(state): State<AppState>,
    Path(id): Path<String>,
    OptionalJson(body): OptionalJson<SecretRotation>,
) -> ApiResult<Json<RotatedView>> {
    let r = state
        .kairos
        .endpoint_rotate(&id, body.unwrap_or_default())
        .await?;
    let now = state.kairos.clock().now();
    let s = state
        .kairos
        .endpoint_statuses(vec![r.endpoint], now)
        .await?;
    let endpoint = s
        .into_iter()
        .next()
        .map(|s| EndpointView::new(s, now))
        .ok_or_else(|| kairos_engine::OpsError::not_found("endpoint", &id))?;
    Ok(Json(RotatedView {
        endpoint,
        secret: r.generated_secret,
    }))
}

/// Set an endpoint's limits: `{"rate_limit": {"per_second": 20, "burst": 20},
/// "max_in_flight": 4}`; a field left out means no limit of that kind (an empty body removes
/// both). A delivery over a limit waits, due again when it may go, without spending an
/// attempt or holding a handler slot; the limits hold across every node (see
/// docs/flow-control.md).
#[utoipa::path(operation_id = "endpoints_limits", put, path = "/v1/endpoints/{id}/limits", tag = "endpoints",
    request_body = EndpointLimitsBody,
    params(("id" = String, Path, description = "Endpoint id (`ep_…`)")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The endpoint's limits now", body = LimitsView),
        (status = 404, description = "No such endpoint", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A limit is not valid; nothing changed", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn limits(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<EndpointLimitsBody>,
) -> ApiResult<Json<LimitsView>> {
    let l = state.kairos.endpoint_limits_set(&id, body).await?;
    Ok(Json(LimitsView::new(&l)))
}

/// The body of `PUT /v1/endpoints/{id}/limits`, as the document names it.
pub use kairos_engine::ops::EndpointLimitsBody;

/// The body of a rotation, as the document names it.
pub use kairos_engine::ops::SecretRotation as RotateBody;
