//! `/hooks/…`: signed provider webhooks.
//!
//! - `POST /hooks/resend`: Resend signs with Svix — `svix-id`, `svix-timestamp`,
//!   `svix-signature` (space-separated `v1,<base64>` entries; any one valid entry passes, so
//!   secrets rotate), HMAC-SHA256 over `id.timestamp.body` with a `whsec_` secret
//!   (`KAIROS_RESEND_WEBHOOK_SECRET`, comma-separated during rotation). Enabled only when
//!   the secret is set.
//! - `POST /hooks/standard/{source}`: any sender signing per Standard Webhooks — the same
//!   scheme with `webhook-*` headers — with per-source secrets
//!   (`KAIROS_INBOUND_SECRETS=source=whsec_…,source=whsec_…`).
//!
//! Verification is [`kairos_channels::signing::verify`] (constant-time, 5 minutes of
//! tolerance either way against the injected clock). A bad signature is 401 and
//! changes nothing. A verified event is stored once by its id and acted on in the
//! same transaction ([`Kairos::inbound_receive`](kairos_engine::Kairos::inbound_receive));
//! a repeat, an unknown type and an unknown bounce sub-type all answer 200. These routes
//! stay up in maintenance mode. Each event is counted in `kairos_inbound_events_total`
//! (a refused one as `rejected`, without reading its body).

use crate::AppState;
use crate::problem::{ApiResult, Problem};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::{Json, Router};
use kairos_channels::signing::{VerifyError, WebhookSecret, verify};
use kairos_engine::ops::InboundReceipt;

/// Accepted clock skew of a webhook timestamp, either way (5 minutes).
pub const TOLERANCE_SECS: i64 = 300;

pub use crate::config::inbound::{InboundConfig, MIN_UNSUBSCRIBE_SECRET};

/// The routes (mounted under `/hooks`).
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/resend", post(resend))
        .route("/standard/{source}", post(standard))
}

fn unauthorized(why: &str) -> Problem {
    Problem::new(
        StatusCode::UNAUTHORIZED,
        "bad-signature",
        "Bad signature",
        format!("the webhook signature does not verify: {why}"),
    )
}

/// Check the signature headers `{prefix}-id`, `{prefix}-timestamp`, `{prefix}-signature`;
/// the event id on success.
fn verified(
    state: &AppState,
    headers: &HeaderMap,
    prefix: &str,
    secrets: &[WebhookSecret],
    body: &[u8],
) -> Result<String, Problem> {
    let header = |name: &str| {
        headers
            .get(format!("{prefix}-{name}"))
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| unauthorized(&format!("the {prefix}-{name} header is missing")))
    };
    let id = header("id")?;
    let timestamp: i64 = header("timestamp")?.parse().map_err(|_| {
        unauthorized(&format!(
            "{prefix}-timestamp is not a number of seconds since the epoch"
        ))
    })?;
    let signature = header("signature")?;
    let now = state.kairos.clock().now().timestamp();
    verify(secrets, id, timestamp, body, signature, now, TOLERANCE_SECS).map_err(|e| {
        tracing::warn!(prefix, reason = %e, "inbound webhook refused");
        match e {
            VerifyError::TimestampTooOld | VerifyError::TimestampTooNew => {
                unauthorized(&format!("{e} (more than 5 minutes off)"))
            }
            _ => unauthorized(&e.to_string()),
        }
    })?;
    Ok(id.to_string())
}

/// Count a refused event. Its body is not read: unverified, it is anyone's text. Only
/// configured sources get here, so the `source` label stays bounded.
fn rejected(source: &str) {
    kairos_engine::telemetry::inbound_event(source, "", "rejected");
}

fn not_enabled(what: &str) -> Problem {
    Problem::new(StatusCode::NOT_FOUND, "not-found", "Not found", what)
}

/// A Resend event (Svix-signed).
#[utoipa::path(operation_id = "hooks_resend", post, path = "/hooks/resend", tag = "inbound",
    request_body(content = Object, description = "Resend's event: {type, created_at, data}"),
    params(
        ("svix-id" = String, Header, description = "The event id (stored once)"),
        ("svix-timestamp" = i64, Header, description = "Seconds since the epoch"),
        ("svix-signature" = String, Header, description = "`v1,<base64>` entries, space-separated"),
    ),
    responses(
        (status = 200, description = "Stored (or a repeat: nothing changed)", body = InboundReceipt),
        (status = 401, description = "The signature does not verify; nothing changed", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "KAIROS_RESEND_WEBHOOK_SECRET is not set", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn resend(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<InboundReceipt>> {
    if state.inbound.resend.is_empty() {
        return Err(not_enabled(
            "/hooks/resend is off: set KAIROS_RESEND_WEBHOOK_SECRET",
        ));
    }
    let id = verified(&state, &headers, "svix", &state.inbound.resend, &body)
        .inspect_err(|_| rejected("resend"))?;
    Ok(Json(
        state.kairos.inbound_receive("resend", &id, &body).await?,
    ))
}

/// An event of another provider, signed per Standard Webhooks.
#[utoipa::path(operation_id = "hooks_standard", post, path = "/hooks/standard/{source}", tag = "inbound",
    request_body(content = Object, description = "The event: {type, data}"),
    params(
        ("source" = String, Path, description = "The source, as named in KAIROS_INBOUND_SECRETS"),
        ("webhook-id" = String, Header, description = "The event id (stored once)"),
        ("webhook-timestamp" = i64, Header, description = "Seconds since the epoch"),
        ("webhook-signature" = String, Header, description = "`v1,<base64>` entries, space-separated"),
    ),
    responses(
        (status = 200, description = "Stored (or a repeat: nothing changed)", body = InboundReceipt),
        (status = 401, description = "The signature does not verify; nothing changed", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No secret is configured for this source", body = Problem, content_type = "application/problem+json"),
    ))]
pub async fn standard(
    State(state): State<AppState>,
    Path(source): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<InboundReceipt>> {
    let Some(secrets) = state.inbound.standard.get(&source) else {
        return Err(not_enabled(
            "no secret for this source in KAIROS_INBOUND_SECRETS",
        ));
    };
    let id =
        verified(&state, &headers, "webhook", secrets, &body).inspect_err(|_| rejected(&source))?;
    Ok(Json(
        state.kairos.inbound_receive(&source, &id, &body).await?,
    ))
}
