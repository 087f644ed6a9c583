//! Operations on audiences: recipients, topics, subscriptions, occurrences, and the
//! audience branch of schedules (`kind: email` with a `topic`). Validation is here, shared by
//! the API and the CLI; the error names the field.

use super::{Kairos, tz_of};
use crate::error::OpsError;
use crate::kinds::TopicUse;
use chrono::{DateTime, Utc};
use kairos_channels::email::template::RenderError;
use kairos_core::JobKind;
use kairos_core::schedule::parse_timezone;
use kairos_store::*;
use serde::Deserialize;

/// A recipient (`PUT /v1/recipients/{id}`, and each item of the bulk upsert).
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = RecipientBody))]
#[serde(deny_unknown_fields)]
pub struct NewRecipient {
    /// The id (bulk upsert only; the path gives it otherwise).
    #[serde(default)]
    pub id: Option<String>,
    /// Email address.
    #[cfg_attr(
        feature = "openapi",
        schema(
            max_length = 254,
            pattern = r#"^[^\s\x00-\x1f\x7f-\x9f<>,;"@]+@[^\s\x00-\x1f\x7f-\x9f<>,;"@]+\.[^\s\x00-\x1f\x7f-\x9f<>,;"@]+$"#
        )
    )]
    pub email: String,
    /// IANA time zone (default `UTC`).
    #[serde(default)]
    pub timezone: Option<String>,
    /// Locale (`ja-JP`).
    #[serde(default)]
    pub locale: Option<String>,
    /// Free attributes for templates (a JSON object).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub attributes: Option<serde_json::Value>,
    /// `active` (default) or `disabled`.
    #[serde(default)]
    pub state: Option<String>,
    /// The recipient's webhook (`{"url", "secret"}`), for subscriptions with the `webhook`
    /// channel: each notification is POSTed there, signed (Standard Webhooks).
    #[serde(default)]
    pub webhook: Option<super::WebhookTarget>,
}

/// One A/B variant of a topic.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = VariantBody))]
#[serde(deny_unknown_fields)]
pub struct NewVariant {
    /// Name (`[A-Za-z0-9_-]`, the `variant` tag).
    #[cfg_attr(feature = "openapi", schema(pattern = "^[A-Za-z0-9_-]{1,64}$"))]
    pub name: String,
    /// Relative weight (default 1).
    #[serde(default)]
    pub weight: Option<u32>,
    /// Subject template of this variant.
    #[serde(default)]
    pub subject: Option<String>,
    /// HTML template of this variant.
    #[serde(default)]
    pub html: Option<String>,
    /// Text template of this variant.
    #[serde(default)]
    pub text: Option<String>,
}

/// A topic (`PUT /v1/topics/{name}`).
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = TopicBody))]
#[serde(deny_unknown_fields)]
pub struct NewTopic {
    /// Subject template (minijinja); not blank.
    #[cfg_attr(feature = "openapi", schema(pattern = r"\S"))]
    pub subject: String,
    /// HTML template.
    #[serde(default)]
    pub html: Option<String>,
    /// Text template.
    #[serde(default)]
    pub text: Option<String>,
    /// A/B variants.
    #[serde(default)]
    pub variants: Vec<NewVariant>,
    /// Asked at send time whether the recipient is still entitled (yes/no).
    #[serde(default)]
    pub entitlement_url: Option<String>,
    /// Timeout of that question in milliseconds, 1 to 60000 (default 5000).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 60000))]
    pub entitlement_timeout_ms: Option<i64>,
}

/// A subscription (`PUT /v1/subscriptions/{recipient_id}/{topic}`).
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = SubscriptionBody))]
#[serde(deny_unknown_fields)]
pub struct NewSubscription {
    /// Channels (default `["email"]`).
    #[serde(default)]
    #[cfg_attr(
        feature = "openapi",
        schema(min_items = 1, value_type = Option<Vec<crate::ops::api_enums::AudienceChannelSchema>>)
    )]
    pub channels: Option<Vec<String>>,
    /// What the mail is about (the seed's target): one id. Not with `targets`.
    #[serde(default)]
    pub target: Option<String>,
    /// What the mails are about: up to 100 distinct ids, one mail (and webhook) per target
    /// and period (a manager gets one summary per report). Not with `target`.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(max_items = 100))]
    pub targets: Option<Vec<String>>,
    /// Delivered (default true).
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// Most recipients in one bulk upsert.
pub const MAX_BULK: usize = 10_000;
const MAX_ID: usize = 200;
const MAX_ATTRIBUTES: usize = 64 * 1024;

/// Most targets of one subscription.
pub const MAX_TARGETS: usize = 100;

/// The targets of a subscription request: `target` (one) or `targets` (a list of at most
/// [`MAX_TARGETS`] distinct ids), not both.
fn subscription_targets(
    target: Option<String>,
    targets: Option<Vec<String>>,
) -> Result<Vec<String>, OpsError> {
    match (target, targets) {
        (Some(_), Some(_)) => Err(OpsError::invalid(
            "targets",
            "cannot be given with `target`; give the one target in `targets`",
        )),
        (Some(t), None) => {
            check_id("target", &t)?;
            Ok(vec![t])
        }
        (None, None) => Ok(vec![]),
        (None, Some(ts)) => {
            if ts.len() > MAX_TARGETS {
                return Err(OpsError::invalid(
                    "targets",
                    format!("must hold at most {MAX_TARGETS} ids, not {}", ts.len()),
                ));
            }
            for (i, t) in ts.iter().enumerate() {
                check_id(&format!("targets[{i}]"), t)?;
                if ts[..i].contains(t) {
                    return Err(OpsError::invalid(format!("targets[{i}]"), "is repeated"));
                }
            }
            Ok(ts)
        }
    }
}

fn check_id(field: &str, id: &str) -> Result<(), OpsError> {
    if id.is_empty() || id.len() > MAX_ID || id.chars().any(|c| c.is_control() || c == '/') {
        return Err(OpsError::invalid(
            field,
            format!("must be 1 to {MAX_ID} characters, without '/' or control characters"),
        ));
    }
    Ok(())
}

/// A topic name: 1–64 of `[a-z0-9_-]` (it travels as a Resend tag value).
pub fn check_topic_name(field: &str, name: &str) -> Result<(), OpsError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if !ok {
        return Err(OpsError::invalid(
            field,
            "must be 1 to 64 characters of a-z, 0-9, '_' and '-'",
        ));
    }
    Ok(())
}

fn check_email(field: &str, email: &str) -> Result<String, OpsError> {
    let e = email.trim();
    let valid = e.len() <= 254
        && !e
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || "<>,;\"".contains(c))
        && e.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty() && domain.contains('.') && !domain.contains('@')
        });
    if !valid {
        // The value is not repeated back: it is personal data.
        return Err(OpsError::invalid(field, "is not an email address"));
    }
    Ok(e.to_string())
}

/// The statuses an occurrence can show (`GET /v1/occurrences`).
pub const OCCURRENCE_STATUSES: [&str; 7] = [
    "pending",
    "success",
    "partial",
    "failure",
    "skipped",
    "cancelled",
    "missed",
];

impl Kairos {
    fn recipient_params(
        &self,
        field: &str,
        id: &str,
        r: NewRecipient,
        now: DateTime<Utc>,
    ) -> Result<RecipientUpsert, OpsError> {
        check_id(&format!("{field}id"), id)?;
        let email = check_email(&format!("{field}email"), &r.email)?;
        let timezone = r.timezone.unwrap_or_else(|| "UTC".into());
        parse_timezone(&timezone)
            .map_err(|e| OpsError::invalid(format!("{field}timezone"), e.to_string()))?;
        if let Some(l) = &r.locale {
            kairos_core::text::check_text(&format!("{field}locale"), l)?;
        }
        let attributes = r.attributes.unwrap_or_else(|| serde_json::json!({}));
        if !attributes.is_object() {
            return Err(OpsError::invalid(
                format!("{field}attributes"),
                "must be a JSON object",
            ));
        }
        if attributes.to_string().len() > MAX_ATTRIBUTES {
            return Err(OpsError::invalid(
                format!("{field}attributes"),
                format!("larger than {MAX_ATTRIBUTES} bytes"),
            ));
        }
        let state = match r.state.as_deref() {
            None | Some("active") => RecipientState::Active,
            Some("disabled") => RecipientState::Disabled,
            Some(_) => {
                return Err(OpsError::invalid(
                    format!("{field}state"),
                    "must be \"active\" or \"disabled\"",
                ));
            }
        };
        if let Some(w) = &r.webhook {
            // Checked here, stored later: a bulk upsert refuses a bad item before it stores
            // any endpoint.
            self.check_webhook_target(w)
                .map_err(|e| e.under(field.trim_end_matches('.')))?;
        }
        Ok(RecipientUpsert {
            id: id.to_string(),
            email,
            timezone,
            locale: r.locale,
            attributes,
            state,
            endpoint_id: None,
            now,
        })
    }

    /// Store the webhook endpoint of a recipient's `webhook`, if it has one.
    async fn recipient_endpoint(
        &self,
        field: &str,
        w: Option<&super::WebhookTarget>,
    ) -> Result<Option<String>, OpsError> {
        match w {
            None => Ok(None),
            Some(w) => self
                .endpoint_for(&JobKind::new(crate::kinds::webhook::NAME), Some(w))
                .await
                .map_err(|e| if field.is_empty() { e } else { e.under(field) }),
        }
    }

    /// Create or replace a recipient.
    pub async fn recipient_put(&self, id: &str, r: NewRecipient) -> Result<Recipient, OpsError> {
        if r.id.as_deref().is_some_and(|b| b != id) {
            return Err(OpsError::invalid("id", "differs from the id in the path"));
        }
        let webhook = r.webhook.clone();
        let mut p = self.recipient_params("", id, r, self.clock.now())?;
        p.endpoint_id = self.recipient_endpoint("", webhook.as_ref()).await?;
        Ok(self.store.recipient_upsert(p).await?)
    }

    /// Create or replace many recipients in one transaction (all or nothing: one invalid
    /// item rejects the batch, naming it as `recipients[i].field`).
    pub async fn recipient_put_many(&self, rs: Vec<NewRecipient>) -> Result<u64, OpsError> {
        if rs.is_empty() || rs.len() > MAX_BULK {
            return Err(OpsError::invalid(
                "recipients",
                format!("must hold 1 to {MAX_BULK} recipients"),
            ));
        }
        let now = self.clock.now();
        let mut ps = Vec::with_capacity(rs.len());
        let mut webhooks = Vec::new();
        for (i, mut r) in rs.into_iter().enumerate() {
            let field = format!("recipients[{i}].");
            let id =
                r.id.take()
                    .ok_or_else(|| OpsError::invalid(format!("{field}id"), "is required"))?;
            if let Some(w) = r.webhook.clone() {
                webhooks.push((i, w));
            }
            ps.push(self.recipient_params(&field, &id, r, now)?);
        }
        for (i, w) in webhooks {
            ps[i].endpoint_id = self
                .recipient_endpoint(&format!("recipients[{i}]"), Some(&w))
                .await?;
        }
        Ok(self.store.recipient_upsert_many(ps).await?)
    }

    /// A recipient.
    pub async fn recipient_get(&self, id: &str) -> Result<Recipient, OpsError> {
        self.store
            .recipient_get(id)
            .await?
            .ok_or_else(|| OpsError::not_found("recipient", id))
    }

    /// Recipients by id after `after`.
    pub async fn recipient_list(
        &self,
        after: Option<String>,
        limit: Option<i64>,
    ) -> Result<Vec<Recipient>, OpsError> {
        if let Some(l) = limit
            && !(1..=1000).contains(&l)
        {
            return Err(OpsError::invalid("limit", "must be between 1 and 1000"));
        }
        Ok(self
            .store
            .recipient_list(RecipientList {
                after_id: after,
                limit,
            })
            .await?)
    }

    /// Create or replace a topic. Its templates are rendered against a sample context now, so
    /// a misspelt variable is refused here, not sent blank later.
    pub async fn topic_put(&self, name: &str, t: NewTopic) -> Result<Topic, OpsError> {
        check_topic_name("name", name)?;
        if t.subject.trim().is_empty() {
            return Err(OpsError::invalid("subject", "is required"));
        }
        let mut variants = Vec::new();
        for (i, v) in t.variants.iter().enumerate() {
            let ok = !v.name.is_empty()
                && v.name.len() <= 64
                && v.name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if !ok {
                return Err(OpsError::invalid(
                    format!("variants[{i}].name"),
                    "must be 1 to 64 characters of A-Z, a-z, 0-9, '_' and '-'",
                ));
            }
            if t.variants[..i].iter().any(|o| o.name == v.name) {
                return Err(OpsError::invalid(
                    format!("variants[{i}].name"),
                    "is not unique",
                ));
            }
            let weight = v.weight.unwrap_or(1);
            if weight > 1_000_000 {
                return Err(OpsError::invalid(
                    format!("variants[{i}].weight"),
                    "must be at most 1000000",
                ));
            }
            variants.push(Variant {
                name: v.name.clone(),
                weight,
                subject: v.subject.clone(),
                html: v.html.clone(),
                text: v.text.clone(),
            });
        }
        let check: Vec<_> = variants
            .iter()
            .map(|v| {
                (
                    v.name.clone(),
                    v.subject.clone(),
                    v.html.clone(),
                    v.text.clone(),
                )
            })
            .collect();
        // A sample render under the send-time limits (fuel, output size; memory and time in
        // a worker process), off the async workers: a template that exceeds them is refused
        // now, naming the field, and nothing is stored.
        self.renderer
            .check(t.subject.clone(), t.html.clone(), t.text.clone(), check)
            .await
            .map_err(|e| match e {
                RenderError::Template(e) => OpsError::invalid(&e.field, e.reason),
                RenderError::Unavailable(m) => OpsError::new(
                    crate::error::OpsErrorKind::Unavailable,
                    format!("the templates could not be checked: {m}"),
                ),
            })?;
        if let Some(u) = &t.entitlement_url {
            let url = url::Url::parse(u).map_err(|e| {
                OpsError::invalid("entitlement_url", format!("not a valid URL: {e}"))
            })?;
            if !matches!(url.scheme(), "http" | "https") {
                return Err(OpsError::invalid(
                    "entitlement_url",
                    "must be an http:// or https:// URL",
                ));
            }
            // The same rule as a webhook's URL: it arrives through the API, so a private or
            // loopback target needs the operator's allow (the send-time check is authoritative).
            if !self.allow_private_targets && super::is_obviously_private(&url) {
                return Err(OpsError::invalid(
                    "entitlement_url",
                    "targets a private or loopback address; set KAIROS_ALLOW_PRIVATE_TARGETS=1 to allow",
                ));
            }
        }
        if let Some(ms) = t.entitlement_timeout_ms
            && !(1..=60_000).contains(&ms)
        {
            return Err(OpsError::invalid(
                "entitlement_timeout_ms",
                "must be between 1 and 60000",
            ));
        }
        Ok(self
            .store
            .topic_put(TopicPut {
                name: name.to_string(),
                subject: t.subject,
                html: t.html,
                text: t.text,
                variants,
                entitlement_url: t.entitlement_url,
                entitlement_timeout_ms: t.entitlement_timeout_ms,
                now: self.clock.now(),
            })
            .await?)
    }

    /// What the author of a subscription to `topic` should be told: `Some` when no topic of
    /// that name is defined. Subscribing first is legitimate (the topic may come later, and a
    /// webhook channel needs no templates), so the subscription is kept; but a misspelt name
    /// would otherwise be accepted silently.
    pub async fn subscription_topic_warning(
        &self,
        topic: &str,
    ) -> Result<Option<String>, OpsError> {
        Ok(match self.store.topic_get(topic).await? {
            Some(_) => None,
            None => Some(format!(
                "no topic {topic:?} is defined (GET /v1/topics lists them): the subscription is \
                 kept, but no mail reaches it until the topic exists (PUT /v1/topics/{topic})"
            )),
        })
    }

    /// A topic.
    pub async fn topic_get(&self, name: &str) -> Result<Topic, OpsError> {
        self.store
            .topic_get(name)
            .await?
            .ok_or_else(|| OpsError::not_found("topic", name))
    }

    /// All topics.
    pub async fn topic_list(&self) -> Result<Vec<Topic>, OpsError> {
        Ok(self.store.topic_list().await?)
    }

    /// Create or replace the subscription of (recipient, topic).
    pub async fn subscription_put(
        &self,
        recipient_id: &str,
        topic: &str,
        s: NewSubscription,
    ) -> Result<Subscription, OpsError> {
        check_topic_name("topic", topic)?;
        let channels = s.channels.unwrap_or_else(|| vec!["email".into()]);
        if channels.is_empty() {
            return Err(OpsError::invalid(
                "channels",
                "must name at least one channel",
            ));
        }
        for (i, c) in channels.iter().enumerate() {
            if !crate::audience::CHANNELS.contains(&c.as_str()) {
                return Err(OpsError::invalid(
                    format!("channels[{i}]"),
                    format!(
                        "unknown channel {c:?}; known channels: {}",
                        crate::audience::CHANNELS.join(", ")
                    ),
                ));
            }
            if channels[..i].contains(c) {
                return Err(OpsError::invalid(format!("channels[{i}]"), "is repeated"));
            }
        }
        let targets = subscription_targets(s.target, s.targets)?;
        self.recipient_get(recipient_id).await?;
        self.store
            .subscription_put(SubscriptionPut {
                recipient_id: recipient_id.to_string(),
                topic: topic.to_string(),
                targets,
                channels,
                enabled: s.enabled.unwrap_or(true),
                now: self.clock.now(),
            })
            .await
            .map_err(|e| match e.kind() {
                ErrorKind::Conflict => OpsError::not_found("recipient", recipient_id),
                _ => e.into(),
            })
    }

    /// The subscription of (recipient, topic).
    pub async fn subscription_get(
        &self,
        recipient_id: &str,
        topic: &str,
    ) -> Result<Subscription, OpsError> {
        self.store
            .subscription_get(recipient_id, topic)
            .await?
            .ok_or_else(|| OpsError::not_found("subscription", &format!("{recipient_id}/{topic}")))
    }

    /// Subscriptions, by recipient and/or topic, keyset-paginated.
    pub async fn subscription_list(
        &self,
        p: SubscriptionList,
    ) -> Result<Vec<Subscription>, OpsError> {
        if let Some(l) = p.limit
            && !(1..=1000).contains(&l)
        {
            return Err(OpsError::invalid("limit", "must be between 1 and 1000"));
        }
        Ok(self.store.subscription_list(p).await?)
    }

    /// A schedule's occurrences: per period, the job counts per channel and state; with
    /// `status`, only the periods of that derived status (one of
    /// [`OCCURRENCE_STATUSES`]; `missed` is no period of jobs, so none).
    /// Errors name the field: an unknown schedule, `limit` outside 1..=200, another `status`.
    pub async fn occurrence_list(
        &self,
        p: OccurrenceList,
    ) -> Result<Vec<OccurrenceCount>, OpsError> {
        self.schedule_get(&p.schedule_id).await?;
        if let Some(l) = p.limit
            && !(1..=200).contains(&l)
        {
            return Err(OpsError::invalid("limit", "must be between 1 and 200"));
        }
        let statuses = OCCURRENCE_STATUSES;
        if let Some(s) = &p.status
            && !statuses.contains(&s.as_str())
        {
            return Err(OpsError::invalid(
                "state",
                format!("must be one of {}", statuses.join(", ")),
            ));
        }
        Ok(self.store.occurrence_list(p).await?)
    }

    /// The payload of a schedule of `kind` with `topic`: a schedule of an audience kind
    /// (`email`) with a topic is an audience schedule, a fan-out kind's (`digest`) topic is the
    /// audience its product goes to (its payload carries the topic); a topic on another kind
    /// is an error.
    pub(super) fn audience_payload(
        &self,
        kind: &JobKind,
        topic: Option<&str>,
        mut payload: serde_json::Value,
    ) -> Result<serde_json::Value, OpsError> {
        let uses = self.kinds.get(kind.as_str()).topic();
        let Some(topic) = topic else {
            // An audience schedule mails a topic's audience: without a topic it has nobody to
            // mail (a payload naming one recipient and topic is a single-recipient schedule).
            if uses == TopicUse::Audience && payload.get("topic").and_then(|t| t.as_str()).is_none()
            {
                return Err(OpsError::invalid(
                    "topic",
                    format!(
                        "required for kind {:?}: the topic whose subscribers each firing mails",
                        kind.as_str()
                    ),
                ));
            }
            return Ok(payload);
        };
        if uses == TopicUse::None {
            let takers: Vec<String> = self
                .kinds
                .topic_takers()
                .iter()
                .map(|k| format!("{k:?}"))
                .collect();
            return Err(OpsError::invalid(
                "topic",
                format!(
                    "only for kinds {}, not {:?}",
                    takers.join(" and "),
                    kind.as_str()
                ),
            ));
        }
        check_topic_name("topic", topic)?;
        match payload.as_object_mut() {
            Some(o) => {
                o.insert("topic".into(), topic.into());
            }
            None => return Err(OpsError::invalid("payload", "must be a JSON object")),
        }
        Ok(payload)
    }

    /// A manual re-run of an audience schedule's current period: the whole audience now.
    pub(super) async fn audience_fire_now(
        &self,
        s: &Schedule,
        fire_at: DateTime<Utc>,
    ) -> Result<super::FiredNow, OpsError> {
        let tz = tz_of(s)?;
        let now = self.clock.now();
        let period_key = kairos_core::schedule::period_key(s.period, tz, fire_at);
        let created = crate::audience::expand_all(
            self.store.as_ref(),
            &self.kinds,
            s,
            tz,
            fire_at,
            1000,
            now,
        )
        .await?;
        if !created.is_empty() {
            self.wake.notify_one();
        }
        Ok(super::FiredNow {
            created,
            fire_at,
            period_key,
        })
    }
}
