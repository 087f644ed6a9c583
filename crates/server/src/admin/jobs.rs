//! Admin pages for jobs: the dashboard, the filtered list, one job with its attempts, dead
//! jobs, and the replay/cancel actions.

use crate::AppState;
use crate::admin::session::{Operator, csrf_refused};
use crate::admin::{CsrfForm, state_label};
use axum::extract::{Form, Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use chrono::{DateTime, NaiveDate, NaiveDateTime, SecondsFormat, Utc};
use kairos_core::Job;
use kairos_store::{Attempt, JobSearch};
use minijinja::context;
use serde::{Deserialize, Serialize};

/// Rows per page.
const PAGE: i64 = 50;

/// The filters of the jobs list; every one optional, all combined.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
pub struct JobFilters {
    /// State.
    #[serde(default)]
    pub state: Option<String>,
    /// Kind (the channel).
    #[serde(default)]
    pub kind: Option<String>,
    /// Schedule id.
    #[serde(default)]
    pub schedule: Option<String>,
    /// Period key.
    #[serde(default)]
    pub period: Option<String>,
    /// Topic (audience jobs).
    #[serde(default)]
    pub topic: Option<String>,
    /// Recipient id (audience jobs).
    #[serde(default)]
    pub recipient: Option<String>,
    /// Created at or after (`YYYY-MM-DD` or `YYYY-MM-DDTHH:MM`, UTC).
    #[serde(default)]
    pub from: Option<String>,
    /// Created before.
    #[serde(default)]
    pub to: Option<String>,
    /// Keyset cursor: the last id of the previous page.
    #[serde(default)]
    pub before: Option<String>,
    /// A notice code from a redirect.
    #[serde(default)]
    pub notice: Option<String>,
}

fn blank(v: &Option<String>) -> Option<String> {
    v.as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn parse_instant(field: &str, v: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(v) {
        return Ok(t.to_utc());
    }
    if let Ok(t) = NaiveDateTime::parse_from_str(v, "%Y-%m-%dT%H:%M") {
        return Ok(t.and_utc());
    }
    if let Ok(d) = NaiveDate::parse_from_str(v, "%Y-%m-%d") {
        return Ok(d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc());
    }
    Err(format!(
        "{field}: \"{v}\" is not a date (YYYY-MM-DD) or a time (YYYY-MM-DDTHH:MM, UTC)"
    ))
}

impl JobFilters {
    /// The store query, or the reason the filters are invalid (naming the field).
    pub fn to_search(&self) -> Result<JobSearch, String> {
        let state = blank(&self.state);
        if let Some(s) = &state
            && state_label(s) == "unknown"
            && s != "unknown"
        {
            return Err(format!(
                "state: \"{s}\" is not one of available, running, succeeded, skipped, cancelled, dead"
            ));
        }
        Ok(JobSearch {
            state,
            kind: blank(&self.kind),
            schedule_id: blank(&self.schedule),
            period_key: blank(&self.period),
            topic: blank(&self.topic),
            recipient_id: blank(&self.recipient),
            created_from: blank(&self.from)
                .map(|v| parse_instant("from", &v))
                .transpose()?,
            created_to: blank(&self.to)
                .map(|v| parse_instant("to", &v))
                .transpose()?,
            before_id: blank(&self.before),
            limit: PAGE,
        })
    }

    /// The query string of these filters with another cursor.
    fn query_with_before(&self, before: &str) -> String {
        let mut f = self.clone();
        f.before = Some(before.to_string());
        f.notice = None;
        serde_urlencoded_pairs(&f)
    }
}

/// `a=b&c=d` of the non-empty filters.
fn serde_urlencoded_pairs(f: &JobFilters) -> String {
    let pairs = [
        ("state", &f.state),
        ("kind", &f.kind),
        ("schedule", &f.schedule),
        ("period", &f.period),
        ("topic", &f.topic),
        ("recipient", &f.recipient),
        ("from", &f.from),
        ("to", &f.to),
        ("before", &f.before),
    ];
    pairs
        .iter()
        .filter_map(|(k, v)| blank(v).map(|v| format!("{k}={}", urlencode(&v))))
        .collect::<Vec<_>>()
        .join("&")
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn fmt_t(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// A job as the pages show it.
#[derive(Debug, Serialize)]
pub struct JobRow {
    id: String,
    kind: String,
    state: &'static str,
    schedule_id: Option<String>,
    period_key: Option<String>,
    attempt: i32,
    max_attempts: u32,
    run_at: String,
    created_at: String,
    finished_at: Option<String>,
    last_error: Option<String>,
    reason: Option<String>,
    replayable: bool,
    cancellable: bool,
}

impl From<&Job> for JobRow {
    fn from(j: &Job) -> Self {
        let state = state_label(j.state.as_str());
        JobRow {
            id: j.id.clone(),
            kind: j.kind.as_str().to_string(),
            state,
            schedule_id: j.schedule_id.clone(),
            period_key: j.period_key.clone(),
            attempt: j.attempt,
            max_attempts: j.retry.max_attempts(),
            run_at: fmt_t(j.run_at),
            created_at: fmt_t(j.created_at),
            finished_at: j.finished_at.map(fmt_t),
            last_error: j.last_error.clone(),
            reason: j.reason.clone(),
            replayable: matches!(state, "dead" | "cancelled" | "skipped" | "available"),
            cancellable: matches!(state, "available" | "running"),
        }
    }
}

/// An attempt as the job page shows it.
#[derive(Debug, Serialize)]
struct AttemptRow {
    attempt: i32,
    started_at: String,
    duration_ms: i64,
    outcome: String,
    error_class: Option<String>,
    status_code: Option<i32>,
    error: Option<String>,
    provider_id: Option<String>,
    response: Option<String>,
    node: Option<String>,
}

impl From<&Attempt> for AttemptRow {
    fn from(a: &Attempt) -> Self {
        AttemptRow {
            attempt: a.attempt,
            started_at: fmt_t(a.started_at),
            duration_ms: (a.finished_at - a.started_at).num_milliseconds(),
            outcome: a.outcome.clone(),
            error_class: a.error_class.clone(),
            status_code: a.status_code,
            error: a.error.clone(),
            provider_id: a.provider_id.clone(),
            response: a.response.clone(),
            node: a.node.clone(),
        }
    }
}

/// `GET /admin`: jobs by state and the SLO panel.
pub async fn dashboard(op: Operator, State(state): State<AppState>) -> Response {
    let counts = match state.kairos.store().job_count_by_state().await {
        Ok(c) => c,
        Err(e) => return store_error(&op, &state, e).await,
    };
    let counts: Vec<_> = counts
        .into_iter()
        .map(|(s, n)| context! { state => state_label(&s), raw => s, count => n })
        .collect();
    let now = state.kairos.clock().now();
    let (slo, slo_error) = match slo_panel(&state, now).await {
        Ok(rows) => (rows, None),
        Err(msg) => (Vec::new(), Some(msg)),
    };
    op.page(
        &state,
        "dashboard.html",
        context! { counts, slo, slo_error, now => fmt_t(now) },
    )
    .await
}

/// Every SLO check's result now (the same evaluation as `GET /v1/slo` and `kairos slo`).
async fn slo_panel(state: &AppState, now: DateTime<Utc>) -> Result<Vec<minijinja::Value>, String> {
    use kairos_engine::monitor::{CheckStatus, Monitor};
    let k = &state.kairos;
    let monitor = Monitor::new(
        state.monitor.as_ref().clone(),
        k.store().clone(),
        k.clock().clone(),
    )
    .map_err(|e| format!("the monitor's configuration is invalid: {e}"))?;
    let report = monitor.report(now).await.map_err(|e| {
        tracing::warn!(error = %e, "admin: SLO report failed");
        "the SLO report could not be computed; the server log has the reason".to_string()
    })?;
    Ok(report
        .checks
        .iter()
        .map(|c| {
            let status = match c.status {
                CheckStatus::Ok => "ok",
                CheckStatus::Warning => "warning",
                CheckStatus::InsufficientData => "insufficient data",
                CheckStatus::Error => "error",
            };
            context! {
                check => c.check, subject => c.subject, status,
                value => c.value.map(|v| format!("{v:.3}")),
                threshold => c.threshold.map(|v| format!("{v:.3}")),
                sample => c.sample, message => c.message,
                since => c.since.map(fmt_t),
            }
        })
        .collect())
}

async fn store_error(op: &Operator, state: &AppState, e: impl std::fmt::Display) -> Response {
    tracing::error!(error = %e, "admin page: store error");
    op.page(
        state,
        "dashboard.html",
        context! { error => "The store could not be read; the server log has the reason." },
    )
    .await
}

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
}

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
    op.page(&state, "dead.html", context! { rows, q, next })
        .await
}

/// The "replay all" form.
#[derive(Debug, Deserialize)]
pub struct ReplayAllForm {
    csrf: String,
    #[serde(default)]
    kind: Option<String>,
}

/// `POST /admin/dead/replay`: replay every dead job (of a kind).
pub async fn dead_replay(
    op: Operator,
    State(state): State<AppState>,
    Form(form): Form<ReplayAllForm>,
) -> Response {
    if !op.csrf_ok(&form.csrf) {
        return csrf_refused();
    }
    let kind = blank(&form.kind);
    let ids = match state.kairos.dead_job_ids(kind.as_deref()).await {
        Ok(ids) => ids,
        Err(e) => return store_error(&op, &state, e).await,
    };
    let mut replayed = 0u64;
    for id in &ids {
        if state.kairos.job_retry(id).await.is_ok() {
            replayed += 1;
        }
    }
    tracing::info!(replayed, kind = ?kind, "replayed dead jobs from the admin UI");
    let mut to = format!("/admin/dead?replayed={replayed}");
    if let Some(k) = kind {
        to.push_str(&format!("&kind={}", urlencode(&k)));
    }
    Redirect::to(&to).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_name_the_field_of_bad_input() {
        let f = JobFilters {
            state: Some("exploded".into()),
            ..Default::default()
        };
        assert!(f.to_search().unwrap_err().starts_with("state:"));
        let f = JobFilters {
            from: Some("yesterday".into()),
            ..Default::default()
        };
        assert!(f.to_search().unwrap_err().starts_with("from:"));
        let f = JobFilters {
            state: Some("dead".into()),
            kind: Some(" webhook ".into()),
            from: Some("2026-11-29".into()),
            to: Some("2026-11-30T12:30".into()),
            period: Some("".into()),
            ..Default::default()
        };
        let q = f.to_search().unwrap();
        assert_eq!(q.kind.as_deref(), Some("webhook"));
        assert_eq!(q.period_key, None, "blank filters are no filter");
        assert_eq!(
            q.created_from.unwrap().to_rfc3339(),
            "2026-11-29T00:00:00+00:00"
        );
        assert_eq!(
            q.created_to.unwrap().to_rfc3339(),
            "2026-11-30T12:30:00+00:00"
        );
    }

    #[test]
    fn next_page_link_keeps_filters_and_escapes() {
        let f = JobFilters {
            state: Some("dead".into()),
            period: Some("2026-W48".into()),
            kind: Some("a&b".into()),
            ..Default::default()
        };
        assert_eq!(
            f.query_with_before("job_1"),
            "state=dead&kind=a%26b&period=2026-W48&before=job_1"
        );
    }
}
