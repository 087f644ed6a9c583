//! The `webhook` kind: one signed POST (Standard Webhooks) to a stored endpoint. The default
//! kind of a job or schedule that names none. Audience notifications on the `webhook` channel
//! are stored as `webhook` jobs too, but the `email` kind runs them (`email::notify`): they go
//! through the recipient's checks and templates first.

mod endpoints;
pub(crate) use endpoints::EndpointReads;
pub mod handler;

use super::{EndpointUse, Kind};

/// The kind's name.
pub const NAME: &str = "webhook";

/// The `webhook` kind.
#[derive(Debug, Clone, Default)]
pub struct Webhook {
    handler: super::HandlerSlot,
}

impl Webhook {
    /// The kind with `handler` running its jobs on this node.
    pub fn running(handler: std::sync::Arc<dyn crate::handler::Handler>) -> Self {
        Self {
            handler: super::HandlerSlot::new(handler),
        }
    }
}

impl Kind for Webhook {
    fn name(&self) -> &'static str {
        NAME
    }

    fn handler(&self) -> Option<std::sync::Arc<dyn crate::handler::Handler>> {
        self.handler.get()
    }

    fn endpoint(&self) -> EndpointUse {
        EndpointUse::Required
    }
}

/// The kind's entry in the built-in list: signed by the node's webhook settings.
pub(crate) const BUILTIN: super::Builtin = super::Builtin {
    describe: || Box::new(Webhook::default()),
    running: |s| {
        let sender = kairos_channels::WebhookSender::new(s.webhook.clone())?;
        let handler = handler::WebhookHandler::new(s.store.clone(), s.clock.clone(), sender);
        Ok(Some(Box::new(Webhook::running(std::sync::Arc::new(
            handler,
        )))))
    },
};
