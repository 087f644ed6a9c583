//! The delivery log of audience jobs ([`crate::JobAdminStore::delivery_list`]): one row per
//! (topic, recipient, target, period) with the state of each channel, filtered on several
//! state axes at once ("the mail died and the webhook succeeded").

use chrono::{DateTime, Utc};

/// `delivery_list`: every filter optional, all combined; keyset-paginated by the row key.
#[derive(Debug, Clone, Default)]
pub struct DeliveryList {
    /// Only this topic (`payload.topic`).
    pub topic: Option<String>,
    /// Only this recipient (`payload.recipient_id`).
    pub recipient_id: Option<String>,
    /// Only this target (`payload.target`; a job without one has the empty target).
    pub target: Option<String>,
    /// Only this period key.
    pub period_key: Option<String>,
    /// Only rows with a job on this channel; with `state`, that job is in that state.
    pub channel: Option<String>,
    /// Only rows with a job in this state (on `channel` if given, else on any channel).
    pub state: Option<String>,
    /// Only rows where, for every (channel, state) pair, that channel's job is in that state.
    /// Each channel at most once.
    pub channel_states: Vec<(String, String)>,
    /// Only rows strictly after this one in the list's order (the last row of the previous
    /// page).
    pub after: Option<DeliveryKey>,
    /// At most this many rows (clamped to 1..=1000).
    pub limit: i64,
}

/// The key of a delivery row: the seed's (subscriber, target, period), within a topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryKey {
    /// The period key (`2026-W48`).
    pub period_key: String,
    /// The topic.
    pub topic: String,
    /// The recipient id.
    pub recipient_id: String,
    /// The target (empty when the subscription has none).
    pub target: String,
}

/// One channel of a delivery row: its newest job.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryChannel {
    /// The channel (`email`, `webhook`; the job kind for a job without a channel).
    pub channel: String,
    /// The job's state as stored (an unknown value is passed through, never an error).
    pub state: String,
    /// Attempts started.
    pub attempts: i64,
    /// The last attempt's error, if it failed.
    pub last_error: Option<String>,
    /// Why it was skipped or cancelled.
    pub reason: Option<String>,
    /// The job.
    pub job_id: String,
    /// When it reached a final state.
    pub finished_at: Option<DateTime<Utc>>,
}

/// One row of the delivery log.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    /// The row's key.
    pub key: DeliveryKey,
    /// The occurrence's nominal firing time (the earliest of its jobs).
    pub fire_at: Option<DateTime<Utc>>,
    /// Each channel, by name.
    pub channels: Vec<DeliveryChannel>,
}
