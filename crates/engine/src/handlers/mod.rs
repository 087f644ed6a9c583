//! Built-in handlers.

pub mod webhook;

use crate::handler::HandlerRegistry;
use kairos_channels::{WebhookConfig, WebhookSender};
use kairos_core::Clock;
use kairos_store::Store;
use std::sync::Arc;

/// The built-in handlers (`webhook`).
pub fn default_registry(
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    webhook: WebhookConfig,
) -> Result<HandlerRegistry, kairos_channels::Error> {
    let mut r = HandlerRegistry::new();
    let sender = WebhookSender::new(webhook)?;
    r.register(
        "webhook",
        Arc::new(webhook::WebhookHandler::new(store, clock, sender)),
    );
    Ok(r)
}
