//! `GET /v1/slo`: the SLO report — every check's result now, warnings with the time they
//! began. A warning is information, never an error status:
//! the answer is 200 with or without warnings. `kairos slo --json` prints the same shape.

use crate::AppState;
use crate::problem::{ApiResult, Problem};
use crate::views::ts;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use kairos_engine::monitor::{CheckResult, CheckStatus, Monitor, SloReport};
use serde::Serialize;
use utoipa::ToSchema;

/// The routes (mounted under `/v1/slo`).
pub fn router() -> Router<AppState> {
    Router::new().route("/", get(show))
}

/// One check's result on one subject.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CheckView {
    /// The check's name: `failure_rate`, `stuck_due`, `lease_expired`, `missed_firings`,
    /// `missing_artifacts`, `dead_runs`, … (docs/operations.md lists every check), or an
    /// added check.
    pub check: String,
    /// What it is about: a job kind (failure rate), a schedule id (missed firings, dead
    /// runs), a topic, or null (engine-wide).
    pub subject: Option<String>,
    /// `ok`, `warning`, `insufficient_data` or `error`.
    pub status: String,
    /// The measured value: a rate (0..1) or a count.
    pub value: Option<f64>,
    /// What the value is compared with.
    pub threshold: Option<f64>,
    /// Decided jobs, or expected firings, behind the value.
    pub sample: Option<i64>,
    /// A sentence for people.
    pub message: String,
    /// While warning: since when (RFC 3339).
    pub since: Option<String>,
}

/// The report.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SloView {
    /// When evaluated (RFC 3339).
    pub at: String,
    /// How many checks warn.
    pub warnings: usize,
    /// `ok` or `warning`.
    pub status: String,
    /// Every result.
    pub checks: Vec<CheckView>,
}

fn status(s: CheckStatus) -> &'static str {
    match s {
        CheckStatus::Ok => "ok",
        CheckStatus::Warning => "warning",
        CheckStatus::InsufficientData => "insufficient_data",
        CheckStatus::Error => "error",
    }
}

impl From<&CheckResult> for CheckView {
    fn from(c: &CheckResult) -> Self {
        CheckView {
            check: c.check.clone(),
            subject: c.subject.clone(),
            status: status(c.status).to_string(),
            value: c.value,
            threshold: c.threshold,
            sample: c.sample,
            message: c.message.clone(),
            since: c.since.map(ts),
        }
    }
}

impl From<&SloReport> for SloView {
    fn from(r: &SloReport) -> Self {
        SloView {
            at: ts(r.at),
            warnings: r.warnings,
            status: if r.warnings > 0 { "warning" } else { "ok" }.to_string(),
            checks: r.checks.iter().map(CheckView::from).collect(),
        }
    }
}

/// The SLO report now.
#[utoipa::path(operation_id = "slo_show", get, path = "/v1/slo", tag = "slo",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Every check's result; warnings included", body = SloView),
        (status = 503, description = "The database does not answer", body = Problem,
            content_type = "application/problem+json"),
    ))]
pub async fn show(State(state): State<AppState>) -> ApiResult<Json<SloView>> {
    let k = &state.kairos;
    let monitor = Monitor::new(state.monitor.as_ref().clone(), k.store().clone())
        .map_err(|e| Problem::invalid(e.field(), e.reason()))?;
    let report = monitor.report(k.clock().now()).await.map_err(|e| {
        tracing::warn!(error = %e, "SLO report: the database did not answer");
        Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "Service unavailable",
            "the database does not answer; try again shortly",
        )
    })?;
    Ok(Json(SloView::from(&report)))
}
