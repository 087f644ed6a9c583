//! `/v1/topics`: create or replace (`PUT /{name}`), show, list, and each A/B variant's mails
//! with what became of them (`GET /{name}/variant-stats`). A topic's templates are checked
//! when it is saved: a misspelt variable is a 422 naming the template, never a blank in a
//! sent mail.

use crate::AppState;
use crate::problem::{ApiJson, ApiResult, Problem};
use crate::views::ts;
use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use kairos_engine::ops::NewTopic;
use kairos_store::{MailOutcomeCount, Topic};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The routes (mounted under `/v1/topics`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(list))
        .route("/{name}", get(show).put(put).delete(delete))
        .route("/{name}/variant-stats", get(variant_stats))
}

/// One variant.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct VariantView {
    /// Name.
    pub name: String,
    /// Weight.
    pub weight: u32,
    /// Subject template.
    pub subject: Option<String>,
    /// HTML template.
    pub html: Option<String>,
    /// Text template.
    pub text: Option<String>,
}

/// A topic.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TopicView {
    /// Name.
    pub name: String,
    /// Subject template.
    pub subject: String,
    /// HTML template.
    pub html: Option<String>,
    /// Text template.
    pub text: Option<String>,
    /// A/B variants.
    pub variants: Vec<VariantView>,
    /// Entitlement URL.
    pub entitlement_url: Option<String>,
    /// Its timeout (ms).
    pub entitlement_timeout_ms: Option<i64>,
    /// Created.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// Last changed.
    #[schema(format = DateTime)]
    pub updated_at: String,
}

impl From<Topic> for TopicView {
    fn from(t: Topic) -> Self {
        TopicView {
            name: t.name,
            subject: t.subject,
            html: t.html,
            text: t.text,
            variants: t
                .variants
                .into_iter()
                .map(|v| VariantView {
                    name: v.name,
                    weight: v.weight,
                    subject: v.subject,
                    html: v.html,
                    text: v.text,
                })
                .collect(),
            entitlement_url: t.entitlement_url,
            entitlement_timeout_ms: t.entitlement_timeout_ms,
            created_at: ts(t.created_at),
            updated_at: ts(t.updated_at),
        }
    }
}

/// All topics.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct TopicList {
    /// Topics by name.
    pub data: Vec<TopicView>,
}

/// Create or replace a topic.
#[utoipa::path(operation_id = "topics_put", put, path = "/v1/topics/{name}", tag = "audiences", request_body = NewTopic,
    params(("name" = String, Path, description = "Topic name (`[a-z0-9_-]`)")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Created or replaced", body = TopicView),
        (status = 422, description = "A field or template is not valid", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn put(
    State(state): State<AppState>,
    Path(name): Path<String>,
    ApiJson(body): ApiJson<NewTopic>,
) -> ApiResult<Json<TopicView>> {
    Ok(Json(state.kairos.topic_put(&name, body).await?.into()))
}

/// A topic.
#[utoipa::path(operation_id = "topics_show", get, path = "/v1/topics/{name}", tag = "audiences",
    params(("name" = String, Path, description = "Topic name")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The topic", body = TopicView),
        (status = 404, description = "No such topic", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn show(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> ApiResult<Json<TopicView>> {
    Ok(Json(state.kairos.topic_get(&name).await?.into()))
}

/// All topics.
#[utoipa::path(operation_id = "topics_list", get, path = "/v1/topics", tag = "audiences",
    security(("bearer" = [])),
    responses((status = 200, description = "Topics", body = TopicList)))]
pub async fn list(State(state): State<AppState>) -> ApiResult<Json<TopicList>> {
    let data = state.kairos.topic_list().await?;
    Ok(Json(TopicList {
        data: data.into_iter().map(Into::into).collect(),
    }))
}

/// Delete a topic and every subscription to it.
#[utoipa::path(operation_id = "topics_delete", delete, path = "/v1/topics/{name}", tag = "audiences",
    params(("name" = String, Path, description = "Topic name")),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such topic", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn delete(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> ApiResult<axum::http::StatusCode> {
    state.kairos.topic_delete(&name).await?;
    Ok(axum::http::StatusCode::NO_CONTENT)
}

/// One A/B variant's mails and what became of them. Each outcome counts mails, not events
/// (a mail opened twice is one opened mail); each rate is that count over `sent`, `null`
/// when nothing was sent.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct VariantStatsRow {
    /// The variant.
    pub variant: String,
    /// Mails sent: exposures, recorded with each successful send.
    pub sent: i64,
    /// Of those, mails with an `email.delivered` event.
    pub delivered: i64,
    /// Mails with an `email.opened` event.
    pub opened: i64,
    /// Mails with an `email.clicked` event.
    pub clicked: i64,
    /// Mails with an `email.bounced` event (any bounce type).
    pub bounced: i64,
    /// Mails with an `email.complained` event.
    pub complained: i64,
    /// `delivered / sent`.
    pub delivery_rate: Option<f64>,
    /// `opened / sent`.
    pub open_rate: Option<f64>,
    /// `clicked / sent`.
    pub click_rate: Option<f64>,
    /// `bounced / sent`.
    pub bounce_rate: Option<f64>,
    /// `complained / sent`.
    pub complaint_rate: Option<f64>,
}

impl From<MailOutcomeCount> for VariantStatsRow {
    fn from(c: MailOutcomeCount) -> Self {
        let rate = |n: i64| (c.sent > 0).then(|| n as f64 / c.sent as f64);
        VariantStatsRow {
            delivery_rate: rate(c.delivered),
            open_rate: rate(c.opened),
            click_rate: rate(c.clicked),
            bounce_rate: rate(c.bounced),
            complaint_rate: rate(c.complained),
            variant: c.key,
            sent: c.sent,
            delivered: c.delivered,
            opened: c.opened,
            clicked: c.clicked,
            bounced: c.bounced,
            complained: c.complained,
        }
    }
}

/// A topic's variant stats.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct VariantStats {
    /// The topic.
    pub topic: String,
    /// One row per variant with exposures, by name.
    pub data: Vec<VariantStatsRow>,
}

/// Per A/B variant: mails sent (exposures), delivered, opened, clicked, bounced and
/// complained, with their rates over `sent`, from the provider events matched to the jobs by
/// provider message id. An event no send matched counts toward no variant.
#[utoipa::path(operation_id = "topics_variant_stats", get, path = "/v1/topics/{name}/variant-stats", tag = "audiences",
    params(("name" = String, Path, description = "Topic name")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Per variant", body = VariantStats),
        (status = 404, description = "No such topic", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn variant_stats(
    State(state): State<AppState>,
    Path(name): Path<String>,
) -> ApiResult<Json<VariantStats>> {
    let data = state.kairos.topic_variant_stats(&name).await?;
    Ok(Json(VariantStats {
        topic: name,
        data: data.into_iter().map(Into::into).collect(),
    }))
}
