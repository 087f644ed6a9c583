//! The built-in kinds with their handlers, built from a node's settings ([`builtin`]). Each
//! handler lives with its kind ([`crate::kinds`]); the modules here are their public paths.

pub use crate::kinds::digest::handler as digest;
pub use crate::kinds::email::handler as email;
pub use crate::kinds::email::notify;
pub use crate::kinds::http::handler as http;
pub use crate::kinds::webhook::handler as webhook;

use crate::kinds::webhook as webhook_kind;
use crate::kinds::{Kinds, digest as digest_kind, email as email_kind, http as http_kind};
use kairos_channels::digest::{DigestConfig, Digester};
use kairos_channels::email::EmailTransport;
use kairos_channels::{HttpCallConfig, HttpCaller, WebhookConfig, WebhookSender};
use kairos_core::Clock;
use kairos_store::Store;
use std::sync::Arc;

/// What the built-in kinds' handlers are built from: the node's store and clock and the
/// settings of each kind.
pub struct KindSettings {
    /// The node's store.
    pub store: Arc<dyn Store>,
    /// The node's clock.
    pub clock: Arc<dyn Clock>,
    /// The `webhook` kind's sender settings; its `allow_private_targets` is also the `http`
    /// kind's and the digest feeds' (`KAIROS_ALLOW_PRIVATE_TARGETS`).
    pub webhook: WebhookConfig,
    /// The `digest` kind's settings (model APIs, timeouts).
    pub digest: DigestConfig,
    /// The `email` kind's transport and settings; `None`: this node sends no mail (its email
    /// jobs fail permanently for want of a handler).
    pub email: Option<(EmailTransport, email::EmailConfig)>,
}

impl std::fmt::Debug for KindSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KindSettings")
            .field("email", &self.email.is_some())
            .finish_non_exhaustive()
    }
}

impl KindSettings {
    /// `webhook`, `http` and `digest` with their default settings (the digest without model
    /// API keys: the extractive summarizer works), private targets as `webhook` says, and no
    /// mail.
    pub fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, webhook: WebhookConfig) -> Self {
        let digest = DigestConfig {
            allow_private_targets: webhook.allow_private_targets,
            ..DigestConfig::default()
        };
        KindSettings {
            store,
            clock,
            webhook,
            digest,
            email: None,
        }
    }
}

/// The built-in kinds with their handlers: `webhook`, `http` and `digest` always, `email`
/// (with the audience's webhook channel) when `settings` has a mail transport.
pub fn builtin(settings: KindSettings) -> Result<Kinds, kairos_channels::Error> {
    let KindSettings {
        store,
        clock,
        webhook,
        digest,
        email,
    } = settings;
    let allow_private_targets = webhook.allow_private_targets;
    // `http` jobs follow the webhook setting for private targets (KAIROS_ALLOW_PRIVATE_TARGETS).
    let http = HttpCallConfig {
        allow_private_targets,
        ..HttpCallConfig::default()
    };
    let mut kinds = Kinds::builtin()
        .with(webhook_kind::Webhook::running(Arc::new(
            webhook::WebhookHandler::new(
                store.clone(),
                clock.clone(),
                WebhookSender::new(webhook)?,
            ),
        )))
        .with(http_kind::Http::running(Arc::new(http::HttpHandler::new(
            store.clone(),
            HttpCaller::new(http)?,
        ))))
        .with(digest_kind::Digest::running(Arc::new(
            digest::DigestHandler::new(store.clone(), clock.clone(), Digester::new(digest)?),
        )));
    if let Some((transport, config)) = email {
        let private = config.allow_private_targets;
        let mail = Arc::new(email::EmailHandler::new(store.clone(), transport, config)?);
        let sender = WebhookSender::new(WebhookConfig {
            allow_private_targets: private,
            ..WebhookConfig::default()
        })?;
        let channel = notify::WebhookChannel::new(mail.clone(), store, clock, sender);
        kinds = kinds.with(email_kind::Email::running(mail, Arc::new(channel)));
    }
    Ok(kinds)
}
