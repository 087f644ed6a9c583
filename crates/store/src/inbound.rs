//! Inbound provider events and what they do: the record of
//! each webhook received once (`inbound_events`, keyed by the provider's event id), the
//! suppression that cascades to every subscription of an address, the suppression
//! list's reads and removals, the one-click unsubscribe, and the settings row that carries
//! maintenance mode.

use chrono::{DateTime, Utc};

/// What a stored inbound event did.
pub mod action {
    /// The event suppressed its address (and disabled its subscriptions).
    pub const SUPPRESSED: &str = "suppressed";
    /// The event is recorded and changes nothing (a delivery delay, a transient bounce, a
    /// delivery report).
    pub const RECORDED: &str = "recorded";
    /// An event type (or bounce sub-type) this version does not act on: stored, acknowledged.
    pub const UNKNOWN: &str = "unknown";
}

/// A provider webhook received once.
#[derive(Debug, Clone, PartialEq)]
pub struct InboundEvent {
    /// Who sent it (`resend`, or the `{source}` of `/hooks/standard/{source}`).
    pub source: String,
    /// The provider's event id (`svix-id` / `webhook-id`), unique per source.
    pub id: String,
    /// The event type (`email.bounced`), `""` if the payload named none.
    pub event_type: String,
    /// The provider's message id (Resend `data.email_id`), if any.
    pub provider_message_id: Option<String>,
    /// The job whose send recorded that provider message id, if one did.
    pub job_id: Option<String>,
    /// What it did: one of [`action`].
    pub action: String,
    /// The payload as received (a JSON value; the raw text if it was not JSON).
    pub payload: serde_json::Value,
    /// When it was received.
    pub received_at: DateTime<Utc>,
}

/// `inbound_event_record`: store an event once and, only on its first delivery, apply its
/// suppression — in one transaction, so a crash cannot keep the event and lose its effect.
#[derive(Debug, Clone)]
pub struct InboundEventRecord {
    /// The source.
    pub source: String,
    /// The provider's event id.
    pub id: String,
    /// The event type.
    pub event_type: String,
    /// The provider's message id: the store looks up the job whose attempt recorded it.
    pub provider_message_id: Option<String>,
    /// One of [`action`].
    pub action: String,
    /// The payload.
    pub payload: serde_json::Value,
    /// Addresses to suppress (with [`SuppressionApply`]'s cascade) if the event is new.
    pub suppress: Vec<String>,
    /// The suppression reason (`hard_bounce`, `complaint`, …) when `suppress` is not empty.
    pub reason: String,
    /// Now.
    pub now: DateTime<Utc>,
}

/// What `inbound_event_record` did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InboundEventRecorded {
    /// `true` on the first delivery; `false` for a repeat, which changed nothing.
    pub created: bool,
    /// The matched job (of the stored event, also on a repeat).
    pub job_id: Option<String>,
    /// Addresses newly added to the suppression list.
    pub suppressions_created: u64,
    /// Subscriptions disabled by the cascade.
    pub subscriptions_disabled: u64,
}

/// `suppression_apply`: suppress an address and disable every subscription of every
/// recipient with that address, in one transaction. Applying again adds nothing but
/// still disables subscriptions enabled since (the cascade is idempotent).
#[derive(Debug, Clone)]
pub struct SuppressionApply {
    /// The address (normalized by the store).
    pub address: String,
    /// Why (`hard_bounce`, `complaint`, `provider_suppressed`, `manual`, …).
    pub reason: String,
    /// The inbound event (or the job of an SMTP 550), if any.
    pub source_event_id: Option<String>,
    /// Now.
    pub now: DateTime<Utc>,
}

/// What `suppression_apply` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SuppressionApplied {
    /// The address was not suppressed before (the first reason stays).
    pub created: bool,
    /// Subscriptions that were enabled and are now disabled.
    pub subscriptions_disabled: u64,
}

/// `suppression_list`: by address, ascending, keyset-paginated.
#[derive(Debug, Clone, Default)]
pub struct SuppressionList {
    /// Only addresses after this one.
    pub after: Option<String>,
    /// At most this many (default 100).
    pub limit: Option<i64>,
}

/// `suppression_remove`: take an address off the list, recording why. Subscriptions stay
/// disabled: re-subscribing is the recipient's (or the application's) decision.
#[derive(Debug, Clone)]
pub struct SuppressionRemove {
    /// The address (normalized by the store).
    pub address: String,
    /// Why it is removed (recorded in the suppression log).
    pub reason: String,
    /// Now.
    pub now: DateTime<Utc>,
}

/// `subscription_disable`: the one-click unsubscribe of (recipient, topic).
#[derive(Debug, Clone)]
pub struct SubscriptionDisable {
    /// The recipient.
    pub recipient_id: String,
    /// The topic.
    pub topic: String,
    /// Now.
    pub now: DateTime<Utc>,
}

/// A stored setting (maintenance mode).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// Name (`maintenance`).
    pub name: String,
    /// Value.
    pub value: String,
    /// Last changed.
    pub updated_at: DateTime<Utc>,
}

/// `setting_put`: set (`Some`) or clear (`None`) a setting.
#[derive(Debug, Clone)]
pub struct SettingPut {
    /// Name.
    pub name: String,
    /// The value, or `None` to delete the setting.
    pub value: Option<String>,
    /// Now.
    pub now: DateTime<Utc>,
}

/// The name of the maintenance-mode setting (`"on"` while on).
pub const SETTING_MAINTENANCE: &str = "maintenance";

/// `inbound_event_prune`: delete inbound events received before `before`, at most `limit`
/// (retention). Their raw payloads carry addresses; the suppressions they caused stay.
#[derive(Debug, Clone)]
pub struct InboundEventPrune {
    /// Events received before this instant are deleted.
    pub before: DateTime<Utc>,
    /// At most this many in one call.
    pub limit: i64,
}
