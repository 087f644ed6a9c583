//! The `webhook` channel of audience notifications: a subscriber whose subscription lists
//! `"webhook"` gets each period's notification POSTed to the recipient's own webhook, signed
//! (Standard Webhooks), beside (not instead of) the mail.
//!
//! An audience job of this channel is a `webhook` job whose payload names a `topic` and a
//! `recipient_id` (ids only). It goes through the same checks as the mail at send time
//! (recipient, suppression, subscription, entitlement: [`EmailHandler::prepare`]), then posts
//! `{"id", "type": "notification", "topic", "period_key", "recipient_id", "subject", "text",
//! "variant", "schedule_id", "fire_at"}` — never the address. The endpoint is the recipient's
//! as it is when the job runs; a recipient without one is skipped (`no_webhook`).

use super::handler::{EmailHandler, Prepared};
use crate::handler::{Handler, JobContext};
use crate::kinds::webhook::EndpointReads;
use crate::kinds::webhook::handler::post_to_endpoint;
use async_trait::async_trait;
use kairos_channels::WebhookSender;
use kairos_core::{Clock, Job, Outcome};
use kairos_store::Store;
use std::sync::Arc;
use std::time::Duration;

/// Whether `job` is an audience notification (rather than a plain webhook job).
pub fn is_notification(job: &Job) -> bool {
    let p = &job.payload;
    p.get("recipient_id").is_some_and(|v| v.is_string())
        && p.get("topic").is_some_and(|v| v.is_string())
        && job.channel.is_some()
}

/// The audience's `webhook` channel: posts a notification to the recipient's webhook. The
/// `email` kind runs these `webhook` jobs ([`super::Email`]'s `runs_instead`); plain webhook
/// jobs keep the webhook kind's handler.
pub struct WebhookChannel {
    notifier: Arc<EmailHandler>,
    /// The store, through endpoint reads shared by concurrent deliveries.
    reads: EndpointReads,
    clock: Arc<dyn Clock>,
    sender: WebhookSender,
}

impl WebhookChannel {
    /// Notifications through `notifier`'s checks, posted with `sender`.
    pub fn new(
        notifier: Arc<EmailHandler>,
        store: Arc<dyn Store>,
        clock: Arc<dyn Clock>,
        sender: WebhookSender,
    ) -> Self {
        WebhookChannel {
            notifier,
            reads: EndpointReads::new(store),
            clock,
            sender,
        }
    }

    async fn notify(&self, job: &Job, ctx: &JobContext) -> Outcome {
        let n = match self.notifier.prepare(job).await {
            Err(f) => return Outcome::Failed(f),
            Ok(Prepared::Skip(reason)) => return Outcome::Skipped(reason),
            Ok(Prepared::Ready(n)) => n,
        };
        let Some(ep_id) = n.recipient.endpoint_id.as_deref() else {
            return Outcome::Skipped("no_webhook".into());
        };
        let body = serde_json::json!({
            "id": job.id,
            "type": "notification",
            "topic": n.topic,
            "period_key": job.period_key,
            "recipient_id": n.recipient.id,
            "subject": n.subject,
            "text": n.text,
            "variant": n.variant,
            "schedule_id": job.schedule_id,
            "fire_at": job.fire_at.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
        })
        .to_string();
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
}

#[async_trait]
impl Handler for WebhookChannel {
    async fn handle(&self, job: &Job, ctx: &JobContext) -> Outcome {
        if is_notification(job) {
            self.notify(job, ctx).await
        } else {
            // Never routed here (the email kind takes only notifications); said, not assumed.
            Outcome::Failed(kairos_core::Failure::permanent(
                "not an audience notification: no topic and recipient in its payload",
            ))
        }
    }

    fn timeout(&self) -> Duration {
        self.notifier.timeout() + self.sender.config().timeout
    }
}
