//! The built-in kinds in one list ([`BUILTIN`]): each entry says how its kind is described
//! (what a process that validates requests and reads jobs needs) and how a node that runs
//! jobs builds it with its handler from the node's settings ([`KindSettings`]). Adding a
//! built-in kind is its folder, which provides its entry, and one line in [`BUILTIN`].

use super::{Kind, Kinds, digest, email, http, webhook};
use kairos_channels::WebhookConfig;
use kairos_channels::digest::DigestConfig;
use kairos_channels::email::EmailTransport;
use kairos_core::Clock;
use kairos_store::Store;
use std::sync::Arc;

/// A built-in kind built with its handler, or `None` where the settings give it none.
type Running = Result<Option<Box<dyn Kind>>, kairos_channels::Error>;

/// One built-in kind.
pub(crate) struct Builtin {
    /// The kind described, without a handler.
    pub describe: fn() -> Box<dyn Kind>,
    /// The kind with its handler, built from the node's settings; `None`: the settings give
    /// this node no handler for it (the described kind stays).
    pub running: fn(&KindSettings) -> Running,
}

/// The built-in kinds, in the order they are listed.
const BUILTIN: [Builtin; 4] = [
    webhook::BUILTIN,
    http::BUILTIN,
    email::BUILTIN,
    digest::BUILTIN,
];

impl Kinds {
    /// The built-in kinds — `webhook`, `http`, `email`, `digest` — described, without
    /// handlers: what a process that validates requests and reads jobs needs. A node that
    /// runs jobs builds them with their handlers ([`Kinds::builtin_running`]).
    pub fn builtin() -> Self {
        Kinds::new(BUILTIN.iter().map(|b| (b.describe)()).collect())
    }

    /// The built-in kinds with their handlers built from `settings`: `webhook`, `http` and
    /// `digest` always, `email` (with the audience's webhook channel) when `settings` has a
    /// mail transport.
    pub fn builtin_running(settings: &KindSettings) -> Result<Self, kairos_channels::Error> {
        let mut kinds = Kinds::builtin();
        for b in &BUILTIN {
            if let Some(k) = (b.running)(settings)? {
                kinds = kinds.with_shared(Arc::from(k));
            }
        }
        Ok(kinds)
    }
}

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
    pub email: Option<(EmailTransport, email::handler::EmailConfig)>,
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
