//! Admin pages for jobs: the filtered list with its bulk actions (cancel/retry the selected
//! jobs or all matching the filter), one job with its attempts, dead jobs, and the
//! replay/cancel actions.

use crate::AppState;
use crate::admin::CsrfForm;
use crate::admin::dashboard::store_error;
use crate::admin::filters::{JobFilters, PAGE, blank, urlencode};
use crate::admin::session::{Operator, csrf_refused};
use crate::admin::views::{JobRow, attempt_rounds};
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
    let names = schedule_names(&state, &rows).await;
    let rows: Vec<JobRow> = rows
        .iter()
        .map(|j| {
            let mut r = JobRow::new(state.kairos.kinds(), j);
            r.schedule_name = j.schedule_id.as_ref().and_then(|id| names.get(id).cloned());
            r
        })
        .collect();
    let notice = bulk_notice(&f);
    let filter_pairs = f.pairs();
    let refresh = crate::admin::search::RefreshQuery {
        refresh: f.refresh.clone(),
    }
    .seconds();
    let refresh_path = match f.query() {
        q if q.is_empty() => "/admin/jobs".to_string(),
        q => format!("/admin/jobs?{q}"),
    };
    op.page(
        &state,
        "jobs.html",
        context! { rows, f, error, next, notice, filter_pairs, refresh, refresh_path },
    )
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
            let attempts = attempt_rounds(&attempts);
            let rounds = attempts.iter().filter(|a| a.new_round()).count() + 1;
            let payload = serde_json::to_string_pretty(&job.payload).unwrap_or_default();
            let mut row = JobRow::new(state.kairos.kinds(), &job);
            row.schedule_name = schedule_names(&state, std::slice::from_ref(&job))
                .await
                .into_values()
                .next();
            let target = http_target_of(&state, &job).await;
            op.page(
                &state,
                "job.html",
                context! {
                    job => row, attempts, payload, target, rounds,
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

/// The names of the schedules of `jobs`, by id (one read per distinct schedule: a page holds
/// at most [`PAGE`] jobs). A schedule deleted since shows its id.
pub async fn schedule_names(
    state: &AppState,
    jobs: &[kairos_core::Job],
) -> std::collections::HashMap<String, String> {
    let ids: std::collections::BTreeSet<&String> =
        jobs.iter().filter_map(|j| j.schedule_id.as_ref()).collect();
    let mut names = std::collections::HashMap::new();
    for id in ids {
        if let Ok(Some(s)) = state.kairos.store().schedule_get(id).await {
            names.insert(id.clone(), s.name);
        }
    }
    names
}

/// The method and URL an `http` job calls (credentials masked), when it is one.
async fn http_target_of(state: &AppState, job: &kairos_core::Job) -> Option<minijinja::Value> {
    let id = job
        .payload
        .get(kairos_engine::kinds::http::HTTP_TARGET_KEY)?
        .as_str()?;
    http_target_view(state, id).await
}

/// A stored http target as the pages show it: id, method, masked URL; `None` when gone.
pub async fn http_target_view(state: &AppState, id: &str) -> Option<minijinja::Value> {
    match state.kairos.store().http_target_get(id).await {
        Ok(Some(t)) => Some(context! {
            id => t.id, method => t.method, url => crate::admin::mask_url(&t.url),
        }),
        Ok(None) => None,
        Err(e) => {
            tracing::warn!(error = %e, "admin: http target unreadable");
            None
        }
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
pub const REPLAY_ALL_BATCH: i64 = kairos_engine::ops::DEAD_REPLAY_BATCH;
/// The most dead jobs one "replay all" request replays; the page says when more remain.
pub const REPLAY_ALL_MAX: usize = crate::routes::dlq::REPLAY_ALL_MAX;

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
    let rows: Vec<JobRow> = jobs
        .iter()
        .map(|j| JobRow::new(state.kairos.kinds(), j))
        .collect();
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
    let done = match state
        .kairos
        .dead_replay(kind.as_deref(), REPLAY_ALL_MAX)
        .await
    {
        Ok(d) => d,
        Err(e) => return store_error(&op, &state, e).await,
    };
    let (replayed, more) = (done.job_ids.len(), done.more);
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

/// The most jobs "… selected" takes at once (the API's limit on ids).
const MAX_SELECTED: usize = kairos_engine::ops::MAX_BULK_IDS;

/// A bulk action of the job list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BulkAction {
    Cancel,
    Retry,
}

impl BulkAction {
    /// The states the action applies to (the API's rules).
    fn states(self) -> &'static [&'static str] {
        match self {
            BulkAction::Cancel => &["available", "running"],
            BulkAction::Retry => &["dead", "cancelled"],
        }
    }

    async fn run(self, state: &AppState, ids: Vec<String>) -> Result<u64, kairos_engine::OpsError> {
        let req = kairos_engine::ops::JobBulkRequest {
            ids: Some(ids),
            reason: (self == BulkAction::Cancel).then(|| "cancelled in the admin UI".to_string()),
            ..Default::default()
        };
        match self {
            BulkAction::Cancel => state.kairos.job_bulk_cancel(req).await,
            BulkAction::Retry => state.kairos.job_bulk_retry(req).await,
        }
    }
}

/// The job list's bulk form: the action, the ticked ids, the list's filters, and whether the
/// operator confirmed an action on every match.
#[derive(Debug, Default)]
struct BulkForm {
    csrf: String,
    action: String,
    ids: Vec<String>,
    filters: JobFilters,
    confirmed: bool,
}

impl BulkForm {
    /// Read the form body (`ids` repeats, which serde's form decoding does not take).
    fn parse(body: &[u8]) -> BulkForm {
        let mut f = BulkForm::default();
        for (k, v) in url::form_urlencoded::parse(body) {
            let v = v.into_owned();
            match k.as_ref() {
                "csrf" => f.csrf = v,
                "action" => f.action = v,
                "ids" => f.ids.push(v),
                "confirmed" => f.confirmed = v == "1",
                other => {
                    f.filters.set(other, v);
                }
            }
        }
        f
    }
}

/// Every job of `f` in a state `action` applies to, newest first, read page by page (1,000
/// ids a page): what "… all matching this filter" acts on.
async fn matching_ids(
    state: &AppState,
    f: &JobFilters,
    action: BulkAction,
) -> Result<Result<Vec<String>, String>, kairos_store::Error> {
    let base = match f.to_search() {
        Ok(q) => q,
        Err(msg) => return Ok(Err(msg)),
    };
    let states: Vec<String> = match &base.state {
        Some(s) if action.states().contains(&s.as_str()) => vec![s.clone()],
        Some(_) => Vec::new(),
        None => action.states().iter().map(|s| s.to_string()).collect(),
    };
    let mut ids = Vec::new();
    for st in states {
        let mut q = JobSearch {
            state: Some(st),
            before_id: None,
            limit: 1000,
            ..base.clone()
        };
        loop {
            let page = state.kairos.store().job_search(q.clone()).await?;
            let full = page.len() == 1000;
            q.before_id = page.last().map(|j| j.id.clone());
            ids.extend(page.into_iter().map(|j| j.id));
            if !full {
                break;
            }
        }
    }
    Ok(Ok(ids))
}

/// `POST /admin/jobs/bulk`: "cancel/retry selected" acts on the ticked jobs; "… all matching
/// this filter" first shows a confirmation with the count, and acts once confirmed. Every
/// action goes through the API's bulk cancel and retry (batches of 1,000, the same state
/// rules), and comes back to the list with a notice of how many jobs were acted on.
pub async fn bulk(
    op: Operator,
    State(state): State<AppState>,
    body: axum::body::Bytes,
) -> Response {
    let form = BulkForm::parse(&body);
    if !op.csrf_ok(&form.csrf) {
        return csrf_refused();
    }
    let (action, matching) = match form.action.as_str() {
        "cancel-selected" => (BulkAction::Cancel, false),
        "retry-selected" => (BulkAction::Retry, false),
        "cancel-matching" => (BulkAction::Cancel, true),
        "retry-matching" => (BulkAction::Retry, true),
        _ => return (axum::http::StatusCode::BAD_REQUEST, "unknown action").into_response(),
    };
    let verb = match action {
        BulkAction::Cancel => "cancelled",
        BulkAction::Retry => "retried",
    };
    let back = |notice: &str, done: u64| {
        let q = form.filters.query();
        let sep = if q.is_empty() { "" } else { "&" };
        Redirect::to(&format!("/admin/jobs?{q}{sep}notice={notice}&done={done}")).into_response()
    };
    if !matching {
        if form.ids.is_empty() {
            return back("bulk-none", 0);
        }
        if form.ids.len() > MAX_SELECTED {
            return back("bulk-too-many", form.ids.len() as u64);
        }
        return match action.run(&state, form.ids).await {
            Ok(n) => {
                tracing::info!(
                    jobs = n,
                    action = verb,
                    "bulk action on selected jobs from the admin UI"
                );
                back(&format!("bulk-{verb}"), n)
            }
            Err(e) => store_error(&op, &state, e).await,
        };
    }
    let ids = match matching_ids(&state, &form.filters, action).await {
        Ok(Ok(ids)) => ids,
        Ok(Err(msg)) => {
            let f = &form.filters;
            return op
                .page(&state, "jobs.html", context! { rows => Vec::<JobRow>::new(), f, error => msg, filter_pairs => f.pairs() })
                .await;
        }
        Err(e) => return store_error(&op, &state, e).await,
    };
    if !form.confirmed {
        return op
            .page(
                &state,
                "bulk_confirm.html",
                context! {
                    count => ids.len(),
                    action => form.action,
                    verb => match action { BulkAction::Cancel => "Cancel", BulkAction::Retry => "Retry" },
                    states => action.states(),
                    filter_pairs => form.filters.pairs(),
                    back => form.filters.query(),
                },
            )
            .await;
    }
    let mut done = 0;
    for chunk in ids.chunks(MAX_SELECTED) {
        match action.run(&state, chunk.to_vec()).await {
            Ok(n) => done += n,
            Err(e) => return store_error(&op, &state, e).await,
        }
    }
    tracing::info!(
        jobs = done,
        action = verb,
        "bulk action on every matching job from the admin UI"
    );
    back(&format!("bulk-{verb}"), done)
}

/// The list's notice after a bulk action.
fn bulk_notice(f: &JobFilters) -> Option<String> {
    let n = f.done.unwrap_or(0);
    Some(match f.notice.as_deref()? {
        "bulk-cancelled" => format!("Cancelled {n} job(s)."),
        "bulk-retried" => format!("Queued {n} job(s) again."),
        "bulk-none" => "No job was selected.".to_string(),
        "bulk-too-many" => format!(
            "{n} jobs selected: at most {MAX_SELECTED} at once; use \"all matching this filter\"."
        ),
        _ => return None,
    })
}
