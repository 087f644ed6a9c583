//! `/v1/schedules`: create, list, show (with the next firings), replace, pause, resume,
//! delete, fire now, backfill a past range (and plan it: the calls a long range takes).

use crate::AppState;
use crate::problem::{ApiJson, ApiQuery, ApiResult, Problem};
use crate::views::{
    BackfillBody, BackfillCallView, BackfillPlanView, BackfillView, FiredView, ScheduleBody,
    ScheduleList, ScheduleView,
};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use kairos_store::Schedule;
use serde::Deserialize;
use std::collections::HashMap;
use utoipa::IntoParams;

/// How many upcoming firings a single-schedule response shows.
pub const UPCOMING: usize = 5;

/// The routes (mounted under `/v1/schedules`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", post(create).get(list))
        .route("/{id}", get(show).put(replace).delete(delete))
        .route("/{id}/pause", post(pause))
        .route("/{id}/resume", post(resume))
        .route("/{id}/fire", post(fire))
        .route("/{id}/backfill", post(backfill).get(backfill_plan))
}

/// The view of one schedule with its endpoint and upcoming firings.
pub async fn full_view(state: &AppState, s: &Schedule) -> ApiResult<ScheduleView> {
    let ep = match &s.endpoint_id {
        Some(id) => state
            .kairos
            .store()
            .endpoint_get(id)
            .await
            .map_err(|e| Problem::from(kairos_engine::OpsError::from(e)))?,
        None => None,
    };
    let upcoming = state.kairos.schedule_upcoming(s, UPCOMING);
    let catch_up = state.kairos.schedule_catch_ups(&s.id).await?;
    ScheduleView::new(s, ep.as_ref())
        .with_upcoming(&upcoming)
        .with_catch_up(catch_up.into_iter().map(|c| c.at).collect())
        .with_http(s, state.kairos.store().as_ref())
        .await
        .map_err(|e| Problem::from(kairos_engine::OpsError::from(e)))
}

/// Create a schedule. Its first firing is the first at or after now.
#[utoipa::path(operation_id = "schedules_create", post, path = "/v1/schedules", tag = "schedules", request_body = ScheduleBody,
    security(("bearer" = [])),
    responses(
        (status = 201, description = "Created", body = ScheduleView),
        (status = 400, description = "Malformed JSON or unknown field", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A schedule with this name exists", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A field is not valid", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn create(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<ScheduleBody>,
) -> ApiResult<(StatusCode, Json<ScheduleView>)> {
    let s = state.kairos.schedule_create(body).await?;
    Ok((StatusCode::CREATED, Json(full_view(&state, &s).await?)))
}

/// Filters of the schedule list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    /// `active`, `paused` or `finished`.
    #[param(value_type = Option<kairos_engine::ops::api_enums::ScheduleStateSchema>)]
    pub state: Option<String>,
    /// At most this many (default 100).
    pub limit: Option<i64>,
}

/// List schedules, newest first.
#[utoipa::path(operation_id = "schedules_list", get, path = "/v1/schedules", tag = "schedules", params(ListQuery),
    security(("bearer" = [])),
    responses((status = 200, description = "Schedules", body = ScheduleList)))]
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<ListQuery>,
) -> ApiResult<Json<ScheduleList>> {
    let schedules = state.kairos.schedule_list(q.state, q.limit).await?;
    let mut endpoints = HashMap::new();
    let mut data = Vec::with_capacity(schedules.len());
    for s in &schedules {
        if let Some(id) = &s.endpoint_id
            && !endpoints.contains_key(id)
        {
            let ep = state
                .kairos
                .store()
                .endpoint_get(id)
                .await
                .map_err(|e| Problem::from(kairos_engine::OpsError::from(e)))?;
            endpoints.insert(id.clone(), ep);
        }
        let ep = s
            .endpoint_id
            .as_ref()
            .and_then(|id| endpoints.get(id))
            .and_then(Option::as_ref);
        data.push(ScheduleView::new(s, ep));
    }
    Ok(Json(ScheduleList { data }))
}

/// A schedule with its next firings.
#[utoipa::path(operation_id = "schedules_show", get, path = "/v1/schedules/{id}", tag = "schedules",
    params(("id" = String, Path, description = "Schedule id (`sch_…`)")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The schedule", body = ScheduleView),
        (status = 404, description = "No such schedule", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn show(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<ScheduleView>> {
    let s = state.kairos.schedule_get(&id).await?;
    Ok(Json(full_view(&state, &s).await?))
}

/// Replace a schedule's definition; its next firing is recomputed from now.
#[utoipa::path(operation_id = "schedules_replace", put, path = "/v1/schedules/{id}", tag = "schedules", request_body = ScheduleBody,
    params(("id" = String, Path, description = "Schedule id (`sch_…`)")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Replaced", body = ScheduleView),
        (status = 404, description = "No such schedule", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A field is not valid", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn replace(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<ScheduleBody>,
) -> ApiResult<Json<ScheduleView>> {
    let s = state.kairos.schedule_update(&id, body).await?;
    Ok(Json(full_view(&state, &s).await?))
}

/// Pause a schedule: it does not fire until resumed.
#[utoipa::path(operation_id = "schedules_pause", post, path = "/v1/schedules/{id}/pause", tag = "schedules",
    params(("id" = String, Path, description = "Schedule id (`sch_…`)")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Paused", body = ScheduleView),
        (status = 404, description = "No such schedule", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn pause(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<ScheduleView>> {
    let s = state.kairos.schedule_pause(&id, true).await?;
    Ok(Json(full_view(&state, &s).await?))
}

/// Resume a schedule. What was missed while paused is not fired: the next firing is the first
/// from now.
#[utoipa::path(operation_id = "schedules_resume", post, path = "/v1/schedules/{id}/resume", tag = "schedules",
    params(("id" = String, Path, description = "Schedule id (`sch_…`)")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Resumed", body = ScheduleView),
        (status = 404, description = "No such schedule", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn resume(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<ScheduleView>> {
    let s = state.kairos.schedule_pause(&id, false).await?;
    Ok(Json(full_view(&state, &s).await?))
}

/// Delete a schedule; its jobs stay.
#[utoipa::path(operation_id = "schedules_delete", delete, path = "/v1/schedules/{id}", tag = "schedules",
    params(("id" = String, Path, description = "Schedule id (`sch_…`)")),
    security(("bearer" = [])),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "No such schedule", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn delete(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    state.kairos.schedule_delete(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Fire now for the current period (a manual re-run). A repeat creates nothing: the period's
/// jobs exist once.
#[utoipa::path(operation_id = "schedules_fire", post, path = "/v1/schedules/{id}/fire", tag = "schedules",
    params(("id" = String, Path, description = "Schedule id (`sch_…`)")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Fired", body = FiredView),
        (status = 404, description = "No such schedule", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn fire(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<FiredView>> {
    Ok(Json(state.kairos.schedule_fire_now(&id).await?.into()))
}

/// Create the firings of a past range (`from` to `to`, both included, at most 1,000 firings),
/// each deduplicated like a regular firing: a period that ran already is not run again and
/// counts as `skipped`. Misfire and overlap policies do not apply.
#[utoipa::path(operation_id = "schedules_backfill", post, path = "/v1/schedules/{id}/backfill", tag = "schedules", request_body = BackfillBody,
    params(("id" = String, Path, description = "Schedule id (`sch_…`)")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Backfilled", body = BackfillView),
        (status = 400, description = "Malformed JSON or unknown field", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such schedule", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A bad range (`from`, `to`: more than 1,000 firings, in the future, reversed) or a schedule that cannot backfill (`kind`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn backfill(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<BackfillBody>,
) -> ApiResult<Json<BackfillView>> {
    let done = state
        .kairos
        .schedule_backfill(&id, &body.from, &body.to)
        .await?;
    Ok(Json(done.into()))
}

/// The range of a backfill plan.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct BackfillQuery {
    /// The first instant of the range (RFC 3339).
    pub from: String,
    /// The last instant of the range (RFC 3339), not in the future.
    pub to: String,
}

/// Plan a backfill without creating anything: the `POST …/backfill` calls (each of at most
/// 1,000 firings, from its first firing to its last) that cover `from` to `to`, oldest first,
/// as `kairos schedule backfill` sends them. A range of more than 1,000,000 firings is a 422
/// (`to`).
#[utoipa::path(operation_id = "schedules_backfill_plan", get, path = "/v1/schedules/{id}/backfill", tag = "schedules",
    params(("id" = String, Path, description = "Schedule id (`sch_…`)"), BackfillQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The calls, oldest first", body = BackfillPlanView),
        (status = 404, description = "No such schedule", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A bad range (`from`, `to`: more than 1,000,000 firings, in the future, reversed) or a schedule that cannot backfill (`kind`)", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn backfill_plan(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiQuery(q): ApiQuery<BackfillQuery>,
) -> ApiResult<Json<BackfillPlanView>> {
    let per_call = kairos_engine::ops::MAX_BACKFILL_FIRINGS;
    let ranges = state
        .kairos
        .schedule_backfill_ranges(&id, &q.from, &q.to, per_call)
        .await?;
    let calls = ranges
        .into_iter()
        .map(|(from, to)| BackfillCallView {
            from: crate::views::ts(from),
            to: crate::views::ts(to),
        })
        .collect();
    Ok(Json(BackfillPlanView { calls }))
}
