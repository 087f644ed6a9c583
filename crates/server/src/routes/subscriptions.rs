//! `/v1/subscriptions`: create or replace the subscription of a recipient to a topic
//! (`PUT /{recipient_id}/{topic}`), show it, list by recipient or topic.

use crate::AppState;
use crate::problem::{ApiJson, ApiQuery, ApiResult, Problem};
use crate::views::ts;
use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use kairos_engine::ops::NewSubscription;
use kairos_store::Subscription;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// The routes (mounted under `/v1/subscriptions`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(list))
        .route("/{recipient_id}/{topic}", get(show).put(put).delete(delete))
}

/// A subscription.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SubscriptionView {
    /// The recipient.
    pub recipient_id: String,
    /// The topic.
    pub topic: String,
    /// The first target (kept for clients that know only one); `null` without targets.
    pub target: Option<String>,
    /// Targets: one mail (and webhook) per target and period.
    pub targets: Vec<String>,
    /// Channels.
    pub channels: Vec<String>,
    /// Delivered.
    pub enabled: bool,
    /// Created.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Last changed.
    #[schema(format = DateTime)]
    pub updated_at: String,
    /// On `PUT` only: no topic of this name is defined (a misspelt name?). The subscription is
    /// kept all the same: subscribing before the topic exists is allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

impl From<Subscription> for SubscriptionView {
    fn from(s: Subscription) -> Self {
        SubscriptionView {
            recipient_id: s.recipient_id,
            topic: s.topic,
            target: s.target,
            targets: s.targets,
            channels: s.channels,
            enabled: s.enabled,
            created_at: ts(s.created_at),
            updated_at: ts(s.updated_at),
            warning: None,
        }
    }
}

/// A page of subscriptions.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SubscriptionList {
    /// Subscriptions by (recipient_id, topic).
    pub data: Vec<SubscriptionView>,
}

/// Create or replace the subscription of a recipient to a topic.
#[utoipa::path(operation_id = "subscriptions_put", put, path = "/v1/subscriptions/{recipient_id}/{topic}", tag = "audiences",
    request_body = NewSubscription,
    params(("recipient_id" = String, Path, description = "Recipient id"),
           ("topic" = String, Path, description = "Topic name")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Created or replaced; with a `warning` when no topic of this name is defined", body = SubscriptionView),
        (status = 404, description = "No such recipient", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A field is not valid", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn put(
    State(state): State<AppState>,
    Path((recipient_id, topic)): Path<(String, String)>,
    ApiJson(body): ApiJson<NewSubscription>,
) -> ApiResult<Json<SubscriptionView>> {
    let saved = state
        .kairos
        .subscription_put(&recipient_id, &topic, body)
        .await?;
    let mut view = SubscriptionView::from(saved);
    view.warning = state.kairos.subscription_topic_warning(&topic).await?;
    Ok(Json(view))
}

/// A subscription.
#[utoipa::path(operation_id = "subscriptions_show", get, path = "/v1/subscriptions/{recipient_id}/{topic}", tag = "audiences",
    params(("recipient_id" = String, Path, description = "Recipient id"),
           ("topic" = String, Path, description = "Topic name")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The subscription", body = SubscriptionView),
        (status = 404, description = "No such subscription", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn show(
    State(state): State<AppState>,
    Path((recipient_id, topic)): Path<(String, String)>,
) -> ApiResult<Json<SubscriptionView>> {
    Ok(Json(
        state
            .kairos
            .subscription_get(&recipient_id, &topic)
            .await?
            .into(),
    ))
}

/// Filters of the subscription list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// Only this recipient.
    pub recipient_id: Option<String>,
    /// Only this topic.
    pub topic: Option<String>,
    /// Only enabled subscriptions of active recipients.
    pub active: Option<bool>,
    /// Only after this recipient id (with `topic`: keyset pagination).
    pub after: Option<String>,
    /// At most this many (1–1000, default 100).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
}

/// Subscriptions by (recipient, topic).
#[utoipa::path(operation_id = "subscriptions_list", get, path = "/v1/subscriptions", tag = "audiences", params(ListQuery),
    security(("bearer" = [])),
    responses((status = 200, description = "Subscriptions", body = SubscriptionList)))]
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> ApiResult<Json<SubscriptionList>> {
    let after = q.after.map(|r| (r, q.topic.clone().unwrap_or_default()));
    let data = state
        .kairos
        .subscription_list(kairos_store::SubscriptionList {
            topic: q.topic,
            recipient_id: q.recipient_id,
            active_only: q.active.unwrap_or(false),
            after,
            limit: q.limit,
        })
        .await?;
    Ok(Json(SubscriptionList {
        data: data.into_iter().map(Into::into).collect(),
    }))
}

/// Delete a subscription.
#[utoipa::path(operation_id = "subscriptions_delete", delete, path = "/v1/subscriptions/{recipient_id}/{topic}", tag = "audiences",
    params(("recipient_id" = String, Path, description = "Recipient id"),
           ("topic" = String, Path, description = "Topic name")),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such subscription", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn delete(
    State(state): State<AppState>,
    Path((recipient_id, topic)): Path<(String, String)>,
) -> ApiResult<axum::http::StatusCode> {
    state
        .kairos
        .subscription_delete(&recipient_id, &topic)
        .await?;
    Ok(axum::http::StatusCode::NO_CONTENT)
}
