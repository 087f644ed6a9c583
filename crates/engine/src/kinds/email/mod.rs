//! The `email` kind: one mail to one recipient about one topic. Its schedules are audience
//! schedules (a `topic`, expanded per subscriber and channel); a sent mail is an A/B exposure.
//! The audience `webhook` channel shares its checks and templates ([`notify`]).

pub mod audience;
pub mod handler;
pub mod notify;

use super::Kind;
use super::TopicUse;

/// The kind's name.
pub const NAME: &str = "email";

/// The `email` kind.
#[derive(Debug, Clone, Copy)]
pub struct Email;

impl Kind for Email {
    fn name(&self) -> &'static str {
        NAME
    }

    fn topic(&self) -> TopicUse {
        TopicUse::Audience
    }

    fn records_exposure(&self) -> bool {
        true
    }

    fn delivers_to_topic(&self) -> bool {
        true
    }

    fn is_channel(&self) -> bool {
        false
    }

    // A catch-up job is one job for the period; an audience firing is one job per
    // subscriber. Re-sending a week's mails is what the dedupe key exists to prevent.
    fn allows_catch_up(&self) -> bool {
        false
    }
}
