//! `GET /v1/slo`: the SLO report — every check's result now, warnings with the time they
//! began, and when the background monitor last completed a pass. A warning is information,
//! never an error status: the answer is 200 with or without warnings. `kairos slo --json`
//! prints the same shape.
//!
//! `GET /v1/slo/alerts`: the stored alerts, each with its `id`; `POST
//! /v1/slo/alerts/{id}/ack` acknowledges the warning of a check whose cause can be fixed
//! (`dead_runs`, `missing_artifacts`): it recovers, and what it warned about does not warn
//! again.

use crate::AppState;
use crate::problem::{ApiResult, Problem};
use crate::views::ts;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use kairos_engine::monitor::{AckError, CheckResult, CheckStatus, Monitor, SloReport};
use kairos_store::SloAlert;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The routes (mounted under `/v1/slo`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(show))
        .route("/alerts", get(alerts))
        .route("/alerts/{id}/ack", post(ack))
}

/// One check's result on one subject.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
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
    #[schema(format = DateTime)]
    pub since: Option<String>,
}

/// The report.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct SloView {
    /// When evaluated (RFC 3339).
    #[schema(format = DateTime)]
    pub at: String,
    /// The end of the background monitor's last completed pass (RFC 3339), from the store;
    /// null before its first. Three intervals without one is the `monitor_stale` warning.
    #[schema(format = DateTime)]
    pub monitor_last_pass_at: Option<String>,
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
            monitor_last_pass_at: r.monitor_last_pass_at.map(ts),
            warnings: r.warnings,
            status: if r.warnings > 0 { "warning" } else { "ok" }.to_string(),
            checks: r.checks.iter().map(CheckView::from).collect(),
        }
    }
}

/// One stored alert: a check on one subject, warning or recovered.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AlertView {
    /// The alert's id (`check` or `check:subject`), for `POST /v1/slo/alerts/{id}/ack`.
    pub id: String,
    /// The check's name.
    pub check: String,
    /// What it is about, or null (engine-wide).
    pub subject: Option<String>,
    /// `warning` while active, else `ok`.
    pub status: String,
    /// Whether its current recovery is an acknowledgement (not the check passing).
    pub acked: bool,
    /// When it was last acknowledged (RFC 3339); null if never.
    #[schema(format = DateTime)]
    pub acked_at: Option<String>,
    /// When its current state began (RFC 3339).
    #[schema(format = DateTime)]
    pub since: String,
    /// What the check said when that state began.
    pub message: String,
}

impl From<SloAlert> for AlertView {
    fn from(a: SloAlert) -> Self {
        let acked = a.acked();
        let subject = a.key.split_once(':').map(|(_, s)| s.to_string());
        AlertView {
            id: a.key,
            check: a.check,
            subject,
            status: if a.active { "warning" } else { "ok" }.to_string(),
            acked,
            acked_at: a.acked_at.map(ts),
            since: ts(a.since),
            message: a.message,
        }
    }
}

/// The stored alerts.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
pub struct AlertList {
    /// Every alert, by id.
    pub data: Vec<AlertView>,
}

fn unavailable(e: &dyn std::fmt::Display) -> Problem {
    tracing::warn!(error = %e, "SLO: the database did not answer");
    Problem::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "unavailable",
        "Service unavailable",
        "the database does not answer; try again shortly",
    )
}

/// The stored alerts, warnings and recoveries, each with its id.
#[utoipa::path(operation_id = "slo_alerts", get, path = "/v1/slo/alerts", tag = "slo",
    security(("bearer" = [])),
    responses(
        (status = 200, description = "Every stored alert", body = AlertList),
        (status = 503, description = "The database does not answer", body = Problem,
            content_type = "application/problem+json"),
    ))]
pub async fn alerts(State(state): State<AppState>) -> ApiResult<Json<AlertList>> {
    let stored = state
        .kairos
        .store()
        .slo_alert_list()
        .await
        .map_err(|e| unavailable(&e))?;
    Ok(Json(AlertList {
        data: stored.into_iter().map(AlertView::from).collect(),
    }))
}

/// Acknowledge a warning whose cause can be fixed (`dead_runs`, `missing_artifacts`): it
/// recovers now (the alert webhook hears the recovery once), and what it warned about does not
/// warn again; something new (a run that dies later) does. An alert that is not warning is
/// answered as it is.
#[utoipa::path(operation_id = "slo_alert_ack", post, path = "/v1/slo/alerts/{id}/ack", tag = "slo",
    params(("id" = String, Path, description = "Alert id (`check:subject`), from `GET /v1/slo/alerts`")),
    security(("bearer" = [])),
    responses(
        (status = 200, description = "The alert, acknowledged", body = AlertView),
        (status = 404, description = "No such alert", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "The check recovers on its own when its measure falls (a rate, stuck work)",
            body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn ack(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> ApiResult<Json<AlertView>> {
    let k = &state.kairos;
    match kairos_engine::monitor::ack(k.store().as_ref(), &id, k.clock().now()).await {
        Ok(a) => Ok(Json(AlertView::from(a))),
        Err(AckError::Unknown) => Err(Problem::new(
            StatusCode::NOT_FOUND,
            "not-found",
            "Not found",
            format!("no SLO alert has the id {id:?}"),
        )),
        Err(e @ AckError::NotAckable(_)) => Err(Problem::new(
            StatusCode::CONFLICT,
            "conflict",
            "Conflict",
            e.to_string(),
        )),
        Err(AckError::Store(e)) => Err(unavailable(&e)),
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
        .map_err(|e| Problem::invalid(e.field(), e.reason()))?
        .with_kinds(k.kinds().clone());
    let report = monitor
        .report(k.clock().now())
        .await
        .map_err(|e| unavailable(&e))?;
    Ok(Json(SloView::from(&report)))
}
