//! `GET /admin/schedules/{id}`: one schedule as an operator needs it — its target (the
//! webhook endpoint or the http URL and method, credentials masked), payload, retry policy,
//! channels, misfire rule, next firings in its zone and in UTC, and its recent occurrences
//! with their status; pause or resume, fire now, edit and delete from here.

use crate::AppState;
use crate::admin::jobs::http_target_view;
use crate::admin::session::Operator;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use chrono::SecondsFormat;
use kairos_core::schedule::format_local;
use kairos_engine::ops::tz_of;
use minijinja::context;
use serde::Deserialize;

/// How many upcoming firings the page shows.
const UPCOMING: usize = 10;
/// How many recent occurrences the page shows.
const RECENT: i64 = 10;

/// A notice after an action on this page.
#[derive(Debug, Default, Deserialize)]
pub struct PageQuery {
    #[serde(default)]
    notice: Option<String>,
    #[serde(default)]
    created: Option<usize>,
}

fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

/// `GET /admin/schedules/{id}`.
pub async fn show(
    op: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    let s = match state.kairos.schedule_get(&id).await {
        Ok(s) => s,
        Err(e) if *e.kind() == kairos_engine::OpsErrorKind::NotFound => {
            let page = op
                .page(&state, "schedule.html", context! { missing => id })
                .await;
            return (StatusCode::NOT_FOUND, page).into_response();
        }
        Err(e) => return crate::admin::dashboard::store_error(&op, &state, e).await,
    };
    let view = match crate::routes::schedules::full_view(&state, &s).await {
        Ok(v) => v,
        Err(p) => return crate::admin::dashboard::store_error(&op, &state, p.detail).await,
    };
    // Each channel's target: its endpoint (webhook) or its stored http call.
    let mut channels = Vec::new();
    for c in &view.channels {
        let payload = c.payload.as_ref().unwrap_or(&view.payload);
        let http = match payload
            .get(kairos_engine::kinds::http::HTTP_TARGET_KEY)
            .and_then(|v| v.as_str())
        {
            Some(ht) => http_target_view(&state, ht).await,
            None => None,
        };
        let endpoint_url = match &c.endpoint_id {
            Some(ep) => state
                .kairos
                .store()
                .endpoint_get(ep)
                .await
                .ok()
                .flatten()
                .map(|e| crate::admin::mask_url(&e.url)),
            None => None,
        };
        channels.push(context! {
            name => c.name, kind => c.kind, endpoint_id => c.endpoint_id, endpoint_url, http,
            payload => c.payload.as_ref().map(pretty),
            retry => c.retry.as_ref().map(pretty),
        });
    }
    let upcoming: Vec<_> = match tz_of(&s) {
        Ok(tz) => state
            .kairos
            .schedule_upcoming(&s, UPCOMING)
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
    let recent = kairos_store::OccurrenceList {
        schedule_id: id.clone(),
        limit: Some(RECENT),
        ..Default::default()
    };
    let occurrences: Vec<_> = match state.kairos.occurrence_list(recent).await {
        Ok(counts) => crate::routes::occurrences::group(&id, counts)
            .into_iter()
            .map(|o| context! { period => o.period_key, fire_at => o.fire_at, status => o.status })
            .collect(),
        Err(e) => {
            tracing::warn!(error = %e, "admin schedule page: occurrences unreadable");
            Vec::new()
        }
    };
    let notice = match (q.notice.as_deref(), q.created) {
        (Some("fired"), Some(c)) => Some(format!(
            "Fired now: {c} job(s) created (0 means this period's jobs exist already)."
        )),
        (Some("paused"), _) => Some("Paused.".to_string()),
        (Some("resumed"), _) => Some("Resumed.".to_string()),
        (Some("created"), _) => Some("Created.".to_string()),
        (Some("updated"), _) => Some("Saved.".to_string()),
        (Some("refused"), _) => {
            Some("That action was refused; the schedule may have changed.".to_string())
        }
        _ => None,
    };
    op.page(
        &state,
        "schedule.html",
        context! {
            s => minijinja::Value::from_serialize(&view),
            spec => crate::admin::schedules::spec_text(&s.spec),
            payload => pretty(&view.payload),
            retry => view.retry.as_ref().map(pretty),
            channels, upcoming, occurrences, notice,
        },
    )
    .await
}
