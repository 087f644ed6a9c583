//! The `email` kind: one mail to one recipient about one topic.
//!
//! The job holds ids only — `topic`, `recipient_id`, `target`, `channel`, `variant`.
//! When it runs, the handler reads, in order, and ends `skipped` with the reason (not
//! `failed`) when the recipient is no longer entitled:
//!
//! 1. the recipient (`recipient_missing`, `recipient_inactive`);
//! 2. the suppression list (`suppressed`);
//! 3. the subscription (`unsubscribed`: gone or disabled);
//! 4. the topic's entitlement URL, if it has one (`not_entitled`).
//!
//! It then renders the topic's templates (strict: a missing variable fails the job, it does
//! not send a blank), adds the unsubscribe headers and the `topic`/`variant` tags
//!, and sends through the configured transport with the job id as the message's id
//! (`Idempotency-Key` on Resend). An SMTP 550 suppresses the address (`hard_bounce`) with the
//! cascade of a reported bounce: its subscriptions are disabled and the suppression log says
//! why.
//! Nothing here logs an address.

use crate::handler::{Handler, JobContext};
use async_trait::async_trait;
use kairos_channels::email::entitlement::{Entitlement, EntitlementChecker};
use kairos_channels::email::template;
use kairos_channels::email::unsubscribe::UnsubscribeKey;
use kairos_channels::email::{EmailMessage, EmailTransport};
use kairos_core::{Failure, Job, Outcome};
use kairos_store::{Recipient, RecipientState, Store, SuppressionApply, Topic};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// Email settings (`KAIROS_EMAIL_*`, `KAIROS_PUBLIC_URL`, `KAIROS_UNSUBSCRIBE_SECRET`).
#[derive(Debug, Clone)]
pub struct EmailConfig {
    /// `From` of every mail (`KAIROS_EMAIL_FROM`).
    pub from: String,
    /// Base of links in mails (`KAIROS_PUBLIC_URL`), without a trailing slash.
    pub public_url: String,
    /// The one-click unsubscribe key; `None`: mails link to `settings_url` instead.
    pub unsubscribe_key: Option<UnsubscribeKey>,
    /// Where recipients manage their subscriptions (default `{public_url}/settings`).
    pub settings_url: Option<String>,
    /// Default timeout of a topic's entitlement question. Default 5 s.
    pub entitlement_timeout: Duration,
    /// Allow entitlement URLs on private and loopback addresses.
    pub allow_private_targets: bool,
    /// Where templates render: in this process (the default) or in worker processes under
    /// OS limits (`KAIROS_TEMPLATE_WORKERS`).
    pub renderer: template::Renderer,
}

impl Default for EmailConfig {
    fn default() -> Self {
        EmailConfig {
            from: "kairos <kairos@localhost>".into(),
            public_url: "http://127.0.0.1:8080".into(),
            unsubscribe_key: None,
            settings_url: None,
            entitlement_timeout: Duration::from_secs(5),
            allow_private_targets: false,
            renderer: template::Renderer::InProcess,
        }
    }
}

/// A notification ready to deliver: checked and rendered.
#[derive(Debug)]
pub(crate) struct Notice {
    /// The recipient, read now.
    pub recipient: Recipient,
    /// The topic's name.
    pub topic: String,
    /// The A/B variant, if the topic has it.
    pub variant: Option<String>,
    /// Rendered subject.
    pub subject: String,
    /// Rendered HTML body.
    pub html: Option<String>,
    /// Rendered text body.
    pub text: Option<String>,
    /// Unsubscribe headers.
    pub headers: Vec<(String, String)>,
    /// Provider tags (topic, variant).
    pub tags: Vec<(String, String)>,
}

/// What [`EmailHandler::prepare`] decided.
#[derive(Debug)]
pub(crate) enum Prepared {
    /// Not delivered, with the reason (not entitled, suppressed, unsubscribed …).
    Skip(String),
    /// Deliver this.
    Ready(Box<Notice>),
}

/// Sends email jobs.
pub struct EmailHandler {
    store: Arc<dyn Store>,
    transport: EmailTransport,
    cfg: EmailConfig,
    entitlement: EntitlementChecker,
}

impl EmailHandler {
    /// A handler sending through `transport`.
    pub fn new(
        store: Arc<dyn Store>,
        transport: EmailTransport,
        cfg: EmailConfig,
    ) -> Result<Self, kairos_channels::Error> {
        let entitlement = EntitlementChecker::new(cfg.allow_private_targets)?;
        Ok(EmailHandler {
            store,
            transport,
            cfg,
            entitlement,
        })
    }

    /// The unsubscribe link and headers of a mail to `recipient_id` about `topic`.
    pub fn unsubscribe(&self, recipient_id: &str, topic: &str) -> (String, Vec<(String, String)>) {
        let base = self.cfg.public_url.trim_end_matches('/');
        match &self.cfg.unsubscribe_key {
            Some(k) => {
                let url = format!("{base}/unsubscribe?token={}", k.token(recipient_id, topic));
                let headers = vec![
                    ("List-Unsubscribe".into(), format!("<{url}>")),
                    (
                        "List-Unsubscribe-Post".into(),
                        "List-Unsubscribe=One-Click".into(),
                    ),
                ];
                (url, headers)
            }
            None => {
                let url = self
                    .cfg
                    .settings_url
                    .clone()
                    .unwrap_or_else(|| format!("{base}/settings"));
                (
                    url.clone(),
                    vec![("List-Unsubscribe".into(), format!("<{url}>"))],
                )
            }
        }
    }

    /// Everything a notification needs before it is delivered on any channel: the
    /// recipient, suppression, subscription and entitlement checks (a skip names the reason),
    /// then the rendered templates. Shared by the `email` and `webhook` channels, so every
    /// channel is checked the same way at send time.
    pub(crate) async fn prepare(&self, job: &Job) -> Result<Prepared, Failure> {
        let p = &job.payload;
        let field = |k: &str| p.get(k).and_then(|v| v.as_str()).map(str::to_string);
        let (Some(topic_name), Some(rid)) = (field("topic"), field("recipient_id")) else {
            return Err(Failure::permanent(
                "email job payload needs \"topic\" and \"recipient_id\"",
            ));
        };
        let store_err = |what: &str, e: kairos_store::Error| {
            Failure::transient(format!("reading the {what} failed: {e}"))
        };
        let Some(r) = self
            .store
            .recipient_get(&rid)
            .await
            .map_err(|e| store_err("recipient", e))?
        else {
            return Ok(Prepared::Skip("recipient_missing".into()));
        };
        if r.state != RecipientState::Active {
            return Ok(Prepared::Skip("recipient_inactive".into()));
        }
        // Before the subscription: a suppression disables the address's subscriptions too
        //, and the reason to report is the suppression.
        if self
            .store
            .suppression_get(&r.email)
            .await
            .map_err(|e| store_err("suppression list", e))?
            .is_some()
        {
            return Ok(Prepared::Skip("suppressed".into()));
        }
        let sub = self
            .store
            .subscription_get(&rid, &topic_name)
            .await
            .map_err(|e| store_err("subscription", e))?;
        if !sub.as_ref().is_some_and(|s| s.enabled) {
            return Ok(Prepared::Skip("unsubscribed".into()));
        }
        let topic = self
            .store
            .topic_get(&topic_name)
            .await
            .map_err(|e| store_err("topic", e))?
            .ok_or_else(|| Failure::permanent(format!("topic {topic_name:?} does not exist")))?;
        if let Some(url) = &topic.entitlement_url {
            let timeout = topic
                .entitlement_timeout_ms
                .and_then(|ms| u64::try_from(ms).ok())
                .map(Duration::from_millis)
                .unwrap_or(self.cfg.entitlement_timeout);
            let q = json!({"recipient_id": rid, "topic": topic_name, "target": p.get("target"),
                "period_key": job.period_key, "job_id": job.id});
            match self.entitlement.ask(url, timeout, &q).await {
                Entitlement::Yes => {}
                Entitlement::No => return Ok(Prepared::Skip("not_entitled".into())),
                Entitlement::Unknown(f) => return Err(f),
            }
        }
        // A digest's fan-out mail: the artifact is read now, like the address.
        let artifact = match p.get("artifact") {
            Some(a) => {
                let (Some(name), Some(period)) = (
                    a.get("name").and_then(|v| v.as_str()),
                    a.get("period_key").and_then(|v| v.as_str()),
                ) else {
                    return Err(Failure::permanent(
                        "email job payload: \"artifact\" needs \"name\" and \"period_key\"",
                    ));
                };
                let key = kairos_store::ArtifactKey {
                    name: name.to_string(),
                    period_key: period.to_string(),
                };
                match self
                    .store
                    .artifact_get(key)
                    .await
                    .map_err(|e| store_err("artifact", e))?
                {
                    Some(a) => json!({"name": a.name, "period_key": a.period_key,
                                      "content": a.content, "data": a.data}),
                    // Pruned since: the mail has nothing to carry.
                    None => return Ok(Prepared::Skip("artifact_missing".into())),
                }
            }
            None => serde_json::Value::Null,
        };
        let (unsubscribe_url, headers) = self.unsubscribe(&rid, &topic_name);
        let variant = field("variant").filter(|v| topic.variants.iter().any(|x| &x.name == v));
        let ctx = json!({
            "recipient": {"id": r.id, "email": r.email, "timezone": r.timezone,
                          "locale": r.locale, "attributes": r.attributes},
            "target": p.get("target"),
            "period": {"key": job.period_key, "fire_at": job.fire_at},
            "topic": topic_name,
            "variant": variant,
            "payload": p,
            "artifact": artifact,
            "unsubscribe_url": unsubscribe_url,
        });
        let (subject, html, text) = pick_templates(&topic, variant.as_deref());
        // Rendered under the template limits (fuel, output size; in a worker process also
        // memory and time), off the async workers. A template over a limit will be over it
        // on every retry: permanent. A worker that could not be started is not the
        // template's fault: transient.
        let mut parts = vec![("subject".to_string(), subject.to_string())];
        parts.extend(html.map(|h| ("html".to_string(), h.to_string())));
        parts.extend(text.map(|t| ("text".to_string(), t.to_string())));
        let mut rendered = self
            .cfg
            .renderer
            .render(parts, ctx)
            .await
            .map_err(|e| match e {
                // The recipient's id (never the address) says whose mail did not render.
                template::RenderError::Template(e) => {
                    Failure::permanent(format!("recipient {rid}: {e}"))
                }
                e @ template::RenderError::Unavailable(_) => Failure::transient(e.to_string()),
            })?
            .into_iter();
        let subject = rendered.next().unwrap_or_default();
        let html = html.and_then(|_| rendered.next());
        let text = text.and_then(|_| rendered.next());
        let mut tags = vec![("topic".to_string(), topic_name.clone())];
        if let Some(v) = &variant {
            tags.push(("variant".into(), v.clone()));
        }
        Ok(Prepared::Ready(Box::new(Notice {
            subject,
            html,
            text,
            recipient: r,
            topic: topic_name,
            variant,
            headers,
            tags,
        })))
    }

    async fn run(&self, job: &Job) -> Result<Outcome, Failure> {
        let n = match self.prepare(job).await? {
            Prepared::Skip(reason) => return Ok(Outcome::Skipped(reason)),
            Prepared::Ready(n) => *n,
        };
        let r = &n.recipient;
        let rid = r.id.clone();
        let msg = EmailMessage {
            id: job.id.clone(),
            from: self.cfg.from.clone(),
            to: r.email.clone(),
            subject: n.subject,
            html: n.html,
            text: n.text,
            headers: n.headers,
            tags: n.tags,
        };
        let sent = self.transport.send(&msg).await;
        if sent.hard_bounce {
            // The same cascade as a bounce reported by the provider's webhook: the address is
            // suppressed, every subscription with it is disabled, and the log says why.
            let apply = SuppressionApply {
                address: r.email.clone(),
                reason: "hard_bounce".into(),
                source_event_id: Some(job.id.clone()),
                now: job.run_at.max(job.created_at),
            };
            match self.store.suppression_apply(apply).await {
                Ok(done) => tracing::warn!(job_id = %job.id, recipient_id = %rid,
                    subscriptions_disabled = done.subscriptions_disabled,
                    "hard bounce: the recipient's address is suppressed"),
                Err(e) => {
                    tracing::error!(job_id = %job.id, error = %e, "suppressing a hard bounce failed")
                }
            }
        }
        Ok(sent.outcome)
    }
}

/// The subject, HTML and text templates of `variant` (its own where it has them, the
/// topic's otherwise).
fn pick_templates<'a>(
    topic: &'a Topic,
    variant: Option<&str>,
) -> (&'a str, Option<&'a str>, Option<&'a str>) {
    let v = variant.and_then(|name| topic.variants.iter().find(|v| v.name == name));
    (
        v.and_then(|v| v.subject.as_deref())
            .unwrap_or(&topic.subject),
        v.and_then(|v| v.html.as_deref()).or(topic.html.as_deref()),
        v.and_then(|v| v.text.as_deref()).or(topic.text.as_deref()),
    )
}

#[async_trait]
impl Handler for EmailHandler {
    async fn handle(&self, job: &Job, _ctx: &JobContext) -> Outcome {
        match self.run(job).await {
            Ok(o) => o,
            Err(f) => Outcome::Failed(f),
        }
    }

    fn timeout(&self) -> Duration {
        // The transport and the entitlement question have their own timeouts; this outer
        // limit covers both plus reading the recipient.
        self.transport.timeout() + self.cfg.entitlement_timeout.max(Duration::from_secs(30))
    }
}
