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
#[derive(Debug, Clone, Default)]
pub struct Email {
    handler: super::HandlerSlot,
    /// The audience's `webhook` channel ([`notify::WebhookChannel`]): its jobs are stored as
    /// `webhook` jobs, and this kind runs them (recipient checks, templates) instead of the
    /// plain webhook handler.
    notifications: super::HandlerSlot,
}

impl Email {
    /// The kind with `mail` sending its mails and `notifications` posting the audience's
    /// webhook notifications on this node.
    pub fn running(
        mail: std::sync::Arc<dyn crate::handler::Handler>,
        notifications: std::sync::Arc<dyn crate::handler::Handler>,
    ) -> Self {
        Email {
            handler: super::HandlerSlot::new(mail),
            notifications: super::HandlerSlot::new(notifications),
        }
    }
}

impl Kind for Email {
    fn name(&self) -> &'static str {
        NAME
    }

    fn handler(&self) -> Option<std::sync::Arc<dyn crate::handler::Handler>> {
        self.handler.get()
    }

    fn runs_instead(
        &self,
        job: &kairos_core::Job,
    ) -> Option<std::sync::Arc<dyn crate::handler::Handler>> {
        (job.kind.as_str() == super::webhook::NAME && notify::is_notification(job))
            .then(|| self.notifications.get())
            .flatten()
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

/// The kind's entry in the built-in list: running only where the node has a mail transport,
/// with the audience's webhook channel beside the mails.
pub(crate) const BUILTIN: super::Builtin = super::Builtin {
    describe: || Box::new(Email::default()),
    running: |s| {
        let Some((transport, config)) = &s.email else {
            return Ok(None);
        };
        let private = config.allow_private_targets;
        let mail = std::sync::Arc::new(handler::EmailHandler::new(
            s.store.clone(),
            transport.clone(),
            config.clone(),
        )?);
        let sender = kairos_channels::WebhookSender::new(kairos_channels::WebhookConfig {
            allow_private_targets: private,
            ..Default::default()
        })?;
        let channel =
            notify::WebhookChannel::new(mail.clone(), s.store.clone(), s.clock.clone(), sender);
        Ok(Some(Box::new(Email::running(
            mail,
            std::sync::Arc::new(channel),
        ))))
    },
};
