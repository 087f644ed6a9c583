//! `/admin/endpoints/{id}`: one webhook endpoint as the Svix dashboard shows one — its health,
//! and the recent deliveries to it, each with the request sent (headers and body) and the
//! response (status and excerpt) of its last attempt; resend a delivery, send a test event,
//! rotate the secret, enable it again.
//!
//! What the page shows of a request is rebuilt from what is stored: the body is the job's
//! envelope (`kinds::webhook::handler::envelope`, byte for byte what was posted), the headers
//! are the Standard Webhooks ones with the job id and the attempt's start; the signature is
//! never stored (it is derived from the secret), so it is shown as such.

use crate::AppState;
use crate::admin::dashboard::store_error;
use crate::admin::endpoints::endpoint_row;
use crate::admin::filters::urlencode;
use crate::admin::session::{Operator, csrf_refused};
use crate::admin::views::fmt_t;
use axum::extract::{Form, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use kairos_store::JobSearch;
use minijinja::context;
use serde::Deserialize;

/// How many recent deliveries the page shows.
const RECENT: i64 = 20;

/// A form of the endpoint pages: the CSRF token, and `from=page` when pressed on the
/// endpoint's own page (which it then returns to).
#[derive(Debug, Deserialize)]
pub struct PageForm {
    /// The session's CSRF token.
    pub csrf: String,
    #[serde(default)]
    from: Option<String>,
}

impl PageForm {
    /// Where the action returns: the endpoint's page or the list.
    pub fn back(&self, id: &str) -> String {
        if self.from.as_deref() == Some("page") {
            format!("/admin/endpoints/{}", urlencode(id))
        } else {
            "/admin/endpoints".to_string()
        }
    }
}

/// The page's notice.
#[derive(Debug, Default, Deserialize)]
pub struct PageQuery {
    #[serde(default)]
    notice: Option<String>,
    #[serde(default)]
    job: Option<String>,
}

/// `GET /admin/endpoints/{id}`.
pub async fn show(
    op: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    page(&op, &state, &id, &q, None).await
}

async fn page(
    op: &Operator,
    state: &AppState,
    id: &str,
    q: &PageQuery,
    secret: Option<String>,
) -> Response {
    let now = state.kairos.clock().now();
    let status = match state.kairos.endpoint_status(id).await {
        Ok(s) => s,
        Err(e) if *e.kind() == kairos_engine::OpsErrorKind::NotFound => {
            let page = op
                .page(state, "endpoint.html", context! { missing => id })
                .await;
            return (StatusCode::NOT_FOUND, page).into_response();
        }
        Err(e) => return store_error(op, state, e).await,
    };
    let jobs = match state
        .kairos
        .store()
        .job_search(JobSearch {
            endpoint_id: Some(id.to_string()),
            // A recipient's webhook notifications post to this endpoint too.
            recipient_endpoint_kinds: state.kairos.kinds().posting_to_endpoints(),
            limit: RECENT,
            ..Default::default()
        })
        .await
    {
        Ok(j) => j,
        Err(e) => return store_error(op, state, e).await,
    };
    let mut deliveries = Vec::with_capacity(jobs.len());
    for j in &jobs {
        let attempts = state
            .kairos
            .store()
            .attempt_list(&j.id)
            .await
            .unwrap_or_default();
        let last = attempts.last();
        let body =
            serde_json::to_string_pretty(&kairos_engine::kinds::webhook::handler::envelope(j))
                .unwrap_or_default();
        let headers = vec![
            "content-type: application/json".to_string(),
            format!("webhook-id: {}", j.id),
            format!(
                "webhook-timestamp: {}",
                last.map(|a| a.started_at.timestamp().to_string())
                    .unwrap_or_else(|| "(not sent yet)".into())
            ),
            "webhook-signature: v1,… (derived from the secret; not stored)".to_string(),
        ];
        let row = crate::admin::views::JobRow::new(state.kairos.kinds(), j);
        deliveries.push(context! {
            job => row, headers, body,
            attempts => attempts.len(),
            sent_at => last.map(|a| fmt_t(a.started_at)),
            status => last.and_then(|a| a.status_code),
            outcome => last.map(|a| a.outcome.to_string()),
            error => last.and_then(|a| a.error.clone()),
            response => last.and_then(|a| a.response.clone()),
        });
    }
    let notice = match q.notice.as_deref() {
        Some("enabled") => Some("Enabled: later jobs to it are sent again.".to_string()),
        Some("resent") => Some(format!(
            "Resent: job {} posts it again.",
            q.job.as_deref().unwrap_or("?")
        )),
        Some("test-sent") => Some(format!(
            "Test event queued as job {}.",
            q.job.as_deref().unwrap_or("?")
        )),
        Some("refused") => {
            Some("That action was refused; the endpoint or job may have changed.".to_string())
        }
        _ => None,
    };
    op.page(
        state,
        "endpoint.html",
        context! { e => endpoint_row(status, now), deliveries, notice, secret, recent => RECENT },
    )
    .await
}

/// The resend form: which delivery (job).
#[derive(Debug, Deserialize)]
pub struct ResendForm {
    csrf: String,
    job: String,
}

/// `POST /admin/endpoints/{id}/resend`: post a delivery again. A dead or cancelled one is
/// replayed (the same job, so the same `webhook-id`: a receiver that deduplicates sees one
/// message); one that was delivered is sent as a new job with the same payload (a new
/// `webhook-id`: replaying a delivered job is refused, as everywhere, since it would send
/// twice under one id).
pub async fn resend(
    op: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
    Form(form): Form<ResendForm>,
) -> Response {
    if !op.csrf_ok(&form.csrf) {
        return csrf_refused();
    }
    let back = format!("/admin/endpoints/{}", urlencode(&id));
    let job = match state.kairos.job_get(&form.job).await {
        Ok((j, _)) if j.endpoint_id.as_deref() == Some(id.as_str()) => j,
        _ => return Redirect::to(&format!("{back}?notice=refused")).into_response(),
    };
    let sent = match job.state.as_str() {
        "dead" | "cancelled" => state.kairos.job_retry(&job.id).await.map(|j| j.id),
        _ => enqueue(&state, &id, job.payload.clone()).await,
    };
    match sent {
        Ok(j) => {
            tracing::info!(endpoint_id = %id, job_id = %j, "delivery resent from the admin UI");
            Redirect::to(&format!("{back}?notice=resent&job={}", urlencode(&j))).into_response()
        }
        Err(_) => Redirect::to(&format!("{back}?notice=refused")).into_response(),
    }
}

/// A new webhook job to endpoint `id` with `payload` (the endpoint's stored URL and secret:
/// the same endpoint row).
async fn enqueue(
    state: &AppState,
    id: &str,
    payload: serde_json::Value,
) -> Result<String, kairos_engine::OpsError> {
    let ep = state.kairos.endpoint_get(id).await?;
    let (job, _) = state
        .kairos
        .job_enqueue(kairos_engine::ops::NewJob {
            webhook: Some(kairos_engine::ops::WebhookTarget {
                url: ep.url,
                secret: ep.secret,
            }),
            payload: Some(payload),
            ..Default::default()
        })
        .await?;
    Ok(job.id)
}

/// `POST /admin/endpoints/{id}/test`: queue a test event to the endpoint (`{"test": true}`).
pub async fn test_event(
    op: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
    Form(form): Form<PageForm>,
) -> Response {
    if !op.csrf_ok(&form.csrf) {
        return csrf_refused();
    }
    let back = format!("/admin/endpoints/{}", urlencode(&id));
    let payload = serde_json::json!({"test": true, "sent_from": "kairos admin"});
    match enqueue(&state, &id, payload).await {
        Ok(j) => {
            Redirect::to(&format!("{back}?notice=test-sent&job={}", urlencode(&j))).into_response()
        }
        Err(_) => Redirect::to(&format!("{back}?notice=refused")).into_response(),
    }
}

/// `POST /admin/endpoints/{id}/rotate`: a new generated secret, the current one signing
/// beside it for the default window. The new secret is shown once, on this response (never
/// in a URL, a log or a later page).
pub async fn rotate(
    op: Operator,
    State(state): State<AppState>,
    Path(id): Path<String>,
    Form(form): Form<PageForm>,
) -> Response {
    if !op.csrf_ok(&form.csrf) {
        return csrf_refused();
    }
    let rotation = kairos_engine::ops::SecretRotation {
        secret: None,
        window_secs: None,
    };
    match state.kairos.endpoint_rotate(&id, rotation).await {
        Ok(r) => {
            tracing::info!(endpoint_id = %id, "endpoint secret rotated from the admin UI");
            page(&op, &state, &id, &PageQuery::default(), r.generated_secret).await
        }
        Err(_) => Redirect::to(&format!(
            "/admin/endpoints/{}?notice=refused",
            urlencode(&id)
        ))
        .into_response(),
    }
}
