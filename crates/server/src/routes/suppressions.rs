//! `/v1/suppressions`: the addresses never mailed again — list (paginated by
//! address), add with a reason (cascading to the address's subscriptions), remove with a
//! reason (recorded in the suppression log). Addresses are personal data: they are returned
//! to the API's caller but never logged.

use crate::AppState;
use crate::problem::{ApiJson, ApiQuery, ApiResult, Problem};
use crate::views::ts;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{delete, get};
use axum::{Json, Router};
use kairos_engine::ops::{NewSuppression, RemoveSuppression};
use kairos_store::Suppression;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// The routes (mounted under `/v1/suppressions`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(list).post(add))
        .route("/{address}", delete(remove))
}

/// A suppressed address.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SuppressionView {
    /// The address (trimmed, lowercase); `null` for an erased address, which is stored only
    /// as a keyed hash.
    pub email: Option<String>,
    /// The address was erased with its recipient (`DELETE /v1/recipients/{id}`): it is still
    /// suppressed, and `DELETE /v1/suppressions/{address}` still finds it by the address.
    pub erased: bool,
    /// `hard_bounce`, `complaint`, `provider_suppressed`, `manual`, …
    pub reason: String,
    /// The inbound event (or the job of an SMTP 550) that caused it.
    pub event_id: Option<String>,
    /// When (RFC 3339).
    #[schema(format = DateTime)]
    pub created_at: String,
}

impl From<Suppression> for SuppressionView {
    fn from(s: Suppression) -> Self {
        SuppressionView {
            email: (!s.erased).then_some(s.address),
            erased: s.erased,
            reason: s.reason,
            event_id: s.source_event_id,
            created_at: ts(s.created_at),
        }
    }
}

/// A page of suppressions.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SuppressionPage {
    /// Suppressions by address.
    pub data: Vec<SuppressionView>,
    /// Pass as `after` for the next page (absent on the last page).
    pub next_after: Option<String>,
}

/// What adding did.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SuppressionAdded {
    /// The suppression (its first reason, if it existed already).
    #[serde(flatten)]
    pub suppression: SuppressionView,
    /// `false` if the address was suppressed already.
    pub created: bool,
    /// Subscriptions disabled by the cascade.
    pub subscriptions_disabled: u64,
}

/// Pagination of the list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// Only addresses after this one.
    pub after: Option<String>,
    /// At most this many (1–1000, default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
}

/// The suppression list, by address.
#[utoipa::path(operation_id = "suppressions_list", get, path = "/v1/suppressions", tag = "inbound", params(ListQuery),
    security(("bearer" = [])),
    responses((status = 200, description = "Suppressions", body = SuppressionPage)))]
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> ApiResult<Json<SuppressionPage>> {
    let limit = q.limit.unwrap_or(100);
    let rows = state.kairos.suppression_list(q.after, Some(limit)).await?;
    let next_after = (rows.len() as i64 == limit)
        .then(|| rows.last().map(|r| r.address.clone()))
        .flatten();
    Ok(Json(SuppressionPage {
        data: rows.into_iter().map(Into::into).collect(),
        next_after,
    }))
}

/// Suppress an address; every subscription of every recipient with it is disabled.
#[utoipa::path(operation_id = "suppressions_add", post, path = "/v1/suppressions", tag = "inbound", request_body = NewSuppression,
    security(("bearer" = [])),
    responses(
        (status = 201, description = "Added", body = SuppressionAdded),
        (status = 200, description = "Suppressed already (the first reason stays)", body = SuppressionAdded),
        (status = 422, description = "A field is not valid", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn add(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<NewSuppression>,
) -> ApiResult<(StatusCode, Json<SuppressionAdded>)> {
    let (s, applied) = state.kairos.suppression_add(body).await?;
    let status = if applied.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(SuppressionAdded {
            suppression: s.into(),
            created: applied.created,
            subscriptions_disabled: applied.subscriptions_disabled,
        }),
    ))
}

/// Take an address off the list, recording why. Its subscriptions stay disabled.
#[utoipa::path(operation_id = "suppressions_remove", delete, path = "/v1/suppressions/{address}", tag = "inbound",
    params(("address" = String, Path, description = "The address"), RemoveSuppression),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Removed"),
        (status = 404, description = "Not suppressed", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn remove(
    State(state): State<AppState>,
    Path(address): Path<String>,
    ApiQuery(q): ApiQuery<RemoveSuppression>,
) -> ApiResult<StatusCode> {
    state.kairos.suppression_remove(&address, q).await?;
    Ok(StatusCode::NO_CONTENT)
}
