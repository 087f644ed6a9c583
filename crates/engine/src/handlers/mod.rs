//! The built-in kinds' handlers, registered by kind name on the nodes that run them. Each
//! handler lives with its kind ([`crate::kinds`]); the modules here are their public paths.

pub use crate::kinds::digest::handler as digest;
pub use crate::kinds::email::handler as email;
pub use crate::kinds::email::notify;
pub use crate::kinds::http::handler as http;
pub use crate::kinds::webhook::handler as webhook;

use crate::handler::HandlerRegistry;
use kairos_channels::digest::{DigestConfig, Digester};
use kairos_channels::{HttpCallConfig, HttpCaller, WebhookConfig, WebhookSender};
use kairos_core::Clock;
use kairos_store::Store;
use std::sync::Arc;

/// The built-in handlers (`webhook`, `http`, `digest`), the digest kind with its default settings
/// (no model API keys: the extractive summarizer works, `gemini`/`openai` fail permanently
/// until configured; private feed targets follow the webhook setting).
pub fn default_registry(
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    webhook: WebhookConfig,
) -> Result<HandlerRegistry, kairos_channels::Error> {
    let mut r = HandlerRegistry::new();
    let digest = DigestConfig {
        allow_private_targets: webhook.allow_private_targets,
        ..DigestConfig::default()
    };
    // `http` jobs follow the webhook setting for private targets (KAIROS_ALLOW_PRIVATE_TARGETS).
    let http = HttpCallConfig {
        allow_private_targets: webhook.allow_private_targets,
        ..HttpCallConfig::default()
    };
    let sender = WebhookSender::new(webhook)?;
    r.register(
        crate::kinds::http::NAME,
        Arc::new(http::HttpHandler::new(
            store.clone(),
            HttpCaller::new(http)?,
        )),
    );
    register_digest(&mut r, store.clone(), clock.clone(), digest)?;
    r.register(
        crate::kinds::webhook::NAME,
        Arc::new(webhook::WebhookHandler::new(store, clock, sender)),
    );
    Ok(r)
}

/// Register (or replace) the `digest` kind with `config` (model API URLs and keys, timeouts).
pub fn register_digest(
    r: &mut HandlerRegistry,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    config: DigestConfig,
) -> Result<(), kairos_channels::Error> {
    let digester = Digester::new(config)?;
    r.register(
        crate::kinds::digest::NAME,
        Arc::new(digest::DigestHandler::new(store, clock, digester)),
    );
    Ok(())
}

/// Register (or replace) the `email` kind, sending through `transport`.
pub fn register_email(
    r: &mut HandlerRegistry,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    transport: kairos_channels::email::EmailTransport,
    config: email::EmailConfig,
) -> Result<(), kairos_channels::Error> {
    let allow_private_targets = config.allow_private_targets;
    let h = Arc::new(email::EmailHandler::new(store.clone(), transport, config)?);
    r.register(crate::kinds::email::NAME, h.clone());
    // The `webhook` channel of audience notifications shares the mail's checks and
    // templates; plain webhook jobs keep their handler.
    if let Some(plain) = r.get(crate::kinds::webhook::NAME).cloned() {
        let sender = WebhookSender::new(WebhookConfig {
            allow_private_targets,
            ..WebhookConfig::default()
        })?;
        r.register(
            crate::kinds::webhook::NAME,
            Arc::new(notify::WebhookChannel::new(plain, h, store, clock, sender)),
        );
    }
    Ok(())
}
