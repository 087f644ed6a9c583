//! Creating and editing a schedule from the admin: the form holds the same JSON body as
//! `POST /v1/schedules` and `PUT /v1/schedules/{id}`, read by the same parser and validated
//! by the same ops functions, so the admin accepts exactly what the API accepts and refuses
//! with the API's own message (`name: …`, `cron: …`). A refused form is shown again, with the
//! operator's text, as a 422; it changes nothing.

use crate::AppState;
use crate::admin::filters::urlencode;
use crate::admin::session::{Operator, csrf_refused};
use crate::problem::{Problem, parse_json};
use crate::views::ScheduleBody;
use axum::extract::{Form, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use minijinja::context;
use serde::Deserialize;

/// The create/edit form.
#[derive(Debug, Deserialize)]
pub struct ScheduleForm {
    csrf: String,
    /// The API's JSON body.
    #[serde(default)]
    body: String,
}

/// The starting text of a new schedule.
const EXAMPLE: &str = r#"{
  "name": "daily-report",
  "cron": "0 9 * * *",
  "timezone": "UTC",
  "kind": "http",
  "http": {"url": "https://example.com/report", "method": "POST"}
}"#;

/// The fields of a schedule's view that its API body takes back as they are. Targets
/// (`webhook`, `http`, `channels`) carry secrets the admin never holds: the operator gives
/// them again, as with `PUT /v1/schedules/{id}`.
const EDITABLE: &[&str] = &[
    "name",
    "cron",
    "at",
    "every",
    "start_at",
    "timezone",
    "kind",
    "payload",
    "retry",
    "misfire",
    "misfire_threshold",
    "misfire_window",
    "period",
    "catch_up",
];

async fn form_page(
    op: &Operator,
    state: &AppState,
    status: StatusCode,
    id: Option<&str>,
    body: &str,
    problem: Option<Problem>,
) -> Response {
    let page = op
        .page(
            state,
            "schedule_form.html",
            context! {
                id, body,
                problem => problem.map(|p| context! { detail => p.detail, field => p.field, status => p.status }),
            },
        )
        .await;
    (status, page).into_response()
}

/// `GET /admin/schedules/new`.
pub async fn new_form(op: Operator, State(state): State<AppState>) -> Response {
    form_page(&op, &state, StatusCode::OK, None, EXAMPLE, None).await
}

/// `GET /admin/schedules/{id}/edit`: the form holding the schedule's definition as the API
/// takes it (its target to give again).
pub async fn edit_form(
    op: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Response {
    let s = match state.kairos.schedule_get(&id).await {
        Ok(s) => s,
        Err(e) => {
            let p = Problem::from(e);
            let status = StatusCode::from_u16(p.status).unwrap_or(StatusCode::NOT_FOUND);
            return form_page(&op, &state, status, Some(&id), "", Some(p)).await;
        }
    };
    let view = crate::views::ScheduleView::new(&s, None);
    let mut body = serde_json::Map::new();
    if let Ok(serde_json::Value::Object(all)) = serde_json::to_value(&view) {
        for (k, v) in all {
            if EDITABLE.contains(&k.as_str()) && !v.is_null() {
                body.insert(k, v);
            }
        }
    }
    let text = serde_json::to_string_pretty(&body).unwrap_or_default();
    form_page(&op, &state, StatusCode::OK, Some(&id), &text, None).await
}

/// `POST /admin/schedules/new`.
pub async fn create(
    op: Operator,
    State(state): State<AppState>,
    Form(form): Form<ScheduleForm>,
) -> Response {
    if !op.csrf_ok(&form.csrf) {
        return csrf_refused();
    }
    let result = match parse_json::<ScheduleBody>(form.body.as_bytes()) {
        Ok(b) => state.kairos.schedule_create(b).await.map_err(Problem::from),
        Err(p) => Err(p),
    };
    match result {
        Ok(s) => {
            tracing::info!(schedule_id = %s.id, "schedule created from the admin UI");
            Redirect::to(&format!(
                "/admin/schedules/{}?notice=created",
                urlencode(&s.id)
            ))
            .into_response()
        }
        Err(p) => refused(&op, &state, None, &form.body, p).await,
    }
}

/// `POST /admin/schedules/{id}/edit`.
pub async fn update(
    op: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
    Form(form): Form<ScheduleForm>,
) -> Response {
    if !op.csrf_ok(&form.csrf) {
        return csrf_refused();
    }
    let result = match parse_json::<ScheduleBody>(form.body.as_bytes()) {
        Ok(b) => state
            .kairos
            .schedule_update(&id, b)
            .await
            .map_err(Problem::from),
        Err(p) => Err(p),
    };
    match result {
        Ok(s) => {
            tracing::info!(schedule_id = %s.id, "schedule edited from the admin UI");
            Redirect::to(&format!(
                "/admin/schedules/{}?notice=updated",
                urlencode(&s.id)
            ))
            .into_response()
        }
        Err(p) => refused(&op, &state, Some(&id), &form.body, p).await,
    }
}

/// The form again with the API's problem: its status (400, 409, 422) and message.
async fn refused(
    op: &Operator,
    state: &AppState,
    id: Option<&str>,
    body: &str,
    p: Problem,
) -> Response {
    let status = StatusCode::from_u16(p.status).unwrap_or(StatusCode::UNPROCESSABLE_ENTITY);
    form_page(op, state, status, id, body, Some(p)).await
}
