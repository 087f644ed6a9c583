//! Admin pages for jobs: the filtered list, one job with its attempts, dead jobs, and the
//! replay/cancel actions.

use crate::AppState;
use crate::admin::CsrfForm;
use crate::admin::dashboard::store_error;
use crate::admin::filters::{JobFilters, PAGE, blank, urlencode};
use crate::admin::session::{Operator, csrf_refused};
use crate::admin::views::{AttemptRow, JobRow};
use axum::extract::{Form, Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use kairos_store::JobSearch;
use minijinja::context;
use serde::{Deserialize, Serialize};

/// `GET /admin/jobs`: the filtered list.
pub async fn list(
    op: Operator,
    State(state): State<AppState>,
    Query(f): Query<JobFilters>,
) -> Response {
    let (rows, error) = match f.to_search() {
        Ok(q) => match state.kairos.store().job_search(q).await {
            Ok(jobs) => (jobs, None),
            Err(e) => return store_error(&op, &state, e).await,
        },
        Err(msg) => (Vec::new(), Some(msg)),
    };
    let next = (rows.len() as i64 == PAGE)
        .then(|| rows.last().map(|j| f.query_with_before(&j.id)))
        .flatten();
    let rows: Vec<JobRow> = rows.iter().map(JobRow::from).collect();
    op.page(&state, "jobs.html", context! { rows, f, error, next })
        .await
}

/// `GET /admin/jobs/{id}`: one job and every attempt.
pub async fn show(
    op: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(f): Query<JobFilters>,
) -> Response {
    match state.kairos.job_get(&id).await {
        Ok((job, attempts)) => {
            let attempts: Vec<AttemptRow> = attempts.iter().map(AttemptRow::from).collect();
            let payload = serde_json::to_string_pretty(&job.payload).unwrap_or_default();
            op.page(
                &state,
                "job.html",
                context! {
                    job => JobRow::from(&job), attempts, payload,
                    notice => notice_text(f.notice.as_deref()),
                },
            )
            .await
        }
        Err(e) if *e.kind() == kairos_engine::OpsErrorKind::NotFound => {
            let page = op
                .page(&state, "job.html", context! { missing => id })
                .await;
            (axum::http::StatusCode::NOT_FOUND, page).into_response()
        }
        Err(e) => store_error(&op, &state, e).await,
    }
}

fn notice_text(code: Option<&str>) -> Option<&'static str> {
    match code? {
        "replayed" => Some("Replayed: the job is available and runs now."),
        "cancelled" => Some("Cancelled."),
        "replay-refused" => {
            Some("Not replayed: a succeeded or running job cannot run again (it would send twice).")
        }
        "cancel-refused" => Some("Not cancelled: the job has already finished."),
        _ => None,
    }
}

/// `POST /admin/jobs/{id}/replay`.
pub async fn replay(
    op: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
    Form(form): Form<CsrfForm>,
) -> Response {
    if !op.csrf_ok(&form.csrf) {
        return csrf_refused();
    }
    let notice = match state.kairos.job_retry(&id).await {
        Ok(_) => {
            tracing::info!(job_id = %id, "replayed from the admin UI");
            "replayed"
        }
        Err(_) => "replay-refused",
    };
    Redirect::to(&format!("/admin/jobs/{}?notice={notice}", urlencode(&id))).into_response()
}

/// `POST /admin/jobs/{id}/cancel`.
pub async fn cancel(
    op: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
    Form(form): Form<CsrfForm>,
) -> Response {
    if !op.csrf_ok(&form.csrf) {
        return csrf_refused();
    }
    let notice = match state
        .kairos
        .job_cancel(&id, Some("cancelled in the admin UI".into()))
        .await
    {
        Ok(_) => "cancelled",
        Err(_) => "cancel-refused",
    };
    Redirect::to(&format!("/admin/jobs/{}?notice={notice}", urlencode(&id))).into_response()
}

/// The dead-jobs page's query.
#[derive(Debug, Default, Deserialize, Serialize)]
pub struct DeadQuery {
    /// Only this kind.
    #[serde(default)]
    pub kind: Option<String>,
    /// Keyset cursor.
    #[serde(default)]
    pub before: Option<String>,
    /// How many were just replayed.
    #[serde(default)]
    pub replayed: Option<u64>,
    /// Set when "replay all" stopped at its per-request maximum with dead jobs left.
    #[serde(default)]
    pub more: Option<bool>,
}

/// Dead jobs read per batch by "replay all".
pub const REPLAY_ALL_BATCH: i64 = 100;
/// The most dead jobs one "replay all" request replays; the page says when more remain.
pub const REPLAY_ALL_MAX: usize = 500;

/// `GET /admin/dead`: dead jobs, newest first.
pub async fn dead(
    op: Operator,
    State(state): State<AppState>,
    Query(q): Query<DeadQuery>,
) -> Response {
    let search = JobSearch {
        state: Some("dead".into()),
        kind: blank(&q.kind),
        before_id: blank(&q.before),
        limit: PAGE,
        ..Default::default()
    };
    let jobs = match state.kairos.store().job_search(search).await {
        Ok(j) => j,
        Err(e) => return store_error(&op, &state, e).await,
    };
    let next = (jobs.len() as i64 == PAGE)
        .then(|| jobs.last().map(|j| j.id.clone()))
        .flatten();
    let rows: Vec<JobRow> = jobs.iter().map(JobRow::from).collect();
    op.page(
        &state,
        "dead.html",
        context! { rows, q, next, replay_max => REPLAY_ALL_MAX },
    )
    .await
}

/// The "replay all" form.
#[derive(Debug, Deserialize)]
pub struct ReplayAllForm {
    csrf: String,
    #[serde(default)]
    kind: Option<String>,
}

/// `POST /admin/dead/replay`: replay the dead jobs (of a kind), newest first, in batches of
/// [`REPLAY_ALL_BATCH`] and at most [`REPLAY_ALL_MAX`] per request, so one request never
/// holds the server in an unbounded loop; the page says when more remain (press again).
pub async fn dead_replay(
    op: Operator,
    State(state): State<AppState>,
    Form(form): Form<ReplayAllForm>,
) -> Response {
    if !op.csrf_ok(&form.csrf) {
        return csrf_refused();
    }
    let kind = blank(&form.kind);
    let mut replayed = 0u64;
    let mut seen = 0usize;
    let mut before: Option<String> = None;
    let more = loop {
        let want = REPLAY_ALL_BATCH.min((REPLAY_ALL_MAX - seen) as i64);
        let batch = match state
            .kairos
            .job_list(
                Some("dead"),
                kind.as_deref(),
                None,
                before.as_deref(),
                Some(want),
            )
            .await
        {
            Ok(b) => b,
            Err(e) => return store_error(&op, &state, e).await,
        };
        for job in &batch {
            if state.kairos.job_retry(&job.id).await.is_ok() {
                replayed += 1;
            }
        }
        seen += batch.len();
        before = batch.last().map(|j| j.id.clone());
        if (batch.len() as i64) < want {
            break false;
        }
        if seen >= REPLAY_ALL_MAX {
            // Stopped at the maximum: is anything left after the last one looked at?
            match state
                .kairos
                .job_list(
                    Some("dead"),
                    kind.as_deref(),
                    None,
                    before.as_deref(),
                    Some(1),
                )
                .await
            {
                Ok(rest) => break !rest.is_empty(),
                Err(e) => return store_error(&op, &state, e).await,
            }
        }
    };
    tracing::info!(replayed, more, kind = ?kind, "replayed dead jobs from the admin UI");
    let mut to = format!("/admin/dead?replayed={replayed}");
    if more {
        to.push_str("&more=true");
    }
    if let Some(k) = kind {
        to.push_str(&format!("&kind={}", urlencode(&k)));
    }
    Redirect::to(&to).into_response()
}
