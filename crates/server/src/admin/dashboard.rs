//! `GET /admin`: jobs per state, throughput, the queue's depth and lateness over time, and the
//! SLO panel.

use crate::AppState;
use crate::admin::charts;
use crate::admin::search::RefreshQuery;
use crate::admin::session::Operator;
use crate::admin::state_label;
use crate::admin::views::fmt_t;
use axum::extract::{Query, State};
use axum::response::Response;
use chrono::{DateTime, Utc};
use minijinja::context;

/// `GET /admin`: jobs by state and the SLO panel.
pub async fn dashboard(
    op: Operator,
    State(state): State<AppState>,
    Query(r): Query<RefreshQuery>,
) -> Response {
    let counts = match state
        .job_counts
        .read(state.kairos.store(), state.kairos.clock())
        .await
    {
        Ok(c) => c,
        Err(e) => return store_error(&op, &state, e).await,
    };
    let now = state.kairos.clock().now();
    // When the finished states were counted, if not for this page, or that their first count
    // is still running (a large table is counted in the background, `crate::job_counts`).
    let count_retry = state.job_counts.retry_at().map(fmt_t);
    let counting = counts.retained_at.is_none();
    let counted_at = counts
        .retained_at
        .filter(|at| now - *at >= chrono::Duration::seconds(1))
        .map(fmt_t);
    let counts: Vec<_> = counts
        .by_state()
        .into_iter()
        .map(|(s, n)| context! { state => state_label(&s), raw => s, count => n })
        .collect();
    let (slo, slo_at, slo_error) = match slo_panel(&state, now).await {
        Ok(panel) => (panel.rows, panel.at, None),
        Err(msg) => (Vec::new(), None, Some(msg)),
    };
    let hour = charts::chart(
        &state,
        "chart-hour",
        "Jobs finished per minute, last hour",
        now,
        chrono::Duration::minutes(1),
        60,
    )
    .await;
    let day = charts::chart(
        &state,
        "chart-day",
        "Jobs finished per 15 minutes, last day",
        now,
        chrono::Duration::minutes(15),
        96,
    )
    .await;
    let (hour, day) = match (hour, day) {
        (Ok(h), Ok(d)) => (h, d),
        (Err(e), _) | (_, Err(e)) => return store_error(&op, &state, e).await,
    };
    let timeline = match crate::admin::timeline::charts(&state, now).await {
        Ok(t) => t,
        Err(e) => return store_error(&op, &state, e).await,
    };
    let latest = timeline.latest.as_ref().map(|s| {
        context! {
            minute => fmt_t(s.minute), due => s.due, available => s.available,
            running => s.running, started => s.started, lateness_p99_ms => s.lateness_p99_ms,
        }
    });
    let backlog = state
        .kairos
        .store()
        .job_backlog(kairos_store::JobBacklog {
            now,
            stuck_before: now,
            lease_expired_before: now,
        })
        .await
        .ok();
    let queue = backlog.map(|b| {
        context! {
            due => b.due,
            oldest_secs => b.oldest_due_at.map(|t| (now - t).num_seconds().max(0)),
            lease_expired => b.lease_expired,
        }
    });
    op.page(
        &state,
        "dashboard.html",
        context! {
            counts, counted_at, counting, count_retry, slo, slo_at, slo_error, now => fmt_t(now),
            hour_svg => minijinja::Value::from_safe_string(hour.svg),
            day_svg => minijinja::Value::from_safe_string(day.svg),
            hour => context! { succeeded => hour.succeeded, dead => hour.dead },
            day => context! { succeeded => day.succeeded, dead => day.dead },
            queue,
            depth_hour_svg => minijinja::Value::from_safe_string(timeline.depth_hour),
            depth_day_svg => minijinja::Value::from_safe_string(timeline.depth_day),
            late_hour_svg => minijinja::Value::from_safe_string(timeline.late_hour),
            late_day_svg => minijinja::Value::from_safe_string(timeline.late_day),
            latest,
            refresh => r.seconds(), refresh_path => "/admin",
        },
    )
    .await
}

/// The SLO panel: its rows, and when they were found if by the monitor's last pass (`None`:
/// evaluated for this page).
struct SloPanel {
    rows: Vec<minijinja::Value>,
    at: Option<String>,
}

/// Every SLO check's result: the background monitor's last pass (at most a minute old by
/// default), or, before its first pass and while it is stale, an evaluation now (the same as
/// `GET /v1/slo` and `kairos slo`).
async fn slo_panel(state: &AppState, now: DateTime<Utc>) -> Result<SloPanel, String> {
    use kairos_engine::monitor::{CheckStatus, Monitor};
    let k = &state.kairos;
    let monitor = Monitor::new(state.monitor.as_ref().clone(), k.store().clone())
        .map_err(|e| format!("the monitor's configuration is invalid: {e}"))?
        .with_kinds(k.kinds().clone());
    let failed = |e: kairos_store::Error| {
        tracing::warn!(error = %e, "admin: SLO report failed");
        "the SLO report could not be computed; the server log has the reason".to_string()
    };
    let (report, at) = match monitor.report_last(now).await.map_err(failed)? {
        Some(r) => {
            let at = fmt_t(r.at);
            (r, Some(at))
        }
        None => (monitor.report(now).await.map_err(failed)?, None),
    };
    let rows = report
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
        .collect();
    Ok(SloPanel { rows, at })
}

/// The page shown when the store cannot be read (the reason goes to the log, not the page).
pub async fn store_error(op: &Operator, state: &AppState, e: impl std::fmt::Display) -> Response {
    tracing::error!(error = %e, "admin page: store error");
    op.page(
        state,
        "dashboard.html",
        context! { error => "The store could not be read; the server log has the reason." },
    )
    .await
}
