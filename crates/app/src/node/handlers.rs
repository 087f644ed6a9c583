//! The node's built-in kinds with their handlers from the configuration: webhook, http and
//! digest settings, and the email transport.

use super::NodeError;
use crate::config::Config;
use kairos_channels::email::resend::{DEFAULT_API_URL, ResendConfig};
use kairos_channels::email::template::{Pool, PoolConfig, Renderer};
use kairos_channels::email::unsubscribe::UnsubscribeKey;
use kairos_channels::email::{EmailTransport, TransportConfig};
use kairos_core::Clock;
use kairos_engine::handlers::email::EmailConfig;
use kairos_engine::{KindSettings, Kinds};
use kairos_store::Store;
use std::sync::Arc;
use std::time::Duration;

/// The webhook settings of `cfg`.
pub fn webhook_config(cfg: &Config) -> kairos_channels::WebhookConfig {
    kairos_channels::WebhookConfig {
        timeout: Duration::from_secs(cfg.webhook_timeout_secs),
        allow_private_targets: cfg.allow_private_targets,
        ..Default::default()
    }
}

/// The digest settings of `cfg`: model API URLs, keys and timeouts.
pub fn digest_config(cfg: &Config) -> kairos_channels::digest::DigestConfig {
    let mut d = kairos_channels::digest::DigestConfig {
        feed_timeout: Duration::from_secs(cfg.feed_timeout_secs),
        model_timeout: Duration::from_secs(cfg.model_timeout_secs),
        allow_private_targets: cfg.allow_private_targets,
        ..Default::default()
    };
    let set = |api: &mut kairos_channels::digest::ModelApi,
               url: &Option<String>,
               key: &Option<String>,
               model: &Option<String>| {
        if let Some(u) = url {
            api.url = u.clone();
        }
        api.api_key = key.clone().filter(|k| !k.trim().is_empty());
        if let Some(m) = model {
            api.model = m.clone();
        }
    };
    set(
        &mut d.gemini,
        &cfg.gemini_api_url,
        &cfg.gemini_api_key,
        &cfg.gemini_model,
    );
    set(
        &mut d.openai,
        &cfg.openai_api_url,
        &cfg.openai_api_key,
        &cfg.openai_model,
    );
    d
}

/// The configured email transport and email settings (`KAIROS_EMAIL_*`).
pub fn email_setup(cfg: &Config) -> Result<(EmailTransport, EmailConfig), NodeError> {
    let timeout = Duration::from_secs(cfg.email_timeout_secs);
    let transport = match cfg.email_transport.as_str() {
        "smtp" => TransportConfig::Smtp {
            url: cfg.smtp_url.clone().unwrap_or_default(),
            timeout,
        },
        "resend" => TransportConfig::Resend(ResendConfig {
            api_url: cfg
                .resend_api_url
                .clone()
                .unwrap_or_else(|| DEFAULT_API_URL.into()),
            timeout,
            ..ResendConfig::new(cfg.resend_api_key.clone().unwrap_or_default())
        }),
        _ => TransportConfig::File {
            dir: cfg.data_dir.join("outbox"),
        },
    };
    let transport = EmailTransport::new(transport)
        .map_err(|e| NodeError::runtime("could not set up the email transport", &e))?;
    let public_url = cfg
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{}", cfg.listen));
    let email = EmailConfig {
        from: cfg
            .email_from
            .clone()
            .unwrap_or_else(|| EmailConfig::default().from),
        public_url,
        unsubscribe_key: cfg
            .unsubscribe_secret
            .as_deref()
            .and_then(UnsubscribeKey::new),
        settings_url: cfg.settings_url.clone(),
        allow_private_targets: cfg.allow_private_targets,
        ..Default::default()
    };
    Ok((transport, email))
}

/// Where templates render with `cfg`: in `program`'s worker processes
/// (`program __render-worker`, `KAIROS_TEMPLATE_WORKERS` of them, under
/// `KAIROS_TEMPLATE_TIMEOUT_SECS` and `KAIROS_TEMPLATE_MEMORY_MB`), or in-process when
/// `KAIROS_TEMPLATE_WORKERS=0`.
pub fn template_renderer(cfg: &Config, program: std::path::PathBuf) -> Renderer {
    if cfg.template_workers == 0 {
        return Renderer::InProcess;
    }
    Renderer::Workers(Arc::new(Pool::new(PoolConfig {
        program,
        args: vec![RENDER_WORKER_COMMAND.into()],
        workers: cfg.template_workers,
        timeout: Duration::from_secs(cfg.template_timeout_secs),
        memory_mb: cfg.template_memory_mb,
    })))
}

/// The hidden subcommand of the `kairos` binary that serves template renders.
pub const RENDER_WORKER_COMMAND: &str = "__render-worker";

/// The built-in kinds with their handlers for `store`, rendering mail templates with
/// `renderer`.
pub fn builtin_kinds(
    cfg: &Config,
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    renderer: &Renderer,
) -> Result<Kinds, NodeError> {
    let (transport, mut email) = email_setup(cfg)?;
    email.renderer = renderer.clone();
    kairos_engine::handlers::builtin(KindSettings {
        email: Some((transport, email)),
        digest: digest_config(cfg),
        ..KindSettings::new(store, clock, webhook_config(cfg))
    })
    .map_err(|e| NodeError::runtime("could not set up the kinds' handlers", &e))
}
