//! Deliverability reads: what happened to the mails kairos sent, from the provider events
//! stored in `inbound_events` joined to the jobs that sent them.
//!
//! An event is attributed to a job when it is recorded: its provider message id (Resend's
//! `data.email_id`) is looked up among the attempts' provider ids (`inbound_events.job_id`).
//! An event that matched no attempt (a mail kairos did not send, or one whose attempt was
//! pruned or not yet recorded) counts toward no topic and no variant.
//!
//! Each outcome counts mails, not events: a mail opened five times is one opened mail, so
//! every rate over the mails sent is a proportion between 0 and 1.

use chrono::{DateTime, Utc};

/// The provider event types the outcome counts read (Resend's names, which Standard Webhooks
/// senders reuse).
pub mod mail_event {
    /// The receiving server accepted the mail.
    pub const DELIVERED: &str = "email.delivered";
    /// The recipient opened it.
    pub const OPENED: &str = "email.opened";
    /// The recipient clicked a link in it.
    pub const CLICKED: &str = "email.clicked";
    /// It bounced (any bounce type: permanent, transient, undetermined or none).
    pub const BOUNCED: &str = "email.bounced";
    /// The recipient marked it as spam.
    pub const COMPLAINED: &str = "email.complained";
}

/// Mails of one group (a topic, a variant) and how many of them each outcome reached.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MailOutcomeCount {
    /// The group: the variant (`exposure_outcome_count`).
    pub key: String,
    /// Mails sent: succeeded mail jobs, or A/B exposures.
    pub sent: i64,
    /// Of those, mails with an `email.delivered` event.
    pub delivered: i64,
    /// Mails with an `email.opened` event.
    pub opened: i64,
    /// Mails with an `email.clicked` event.
    pub clicked: i64,
    /// Mails with an `email.bounced` event.
    pub bounced: i64,
    /// Mails with an `email.complained` event.
    pub complained: i64,
}

/// `exposure_outcome_count`: per A/B variant of a topic, its exposures (successful sends) and
/// how many of those mails each provider event reached (`GET /v1/topics/{name}/variant-stats`).
#[derive(Debug, Clone)]
pub struct ExposureOutcomeCount {
    /// The topic.
    pub topic: String,
}

/// `inbound_event_count`: stored inbound events received in `[since, until)` with one action,
/// per source and type (the `inbound_unknown` check).
#[derive(Debug, Clone)]
pub struct InboundEventCount {
    /// Received at or after this instant.
    pub since: DateTime<Utc>,
    /// Received before this instant.
    pub until: DateTime<Utc>,
    /// Only events with this action (one of [`crate::action`]).
    pub action: String,
}

/// Inbound events of one source and type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboundEventTally {
    /// The source (`resend`, or a `/hooks/standard/{source}` name).
    pub source: String,
    /// The event type (`""` when the event named none).
    pub event_type: String,
    /// How many.
    pub count: i64,
}
