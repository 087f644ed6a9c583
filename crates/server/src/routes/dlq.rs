//! `/v1/dlq`: the dead-letter queue — jobs whose attempts are spent — and their replay.

use crate::AppState;
use crate::problem::{ApiJson, ApiQuery, ApiResult, Problem};
use crate::routes::jobs::{JobQuery, page};
use crate::views::{JobPage, ReplayBody, ReplayFailure, ReplayView};
use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use kairos_engine::Kairos;
use serde::Deserialize;
use utoipa::IntoParams;

/// Most ids one replay request may name.
pub const MAX_REPLAY_IDS: usize = 10_000;
/// The most dead jobs one `{"all": true}` request replays (as many as "replay all" in the
/// admin UI): the request does bounded work, and `more` says when to send it again.
pub const REPLAY_ALL_MAX: usize = 500;

/// The routes (mounted under `/v1/dlq`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(list))
        .route("/replay", post(replay))
}

/// Filters of the dead-letter list: those of `GET /v1/jobs` but `state`
/// (`schedule_id` is an alias of `schedule`).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DlqQuery {
    /// Job kind (an open filter, as on `GET /v1/jobs`).
    pub kind: Option<String>,
    /// Jobs of this schedule (`schedule_id` is an alias).
    #[serde(alias = "schedule_id")]
    pub schedule: Option<String>,
    /// Audience jobs of this topic.
    pub topic: Option<String>,
    /// Audience jobs of this recipient id.
    pub recipient: Option<String>,
    /// Jobs of this period key.
    pub period: Option<String>,
    /// Jobs of this channel.
    pub channel: Option<String>,
    /// Created at or after this instant (RFC 3339).
    pub created_after: Option<String>,
    /// Created before this instant (RFC 3339).
    pub created_before: Option<String>,
    /// Jobs older than this id (the previous page's `next_before`).
    pub before: Option<String>,
    /// Page size, 1 to 1000 (default 50).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
}

/// Dead jobs, newest first.
#[utoipa::path(operation_id = "dlq_list", get, path = "/v1/dlq", tag = "dlq", params(DlqQuery),
    security(("bearer" = [])),
    responses((status = 200, description = "A page of dead jobs", body = JobPage)))]
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<DlqQuery>,
) -> ApiResult<Json<JobPage>> {
    let q = JobQuery {
        state: None,
        kind: q.kind,
        schedule: q.schedule,
        topic: q.topic,
        recipient: q.recipient,
        period: q.period,
        channel: q.channel,
        created_after: q.created_after,
        created_before: q.created_before,
        before: q.before,
        limit: q.limit,
    };
    Ok(Json(page(&state, q, Some("dead")).await?))
}

/// Replay `ids`, one by one; a job that cannot be replayed is reported, not fatal.
pub async fn replay_ids(kairos: &Kairos, ids: &[String]) -> ReplayView {
    let mut out = ReplayView::default();
    for id in ids {
        match kairos.job_retry(id).await {
            Ok(j) => out.job_ids.push(j.id),
            Err(e) => out.failed.push(ReplayFailure {
                id: id.clone(),
                error: e.message().to_string(),
            }),
        }
    }
    out.replayed = out.job_ids.len();
    out
}

/// Replay dead jobs: `{"ids": [...]}` (at most 10,000) or `{"all": true, "kind": "webhook"}`.
/// Each becomes available now with a fresh set of attempts. `all` replays at most 500 dead
/// jobs per request, newest first: when `more` is true, send the request again.
#[utoipa::path(operation_id = "dlq_replay", post, path = "/v1/dlq/replay", tag = "dlq", request_body = ReplayBody,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "What was replayed; with `all`, `more` says whether dead jobs remain (send again)", body = ReplayView),
        (status = 422, description = "Neither or both of `ids` and `all`", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn replay(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<ReplayBody>,
) -> ApiResult<Json<ReplayView>> {
    let ids = match (body.ids, body.all.unwrap_or(false)) {
        (Some(_), true) => {
            return Err(Problem::invalid(
                "ids",
                "give either \"ids\" or \"all\", not both",
            ));
        }
        (Some(ids), false) => {
            if body.kind.is_some() {
                return Err(Problem::invalid("kind", "only with \"all\": true"));
            }
            if ids.len() > MAX_REPLAY_IDS {
                return Err(Problem::invalid(
                    "ids",
                    &format!("at most {MAX_REPLAY_IDS} ids per request"),
                ));
            }
            ids
        }
        (None, true) => {
            let done = state
                .kairos
                .dead_replay(body.kind.as_deref(), REPLAY_ALL_MAX)
                .await?;
            return Ok(Json(ReplayView {
                replayed: done.job_ids.len(),
                job_ids: done.job_ids,
                failed: done
                    .failed
                    .into_iter()
                    .map(|(id, error)| ReplayFailure { id, error })
                    .collect(),
                more: done.more,
                limit: Some(REPLAY_ALL_MAX),
            }));
        }
        (None, false) => {
            return Err(Problem::invalid(
                "ids",
                "give \"ids\": [...] or \"all\": true",
            ));
        }
    };
    Ok(Json(replay_ids(&state.kairos, &ids).await))
}
