//! `/v1/recipients`: create or replace one (`PUT /{id}`), bulk upsert (`POST /bulk`, up to
//! 10,000 at a time), show, list by id. Personal data lives only here.

use crate::AppState;
use crate::problem::{ApiJson, ApiQuery, ApiResult, Problem};
use crate::views::ts;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use kairos_engine::ops::NewRecipient;
use kairos_store::Recipient;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// Largest bulk request body (16 MiB: 10,000 recipients with some attributes).
pub const BULK_BODY_LIMIT: usize = 16 << 20;

/// The routes (mounted under `/v1/recipients`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(list))
        .route(
            "/bulk",
            post(bulk).layer(DefaultBodyLimit::max(BULK_BODY_LIMIT)),
        )
        .route("/{id}", get(show).put(put).delete(erase))
}

/// A recipient.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RecipientView {
    /// Id.
    pub id: String,
    /// Email address.
    pub email: String,
    /// IANA time zone.
    pub timezone: String,
    /// Locale.
    pub locale: Option<String>,
    /// Attributes.
    #[schema(value_type = Object)]
    pub attributes: serde_json::Value,
    /// `active` or `disabled`.
    pub state: String,
    /// The recipient's webhook endpoint (`ep_…`) for the `webhook` channel; its secret is
    /// never returned.
    pub webhook_endpoint_id: Option<String>,
    /// Created (RFC 3339).
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Last changed.
    #[schema(format = DateTime)]
    pub updated_at: String,
}

impl From<Recipient> for RecipientView {
    fn from(r: Recipient) -> Self {
        RecipientView {
            id: r.id,
            email: r.email,
            timezone: r.timezone,
            locale: r.locale,
            attributes: r.attributes,
            state: r.state.as_str().into(),
            webhook_endpoint_id: r.endpoint_id,
            created_at: ts(r.created_at),
            updated_at: ts(r.updated_at),
        }
    }
}

/// A page of recipients.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct RecipientList {
    /// Recipients by id.
    pub data: Vec<RecipientView>,
    /// Pass as `after` for the next page (absent on the last page).
    pub next_after: Option<String>,
}

/// A bulk upsert.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkBody {
    /// Up to 10,000 recipients, each with its `id`.
    pub recipients: Vec<NewRecipient>,
}

/// What a bulk upsert did.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct BulkView {
    /// Recipients created or replaced.
    pub upserted: u64,
}

/// Create or replace a recipient.
#[utoipa::path(operation_id = "recipients_put", put, path = "/v1/recipients/{id}", tag = "audiences", request_body = NewRecipient,
    params(("id" = String, Path, description = "Your id for the recipient")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Created or replaced", body = RecipientView),
        (status = 422, description = "A field is not valid", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn put(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<NewRecipient>,
) -> ApiResult<Json<RecipientView>> {
    Ok(Json(state.kairos.recipient_put(&id, body).await?.into()))
}

/// Create or replace many recipients in one transaction (all or nothing).
#[utoipa::path(operation_id = "recipients_bulk", post, path = "/v1/recipients/bulk", tag = "audiences", request_body = BulkBody,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Upserted", body = BulkView),
        (status = 422, description = "An item is not valid (`recipients[i].field`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn bulk(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<BulkBody>,
) -> ApiResult<Json<BulkView>> {
    let upserted = state.kairos.recipient_put_many(body.recipients).await?;
    Ok(Json(BulkView { upserted }))
}

/// A recipient.
#[utoipa::path(operation_id = "recipients_show", get, path = "/v1/recipients/{id}", tag = "audiences",
    params(("id" = String, Path, description = "Recipient id")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The recipient", body = RecipientView),
        (status = 404, description = "No such recipient", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn show(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<RecipientView>> {
    Ok(Json(state.kairos.recipient_get(&id).await?.into()))
}

/// Erase a recipient: the recipient, their attributes and subscriptions are deleted, their
/// pending jobs cancelled (reason `erased`), and their address removed from stored inbound
/// events, job logs and outbox files; a suppression of the address stays, stored as a keyed
/// hash (listed as `"email": null, "erased": true`). See docs/privacy.md.
#[utoipa::path(operation_id = "recipients_erase", delete, path = "/v1/recipients/{id}", tag = "audiences",
    params(("id" = String, Path, description = "Recipient id")),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Erased"),
        (status = 404, description = "No such recipient (or erased already)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn erase(State(state): State<AppState>, Path(id): Path<String>) -> ApiResult<StatusCode> {
    state.kairos.recipient_erase(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Pagination of the recipient list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// Only ids after this one.
    pub after: Option<String>,
    /// At most this many (1–1000, default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
}

/// Recipients by id.
#[utoipa::path(operation_id = "recipients_list", get, path = "/v1/recipients", tag = "audiences", params(ListQuery),
    security(("bearer" = [])),
    responses((status = 200, description = "Recipients", body = RecipientList)))]
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> ApiResult<Json<RecipientList>> {
    let limit = q.limit.unwrap_or(100);
    let rs = state.kairos.recipient_list(q.after, Some(limit)).await?;
    let next_after = (rs.len() as i64 == limit)
        .then(|| rs.last().map(|r| r.id.clone()))
        .flatten();
    Ok(Json(RecipientList {
        data: rs.into_iter().map(Into::into).collect(),
        next_after,
    }))
}
