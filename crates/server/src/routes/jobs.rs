//! `/v1/jobs`: enqueue (idempotent with a key, one job or a batch), list with filters, show
//! with attempts, retry, cancel.

use crate::AppState;
use crate::problem::{ApiJson, ApiQuery, ApiResult, OptionalJson, Problem};
use crate::views::{CancelBody, JobBody, JobPage, JobView};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use kairos_engine::ops::{JobBulkRequest, JobFilter};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// Default page size of job lists.
pub const DEFAULT_LIMIT: i64 = 50;

/// The routes (mounted under `/v1/jobs`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", post(enqueue).get(list))
        .route("/batch", post(enqueue_batch))
        .route("/cancel", post(bulk_cancel))
        .route("/retry", post(bulk_retry))
        .route("/{id}", get(show))
        .route("/{id}/retry", post(retry))
        .route("/{id}/cancel", post(cancel))
}

/// Enqueue a job. With an `idempotency_key` that exists, the existing job is returned with 200.
#[utoipa::path(operation_id = "jobs_enqueue", post, path = "/v1/jobs", tag = "jobs", request_body = JobBody,
    security(("bearer" = [])),
    responses(
        (status = 201, description = "Created", body = JobView),
        (status = 200, description = "A job with this idempotency key exists: it is returned", body = JobView),
        (status = 400, description = "Malformed JSON or unknown field", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A field is not valid", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn enqueue(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<JobBody>,
) -> ApiResult<(StatusCode, Json<JobView>)> {
    let (job, created) = state.kairos.job_enqueue(body).await?;
    let attempts = if created {
        Vec::new()
    } else {
        state.kairos.job_get(&job.id).await?.1
    };
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(full_view(&state, &job, &attempts).await?)))
}

/// The body of `POST /v1/jobs/batch`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct JobBatchBody {
    /// The jobs, 1 to 1,000, each the body of `POST /v1/jobs`.
    pub jobs: Vec<JobBody>,
}

/// One job of a batch enqueue: the job as a job list shows it, and whether this call made it.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct JobBatchEntryView {
    /// The job.
    #[serde(flatten)]
    pub job: JobView,
    /// `true` if this call created it; `false` if its `idempotency_key` was taken (by an
    /// existing job, or by an earlier entry of the batch): this is that job.
    pub created: bool,
}

/// What `POST /v1/jobs/batch` did.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct JobBatchView {
    /// One entry per job of the request, in its order.
    pub jobs: Vec<JobBatchEntryView>,
}

/// Enqueue up to 1,000 jobs in one call, in one transaction.
///
/// Each entry is the body of `POST /v1/jobs`; all are inserted or none. An entry whose `idempotency_key` exists answers with the
/// existing job and `created: false`, and so does an entry repeating the key of an earlier
/// one (with that one's job). An invalid entry fails the whole call, its problem's `field`
/// naming it (`jobs[1].run_at`), and nothing is inserted.
#[utoipa::path(operation_id = "jobs_enqueue_batch", post, path = "/v1/jobs/batch", tag = "jobs", request_body = JobBatchBody,
    security(("bearer" = [])),
    responses(
        (status = 201, description = "The jobs, in the request's order, each with `created`", body = JobBatchView),
        (status = 400, description = "Malformed JSON or unknown field (the detail names the entry: `jobs[1]: unknown field`)", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "An `idempotency_key` was used by a job since pruned (retention); nothing was created", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A field of an entry is not valid (`jobs[1].run_at`), or `jobs` is empty or holds more than 1,000; nothing was created", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn enqueue_batch(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<JobBatchBody>,
) -> ApiResult<(StatusCode, Json<JobBatchView>)> {
    let done = state.kairos.job_enqueue_many(body.jobs).await?;
    let kinds = state.kairos.kinds();
    let jobs = done
        .iter()
        .map(|(job, created)| JobBatchEntryView {
            job: JobView::new(kinds, job),
            created: *created,
        })
        .collect();
    Ok((StatusCode::CREATED, Json(JobBatchView { jobs })))
}

/// The view of one job: its endpoint or http target, and its attempts.
async fn full_view(
    state: &AppState,
    job: &kairos_core::Job,
    attempts: &[kairos_store::Attempt],
) -> ApiResult<JobView> {
    let webhook = endpoint_of(state, job).await?;
    JobView::new(state.kairos.kinds(), job)
        .with_webhook(webhook.as_ref())
        .with_attempts(attempts)
        .with_http(job, state.kairos.store().as_ref())
        .await
        .map_err(|e| Problem::from(kairos_engine::OpsError::from(e)))
}

/// The endpoint a webhook job posts to: a disabled one (reused by a re-added URL and secret)
/// shows in the response, so that a job that will be skipped does not look healthy.
async fn endpoint_of(
    state: &AppState,
    job: &kairos_core::Job,
) -> ApiResult<Option<kairos_store::Endpoint>> {
    match &job.endpoint_id {
        Some(id) => Ok(state
            .kairos
            .store()
            .endpoint_get(id)
            .await
            .map_err(|e| Problem::from(kairos_engine::OpsError::from(e)))?),
        None => Ok(None),
    }
}

/// Filters of a job list: the vocabulary shared by the API, the CLI and the admin
/// (`schedule`, `topic`, `recipient`, `period`, `channel`, `state`, `kind`, `created_after`,
/// `created_before`); `schedule_id` is kept as an alias of `schedule`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct JobQuery {
    /// `available`, `running`, `succeeded`, `skipped`, `cancelled`, `dead`.
    #[param(value_type = Option<kairos_engine::ops::api_enums::JobStateSchema>)]
    pub state: Option<String>,
    /// Job kind (`webhook`, `http`, `email`, `digest`, or an embedding application's kind:
    /// an open filter).
    pub kind: Option<String>,
    /// Jobs of this schedule (`sch_…`; `schedule_id` is an alias).
    #[serde(alias = "schedule_id")]
    pub schedule: Option<String>,
    /// Audience jobs of this topic.
    pub topic: Option<String>,
    /// Audience jobs of this recipient id.
    pub recipient: Option<String>,
    /// Jobs of this period key (`2026-W49`).
    pub period: Option<String>,
    /// Jobs of this channel: a schedule's channel name, or an audience job's `email` or
    /// `webhook`.
    pub channel: Option<String>,
    /// Jobs created at or after this instant (RFC 3339).
    pub created_after: Option<String>,
    /// Jobs created before this instant (RFC 3339).
    pub created_before: Option<String>,
    /// Jobs older than this id (the previous page's `next_before`).
    pub before: Option<String>,
    /// Page size, 1 to 1000 (default 50).
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<i64>,
}

/// A trimmed, non-empty value: an empty filter (`?topic=`) is no filter.
fn given(v: Option<String>) -> Option<String> {
    v.map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

impl JobQuery {
    /// The facade's filter, with `state` forced when given.
    pub fn filter(self, force_state: Option<&str>, limit: i64) -> JobFilter {
        JobFilter {
            // Not `given`: an empty `state` is a bad value (422), as the document says.
            state: force_state.map(str::to_string).or(self.state),
            kind: given(self.kind),
            schedule: given(self.schedule),
            topic: given(self.topic),
            recipient: given(self.recipient),
            period: given(self.period),
            channel: given(self.channel),
            created_after: given(self.created_after),
            created_before: given(self.created_before),
            before: given(self.before),
            limit: Some(limit),
        }
    }
}

/// One page of jobs matching `q` (with `state` forced when given).
pub async fn page(state: &AppState, q: JobQuery, force_state: Option<&str>) -> ApiResult<JobPage> {
    let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
    let jobs = state.kairos.job_find(q.filter(force_state, limit)).await?;
    let next_before = if jobs.len() as i64 == limit {
        jobs.last().map(|j| j.id.clone())
    } else {
        None
    };
    Ok(JobPage {
        data: jobs
            .iter()
            .map(|j| JobView::new(state.kairos.kinds(), j))
            .collect(),
        next_before,
    })
}

/// List jobs, newest first.
#[utoipa::path(operation_id = "jobs_list", get, path = "/v1/jobs", tag = "jobs", params(JobQuery),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "A page of jobs", body = JobPage),
        (status = 422, description = "A filter is not valid", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn list(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<JobQuery>,
) -> ApiResult<Json<JobPage>> {
    Ok(Json(page(&state, q, None).await?))
}

/// A job and its attempts.
#[utoipa::path(operation_id = "jobs_show", get, path = "/v1/jobs/{id}", tag = "jobs",
    params(("id" = String, Path, description = "Job id (`job_…`)")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The job", body = JobView),
        (status = 404, description = "No such job", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn show(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<JobView>> {
    let (job, attempts) = state.kairos.job_get(&id).await?;
    Ok(Json(full_view(&state, &job, &attempts).await?))
}

/// Run a job again now: replay a dead, cancelled or skipped job, or hurry one waiting for a
/// retry. A succeeded or running job is a conflict (it would send twice).
#[utoipa::path(operation_id = "jobs_retry", post, path = "/v1/jobs/{id}/retry", tag = "jobs",
    params(("id" = String, Path, description = "Job id (`job_…`)")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The job, available now", body = JobView),
        (status = 404, description = "No such job", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The job succeeded or is running", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn retry(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<JobView>> {
    Ok(Json(JobView::new(
        state.kairos.kinds(),
        &state.kairos.job_retry(&id).await?,
    )))
}

/// Cancel a job that has not finished.
#[utoipa::path(operation_id = "jobs_cancel", post, path = "/v1/jobs/{id}/cancel", tag = "jobs", request_body(content = Option<CancelBody>),
    params(("id" = String, Path, description = "Job id (`job_…`)")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Cancelled", body = JobView),
        (status = 404, description = "No such job", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The job has finished", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn cancel(
    State(state): State<AppState>,
    Path(id): Path<String>,
    OptionalJson(body): OptionalJson<CancelBody>,
) -> ApiResult<Json<JobView>> {
    let reason = body.and_then(|b| b.reason);
    Ok(Json(JobView::new(
        state.kairos.kinds(),
        &state.kairos.job_cancel(&id, reason).await?,
    )))
}

/// What a bulk action did. (`JobBulkView` in the document: `BulkView` is the recipients'.)
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[schema(as = JobBulkView)]
pub struct BulkView {
    /// The jobs acted on: cancelled (they had not finished) or queued again (they were dead
    /// or cancelled). Jobs of the selection in other states are left alone and not counted.
    pub matched: u64,
}

/// Cancel in bulk: every job named by `ids` (at most 1000) or matched by the filter that has
/// not finished (`available` or `running`). Works in batches of at most 1000 jobs, each its
/// own transaction, and answers when every matching job is cancelled.
#[utoipa::path(operation_id = "jobs_bulk_cancel", post, path = "/v1/jobs/cancel", tag = "jobs", request_body = JobBulkRequest,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Every matching job is cancelled", body = BulkView),
        (status = 400, description = "Malformed JSON", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "An unknown field, a value that is not valid, more than 1000 ids", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn bulk_cancel(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<serde_json::Value>,
) -> ApiResult<Json<BulkView>> {
    let req = JobBulkRequest::from_json(body)?;
    Ok(Json(BulkView {
        matched: state.kairos.job_bulk_cancel(req).await?,
    }))
}

/// Retry in bulk: every `dead` or `cancelled` job named by `ids` (at most 1000) or matched by
/// the filter is queued again now with a fresh set of attempts. Works in batches of at most
/// 1000 jobs, each its own transaction, and answers when every matching job is queued.
#[utoipa::path(operation_id = "jobs_bulk_retry", post, path = "/v1/jobs/retry", tag = "jobs", request_body = JobBulkRequest,
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Every matching job is queued again", body = BulkView),
        (status = 400, description = "Malformed JSON", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "An unknown field, a value that is not valid, more than 1000 ids", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn bulk_retry(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<serde_json::Value>,
) -> ApiResult<Json<BulkView>> {
    let req = JobBulkRequest::from_json(body)?;
    Ok(Json(BulkView {
        matched: state.kairos.job_bulk_retry(req).await?,
    }))
}
