//! Audiences: recipients, topics, subscriptions, suppressions, audience expansions and A/B
//! exposures — the records and the params of their store methods.
//!
//! Personal data (an address, attributes) lives only in [`Recipient`]: jobs carry ids
//! (recipient, topic, period) and the address is read when the job runs.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A recipient's state. Stored as a string; a value this version does not know reads as
/// [`RecipientState::Disabled`]: a reader never crashes, and nobody in a state we do not
/// understand is mailed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum RecipientState {
    /// Mailable.
    #[default]
    Active,
    /// Not mailed; their jobs end `skipped` with reason `recipient_inactive`.
    Disabled,
}

impl RecipientState {
    /// The stored string.
    pub fn as_str(self) -> &'static str {
        match self {
            RecipientState::Active => "active",
            RecipientState::Disabled => "disabled",
        }
    }
    /// Parse a stored string (unknown → disabled).
    pub fn parse(s: &str) -> RecipientState {
        match s {
            "active" => RecipientState::Active,
            _ => RecipientState::Disabled,
        }
    }
}

/// Someone to notify. The only place an address lives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recipient {
    /// The caller's id for them (`usr_42`, a UUID…).
    pub id: String,
    /// Email address.
    pub email: String,
    /// IANA time zone.
    pub timezone: String,
    /// Locale (`ja-JP`), if known.
    pub locale: Option<String>,
    /// Free attributes, available to templates as `recipient.attributes`.
    pub attributes: serde_json::Value,
    /// Active or disabled.
    pub state: RecipientState,
    /// The recipient's webhook endpoint (`ep_…`), for the `webhook` channel.
    pub endpoint_id: Option<String>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last changed.
    pub updated_at: DateTime<Utc>,
}

/// `recipient_upsert` and `recipient_upsert_many`: create or replace a recipient.
#[derive(Debug, Clone)]
pub struct RecipientUpsert {
    /// Id.
    pub id: String,
    /// Email address.
    pub email: String,
    /// IANA time zone.
    pub timezone: String,
    /// Locale.
    pub locale: Option<String>,
    /// Attributes (a JSON object).
    pub attributes: serde_json::Value,
    /// State.
    pub state: RecipientState,
    /// The webhook endpoint, for the `webhook` channel.
    pub endpoint_id: Option<String>,
    /// Now.
    pub now: DateTime<Utc>,
}

/// `recipient_list`: by id, ascending (keyset pagination).
#[derive(Debug, Clone, Default)]
pub struct RecipientList {
    /// Only ids after this one.
    pub after_id: Option<String>,
    /// At most this many (default 100).
    pub limit: Option<i64>,
}

/// One A/B variant of a topic: it replaces the subject (and the bodies, if given).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Variant {
    /// Name, sent as the `variant` tag.
    pub name: String,
    /// Relative weight (0 never assigns it).
    pub weight: u32,
    /// Subject template of this variant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// HTML template of this variant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub html: Option<String>,
    /// Text template of this variant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// A topic: what a subscription is to, and the templates of its mail.
#[derive(Debug, Clone, PartialEq)]
pub struct Topic {
    /// Name (`weekly`).
    pub name: String,
    /// Subject template.
    pub subject: String,
    /// HTML body template.
    pub html: Option<String>,
    /// Text body template.
    pub text: Option<String>,
    /// A/B variants.
    pub variants: Vec<Variant>,
    /// Asked at send time whether the recipient is still entitled.
    pub entitlement_url: Option<String>,
    /// Timeout of that question, in milliseconds.
    pub entitlement_timeout_ms: Option<i64>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last changed.
    pub updated_at: DateTime<Utc>,
}

/// `topic_put`: create or replace a topic.
#[derive(Debug, Clone)]
pub struct TopicPut {
    /// Name.
    pub name: String,
    /// Subject template.
    pub subject: String,
    /// HTML template.
    pub html: Option<String>,
    /// Text template.
    pub text: Option<String>,
    /// Variants.
    pub variants: Vec<Variant>,
    /// Entitlement URL.
    pub entitlement_url: Option<String>,
    /// Entitlement timeout (ms).
    pub entitlement_timeout_ms: Option<i64>,
    /// Now.
    pub now: DateTime<Utc>,
}

/// A recipient's subscription to a topic.
#[derive(Debug, Clone, PartialEq)]
pub struct Subscription {
    /// The recipient.
    pub recipient_id: String,
    /// The topic.
    pub topic: String,
    /// The first of [`Subscription::targets`], for readers that know only one.
    pub target: Option<String>,
    /// What the mails are about (the seed's target users): one mail per target, channel
    /// and period; empty for a subscription about nothing in particular (one mail).
    pub targets: Vec<String>,
    /// Channels (`email`).
    pub channels: Vec<String>,
    /// Whether it is delivered.
    pub enabled: bool,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last changed.
    pub updated_at: DateTime<Utc>,
}

/// `subscription_put`: create or replace the subscription of (recipient, topic).
#[derive(Debug, Clone)]
pub struct SubscriptionPut {
    /// The recipient (must exist).
    pub recipient_id: String,
    /// The topic.
    pub topic: String,
    /// Targets (empty: none). The first is also stored as the single `target`.
    pub targets: Vec<String>,
    /// Channels.
    pub channels: Vec<String>,
    /// Enabled.
    pub enabled: bool,
    /// Now.
    pub now: DateTime<Utc>,
}

/// `subscription_list`: ordered by (recipient_id, topic), keyset-paginated. The audience
/// expansion pages through a topic with `active_only`.
#[derive(Debug, Clone, Default)]
pub struct SubscriptionList {
    /// Only this topic.
    pub topic: Option<String>,
    /// Only this recipient.
    pub recipient_id: Option<String>,
    /// Only enabled subscriptions of active recipients.
    pub active_only: bool,
    /// Only after this (recipient_id, topic).
    pub after: Option<(String, String)>,
    /// At most this many (default 100).
    pub limit: Option<i64>,
}

/// An address that must not be mailed.
#[derive(Debug, Clone, PartialEq)]
pub struct Suppression {
    /// The address, normalized ([`normalize_address`]). For an erased entry it is the keyed
    /// hash (`hmac-sha256:…`, [`crate::ERASED_PREFIX`]), never the address.
    pub address: String,
    /// The address was erased with its recipient: only its keyed hash is stored.
    pub erased: bool,
    /// `hard_bounce`, `complaint`, `unsubscribe`, `manual`, …
    pub reason: String,
    /// The inbound event that caused it, if any.
    pub source_event_id: Option<String>,
    /// When.
    pub created_at: DateTime<Utc>,
}

/// `suppression_add`.
#[derive(Debug, Clone)]
pub struct SuppressionAdd {
    /// The address (normalized by the store).
    pub address: String,
    /// Why.
    pub reason: String,
    /// The inbound event, if any.
    pub source_event_id: Option<String>,
    /// Now.
    pub now: DateTime<Utc>,
}

/// The form addresses are stored and compared in: trimmed, lowercase.
pub fn normalize_address(a: &str) -> String {
    a.trim().to_lowercase()
}

/// The progress of expanding one firing (schedule, period) of an audience schedule into
/// jobs, page by page: a crash between pages resumes after the last committed page.
#[derive(Debug, Clone, PartialEq)]
pub struct Expansion {
    /// The schedule.
    pub schedule_id: String,
    /// The period key of the firing.
    pub period_key: String,
    /// The firing's nominal time.
    pub fire_at: DateTime<Utc>,
    /// The last (recipient_id, topic) expanded, encoded `recipient_id` (None: none yet).
    pub cursor: Option<String>,
    /// Whether every page has been expanded.
    pub done: bool,
    /// Jobs created so far.
    pub created: i64,
    /// Last changed.
    pub updated_at: DateTime<Utc>,
}

/// `expansion_begin`: record that a firing must be expanded (idempotent).
#[derive(Debug, Clone)]
pub struct ExpansionBegin {
    /// The schedule.
    pub schedule_id: String,
    /// The period key.
    pub period_key: String,
    /// The nominal time.
    pub fire_at: DateTime<Utc>,
    /// Now.
    pub now: DateTime<Utc>,
}

/// `expansion_advance`: insert one page of jobs and move the cursor, in one transaction,
/// only if the cursor is still `expected_cursor` (another node did not take the page).
#[derive(Debug, Clone)]
pub struct ExpansionAdvance {
    /// The schedule.
    pub schedule_id: String,
    /// The period key.
    pub period_key: String,
    /// The cursor the page was read after.
    pub expected_cursor: Option<String>,
    /// The new cursor (the last recipient of the page).
    pub cursor: Option<String>,
    /// This was the last page.
    pub done: bool,
    /// The page's jobs (dedupe keys make repeats harmless).
    pub jobs: Vec<crate::JobInsert>,
    /// Now.
    pub now: DateTime<Utc>,
}

/// One variant's exposures (successful sends) for a topic.
#[derive(Debug, Clone, PartialEq)]
pub struct ExposureCount {
    /// The variant.
    pub variant: String,
    /// Successful sends.
    pub count: i64,
}

/// `occurrence_list`: the jobs of a schedule's occurrences, counted by channel and state.
#[derive(Debug, Clone, Default)]
pub struct OccurrenceList {
    /// The schedule.
    pub schedule_id: String,
    /// Only this period.
    pub period_key: Option<String>,
    /// At most this many periods, newest first (default 20), counted after `status`.
    pub limit: Option<i64>,
    /// Only periods whose derived status (over all their jobs) is this: `pending` while a
    /// job is open (a state other than `succeeded`, `skipped`, `dead`, `cancelled`), else
    /// `success` (something succeeded, nothing died), `partial` (both), `failure` (something
    /// died, nothing succeeded), `skipped` (a job was skipped), else `cancelled`. Another
    /// value matches nothing.
    pub status: Option<String>,
}

/// One (period, channel, state) count of an occurrence.
#[derive(Debug, Clone, PartialEq)]
pub struct OccurrenceCount {
    /// The period key.
    pub period_key: String,
    /// The earliest nominal firing time of its jobs.
    pub fire_at: Option<DateTime<Utc>>,
    /// The channel (its name; the job kind for jobs without one).
    pub channel: String,
    /// The stored job state.
    pub state: String,
    /// How many jobs.
    pub count: i64,
}
