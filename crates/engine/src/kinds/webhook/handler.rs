//! The `webhook` kind: POST the job's payload to its endpoint with Standard Webhooks headers.
//!
//! The body is an envelope that stays byte-identical on every retry:
//! `{"id": job id, "type": "job"|"schedule", "schedule_id", "fire_at", "period_key", "data": payload}`.
//! `webhook-id` is the job id, the same on every retry, so a receiver that deduplicates sees a
//! crash between "delivered" and "recorded" as one message.

use super::endpoints::EndpointReads;
use crate::handler::{Handler, JobContext};
use async_trait::async_trait;
use kairos_channels::WebhookSender;
use kairos_channels::signing::WebhookSecret;
use kairos_core::{Clock, Failure, Job, Outcome};
use kairos_store::{EndpointDisable, EndpointFailureRecord, Store};
use std::sync::Arc;
use std::time::Duration;

/// Sends webhook jobs.
pub struct WebhookHandler {
    /// The store, through endpoint reads shared by concurrent deliveries.
    reads: EndpointReads,
    clock: Arc<dyn Clock>,
    sender: WebhookSender,
}

impl WebhookHandler {
    /// A handler sending through `sender`, reading endpoints from `store`.
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, sender: WebhookSender) -> Self {
        WebhookHandler {
            reads: EndpointReads::new(store),
            clock,
            sender,
        }
    }
}

/// The request body of a webhook job.
pub fn envelope(job: &Job) -> serde_json::Value {
    serde_json::json!({
        "id": job.id,
        "type": if job.schedule_id.is_some() { "schedule" } else { "job" },
        "schedule_id": job.schedule_id,
        "fire_at": job.fire_at.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
        "period_key": job.period_key,
        "data": job.payload,
    })
}

/// POST `body` to endpoint `ep_id`, signed (by the new and the previous secret while a
/// rotation window is open at `now`), with `job_id` as `webhook-id`; a disabled endpoint
/// skips (after a 410 or a failure streak), and a 410 disables it. Shared by plain webhook jobs and the `webhook`
/// channel of audience notifications. The endpoint is read through `reads`: deliveries
/// asking for it at the same moment share one read.
pub(crate) async fn post_to_endpoint(
    reads: &EndpointReads,
    clock: &dyn Clock,
    sender: &WebhookSender,
    ep_id: &str,
    job_id: &str,
    now: chrono::DateTime<chrono::Utc>,
    body: &[u8],
) -> Outcome {
    let store = reads.store();
    let ep = match reads.get(ep_id).await {
        Ok(Some(ep)) => ep,
        Ok(None) => {
            return Outcome::Failed(Failure::permanent(format!(
                "endpoint {ep_id} does not exist"
            )));
        }
        Err(e) => {
            return Outcome::Failed(Failure::transient(format!(
                "reading the endpoint failed: {e}"
            )));
        }
    };
    if ep.disabled_at.is_some() {
        return Outcome::Skipped("endpoint_disabled".into());
    }
    let secret = match WebhookSecret::parse(&ep.secret) {
        Ok(s) => s,
        Err(e) => {
            return Outcome::Failed(Failure::permanent(format!(
                "endpoint secret is not valid: {}",
                e.reason()
            )));
        }
    };
    // During a rotation window the previous secret signs too, after the new one.
    let previous = match ep.previous_secret_at(now).map(WebhookSecret::parse) {
        None => None,
        Some(Ok(s)) => Some(s),
        Some(Err(e)) => {
            return Outcome::Failed(Failure::permanent(format!(
                "endpoint previous secret is not valid: {}",
                e.reason()
            )));
        }
    };
    let secrets: Vec<&WebhookSecret> = std::iter::once(&secret).chain(previous.as_ref()).collect();
    let outcome = sender
        .send_signed(&ep.url, &secrets, job_id, now, body)
        .await;
    if let Outcome::Failed(f) = &outcome {
        // What `GET /v1/endpoints` shows as the endpoint's last failure.
        let error = match f.status_code {
            Some(code) if !f.message.contains(&code.to_string()) => {
                format!("HTTP {code}: {}", f.message)
            }
            _ => f.message.clone(),
        };
        let record = EndpointFailureRecord {
            id: ep.id.clone(),
            error,
            now: clock.now(),
        };
        if let Err(e) = store.endpoint_failure_record(record).await {
            tracing::warn!(endpoint_id = %ep.id, error = %e, "recording the endpoint's failure failed");
        }
    }
    if let Outcome::Failed(f) = &outcome
        && f.disable_endpoint
    {
        let disable = EndpointDisable {
            id: ep.id.clone(),
            reason: "HTTP 410 Gone".into(),
            now: clock.now(),
        };
        if let Err(e) = store.endpoint_disable(disable).await {
            tracing::error!(endpoint_id = %ep.id, error = %e, "disabling the endpoint failed");
        } else {
            tracing::warn!(endpoint_id = %ep.id, "endpoint answered 410 Gone: disabled");
        }
    }
    outcome
}

#[async_trait]
impl Handler for WebhookHandler {
    async fn handle(&self, job: &Job, ctx: &JobContext) -> Outcome {
        let Some(ep_id) = &job.endpoint_id else {
            return Outcome::Failed(Failure::permanent("webhook job has no endpoint"));
        };
        let body = envelope(job).to_string();
        post_to_endpoint(
            &self.reads,
            self.clock.as_ref(),
            &self.sender,
            ep_id,
            &job.id,
            ctx.now,
            body.as_bytes(),
        )
        .await
    }

    fn timeout(&self) -> Duration {
        // The sender enforces its own timeout and classifies it; this outer limit only catches
        // a hang outside the request (reading the endpoint).
        self.sender.config().timeout + Duration::from_secs(5)
    }
}
