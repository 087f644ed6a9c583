//! Admin page for schedules: each with its next five firings in its zone and in UTC, and
//! pause, resume and "fire now".

use crate::AppState;
use crate::admin::filters::urlencode;
use crate::admin::session::{Operator, csrf_refused};
use axum::extract::{Form, Path, Query, State};
use axum::response::{IntoResponse, Redirect, Response};
use chrono::SecondsFormat;
use kairos_core::schedule::{ScheduleSpec, format_local};
use kairos_engine::ops::tz_of;
use minijinja::context;
use serde::Deserialize;

/// How many upcoming firings each schedule shows.
const UPCOMING: usize = 5;

/// A notice after an action.
#[derive(Debug, Default, Deserialize)]
pub struct Notice {
    #[serde(default)]
    notice: Option<String>,
    #[serde(default)]
    created: Option<usize>,
}

/// `GET /admin/schedules`.
pub async fn list(
    op: Operator,
    State(state): State<AppState>,
    Query(n): Query<Notice>,
) -> Response {
    let schedules = match state.kairos.schedule_list(None, Some(1000)).await {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "admin schedules: store error");
            return op
                .page(
                    &state,
                    "schedules.html",
                    context! { error => "The store could not be read; the server log has the reason." },
                )
                .await;
        }
    };
    let rows: Vec<_> = schedules
        .iter()
        .map(|s| {
            let upcoming: Vec<_> = match tz_of(s) {
                Ok(tz) => state
                    .kairos
                    .schedule_upcoming(s, UPCOMING)
                    .into_iter()
                    .map(|t| {
                        context! {
                            local => format_local(tz, t),
                            utc => t.to_rfc3339_opts(SecondsFormat::Secs, true),
                        }
                    })
                    .collect(),
                Err(_) => Vec::new(),
            };
            let st = s.state.as_str();
            context! {
                id => s.id, name => s.name, kind => s.kind.as_str(),
                spec => spec_text(&s.spec), timezone => s.timezone,
                state => match st { "active" | "paused" | "finished" => st, _ => "unknown" },
                overlap => s.overlap.as_str(),
                held => s.buffered_fire_at.map(|t| t.to_rfc3339_opts(SecondsFormat::Secs, true)),
                upcoming,
            }
        })
        .collect();
    let notice = match (n.notice.as_deref(), n.created) {
        (Some("fired"), Some(c)) => Some(format!(
            "Fired now: {c} job(s) created (0 means this period's jobs exist already)."
        )),
        (Some("paused"), _) => Some("Paused.".to_string()),
        (Some("resumed"), _) => Some("Resumed.".to_string()),
        (Some("deleted"), _) => {
            Some("Deleted; its jobs already created stay until they finish.".to_string())
        }
        (Some("refused"), _) => {
            Some("That action was refused; the schedule may have changed.".to_string())
        }
        _ => None,
    };
    op.page(&state, "schedules.html", context! { rows, notice })
        .await
}

/// The form of a schedule action: the CSRF token, and `from=page` when it was pressed on the
/// schedule's own page (which it then returns to).
#[derive(Debug, Deserialize)]
pub struct ActForm {
    csrf: String,
    #[serde(default)]
    from: Option<String>,
    /// The "sure" box a delete needs (a deleted schedule cannot be brought back).
    #[serde(default)]
    confirm: Option<String>,
}

/// `POST /admin/schedules/{id}/{pause|resume|fire|delete}`.
pub async fn act(
    op: Operator,
    State(state): State<AppState>,
    Path((id, action)): Path<(String, String)>,
    Form(form): Form<ActForm>,
) -> Response {
    if !op.csrf_ok(&form.csrf) {
        return csrf_refused();
    }
    let back = if form.from.as_deref() == Some("page") {
        format!("/admin/schedules/{}", urlencode(&id))
    } else {
        "/admin/schedules".to_string()
    };
    let to = match action.as_str() {
        "pause" | "resume" => match state.kairos.schedule_pause(&id, action == "pause").await {
            Ok(_) => format!("{back}?notice={action}d"),
            Err(_) => format!("{back}?notice=refused"),
        },
        "fire" => match state.kairos.schedule_fire_now(&id).await {
            Ok(f) => format!("{back}?notice=fired&created={}", f.created.len()),
            Err(_) => format!("{back}?notice=refused"),
        },
        // The list, not the page: the page is gone.
        "delete" if form.confirm.as_deref() != Some("1") => format!("{back}?notice=refused"),
        "delete" => match state.kairos.schedule_delete(&id).await {
            Ok(()) => {
                tracing::info!(schedule_id = %id, "schedule deleted from the admin UI");
                "/admin/schedules?notice=deleted".to_string()
            }
            Err(_) => format!("{back}?notice=refused"),
        },
        _ => return (axum::http::StatusCode::NOT_FOUND, "no such action").into_response(),
    };
    Redirect::to(&to).into_response()
}

/// The schedule's clock as one line.
pub fn spec_text(spec: &ScheduleSpec) -> String {
    match spec {
        ScheduleSpec::Cron { expr } => format!("cron {expr}"),
        ScheduleSpec::At { at } => format!("at {}", at.to_rfc3339_opts(SecondsFormat::Secs, true)),
        ScheduleSpec::Every { every_ms, .. } => format!(
            "every {}",
            kairos_core::retry::format_duration(std::time::Duration::from_millis(
                u64::try_from(*every_ms).unwrap_or(0)
            ))
        ),
    }
}

/// The occurrences page's query.
#[derive(Debug, Default, Deserialize)]
pub struct OccurrenceQuery {
    #[serde(default)]
    period: Option<String>,
    /// The occurrence's status (the API's `state`); empty: any.
    #[serde(default)]
    state: Option<String>,
}

/// `GET /admin/schedules/{id}/occurrences`: each firing (period) with its channels side by
/// side and the derived status — success, partial, failure, skipped, cancelled, pending.
pub async fn occurrences(
    op: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<OccurrenceQuery>,
) -> Response {
    let period = q.period.filter(|p| !p.trim().is_empty());
    let status = q.state.filter(|s| !s.trim().is_empty());
    let schedule = match state.kairos.schedule_get(&id).await {
        Ok(s) => s,
        Err(_) => {
            let page = op
                .page(&state, "occurrences.html", context! { missing => id })
                .await;
            return (axum::http::StatusCode::NOT_FOUND, page).into_response();
        }
    };
    let filter = kairos_store::OccurrenceList {
        schedule_id: id.clone(),
        period_key: period.clone(),
        limit: Some(50),
        status: status.clone(),
    };
    let (rows, error) = match state.kairos.occurrence_list(filter).await {
        Ok(counts) => (crate::routes::occurrences::group(&id, counts), None),
        Err(e) => (Vec::new(), Some(e.to_string())),
    };
    let channels: std::collections::BTreeSet<String> = rows
        .iter()
        .flat_map(|o| o.channels.iter().map(|c| c.channel.clone()))
        .collect();
    let rows: Vec<_> = rows
        .iter()
        .map(|o| {
            let cells: Vec<_> = channels
                .iter()
                .map(|ch| {
                    o.channels.iter().find(|c| &c.channel == ch).map(|c| {
                        let states: Vec<String> =
                            c.states.iter().map(|(s, n)| format!("{n} {s}")).collect();
                        context! { status => c.status, states => states.join(", ") }
                    })
                })
                .collect();
            context! {
                period => o.period_key, fire_at => o.fire_at, status => o.status, cells,
            }
        })
        .collect();
    op.page(
        &state,
        "occurrences.html",
        context! {
            schedule => context! {
                id => schedule.id, name => schedule.name, overlap => schedule.overlap.as_str(),
            },
            channels, rows, period, error, state => status,
            states => kairos_engine::ops::api_enums::OCCURRENCE_STATUSES
                .iter()
                .filter(|s| **s != "missed")
                .collect::<Vec<_>>(),
        },
    )
    .await
}
